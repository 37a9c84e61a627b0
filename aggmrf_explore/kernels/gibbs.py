"""Numba kernels for the Gibbs sampler of the pairwise MRF π(x, y) ∝ exp(φ(x)·(μ + yθ)).

State of the persistent chain, for n' samples and T tables (intercept included):

- ``codes``  int32 (n', D): current feature codes x̃_i;
- ``rows``   int32 (n', T): row of x̃_i in every table (kept in sync with ``codes``).

Randomness is counter based: sample i at sweep ``it`` draws from a splitmix64 stream
seeded by (seed, it, i), so results do not depend on the number of threads nor on the
way samples are split between them.  Accumulations are parallel over *tables* (each
thread owns whole tables, hence disjoint rows), so they are race free and their
floating-point summation order is fixed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_BLOCK = 64  # samples per parallel block (one scratch buffer per block)


@njit(inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _stream_seed(seed, it, i):
    s = _mix(np.uint64(seed) + _GOLDEN)
    s = _mix(s ^ (np.uint64(it) * _M1 + _GOLDEN))
    return _mix(s ^ (np.uint64(i) * _M2 + _GOLDEN))


@njit(inline="always")
def _next(state):
    """splitmix64 step: returns (new_state, uniform in [0, 1))."""
    state = state + _GOLDEN
    z = _mix(state)
    return state, (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, parallel=True)
def gibbs_sweep(
    codes, rows, mu, theta, n_modalities, feat_ptr, feat_tables, feat_strides, seed, it
):
    """One Gibbs sweep over every persistent sample, in place.

    For each sample: draw ỹ ~ σ(φ(x̃)·θ), then resample every feature, in a random
    order, from P(X_f | x̃_{-f}, ỹ) ∝ exp(Σ_{t∋f} μ[row] + ỹ θ[row]) (max subtracted
    before exp).  mu, theta: float64 (K,).
    """
    n, D = codes.shape
    T = rows.shape[1]
    m_max = 1
    for f in range(D):
        if n_modalities[f] > m_max:
            m_max = n_modalities[f]
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(n_blocks):
        scores = np.empty(m_max, dtype=np.float64)
        order = np.empty(D, dtype=np.int64)
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            state = _stream_seed(seed, it, i)
            logit = 0.0
            for t in range(T):
                logit += theta[rows[i, t]]
            state, u = _next(state)
            # y ~ Bernoulli(σ(logit)), stable for large |logit|
            if logit >= 0:
                y = 1.0 if u * (1.0 + np.exp(-logit)) < 1.0 else 0.0
            else:
                el = np.exp(logit)
                y = 1.0 if u * (1.0 + el) < el else 0.0
            for f in range(D):
                order[f] = f
            for f in range(D - 1, 0, -1):  # Fisher-Yates
                state, u = _next(state)
                j = int(u * (f + 1))
                tmp = order[f]
                order[f] = order[j]
                order[j] = tmp
            for k in range(D):
                f = order[k]
                M = n_modalities[f]
                if M == 1:
                    continue
                xf = codes[i, f]
                for v in range(M):
                    scores[v] = 0.0
                for p in range(feat_ptr[f], feat_ptr[f + 1]):
                    t = feat_tables[p]
                    st = feat_strides[p]
                    base = rows[i, t] - xf * st
                    if y > 0.0:
                        for v in range(M):
                            r = base + v * st
                            scores[v] += mu[r] + theta[r]
                    else:
                        for v in range(M):
                            scores[v] += mu[base + v * st]
                smax = scores[0]
                for v in range(1, M):
                    if scores[v] > smax:
                        smax = scores[v]
                total = 0.0
                for v in range(M):
                    scores[v] = np.exp(scores[v] - smax)
                    total += scores[v]
                state, u = _next(state)
                target = u * total
                acc = 0.0
                new = M - 1
                for v in range(M):
                    acc += scores[v]
                    if target < acc:
                        new = v
                        break
                if new != xf:
                    codes[i, f] = new
                    for p in range(feat_ptr[f], feat_ptr[f + 1]):
                        t = feat_tables[p]
                        rows[i, t] += (new - xf) * feat_strides[p]


@njit(cache=True, parallel=True)
def sample_logits(rows, theta):
    """φ(x̃_i)·θ for every sample, shape (n',)."""
    n, T = rows.shape
    out = np.empty(n, dtype=np.float64)
    for i in prange(n):
        s = 0.0
        for t in range(T):
            s += theta[rows[i, t]]
        out[i] = s
    return out


@njit(cache=True, parallel=True)
def accumulate(rows, weights, K):
    """d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i w_i φ(x̃_i), both float64 (K,); parallel over tables."""
    n, T = rows.shape
    d_hat = np.zeros(K, dtype=np.float64)
    c_hat = np.zeros(K, dtype=np.float64)
    for t in prange(T):
        for i in range(n):
            r = rows[i, t]
            d_hat[r] += 1.0
            c_hat[r] += weights[i]
    return d_hat, c_hat


@njit(cache=True)
def init_samples(marginal_cdfs, cdf_ptr, n, seed):
    """Draw n samples with independent features from per-feature CDFs, int32 (n, D)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    for i in range(n):
        state = _stream_seed(seed, 0xFFFFFFFF, i)
        for f in range(D):
            state, u = _next(state)
            lo = cdf_ptr[f]
            hi = cdf_ptr[f + 1]
            v = hi - lo - 1
            for k in range(lo, hi):
                if u < marginal_cdfs[k]:
                    v = k - lo
                    break
            codes[i, f] = v
    return codes
