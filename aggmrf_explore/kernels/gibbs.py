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
(seed, it) (:func:`.rng.uniform24`, 24 bits, exact in float32), and ỹ_i uses f = D.  Nothing
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

Arguments
---------
The kernels take the state (x, y, z), the sweep's key and three named tuples of arrays
(pynndescent / umap style), built once per chain by
:class:`~aggmrf_explore.kernels.chain.GibbsChain`: :class:`SweepStructure` (tables,
entries, folding, tasks: static), :class:`SweepParams` (μ', θ', W, E: rewritten each
sweep) and :class:`Accumulators` (the workers' statistics and work counters).  Kernels
read the fields into local names before their parallel loops (numba's parallel loops do
not take tuples inside their bodies).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import bernoulli_logit as _bernoulli_logit
from .rng import feature_order, inverse_cdf, splitmix_next, stream_seed
from .rng import sigmoid as _sigmoid
from .rng import uniform24 as _uniform
from .simd import (
    fetch_add,
    mad32,
    vadd,
    vall_ge,
    vcount_le,
    vexp_shifted,
    vexp_shifted_accurate,
    vload,
    vmax,
    vmul,
    vsplat,
    vstore,
    vtranspose_store,
    vzero,
    ymad32,
)
from .simd import uindex as _u

__all__ = [
    "SweepStructure",
    "SweepParams",
    "Accumulators",
    "build_params",
    "gibbs_sweep",
    "sample_statistics",
    "draw_labels",
    "reduce_statistics",
    "init_samples",
    "BLOCK",
    "LANES",
    "MERGE",
    "PAD",
    "TASK",
]

BLOCK = 256  # samples per work item (E of one feature is reused from L1 by 256 samples)
TAIL_BLOCK = 64  # the last 2-3 BLOCKs of samples are handed out in smaller items, so that
# workers finish together (a worker idles at most ~ one small item at the end)
LANES = 8  # candidate vectors are padded to a multiple of this (float32: one AVX2 register)
BIG = np.float32(1e30)  # padding: exp(-BIG - max) = 0
MERGE = 64  # two pair entries of a feature share one E block if m_a m_b ≤ MERGE
TASK = 2048  # floats of W per task of the parallel parameter build


class SweepStructure(NamedTuple):
    """The static structure of a dense chain (built once by ``GibbsChain``; see the module doc).

    D features, T tables, E entries (feature, maximal table), S maximal tables.

    n_modalities : int64 (D,) M_f;  n_mod_pad : int64 (D,) M_f rounded up to LANES
    feat_ptr     : int64 (D + 1,) entries of feature f are feat_ptr[f] .. feat_ptr[f + 1]
    ent_feat, ent_table, ent_table2 : int64 (E,) feature, table, merged second pair (or -1)
    ent_blk      : int64 (E,) start of the entry's block in W's half
    ent_g1, ent_g2 : int64 (E,) the table's other features (D: none);  ent_s1 : int64 (E,) m2 Mp_f
    stat_tables  : int64 (S,) the maximal tables (statistics are accumulated for them)
    tab_feat, tab_stride : int64 (T, 3) features (padding D) and strides of each table
    offsets      : int64 (T + 1,) first row of each table
    fold_parent, fold_sub : int64 (F,) the (row, sub-row) pairs of the folding
    task_ent, task_o0, task_o1 : int64 (n_tasks,) build_params' tasks (entry, contexts o0 .. o1)
    """

    n_modalities: np.ndarray
    n_mod_pad: np.ndarray
    feat_ptr: np.ndarray
    ent_feat: np.ndarray
    ent_table: np.ndarray
    ent_table2: np.ndarray
    ent_blk: np.ndarray
    ent_g1: np.ndarray
    ent_g2: np.ndarray
    ent_s1: np.ndarray
    stat_tables: np.ndarray
    tab_feat: np.ndarray
    tab_stride: np.ndarray
    offsets: np.ndarray
    fold_parent: np.ndarray
    fold_sub: np.ndarray
    task_ent: np.ndarray
    task_o0: np.ndarray
    task_o1: np.ndarray


class SweepParams(NamedTuple):
    """The parameters as the sweep reads them, rewritten by :func:`build_params` each sweep.

    mu_f, theta_f : float64 (K,) μ', θ' (folded onto the maximal tables)
    W, E          : float32 (2 half,) the [y = 0 | y = 1] blocks of scores and exp-weights
    """

    mu_f: np.ndarray
    theta_f: np.ndarray
    W: np.ndarray
    E: np.ndarray


class Accumulators(NamedTuple):
    """The workers' statistics and work counters (one row / cache line per worker).

    acc     : int64 (P, K) packed count 2^A + Σ round(σ 2^Q) per worker and row
    counter : int64 ((P + 1) PAD,) work handed out (:func:`_claim`; counter[0] in build_params)
    fixed_q : float 2^Q;  one_a : int64 2^A
    """

    acc: np.ndarray
    counter: np.ndarray
    fixed_q: float
    one_a: np.int64


# ---------------------------------------------------------------------------- build
@njit(cache=True, nogil=True, parallel=True)
def build_params(mu, theta, s, p, work):
    """Fold μ, θ (float64 (K,)) into p.mu_f, p.theta_f, fill p.W and p.E: see the module doc.

    s: SweepStructure; p: SweepParams (written); work: Accumulators (its counter).

    E = exp(W − max of W's row), row by row (one row: the M_f candidates of one context),
    so every factor of the sweep's products is ≤ 1 and the largest of each row is 1.
    The blocks are filled by n_workers workers taking tasks (contexts task_o0 … task_o1
    of entry task_ent, about TASK floats each) from an atomic counter (counter[0]).
    """
    fold_parent, fold_sub, n_modalities, n_mod_pad = (
        s.fold_parent,
        s.fold_sub,
        s.n_modalities,
        s.n_mod_pad,
    )
    ent_feat, ent_table, ent_table2, ent_blk = s.ent_feat, s.ent_table, s.ent_table2, s.ent_blk
    ent_g1, ent_g2, tab_feat, tab_stride, offsets = (
        s.ent_g1,
        s.ent_g2,
        s.tab_feat,
        s.tab_stride,
        s.offsets,
    )
    task_ent, task_o0, task_o1 = s.task_ent, s.task_o0, s.task_o1
    mu_f, theta_f, W, E = p.mu_f, p.theta_f, p.W, p.E
    n_workers, counter = work.acc.shape[0], work.counter
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
            ST,
            _u(c * LANES),
            _products(E, bases, npb, j0, cu),
            _products(E, bases, npb, j0 + 1, cu),
            _products(E, bases, npb, j0 + 2, cu),
            _products(E, bases, npb, j0 + 3, cu),
            _products(E, bases, npb, j0 + 4, cu),
            _products(E, bases, npb, j0 + 5, cu),
            _products(E, bases, npb, j0 + 6, cu),
            _products(E, bases, npb, j0 + 7, cu),
        )
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
            ST,
            _u(c * LANES),
            _scores(W, bases, npb, j0, cu),
            _scores(W, bases, npb, j0 + 1, cu),
            _scores(W, bases, npb, j0 + 2, cu),
            _scores(W, bases, npb, j0 + 3, cu),
            _scores(W, bases, npb, j0 + 4, cu),
            _scores(W, bases, npb, j0 + 5, cu),
            _scores(W, bases, npb, j0 + 6, cu),
            _scores(W, bases, npb, j0 + 7, cu),
        )
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


@njit(cache=True, nogil=True, parallel=True)
def gibbs_sweep(x, y, z, key, s, p, work, accumulate):
    """One sweep of every sample (x (D + 1, n') with x[D] ≡ 0, y uint8 (n',)), in place.

    key: the sweep's uint64 key; s: SweepStructure; p: SweepParams (after build_params);
    work: Accumulators; z: float64 (n',) receives φ(x̃_i)·θ'.

    Entries p of feature f are feat_ptr[f] .. feat_ptr[f + 1]; the candidate vector of
    sample i in entry p starts at ``y_i half + ent_blk[p] + x[ent_g1[p], i] ent_s1[p]
    + x[ent_g2[p], i] Mp_f`` in W (ent_s1 = m2 Mp_f).  After the features, z[i] = φ(x̃_i)·θ
    (θ folded) and ỹ_i is drawn; with ``accumulate``, worker w adds its samples to acc[w]
    (zeroed here): 2^A + round(σ(z_i) fixed_q) per sample and maximal-table row, one_a = 2^A.

    acc.shape[0] workers take blocks of BLOCK samples with atomic counters (:func:`_claim`):
    a worker that is delayed (a shared machine) does not hold the others up, and no result
    depends on which worker takes which block.
    """
    n_modalities, n_mod_pad, feat_ptr = s.n_modalities, s.n_mod_pad, s.feat_ptr
    ent_blk, ent_g1, ent_s1, ent_g2 = s.ent_blk, s.ent_g1, s.ent_s1, s.ent_g2
    stat_tables, tab_feat, tab_stride, offsets = s.stat_tables, s.tab_feat, s.tab_stride, s.offsets
    W, E, theta = p.W, p.E, p.theta_f
    acc, fixed_q, one_a, counter = work.acc, work.fixed_q, work.one_a, work.counter
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


@njit(cache=True, nogil=True, parallel=True)
def sample_statistics(x, theta, z, s, work, accumulate):
    """z[i] = φ(x_i)·θ (θ folded) and, with ``accumulate``, the statistics (see gibbs_sweep)."""
    stat_tables, tab_feat, tab_stride, offsets = s.stat_tables, s.tab_feat, s.tab_stride, s.offsets
    acc, fixed_q, one_a, counter = work.acc, work.fixed_q, work.one_a, work.counter
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


@njit(cache=True, nogil=True, parallel=True)
def draw_labels(z, y, key, D1):
    """ỹ_i ~ σ(z_i) with the uniforms of site D of each sample."""
    for i in prange(z.shape[0]):
        y[i] = _bernoulli_logit(z[i], _uniform(key, i, D1 - 1, D1))


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def init_samples(marginal_cdfs, cdf_ptr, n, seed):
    """Draw n samples with independent features from per-feature CDFs, int32 (n, D)."""
    D = cdf_ptr.shape[0] - 1
    codes = np.empty((n, D), dtype=np.int32)
    for i in range(n):
        state = stream_seed(seed, 0xFFFFFFFF, i)
        for f in range(D):
            state, u = splitmix_next(state)
            codes[i, f] = inverse_cdf(u, marginal_cdfs, cdf_ptr[f], cdf_ptr[f + 1])
    return codes
