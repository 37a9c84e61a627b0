"""Numba kernels for the Gibbs sampler of the MRF π(x, y) ∝ exp(φ(x)·(μ + yθ)).

State of the persistent chain, for n' samples and D features: ``codes`` int32 (n', D).
Rows of the samples in the tables are not stored: they are recomputed from the codes
where needed (``row_t(x) = offset_t + Σ_f x_f stride_{t,f}``, arity ≤ 3).

Layout of the parameters inside a sweep (rebuilt once per sweep by :func:`build_params`,
O(K) work).  For every *entry* (feature f, table t ∋ f) the table's rows are copied,
as float32, into a block where the M_f candidate values of f for one value of the
other features of t are contiguous and padded to a multiple of ``LANES`` (padding holds
``-BIG`` so its probability is exactly 0)::

    W[y, blk_e + other * Mp_f + v] = μ[row] + y θ[row]      (y ∈ {0, 1})

``other = x[g1] * m2 + x[g2]`` (features of t other than f; x[D] ≡ 0 stands for "none").
The single table (f,) is folded into f's first larger entry, so one site update of f
adds, for each table holding f but one, one contiguous vector of Mp_f float32 values.
Exponentials use a branch-free polynomial exp (:func:`_exp_block`, relative error
< 2e-7) that LLVM vectorises; no allocation happens inside the sweep (scratch buffers
are per thread, allocated once by the caller).

Randomness is counter based: sample i at sweep ``it`` draws from a splitmix64 stream
seeded by (seed, it, i), so results do not depend on the number of threads nor on the
way samples are split between them.  Sufficient statistics are accumulated per thread
in *integers* (counts, and σ(z) in fixed point with 2^-32 resolution), whose sums are
exact and hence independent of the order and of the partition: d̂ and ĉ are
bit-identical whatever NUMBA_NUM_THREADS is.
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
BLOCK = 32  # samples per parallel work item
LANES = 8  # candidate vectors are padded to a multiple of this (float32: one AVX2 register)
BIG = np.float32(1e30)  # padding: exp(-BIG - max) = 0
FIXED_ONE = 4294967296.0  # 2^32: fixed-point scale of σ(z) in the ĉ accumulators


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


# ---------------------------------------------------------------------------- helpers
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


_BUTTERFLY = ([4, 5, 6, 7, 0, 1, 2, 3], [2, 3, 0, 1, 6, 7, 4, 5], [1, 0, 3, 2, 5, 4, 7, 6])


def _butterfly(builder, v, op):
    for perm in _BUTTERFLY:
        w = builder.shuffle_vector(v, ir.Constant(_V8, ir.Undefined), ir.Constant(_VI8, perm))
        v = op(builder, v, w)
    return v


def _max(builder, a, b):
    return builder.select(builder.fcmp_ordered(">", a, b), a, b)


@intrinsic
def vhsum(typingctx, a):
    """Sum of the 8 lanes (fixed butterfly order, deterministic), as a scalar."""
    if a != vec8f:
        return None

    def codegen(context, builder, sig, args):
        v = _butterfly(builder, args[0], lambda bld, x, y: bld.fadd(x, y))
        return builder.extract_element(v, ir.Constant(_I32, 0))

    return types.float32(a), codegen


@intrinsic
def vallmax(typingctx, a):
    """The maximum of the 8 lanes, broadcast to every lane."""
    if a != vec8f:
        return None

    def codegen(context, builder, sig, args):
        return _butterfly(builder, args[0], _max)

    return vec8f(a), codegen


@intrinsic
def vexp_shifted(typingctx, a, m):
    """exp(a - m) lane-wise for m ≥ a lane-wise (so a - m ≤ 0).

    Cody-Waite reduction to r ∈ [-ln2/2, ln2/2], degree-6 Taylor polynomial (relative
    error < 2e-7), 2^k assembled from its IEEE-754 bits; arguments below -87 give 0.
    """
    if not (a == vec8f and m == vec8f):
        return None

    def codegen(context, builder, sig, args):
        t = builder.fsub(args[0], args[1])
        keep = builder.fcmp_ordered(">", t, _splat(-87.0))
        t = builder.select(keep, t, _splat(-87.0))
        floor = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_V8, [_V8]), "llvm.floor.v8f32"
        )
        k = builder.call(
            floor, [builder.fadd(builder.fmul(t, _splat(1.4426950408889634)), _splat(0.5))]
        )
        r = builder.fsub(t, builder.fmul(k, _splat(0.693359375)))
        r = builder.fsub(r, builder.fmul(k, _splat(-2.12194440e-4)))
        p = _splat(1.0 / 720.0)
        for c in (1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0):
            p = builder.fadd(builder.fmul(p, r), _splat(c))
        ki = builder.fptosi(k, _VI8)
        bits = builder.shl(
            builder.add(ki, ir.Constant(_VI8, [127] * 8)), ir.Constant(_VI8, [23] * 8)
        )
        e = builder.fmul(p, builder.bitcast(bits, _V8))
        return builder.select(keep, e, _splat(0.0))

    return vec8f(a, m), codegen


# ---------------------------------------------------------------------------- build
@njit(cache=True, parallel=True)
def build_params(mu, theta, W, ent_feat, ent_table, ent_blk, ent_g, ent_m2, ent_carry, n_mod_pad,
                 tab_feat, tab_stride, offsets, n_modalities):  # fmt: skip
    """Fill W (float32 (2, size)) from μ, θ (float64 (K,)): see the module docstring.

    ent_g[e] = (g1, g2) other features (D = none); ent_m2[e] = modalities of g2 (1 if none);
    ent_carry[e] = table index of f's single table folded into this entry, or -1.
    """
    n_ent = ent_feat.shape[0]
    D = n_modalities.shape[0]
    for e in prange(n_ent):
        f = ent_feat[e]
        t = ent_table[e]
        M = n_modalities[f]
        Mp = n_mod_pad[f]
        blk = ent_blk[e]
        if t < 0:  # feature in no table: zero scores, uniform conditional
            for v in range(Mp):
                W[0, blk + v] = np.float32(0.0) if v < M else -BIG
                W[1, blk + v] = np.float32(0.0) if v < M else -BIG
            continue
        g1 = ent_g[e, 0]
        g2 = ent_g[e, 1]
        m2 = ent_m2[e]
        m1 = n_modalities[g1] if g1 < D else 1
        # strides of f, g1, g2 in table t
        sf = 0
        s1 = 0
        s2 = 0
        for j in range(3):
            if tab_feat[t, j] == f:
                sf = tab_stride[t, j]
            elif tab_feat[t, j] == g1:
                s1 = tab_stride[t, j]
            elif tab_feat[t, j] == g2:
                s2 = tab_stride[t, j]
        carry = ent_carry[e]
        c_off = offsets[carry] if carry >= 0 else 0
        for o in range(m1 * m2):
            x1 = o // m2
            x2 = o - x1 * m2
            raw = offsets[t] + x1 * s1 + x2 * s2
            dst = blk + o * Mp
            for v in range(M):
                r = raw + v * sf
                a = mu[r]
                b = mu[r] + theta[r]
                if carry >= 0:
                    a += mu[c_off + v]
                    b += mu[c_off + v] + theta[c_off + v]
                W[0, dst + v] = np.float32(a)
                W[1, dst + v] = np.float32(b)
            for v in range(M, Mp):
                W[0, dst + v] = -BIG
                W[1, dst + v] = -BIG


# ---------------------------------------------------------------------------- sweep
@njit(inline="always")
def _u(i):
    """Index as uint64: numba skips the negative-index wraparound code for unsigned indices."""
    return np.uint64(i)


@njit(inline="always")
def _accumulate_row(ri, theta, d_part, c_part, tid):
    """Add the sample whose rows are ri (T,) to thread tid's integer accumulators."""
    T = ri.shape[0]
    z = 0.0
    for t in range(T):
        z += theta[_u(ri[t])]
    q = np.int64(_sigmoid(z) * FIXED_ONE + 0.5)
    dp = d_part[tid]
    cp = c_part[tid]
    for t in range(T):
        r = _u(ri[t])
        dp[r] += 1
        cp[r] += q


@njit(cache=True, parallel=True)
def gibbs_sweep(codes, rows, W, theta, n_modalities, n_mod_pad, feat_ptr, ent_blk, ent_g1,
                ent_s1, ent_g2, ftab_ptr, ftab_table, ftab_stride, seed, it, accumulate,
                d_part, c_part, xbuf, order_buf, sbuf, ebuf, bases_buf):  # fmt: skip
    """One Gibbs sweep of every persistent sample, in place (codes and rows).

    For each sample: draw ỹ ~ σ(φ(x̃)·θ), then resample every feature, in a random order,
    from P(X_f | x̃_{-f}, ỹ) ∝ exp(Σ_{t∋f} μ[row] + ỹ θ[row]) (max subtracted before exp).
    W: float32 (2, size) from build_params; theta: float64 (K,) (for the logits).
    Entries p of feature f (single table folded) are feat_ptr[f] .. feat_ptr[f + 1]; the
    vector of f's candidates in entry p starts at
    ``ent_blk[p] + x[ent_g1[p]] * ent_s1[p] + x[ent_g2[p]] * Mp_f`` (x[D] ≡ 0).
    ftab_*: CSR from features to every table holding them, with f's stride there.
    When ``accumulate``, the final state of every sample is added to d_part / c_part
    (int32 / int64 (threads, K), zeroed here): see :func:`reduce_statistics`.
    Scratch buffers: one row per thread (numba.get_thread_id()); no allocation.
    """
    n, D = codes.shape
    T = rows.shape[1]
    if accumulate:
        d_part[:] = 0
        c_part[:] = 0
    W0 = W[0]
    W1 = W[1]
    n_blocks = (n + BLOCK - 1) // BLOCK
    for b in prange(n_blocks):
        tid = numba.get_thread_id()
        x = xbuf[tid]
        order = order_buf[tid]
        s = sbuf[tid]
        e = ebuf[tid]
        bases = bases_buf[tid]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            ri = rows[i]
            for f in range(D):
                x[f] = codes[i, f]
            x[D] = 0
            state = _stream_seed(seed, it, i)
            logit = 0.0
            for t in range(T):
                logit += theta[_u(ri[t])]
            state, u = _next(state)
            Wy = W1 if _bernoulli_logit(logit, u) == 1 else W0
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
                Mp = n_mod_pad[f]
                p0 = feat_ptr[f]
                npb = feat_ptr[f + 1] - p0
                for q in range(npb):
                    p = _u(p0 + q)
                    bases[q] = _u(ent_blk[p] + x[_u(ent_g1[p])] * ent_s1[p] + x[_u(ent_g2[p])] * Mp)
                # scores: one contiguous vector per table, two partial sums per chunk
                vm = vzero()
                for c in range(0, Mp, LANES):
                    cu = _u(c)
                    a0 = vload(Wy, bases[0] + cu)
                    a1 = vzero()
                    q = 1
                    while q + 1 < npb:
                        a0 = vadd(a0, vload(Wy, bases[q] + cu))
                        a1 = vadd(a1, vload(Wy, bases[q + 1] + cu))
                        q += 2
                    if q < npb:
                        a0 = vadd(a0, vload(Wy, bases[q] + cu))
                    a0 = vadd(a0, a1)
                    vstore(s, cu, a0)
                    vm = a0 if c == 0 else vmax(vm, a0)
                vm = vallmax(vm)
                tot = vzero()
                for c in range(0, Mp, LANES):
                    ev = vexp_shifted(vload(s, _u(c)), vm)
                    vstore(e, _u(c), ev)
                    tot = vadd(tot, ev)
                total = vhsum(tot)
                # inverse CDF over the unnormalised weights, one pass, stops at the draw
                state, u = _next(state)
                target = np.float32(u) * total
                acc = np.float32(0.0)
                new = M - 1
                for v in range(M - 1):
                    acc += e[v]
                    if target < acc:
                        new = v
                        break
                xf = x[f]
                if new != xf:
                    x[f] = new
                    for p in range(ftab_ptr[f], ftab_ptr[f + 1]):
                        pu = _u(p)
                        t = _u(ftab_table[pu])
                        ri[t] += (new - xf) * ftab_stride[pu]
            for f in range(D):
                codes[i, f] = x[f]
            if accumulate:
                _accumulate_row(ri, theta, d_part, c_part, tid)


# ---------------------------------------------------------------------------- statistics
@njit(cache=True, parallel=True)
def accumulate_rows(rows, theta, d_part, c_part):
    """Integer accumulators of d̂ and ĉ for the samples' current rows (see gibbs_sweep)."""
    n = rows.shape[0]
    d_part[:] = 0
    c_part[:] = 0
    n_blocks = (n + BLOCK - 1) // BLOCK
    for b in prange(n_blocks):
        tid = numba.get_thread_id()
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            _accumulate_row(rows[i], theta, d_part, c_part, tid)


@njit(cache=True, parallel=True)
def reduce_statistics(d_part, c_part):
    """Sum the per-thread accumulators: d̂ = Σ φ(x̃_i), ĉ = Σ σ(φ(x̃_i)·θ) φ(x̃_i), float64 (K,)."""
    P, K = d_part.shape
    d_hat = np.empty(K, dtype=np.float64)
    c_hat = np.empty(K, dtype=np.float64)
    chunk = 4096
    for b in prange((K + chunk - 1) // chunk):
        for r in range(b * chunk, min(K, (b + 1) * chunk)):
            dd = np.int64(0)
            cc = np.int64(0)
            for p in range(P):
                dd += d_part[p, r]
                cc += c_part[p, r]
            d_hat[r] = dd
            c_hat[r] = cc * (1.0 / FIXED_ONE)
    return d_hat, c_hat


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
