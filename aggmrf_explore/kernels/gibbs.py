"""Numba kernels for the Gibbs sampler of the MRF π(x, y) ∝ exp(φ(x)·(μ + yθ)).

The sweep, in one sitting
-------------------------
The chain holds n' persistent samples (x̃_i, ỹ_i).  One sweep (:func:`gibbs_sweep`) is a
*systematic-scan* Gibbs sweep, feature-outer: one random permutation of the D features
is drawn per sweep and shared by all samples; for each feature f in that order, every
sample resamples x̃_i^f exactly from its full conditional

    P(X_f = v | x̃_i^{-f}, ỹ_i) ∝ exp(Σ_{t∋f} μ[row_t(v)] + ỹ_i θ[row_t(v)]),

and after the last feature every sample resamples ỹ_i ~ σ(φ(x̃_i)·θ).  Each update is
an exact draw from a full conditional of π, so the sweep leaves π invariant whatever the
order; sharing the order across samples only changes which scan each sample uses.  (ỹ is
drawn at the *end* of the sweep, under the sweep's θ, because the same logits φ(x̃_i)·θ
also weight the statistics ĉ: one pass instead of two.  The chain's very first sweep also
draws ỹ at its start.)  Samples are independent given (μ, θ), so the loops run block of
BLOCK samples by block (one worker per thread, ``prange``; workers take the next block
with atomic counters, their own range of blocks first so that samples stay on one core,
then the others', so a worker slowed down by another process does not hold the others
up; the last blocks are cut into TAIL_BLOCK samples so that workers finish together),
and inside a block feature by feature.

Randomness is counter based: the uniform of site (i, f) at sweep ``it`` is a 32-bit hash
of the site counter i (D + 1) + f + 1 and the sweep's key, a splitmix64 hash of
(seed, it) (:func:`_uniform`, 24 bits, exact in float32), and ỹ_i uses f = D.  Nothing
depends on the number of threads nor on how blocks are scheduled.

Parameter layout (rebuilt once per sweep by :func:`build_params`, O(K) work, in parallel)
--------------------------------------------------------------------------------------
Tables that are sub-projections of another table (single tables inside a pair, the
intercept, pairs inside a triple) are *folded* into a containing "maximal" table: its
parameters are added to the maximal table's rows (``fold_parent`` / ``fold_sub`` list
the (row, sub-row) pairs).  Every table holding f is then counted exactly once through
the maximal tables holding f (a folded table not holding f adds a constant that cancels
in the conditional).  For every *entry* (feature f, maximal table t ∋ f) the folded
rows are copied as float32 into a block where f's M_f candidates are contiguous and
padded to a multiple of ``LANES`` with ``-BIG`` (probability exactly 0)::

    W[y * half + blk_e + (x[g1] * m2 + x[g2]) * Mp_f + v] = μ'[row] + y θ'[row]

(g1, g2: the features of t other than f; x[D] ≡ 0 stands for "none", so pairs use g1 = D.)
Two pair entries (f, a), (f, b) with m_a m_b ≤ ``MERGE`` share one (f, a, b) entry whose
block holds the sum of both pairs' parameters: one load per sample instead of two (on
Adult ≈ 7–8 entries per feature instead of 13).
A site update of f thus combines one contiguous vector of Mp_f float32 per maximal table
holding f.  Before the samples of a block update f, the start of each sample's vector in
each entry (``bases``) is computed for the whole block in one vectorisable loop: the other
features do not change while f is updated.

Weights as products (no exp in the sweep)
-----------------------------------------
``E`` has W's layout and holds exp(W − the maximum of W's row) (a row: the M_f candidates
of one context; the shift is constant over the candidates, so it cancels in the
conditional).  The unnormalised weights of a site are then the *product* of its entries'
E vectors: a multiply instead of an add per entry, and no exp at all in the sweep (E costs
one exp per float of W per sweep, in :func:`build_params`).  Every factor is ≤ 1 and the
largest of each row is 1, so products cannot overflow; they can underflow when the
parameters are extreme (|μ| of ~80 or more across several tables): where the total weight
of a sample falls below ``TINY``, its group of 8 samples is redone in the log domain (sums
of W, max, exp), which ``test_kernels`` exercises.

The draw, 8 samples at a time
-----------------------------
The 8 candidate weights of 8 samples (one vector per sample) are transposed so that one
vector holds candidate v of the 8 samples: running sums over the M_f real candidates
(padding is never touched), target u · Σw, and the branch-free draw
#{v < M_f − 1 : w_0 + … + w_v ≤ target} then take one vector operation per candidate for
8 samples, with no horizontal (in-vector) sums or maxima.

Statistics
----------
d̂ = Σ_i φ(x̃_i) and ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i) are accumulated for maximal tables only,
right after a block's sweep, into per-worker *integer* accumulators; one int64 per row
holds both, count · 2^A + Σ round(σ · 2^Q) (Q = 32 up to n' < 2^15; see ``GibbsChain``),
so each (sample, table) costs one read-modify-write.  The folded tables' rows are then
marginalised from them, still in integers.  Integer sums are exact, so d̂ and ĉ are
bit-identical whatever the number of threads.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic, models, register_model

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
BLOCK = 256  # samples per work item (E of one feature is reused from L1 by 256 samples)
TAIL_BLOCK = 64  # the last 2-3 BLOCKs of samples are handed out in smaller items, so that
# workers finish together (a worker idles at most ~ one small item at the end)
LANES = 8  # candidate vectors are padded to a multiple of this (float32: one AVX2 register)
BIG = np.float32(1e30)  # padding: exp(-BIG - max) = 0
MERGE = 64  # two pair entries of a feature share one E block if m_a m_b ≤ MERGE
TASK = 2048  # floats of W per task of the parallel parameter build


# ---------------------------------------------------------------------------- RNG
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


@njit(inline="always")
def _uniform(key, i, j, D1):
    """Uniform in [0, 1) of site j ∈ [0, D] of sample i (24 bits: exact in float32).

    A 32-bit hash of the site's counter i (D + 1) + j + 1 and the sweep's key
    (:func:`hash24`): 32-bit lanes, so the loops that fill a block's uniforms vectorise.
    """
    return np.float64(hash24(i * D1 + j + 1, key)) * (1.0 / 16777216.0)


_MASK = (1 << 64) - 1


def _py_mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * int(_M1)) & _MASK
    z = ((z ^ (z >> 27)) * int(_M2)) & _MASK
    return z ^ (z >> 31)


def _py_stream_seed(seed: int, it: int, i: int) -> int:
    """_stream_seed in Python integers (same value)."""
    g = int(_GOLDEN)
    s = _py_mix((seed + g) & _MASK)
    s = _py_mix(s ^ ((it * int(_M1) + g) & _MASK))
    return _py_mix(s ^ ((i * int(_M2) + g) & _MASK))


@njit(cache=True)
def feature_order(key, n_features):
    """The feature order of a sweep, int64 (n_features,): a Fisher–Yates shuffle driven
    by splitmix64 from the sweep's key (drawn inside the kernels: no serial Python)."""
    order = np.arange(n_features)
    state = _mix(key ^ _M2)
    for k in range(n_features - 1, 0, -1):
        state = state + _GOLDEN
        j = np.int64(_mix(state) % np.uint64(k + 1))
        order[k], order[j] = order[j], order[k]
    return order


# ---------------------------------------------------------------------------- helpers
@njit(inline="always")
def _u(i):
    """Index as uint64: numba skips the negative-index wraparound code for unsigned indices."""
    return np.uint64(i)


@njit(inline="always")
def _bernoulli_logit(logit, u):
    """y ~ Bernoulli(σ(logit)) from a uniform u, stable for large |logit|."""
    if logit >= 0:
        return 1 if u * (1.0 + np.exp(-logit)) < 1.0 else 0
    el = np.exp(logit)
    return 1 if u * (1.0 + el) < el else 0


@njit(inline="always")
def _sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@intrinsic
def mad32(typingctx, a, b, c):
    """a * b + c in 32-bit unsigned arithmetic, as uint32 (callers guarantee no overflow).

    numba promotes integer arithmetic to 64 bits, and LLVM then vectorises index loops
    with 64-bit lanes (4 per register, multiplies emulated with 3 vpmuludq each); in 32
    bits a loop over codes becomes 8 lanes of vpmulld.
    """
    if not all(isinstance(v, types.Integer) for v in (a, b, c)):
        return None

    def codegen(context, builder, sig, args):
        def u32(v):
            w = v.type.width
            return builder.trunc(v, _I32) if w > 32 else builder.zext(v, _I32) if w < 32 else v

        return builder.add(builder.mul(u32(args[0]), u32(args[1])), u32(args[2]))

    return types.uint32(a, b, c), codegen


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


@intrinsic
def ymad32(typingctx, y, h, c):
    """(h if y else 0) + c in 32-bit unsigned arithmetic: a select, not a multiply."""
    if not all(isinstance(v, types.Integer) for v in (y, h, c)):
        return None

    def codegen(context, builder, sig, args):
        def u32(v):
            w = v.type.width
            return builder.trunc(v, _I32) if w > 32 else builder.zext(v, _I32) if w < 32 else v

        zero = ir.Constant(args[0].type, 0)
        pick = builder.select(
            builder.icmp_unsigned("!=", args[0], zero), u32(args[1]), ir.Constant(_I32, 0)
        )
        return builder.add(pick, u32(args[2]))

    return types.uint32(y, h, c), codegen


# ---------------------------------------------------------------------------- 8-lane SIMD
# A minimal float32 x 8 vector type for numba (an LLVM <8 x float> kept in registers):
# LLVM's auto-vectoriser does not reliably vectorise the short, variable-length loops of
# a site update (it vectorised the reduction over tables with gathers instead), so the
# hot loops are written with these explicit vector operations.  Loads and stores are
# unchecked: callers guarantee idx .. idx + 7 is inside the array.
class Vec8fType(types.Type):
    def __init__(self) -> None:
        super().__init__(name="Vec8f")


vec8f = Vec8fType()
_F32 = ir.FloatType()
_V8 = ir.VectorType(_F32, 8)
_I32 = ir.IntType(32)
_VI8 = ir.VectorType(_I32, 8)


@register_model(Vec8fType)
class _Vec8fModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _V8)


def _splat(value: float) -> ir.Constant:
    return ir.Constant(_V8, [float(np.float32(value))] * 8)


def _vptr(context, builder, aryty, aryval, idx):
    ary = context.make_array(aryty)(context, builder, aryval)
    return builder.bitcast(builder.gep(ary.data, [idx]), _V8.as_pointer())


def _is_f32_array(arr) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == types.float32 and arr.ndim == 1


@intrinsic
def vload(typingctx, arr, idx):
    """arr[idx : idx + 8] as a vector (float32 1-d array, no bounds check)."""
    if not (_is_f32_array(arr) and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_vptr(context, builder, sig.args[0], args[0], args[1]), align=4)

    return vec8f(arr, idx), codegen


@intrinsic
def vstore(typingctx, arr, idx, v):
    """arr[idx : idx + 8] = v."""
    if not (_is_f32_array(arr) and isinstance(idx, types.Integer) and v == vec8f):
        return None

    def codegen(context, builder, sig, args):
        builder.store(args[2], _vptr(context, builder, sig.args[0], args[0], args[1]), align=4)
        return context.get_dummy_value()

    return types.none(arr, idx, v), codegen


@intrinsic
def vadd(typingctx, a, b):
    if not (a == vec8f and b == vec8f):
        return None
    return vec8f(a, b), lambda context, builder, sig, args: builder.fadd(args[0], args[1])


@intrinsic
def vmax(typingctx, a, b):
    if not (a == vec8f and b == vec8f):
        return None
    return vec8f(a, b), lambda context, builder, sig, args: _max(builder, args[0], args[1])


@intrinsic
def vzero(typingctx):
    return vec8f(), lambda context, builder, sig, args: _splat(0.0)


def _max(builder, a, b):
    return builder.select(builder.fcmp_ordered(">", a, b), a, b)


@intrinsic
def vexp_shifted(typingctx, a, m):
    """exp(a - m) lane-wise for m ≥ a lane-wise (so a - m ≤ 0); relative error < 3e-6.

    - Arguments are clamped at -86, whose exp (≈ 4e-38, still a normal float) stands in
      for 0: next to the weight 1 of the maximum it vanishes from every sum, and the
      −10³⁰ padding lanes are never drawn, so no final select is needed.
    - k = round(t / ln 2) with the "magic number" trick: adding 1.5 · 2^23 rounds to an
      integer and leaves k in the float's low mantissa bits, so the same value gives k
      as a float (subtract 1.5 · 2^23 again) and 2^k as IEEE-754 bits (integer add,
      shift): no floor, no float → int conversion.
    - Cody-Waite reduction r = t − k ln 2 ∈ [−ln2/2, ln2/2], then a degree-4 polynomial
      fitted for relative error, 1 + r (c1 + r (c2 + …)): 4 FMAs instead of Taylor's 6.
      3e-6 is the float32 rounding error of a score of magnitude ~30 anyway.
    """
    if not (a == vec8f and m == vec8f):
        return None

    def codegen(context, builder, sig, args):
        return _exp_shifted(builder, args[0], args[1], _EXP4)

    return vec8f(a, m), codegen


_EXP4 = (0.04151378819397429, 0.16787475558152823, 0.5000301442307808, 0.9999668355413677, 1.0)
_EXP6 = (1 / 720, 1 / 120, 1 / 24, 1 / 6, 0.5, 1.0, 1.0)  # Taylor: relative error < 2e-7


def _exp_shifted(builder, a, m, coefs):
    fma = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_V8, [_V8, _V8, _V8]), "llvm.fma.v8f32"
    )
    t = builder.fsub(a, m)
    t = _max(builder, t, _splat(-86.0))
    kf = builder.call(fma, [t, _splat(1.4426950408889634), _splat(12582912.0)])
    k = builder.fsub(kf, _splat(12582912.0))
    r = builder.call(fma, [k, _splat(-0.693359375), t])
    r = builder.call(fma, [k, _splat(2.12194440e-4), r])
    p = _splat(coefs[0])
    for c in coefs[1:]:
        p = builder.call(fma, [p, r, _splat(c)])
    # bits of kf = bits of 1.5·2^23 (0x4B400000) + k; exponent field of 2^k = k + 127
    ki = builder.add(builder.bitcast(kf, _VI8), ir.Constant(_VI8, [127 - 0x4B400000] * 8))
    two_k = builder.bitcast(builder.shl(ki, ir.Constant(_VI8, [23] * 8)), _V8)
    return builder.fmul(p, two_k)


@intrinsic
def vexp_shifted_accurate(typingctx, a, m):
    """exp(a - m) like vexp_shifted, degree-6 Taylor polynomial: relative error < 3e-7."""
    if not (a == vec8f and m == vec8f):
        return None

    def codegen(context, builder, sig, args):
        return _exp_shifted(builder, args[0], args[1], _EXP6)

    return vec8f(a, m), codegen


@intrinsic
def vsplat(typingctx, x):
    """x (a float) in all 8 lanes."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        return _splat_value(builder, context.cast(builder, args[0], sig.args[0], types.float32))

    return vec8f(x), codegen


@intrinsic
def vall_ge(typingctx, a, x):
    """True if every lane of a is ≥ x (a float)."""
    if not (a == vec8f and isinstance(x, types.Float)):
        return None

    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[1], sig.args[1], types.float32)
        ok = builder.fcmp_ordered(">=", args[0], _splat_value(builder, v))
        bits = builder.bitcast(ok, ir.IntType(8))
        return builder.icmp_unsigned("==", bits, ir.Constant(ir.IntType(8), 255))

    return types.boolean(a, x), codegen


def _splat_value(builder, v):
    vec = ir.Constant(_V8, ir.Undefined)
    for k in range(8):
        vec = builder.insert_element(vec, v, ir.Constant(_I32, k))
    return vec


@intrinsic
def vmul(typingctx, a, b):
    if not (a == vec8f and b == vec8f):
        return None
    return vec8f(a, b), lambda context, builder, sig, args: builder.fmul(args[0], args[1])


@intrinsic
def vcount_le(typingctx, cnt, a, b):
    """cnt + (a ≤ b ? 1 : 0) lane-wise (counts kept as exact small floats)."""
    if not (cnt == vec8f and a == vec8f and b == vec8f):
        return None

    def codegen(context, builder, sig, args):
        le = builder.fcmp_ordered("<=", args[1], args[2])
        return builder.fadd(args[0], builder.select(le, _splat(1.0), _splat(0.0)))

    return vec8f(cnt, a, b), codegen


_UNPACK = ([0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15])
_PAIRS = ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15])
_HALVES = ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])


@intrinsic
def vtranspose_store(typingctx, arr, idx, a0, a1, a2, a3, a4, a5, a6, a7):
    """arr[idx + 8 k + r] = a_r[k] for k, r < 8: the 8 × 8 transpose of rows a0 … a7.

    Rows are 8 samples' vectors of 8 candidates; the stored vectors hold one candidate
    of the 8 samples (unpack, in-lane shuffle, then 128-bit halves: 24 shuffles).
    """
    rows = (a0, a1, a2, a3, a4, a5, a6, a7)
    if not (
        _is_f32_array(arr) and isinstance(idx, types.Integer) and all(r == vec8f for r in rows)
    ):
        return None

    def codegen(context, builder, sig, args):
        def shuf(x, y, mask):
            return builder.shuffle_vector(x, y, ir.Constant(_VI8, mask))

        r = args[2:]
        t = []
        for k in range(0, 8, 2):  # t[2m], t[2m+1]: rows 2m, 2m+1 interleaved
            t += [shuf(r[k], r[k + 1], _UNPACK[0]), shuf(r[k], r[k + 1], _UNPACK[1])]
        u = []
        for base in (0, 4):  # u[base + c]: candidates c, c + 4 of rows base .. base + 3
            lo, hi = t[base : base + 2], t[base + 2 : base + 4]
            u += [shuf(lo[0], hi[0], _PAIRS[0]), shuf(lo[0], hi[0], _PAIRS[1])]
            u += [shuf(lo[1], hi[1], _PAIRS[0]), shuf(lo[1], hi[1], _PAIRS[1])]
        out = [shuf(u[c], u[4 + c], _HALVES[0]) for c in range(4)]
        out += [shuf(u[c], u[4 + c], _HALVES[1]) for c in range(4)]
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        idx = args[1]
        for k in range(8):
            pos = builder.add(idx, ir.Constant(idx.type, 8 * k))
            ptr = builder.bitcast(builder.gep(ary.data, [pos]), _V8.as_pointer())
            builder.store(out[k], ptr, align=4)
        return context.get_dummy_value()

    return types.none(arr, idx, *rows), codegen


@intrinsic
def fetch_add(typingctx, arr, val):
    """Atomically arr[0] += val (int64 1-d array); returns the old value."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1):
        return None
    if not isinstance(val, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        v = context.cast(builder, args[1], sig.args[1], types.int64)
        return builder.atomic_rmw("add", ary.data, v, "monotonic")

    return types.int64(arr, val), codegen


# ---------------------------------------------------------------------------- build
@njit(cache=True, parallel=True)
def build_params(mu, theta, fold_parent, fold_sub, mu_f, theta_f, W, E, ent_feat, ent_table,
                 ent_table2, ent_blk, ent_g1, ent_g2, n_modalities, n_mod_pad, tab_feat,
                 tab_stride, offsets, task_ent, task_o0, task_o1, n_workers, counter):  # fmt: skip
    """Fold μ, θ (float64 (K,)) into μ', θ', fill W (float32, 2 halves) and E: see the module doc.

    E = exp(W − max of W's row), row by row (one row: the M_f candidates of one context),
    so every factor of the sweep's products is ≤ 1 and the largest of each row is 1.
    The blocks are filled by n_workers workers taking tasks (contexts task_o0 … task_o1
    of entry task_ent, about TASK floats each) from an atomic counter (counter[0]).
    """
    mu_f[:] = mu
    theta_f[:] = theta
    for k in range(fold_parent.shape[0]):
        mu_f[fold_parent[k]] += mu[fold_sub[k]]
        theta_f[fold_parent[k]] += theta[fold_sub[k]]
    half = W.shape[0] // 2
    D = n_modalities.shape[0]
    counter[0] = 0
    for _w in prange(n_workers):
        while True:
            task = fetch_add(counter, 1)
            if task >= task_ent.shape[0]:
                break
            e = task_ent[task]
            f = ent_feat[e]
            t = ent_table[e]
            g1 = ent_g1[e]
            g2 = ent_g2[e]
            M = n_modalities[f]
            Mp = n_mod_pad[f]
            m2 = n_modalities[g2] if g2 < D else 1
            t2 = ent_table2[e]  # a merged entry: pair t = (f, g1) and pair t2 = (f, g2)
            sf = s1 = s2 = 0
            for j in range(3):
                if tab_feat[t, j] == f:
                    sf = tab_stride[t, j]
                elif tab_feat[t, j] == g1:
                    s1 = tab_stride[t, j]
                elif tab_feat[t, j] == g2:
                    s2 = tab_stride[t, j]
            sf2 = s22 = 0
            if t2 >= 0:
                for j in range(3):
                    if tab_feat[t2, j] == f:
                        sf2 = tab_stride[t2, j]
                    elif tab_feat[t2, j] == g2:
                        s22 = tab_stride[t2, j]
            for o in range(task_o0[task], task_o1[task]):
                x1 = o // m2
                x2 = o - x1 * m2
                row = offsets[t] + x1 * s1 + x2 * s2
                row2 = offsets[t2] + x2 * s22 if t2 >= 0 else 0
                dst = ent_blk[e] + o * Mp
                top0 = top1 = -BIG
                if t2 >= 0:
                    for v in range(M):
                        r = _u(row + v * sf)
                        r2 = _u(row2 + v * sf2)
                        a0 = mu_f[r] + mu_f[r2]
                        w0 = np.float32(a0)
                        w1 = np.float32(a0 + theta_f[r] + theta_f[r2])
                        top0 = max(top0, w0)
                        top1 = max(top1, w1)
                        W[_u(dst + v)] = w0
                        W[_u(half + dst + v)] = w1
                else:
                    for v in range(M):
                        r = _u(row + v * sf)
                        a0 = mu_f[r]
                        w0 = np.float32(a0)
                        w1 = np.float32(a0 + theta_f[r])
                        top0 = max(top0, w0)
                        top1 = max(top1, w1)
                        W[_u(dst + v)] = w0
                        W[_u(half + dst + v)] = w1
                for v in range(M, Mp):
                    W[_u(dst + v)] = -BIG
                    W[_u(half + dst + v)] = -BIG
                top0v = vsplat(top0)
                top1v = vsplat(top1)
                for c in range(0, Mp, LANES):
                    k = _u(dst + c)
                    vstore(E, k, vexp_shifted_accurate(vload(W, k), top0v))
                    k = _u(half + dst + c)
                    vstore(E, k, vexp_shifted_accurate(vload(W, k), top1v))


# ---------------------------------------------------------------------------- sweep
@njit(inline="always")
def _scores(W, bases, npb, j, cu):
    """Σ_q W[bases[q, j] + cu : + 8]: candidates cu … cu + 7 of block sample j."""
    a0 = vload(W, bases[0, j] + cu)
    a1 = vzero()
    q = 1
    while q + 1 < npb:  # two partial sums: half the dependency chain
        a0 = vadd(a0, vload(W, bases[q, j] + cu))
        a1 = vadd(a1, vload(W, bases[q + 1, j] + cu))
        q += 2
    if q < npb:
        a0 = vadd(a0, vload(W, bases[q, j] + cu))
    return vadd(a0, a1)


@njit(inline="always")
def _products(E, bases, npb, j, cu):
    """Π_q E[bases[q, j] + cu : + 8]: unnormalised weights of candidates cu … cu + 7."""
    a0 = vload(E, bases[0, j] + cu)
    q = 1
    if q < npb:
        a1 = vload(E, bases[1, j] + cu)
        q = 2
        while q + 1 < npb:  # two partial products: half the dependency chain
            a0 = vmul(a0, vload(E, bases[q, j] + cu))
            a1 = vmul(a1, vload(E, bases[q + 1, j] + cu))
            q += 2
        if q < npb:
            a0 = vmul(a0, vload(E, bases[q, j] + cu))
        a0 = vmul(a0, a1)
    return a0


TINY = 1e-30  # below this total weight the products may have lost precision (underflow)


@njit(inline="always")
def _draw8_products(E, bases, npb, j0, M, Mp, ST, ubuf, cbuf):
    """_draw8 with weights as products of E (no exp); False if a total is below TINY."""
    for c in range(0, Mp, LANES):
        cu = _u(c)
        vtranspose_store(
            ST, _u(c * LANES),
            _products(E, bases, npb, j0, cu), _products(E, bases, npb, j0 + 1, cu),
            _products(E, bases, npb, j0 + 2, cu), _products(E, bases, npb, j0 + 3, cu),
            _products(E, bases, npb, j0 + 4, cu), _products(E, bases, npb, j0 + 5, cu),
            _products(E, bases, npb, j0 + 6, cu), _products(E, bases, npb, j0 + 7, cu),
        )  # fmt: skip
    acc = vzero()
    for v in range(M):  # running sums of the weights, in place
        k = _u(v * LANES)
        acc = vadd(acc, vload(ST, k))
        vstore(ST, k, acc)
    target = vmul(vload(ubuf, _u(j0)), acc)
    cnt = vzero()
    for v in range(M - 1):
        cnt = vcount_le(cnt, vload(ST, _u(v * LANES)), target)
    vstore(cbuf, _u(0), cnt)
    return vall_ge(acc, TINY)


@njit(inline="always")
def _draw8(W, bases, npb, j0, M, Mp, ST, ubuf, cbuf):
    """New codes of block samples j0 … j0 + 7 (cbuf[r], as floats) for the feature.

    Scores are summed per sample (contiguous candidates), then transposed so that
    ST[v * 8 + r] is candidate v of sample j0 + r: the max, the M exps, the running sums
    and the branch-free draw #{v < M − 1 : w_0 + … + w_v ≤ u · Σw} then handle 8 samples
    per vector operation, and only the M real candidates (not the padding) are touched.
    """
    for c in range(0, Mp, LANES):
        cu = _u(c)
        vtranspose_store(
            ST, _u(c * LANES),
            _scores(W, bases, npb, j0, cu), _scores(W, bases, npb, j0 + 1, cu),
            _scores(W, bases, npb, j0 + 2, cu), _scores(W, bases, npb, j0 + 3, cu),
            _scores(W, bases, npb, j0 + 4, cu), _scores(W, bases, npb, j0 + 5, cu),
            _scores(W, bases, npb, j0 + 6, cu), _scores(W, bases, npb, j0 + 7, cu),
        )  # fmt: skip
    m = vload(ST, _u(0))
    for v in range(1, M):
        m = vmax(m, vload(ST, _u(v * LANES)))
    acc = vzero()
    for v in range(M):  # running sums of the weights, in place
        k = _u(v * LANES)
        acc = vadd(acc, vexp_shifted(vload(ST, k), m))
        vstore(ST, k, acc)
    target = vmul(vload(ubuf, _u(j0)), acc)
    cnt = vzero()
    for v in range(M - 1):
        cnt = vcount_le(cnt, vload(ST, _u(v * LANES)), target)
    vstore(cbuf, _u(0), cnt)


@njit(inline="always")
def _n_head(n):
    """Full BLOCKs of a pass over n samples; the last ≥ 2 BLOCKs of samples are TAIL_BLOCKs."""
    return max(0, n - 2 * BLOCK) // BLOCK


@njit(inline="always")
def _n_blocks(n):
    """Work items of a pass over n samples: _n_head(n) BLOCKs, then the TAIL_BLOCKs."""
    head = _n_head(n) * BLOCK
    return _n_head(n) + (n - head + TAIL_BLOCK - 1) // TAIL_BLOCK


@njit(inline="always")
def _block_bounds(b, n):
    """Samples i0 … i1 - 1 of work item b (see _n_blocks)."""
    n_head = _n_head(n)
    if b < n_head:
        return b * BLOCK, (b + 1) * BLOCK
    i0 = n_head * BLOCK + (b - n_head) * TAIL_BLOCK
    return i0, min(n, i0 + TAIL_BLOCK)


PAD = 8  # int64s between two work counters (one cache line each)


@njit(inline="always")
def _claim(counters, w, n):
    """Next work item of worker w in a pass over n samples (see _block_bounds), or -1.

    The BLOCKs are split into one contiguous range per worker; counters[r PAD] counts the
    items of range r handed out.  A worker takes its own range first, so that it sweeps
    the same samples as in the previous pass and their state stays in its core's caches
    (on a shared host, moving it between cores cost ≈ 5 % on two threads), then helps the
    others with theirs, then takes the TAIL_BLOCK items (counters[P PAD]).
    """
    P = counters.shape[0] // PAD - 1
    n_head = _n_head(n)
    for k in range(P):
        r = (w + k) % P
        lo = r * n_head // P
        size = (r + 1) * n_head // P - lo
        if counters[r * PAD] < size:  # (a plain read: skips exhausted ranges cheaply)
            c = fetch_add(counters[r * PAD :], 1)
            if c < size:
                return lo + c
    c = fetch_add(counters[P * PAD :], 1)
    return n_head + c if c < _n_blocks(n) - n_head else -1


@njit(inline="always")
def _block_statistics(x, i0, i1, theta, stat_tables, tab_feat, tab_stride, offsets, z, rbuf):
    """z[i] = φ(x_i)·θ for the block's samples (θ folded onto the maximal tables).

    Also leaves the samples' rows in the maximal tables in rbuf (tables × BLOCK).
    """
    n_stat = stat_tables.shape[0]
    D = x.shape[0] - 1
    for k in range(n_stat):
        t = stat_tables[k]
        x0 = x[_u(tab_feat[t, 0])]
        x1 = x[_u(tab_feat[t, 1])]
        x2 = x[_u(tab_feat[t, 2])]
        s0 = np.uint32(tab_stride[t, 0])  # rows < K < 2^31: 32-bit arithmetic (mad32)
        s1 = np.uint32(tab_stride[t, 1])
        s2 = np.uint32(tab_stride[t, 2])
        off = np.uint32(offsets[t])
        rk = rbuf[k]
        if tab_feat[t, 2] == D:  # at most a pair: skip the third (slow vpmulld) term
            for i in range(i0, i1):
                iu = _u(i)
                rk[_u(i - i0)] = mad32(x0[iu], s0, mad32(x1[iu], s1, off))
        else:
            for i in range(i0, i1):
                iu = _u(i)
                rk[_u(i - i0)] = mad32(x0[iu], s0, mad32(x1[iu], s1, mad32(x2[iu], s2, off)))
    for i in range(i0, i1):
        z[i] = 0.0
    k = 0
    while k + 3 < n_stat:  # four tables per pass: a quarter of the loads/stores of z
        r0 = rbuf[k]
        r1 = rbuf[k + 1]
        r2 = rbuf[k + 2]
        r3 = rbuf[k + 3]
        for i in range(i0, i1):
            j = _u(i - i0)
            a = theta[_u(r0[j])] + theta[_u(r1[j])]
            z[_u(i)] += a + (theta[_u(r2[j])] + theta[_u(r3[j])])
        k += 4
    while k < n_stat:
        r0 = rbuf[k]
        for i in range(i0, i1):
            z[_u(i)] += theta[_u(r0[_u(i - i0)])]
        k += 1


@njit(inline="always")
def _block_accumulate(n_blk, n_stat, rbuf, qbuf, acc):
    """Add the block's samples (rows in rbuf, packed 2^A + σ 2^Q in qbuf) to acc (int64)."""
    k = 0
    while k + 3 < n_stat:  # four tables interleaved: samples sharing a row of a small
        r0 = rbuf[k]  # table form store-to-load chains; four chains run side by side
        r1 = rbuf[k + 1]
        r2 = rbuf[k + 2]
        r3 = rbuf[k + 3]
        for j in range(n_blk):
            q = qbuf[j]
            acc[_u(r0[j])] += q
            acc[_u(r1[j])] += q
            acc[_u(r2[j])] += q
            acc[_u(r3[j])] += q
        k += 4
    while k < n_stat:
        r0 = rbuf[k]
        for j in range(n_blk):
            acc[_u(r0[j])] += qbuf[j]
        k += 1


@njit(cache=True, parallel=True)
def gibbs_sweep(x, y, W, E, n_modalities, n_mod_pad, feat_ptr, ent_blk, ent_g1, ent_s1,
                ent_g2, key, theta, stat_tables, tab_feat, tab_stride, offsets, z, accumulate,
                acc, fixed_q, one_a, counter):  # fmt: skip
    """One sweep of every sample (x (D + 1, n') with x[D] ≡ 0, y (n',)), in place.

    Entries p of feature f are feat_ptr[f] .. feat_ptr[f + 1]; the candidate vector of
    sample i in entry p starts at ``y_i half + ent_blk[p] + x[ent_g1[p], i] ent_s1[p]
    + x[ent_g2[p], i] Mp_f`` in W (ent_s1 = m2 Mp_f).  After the features, z[i] = φ(x̃_i)·θ
    (θ folded) and ỹ_i is drawn; with ``accumulate``, worker w adds its samples to acc[w]
    (zeroed here): 2^A + round(σ(z_i) fixed_q) per sample and maximal-table row, one_a = 2^A.

    acc.shape[0] workers take blocks of BLOCK samples with atomic counters (:func:`_claim`):
    a worker that is delayed (a shared machine) does not hold the others up, and no result
    depends on which worker takes which block.
    """
    D1, n = x.shape
    half = W.shape[0] // 2
    order = feature_order(key, D1 - 1)
    mp = 1
    ne = 1
    for f in range(D1 - 1):
        mp = max(mp, n_mod_pad[f])
        ne = max(ne, feat_ptr[f + 1] - feat_ptr[f])
    n_stat = stat_tables.shape[0]
    counter[:] = 0
    for w in prange(acc.shape[0]):
        ST = np.empty(mp * LANES, dtype=np.float32)
        ubuf = np.zeros(BLOCK, dtype=np.float32)
        cbuf = np.empty(LANES, dtype=np.float32)
        bases = np.empty((ne, BLOCK), dtype=np.uint32)
        rbuf = np.empty((n_stat, BLOCK), dtype=np.uint32)
        qbuf = np.empty(BLOCK, dtype=np.int64)
        aw = acc[w]
        if accumulate:
            aw[:] = 0
        while True:
            b = _claim(counter, w, n)
            if b < 0:
                break
            i0, i1 = _block_bounds(b, n)
            n_blk = i1 - i0
            n8 = (n_blk + LANES - 1) // LANES * LANES
            for k in range(order.shape[0]):
                f = order[k]
                M = n_modalities[f]
                if M == 1:
                    continue
                Mp = n_mod_pad[f]
                p0 = feat_ptr[f]
                npb = feat_ptr[f + 1] - p0
                xf = x[f]
                if npb == 0:  # feature in no table: uniform conditional
                    for i in range(i0, i1):
                        xf[i] = min(int(_uniform(key, i, f, D1) * M), M - 1)
                    continue
                # start of each sample's candidate vector in each entry (x_{-f} is fixed
                # meanwhile), in 32-bit arithmetic (mad32: 8 lanes per AVX2 register)
                for q in range(npb):
                    p = p0 + q
                    xg1 = x[_u(ent_g1[p])]
                    xg2 = x[_u(ent_g2[p])]
                    blk = np.uint32(ent_blk[p])
                    s1 = np.uint32(ent_s1[p])
                    s2 = np.uint32(Mp)
                    h = np.uint32(half)
                    bq = bases[q]
                    if ent_g1[p] == D1 - 1:  # a pair: no g1 term (vpmulld is slow)
                        for i in range(i0, i1):
                            iu = _u(i)
                            bq[_u(i - i0)] = mad32(xg2[iu], s2, ymad32(y[iu], h, blk))
                    else:
                        for i in range(i0, i1):
                            iu = _u(i)
                            bq[_u(i - i0)] = mad32(
                                xg1[iu], s1, mad32(xg2[iu], s2, ymad32(y[iu], h, blk))
                            )
                    for j in range(n_blk, n8):  # padding samples of a short last block
                        bq[j] = bq[0]
                for i in range(i0, i1):
                    ubuf[i - i0] = np.float32(_uniform(key, i, f, D1))
                for j0 in range(0, n_blk, LANES):
                    if not _draw8_products(E, bases, npb, j0, M, Mp, ST, ubuf, cbuf):
                        _draw8(W, bases, npb, j0, M, Mp, ST, ubuf, cbuf)  # rare: log domain
                    for r in range(min(LANES, n_blk - j0)):
                        xf[i0 + j0 + r] = int(cbuf[r])
            _block_statistics(x, i0, i1, theta, stat_tables, tab_feat, tab_stride, offsets, z, rbuf)
            for i in range(i0, i1):
                # one exp serves both ỹ_i ~ σ(z_i) and σ(z_i) for ĉ: the formulas of
                # _bernoulli_logit and _sigmoid (exp(-|z|), never overflows), branch-free
                zi = z[i]
                e = np.exp(-abs(zi))
                pos = zi >= 0
                u = _uniform(key, i, D1 - 1, D1)
                y[i] = u * (1.0 + e) < (1.0 if pos else e)
                qbuf[i - i0] = one_a + np.int64((1.0 if pos else e) / (1.0 + e) * fixed_q + 0.5)
            if accumulate:
                _block_accumulate(n_blk, n_stat, rbuf, qbuf, aw)


@njit(cache=True, parallel=True)
def sample_statistics(x, theta, stat_tables, tab_feat, tab_stride, offsets, z, accumulate,
                      acc, fixed_q, one_a, counter):  # fmt: skip
    """z[i] = φ(x_i)·θ (θ folded) and, with ``accumulate``, the statistics (see gibbs_sweep)."""
    n = x.shape[1]
    n_stat = stat_tables.shape[0]
    counter[:] = 0
    for w in prange(acc.shape[0]):
        rbuf = np.empty((n_stat, BLOCK), dtype=np.uint32)
        qbuf = np.empty(BLOCK, dtype=np.int64)
        aw = acc[w]
        if accumulate:
            aw[:] = 0
        while True:
            b = _claim(counter, w, n)
            if b < 0:
                break
            i0, i1 = _block_bounds(b, n)
            _block_statistics(x, i0, i1, theta, stat_tables, tab_feat, tab_stride, offsets, z, rbuf)
            if accumulate:
                for i in range(i0, i1):
                    qbuf[i - i0] = one_a + np.int64(_sigmoid(z[i]) * fixed_q + 0.5)
                _block_accumulate(i1 - i0, n_stat, rbuf, qbuf, aw)


@njit(cache=True, parallel=True)
def draw_labels(z, y, key, D1):
    """ỹ_i ~ σ(z_i) with the uniforms of site D of each sample."""
    for i in prange(z.shape[0]):
        y[i] = _bernoulli_logit(z[i], _uniform(key, i, D1 - 1, D1))


@njit(cache=True)
def reduce_statistics(acc, fold_parent, fold_sub, a_bits, q_bits):
    """d̂, ĉ (float64 (K,)) from the per-worker packed accumulators; folded tables marginalised.

    A row's packed sum is (count << a_bits) + Σ round(σ 2^q_bits) with the σ part < 2^a_bits.
    """
    P, K = acc.shape
    tot = np.zeros(K, dtype=np.int64)
    for p in range(P):
        for r in range(K):
            tot[r] += acc[p, r]
    for k in range(fold_parent.shape[0]):
        tot[fold_sub[k]] += tot[fold_parent[k]]
    mask = (np.int64(1) << a_bits) - 1
    scale = 1.0 / float(np.int64(1) << q_bits)
    d_hat = np.empty(K, dtype=np.float64)
    c_hat = np.empty(K, dtype=np.float64)
    for r in range(K):
        d_hat[r] = tot[r] >> a_bits
        c_hat[r] = (tot[r] & mask) * scale
    return d_hat, c_hat


@njit(cache=True, parallel=True)
def rows_of(x, tab_feat, tab_stride, offsets):
    """Row of each sample in each table, int32 (n', T)."""
    n = x.shape[1]
    T = tab_feat.shape[0]
    rows = np.empty((n, T), dtype=np.int32)
    for i in prange(n):
        for t in range(T):
            r = offsets[t]
            for j in range(3):
                r += x[tab_feat[t, j], i] * tab_stride[t, j]
            rows[i, t] = r
    return rows


@njit(cache=True, parallel=True)
def sample_logits(rows, theta):
    """φ(x_i)·θ for every row vector, shape (n,); rows int (n, T)."""
    n, T = rows.shape
    out = np.empty(n, dtype=np.float64)
    for i in prange(n):
        s = 0.0
        for t in range(T):
            s += theta[rows[i, t]]
        out[i] = s
    return out


@njit(inline="always")
def inverse_cdf(u, cdfs, lo, hi):
    """The code v with cdfs[lo + v - 1] ≤ u < cdfs[lo + v] (the last code if none)."""
    for k in range(lo, hi):
        if u < cdfs[k]:
            return k - lo
    return hi - lo - 1


@njit(cache=True)
def init_samples(marginal_cdfs, cdf_ptr, n, seed):
    """Draw n samples with independent features from per-feature CDFs, int32 (n, D)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    for i in range(n):
        state = _stream_seed(seed, 0xFFFFFFFF, i)
        for f in range(D):
            state, u = _next(state)
            codes[i, f] = inverse_cdf(u, marginal_cdfs, cdf_ptr[f], cdf_ptr[f + 1])
    return codes


# ---------------------------------------------------------------------------- the chain
def _round_up(m: int, lanes: int) -> int:
    return ((m + lanes - 1) // lanes) * lanes


def _zeros_aligned(n: int) -> np.ndarray:
    """float32 zeros (n,) starting on a 64-byte boundary."""
    buf = np.zeros(n + 16, dtype=np.float32)
    start = (-buf.ctypes.data % 64) // 4
    return buf[start : start + n]


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


class GibbsChain:
    """The persistent Gibbs samples (x̃_i, ỹ_i) of a PCD trainer.

    codes : int32 (n', D) feature codes of the samples (a read-only snapshot of the state).
    rows  : int32 (n', T) row of each sample in each table (read-only, computed on demand).

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
        if getattr(layout, "hashed", False):
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
        self._n_modalities = m
        self._n_mod_pad = np.array([_round_up(int(v), LANES) for v in m], dtype=np.int64)
        self._offsets = np.asarray(layout.offsets, dtype=np.int64)  # (T + 1,)
        self._build_structure(layout.tables, np.asarray(layout.strides, dtype=np.int64))
        cdf_ptr = np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64)
        codes = init_samples(np.concatenate(cdfs), cdf_ptr, n_samples, self.seed)
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
        self._fixed = (float(2**self._q_bits), np.int64(1) << np.int64(self._a_bits))
        P = int(numba.config.NUMBA_NUM_THREADS)
        self._acc = np.zeros((P, self.K), dtype=np.int64)
        self._counter = np.zeros((P + 1) * PAD, dtype=np.int64)  # work handed out (_claim)
        self._mu_f = np.zeros(self.K)
        self._theta_f = np.zeros(self.K)
        self._W = _zeros_aligned(2 * self._half)  # 64-byte aligned: no vector load of 8
        self._E = _zeros_aligned(2 * self._half)  # float32 (32 bytes) crosses a cache line
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._stats_theta: np.ndarray | None = None  # θ of self._stats
        self._codes: np.ndarray | None = None  # caches of the snapshots
        self._rows: np.ndarray | None = None

    # ------------------------------------------------------------------ structure
    def _build_structure(self, tables, strides: np.ndarray) -> None:
        """Maximal tables, the folding of the others into them, and the (feature, table) entries."""
        m = self._n_modalities
        D = m.size
        T = len(tables)
        tab_feat = np.full((T, 3), D, dtype=np.int64)
        tab_stride = np.zeros((T, 3), dtype=np.int64)
        for t, feats in enumerate(tables):
            for j, f in enumerate(feats):
                tab_feat[t, j] = f
                tab_stride[t, j] = strides[t, f]
        sets = [set(t) for t in tables]
        stat = [  # maximal tables: in no other table (the first of equal ones)
            t
            for t in range(T)
            if not any(sets[t] < sets[p] or (sets[t] == sets[p] and p < t) for p in range(T))
        ]
        parent = [
            -1 if t in stat else next(p for p in stat if sets[t] <= sets[p]) for t in range(T)
        ]
        fold_parent, fold_sub = [], []
        for t in range(T):
            p = parent[t]
            if p < 0:
                continue
            fp = list(tables[p])
            grids = np.meshgrid(*[np.arange(m[f]) for f in fp], indexing="ij")
            codes = np.stack([g.ravel() for g in grids], axis=1)  # every row of p
            fold_parent.append(self._offsets[p] + codes @ strides[p, fp])
            cols = [fp.index(f) for f in tables[t]]
            fold_sub.append(self._offsets[t] + codes[:, cols] @ strides[t, list(tables[t])])
        cat = lambda a: np.concatenate(a).astype(np.int64) if a else np.zeros(0, np.int64)  # noqa: E731
        self._fold_parent, self._fold_sub = cat(fold_parent), cat(fold_sub)
        self._tab_feat, self._tab_stride = tab_feat, tab_stride
        self._stat_tables = np.asarray(stat, dtype=np.int64)
        ent_feat, ent_table, ent_table2, ent_blk, ent_g1, ent_g2, ent_s1, ptr = (
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            [0],
        )
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
                ent_s1.append(m2 * int(self._n_mod_pad[f]))
                size += m1 * m2 * int(self._n_mod_pad[f])
            ptr.append(len(ent_feat))
        self._ent_table2 = np.asarray(ent_table2, dtype=np.int64)
        as64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
        self._ent_feat, self._ent_table, self._ent_blk = (
            as64(ent_feat),
            as64(ent_table),
            as64(ent_blk),
        )
        self._ent_g1, self._ent_g2, self._ent_s1 = as64(ent_g1), as64(ent_g2), as64(ent_s1)
        self._feat_ptr = as64(ptr)
        # build_params' tasks: runs of contexts of one entry, about TASK floats each
        task_ent, task_o0, task_o1 = [], [], []
        for e, (f, g1, g2) in enumerate(zip(ent_feat, ent_g1, ent_g2, strict=True)):
            n_ctx = (int(m[g1]) if g1 < D else 1) * (int(m[g2]) if g2 < D else 1)
            step = max(1, TASK // int(self._n_mod_pad[f]))
            for o in range(0, n_ctx, step):
                task_ent.append(e)
                task_o0.append(o)
                task_o1.append(min(n_ctx, o + step))
        self._task_ent, self._task_o0, self._task_o1 = as64(task_ent), as64(task_o0), as64(task_o1)
        self._half = _round_up(size, 16)
        if 2 * self._half >= 2**32:
            raise ValueError("parameter blocks exceed 2^32 floats; use feature hashing to reduce K")

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
            self._rows = rows_of(self._x, self._tab_feat, self._tab_stride, self._offsets)
            self._rows.flags.writeable = False
        return self._rows

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the chain's state, parameter copies and accumulators."""
        arrays = (self._x, self._y, self._z, self._W, self._E, self._acc, self._mu_f)
        return int(sum(a.nbytes for a in arrays)) + self._theta_f.nbytes

    def _check(self, a: np.ndarray, name: str) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.shape != (self.K,):
            raise ValueError(f"{name} must have shape ({self.K},); got {a.shape}.")
        return a

    def _key(self, stream: int) -> np.uint64:
        """_stream_seed(seed, sweeps, stream) in Python integers (a jitted call from Python
        costs ~0.1 ms of argument dispatch, a serial part of every sweep)."""
        return np.uint64(_py_stream_seed(self.seed, self.sweeps, stream))

    def _table_args(self):
        return self._stat_tables, self._tab_feat, self._tab_stride, self._offsets

    # ------------------------------------------------------------------ kernels
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,).

        With ``statistics`` (default) the sufficient statistics of the new state under θ
        are accumulated during the sweep, for a following ``statistics(theta)``.
        """
        mu = self._check(mu, "mu")
        theta = self._check(theta, "theta")
        build_params(
            mu, theta, self._fold_parent, self._fold_sub, self._mu_f, self._theta_f, self._W,
            self._E, self._ent_feat, self._ent_table, self._ent_table2, self._ent_blk, self._ent_g1,
            self._ent_g2,
            self._n_modalities, self._n_mod_pad, self._tab_feat, self._tab_stride, self._offsets,
            self._task_ent, self._task_o0, self._task_o1, self._acc.shape[0], self._counter,
        )  # fmt: skip
        if not self._y_drawn:  # first sweep: ỹ ~ σ(φ(x̃)·θ) before the features
            sample_statistics(self._x, self._theta_f, *self._table_args(), self._z, False,
                              self._acc, *self._fixed, self._counter)  # fmt: skip
            draw_labels(self._z, self._y, self._key(1), self._x.shape[0])
            self._y_drawn = True
        gibbs_sweep(
            self._x, self._y, self._W, self._E, self._n_modalities,
            self._n_mod_pad, self._feat_ptr, self._ent_blk, self._ent_g1, self._ent_s1,
            self._ent_g2, self._key(0), self._theta_f, *self._table_args(), self._z,
            bool(statistics), self._acc, *self._fixed, self._counter,
        )  # fmt: skip
        self._codes = self._rows = None
        self._stats = None
        self._stats_theta = theta.copy() if statistics else None
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        theta = self._check(theta, "theta")
        return sample_logits(self.rows, theta)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and marginalised ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), (K,) each.

        σ is accumulated in fixed point (resolution 2^-32 per sample up to n' < 2^15,
        2^-(62 - 2b) for n' < 2^b above), so the sums are exact and independent of the
        number of threads.
        """
        theta = self._check(theta, "theta")
        if self._stats_theta is None or not np.array_equal(theta, self._stats_theta):
            theta_f = theta.copy()
            np.add.at(theta_f, self._fold_parent, theta[self._fold_sub])
            z = np.empty(self.n_samples)
            sample_statistics(self._x, theta_f, *self._table_args(), z, True,
                              self._acc, *self._fixed, self._counter)  # fmt: skip
            self._stats = None
            self._stats_theta = theta.copy()
        if self._stats is None:
            self._stats = reduce_statistics(
                self._acc, self._fold_parent, self._fold_sub, self._a_bits, self._q_bits
            )
        return self._stats[0].copy(), self._stats[1].copy()


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny problem."""
    from ..tables import TableLayout

    lay = TableLayout.all_pairs([2, 3])
    chain = GibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0)
    chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
    chain.statistics(np.zeros(lay.K))
    chain.statistics(np.ones(lay.K))
    chain.logits(np.zeros(lay.K))
    _ = chain.codes, chain.rows
