"""Numba kernels behind plain functions: the only place in the package that uses numba.

Everything here takes and returns numpy arrays; callers never see numba types.
"""

from __future__ import annotations

import numba
import numpy as np

from . import gibbs as _g

__all__ = ["GibbsChain", "warm_up"]


def _round_up(m: int, lanes: int) -> int:
    return ((m + lanes - 1) // lanes) * lanes


def _aligned_zeros(shape: tuple[int, ...], dtype, align: int = 64) -> np.ndarray:
    """np.zeros whose data starts on an ``align``-byte boundary (8-lane loads never split)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes].view(dtype).reshape(shape)


class GibbsChain:
    """The persistent Gibbs samples of a PCD trainer.

    codes : int32 (n', D) feature codes (the chain's state).
    rows  : int32 (n', T) row of each sample in each table (kept in sync with ``codes``).

    ``sweep(mu, theta)`` also accumulates the sufficient statistics of the new state under
    ``theta``; ``statistics(theta)`` returns them without another pass when called with
    the same θ (and recomputes them otherwise).  Everything is bit-identical for a seed
    whatever the number of threads.
    """

    def __init__(self, layout, n_samples: int, marginals: list[np.ndarray], seed: int) -> None:
        n_samples = int(n_samples)
        if n_samples <= 0:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples}.")
        if layout.K >= 2**31:
            raise ValueError("more than 2^31 table rows; use feature hashing to reduce K")
        arrays = layout.kernel_arrays()
        m = arrays["n_modalities"].astype(np.int64)
        D = m.size
        if len(marginals) != D:
            raise ValueError(f"{len(marginals)} marginals for {D} features; give one per feature.")
        self._n_modalities = m
        self._offsets = arrays["offsets"].astype(np.int64)
        self._strides = arrays["strides"].astype(np.int64)
        self.K = int(layout.K)
        self.seed = int(seed)
        self._build_structure(layout.tables, m)
        self._ftab_ptr = arrays["feat_ptr"].astype(np.int64)
        self._ftab_table = arrays["feat_tables"].astype(np.int64)
        self._ftab_stride = arrays["feat_strides"].astype(np.int64)
        cdfs = []
        for f, p in enumerate(marginals):
            p = np.asarray(p, dtype=np.float64)
            if p.shape != (m[f],) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
                raise ValueError(
                    f"marginal of feature {f} must be {m[f]} finite non-negative weights, not all 0."
                )
            cdfs.append(np.cumsum(p / p.sum()))
        cdf_ptr = np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64)
        self.codes = _g.init_samples(np.concatenate(cdfs), cdf_ptr, n_samples, self.seed)
        self.rows = self._rows_of(self.codes)
        self.sweeps = 0
        # per-thread scratch and integer accumulators, allocated once (no allocation per sweep)
        P = int(numba.config.NUMBA_NUM_THREADS)
        self._xbuf = np.zeros((P, D + 1), dtype=np.int64)
        self._order = np.zeros((P, D), dtype=np.int64)
        mp = int(self._n_mod_pad.max())
        self._sbuf = _aligned_zeros((P, mp), np.float32)
        self._ebuf = _aligned_zeros((P, mp), np.float32)
        self._bases = np.zeros((P, int(np.diff(self._feat_ptr).max())), dtype=np.uint64)
        self._d_part = np.zeros((P, self.K), dtype=np.int32)
        self._c_part = np.zeros((P, self.K), dtype=np.int64)
        self._W = _aligned_zeros((2, self._w_size), np.float32)
        self._stats_theta: np.ndarray | None = None  # θ of the accumulators, None if stale

    # ------------------------------------------------------------------ structure
    def _build_structure(self, tables, m: np.ndarray) -> None:
        """Tables as (features, strides) padded to arity 3, and the (feature, table) entries."""
        D = m.size
        T = len(tables)
        tab_feat = np.full((T, 3), D, dtype=np.int64)
        tab_stride = np.zeros((T, 3), dtype=np.int64)
        for ti, t in enumerate(tables):
            for j, f in enumerate(t):
                tab_feat[ti, j] = f
                tab_stride[ti, j] = self._strides[ti, f]
        self._tab_feat, self._tab_stride = tab_feat, tab_stride
        pad = np.array([_round_up(int(x), _g.LANES) for x in m], dtype=np.int64)
        self._n_mod_pad = pad
        feat, table, blk, g, m2, carry = [], [], [], [], [], []
        ptr = [0]
        size = 0
        for f in range(D):
            holding = [ti for ti, t in enumerate(tables) if f in t]
            single = [ti for ti in holding if len(tables[ti]) == 1]
            others = [ti for ti in holding if len(tables[ti]) > 1]
            entries = [(ti, -1) for ti in others] if others else [(ti, -1) for ti in single]
            if others and single:
                entries[0] = (others[0], single[0])  # fold the single table into the first pair
            if not entries:
                entries = [(-1, -1)]  # feature in no table: a zero block (uniform conditional)
            for ti, c in entries:
                rest = [h for h in tables[ti] if h != f] if ti >= 0 else []
                g1, g2 = ([D, D], [D, *rest], rest)[len(rest)]
                feat.append(f)
                table.append(ti)
                blk.append(size)
                g.append((g1, g2))
                m2.append(int(m[g2]) if g2 < D else 1)
                carry.append(c)
                n_other = (int(m[g1]) if g1 < D else 1) * m2[-1]
                size += n_other * int(pad[f])
            ptr.append(len(feat))
        self._ent_feat = np.asarray(feat, dtype=np.int64)
        self._ent_table = np.asarray(table, dtype=np.int64)
        self._ent_blk = np.asarray(blk, dtype=np.int64)
        self._ent_g = np.asarray(g, dtype=np.int64).reshape(-1, 2)
        self._ent_m2 = np.asarray(m2, dtype=np.int64)
        self._ent_g1 = np.ascontiguousarray(self._ent_g[:, 0])
        self._ent_g2 = np.ascontiguousarray(self._ent_g[:, 1])
        self._ent_s1 = self._ent_m2 * pad[self._ent_feat]
        self._ent_carry = np.asarray(carry, dtype=np.int64)
        self._feat_ptr = np.asarray(ptr, dtype=np.int64)
        self._w_size = _round_up(size, 16)

    # ------------------------------------------------------------------ state
    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[0])

    def _rows_of(self, codes: np.ndarray) -> np.ndarray:
        rows = self._offsets[None, :] + codes.astype(np.int64) @ self._strides.T
        return np.ascontiguousarray(rows, dtype=np.int32)

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain's state, parameter copies and accumulators."""
        arrays = (self.codes, self.rows, self._W, self._d_part, self._c_part, self._sbuf)
        return int(sum(a.nbytes for a in arrays))

    def _check(self, a: np.ndarray, name: str) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.shape != (self.K,):
            raise ValueError(f"{name} must have shape ({self.K},); got {a.shape}.")
        return a

    # ------------------------------------------------------------------ kernels
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,).

        With ``statistics`` (default) the sufficient statistics of the new state under θ
        are accumulated during the sweep, for a following ``statistics(theta)``.
        """
        mu = self._check(mu, "mu")
        theta = self._check(theta, "theta")
        _g.build_params(
            mu, theta, self._W, self._ent_feat, self._ent_table, self._ent_blk, self._ent_g,
            self._ent_m2, self._ent_carry, self._n_mod_pad, self._tab_feat, self._tab_stride,
            self._offsets, self._n_modalities,
        )  # fmt: skip
        _g.gibbs_sweep(
            self.codes, self.rows, self._W, theta, self._n_modalities, self._n_mod_pad,
            self._feat_ptr, self._ent_blk, self._ent_g1, self._ent_s1, self._ent_g2,
            self._ftab_ptr, self._ftab_table, self._ftab_stride, np.uint64(self.seed),
            np.uint64(self.sweeps), bool(statistics), self._d_part, self._c_part, self._xbuf,
            self._order, self._sbuf, self._ebuf, self._bases,
        )  # fmt: skip
        self._stats_theta = theta.copy() if statistics else None
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        theta = self._check(theta, "theta")
        return _g.sample_logits(self.rows, theta)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and marginalised ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), (K,) each.

        σ is accumulated in fixed point (resolution 2^-32 per sample), so the sums are
        exact and independent of the number of threads.
        """
        theta = self._check(theta, "theta")
        if self._stats_theta is None or not np.array_equal(theta, self._stats_theta):
            _g.accumulate_rows(self.rows, theta, self._d_part, self._c_part)
            self._stats_theta = theta.copy()
        return _g.reduce_statistics(self._d_part, self._c_part)


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny problem."""
    from ..tables import TableLayout

    lay = TableLayout.all_pairs([2, 3])
    chain = GibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0)
    chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
    chain.statistics(np.zeros(lay.K))
    chain.statistics(np.ones(lay.K))
    chain.logits(np.zeros(lay.K))
