"""The persistent Gibbs chains of the PCD trainer: one interface, two implementations.

:class:`Chain` (a ``typing.Protocol``) is the interface the trainer and model selection
use.  :class:`GibbsChain` drives the dense kernels of :mod:`.gibbs` (every table exact);
:class:`HashedGibbsChain` drives those of :mod:`.hashed` (any layout, hashed tables
included); :func:`make_chain` picks one from ``layout.has_hashed_tables``.  Both keep
their state in numpy arrays and pass the kernels named tuples of arrays
(:class:`~.gibbs.SweepStructure`, :class:`~.hashed.HashedStructure`), built once.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numba
import numpy as np

from .gibbs import (
    LANES,
    MERGE,
    PAD,
    TASK,
    Accumulators,
    SweepParams,
    SweepStructure,
    draw_labels,
    init_samples,
    reduce_statistics,
)
from .hashed import HashedStructure, hashed_logits, hashed_sweep, init_samples_hashed
from .mh_chain import MHGibbsChain
from .quick import BUILDS, dense_kernels, mark_compiled
from .reference import NumpyGibbsChain
from .rng import stream_key
from .rows import sample_logits, table_arrays, table_rows

__all__ = [
    "Chain",
    "GibbsChain",
    "HashedGibbsChain",
    "MHGibbsChain",
    "NumpyGibbsChain",
    "BUILDS",
    "SAMPLERS",
    "make_chain",
    "numpy_samples",
    "with_build",
    "resolve_sampler",
    "marginal_cdfs",
    "warm_up",
]


@runtime_checkable
class Chain(Protocol):
    """What a persistent Gibbs chain offers (both :class:`GibbsChain` and
    :class:`HashedGibbsChain` implement it).

    Constructed as ``cls(layout, n_samples, marginals, seed)``: n' samples drawn with
    independent features from ``marginals`` (one (M_f,) weight vector per feature).
    Everything is bit-identical for a seed whatever the number of threads.
    """

    K: int  # parameters (rows of the layout)
    seed: int
    sweeps: int  # sweeps done so far

    @property
    def n_samples(self) -> int:
        """n', the number of samples."""

    @property
    def codes(self) -> np.ndarray:
        """int32 (n', D) feature codes of the samples (read-only snapshot)."""

    @property
    def rows(self) -> np.ndarray:
        """int (n', T) row of each sample in each table (read-only snapshot)."""

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain's state and work arrays."""

    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), float64 (K,) each; with
        ``statistics``, a following ``statistics(theta)`` needs no extra pass."""

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), float64 (K,) each."""


SAMPLERS = ("auto", "gibbs", "mh")
MH_AUTO_MODALITIES = 1000  # "auto" picks MHGibbsChain for exact layouts with a larger M_f


def resolve_sampler(layout, sampler: str = "auto") -> str:
    """What ``sampler`` means for ``layout``, "gibbs" or "mh" ("auto": "mh" for an exact
    layout with some M_f > MH_AUTO_MODALITIES, else "gibbs").  One rule for every caller
    (a single process and a cluster), so a seed gives the same chain wherever it runs."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}; got {sampler!r}.")
    if sampler == "auto":
        big = int(max(layout.n_modalities)) > MH_AUTO_MODALITIES
        return "mh" if big and not layout.has_hashed_tables else "gibbs"
    return sampler


def make_chain(
    layout,
    n_samples: int,
    marginals: list,
    seed: int,
    sampler: str = "auto",
    build: str = "parallel",
    codes: np.ndarray | None = None,
    sites: int | None = None,
) -> Chain:
    """The chain for a layout.

    ``sampler``: "gibbs" = full conditionals everywhere (GibbsChain, or HashedGibbsChain
    when a table is hashed); "mh" = :class:`~.mh_chain.MHGibbsChain` (Metropolis-within-Gibbs
    for the features where it is cheaper, chosen per feature by cost); "auto" (default) =
    "mh" for an exact layout with some M_f > MH_AUTO_MODALITIES, else "gibbs".

    ``build`` (one of :data:`BUILDS`): the dense chain's kernels, "parallel" (default),
    "serial" (bit-identical, a third of the compile time: :mod:`.quick`) or "numpy" (no
    compiler: :class:`~.reference.NumpyGibbsChain`, exact layouts and "gibbs" only); the
    hashed and MH chains have one build.  ``codes``: int (n', D) initial samples instead of
    draws from ``marginals`` (a chain moving to another build), dense chains only.
    ``sites``: features updated per sweep by the MH chain (None: all;
    :class:`~.mh_chain.MHGibbsChain`); the full-conditional chains always sweep every
    feature (the same fixed point either way: ``sites`` sets the cost, not the result).
    """
    if build not in BUILDS:
        raise ValueError(f"build must be one of {BUILDS}; got {build!r}.")
    sampler = resolve_sampler(layout, sampler)
    dense = sampler == "gibbs" and not layout.has_hashed_tables
    if not dense and (build == "numpy" or codes is not None):
        raise ValueError(
            "the numpy build and initial codes are for the dense full-conditional chain "
            "(sampler 'gibbs', every table exact)."
        )
    if build == "numpy":
        return NumpyGibbsChain(layout, n_samples, marginals, seed, codes=codes)
    if sampler == "mh":
        return MHGibbsChain(layout, n_samples, marginals, seed, sites=sites)
    if layout.has_hashed_tables:
        return HashedGibbsChain(layout, n_samples, marginals, seed)
    return GibbsChain(layout, n_samples, marginals, seed, build=build, codes=codes)


def numpy_samples(layout, sampler: str = "auto") -> bool:
    """True when the numpy build samples ``layout`` (every table exact, full conditionals)."""
    return not layout.has_hashed_tables and resolve_sampler(layout, sampler) == "gibbs"


def with_build(chain: Chain, layout, build: str) -> Chain:
    """``chain`` running ``build``: itself if it does; the same chain switched between the
    serial and parallel builds (same state, same results); else a new chain of ``build``
    that continues from the same samples (its labels are redrawn at its first sweep)."""
    have = getattr(chain, "build", "parallel")
    if build == have:
        return chain
    if isinstance(chain, GibbsChain) and build != "numpy":
        chain.use_build(build)
        return chain
    m = layout.n_modalities
    marginals = [np.ones(int(k)) for k in m]  # (unused: the codes are given)
    return make_chain(
        layout, chain.n_samples, marginals, chain.seed, build=build, codes=chain.codes
    )


# ---------------------------------------------------------------------------- helpers
def _round_up(m: int, lanes: int) -> int:
    return ((m + lanes - 1) // lanes) * lanes


def _zeros_aligned(n: int) -> np.ndarray:
    """float32 zeros (n,) starting on a 64-byte boundary."""
    buf = np.zeros(n + 16, dtype=np.float32)
    start = (-buf.ctypes.data % 64) // 4
    return buf[start : start + n]


def _check_n_samples(n_samples) -> int:
    n_samples = int(n_samples)
    if n_samples <= 0:
        raise ValueError(f"n_samples must be a positive integer; got {n_samples}.")
    return n_samples


def _check_params(a: np.ndarray, K: int, name: str) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape != (K,):
        raise ValueError(f"{name} must have shape ({K},); got {a.shape}.")
    return a


def marginal_cdfs(n_modalities: np.ndarray, marginals: list[np.ndarray]) -> list[np.ndarray]:
    """Checked CDFs of the per-feature initial marginals: one float64 (M_f,) array per feature."""
    D = len(n_modalities)
    if len(marginals) != D:
        raise ValueError(f"{len(marginals)} marginals for {D} features; give one per feature.")
    cdfs = []
    for f, p in enumerate(marginals):
        p = np.asarray(p, dtype=np.float64)
        m_f = int(n_modalities[f])
        if p.shape != (m_f,) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError(
                f"marginal of feature {f} must be {m_f} finite non-negative weights, not all 0."
            )
        cdfs.append(np.cumsum(p / p.sum()))
    return cdfs


def _cdf_arrays(cdfs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The CDFs concatenated, float64, and their pointers, int64 (D + 1,)."""
    ptr = np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64)
    return np.concatenate(cdfs), ptr


def _sweep_structure(
    tables, strides: np.ndarray, m: np.ndarray, offsets: np.ndarray
) -> tuple[SweepStructure, int]:
    """Maximal tables, the folding of the others into them, the (feature, table) entries
    and build_params' tasks (see :mod:`.gibbs`); also the size of W's half (floats)."""
    D = m.size
    T = len(tables)
    n_mod_pad = np.array([_round_up(int(v), LANES) for v in m], dtype=np.int64)
    tab = table_arrays(tables, strides, offsets, width=3, pad=D)
    sets = [set(t) for t in tables]
    stat = [  # maximal tables: in no other table (the first of equal ones)
        t
        for t in range(T)
        if not any(sets[t] < sets[p] or (sets[t] == sets[p] and p < t) for p in range(T))
    ]
    parent = [-1 if t in stat else next(p for p in stat if sets[t] <= sets[p]) for t in range(T)]
    fold_parent, fold_sub = [], []
    for t in range(T):
        p = parent[t]
        if p < 0:
            continue
        fp = list(tables[p])
        grids = np.meshgrid(*[np.arange(m[f]) for f in fp], indexing="ij")
        codes = np.stack([g.ravel() for g in grids], axis=1)  # every row of p
        fold_parent.append(offsets[p] + codes @ strides[p, fp])
        cols = [fp.index(f) for f in tables[t]]
        fold_sub.append(offsets[t] + codes[:, cols] @ strides[t, list(tables[t])])

    def as64(a):
        return np.asarray(a, dtype=np.int64)

    def cat(a):
        return np.concatenate(a).astype(np.int64) if a else np.zeros(0, np.int64)

    ent_feat, ent_table, ent_table2, ent_blk, ent_g1, ent_g2, ent_s1 = ([] for _ in range(7))
    ptr = [0]
    size = 0
    for f in range(D):
        ents = []  # (table, second table or -1, g1, g2)
        pairs = []  # (m_g, table, g): pair tables (f, g), candidates for merging
        for t in stat:
            if f not in tables[t]:
                continue
            g1, g2 = ([D, D] + [g for g in tables[t] if g != f])[-2:]
            if g1 == D and g2 < D:
                pairs.append((int(m[g2]), t, g2))
            else:
                ents.append((t, -1, g1, g2))
        # merge two pair entries (f, a), (f, b) into one (f, a, b) entry whose E holds
        # the product of both: one load per sample instead of two, for m_a m_b ≤ MERGE
        pairs.sort()
        i, j = 0, len(pairs) - 1
        while i <= j:
            if i < j and pairs[i][0] * pairs[j][0] <= MERGE:
                ents.append((pairs[j][1], pairs[i][1], pairs[j][2], pairs[i][2]))
                i += 1
            else:
                ents.append((pairs[j][1], -1, D, pairs[j][2]))
            j -= 1
        for t, t2, g1, g2 in ents:
            m1 = int(m[g1]) if g1 < D else 1
            m2 = int(m[g2]) if g2 < D else 1
            ent_feat.append(f)
            ent_table.append(t)
            ent_table2.append(t2)
            ent_blk.append(size)
            ent_g1.append(g1)
            ent_g2.append(g2)
            ent_s1.append(m2 * int(n_mod_pad[f]))
            size += m1 * m2 * int(n_mod_pad[f])
        ptr.append(len(ent_feat))
    # build_params' tasks: runs of contexts of one entry, about TASK floats each
    task_ent, task_o0, task_o1 = [], [], []
    for e, (f, g1, g2) in enumerate(zip(ent_feat, ent_g1, ent_g2, strict=True)):
        n_ctx = (int(m[g1]) if g1 < D else 1) * (int(m[g2]) if g2 < D else 1)
        step = max(1, TASK // int(n_mod_pad[f]))
        for o in range(0, n_ctx, step):
            task_ent.append(e)
            task_o0.append(o)
            task_o1.append(min(n_ctx, o + step))
    half = _round_up(size, 16)
    if 2 * half >= 2**32:
        raise ValueError("parameter blocks exceed 2^32 floats; use feature hashing to reduce K")
    structure = SweepStructure(
        n_modalities=m,
        n_mod_pad=n_mod_pad,
        feat_ptr=as64(ptr),
        ent_feat=as64(ent_feat),
        ent_table=as64(ent_table),
        ent_table2=as64(ent_table2),
        ent_blk=as64(ent_blk),
        ent_g1=as64(ent_g1),
        ent_g2=as64(ent_g2),
        ent_s1=as64(ent_s1),
        stat_tables=as64(stat),
        tab_feat=tab.feat,
        tab_stride=tab.stride,
        offsets=offsets,
        fold_parent=cat(fold_parent),
        fold_sub=cat(fold_sub),
        task_ent=as64(task_ent),
        task_o0=as64(task_o0),
        task_o1=as64(task_o1),
    )
    return structure, half


# ---------------------------------------------------------------------------- dense chain
class GibbsChain:
    """The persistent Gibbs samples (x̃_i, ỹ_i) of a PCD trainer, every table exact.

    codes : int32 (n', D) feature codes of the samples (a read-only snapshot of the state).
    rows  : int32 (n', T) row of each sample in each table (read-only, computed on demand).
    structure : the :class:`~.gibbs.SweepStructure` the kernels read (built once).

    ``sweep(mu, theta)`` also accumulates the sufficient statistics of the new state under
    ``theta``; ``statistics(theta)`` returns them without another pass when called with
    the same θ (and recomputes them otherwise).  Everything is bit-identical for a seed
    whatever the number of threads.
    """

    def __init__(
        self,
        layout,
        n_samples: int,
        marginals: list[np.ndarray],
        seed: int,
        build: str = "parallel",
        codes: np.ndarray | None = None,
    ) -> None:
        self._kernels = dense_kernels(build)
        self.build = build
        if codes is not None:
            codes = layout.check_codes(codes)
            n_samples = codes.shape[0]
        n_samples = _check_n_samples(n_samples)
        if layout.K >= 2**31:
            raise ValueError("more than 2^31 table rows; use feature hashing to reduce K")
        if layout.has_hashed_tables:
            raise ValueError(
                "this layout has hashed tables, which GibbsChain does not sample; use "
                "kernels.make_chain (it picks HashedGibbsChain)."
            )
        m = np.asarray(layout.n_modalities, dtype=np.int64)
        cdfs = marginal_cdfs(m, marginals)
        D = m.size
        if n_samples * (D + 1) >= 2**32:  # the uniforms' 32-bit site counters
            raise ValueError(
                f"n_samples × (features + 1) = {n_samples * (D + 1)} must stay below 2^32; "
                "use fewer Gibbs samples."
            )
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        offsets = np.asarray(layout.offsets, dtype=np.int64)  # (T + 1,)
        strides = np.asarray(layout.strides, dtype=np.int64)
        self.structure, half = _sweep_structure(layout.tables, strides, m, offsets)
        # the rows of the samples: codes x.T (n', D + 1), padding column D ≡ 0
        self._row_tables = table_arrays(layout.tables, strides, offsets, pad=D)
        if codes is None:
            codes = init_samples(*_cdf_arrays(cdfs), n_samples, self.seed)
        dtype = np.uint8 if m.max() <= 256 else np.uint16 if m.max() <= 65536 else np.int32
        self._x = np.zeros((D + 1, n_samples), dtype=dtype)  # transposed state; row D ≡ 0
        self._x[:D] = codes.T
        self._y = np.zeros(n_samples, dtype=np.uint8)
        self._y_drawn = False  # ỹ is drawn at the end of a sweep (and before the first one)
        self._z = np.zeros(n_samples)
        # statistics: one int64 accumulator row per worker, count << a_bits + σ in 2^-q_bits
        # fixed point; with n' < 2^b, q_bits ≤ 62 - 2b keeps every packed sum below 2^63
        # and the σ part below 2^a_bits (a_bits = q_bits + b)
        b = n_samples.bit_length()
        self._q_bits = min(32, 62 - 2 * b)
        if self._q_bits < 8:
            raise ValueError(f"n_samples = {n_samples} is too large (at most 2^27 - 1)")
        self._a_bits = self._q_bits + b
        P = int(numba.config.NUMBA_NUM_THREADS)
        self._work = Accumulators(
            acc=np.zeros((P, self.K), dtype=np.int64),
            counter=np.zeros((P + 1) * PAD, dtype=np.int64),  # work handed out
            fixed_q=float(2**self._q_bits),
            one_a=np.int64(1) << np.int64(self._a_bits),
        )
        self._params = SweepParams(
            mu_f=np.zeros(self.K),
            theta_f=np.zeros(self.K),
            W=_zeros_aligned(2 * half),  # 64-byte aligned: no vector load of 8 float32
            E=_zeros_aligned(2 * half),  # (32 bytes) crosses a cache line
        )
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._stats_theta: np.ndarray | None = None  # θ of self._stats
        self._codes: np.ndarray | None = None  # caches of the snapshots
        self._rows: np.ndarray | None = None

    # ------------------------------------------------------------------ state
    @property
    def n_samples(self) -> int:
        return int(self._x.shape[1])

    @property
    def codes(self) -> np.ndarray:
        """int32 (n', D) codes of the samples (read-only snapshot, refreshed by each sweep)."""
        if self._codes is None:
            self._codes = np.ascontiguousarray(self._x[:-1].T, dtype=np.int32)
            self._codes.flags.writeable = False
        return self._codes

    @property
    def rows(self) -> np.ndarray:
        """int32 (n', T) row of each sample in each table (read-only snapshot)."""
        if self._rows is None:
            rows = np.empty((self.n_samples, self._row_tables.offsets.size), dtype=np.int32)
            table_rows(self._x.T, self._row_tables, rows)
            rows.flags.writeable = False
            self._rows = rows
        return self._rows

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain's state, parameter copies and accumulators."""
        p = self._params
        arrays = (self._x, self._y, self._z, p.W, p.E, self._work.acc, p.mu_f)
        return int(sum(a.nbytes for a in arrays)) + p.theta_f.nbytes

    def shared_parts(self) -> dict[str, object]:
        """What a copy of this chain in another process may keep between calls instead of
        receiving it again: the structure (never changes) and the sweep's parameter
        buffers (``build_params`` rewrites them before each sweep reads them)."""
        return {"structure": self.structure, "row_tables": self._row_tables, "params": self._params}

    def __getstate__(self) -> dict:
        """Pickled without its compiled kernels (``__setstate__`` looks up its build's)."""
        state = dict(vars(self))
        del state["_kernels"]
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self._kernels = dense_kernels(self.build)

    def use_build(self, build: str) -> None:
        """Run the kernels of ``build`` ("parallel" or "serial") from the next call on:
        the state stays, and the results are the same bit for bit (:mod:`.quick`)."""
        self._kernels = dense_kernels(build)
        self.build = build

    # ------------------------------------------------------------------ kernels
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,).

        With ``statistics`` (default) the sufficient statistics of the new state under θ
        are accumulated during the sweep, for a following ``statistics(theta)``.
        """
        mu = _check_params(mu, self.K, "mu")
        theta = _check_params(theta, self.K, "theta")
        s, p, work = self.structure, self._params, self._work
        dense = self._kernels
        dense.build_params(mu, theta, s, p, work)
        if not self._y_drawn:  # first sweep: ỹ ~ σ(φ(x̃)·θ) before the features
            dense.sample_statistics(self._x, p.theta_f, self._z, s, work, False)
            draw_labels(self._z, self._y, stream_key(self.seed, self.sweeps, 1), self._x.shape[0])
            self._y_drawn = True
        key = stream_key(self.seed, self.sweeps, 0)
        dense.gibbs_sweep(self._x, self._y, self._z, key, s, p, work, bool(statistics))
        self._codes = self._rows = None
        self._stats = None
        self._stats_theta = theta.copy() if statistics else None
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        theta = _check_params(theta, self.K, "theta")
        return sample_logits(self.rows, theta)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and marginalised ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), (K,) each.

        σ is accumulated in fixed point (resolution 2^-32 per sample up to n' < 2^15,
        2^-(62 - 2b) for n' < 2^b above), so the sums are exact and independent of the
        number of threads.
        """
        theta = _check_params(theta, self.K, "theta")
        s = self.structure
        if self._stats_theta is None or not np.array_equal(theta, self._stats_theta):
            theta_f = theta.copy()
            np.add.at(theta_f, s.fold_parent, theta[s.fold_sub])
            z = np.empty(self.n_samples)
            self._kernels.sample_statistics(self._x, theta_f, z, s, self._work, True)
            self._stats = None
            self._stats_theta = theta.copy()
        if self._stats is None:
            self._stats = reduce_statistics(
                self._work.acc, s.fold_parent, s.fold_sub, self._a_bits, self._q_bits
            )
        return self._stats[0].copy(), self._stats[1].copy()


# ---------------------------------------------------------------------------- hashed chain
class HashedGibbsChain:
    """Persistent Gibbs samples (x̃_i, ỹ_i) for a layout with exact and hashed tables.

    Parameters: ``layout`` (TableLayout), ``n_samples`` n', ``marginals`` (one probability
    vector of shape (M_f,) per feature, for the independent initial draw), ``seed``.

    codes : int32 (n', D) codes of the samples (read-only snapshot).
    rows  : int64 (n', T) row of each sample in each table (read-only snapshot).
    structure : the :class:`~.hashed.HashedStructure` the kernels read (built once).
    """

    def __init__(self, layout, n_samples: int, marginals: list[np.ndarray], seed: int) -> None:
        n_samples = _check_n_samples(n_samples)
        m = np.asarray(layout.n_modalities, dtype=np.int64)
        cdfs = marginal_cdfs(m, marginals)
        D = m.size
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        T = layout.n_tables
        ptr, tab, stride = [0], [], []
        for f in range(D):
            for t, feats in enumerate(layout.tables):
                if f in feats:
                    tab.append(t)
                    stride.append(int(layout.strides[t, f]))
            ptr.append(len(tab))
        self.structure = HashedStructure(
            n_modalities=m,
            feat_ptr=np.asarray(ptr, dtype=np.int64),
            feat_tab=np.asarray(tab, dtype=np.int64),
            feat_stride=np.asarray(stride, dtype=np.int64),
            tables=table_arrays(
                layout.tables, layout.strides, layout.offsets, layout.hash_sizes, layout.hash_salts
            ),
        )
        self._x = init_samples_hashed(*_cdf_arrays(cdfs), n_samples, self.seed)
        self._y = np.zeros(n_samples, dtype=np.uint8)
        self._y_drawn = False
        self._z = np.zeros(n_samples)
        self._rows = np.zeros((n_samples, T), dtype=np.int64)
        self._W = np.zeros(2 * self.K)
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._stats_theta: np.ndarray | None = None

    # ------------------------------------------------------------------ state
    @property
    def n_samples(self) -> int:
        return int(self._x.shape[0])

    @property
    def codes(self) -> np.ndarray:
        """int32 (n', D) codes of the samples (read-only copy)."""
        out = self._x.copy()
        out.flags.writeable = False
        return out

    @property
    def rows(self) -> np.ndarray:
        """int64 (n', T) row of each sample in each table (read-only copy)."""
        if not self._y_drawn:  # before the first sweep rows are not computed yet
            table_rows(self._x, self.structure.tables, self._rows)
        out = self._rows.copy()
        out.flags.writeable = False
        return out

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain: state, rows, the [μ, μ + θ] vector."""
        arrays = (self._x, self._y, self._z, self._rows, self._W)
        return int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ kernels
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,).

        ``statistics`` is part of the :class:`Chain` interface; this sweep always leaves
        the samples' logits and rows ready, so ``statistics(theta)`` is one bincount.
        """
        mu = _check_params(mu, self.K, "mu")
        theta = _check_params(theta, self.K, "theta")
        self._W[: self.K] = mu
        self._W[self.K :] = mu + theta
        keys = stream_key(self.seed, self.sweeps, 0), stream_key(self.seed, self.sweeps, 1)
        W, s = self._W, self.structure
        hashed_sweep(self._x, self._y, self._z, self._rows, W, theta, s, *keys, not self._y_drawn)
        self._y_drawn = True
        self._stats = None
        self._stats_theta = theta.copy()
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        theta = _check_params(theta, self.K, "theta")
        return theta[self.rows].sum(axis=1)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), float64 (K,) each."""
        theta = _check_params(theta, self.K, "theta")
        if self._stats_theta is None or not np.array_equal(theta, self._stats_theta):
            hashed_logits(self._x, theta, self.structure.tables, self._z, self._rows)
            self._stats = None
            self._stats_theta = theta.copy()
        if self._stats is None:
            T = self._rows.shape[1]
            r = self._rows.ravel()
            p = 1.0 / (1.0 + np.exp(-self._z))
            d = np.bincount(r, minlength=self.K).astype(np.float64)
            c = np.bincount(r, weights=np.repeat(p, T), minlength=self.K)
            self._stats = (d, c)
        return self._stats[0].copy(), self._stats[1].copy()


def warm_up(hashed: bool = False, build: str = "parallel", say=None) -> None:
    """Compile (or load from numba's cache) the dense chain's kernels in ``build``
    ("parallel" or "serial") and the row kernel on a tiny problem; with ``hashed``, the
    hashed chain's kernels too.  ``say`` (e.g. ``print``): told before and after, with the
    seconds taken, so that a lesson's first cell does not sit silent while numba compiles
    (about a minute on a machine's first run; a second from the cache after)."""
    import time

    from ..tables import TableLayout

    t0 = time.perf_counter()
    if say is not None:
        say(
            "Preparing the compiled sampler (the first run on this machine compiles it: "
            "about a minute; later runs load it from the cache in seconds)…"
        )

    lay = TableLayout.all_pairs([2, 3])
    chain = GibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0, build=build)
    chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
    chain.statistics(np.zeros(lay.K))
    chain.statistics(np.ones(lay.K))
    chain.logits(np.zeros(lay.K))
    lay.rows(chain.codes)
    if build == "parallel":
        mark_compiled("dense")
    if hashed:
        lay = TableLayout.all_pairs([2, 3], hash_sizes={(0, 1): 4})
        chain = HashedGibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0)
        _ = chain.rows
        chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
        chain.statistics(np.ones(lay.K))
    if say is not None:
        say(f"The sampler is ready ({time.perf_counter() - t0:.1f} s).")
