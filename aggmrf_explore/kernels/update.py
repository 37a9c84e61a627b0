"""The PCD update's elementwise work in one pass over the K coordinates.

:func:`aggmrf_explore.mrf.pcd_update` is a chain of elementwise numpy expressions; written
with numpy, each makes a (K,) temporary (about thirty of them, ≈ 1.5 s per iteration at
K = 5.7·10⁶ rows).  :func:`update_pass` computes the same expressions per coordinate, in the
same order of operations (IEEE double, no contraction, no reassociation: the results are bit
for bit those of the numpy expressions, ``tests/test_update.py`` checks it), in parallel
over coordinates (each is independent: thread-count independent).  :func:`bound_excess`
is the divergence check's reduction (the largest |θ|/bound and |μ|/bound and their first
positions) without temporaries.  :func:`gauge_pass` is one Gauss–Seidel pass of the exact
minimisation along the directions that leave the model unchanged (``pcd.gauge_step``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

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


def update_pass(arrays: UpdateArrays, scalars: UpdateScalars) -> tuple:
    """:func:`update_pass_compiled`'s results; below ``SMALL`` coordinates computed by the
    numpy expressions themselves (the same bits, and nothing to compile on a first start)."""
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


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def update_pass_compiled(arrays, scalars):
    """The new (μ, θ) and every intermediate of ``mrf.pcd_update``, float64 (K,) arrays.

    arrays : :class:`UpdateArrays`;  scalars : :class:`UpdateScalars`.  Without
    ``precondition`` both preconditioners are the scalar h_plain and the returned h arrays
    are empty.  Returns (new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta,
    dir_mu, dir_theta).  The ratio is ``mrf.rescaling_ratio``'s, per coordinate.
    """
    mu, theta, d_hat, c_hat = arrays.mu, arrays.theta, arrays.d_hat, arrays.c_hat
    d, c, reg_mu, reg_theta = arrays.d, arrays.c, arrays.reg_mu, arrays.reg_theta
    two_lam_mu, two_lam_theta, s = scalars.two_lam_mu, scalars.two_lam_theta, scalars.s
    gradient, precondition, h_plain = scalars.gradient, scalars.precondition, scalars.h_plain
    clip, step_mu, step_theta = scalars.clip, scalars.step_mu, scalars.step_theta
    intercept = scalars.intercept
    K = mu.shape[0]
    new_mu = np.empty(K)
    new_theta = np.empty(K)
    g_mu = np.empty(K)
    g_theta = np.empty(K)
    ratio = np.empty(K)
    c_model = np.empty(K)
    hk = K if precondition else 0
    h_mu = np.empty(hk)
    h_theta = np.empty(hk)
    dir_mu = np.empty(K)
    dir_theta = np.empty(K)
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
    return new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta


@njit(cache=True, nogil=True)
def _excess(a, bound):
    top = -1.0
    at = 0
    for k in range(a.shape[0]):
        v = abs(a[k])
        v = v / bound if np.isfinite(v) else np.inf
        if v > top:
            top = v
            at = k
    return top, at


def bound_excess(mu, theta, mu_bound, theta_bound) -> tuple:
    """(max_k |θ_k|/theta_bound, its first k, max_k |μ_k|/mu_bound, its first k); a
    non-finite coordinate counts as +inf.  mu, theta float64 (K,), K ≥ 1.  Numpy below
    ``SMALL`` coordinates (the same numbers), else :func:`bound_excess_compiled`."""
    if mu.shape[0] >= SMALL:
        return bound_excess_compiled(mu, theta, mu_bound, theta_bound)
    out = []
    for a, bound in ((theta, theta_bound), (mu, mu_bound)):
        v = np.abs(a)
        with np.errstate(all="ignore"):
            v = np.where(np.isfinite(v), v / bound, np.inf)
        k = int(np.argmax(v))
        out += [float(v[k]), k]
    return tuple(out)


@njit(cache=True, nogil=True)
def bound_excess_compiled(mu, theta, mu_bound, theta_bound):
    """:func:`bound_excess` in one pass without temporaries (numba)."""
    t, kt = _excess(theta, theta_bound)
    m, km = _excess(mu, mu_bound)
    return t, kt, m, km


class GaugeGroups(NamedTuple):
    """The groups of :func:`gauge_pass`, in the order they are visited.

    Group g moves the rows ``t_rows[t_ptr[g]:t_ptr[g + 1]]`` (one table's rows that share a
    value of a sub-table) up by w and the sub-table's row ``s_rows[g]`` down by w.  Groups
    of one block (a table and one of its sub-tables) are consecutive, disjoint and of one
    size: ``block_ptr`` (n_blocks + 1,) delimits them.  int64 arrays.
    """

    t_ptr: np.ndarray
    t_rows: np.ndarray
    s_rows: np.ndarray
    block_ptr: np.ndarray


def gauge_pass(
    columns, targets, two_lam, regs, move_s, groups: GaugeGroups, compiled: bool | None = None
) -> list[np.ndarray]:
    """One Gauss–Seidel pass over ``groups`` for each column j: the group's w minimises
    Σ_r λ_j reg_rj x_rj² − Σ_r x_rj target_rj along its direction e (+1 on its t rows, −1 on
    its s row): w = ⟨e, target_j − 2λ_j reg_j·x_j⟩ / (2λ_j ⟨e², reg_j⟩), 0 when the denominator
    is 0.  A column whose ``move_s`` is False keeps its s row of the intercept (row 0) and
    counts it with reg 0 (μ₀, which cancels in Z).

    columns, targets, regs: sequences of J float64 (K,) arrays (x_j, target_j, reg_j);
    two_lam: J floats, 2λ_j ≥ 0; move_s: J bools.  Returns J new (K,) arrays; the inputs are
    not changed.  ``compiled``: use :func:`gauge_column_compiled` on each column (True) or
    numpy (False, the same sums in the same order: the same bits, nothing to compile,
    ≈ 50 µs per table and sub-table); None: numpy below ``SMALL`` coordinates.
    """
    out = [np.array(x, dtype=np.float64, copy=True) for x in columns]
    if groups.s_rows.shape[0] == 0:
        return out
    if out[0].shape[0] >= SMALL if compiled is None else compiled:
        for x, target, lam, reg, move in zip(out, targets, two_lam, regs, move_s, strict=True):
            gauge_column_compiled(
                x,
                np.ascontiguousarray(target, dtype=np.float64),
                float(lam),
                np.ascontiguousarray(reg, dtype=np.float64),
                bool(move),
                *groups,
            )
        return out
    x = np.column_stack(out)
    target = np.column_stack(targets).astype(np.float64)
    reg = np.column_stack(regs).astype(np.float64)
    move_s = np.asarray(move_s, dtype=bool)
    t_ptr, t_rows, s_rows, block_ptr = groups
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
    return [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]


@njit(cache=True, nogil=True)
def gauge_column_compiled(x, target, lam, reg, move_s, t_ptr, t_rows, s_rows, block_ptr):
    """:func:`gauge_pass` on one column, in place on x (float64 (K,)), one group after the
    other (numba, serial: a pass over 5.7·10⁶ rows takes ≈ 0.1 s, far below the sweep)."""
    for g in range(s_rows.shape[0]):
        num = 0.0
        den = 0.0
        for i in range(t_ptr[g], t_ptr[g + 1]):
            r = t_rows[i]
            num = num + (target[r] - lam * reg[r] * x[r])
            den = den + reg[r]
        k = s_rows[g]
        keep = k == 0 and not move_s
        rs = 0.0 if keep else reg[k]
        num = num - (target[k] - lam * rs * x[k])
        den = (den + rs) * lam
        w = num / den if den > 0.0 else 0.0
        for i in range(t_ptr[g], t_ptr[g + 1]):
            x[t_rows[i]] += w
        if not keep:
            x[k] -= w
