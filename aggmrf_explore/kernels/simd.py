"""Explicit SIMD for numba: a float32 × 8 vector type and the LLVM intrinsics of the sweep.

LLVM's auto-vectoriser does not reliably vectorise the short, variable-length loops of a
site update (it vectorised the reduction over tables with gathers instead), so the hot
loops of :mod:`.gibbs` are written with these explicit vector operations (``vec8f``: an
LLVM ``<8 x float>`` kept in registers, one AVX2 register).  Also here: 32-bit integer
multiply-adds (:func:`mad32`, :func:`ymad32`: numba would promote to 64-bit lanes), an
atomic fetch-and-add for work counters (:func:`fetch_add`) and :func:`uindex` (unsigned
indices skip numba's negative-index wraparound).  Loads and stores are unchecked:
callers guarantee idx .. idx + 7 is inside the array.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic, models, register_model

__all__ = [
    "uindex",
    "mad32",
    "ymad32",
    "vec8f",
    "vload",
    "vstore",
    "vadd",
    "vmul",
    "vmax",
    "vzero",
    "vsplat",
    "vexp_shifted",
    "vexp_shifted_accurate",
    "vall_ge",
    "vcount_le",
    "vtranspose_store",
    "fetch_add",
]

_F32 = ir.FloatType()
_V8 = ir.VectorType(_F32, 8)
_I32 = ir.IntType(32)
_VI8 = ir.VectorType(_I32, 8)


@njit(inline="always")
def uindex(i):
    """Index as uint64: numba skips the negative-index wraparound code for unsigned indices."""
    return np.uint64(i)


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
