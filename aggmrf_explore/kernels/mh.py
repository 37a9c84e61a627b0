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
stream 1.  The sweep is given each stored sample's global index (``gid``), so a shard of
samples [i0, i0 + n) draws exactly what the same samples draw in one chain, and the
samples may be stored in any order (the sweep keeps them sorted by the largest feature,
so that the big tables are read locally): results do not depend on threads, shards or
storage order.

Statistics are integers, packed as in the dense kernel: one int64 per row holds
count · 2^a + Σ round(σ(z_i) · 2^q) (:func:`fixed_point`; q = 24 at n' = 400 000), exact, so
shards' partial sums add up to the one-chain sums bit for bit; rows are kept transposed,
int32 (T, n'), so the accumulation runs in parallel over tables (disjoint row ranges).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import GOLDEN, draw_from_scores, feature_order, inverse_cdf, mix
from .rng import sigmoid as _sigmoid
from .rng import uniform53 as _uniform
from .rows import TableArrays, bucket, table_arrays, table_row

__all__ = [
    "PROPOSAL_UNIFORM",
    "MHStructure",
    "mh_structure",
    "fixed_point",
    "alias_table",
    "mh_sweep",
    "mh_rows_logits",
    "mh_accumulate",
    "mh_unpack",
    "pack_parameters",
    "init_samples_offset",
]

BLOCK = 64  # samples per row of the MH move counts (work items hold whole blocks)
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


class MHStructure(NamedTuple):
    """The static structure of an :class:`~.mh_chain.MHGibbsChain` sweep, one *entry* per
    (feature f, table t ∋ f) pair, entries of f at ``feat_ptr[f] : feat_ptr[f + 1]``.

    n_modalities : int64 (D,) M_f;  feat_ptr : int64 (D + 1,)
    ent_tab, ent_stride : int64 (E,) the table t and f's stride in t's key
    ent_other, ent_ostride : int64 (E, W − 1) t's other features and their strides (padding:
        feature 0 with stride 0), so key_t(v) = v · ent_stride + Σ x[ent_other] · ent_ostride
    ent_off, ent_H : int64 (E,) t's first row and hash size (0: exact);  ent_salt : uint64 (E,)
    tables : the layout's :class:`~.rows.TableArrays` (rows of whole samples)
    """

    n_modalities: np.ndarray
    feat_ptr: np.ndarray
    ent_tab: np.ndarray
    ent_stride: np.ndarray
    ent_other: np.ndarray
    ent_ostride: np.ndarray
    ent_off: np.ndarray
    ent_H: np.ndarray
    ent_salt: np.ndarray
    tables: TableArrays


def mh_structure(layout) -> MHStructure:
    """:class:`MHStructure` of a TableLayout (exact or hashed tables, any arity)."""
    m = np.asarray(layout.n_modalities, dtype=np.int64)
    tabs = table_arrays(
        layout.tables, layout.strides, layout.offsets, layout.hash_sizes, layout.hash_salts
    )
    w1 = max(1, max((len(t) for t in layout.tables), default=1) - 1)
    ptr, ent = [0], []
    for f in range(m.size):
        for t, feats in enumerate(layout.tables):
            if f in feats:
                o = [g for g in feats if g != f]
                pad = w1 - len(o)
                ent.append(
                    (
                        t,
                        int(layout.strides[t, f]),
                        o + [0] * pad,
                        [int(layout.strides[t, g]) for g in o] + [0] * pad,
                    )
                )
        ptr.append(len(ent))
    tab = np.array([e[0] for e in ent], dtype=np.int64)
    return MHStructure(
        n_modalities=m,
        feat_ptr=np.asarray(ptr, dtype=np.int64),
        ent_tab=tab,
        ent_stride=np.array([e[1] for e in ent], dtype=np.int64),
        ent_other=np.array([e[2] for e in ent], dtype=np.int64).reshape(-1, w1),
        ent_ostride=np.array([e[3] for e in ent], dtype=np.int64).reshape(-1, w1),
        ent_off=tabs.offsets[tab].copy(),
        ent_H=tabs.hash_sizes[tab].copy(),
        ent_salt=tabs.hash_salts[tab].copy(),
        tables=tabs,
    )


@njit(inline="always")
def _rest(x, i, e, ent_other, ent_ostride):
    """key_t without f's term for entry e = (f, t): Σ_{g∈t, g≠f} x[i, g] stride_{t,g}."""
    key = np.int64(0)
    for k in range(ent_other.shape[1]):
        key += np.int64(x[i, ent_other[e, k]]) * ent_ostride[e, k]
    return key


@njit(inline="always")
def _row(key, off, H, salt):
    if H == 0:
        return off + key
    return off + bucket(key, salt, H)


@njit(inline="always")
def _propose(key, g, f, D, M, a0, a_prob, a_idx):
    """Feature f's proposal for the sample of global index g: one 53-bit uniform, column
    ⌊u M⌋ of f's alias table (first entry a0), kept with probability prob else its alias."""
    u = _uniform(key, g, f, D + 1) * M
    k = np.int64(u)
    if k >= M:
        k = M - 1
    w = a0 + k
    return k if u - k < a_prob[w] else a_idx[w]


@njit(inline="always")
def _chunks(n, threads):
    """(work items, samples per item) of a pass over n samples: one item per thread, each
    a multiple of BLOCK samples (so an item owns whole rows of the move counts)."""
    nb = (n + BLOCK - 1) // BLOCK
    items = max(1, min(threads, nb))
    per = (nb + items - 1) // items * BLOCK
    return (n + per - 1) // per, per


@njit(inline="always")
def _rows_pass(x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t):
    """rows_t[t, i] = row of sample i in table t (sample by sample: x's row stays in L1)."""
    _rows_pass_of(
        x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t, np.arange(tab_off.shape[0])
    )


#: samples per work item of :func:`_rows_pass_of` (their codes, ≈ 80 KB at D = 19, stay in L2
#: while every table's rows are written)
ROWS_BLOCK = 1024


@njit(inline="always")
def _rows_pass_of(x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t, tabs):
    """rows_t[t, i] = row of sample i in table t for the tables ``tabs`` (int64) only: block
    by block of samples, table by table within a block (each table's row written in one
    contiguous run, its features and strides read once per block)."""
    n = x.shape[0]
    width = tab_feat.shape[1]
    for b in prange((n + ROWS_BLOCK - 1) // ROWS_BLOCK):
        lo, hi = b * ROWS_BLOCK, min(n, (b + 1) * ROWS_BLOCK)
        for t in tabs:
            out = rows_t[t]
            off = tab_off[t]
            if tab_H[t] == 0 and width == 2:  # a pair or a single (stride 0 on the pad)
                f0, f1 = tab_feat[t, 0], tab_feat[t, 1]
                s0, s1 = tab_stride[t, 0], tab_stride[t, 1]
                for i in range(lo, hi):
                    out[i] = off + (np.int64(x[i, f0]) * s0 + np.int64(x[i, f1]) * s1)
            else:
                for i in range(lo, hi):
                    out[i] = table_row(x, i, t, tab_feat, tab_stride, tab_off, tab_H, tab_salt)


@njit(inline="always")
def _logits_pass(rows_t, theta, col, z, threads):
    """z[i] = Σ_t theta[rows_t[t, i], col], t = 0, 1, … (the order of a sample-by-sample
    sum: the same bits), table by table over each thread's samples, so that one table's
    parameters are in cache while its rows are read."""
    T, n = rows_t.shape
    items, per = _chunks(n, threads)
    for c in prange(items):
        lo, hi = c * per, min(n, (c + 1) * per)
        for i in range(lo, hi):
            z[i] = 0.0
        for t in range(T):
            for i in range(lo, hi):
                z[i] += theta[rows_t[t, i], col]


@njit(inline="always")
def _sort_pass(x, y, gid, f, M, x2, y2, g2, threads):
    """Reorder the samples (x, y, gid) by x[:, f] (stable counting sort, in parallel:
    each thread counts and places its contiguous range; the ranges keep their order
    within a value), through the buffers x2, y2, g2 (same shapes)."""
    n, D = x.shape
    items, per = _chunks(n, threads)
    hist = np.zeros((items, M), dtype=np.int64)
    for c in prange(items):
        for i in range(c * per, min(n, (c + 1) * per)):
            hist[c, x[i, f]] += 1
    s = np.int64(0)
    for v in range(M):
        for c in range(items):
            h = hist[c, v]
            hist[c, v] = s
            s += h
    for c in prange(items):
        for i in range(c * per, min(n, (c + 1) * per)):
            v = x[i, f]
            d = hist[c, v]
            hist[c, v] = d + 1
            for g in range(D):
                x2[d, g] = x[i, g]
            y2[d] = y[i]
            g2[d] = gid[i]
    for i in prange(n):
        for g in range(D):
            x[i, g] = x2[i, g]
        y[i] = y2[i]
        gid[i] = g2[i]


@njit(cache=True, nogil=True, parallel=True)
def mh_sweep(
    x,
    y,
    z,
    P,
    ms,
    mh,
    gid,
    key,
    acc_key,
    first_key,
    first,
    rows_valid,
    counts,
    rows_t,
    fixed,
    scale,
    threads,
    sort_f,
    x2,
    y2,
    g2,
    n_sites,
    theta1,
):
    """One sweep of the samples x int32 (n, D), stored in any order: gid int64 (n,) holds
    each stored sample's global index (its draws are keyed by it).

    y uint8 (n,); z float64 (n,) (filled with φ(x̃_i)·θ); P float64 (K, 2): P[r] = (μ_r, θ_r),
    so one gather gives a row's energy μ_r + ỹ θ_r and its θ_r; ms: :class:`MHStructure`;
    mh: (use_mh bool (D,), alias_ptr int64 (D + 1,), alias_prob float64, alias_idx int64,
    log_q float64 (Σ M_f,)).  counts int64 (n_blocks, 2 D) receives accepted / proposed MH
    moves per block of BLOCK samples and feature.  rows_t int32 (T, n): with ``rows_valid``
    it holds the rows of the current x on entry (else they are computed first); on exit it
    holds the new state's rows (the tables holding no updated feature are kept as they
    were, unless the samples were reordered), and fixed int64 (n,) its round(σ(z_i) · scale) (the
    statistics need no second pass).  threads: the work items of each pass (the numba
    threads; the results do not depend on it).  sort_f ≥ 0: right after feature sort_f's
    pass, the stored samples (x, y, gid) are reordered by their value of sort_f (through
    the buffers x2, y2, g2 of the same shapes), so they stay sorted by it for the passes
    of every other feature (−1: never reordered).  n_sites: the features updated, the
    first n_sites of the sweep's random order (≥ D: all of them, the paper's sweep; fewer:
    a random-subset scan, whose site updates each leave π invariant as the whole sweep's
    do, see :class:`~.mh_chain.MHGibbsChain`).  theta1 float64 (K, 1): P[:, 1] as one
    contiguous column, which z's gathers read (half the bytes of P's rows).

    Feature by feature (the sweep's order), every sample's site f is updated before the
    next feature (each thread a contiguous range of samples): a site update reads only the
    T_f tables holding f, so the parameters it gathers (a few MB for most features, against
    K·16 bytes for all tables) stay in cache across samples.  The current value's rows and
    energies are recomputed from x (arithmetic and cached gathers) instead of kept per
    sample.  Then the rows of the new state (sample by sample), z_i = Σ_t θ[row_t] (table
    by table) and ỹ_i.  A sample's draws depend only on (key, global index, site) and its
    own state, and each sum keeps its order: the same numbers as one sample at a time,
    whatever the passes, threads, shards or the order the samples are stored in.

    Sorted by a large feature F, consecutive samples share x_F, so the tables holding F
    (most of K on a high-cardinality layout) are read in a window of a few rows per value
    by every other feature's pass, by z's gathers and by the counting, not at random.  F's
    own MH pass runs entry by entry (each thread: every sample's proposal, then for each
    table holding F every sample's energy difference added to its log ratio, in the
    entries' order, then the accept/reject draws): its proposals' rows are random, and one
    table at a time (≤ 21 MB) stays in L3 where all of F's tables (64 MB) did not.
    """
    n_mod, feat_ptr, ent_stride = ms.n_modalities, ms.feat_ptr, ms.ent_stride
    ent_other, ent_ostride, ent_off, ent_H, ent_salt = (
        ms.ent_other,
        ms.ent_ostride,
        ms.ent_off,
        ms.ent_H,
        ms.ent_salt,
    )
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = ms.tables
    use_mh, a_ptr, a_prob, a_idx, log_q = mh
    n, D = x.shape
    order = feature_order(key, D)
    max_m = 1
    max_e = 1
    for f in range(D):
        max_m = max(max_m, n_mod[f])
        max_e = max(max_e, feat_ptr[f + 1] - feat_ptr[f])
    for b in prange(counts.shape[0]):
        for f in range(2 * D):
            counts[b, f] = 0
    if not rows_valid:  # the rows of the entry state (the first ỹ and the partial pass below)
        _rows_pass(x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t)
    if first:  # ỹ ~ σ(φ(x̃)·θ) before the first sweep's features
        _logits_pass(rows_t, theta1, 0, z, threads)
        for i in prange(n):
            y[i] = 1 if _uniform(first_key, gid[i], D, D + 1) < _sigmoid(z[i]) else 0
    items, per = _chunks(n, threads)
    T = tab_off.shape[0]
    changed = np.zeros(T, dtype=np.bool_)  # the tables whose rows this sweep can change
    for q in range(min(n_sites, D)):
        f = order[q]
        M = n_mod[f]
        if M == 1:
            continue
        e0 = feat_ptr[f]
        ne = feat_ptr[f + 1] - e0
        for e in range(e0, e0 + ne):
            changed[ms.ent_tab[e]] = True
        if f == sort_f:  # the samples are reordered: every table's rows move
            changed[:] = True
        if use_mh[f] and f == sort_f:  # the same moves, entry by entry (one table at a time)
            for c in prange(items):
                lo, hi = c * per, min(n, (c + 1) * per)
                props = np.empty(max(0, hi - lo), dtype=np.int64)  # −1: proposed the same value
                dl = np.empty(max(0, hi - lo), dtype=np.float64)  # the log acceptance ratios
                for i in range(lo, hi):
                    prop = _propose(key, gid[i], f, D, M, a_ptr[f], a_prob, a_idx)
                    v = np.int64(x[i, f])
                    counts[i // BLOCK, D + f] += 1
                    if prop == v:
                        counts[i // BLOCK, f] += 1
                        props[i - lo] = -1
                    else:
                        props[i - lo] = prop
                        dl[i - lo] = log_q[a_ptr[f] + v] - log_q[a_ptr[f] + prop]
                for e in range(e0, e0 + ne):
                    for i in range(lo, hi):
                        prop = props[i - lo]
                        if prop < 0:
                            continue
                        v = np.int64(x[i, f])
                        yf = np.float64(y[i])
                        rest = _rest(x, i, e, ent_other, ent_ostride)
                        rn = _row(rest + prop * ent_stride[e], ent_off[e], ent_H[e], ent_salt[e])
                        ro = _row(rest + v * ent_stride[e], ent_off[e], ent_H[e], ent_salt[e])
                        dl[i - lo] += (P[rn, 0] + yf * P[rn, 1]) - (P[ro, 0] + yf * P[ro, 1])
                for i in range(lo, hi):
                    prop = props[i - lo]
                    if prop < 0:
                        continue
                    d = dl[i - lo]
                    if d >= 0.0 or _uniform(acc_key, gid[i], f, D + 1) < np.exp(d):
                        x[i, f] = prop
                        counts[i // BLOCK, f] += 1
            _sort_pass(x, y, gid, f, M, x2, y2, g2, threads)
            continue
        if use_mh[f]:  # Metropolis–Hastings: O(T_f) gathers whatever M_f
            for c in prange(items):
                for i in range(c * per, min(n, (c + 1) * per)):
                    b = i // BLOCK
                    prop = _propose(key, gid[i], f, D, M, a_ptr[f], a_prob, a_idx)
                    v = np.int64(x[i, f])
                    counts[b, D + f] += 1
                    if prop == v:
                        counts[b, f] += 1
                        continue
                    yf = np.float64(y[i])
                    delta = log_q[a_ptr[f] + v] - log_q[a_ptr[f] + prop]
                    for e in range(e0, e0 + ne):
                        rest = _rest(x, i, e, ent_other, ent_ostride)
                        rn = _row(rest + prop * ent_stride[e], ent_off[e], ent_H[e], ent_salt[e])
                        ro = _row(rest + v * ent_stride[e], ent_off[e], ent_H[e], ent_salt[e])
                        delta += (P[rn, 0] + yf * P[rn, 1]) - (P[ro, 0] + yf * P[ro, 1])
                    if delta >= 0.0 or _uniform(acc_key, gid[i], f, D + 1) < np.exp(delta):
                        x[i, f] = prop
                        counts[b, f] += 1
            continue
        for c in prange(items):  # the exact full conditional, O(M_f T_f)
            scores = np.empty(max_m, dtype=np.float64)
            for i in range(c * per, min(n, (c + 1) * per)):
                yf = np.float64(y[i])
                for v in range(M):
                    scores[v] = 0.0
                for e in range(e0, e0 + ne):
                    rest = _rest(x, i, e, ent_other, ent_ostride)
                    s = ent_stride[e]
                    off = ent_off[e]
                    H = ent_H[e]
                    if H == 0:
                        for v in range(M):
                            r = off + rest + v * s
                            scores[v] += P[r, 0] + yf * P[r, 1]
                    else:
                        salt = ent_salt[e]
                        for v in range(M):
                            r = off + bucket(rest + v * s, salt, H)
                            scores[v] += P[r, 0] + yf * P[r, 1]
                x[i, f] = draw_from_scores(scores, M, _uniform(key, gid[i], f, D + 1))
        if f == sort_f:
            _sort_pass(x, y, gid, f, M, x2, y2, g2, threads)
    # rows_t held the rows of the entry state (rows_valid or rebuilt above): only the tables
    # holding an updated feature are recomputed
    _rows_pass_of(x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t, np.nonzero(changed)[0])
    _logits_pass(rows_t, theta1, 0, z, threads)
    for i in prange(n):
        p1 = _sigmoid(z[i])
        y[i] = 1 if _uniform(key, gid[i], D, D + 1) < p1 else 0
        fixed[i] = np.int64(np.round(p1 * scale))


@njit(cache=True, nogil=True, parallel=True)
def mh_rows_logits(x, theta, tabs, rows_t, z, fixed, scale, threads):
    """rows_t[t, i] = row of sample i in table t (int32 (T, n)), z[i] = φ(x̃_i)·θ and
    fixed[i] = round(σ(z_i) · scale) (int64); theta float64 (K, 1); threads as in
    :func:`mh_sweep` (whose passes these are)."""
    tab_feat, tab_stride, tab_off, tab_H, tab_salt = tabs
    _rows_pass(x, tab_feat, tab_stride, tab_off, tab_H, tab_salt, rows_t)
    _logits_pass(rows_t, theta, 0, z, threads)
    for i in prange(x.shape[0]):
        fixed[i] = np.int64(np.round(_sigmoid(z[i]) * scale))


@njit(cache=True, nogil=True, parallel=True)
def mh_accumulate(rows_t, fixed, one_a, acc):
    """acc[r] += one_a + fixed[i] over every (table, sample): count · one_a + Σ fixed σ in
    one int64 per row (:func:`fixed_point`); parallel over tables (their rows are
    disjoint), so the sums are exact and thread independent."""
    T, n = rows_t.shape
    for t in prange(T):
        for i in range(n):
            acc[rows_t[t, i]] += one_a + fixed[i]


@njit(cache=True, nogil=True, parallel=True)
def pack_parameters(mu, theta, P, theta_copy):
    """P[r] = (μ_r, θ_r) and theta_copy[r] = θ_r (float64 (K,) and (K, 2); one pass)."""
    for r in prange(mu.shape[0]):
        P[r, 0] = mu[r]
        P[r, 1] = theta[r]
        theta_copy[r] = theta[r]


@njit(cache=True, nogil=True, parallel=True)
def mh_unpack(packed, a_bits, q_scale, d, c):
    """d[r] = packed[r] >> a_bits, c[r] = (packed[r] mod 2^a_bits) · q_scale (float64 (K,)
    each, written in place): the statistics of :func:`mh_accumulate`, exact conversions."""
    mask = (np.int64(1) << a_bits) - np.int64(1)
    for r in prange(packed.shape[0]):
        d[r] = np.float64(packed[r] >> a_bits)
        c[r] = np.float64(packed[r] & mask) * q_scale


@njit(cache=True, nogil=True)
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
