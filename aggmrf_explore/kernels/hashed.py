"""Exact Gibbs sampling when some tables are hashed (the paper's section 4.3, φ_H = 𝓗 φ).

:class:`HashedGibbsChain` has the interface the PCD trainer uses from
:class:`~aggmrf_explore.kernels.gibbs.GibbsChain` (constructor, ``sweep``, ``statistics``,
``codes``, ``rows``, ``logits``, ``memory_bytes``) and works for *any* layout, hashed or
not; ``kernels.make_chain`` picks it when the layout has a hashed table.

The site update
---------------
For sample i and feature f, the full conditional is

    P(X_f = v | x̃_i^{-f}, ỹ_i) ∝ exp(Σ_{t∋f} μ[row_t(v)] + ỹ_i θ[row_t(v)]),

    row_t(v) = offset_t + key_t(v)                 (exact table)
             = offset_t + bucket_t(key_t(v))       (hashed table, H_t rows)
    key_t(v) = rest_t + v · stride_{t,f},  rest_t = Σ_{g∈t, g≠f} x̃_i^g stride_{t,g}

(tables without f add a constant that cancels).  Each candidate v is a *gather* of one
parameter per table holding f: no dense Π M_f block is ever built, so memory is O(K + n'D)
and a site costs O(M_f · #tables holding f).  ``bucket_t`` is :func:`_bucket`, the numba
twin of :func:`aggmrf_explore.tables.hash_rows` (same bits).

The sweep is a systematic scan in one random feature order per sweep (shared by all
samples), then ỹ_i ~ σ(φ(x̃_i)·θ) (and once before the very first sweep), exactly like
``gibbs.py``.  Samples are independent given (μ, θ): the loop runs in parallel over
blocks of samples, each block with one scratch vector of max M_f scores (no allocation in
the inner loops).  Uniforms are counter based (splitmix64 of (seed, sweep, sample,
site)), so a seed gives the same chain whatever the number of threads.  Scores are
float64.

Statistics d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i) are sequential ``np.bincount``
sums over the samples' rows (n' × T): deterministic, O(n'T + K).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .gibbs import _GOLDEN, _mix, _py_stream_seed, feature_order, inverse_cdf, marginal_cdfs

BLOCK = 64  # samples per parallel work item

__all__ = ["HashedGibbsChain", "bucket_of"]


# ---------------------------------------------------------------------------- hashing, RNG
@njit(inline="always")
def _bucket(key, salt, H):
    """Bucket of a non-negative int64 key: ((mix((key ^ salt) + golden) >> 32) · H) >> 32."""
    z = _mix((np.uint64(key) ^ salt) + _GOLDEN)
    return np.int64(((z >> np.uint64(32)) * np.uint64(H)) >> np.uint64(32))


@njit(cache=True)
def bucket_of(keys, salt, H):
    """_bucket over an int64 array (for tests against tables.hash_rows), int64 (n,)."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        out[i] = _bucket(keys[i], salt, H)
    return out


@njit(inline="always")
def _uniform(key, i, j, D1):
    """Uniform in [0, 1) of site j ∈ [0, D] of sample i (53 bits)."""
    z = _mix(key + np.uint64(i * D1 + j + 1) * _GOLDEN)
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def _sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(inline="always")
def _row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt):
    """Row of sample i in table t (exact or hashed)."""
    key = np.int64(0)
    for j in range(tab_feat.shape[1]):
        key += np.int64(x[i, tab_feat[t, j]]) * tab_stride[t, j]
    if tab_H[t] > 0:
        key = _bucket(key, tab_salt[t], tab_H[t])
    return tab_off[t] + key


@njit(inline="always")
def _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows):
    """φ(x̃_i)·θ; also stores the rows of sample i in rows[i, :]."""
    z = 0.0
    for t in range(tab_off.shape[0]):
        r = _row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)
        rows[i, t] = r
        z += theta[r]
    return z


# ---------------------------------------------------------------------------- kernels
@njit(cache=True, parallel=True)
def hashed_sweep(x, y, W, theta, n_modalities, feat_ptr, feat_tab, feat_stride,
                 tab_feat, tab_stride, tab_off, tab_H, tab_salt, key, first_key, first,
                 z, rows):  # fmt: skip
    """One sweep of every sample (see the module doc); fills z[i] = φ(x̃_i)·θ and rows.

    x int32 (n', D) codes; y uint8 (n',); W float64 (2K,) = [μ, μ + θ]; θ float64 (K,);
    z float64 (n',); rows int64 (n', T).  The feature order is drawn from key.
    """
    n, D = x.shape
    K = theta.shape[0]
    order = feature_order(key, D)
    max_m = 1
    for f in range(D):
        max_m = max(max_m, n_modalities[f])
    for b in prange((n + BLOCK - 1) // BLOCK):
        scores = np.empty(max_m, dtype=np.float64)
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            if first:  # ỹ ~ σ(φ(x̃)·θ) before the first sweep's features
                zi = _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows)
                y[i] = 1 if _uniform(first_key, i, D, D + 1) < _sigmoid(zi) else 0
            base = K if y[i] else 0
            for q in range(D):
                f = order[q]
                M = n_modalities[f]
                if M == 1:
                    continue
                for v in range(M):
                    scores[v] = 0.0
                for e in range(feat_ptr[f], feat_ptr[f + 1]):
                    t = feat_tab[e]
                    s = feat_stride[e]
                    rest = np.int64(0)
                    for j in range(tab_feat.shape[1]):
                        rest += np.int64(x[i, tab_feat[t, j]]) * tab_stride[t, j]
                    rest -= np.int64(x[i, f]) * s
                    off = base + tab_off[t]
                    H = tab_H[t]
                    if H == 0:
                        for v in range(M):
                            scores[v] += W[off + rest + v * s]
                    else:
                        salt = tab_salt[t]
                        for v in range(M):
                            scores[v] += W[off + _bucket(rest + v * s, salt, H)]
                top = scores[0]
                for v in range(1, M):
                    top = max(top, scores[v])
                total = 0.0
                for v in range(M):
                    scores[v] = np.exp(scores[v] - top)
                    total += scores[v]
                target = _uniform(key, i, f, D + 1) * total
                acc = 0.0
                pick = M - 1
                for v in range(M - 1):
                    acc += scores[v]
                    if target < acc:
                        pick = v
                        break
                x[i, f] = pick
            zi = _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows)
            y[i] = 1 if _uniform(key, i, D, D + 1) < _sigmoid(zi) else 0
            z[i] = zi


@njit(cache=True, parallel=True)
def hashed_logits(x, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, z, rows):
    """z[i] = φ(x̃_i)·θ and rows[i, :] for every sample."""
    for i in prange(x.shape[0]):
        z[i] = _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows)


@njit(cache=True)
def _init_samples(cdfs, cdf_ptr, n, seed):
    """n samples with independent features from per-feature CDFs, int32 (n, D)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    key = _mix(np.uint64(seed) + _GOLDEN)
    for i in range(n):
        for f in range(D):
            codes[i, f] = inverse_cdf(_uniform(key, i, f, D + 1), cdfs, cdf_ptr[f], cdf_ptr[f + 1])
    return codes


# ---------------------------------------------------------------------------- the chain
class HashedGibbsChain:
    """Persistent Gibbs samples (x̃_i, ỹ_i) for a layout with exact and hashed tables.

    Parameters: ``layout`` (TableLayout), ``n_samples`` n', ``marginals`` (one probability
    vector of shape (M_f,) per feature, for the independent initial draw), ``seed``.

    codes : int32 (n', D) codes of the samples (read-only snapshot).
    rows  : int64 (n', T) row of each sample in each table (read-only snapshot).
    """

    def __init__(self, layout, n_samples: int, marginals: list[np.ndarray], seed: int) -> None:
        n_samples = int(n_samples)
        if n_samples <= 0:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples}.")
        m = np.asarray(layout.n_modalities, dtype=np.int64)
        cdfs = marginal_cdfs(m, marginals)
        D = m.size
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        self._m = m
        T = layout.n_tables
        width = max(1, max(len(t) for t in layout.tables))
        self._tab_feat = np.zeros((T, width), dtype=np.int64)  # padding: feature 0, stride 0
        self._tab_stride = np.zeros((T, width), dtype=np.int64)
        for t, feats in enumerate(layout.tables):
            for j, f in enumerate(feats):
                self._tab_feat[t, j] = f
                self._tab_stride[t, j] = layout.strides[t, f]
        self._tab_off = np.asarray(layout.offsets[:-1], dtype=np.int64)
        self._tab_H = np.asarray(layout.hash_sizes, dtype=np.int64)
        self._tab_salt = np.asarray(layout.hash_salts, dtype=np.uint64)
        ptr, tab, stride = [0], [], []
        for f in range(D):
            for t, feats in enumerate(layout.tables):
                if f in feats:
                    tab.append(t)
                    stride.append(int(layout.strides[t, f]))
            ptr.append(len(tab))
        self._feat_ptr = np.asarray(ptr, dtype=np.int64)
        self._feat_tab = np.asarray(tab, dtype=np.int64)
        self._feat_stride = np.asarray(stride, dtype=np.int64)
        cdf_ptr = np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64)
        self._x = _init_samples(np.concatenate(cdfs), cdf_ptr, n_samples, self.seed)
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
            hashed_logits(self._x, np.zeros(self.K), *self._tab_args(), self._z, self._rows)
        out = self._rows.copy()
        out.flags.writeable = False
        return out

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain: state, rows, the [μ, μ + θ] vector."""
        arrays = (self._x, self._y, self._z, self._rows, self._W)
        return int(sum(a.nbytes for a in arrays))

    def _tab_args(self):
        return self._tab_feat, self._tab_stride, self._tab_off, self._tab_H, self._tab_salt

    def _check(self, a: np.ndarray, name: str) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.shape != (self.K,):
            raise ValueError(f"{name} must have shape ({self.K},); got {a.shape}.")
        return a

    def _key(self, stream: int) -> np.uint64:
        """The key of random stream ``stream`` at this sweep (the dense chain's formula)."""
        return np.uint64(_py_stream_seed(self.seed, self.sweeps, stream))

    # ------------------------------------------------------------------ kernels
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,).

        ``statistics`` is accepted for interface parity: the sweep always leaves the
        samples' logits and rows ready, so ``statistics(theta)`` is one bincount.
        """
        mu = self._check(mu, "mu")
        theta = self._check(theta, "theta")
        self._W[: self.K] = mu
        self._W[self.K :] = mu + theta
        hashed_sweep(
            self._x, self._y, self._W, theta, self._m,
            self._feat_ptr, self._feat_tab, self._feat_stride, *self._tab_args(),
            self._key(0), self._key(1), not self._y_drawn, self._z, self._rows,
        )  # fmt: skip
        self._y_drawn = True
        self._stats = None
        self._stats_theta = theta.copy()
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        theta = self._check(theta, "theta")
        return theta[self.rows].sum(axis=1)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), float64 (K,) each."""
        theta = self._check(theta, "theta")
        if self._stats_theta is None or not np.array_equal(theta, self._stats_theta):
            hashed_logits(self._x, theta, *self._tab_args(), self._z, self._rows)
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


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels on a tiny hashed problem."""
    from ..tables import TableLayout

    lay = TableLayout.all_pairs([2, 3], hash_sizes={(0, 1): 4})
    chain = HashedGibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0)
    chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
    chain.statistics(np.ones(lay.K))
