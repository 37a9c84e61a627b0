"""The PCD update's elementwise work in one pass over the K coordinates.

:func:`aggmrf_explore.mrf.pcd_update` is a chain of elementwise numpy expressions; written
with numpy, each makes a (K,) temporary (about thirty of them, ≈ 1.5 s per iteration at
K = 5.7·10⁶ rows).  :func:`update_pass` computes the same expressions per coordinate, in the
same order of operations (IEEE double, no contraction, no reassociation: the results are bit
for bit those of the numpy expressions, ``tests/test_update.py`` checks it), in parallel
over coordinates (each is independent: thread-count independent).  :func:`bound_excess`
is the divergence check's reduction (the largest |θ|/bound and |μ|/bound and their first
positions) without temporaries.  :func:`gauge_pass` is one Gauss–Seidel pass of the exact
minimisation along the directions that leave the model unchanged (``pcd.gauge_step``): μ's
and θ's columns in one pass, each large block's groups in parallel (they are disjoint).
The trainer's other per-iteration (K,) work is here too, each a numpy expression computed
element by element in one parallel pass with its bits (:func:`momentum_step`,
:func:`average_step`; :func:`relative_l1_at` and :func:`sum_of_squares` leave the sums to
numpy's pairwise summation over a buffer); with ``out=`` buffers that the trainer keeps
(:func:`update_buffers`) an iteration makes almost no (K,) temporaries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange

__all__ = [
    "GRADIENT_CODES",
    "PRECONDITION_CODES",
    "SMALL",
    "UpdateArrays",
    "UpdateScalars",
    "rescaling_ratio",
    "ratio_at",
    "update_pass",
    "update_pass_compiled",
    "bound_excess",
    "bound_excess_compiled",
    "GaugeGroups",
    "gauge_pass",
    "gauge_column_compiled",
    "gauge_pair_compiled",
    "UpdateOutputs",
    "update_buffers",
    "update_pass_into",
    "momentum_step",
    "average_step",
]

GRADIENT_CODES = {"rescaled": 0, "rescaled-paper": 1, "true": 2}
#: ``UpdateScalars.precondition``: 0 none (h_plain), 1 from the chain's own estimates
#: (h_μ = d̂ + 2λ_μ, h_θ = r·ĉ + 2λ_θ: the paper's), 2 from the targets (those values at the
#: fixed point: h_μ = max(d − 2λ_μ μ, 0) + 2λ_μ, h_θ = max(c − 2λ_θ θ, 0) + 2λ_θ)
PRECONDITION_CODES = {"none": 0, "samples": 1, "targets": 2}


class UpdateArrays(NamedTuple):
    """The update's per-coordinate inputs, each float64 (K,) and contiguous."""

    mu: np.ndarray
    theta: np.ndarray
    d_hat: np.ndarray  # the model's expected counts, already scaled by s = n/n'
    c_hat: np.ndarray  # the model's expected label sums, scaled by s
    d: np.ndarray  # the count targets
    c: np.ndarray  # the label-sum targets
    reg_mu: np.ndarray  # per-coordinate factor of λ_μ (0 on the intercept)
    reg_theta: np.ndarray  # per-coordinate factor of λ_θ


class UpdateScalars(NamedTuple):
    """The update's scalars (named, so that swapping two of them cannot go unnoticed)."""

    two_lam_mu: float  # 2 λ_μ
    two_lam_theta: float  # 2 λ_θ
    s: float  # one Gibbs sample's weight n/n' (the preconditioners' floor)
    gradient: int  # a GRADIENT_CODES value
    precondition: int  # a PRECONDITION_CODES value
    h_plain: float  # both preconditioners without ``precondition`` (≥ s)
    clip: float  # bound on each coordinate of the direction
    step_mu: float  # α_μ
    step_theta: float  # α_θ
    intercept: bool  # coordinate 0 is the intercept: μ_0 does not move


SMALL = 1 << 12  # coordinates below which numpy computes the same numbers


def rescaling_ratio(d_hat, d, pen_mu, gradient: int) -> np.ndarray:
    """The ratio r of the rescaled θ-gradient r·ĉ − c + 2λ_θ θ, float64 (K,): the one numpy
    formula (:func:`ratio_at` is the same per coordinate, for the kernel).

    d_hat, d, pen_mu = 2λ_μ μ: float64 (K,); gradient: a ``GRADIENT_CODES`` value.  For
    "rescaled" r = (d − 2λ_μ μ)/d̂, 1 where d̂ = 0 or d − 2λ_μ μ ≤ 0; otherwise (the paper's, and
    "true", which does not use it) r = d/d̂, 1 where d̂ = 0.
    """
    with np.errstate(all="ignore"):
        if gradient == 0:
            num = d - pen_mu
            return np.where((d_hat > 0) & (num > 0), num / d_hat, 1.0)
        return np.where(d_hat > 0, d / d_hat, 1.0)


@njit(cache=True, nogil=True, inline="always")
def ratio_at(d_hat, d, pen_mu, gradient):
    """:func:`rescaling_ratio` at one coordinate (float scalars; the same bits)."""
    if gradient == 0:
        num = d - pen_mu
        return num / d_hat if (d_hat > 0 and num > 0) else 1.0
    return d / d_hat if d_hat > 0 else 1.0


class UpdateOutputs(NamedTuple):
    """Buffers for :func:`update_pass`'s results, in its order, each float64 (K,) and
    contiguous (:func:`update_buffers`); the h arrays are written only with ``precondition``."""

    new_mu: np.ndarray
    new_theta: np.ndarray
    g_mu: np.ndarray
    g_theta: np.ndarray
    ratio: np.ndarray
    c_model: np.ndarray
    h_mu: np.ndarray
    h_theta: np.ndarray
    dir_mu: np.ndarray
    dir_theta: np.ndarray


def update_buffers(K: int) -> UpdateOutputs:
    """Ten uninitialised float64 (K,) arrays for ``update_pass(..., out=)``."""
    return UpdateOutputs(*(np.empty(K) for _ in UpdateOutputs._fields))


def update_pass(
    arrays: UpdateArrays, scalars: UpdateScalars, out: UpdateOutputs | None = None
) -> tuple:
    """:func:`update_pass_compiled`'s results; below ``SMALL`` coordinates computed by the
    numpy expressions themselves (the same bits, and nothing to compile on a first start).

    out: buffers (:func:`update_buffers`, K rows) the results are written into and
    returned as (without ``precondition`` the h arrays are returned empty, as without
    ``out``); they must not be any of ``arrays``' (an input is read after outputs of its
    coordinate are written).  None: new arrays."""
    if out is not None:
        res = update_pass(arrays, scalars) if arrays.mu.shape[0] < SMALL else None
        if res is None:
            update_pass_into(arrays, scalars, *out)
        else:
            for a, b in zip(out, res, strict=True):
                if b.shape[0]:
                    a[...] = b
        if scalars.precondition:
            return tuple(out)
        return (*out[:6], np.empty(0), np.empty(0), *out[8:])
    if arrays.mu.shape[0] >= SMALL:
        return update_pass_compiled(arrays, scalars)
    a, sc = arrays, scalars
    mu, theta, d_hat, c_hat, d, c = a.mu, a.theta, a.d_hat, a.c_hat, a.d, a.c
    two_lam_mu, two_lam_theta, s, clip = sc.two_lam_mu, sc.two_lam_theta, sc.s, sc.clip
    gradient, precondition = sc.gradient, sc.precondition
    with np.errstate(all="ignore"):
        pen = two_lam_mu * a.reg_mu * mu
        g_mu = d_hat - d + pen
        num = d - pen
        ratio = rescaling_ratio(d_hat, d, pen, gradient)
        c_model = c_hat.copy() if gradient == 2 else ratio * c_hat
        lam = two_lam_theta * a.reg_theta
        g_theta = c_model - c + lam * theta
        if gradient == 0:  # no sample in a cell the target holds: no estimate, θ waits
            g_theta = np.where((d_hat > 0) | ~(num > 0), g_theta, 0.0)
        if precondition:
            if precondition == 1:
                h_mu = d_hat + two_lam_mu * a.reg_mu
                h_theta = c_model + lam
            else:
                free_mu, free_theta = d - pen, c - lam * theta  # (as the kernel: NaN → 0)
                h_mu = np.where(free_mu > 0.0, free_mu, 0.0) + two_lam_mu * a.reg_mu
                h_theta = np.where(free_theta > 0.0, free_theta, 0.0) + lam
            h_mu = np.where(h_mu < s, s, h_mu)  # (NaN stays NaN, as in the kernel)
            h_theta = np.where(h_theta < s, s, h_theta)
            dir_mu, dir_theta = g_mu / h_mu, g_theta / h_theta
        else:
            h_mu = h_theta = np.empty(0)
            dir_mu, dir_theta = g_mu / sc.h_plain, g_theta / sc.h_plain
        dir_mu = np.where(dir_mu < -clip, -clip, np.where(dir_mu > clip, clip, dir_mu))
        dir_theta = np.where(dir_theta < -clip, -clip, np.where(dir_theta > clip, clip, dir_theta))
        if sc.intercept and mu.shape[0]:
            dir_mu[0] = 0.0
        new_mu = mu - sc.step_mu * dir_mu
        new_theta = theta - sc.step_theta * dir_theta
    return new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta


@njit(cache=True, nogil=True)
def update_pass_compiled(arrays, scalars):
    """The new (μ, θ) and every intermediate of ``mrf.pcd_update``, float64 (K,) arrays.

    arrays : :class:`UpdateArrays`;  scalars : :class:`UpdateScalars`.  Without
    ``precondition`` both preconditioners are the scalar h_plain and the returned h arrays
    are empty.  Returns (new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta,
    dir_mu, dir_theta).  The ratio is ``mrf.rescaling_ratio``'s, per coordinate.
    """
    K = arrays.mu.shape[0]
    hk = K if scalars.precondition else 0
    new_mu, new_theta, g_mu, g_theta = np.empty(K), np.empty(K), np.empty(K), np.empty(K)
    ratio, c_model, h_mu, h_theta = np.empty(K), np.empty(K), np.empty(hk), np.empty(hk)
    dir_mu, dir_theta = np.empty(K), np.empty(K)
    out = (new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta)
    update_pass_into(arrays, scalars, *out)
    return out


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def update_pass_into(
    arrays, scalars, new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu,
    dir_theta,
):  # fmt: skip
    """:func:`update_pass_compiled` writing into the ten float64 (K,) arrays of
    :class:`UpdateOutputs`, passed one by one (the h arrays unused without ``precondition``;
    numba's parallel loop computed wrong numbers when they came in one tuple)."""
    mu, theta, d_hat, c_hat = arrays.mu, arrays.theta, arrays.d_hat, arrays.c_hat
    d, c, reg_mu, reg_theta = arrays.d, arrays.c, arrays.reg_mu, arrays.reg_theta
    two_lam_mu, two_lam_theta, s = scalars.two_lam_mu, scalars.two_lam_theta, scalars.s
    gradient, precondition, h_plain = scalars.gradient, scalars.precondition, scalars.h_plain
    clip, step_mu, step_theta = scalars.clip, scalars.step_mu, scalars.step_theta
    intercept = scalars.intercept
    K = mu.shape[0]
    for k in prange(K):
        pen = two_lam_mu * reg_mu[k] * mu[k]
        gm = d_hat[k] - d[k] + pen
        r = ratio_at(d_hat[k], d[k], pen, gradient)
        cm = c_hat[k] if gradient == 2 else r * c_hat[k]
        lam = two_lam_theta * reg_theta[k]
        gt = cm - c[k] + lam * theta[k]
        if gradient == 0 and not d_hat[k] > 0 and d[k] - pen > 0:
            gt = 0.0  # no sample in a cell the target holds: θ waits
        if precondition:
            if precondition == 1:
                hm = d_hat[k] + two_lam_mu * reg_mu[k]
                ht = cm + lam
            else:
                free = d[k] - pen
                hm = (free if free > 0.0 else 0.0) + two_lam_mu * reg_mu[k]
                free = c[k] - lam * theta[k]
                ht = (free if free > 0.0 else 0.0) + lam
            hm = s if hm < s else hm  # np.maximum(·, s): NaN stays NaN
            ht = s if ht < s else ht
            h_mu[k] = hm
            h_theta[k] = ht
        else:
            hm = h_plain
            ht = h_plain
        dm = gm / hm
        dm = -clip if dm < -clip else (clip if dm > clip else dm)  # np.clip
        dt = gt / ht
        dt = -clip if dt < -clip else (clip if dt > clip else dt)
        if intercept and k == 0:
            dm = 0.0
        g_mu[k] = gm
        g_theta[k] = gt
        ratio[k] = r
        c_model[k] = cm
        dir_mu[k] = dm
        dir_theta[k] = dt
        new_mu[k] = mu[k] - step_mu * dm
        new_theta[k] = theta[k] - step_theta * dt


@njit(cache=True, nogil=True, inline="always")
def _ratio(a, k, bound):
    """|a[k]|/bound, +inf when a[k] is not finite."""
    v = abs(a[k])
    return v / bound if np.isfinite(v) else np.inf


#: chunks of :func:`_excess`'s parallel maximum
EXCESS_CHUNKS = 16
#: coordinates from which :func:`bound_excess` runs compiled (below: numpy in about a
#: millisecond, and no compile, which takes seconds, on a first start)
BOUND_COMPILED_FROM = 1 << 18


@njit(cache=True, nogil=True, parallel=True)
def _excess(a, bound):
    """(max_k |a_k|/bound, its first k): each chunk's maximum in parallel (a maximum does not
    depend on the order), then the first k that reaches it, chunk by chunk in order: the
    same (value, k) as one scan from k = 0."""
    n = a.shape[0]
    tops = np.full(EXCESS_CHUNKS, -1.0)
    for c in prange(EXCESS_CHUNKS):
        m = -1.0
        for k in range(c * n // EXCESS_CHUNKS, (c + 1) * n // EXCESS_CHUNKS):
            m = max(m, _ratio(a, k, bound))
        tops[c] = m
    top = tops.max()
    for c in range(EXCESS_CHUNKS):
        if tops[c] == top:
            for k in range(c * n // EXCESS_CHUNKS, (c + 1) * n // EXCESS_CHUNKS):
                if _ratio(a, k, bound) == top:
                    return top, k
    return top, 0


def bound_excess(mu, theta, mu_bound, theta_bound) -> tuple:
    """(max_k |θ_k|/theta_bound, its first k, max_k |μ_k|/mu_bound, its first k); a
    non-finite coordinate counts as +inf.  mu, theta float64 (K,), K ≥ 1.  Numpy below
    ``BOUND_COMPILED_FROM`` coordinates (the same numbers), else :func:`bound_excess_compiled`."""
    if mu.shape[0] >= BOUND_COMPILED_FROM:
        return bound_excess_compiled(mu, theta, mu_bound, theta_bound)
    out = []
    for a, bound in ((theta, theta_bound), (mu, mu_bound)):
        v = np.abs(a)
        with np.errstate(all="ignore"):
            v = np.where(np.isfinite(v), v / bound, np.inf)
        k = int(np.argmax(v))
        out += [float(v[k]), k]
    return tuple(out)


def bound_excess_compiled(mu, theta, mu_bound, theta_bound):
    """:func:`bound_excess` without temporaries (numba, each array's maximum in parallel)."""
    t, kt = _excess(theta, theta_bound)
    m, km = _excess(mu, mu_bound)
    return t, kt, m, km


class GaugeGroups(NamedTuple):
    """The groups of :func:`gauge_pass`, in the order they are visited.

    Group g moves the rows ``t_rows[t_ptr[g]:t_ptr[g + 1]]`` (one table's rows that share a
    value of a sub-table) up by w and the sub-table's row ``s_rows[g]`` down by w.  Groups
    of one block (a table and one of its sub-tables) are consecutive, disjoint and of one
    size: ``block_ptr`` (n_blocks + 1,) delimits them.  ``interleaved`` (n_blocks,): G > 0
    when block b's G groups are interleaved in one range of rows (group g's k-th row is
    t_rows[t_ptr[g0]] + g + k·G: a table grouped by a value of its first feature), so the
    compiled pass reads the block's rows in order (:func:`gauge_pair_compiled`); else 0.
    int64 arrays.
    """

    t_ptr: np.ndarray
    t_rows: np.ndarray
    s_rows: np.ndarray
    block_ptr: np.ndarray
    interleaved: np.ndarray


def gauge_pass(
    columns,
    targets,
    two_lam,
    regs,
    move_s,
    groups: GaugeGroups,
    compiled: bool | None = None,
    out=None,
) -> list[np.ndarray]:
    """One Gauss–Seidel pass over ``groups`` for each column j: the group's w minimises
    Σ_r λ_j reg_rj x_rj² − Σ_r x_rj target_rj along its direction e (+1 on its t rows, −1 on
    its s row): w = ⟨e, target_j − 2λ_j reg_j·x_j⟩ / (2λ_j ⟨e², reg_j⟩), 0 when the denominator
    is 0.  A column whose ``move_s`` is False keeps its s row of the intercept (row 0) and
    counts it with reg 0 (μ₀, which cancels in Z).

    columns, regs: sequences of J float64 (K,) arrays (x_j, reg_j); targets: J float64 (K,)
    arrays or None (a target of 0 on every row); two_lam: J floats, 2λ_j ≥ 0; move_s: J
    bools.  Returns J (K,) arrays: ``out``'s (J float64 (K,) arrays, none of them an input)
    or new ones; the inputs are not changed.  ``compiled``: numba (True) or numpy (False,
    the same sums in the same order: the same bits, nothing to compile, ≈ 50 µs per table
    and sub-table); None: numpy below ``SMALL`` coordinates.  Compiled, two columns go
    through :func:`gauge_pair_compiled` (both in one pass; from ``SMALL`` rows on, each
    block's groups in parallel: they are disjoint, so the bits do not depend on it).
    """
    K = columns[0].shape[0]
    out = [np.empty(K) for _ in columns] if out is None else list(out)
    zero = np.zeros(0)
    tg = [zero if t is None else np.ascontiguousarray(t, dtype=np.float64) for t in targets]
    regs = [np.ascontiguousarray(r, dtype=np.float64) for r in regs]
    use_compiled = K >= SMALL if compiled is None else compiled
    if use_compiled and len(columns) == 2:
        x0, x1 = (np.ascontiguousarray(x, dtype=np.float64) for x in columns)
        lam0, lam1 = (float(v) for v in two_lam)
        move0, move1 = (bool(v) for v in move_s)
        args = (out[0], out[1], x0, x1, tg[0], tg[1], lam0, lam1, *regs, move0, move1)
        if K >= SMALL:
            gauge_pair_compiled(*args, *groups, get_num_threads())
        else:
            gauge_pair_serial(*args, *groups)
        return out
    for o, x in zip(out, columns, strict=True):
        o[...] = x
    if groups.s_rows.shape[0] == 0:
        return out
    if use_compiled:
        for x, target, lam, reg, move in zip(out, tg, two_lam, regs, move_s, strict=True):
            gauge_column_compiled(x, target, float(lam), reg, bool(move), *groups)
        return out
    x = np.column_stack(out)
    target = np.column_stack([np.zeros(K) if t.shape[0] == 0 else t for t in tg])
    reg = np.column_stack(regs)
    move_s = np.asarray(move_s, dtype=bool)
    t_ptr, t_rows, s_rows, block_ptr, _ = groups
    lam = np.asarray(two_lam, dtype=np.float64)[None, :]
    with np.errstate(all="ignore"):
        for b in range(block_ptr.shape[0] - 1):
            g0, g1 = block_ptr[b], block_ptr[b + 1]
            rows = t_rows[t_ptr[g0] : t_ptr[g1]].reshape(g1 - g0, -1)
            sr = s_rows[g0:g1]
            r_t = reg[rows]  # (groups, rows of a group, J)
            v = target[rows] - lam[:, None, :] * r_t * x[rows]
            num, den = v[:, 0], r_t[:, 0]
            for j in range(1, rows.shape[1]):  # one after the other, as the kernel adds
                num = num + v[:, j]
                den = den + r_t[:, j]
            # the s row: moved with its reg, or (μ₀) counted with reg 0 and kept
            keep = (sr == 0)[:, None] & ~move_s[None, :]
            rs = np.where(keep, 0.0, reg[sr])
            num = num - (target[sr] - lam * rs * x[sr])
            den = (den + rs) * lam
            w = np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), 0.0)
            x[rows] += w[:, None, :]
            x[sr] -= np.where(keep, 0.0, w)
    for j, o in enumerate(out):
        o[...] = x[:, j]
    return out


@njit(cache=True, nogil=True, inline="always")
def _gauge_s_row(num, den, k, x, target, lam, reg, move_s):
    """A group's w from its t rows' sums num, den and its s row k, which it moves by −w (row
    0 kept when not ``move_s``: μ₀); returns w."""
    keep = k == 0 and not move_s
    rs = 0.0 if keep else reg[k]
    tk = target[k] if target.shape[0] > 0 else 0.0
    num = num - (tk - lam * rs * x[k])
    den = (den + rs) * lam
    w = num / den if den > 0.0 else 0.0
    if not keep:
        x[k] -= w
    return w


@njit(cache=True, nogil=True, inline="always")
def _gauge_group(g, x, target, lam, reg, move_s, t_ptr, t_rows, s_rows):
    """Group g of :func:`gauge_pass` on one column x, in place (target (0,): all 0)."""
    has_target = target.shape[0] > 0
    num = 0.0
    den = 0.0
    for i in range(t_ptr[g], t_ptr[g + 1]):
        r = t_rows[i]
        tr = target[r] if has_target else 0.0
        num = num + (tr - lam * reg[r] * x[r])
        den = den + reg[r]
    w = _gauge_s_row(num, den, s_rows[g], x, target, lam, reg, move_s)
    for i in range(t_ptr[g], t_ptr[g + 1]):
        x[t_rows[i]] += w


@njit(cache=True, nogil=True, inline="always")
def _gauge_group_pair(
    g, x0, x1, target0, target1, lam0, lam1, reg0, reg1, move0, move1, t_ptr, t_rows, s_rows
):  # fmt: skip
    """:func:`_gauge_group` on two columns in one pass over the group's rows (each column's
    sums in its own order: the same bits as one column after the other)."""
    has0 = target0.shape[0] > 0
    has1 = target1.shape[0] > 0
    num0 = den0 = num1 = den1 = 0.0
    for i in range(t_ptr[g], t_ptr[g + 1]):
        r = t_rows[i]
        tr0 = target0[r] if has0 else 0.0
        tr1 = target1[r] if has1 else 0.0
        num0 = num0 + (tr0 - lam0 * reg0[r] * x0[r])
        den0 = den0 + reg0[r]
        num1 = num1 + (tr1 - lam1 * reg1[r] * x1[r])
        den1 = den1 + reg1[r]
    w0 = _gauge_s_row(num0, den0, s_rows[g], x0, target0, lam0, reg0, move0)
    w1 = _gauge_s_row(num1, den1, s_rows[g], x1, target1, lam1, reg1, move1)
    for i in range(t_ptr[g], t_ptr[g + 1]):
        r = t_rows[i]
        x0[r] += w0
        x1[r] += w1


@njit(cache=True, nogil=True)
def gauge_column_compiled(
    x, target, lam, reg, move_s, t_ptr, t_rows, s_rows, block_ptr, interleaved
):
    """:func:`gauge_pass` on one column, in place on x (float64 (K,); target (0,): all 0),
    one group after the other (numba, serial)."""
    for g in range(s_rows.shape[0]):
        _gauge_group(g, x, target, lam, reg, move_s, t_ptr, t_rows, s_rows)


#: a block's groups run in parallel from this many rows in them on (fewer: one thread)
PARALLEL_BLOCK_ROWS = 1 << 14


@njit(cache=True, nogil=True, inline="always")
def _interleaved_sums(x, target, lam, reg, first, G, L, lo, hi, num, den):
    """num[g], den[g] of :func:`_gauge_group` for groups lo ≤ g < hi of an interleaved block
    (group g's k-th row: first + g + k·G, L rows each), reading the rows in order: each
    group's terms are added in its own order (k = 0, 1, …), so the sums are the same bits.
    (Each row of the block as contiguous slices: the loop over groups vectorises.)"""
    n = hi - lo
    nums = num[lo:hi]
    dens = den[lo:hi]
    nums[:] = 0.0
    dens[:] = 0.0
    for k in range(L):
        r0 = first + k * G + lo
        xs = x[r0 : r0 + n]
        rs = reg[r0 : r0 + n]
        if target.shape[0] > 0:
            ts = target[r0 : r0 + n]
            for i in range(n):
                nums[i] = nums[i] + (ts[i] - lam * rs[i] * xs[i])
                dens[i] = dens[i] + rs[i]
        else:
            for i in range(n):
                nums[i] = nums[i] + (0.0 - lam * rs[i] * xs[i])
                dens[i] = dens[i] + rs[i]


@njit(cache=True, nogil=True, inline="always")
def _interleaved_move(x, target, lam, reg, move_s, first, G, L, lo, hi, s_rows, g0, num, den):
    """The rest of :func:`_gauge_group` for groups lo ≤ g < hi of an interleaved block: w
    and the s row (:func:`_gauge_s_row`), then the t rows in order."""
    for g in range(lo, hi):  # num[g] becomes w
        num[g] = _gauge_s_row(num[g], den[g], s_rows[g0 + g], x, target, lam, reg, move_s)
    n = hi - lo
    ws = num[lo:hi]
    for k in range(L):
        r0 = first + k * G + lo
        xs = x[r0 : r0 + n]
        for i in range(n):
            xs[i] += ws[i]


@njit(cache=True, nogil=True, parallel=True)
def gauge_pair_compiled(
    out0, out1, x0, x1, target0, target1, lam0, lam1, reg0, reg1, move0, move1,
    t_ptr, t_rows, s_rows, block_ptr, interleaved, n_threads,
):  # fmt: skip
    """:func:`gauge_pass` on two columns (x0, x1 copied to out0, out1, then moved there in
    place), block by block; a block's groups are disjoint (and both columns independent), so
    a large block's groups run in parallel with the same bits as one after the other.  An
    interleaved block (``GaugeGroups.interleaved``) is read in row order, each thread a
    range of its groups (``n_threads`` ranges): every group's sums keep their order, so the
    bits are the same."""
    for k in prange(x0.shape[0]):
        out0[k] = x0[k]
        out1[k] = x1[k]
    for b in range(block_ptr.shape[0] - 1):
        g0, g1 = block_ptr[b], block_ptr[b + 1]
        G = interleaved[b]
        if G > 0 and t_ptr[g1] - t_ptr[g0] >= PARALLEL_BLOCK_ROWS:
            L = t_ptr[g0 + 1] - t_ptr[g0]
            first = t_rows[t_ptr[g0]]
            sums = np.empty((4, G))
            items = min(n_threads, G)
            for c in prange(items):
                lo, hi = c * G // items, (c + 1) * G // items
                _interleaved_sums(out0, target0, lam0, reg0, first, G, L, lo, hi, sums[0], sums[1])
                _interleaved_sums(out1, target1, lam1, reg1, first, G, L, lo, hi, sums[2], sums[3])
                _interleaved_move(
                    out0, target0, lam0, reg0, move0, first, G, L, lo, hi, s_rows, g0,
                    sums[0], sums[1],
                )  # fmt: skip
                _interleaved_move(
                    out1, target1, lam1, reg1, move1, first, G, L, lo, hi, s_rows, g0,
                    sums[2], sums[3],
                )  # fmt: skip
        elif t_ptr[g1] - t_ptr[g0] < PARALLEL_BLOCK_ROWS or g1 - g0 < 2:
            for g in range(g0, g1):
                _gauge_group_pair(
                    g, out0, out1, target0, target1, lam0, lam1, reg0, reg1, move0, move1,
                    t_ptr, t_rows, s_rows,
                )  # fmt: skip
        else:
            for g in prange(g0, g1):
                _gauge_group_pair(
                    g, out0, out1, target0, target1, lam0, lam1, reg0, reg1, move0, move1,
                    t_ptr, t_rows, s_rows,
                )  # fmt: skip


@njit(cache=True, nogil=True)
def gauge_pair_serial(
    out0, out1, x0, x1, target0, target1, lam0, lam1, reg0, reg1, move0, move1,
    t_ptr, t_rows, s_rows, block_ptr, interleaved,
):  # fmt: skip
    """:func:`gauge_pair_compiled` on one thread (small layouts: no thread start-up)."""
    out0[:] = x0
    out1[:] = x1
    for g in range(s_rows.shape[0]):
        _gauge_group_pair(
            g, out0, out1, target0, target1, lam0, lam1, reg0, reg1, move0, move1,
            t_ptr, t_rows, s_rows,
        )  # fmt: skip


# ------------------------------------------------------- the trainer's other (K,) passes
def momentum_step(theta, new_theta, velocity, beta: float, v_out, theta_out) -> None:
    """The heavy ball on θ: v_out = β·velocity + (new_theta − theta), theta_out = theta +
    v_out, element by element (numpy's two expressions, the same bits).  Float64 (K,)
    arrays; theta_out may be new_theta (each coordinate is read before it is written), v_out
    none of the inputs.  numba in parallel from ``SMALL`` coordinates, else numpy."""
    if theta.shape[0] >= SMALL:
        _momentum_compiled(theta, new_theta, velocity, float(beta), v_out, theta_out)
        return
    with np.errstate(all="ignore"):
        v_out[...] = beta * velocity + (new_theta - theta)
        theta_out[...] = theta + v_out


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _momentum_compiled(theta, new_theta, velocity, beta, v_out, theta_out):
    for k in prange(theta.shape[0]):
        v = beta * velocity[k] + (new_theta[k] - theta[k])
        v_out[k] = v
        theta_out[k] = theta[k] + v


def average_step(bar, x, w: float) -> None:
    """bar += w·(x − bar) in place (numpy's expression element by element, the same bits);
    float64 (K,) arrays.  numba in parallel from ``SMALL`` coordinates, else numpy."""
    if bar.shape[0] >= SMALL:
        _average_compiled(bar, x, float(w))
        return
    with np.errstate(all="ignore"):
        bar += w * (x - bar)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _average_compiled(bar, x, w):
    for k in prange(bar.shape[0]):
        bar[k] = bar[k] + w * (x[k] - bar[k])
