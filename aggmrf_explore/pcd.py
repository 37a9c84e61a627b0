"""The pure PCD update (steps 3–5 of :mod:`.mrf`'s docstring) and the divergence check.

:func:`pcd_update` maps (μ, θ), the scaled chain statistics (d̂, ĉ) and the targets (d, c)
to the new (μ, θ) and every intermediate quantity (:class:`Update`): no state, no checks.
:func:`gauge_step` then minimises the objective exactly along the directions that leave the
model unchanged (:func:`gauge_groups`).
:func:`divergence` says whether a step is acceptable (every new μ, θ finite, |θ| ≤
``THETA_BOUND``, |μ| ≤ ``MU_BOUND``) and, if not, its likely cause in words.  The trainer
(:class:`.mrf.PCDTrainer`) calls both once per iteration, and starts from
:func:`initial_parameters` and a chain drawn from :func:`initial_marginals`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kernels.update import (
    GRADIENT_CODES,
    PRECONDITION_CODES,
    GaugeGroups,
    UpdateArrays,
    UpdateOutputs,
    UpdateScalars,
    bound_excess,
    gauge_pass,
    update_pass,
)
from .kernels.update import rescaling_ratio as kernel_ratio  # (pcd's takes the gradient's name)
from .tables import TableLayout

__all__ = [
    "Params",
    "Targets",
    "Penalty",
    "Update",
    "rescaling_ratio",
    "pcd_update",
    "divergence",
    "GaugeGroups",
    "gauge_groups",
    "gauge_step",
    "gauge_free",
    "initial_marginals",
    "initial_parameters",
    "THETA_BOUND",
    "MU_BOUND",
]

THETA_BOUND = 50.0  # a step taking some |θ| past this is rejected as divergent
MU_BOUND = 200.0  # likewise for |μ|


# ---------------------------------------------------------------------- the pure update
class Params(NamedTuple):
    """The MRF's parameters: μ and θ, float64 arrays of shape (K,)."""

    mu: np.ndarray
    theta: np.ndarray


class Targets(NamedTuple):
    """What the chain statistics are matched to: counts d and label sums c, shape (K,)."""

    d: np.ndarray
    c: np.ndarray


class Penalty(NamedTuple):
    """The fixed parts of the update that come from the layout and the sample size.

    reg_mu, reg_theta: (K,) masks, 1 where λ_μ / λ_θ apply, 0 on the intercept row (θ₀:
    1 on raw noisy tables, ``PCDTrainer``);
    intercept: whether row 0 is the intercept (its μ never moves);
    s: n / n', the weight of one Gibbs sample (the preconditioners' floor);
    h_plain: n·n_tables / K, the common preconditioner when ``precondition=False``.
    """

    reg_mu: np.ndarray
    reg_theta: np.ndarray
    intercept: bool
    s: float
    h_plain: float


class Update(NamedTuple):
    """One PCD update: the new parameters and every intermediate quantity (each (K,)).

    g_mu, g_theta: gradients;  ratio: r of :func:`rescaling_ratio` (with fallbacks);  c_model:
    the model's label sums in g_θ (r·ĉ for the rescaled gradients, ĉ for the true one);  h_mu,
    h_theta:
    preconditioners (floored at s; a scalar without preconditioning);  dir_mu, dir_theta:
    the clipped directions (dir_mu = 0 on the intercept).
    """

    params: Params
    g_mu: np.ndarray
    g_theta: np.ndarray
    ratio: np.ndarray
    c_model: np.ndarray
    h_mu: np.ndarray | float
    h_theta: np.ndarray | float
    dir_mu: np.ndarray
    dir_theta: np.ndarray


def rescaling_ratio(
    d_hat: np.ndarray, d: np.ndarray, pen_mu: np.ndarray, gradient: str
) -> np.ndarray:
    """The coordinate-wise ratio r of the rescaled θ-gradient r·ĉ − c + 2λ_θ θ; shape (K,).

    d_hat: d̂; d: the count targets; pen_mu: 2λ_μ μ (0 on the intercept), each (K,).

    - ``"rescaled"`` (the default): r = (d − 2λ_μ μ) / d̂, the μ-update's own target over d̂.  It
      is exactly 1 at the fixed point of μ (where d̂ = d − 2λ_μ μ), so the fixed point of θ
      is the exact regularised optimum E[C] = c − 2λ_θ θ.  Fallback: r = 1 (the true
      gradient, which has the same fixed point) wherever d̂ = 0 or d − 2λ_μ μ ≤ 0.
    - ``"rescaled-paper"`` (the paper's eq. 6): r = d / d̂, and r = 1 where
      d̂ = 0.  At μ's fixed point r = d / (d − 2λ_μ μ) ≠ 1 when λ_μ > 0: its θ-optimum is
      biased by O(λ_μ / n).
    - ``"true"``: the ratio is not used (returned as for the paper's, for plots).
    """
    return kernel_ratio(d_hat, d, pen_mu, GRADIENT_CODES[gradient])


def pcd_update(
    params: Params,
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    targets: Targets,
    settings,
    penalty: Penalty,
    out: UpdateOutputs | None = None,
) -> Update:
    """Steps 3–5 of :mod:`.mrf`'s docstring: the new (μ, θ) from the scaled chain statistics.

    d_hat, c_hat: d̂ = s Σ φ(x̃), ĉ = s Σ σ(φ(x̃)·θ) φ(x̃), shape (K,);  targets: (d, c);
    settings: a :class:`.mrf.TrainerSettings` (its λ, α, gradient, precondition,
    preconditioner and clip); out: buffers for the result's ten arrays
    (:func:`.kernels.update.update_buffers`, none of them an argument), or None for new
    arrays.
    Pure: reads its arguments, writes nothing but ``out``; the result may be non-finite
    (the caller checks).
    """
    st, mu, theta = settings, params.mu, params.theta
    s = penalty.s
    h_plain = max(penalty.h_plain, s)
    # one pass over the K coordinates (kernels.update): the numpy expressions of this
    # docstring's steps, same operations in the same order, without (K,) temporaries
    inputs = (mu, theta, d_hat, c_hat, targets.d, targets.c, penalty.reg_mu, penalty.reg_theta)
    arrays = UpdateArrays(*(np.ascontiguousarray(a, dtype=np.float64) for a in inputs))
    scalars = UpdateScalars(
        two_lam_mu=float(2.0 * st.lambda_mu),
        two_lam_theta=float(2.0 * st.lambda_theta),
        s=float(s),
        gradient=GRADIENT_CODES[st.gradient],
        precondition=PRECONDITION_CODES[st.preconditioner if st.precondition else "none"],
        h_plain=float(h_plain),
        clip=float(st.clip),
        step_mu=float(st.step_mu),
        step_theta=float(st.step_theta),
        intercept=bool(penalty.intercept),
    )
    new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta = (
        update_pass(arrays, scalars, out)
    )
    if not st.precondition:
        h_mu = h_theta = h_plain
    new = Params(new_mu, new_theta)
    return Update(new, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta)


def gauge_groups(layout: TableLayout, boxed: np.ndarray | None = None) -> GaugeGroups:
    """The directions along which the model does not change, as groups of rows.

    For a table t and a feature f of t whose sub-table s = t ∖ {f} is also in the layout
    (the intercept is the sub-table of a single table), adding w to every row of t with a
    given value a of s and subtracting w from row a of s leaves φ(x)·μ and φ(x)·θ unchanged
    for every x: π(x, y) and P(Y=1 | x) do not move.  Along such a direction e the
    objective log Z − μ·d − θ·c + λ‖μ‖² + λ‖θ‖² is the penalty and the targets alone:
    its curvature is 2λ‖e‖², not the preconditioner's h ≈ d, so the preconditioned step
    relaxes it at α·2λ/d per iteration (slower as n grows; docs/out_of_sample.md), while
    :func:`gauge_step` solves it exactly.  For layouts holding every sub-table of their
    tables (singles and pairs, with the intercept) the groups span all such directions.

    Hashed tables are left out (a hashed row mixes values); so is every group with a row of
    ``boxed`` (bool (K,), e.g. suppressed or folded rows: their objective is piecewise
    there).  The groups of μ's intercept are the same; :func:`gauge_step` does not move μ₀.
    Without the intercept the single tables have no sub-table: their groups are absent.
    """
    tables = layout.tables
    index = {t: i for i, t in enumerate(tables)}
    M = layout.n_modalities
    t_ptr, t_rows, s_rows, block_ptr, interleaved = [0], [], [], [0], []
    for ti, t in enumerate(tables):
        if not t or layout.is_hashed(ti):
            continue
        rows_t = np.arange(layout.offsets[ti], layout.offsets[ti + 1]).reshape([M[f] for f in t])
        for j, f in enumerate(t):
            si = index.get(tuple(g for g in t if g != f))
            if si is None or layout.is_hashed(si):
                continue
            # rows of t grouped by the value of s: axis j last, one group per row of s
            grouped = np.moveaxis(rows_t, j, -1).reshape(-1, int(M[f]))
            s_of = np.arange(layout.offsets[si], layout.offsets[si + 1])
            keep = np.ones(len(s_of), dtype=bool)
            if boxed is not None:
                keep = ~(boxed[grouped].any(axis=1) | boxed[s_of])
            if not keep.any():
                continue
            kept = grouped[keep]
            for g in kept:
                t_rows.extend(g.tolist())
                t_ptr.append(len(t_rows))
            s_rows.extend(s_of[keep].tolist())
            block_ptr.append(len(s_rows))
            # group g's k-th row first + g + k·G (all G groups kept, rows in one range)
            G = len(kept)
            step = kept[0, 0] + np.arange(G)[:, None] + G * np.arange(kept.shape[1])[None, :]
            interleaved.append(G if G > 1 and np.array_equal(kept, step) else 0)
    return GaugeGroups(
        np.asarray(t_ptr, dtype=np.int64),
        np.asarray(t_rows, dtype=np.int64),
        np.asarray(s_rows, dtype=np.int64),
        np.asarray(block_ptr, dtype=np.int64),
        np.asarray(interleaved, dtype=np.int64),
    )


def gauge_step(
    params: Params,
    targets: Targets,
    settings,
    penalty: Penalty,
    groups: GaugeGroups,
    n: float,
    compiled: bool | None = None,
    out: Params | None = None,
) -> Params:
    """(μ, θ) moved to the exact minimum of the objective along the directions of
    ``groups`` (:func:`gauge_groups`), one Gauss–Seidel pass each: the model's π(x, y) and
    P(Y=1 | x) are unchanged (up to rounding), only the split of the same model between a
    table and its sub-tables.  Along a direction e the model's part of the gradient is 0
    (⟨e, d̂⟩ = ⟨e, ĉ⟩ = 0: every table sums to its sub-tables), so the minimum is
    w = ⟨e, target − 2λ·reg·x⟩ / (2λ⟨e², reg⟩), with targets (d, c) and, for μ, the model's
    count n on the intercept (μ₀ cancels in Z and does not move; θ₀ does).  It leaves the
    fixed point of the update unchanged (there ⟨e, g⟩ = 0 already), and only there is the
    whole gradient 0 on inconsistent (noisy) targets: a diagonal preconditioner turns a
    gradient left along these directions into a move of the model.  ``compiled``: as
    :func:`.kernels.update.gauge_pass` (the same bits either way).  Pure: new arrays, or
    ``out``'s (two float64 (K,) arrays, neither of them an argument)."""
    target_mu = np.array(targets.d, dtype=np.float64, copy=True)
    if penalty.intercept:
        target_mu[0] = n  # the model's count of the intercept row: ⟨e, d̂⟩ = 0
    two_lam = (2.0 * settings.lambda_mu, 2.0 * settings.lambda_theta)
    return _gauge_pass(params, (target_mu, targets.c), two_lam, penalty, groups, compiled, out)


def gauge_free(
    params: Params,
    penalty: Penalty,
    groups: GaugeGroups,
    compiled: bool | None = None,
    out: Params | None = None,
) -> Params:
    """The same model with its parameters moved towards the smallest ‖μ‖², ‖θ‖² along the
    directions of ``groups`` (one pass of :func:`gauge_step` without targets): what the
    divergence check bounds when the gauge step is on.  At the regularised optimum of
    inconsistent (noisy) targets the parameters carry the inconsistency along these
    directions, ⟨e, target⟩/(2λ‖e²‖), whatever its size (σ = 600 on a small release:
    |θ₀| ≈ 200), and the model does not change with it; the bound is for the model.
    ``compiled``, ``out``: as :func:`gauge_step`'s."""
    return _gauge_pass(params, (None, None), (2.0, 2.0), penalty, groups, compiled, out)


def _gauge_pass(params, targets, two_lam, penalty, groups, compiled, out=None) -> Params:
    """:func:`.kernels.update.gauge_pass` on the columns (μ, θ), each a (K,) array (no
    (K, 2) copies: at 5.7·10⁶ rows they cost more than the pass)."""
    # μ₀ cancels in Z: kept (without the intercept row 0 is a table's row, moved)
    move = (not penalty.intercept, True)
    regs = (penalty.reg_mu, penalty.reg_theta)
    mu, theta = gauge_pass(
        (params.mu, params.theta), targets, two_lam, regs, move, groups, compiled, out
    )
    return Params(mu, theta)


def divergence(upd: Update, targets: Targets, settings, layout: TableLayout) -> str:
    """'' when the step ``upd`` is acceptable, else what went wrong and its likely cause.

    Acceptable: every new μ, θ finite, |θ| ≤ THETA_BOUND and |μ| ≤ MU_BOUND.  The likely cause
    is read off the worst coordinate k: a θ (μ) whose cell has c = 0 or c = d (d ≤ 0), with a
    penalty too weak to hold it inside the bound (|θ| ≤ d/(2λ_θ) at the optimum), needs a
    larger λ; otherwise the step α·|direction| was too large for it: reduce α.
    ``settings``: the :class:`.mrf.TrainerSettings` that made the step.
    """
    mu, theta = upd.params
    # max |θ|/bound, |μ|/bound (non-finite = inf) and their first positions, in one pass
    top_t, k_t, top_m, k_m = bound_excess(
        np.ascontiguousarray(mu, dtype=np.float64),
        np.ascontiguousarray(theta, dtype=np.float64),
        MU_BOUND,
        THETA_BOUND,
    )
    if max(top_t, top_m) <= 1.0:
        return ""
    is_theta = top_t >= top_m
    k = int(k_t if is_theta else k_m)
    value = (theta if is_theta else mu)[k]
    t = layout.tables[int(np.searchsorted(layout.offsets, k, side="right")) - 1]
    where = f"row {k} of table {layout.table_name(t)}"
    d, c = targets.d[k], targets.c[k]
    if is_theta:
        what = f"θ[{k}] ({where}) became {value:.3g}."
        lam, alpha, name = settings.lambda_theta, settings.step_theta, "θ"
        extreme = c <= 0 or c >= d
        held = 2.0 * lam * THETA_BOUND > max(d, 0.0)
        cell = "no positive label" if c <= 0 else "only positive labels"
    else:
        what = f"μ[{k}] ({where}) became {value:.3g}."
        lam, alpha, name = settings.lambda_mu, settings.step_mu, "μ"
        extreme, held, cell = d <= 0, 2.0 * lam * MU_BOUND > 1.0, "no record"
    step = abs((upd.dir_theta if is_theta else upd.dir_mu)[k]) * alpha
    if extreme and not held:
        return (
            f"{what} Likely cause: its cell has {cell}, and λ_{name} = {lam:g} is too weak to "
            f"hold it; increase λ_{name}."
        )
    out = (
        f"{what} Likely cause: the step size α_{name} = {alpha:g} is too large (this step "
        f"moved it by {step:.3g}); reduce α_{name}."
    )
    if not is_theta and np.isfinite(value):
        # the model's count of the row before this step: g_μ = d̂ − d + 2λ_μ μ_old
        mu_old = value + alpha * upd.dir_mu[k]
        d_hat = upd.g_mu[k] + d - 2.0 * lam * mu_old
        if abs(d_hat - d) > 0.1 * max(abs(d), 1.0):
            out += (
                f" Or, if μ[{k}] climbed steadily: the model's count of this row is "
                f"{d_hat:.6g} against its target {d:.6g}, and the other tables hold it "
                "there; they contradict this row (an inconsistent release, e.g. folded "
                "values whose pair rows miss their suppressed cells), and a smaller α only "
                "delays this."
            )
    return out


def initial_marginals(layout: TableLayout, d: np.ndarray) -> list[np.ndarray]:
    """The chain's starting distribution of each feature: its modality frequencies (+ ½ each)
    in the first exact table holding it, from the counts d (float (K,)); uniform for a
    feature held by hashed tables only.  One float64 (M_f,) array per feature, summing to 1."""
    out = []
    for f in range(layout.n_features):
        ti = next(
            (i for i, t in enumerate(layout.tables) if f in t and not layout.is_hashed(i)), None
        )
        if ti is None:
            out.append(np.full(layout.n_modalities[f], 1.0 / layout.n_modalities[f]))
            continue
        t = layout.tables[ti]
        block = d[layout.offsets[ti] : layout.offsets[ti + 1]].reshape(
            [layout.n_modalities[g] for g in t]
        )
        counts = block.sum(axis=tuple(j for j, g in enumerate(t) if g != f)) + 0.5
        out.append(counts / counts.sum())
    return out


def initial_parameters(layout: TableLayout, targets: Targets) -> tuple[np.ndarray, np.ndarray]:
    """The trainer's starting (μ, θ), float64 (K,) each: μ the single tables' log-frequencies
    (counts + ½), θ = 0 but the intercept's, at the base rate's log-odds."""
    mu = np.zeros(layout.K)
    theta = np.zeros(layout.K)
    for ti, t in enumerate(layout.tables):
        if len(t) == 1:
            sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
            counts = targets.d[sl] + 0.5
            mu[sl] = np.log(counts / counts.sum())
    if layout.intercept:
        rate = (targets.c[0] + 0.5) / (targets.d[0] + 1.0)
        theta[0] = np.log(rate / (1.0 - rate))
    return mu, theta
