"""Exact Gibbs sampling when some tables are hashed (the paper's section 4.3, φ_H = 𝓗 φ).

The kernels of :class:`~aggmrf_explore.kernels.chain.HashedGibbsChain`, which works for
*any* layout, hashed or not; ``kernels.make_chain`` picks it when the layout has a hashed
table.

The site update
---------------
For sample i and feature f, the full conditional is

    P(X_f = v | x̃_i^{-f}, ỹ_i) ∝ exp(Σ_{t∋f} μ[row_t(v)] + ỹ_i θ[row_t(v)]),

    row_t(v) = offset_t + key_t(v)                 (exact table)
             = offset_t + bucket_t(key_t(v))       (hashed table, H_t rows)
    key_t(v) = rest_t + v · stride_{t,f},  rest_t = Σ_{g∈t, g≠f} x̃_i^g stride_{t,g}

(tables without f add a constant that cancels).  Each candidate v is a *gather* of one
parameter per table holding f: no dense Π M_f block is ever built, so memory is O(K + n'D)
and a site costs O(M_f · #tables holding f).  ``bucket_t`` is :func:`.rows.bucket`, the numba
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

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import GOLDEN, draw_from_scores, feature_order, inverse_cdf, mix
from .rng import sigmoid as _sigmoid
from .rng import uniform53 as _uniform
from .rows import TableArrays, bucket, table_row

BLOCK = 64  # samples per parallel work item

__all__ = ["HashedStructure", "hashed_sweep", "hashed_logits", "init_samples_hashed"]


class HashedStructure(NamedTuple):
    """The static structure of a hashed chain (built once by ``HashedGibbsChain``).

    n_modalities : int64 (D,) M_f
    feat_ptr     : int64 (D + 1,) the tables holding f are feat_tab[feat_ptr[f] : feat_ptr[f + 1]]
    feat_tab, feat_stride : int64 (n_entries,) those tables and f's stride in each
    tables       : the layout's TableArrays (exact and hashed tables)
    """

    n_modalities: np.ndarray
    feat_ptr: np.ndarray
    feat_tab: np.ndarray
    feat_stride: np.ndarray
    tables: TableArrays


@njit(inline="always")
def _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows):
    """φ(x̃_i)·θ; also stores the rows of sample i in rows[i, :]."""
    z = 0.0
    for t in range(tab_off.shape[0]):
        r = table_row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)
        rows[i, t] = r
        z += theta[r]
    return z


# ---------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True, parallel=True)
def hashed_sweep(x, y, z, rows, W, theta, hs, key, first_key, first):
    """One sweep of every sample (see the module doc); fills z[i] = φ(x̃_i)·θ and rows.

    x int32 (n', D) codes; y uint8 (n',); z float64 (n',); rows int64 (n', T);
    W float64 (2K,) = [μ, μ + θ]; θ float64 (K,); hs: HashedStructure.  The feature order
    is drawn from key; with ``first``, ỹ is drawn before the features from first_key.
    """
    n_modalities, feat_ptr, feat_tab, feat_stride = (
        hs.n_modalities,
        hs.feat_ptr,
        hs.feat_tab,
        hs.feat_stride,
    )
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = hs.tables
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
                            scores[v] += W[off + bucket(rest + v * s, salt, H)]
                pick = draw_from_scores(scores, M, _uniform(key, i, f, D + 1))
                x[i, f] = pick
            zi = _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows)
            y[i] = 1 if _uniform(key, i, D, D + 1) < _sigmoid(zi) else 0
            z[i] = zi


@njit(cache=True, nogil=True, parallel=True)
def hashed_logits(x, theta, tabs, z, rows):
    """z[i] = φ(x̃_i)·θ and rows[i, :] for every sample (tabs: a TableArrays)."""
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = tabs
    for i in prange(x.shape[0]):
        z[i] = _logit(x, i, theta, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows)


@njit(cache=True, nogil=True)
def init_samples_hashed(cdfs, cdf_ptr, n, seed):
    """n samples with independent features from per-feature CDFs, int32 (n, D)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    key = mix(np.uint64(seed) + GOLDEN)
    for i in range(n):
        for f in range(D):
            codes[i, f] = inverse_cdf(_uniform(key, i, f, D + 1), cdfs, cdf_ptr[f], cdf_ptr[f + 1])
    return codes
