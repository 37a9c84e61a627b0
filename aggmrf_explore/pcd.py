"""The pure PCD update (steps 3–5 of :mod:`.mrf`'s docstring) and the divergence check.

:func:`pcd_update` maps (μ, θ), the scaled chain statistics (d̂, ĉ) and the targets (d, c)
to the new (μ, θ) and every intermediate quantity (:class:`Update`): no state, no checks.
:func:`divergence` says whether a step is acceptable (every new μ, θ finite, |θ| ≤
``THETA_BOUND``, |μ| ≤ ``MU_BOUND``) and, if not, its likely cause in words.  The trainer
(:class:`.mrf.PCDTrainer`) calls both once per iteration.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kernels.update import (
    GRADIENT_CODES,
    PRECONDITION_CODES,
    UpdateArrays,
    UpdateScalars,
    bound_excess,
    update_pass,
)
from .tables import TableLayout

__all__ = [
    "Params",
    "Targets",
    "Penalty",
    "Update",
    "rescaling_ratio",
    "pcd_update",
    "divergence",
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

    reg_mu, reg_theta: (K,) masks, 1 where λ_μ / λ_θ apply, 0 on the intercept row;
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
    if gradient == "rescaled":
        num = d - pen_mu
        ok = (d_hat > 0) & (num > 0)
        return np.divide(num, d_hat, out=np.ones_like(d_hat), where=ok)
    return np.divide(d, d_hat, out=np.ones_like(d_hat), where=d_hat > 0)


def pcd_update(
    params: Params,
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    targets: Targets,
    settings,
    penalty: Penalty,
) -> Update:
    """Steps 3–5 of :mod:`.mrf`'s docstring: the new (μ, θ) from the scaled chain statistics.

    d_hat, c_hat: d̂ = s Σ φ(x̃), ĉ = s Σ σ(φ(x̃)·θ) φ(x̃), shape (K,);  targets: (d, c);
    settings: a :class:`.mrf.TrainerSettings` (its λ, α, gradient, precondition,
    preconditioner and clip).
    Pure: reads its arguments, writes nothing; the result may be non-finite (the caller
    checks).
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
        update_pass(arrays, scalars)
    )
    if not st.precondition:
        h_mu = h_theta = h_plain
    new = Params(new_mu, new_theta)
    return Update(new, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta)


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
