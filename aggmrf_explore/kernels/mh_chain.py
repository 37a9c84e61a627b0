""":class:`MHGibbsChain`: the persistent chain with Metropolis-within-Gibbs for large M_f.

Implements the :class:`~.chain.Chain` protocol for any layout (exact or hashed tables).
Per feature the kernel is chosen by cost (:func:`mh_features`): the full conditional costs
about M_f (T_f + 1) operations per site (a gather per value and table, an exp per value),
a Metropolis–Hastings move about 2 T_f + 4 (two gathers per table, one alias draw, one
exp); MH mixes more slowly per move (its moves are rejected with probability 1 − the
acceptance rate), so it is used only when it is at least ``MH_COST_MARGIN`` = 8 times
cheaper: M_f (T_f + 1) > 8 (2 T_f + 4).  On an all-pairs layout with 19 features (T_f = 19)
that is M_f > 17.

A chain can hold a *shard*: the samples ``first .. first + count − 1`` of a chain of
``n_samples``; its draws are exactly those of the same samples in the whole chain (the
counter-based uniforms are keyed by the global sample index), and
:meth:`MHGibbsChain.packed_statistics` returns exact integer partial sums, so shards
reduce to the one-chain statistics bit for bit (:mod:`aggmrf_explore.distributed`).

The chain stores its samples sorted by its largest feature when that has at least
``SORT_MIN_MODALITIES`` values and every table holding it is exact (:func:`.mh.mh_sweep`
reorders them once per sweep, right after that feature's pass): the tables holding it are
then read locally (a hashed table's rows are scattered whatever the order).  The draws are
keyed by each sample's global index, so the results are the same bits as in index order;
``codes``, ``rows``, ``labels``, :meth:`MHGibbsChain.logits` and
:meth:`MHGibbsChain.state` give every sample in index order.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads

from .mh import (
    PROPOSAL_UNIFORM,
    alias_table,
    fixed_point,
    init_samples_offset,
    mh_accumulate,
    mh_rows_logits,
    mh_structure,
    mh_sweep,
    mh_unpack,
    pack_parameters,
)
from .rng import stream_key

__all__ = [
    "MHGibbsChain",
    "mh_features",
    "unpack_statistics",
    "MH_COST_MARGIN",
    "SORT_MIN_MODALITIES",
]

MH_COST_MARGIN = 8.0
# sort the stored samples by the largest feature when it has at least this many values (and
# its tables are exact): its tables (M_F × M_g rows each) then outgrow the L2 cache
SORT_MIN_MODALITIES = 256


def mh_features(layout, margin: float = MH_COST_MARGIN) -> np.ndarray:
    """bool (D,): the features updated by MH, M_f (T_f + 1) > margin · (2 T_f + 4)."""
    m = np.asarray(layout.n_modalities, dtype=np.int64)
    T_f = np.array([sum(1 for t in layout.tables if f in t) for f in range(m.size)])
    return m * (T_f + 1) > margin * (2 * T_f + 4)


def _cdfs(m: np.ndarray, marginals: list) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Checked, normalised marginals and their CDFs (one (M_f,) array each)."""
    if len(marginals) != m.size:
        raise ValueError(f"{len(marginals)} marginals for {m.size} features; give one per feature.")
    ps, cdfs = [], []
    for f, p in enumerate(marginals):
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (int(m[f]),) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError(
                f"marginal of feature {f} must be {int(m[f])} finite non-negative weights, not all 0."
            )
        ps.append(p / p.sum())
        cdfs.append(np.cumsum(p / p.sum()))
    return ps, cdfs


class MHGibbsChain:
    """Persistent Gibbs samples (x̃_i, ỹ_i) with MH site updates for large-M_f features.

    Parameters: ``layout`` (TableLayout), ``n_samples`` n' (of the whole chain),
    ``marginals`` (one (M_f,) weight vector per feature: the initial independent draw and
    the MH proposals), ``seed``; ``use_mh`` (bool (D,), default :func:`mh_features`);
    ``first``, ``count``: hold only samples first .. first + count − 1 (a shard);
    ``sites``: features updated per sweep (default None: every one, the paper's sweep).

    With ``sites`` = k < D each sweep updates k features drawn at random (the first k of the
    sweep's random order; every sample the same k), then ỹ: a random-subset scan.  Each
    site update leaves π invariant, so their composition does, and every feature is
    updated with probability k/D in every sweep, so the chain is irreducible where the
    full sweep is: the same stationary distribution, hence the same PCD fixed point, at
    about k/D of the site updates' cost per sweep and slower mixing per sweep
    (``tests/test_mh.py`` checks the stationary frequencies against the exact ones).

    codes : int32 (count, D) read-only snapshot;  rows : int64 (count, T) read-only snapshot;
    labels : uint8 (count,) ỹ, read-only snapshot (all in sample order, whatever the storage).
    acceptance : MH acceptance rate of the last sweep over the MH features (None if no
    feature uses MH);  acceptance_by_feature : float64 (D,), NaN for full-conditional ones.
    """

    def __init__(
        self,
        layout,
        n_samples: int,
        marginals: list,
        seed: int,
        use_mh: np.ndarray | None = None,
        first: int = 0,
        count: int | None = None,
        sites: int | None = None,
    ) -> None:
        n_samples = int(n_samples)
        if n_samples <= 0:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples}.")
        first = int(first)
        count = n_samples - first if count is None else int(count)
        if first < 0 or count <= 0 or first + count > n_samples:
            raise ValueError(
                f"shard {first}..{first + count - 1} is not inside 0..{n_samples - 1}."
            )
        if layout.K >= 2**31:
            raise ValueError("more than 2^31 table rows; use feature hashing to reduce K")
        self.q_bits, self.a_bits = fixed_point(n_samples)  # of the whole chain
        m = np.asarray(layout.n_modalities, dtype=np.int64)
        D = m.size
        ps, cdfs = _cdfs(m, marginals)
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        self.n_total = n_samples
        self.first = first
        self.use_mh = mh_features(layout) if use_mh is None else np.asarray(use_mh, dtype=np.bool_)
        if self.use_mh.shape != (D,):
            raise ValueError(f"use_mh must have shape ({D},).")
        self.structure = mh_structure(layout)
        self.sites = D if sites is None else min(int(sites), D)  # more than D: all of them
        if self.sites < 1:
            raise ValueError(f"sites must be at least 1; got {sites}.")
        qs = [(1.0 - PROPOSAL_UNIFORM) * p + PROPOSAL_UNIFORM / p.size for p in ps]
        probs, aliases = zip(*(alias_table(q) for q in qs), strict=True)
        self._mh = (
            self.use_mh,
            np.concatenate([[0], np.cumsum(m)]).astype(np.int64),
            np.concatenate(probs),
            np.concatenate(aliases).astype(np.int64),
            np.log(np.concatenate(qs)),
        )
        cdf_ptr = np.concatenate([[0], np.cumsum([c.size for c in cdfs])]).astype(np.int64)
        self._x = init_samples_offset(np.concatenate(cdfs), cdf_ptr, count, self.seed, first)
        self._y = np.zeros(count, dtype=np.uint8)
        self._gid = np.arange(first, first + count, dtype=np.int64)  # global index per slot
        big = int(np.argmax(m))
        exact = all(
            h == 0 for t, h in zip(layout.tables, layout.hash_sizes, strict=True) if big in t
        )
        self.sort_feature = big if m[big] >= SORT_MIN_MODALITIES and exact else -1
        sorts = self.sort_feature >= 0
        self._sort_bufs = (  # the sort's scratch (a dummy row when the chain does not sort)
            np.empty((count if sorts else 1, D), dtype=np.int32),
            np.empty(count if sorts else 1, dtype=np.uint8),
            np.empty(count if sorts else 1, dtype=np.int64),
        )
        self._y_drawn = False
        self._z = np.zeros(count)
        self._fixed = np.zeros(count, dtype=np.int64)
        self._rows_t = np.zeros((len(layout.tables), count), dtype=np.int32)
        self._acc = np.zeros(self.K, dtype=np.int64)
        self._P = np.zeros((self.K, 2))  # P[r] = (μ_r, θ_r): one gather per row (mh_sweep)
        self._rows_valid = False  # _rows_t holds the rows of the current _x
        n_blocks = (count + 63) // 64
        self._counts = np.zeros((n_blocks, 2 * D), dtype=np.int64)
        self._rows_theta: np.ndarray | None = None  # θ of _rows_t / _z / _fixed (or None)
        self._theta_buf = np.zeros(self.K)  # _rows_theta's storage: no (K,) copy per sweep
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self.accepted = np.zeros(D, dtype=np.int64)  # last sweep's MH moves per feature
        self.proposed = np.zeros(D, dtype=np.int64)

    # ------------------------------------------------------------------ state
    @property
    def n_samples(self) -> int:
        """Samples held by this chain (count)."""
        return int(self._x.shape[0])

    def _in_order(self, stored: np.ndarray, dtype=None) -> np.ndarray:
        """A new array of the stored samples' values (first axis) in sample order."""
        out = np.empty(stored.shape, dtype=dtype or stored.dtype)
        out[self._gid - self.first] = stored
        return out

    @property
    def codes(self) -> np.ndarray:
        out = self._in_order(self._x)
        out.flags.writeable = False
        return out

    @property
    def labels(self) -> np.ndarray:
        out = self._in_order(self._y)
        out.flags.writeable = False
        return out

    @property
    def rows(self) -> np.ndarray:
        self._ensure_rows(np.zeros(self.K) if self._rows_theta is None else self._rows_theta)
        out = self._in_order(self._rows_t.T, np.int64)
        out.flags.writeable = False
        return out

    @property
    def memory_bytes(self) -> int:
        arrays = (
            self._x,
            self._y,
            self._z,
            self._fixed,
            self._rows_t,
            self._P,
            self._counts,
            self._acc,
            self._theta_buf,
            self._gid,
            *self._sort_bufs,
        )
        return int(sum(a.nbytes for a in arrays))

    @property
    def acceptance(self) -> float | None:
        """Accepted / proposed MH moves of the last sweep (None without MH features or sweeps)."""
        p = int(self.proposed.sum())
        return None if p == 0 else float(self.accepted.sum() / p)

    @property
    def acceptance_by_feature(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.proposed > 0, self.accepted / self.proposed, np.nan)

    def state(self) -> dict:
        """The chain's whole evolving state (codes, labels, sweeps done): with the same
        constructor arguments, :meth:`restore` makes an identical chain."""
        return {
            "x": self._in_order(self._x),
            "y": self._in_order(self._y),
            "y_drawn": self._y_drawn,
            "sweeps": self.sweeps,
        }

    def restore(self, state: dict) -> None:
        """Set the state saved by :meth:`state` (same shard shape)."""
        x = np.asarray(state["x"], dtype=np.int32)
        if x.shape != self._x.shape:
            raise ValueError(f"state codes have shape {x.shape}, this chain {self._x.shape}.")
        self._x[...] = x
        self._y[...] = np.asarray(state["y"], dtype=np.uint8)
        self._gid[...] = np.arange(self.first, self.first + x.shape[0])
        self._y_drawn = bool(state["y_drawn"])
        self.sweeps = int(state["sweeps"])
        self._rows_theta = None
        self._rows_valid = False
        self._stats = None

    # ------------------------------------------------------------------ kernels
    def _check(self, a: np.ndarray, name: str) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.shape != (self.K,):
            raise ValueError(f"{name} must have shape ({self.K},); got {a.shape}.")
        return a

    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One sweep under (μ, θ), float64 (K,) each.  The sweep always leaves the new
        state's rows and σ's under θ for :meth:`statistics` (``statistics`` is part of the
        Chain interface and ignored)."""
        mu, theta = self._check(mu, "mu"), self._check(theta, "theta")
        pack_parameters(mu, theta, self._P, self._theta_buf)
        self._sweep_in(self._P, self._theta_buf)
        self._rows_theta = self._theta_buf  # the sweep left rows, z and σ's under θ

    def sweep_packed(self, P: np.ndarray, out: np.ndarray) -> None:
        """One sweep under P float64 (K, 2), rows (μ_r, θ_r), read in place (e.g. a
        memory-mapped file that several shards share), then this chain's packed statistics
        (:meth:`packed_statistics` under θ = P[:, 1]) written into ``out`` int64 (K,).
        The same numbers as :meth:`sweep` and :meth:`packed_statistics`, without copying
        the parameters (``ShardedChain``'s workers on the driver's host use it)."""
        if P.shape != (self.K, 2) or P.dtype != np.float64 or not P.flags.c_contiguous:
            raise ValueError(f"P must be C-contiguous float64 ({self.K}, 2).")
        if out.shape != (self.K,) or out.dtype != np.int64:
            raise ValueError(f"out must be int64 ({self.K},).")
        self._sweep_in(P, np.ascontiguousarray(P[:, 1]))
        self._rows_theta = None  # P may change under us: σ's are recomputed when asked
        out.fill(0)
        mh_accumulate(self._rows_t, self._fixed, np.int64(1) << np.int64(self.a_bits), out)

    def _sweep_in(self, P: np.ndarray, theta: np.ndarray) -> None:
        """The sweep kernel under P (K, 2) (and θ = P[:, 1], contiguous (K,)) and the
        chain's bookkeeping."""
        keys = [stream_key(self.seed, self.sweeps, i) for i in (0, 2, 1)]
        mh_sweep(
            self._x,
            self._y,
            self._z,
            P,
            self.structure,
            self._mh,
            self._gid,
            keys[0],
            keys[1],
            keys[2],
            not self._y_drawn,
            self._rows_valid,
            self._counts,
            self._rows_t,
            self._fixed,
            float(2**self.q_bits),
            get_num_threads(),
            self.sort_feature,
            *self._sort_bufs,
            self.sites,
            theta.reshape(-1, 1),
        )
        self._rows_valid = True
        D = self._x.shape[1]
        self.accepted = self._counts[:, :D].sum(axis=0)
        self.proposed = self._counts[:, D:].sum(axis=0)
        self._y_drawn = True
        self._stats = None
        self.sweeps += 1

    def _ensure_rows(self, theta: np.ndarray) -> None:
        if self._rows_theta is not None and np.array_equal(theta, self._rows_theta):
            return
        mh_rows_logits(
            self._x,
            theta.reshape(-1, 1),
            self.structure.tables,
            self._rows_t,
            self._z,
            self._fixed,
            float(2**self.q_bits),
            get_num_threads(),
        )
        np.copyto(self._theta_buf, theta)
        self._rows_theta = self._theta_buf
        self._rows_valid = True
        self._stats = None

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample held, float64 (count,), in sample order."""
        theta = self._check(theta, "theta")
        self._ensure_rows(theta)
        return self._in_order(self._z)

    def packed_statistics(self, theta: np.ndarray) -> np.ndarray:
        """Exact partial sums over the samples held, int64 (K,): count · 2^a_bits +
        Σ_i round(σ(φ(x̃_i)·θ) 2^q_bits) per row (:func:`.mh.fixed_point` of the whole
        chain, so shards' arrays add up exactly); the chain's own buffer, read-only,
        valid until the next sweep.  :func:`unpack_statistics` gives (d̂, ĉ)."""
        theta = self._check(theta, "theta")
        self._ensure_rows(theta)
        if self._stats is None:
            self._acc.fill(0)
            mh_accumulate(
                self._rows_t, self._fixed, np.int64(1) << np.int64(self.a_bits), self._acc
            )
            self._stats = self._acc.view()
            self._stats.flags.writeable = False
        return self._stats

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), float64 (K,) each
        (σ in units of 2^-q_bits: exact sums, thread and shard independent)."""
        return unpack_statistics(self.packed_statistics(theta), self.q_bits, self.a_bits)


def unpack_statistics(
    packed: np.ndarray, q_bits: int, a_bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """Packed int64 (K,) sums → float64 (d̂, ĉ), (K,) each: exact conversions (one pass)."""
    packed = np.ascontiguousarray(packed, dtype=np.int64)
    d = np.empty(packed.shape[0])
    c = np.empty(packed.shape[0])
    mh_unpack(packed, np.int64(a_bits), float(2.0**-q_bits), d, c)
    return d, c
