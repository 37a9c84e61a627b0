"""Metropolis-within-Gibbs: a site update whose cost does not grow with M_f.

The sweep (:func:`mh_sweep`) is the systematic scan of :mod:`.hashed` (one random
feature order per sweep, shared by all samples; then ỹ_i ~ σ(φ(x̃_i)·θ)), but each feature
f is updated by one of two kernels, chosen per feature (``use_mh[f]``):

- **full conditional** (small M_f): the exact draw of :mod:`.hashed`, O(M_f · T_f) gathers;
- **Metropolis–Hastings** (large M_f): propose v' ~ q_f, the feature's single-table
  marginal mixed with 5 % uniform (so every value can be proposed), drawn in O(1) from a
  Walker/Vose alias table (one 53-bit uniform: column ⌊u M_f⌋, coin u M_f − ⌊u M_f⌋); accept
  with probability

      min(1, exp(Σ_{t∋f} W[ỹ][row_t(v')] − W[ỹ][row_t(v)]) · q_f(v) / q_f(v')),

  W[y] = μ + yθ: O(T_f) gathers whatever M_f.  This is an MH kernel whose target is the
  full conditional P(X_f | x̃^{-f}, ỹ) of π(x, y) ∝ exp(φ(x)·(μ + yθ)): it satisfies
  detailed balance with respect to it, hence leaves π invariant, and with q_f > 0 on every
  value it is irreducible on the values of positive probability.  Composing invariant
  kernels in any fixed order keeps π invariant (``tests/test_mh.py`` checks the stationary
  table frequencies against :mod:`aggmrf_explore.exact` by enumeration).

Randomness is counter based (:func:`.rng.uniform53` of (key, global sample index, site)):
the proposal uses the sweep's key (stream 0), the acceptance stream 2, the first ỹ
stream 1.  ``i0`` is the global index of the chain's first sample, so a shard of samples
[i0, i0 + n) draws exactly what the same samples draw in one chain: results do not
depend on threads nor on how samples are split into shards.

Statistics are integers, packed as in the dense kernel: one int64 per row holds
count · 2^a + Σ round(σ(z_i) · 2^q) (:func:`fixed_point`; q = 24 at n' = 400 000), exact, so
shards' partial sums add up to the one-chain sums bit for bit; rows are kept transposed,
int32 (T, n'), so the accumulation runs in parallel over tables (disjoint row ranges).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import GOLDEN, feature_order, inverse_cdf, mix
from .rng import sigmoid as _sigmoid
from .rng import uniform53 as _uniform
from .rows import bucket, table_row

__all__ = [
    "PROPOSAL_UNIFORM",
    "fixed_point",
    "alias_table",
    "mh_sweep",
    "mh_rows_logits",
    "mh_accumulate",
    "init_samples_offset",
]

BLOCK = 64  # samples per parallel work item
PROPOSAL_UNIFORM = 0.05  # weight of the uniform in the proposal mixture


def fixed_point(n_samples: int) -> tuple[int, int]:
    """(q_bits, a_bits) of the packed statistics of a chain of n' samples (all shards):
    one int64 per row holds count · 2^a_bits + Σ round(σ · 2^q_bits); with n' < 2^b,
    q_bits = min(32, 62 − 2b) and a_bits = q_bits + b keep every sum below 2^62."""
    b = int(n_samples).bit_length()
    q = min(32, 62 - 2 * b)
    if q < 8:
        raise ValueError(f"n_samples = {n_samples} is too large (at most 2^27 - 1)")
    return q, q + b


def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table of a probability vector p (M,): (prob float64 (M,), alias int64 (M,)).

    Drawing column k uniformly and keeping k with probability prob[k] (else alias[k]) gives
    value v with probability p[v] exactly (up to rounding of p)."""
    p = np.asarray(p, dtype=np.float64)
    M = p.size
    scaled = p / p.sum() * M
    prob = np.ones(M)
    alias = np.arange(M, dtype=np.int64)
    small = [k for k in range(M) if scaled[k] < 1.0]
    large = [k for k in range(M) if scaled[k] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    return prob, alias


@njit(inline="always")
def _rest(x, i, t, f, tab_feat, tab_stride):
    """key_t without f's term: Σ_{g∈t, g≠f} x[i, g] stride_{t,g}."""
    rest = np.int64(0)
    for j in range(tab_feat.shape[1]):
        g = tab_feat[t, j]
        if g != f:
            rest += np.int64(x[i, g]) * tab_stride[t, j]
    return rest


@njit(inline="always")
def _row(rest, v, s, off, H, salt):
    if H == 0:
        return off + rest + v * s
    return off + bucket(rest + v * s, salt, H)


@njit(cache=True, parallel=True)
def mh_sweep(
    x, y, z, W, theta, hs, mh, i0, key, acc_key, first_key, first, counts, rows_t, fixed, scale
):
    """One sweep of the samples x int32 (n, D) (global indices i0 .. i0 + n − 1).

    y uint8 (n,), z float64 (n,) (filled with φ(x̃_i)·θ), W float64 (2K,) = [μ, μ + θ],
    θ (K,), hs: HashedStructure; mh: (use_mh bool (D,), alias_ptr int64 (D + 1,),
    alias_prob float64, alias_idx int64, log_q float64 (Σ M_f,)).  counts int64
    (n_blocks, 2 D) receives accepted / proposed MH moves per block and feature.  The new
    state's rows, int32 rows_t (T, n), and fixed-point σ's round(σ · scale), int64 fixed
    (n,), are written as in :func:`mh_rows_logits` (the statistics need no second pass).
    """
    n_modalities, feat_ptr, feat_tab, feat_stride = (
        hs.n_modalities,
        hs.feat_ptr,
        hs.feat_tab,
        hs.feat_stride,
    )
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = hs.tables
    use_mh, a_ptr, a_prob, a_idx, log_q = mh
    n, D = x.shape
    K = theta.shape[0]
    T = tab_off.shape[0]
    order = feature_order(key, D)
    max_m = 1
    for f in range(D):
        max_m = max(max_m, n_modalities[f])
    for b in prange((n + BLOCK - 1) // BLOCK):
        scores = np.empty(max_m, dtype=np.float64)
        for f in range(2 * D):
            counts[b, f] = 0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            gi = i0 + i
            if first:  # ỹ ~ σ(φ(x̃)·θ) before the first sweep's features
                zi = 0.0
                for t in range(T):
                    zi += theta[table_row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)]
                y[i] = 1 if _uniform(first_key, gi, D, D + 1) < _sigmoid(zi) else 0
            base = K if y[i] else 0
            for q in range(D):
                f = order[q]
                M = n_modalities[f]
                if M == 1:
                    continue
                v = np.int64(x[i, f])
                if use_mh[f]:
                    u = _uniform(key, gi, f, D + 1) * M
                    k = np.int64(u)
                    if k >= M:
                        k = M - 1
                    w = a_ptr[f] + k
                    prop = k if u - k < a_prob[w] else a_idx[w]
                    counts[b, D + f] += 1
                    if prop == v:
                        counts[b, f] += 1
                        continue
                    delta = log_q[a_ptr[f] + v] - log_q[a_ptr[f] + prop]
                    for e in range(feat_ptr[f], feat_ptr[f + 1]):
                        t = feat_tab[e]
                        s = feat_stride[e]
                        rest = _rest(x, i, t, f, tab_feat, tab_stride)
                        off = base + tab_off[t]
                        delta += W[_row(rest, prop, s, off, tab_H[t], tab_salt[t])]
                        delta -= W[_row(rest, v, s, off, tab_H[t], tab_salt[t])]
                    if delta >= 0.0 or _uniform(acc_key, gi, f, D + 1) < np.exp(delta):
                        x[i, f] = prop
                        counts[b, f] += 1
                    continue
                for c in range(M):
                    scores[c] = 0.0
                for e in range(feat_ptr[f], feat_ptr[f + 1]):
                    t = feat_tab[e]
                    s = feat_stride[e]
                    rest = _rest(x, i, t, f, tab_feat, tab_stride)
                    off = base + tab_off[t]
                    H = tab_H[t]
                    if H == 0:
                        for c in range(M):
                            scores[c] += W[off + rest + c * s]
                    else:
                        salt = tab_salt[t]
                        for c in range(M):
                            scores[c] += W[off + bucket(rest + c * s, salt, H)]
                top = scores[0]
                for c in range(1, M):
                    top = max(top, scores[c])
                total = 0.0
                for c in range(M):
                    scores[c] = np.exp(scores[c] - top)
                    total += scores[c]
                target = _uniform(key, gi, f, D + 1) * total
                acc = 0.0
                pick = M - 1
                for c in range(M - 1):
                    acc += scores[c]
                    if target < acc:
                        pick = c
                        break
                x[i, f] = pick
            zi = 0.0
            for t in range(T):
                r = table_row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)
                rows_t[t, i] = r
                zi += theta[r]
            p1 = _sigmoid(zi)
            y[i] = 1 if _uniform(key, gi, D, D + 1) < p1 else 0
            z[i] = zi
            fixed[i] = np.int64(np.round(p1 * scale))


@njit(cache=True, parallel=True)
def mh_rows_logits(x, theta, tabs, rows_t, z, fixed, scale):
    """rows_t[t, i] = row of sample i in table t (int32 (T, n)), z[i] = φ(x̃_i)·θ and
    fixed[i] = round(σ(z_i) · scale) (int64)."""
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = tabs
    T = tab_off.shape[0]
    for i in prange(x.shape[0]):
        zi = 0.0
        for t in range(T):
            r = table_row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)
            rows_t[t, i] = r
            zi += theta[r]
        z[i] = zi
        fixed[i] = np.int64(np.round(_sigmoid(zi) * scale))


@njit(cache=True, parallel=True)
def mh_accumulate(rows_t, fixed, one_a, acc):
    """acc[r] += one_a + fixed[i] over every (table, sample): count · one_a + Σ fixed σ in
    one int64 per row (:func:`fixed_point`); parallel over tables (their rows are
    disjoint), so the sums are exact and thread independent."""
    T, n = rows_t.shape
    for t in prange(T):
        for i in range(n):
            acc[rows_t[t, i]] += one_a + fixed[i]


@njit(cache=True)
def init_samples_offset(cdfs, cdf_ptr, n, seed, i0):
    """Samples i0 .. i0 + n − 1 with independent features from per-feature CDFs, int32 (n, D)
    (the same codes as ``hashed.init_samples_hashed`` for i0 = 0)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    key = mix(np.uint64(seed) + GOLDEN)
    for i in range(n):
        for f in range(D):
            u = _uniform(key, i0 + i, f, D + 1)
            codes[i, f] = inverse_cdf(u, cdfs, cdf_ptr[f], cdf_ptr[f + 1])
    return codes
