"""Counter-based randomness of the package: ONE splitmix64, its stream keys and the uniforms.

splitmix64 (Steele, Lea & Flood 2014) is a 64-bit counter plus a finaliser (xor-shift,
multiply, xor-shift, multiply, xor-shift with the constants :data:`M1`, :data:`M2`).  The
finaliser is written once (:func:`_finalise`) and used three ways:

- :func:`mix` inside numba kernels (inlined);
- :func:`mix64` on numpy uint64 arrays or scalars (wrapping arithmetic), e.g. the salts
  and buckets of hashed tables (:mod:`aggmrf_explore.tables`) and generated data;
- :func:`stream_seed` (and :func:`stream_key` from Python): the 64-bit key of random
  stream ``i`` of sweep ``it`` for a chain's ``seed``.

Uniforms are functions of (key, counter), never of a thread's position: a seed gives the
same numbers whatever the number of threads.  :func:`uniform24` (the dense sweep) hashes a
32-bit site counter with :func:`hash24` (8 lanes per AVX2 instruction); :func:`uniform53`
(the hashed sweep) mixes the 64-bit counter with :func:`mix`.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

__all__ = [
    "GOLDEN",
    "M1",
    "M2",
    "mix",
    "mix64",
    "stream_seed",
    "stream_key",
    "splitmix_next",
    "hash24",
    "uniform24",
    "uniform53",
    "feature_order",
    "inverse_cdf",
    "draw_from_scores",
    "bernoulli_logit",
    "sigmoid",
]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's counter increment (2^64 / φ)
M1 = np.uint64(0xBF58476D1CE4E5B9)  # the finaliser's multipliers
M2 = np.uint64(0x94D049BB133111EB)

_I32 = ir.IntType(32)
_MASK64 = (1 << 64) - 1


def _finalise(z):
    """splitmix64's finaliser (uint64 → uint64, wrapping): the one definition."""
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


mix = njit(inline="always")(_finalise)
mix.__doc__ = "splitmix64's finaliser on a uint64, for numba kernels (inlined)."


def mix64(z: np.ndarray | np.uint64) -> np.ndarray | np.uint64:
    """splitmix64's finaliser on uint64 values (numpy array of any shape, or a scalar)."""
    with np.errstate(over="ignore"):
        return _finalise(np.asarray(z, dtype=np.uint64)[()])


@njit(inline="always")
def stream_seed(seed, it, i):
    """The key of random stream ``i`` of sweep ``it`` for a chain's ``seed`` (uint64)."""
    s = mix(np.uint64(seed) + GOLDEN)
    s = mix(s ^ (np.uint64(it) * M1 + GOLDEN))
    return mix(s ^ (np.uint64(i) * M2 + GOLDEN))


@njit(cache=True)
def _stream_key(seed, it, i):
    return stream_seed(seed, it, i)


def stream_key(seed: int, it: int, i: int) -> np.uint64:
    """:func:`stream_seed` from Python, np.uint64 (one jitted scalar call, ~1 µs); any
    Python integers, taken modulo 2^64."""
    m = _MASK64
    return np.uint64(_stream_key(np.uint64(seed & m), np.uint64(it & m), np.uint64(i & m)))


@njit(inline="always")
def splitmix_next(state):
    """splitmix64 step: returns (new_state, uniform float64 in [0, 1), 53 bits)."""
    state = state + GOLDEN
    z = mix(state)
    return state, (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


_LOWBIAS = (0x9E3779B9, 0x7FEB352D, 0x846CA68B)  # counter spread, then lowbias32's constants


@intrinsic
def hash24(typingctx, counter, key):
    """24 random bits (int32 in [0, 2^24)) of a 32-bit counter and a 64-bit key.

    x = counter · 0x9E3779B9 + (key's two 32-bit halves xor-ed), then Chris Wellons'
    lowbias32 integer hash (xor-shift, multiply, xor-shift, multiply, xor-shift: a
    bijection of 32 bits with near-ideal avalanche); the top 24 bits.  All in 32-bit
    lanes (numba would promote to 64 bits), so a loop over counters becomes 8 lanes per
    AVX2 instruction.  Callers keep counters below 2^32.
    """
    if not (isinstance(counter, types.Integer) and isinstance(key, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        c = builder.trunc(args[0], _I32) if args[0].type.width > 32 else args[0]
        k64 = builder.zext(args[1], ir.IntType(64)) if args[1].type.width < 64 else args[1]
        k = builder.xor(
            builder.trunc(k64, _I32), builder.trunc(builder.lshr(k64, k64.type(32)), _I32)
        )
        x = builder.add(builder.mul(c, _I32(_LOWBIAS[0])), k)
        for mult, shift in ((_LOWBIAS[1], 16), (_LOWBIAS[2], 15)):
            x = builder.mul(builder.xor(x, builder.lshr(x, _I32(shift))), _I32(mult))
        x = builder.xor(x, builder.lshr(x, _I32(16)))
        return builder.lshr(x, _I32(8))

    return types.int32(counter, key), codegen


@njit(inline="always")
def uniform24(key, i, j, D1):
    """Uniform in [0, 1) of site j ∈ [0, D] of sample i (24 bits: exact in float32).

    A 32-bit hash of the site's counter i (D + 1) + j + 1 and the sweep's key
    (:func:`hash24`): 32-bit lanes, so the loops that fill a block's uniforms vectorise.
    """
    return np.float64(hash24(i * D1 + j + 1, key)) * (1.0 / 16777216.0)


@njit(inline="always")
def uniform53(key, i, j, D1):
    """Uniform in [0, 1) of site j ∈ [0, D] of sample i (53 bits): mix(key + counter · golden)."""
    z = mix(key + np.uint64(i * D1 + j + 1) * GOLDEN)
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def feature_order(key, n_features):
    """The feature order of a sweep, int64 (n_features,): a Fisher–Yates shuffle driven
    by splitmix64 from the sweep's key (drawn inside the kernels: no serial Python)."""
    order = np.arange(n_features)
    state = mix(key ^ M2)
    for k in range(n_features - 1, 0, -1):
        state = state + GOLDEN
        j = np.int64(mix(state) % np.uint64(k + 1))
        order[k], order[j] = order[j], order[k]
    return order


@njit(inline="always")
def inverse_cdf(u, cdfs, lo, hi):
    """The code v with cdfs[lo + v - 1] ≤ u < cdfs[lo + v] (the last code if none)."""
    for k in range(lo, hi):
        if u < cdfs[k]:
            return k - lo
    return hi - lo - 1


@njit(inline="always")
def draw_from_scores(scores, M, u):
    """The code v < M drawn with probability ∝ exp(scores[v]), by inverse CDF at the
    uniform u in [0, 1) (the last code if none).  scores float64 (≥ M,): the log-weights,
    overwritten with exp(scores − max) (the full conditionals of the scalar kernels)."""
    top = scores[0]
    for v in range(1, M):
        top = max(top, scores[v])
    total = 0.0
    for v in range(M):
        scores[v] = np.exp(scores[v] - top)
        total += scores[v]
    target = u * total
    acc = 0.0
    for v in range(M - 1):
        acc += scores[v]
        if target < acc:
            return v
    return M - 1


@njit(inline="always")
def bernoulli_logit(logit, u):
    """y ~ Bernoulli(σ(logit)) from a uniform u, stable for large |logit|."""
    if logit >= 0:
        return 1 if u * (1.0 + np.exp(-logit)) < 1.0 else 0
    el = np.exp(logit)
    return 1 if u * (1.0 + el) < el else 0


@njit(inline="always")
def sigmoid(z):
    """σ(z) = 1 / (1 + e^-z), stable for large |z| (the draws' probabilities)."""
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)
