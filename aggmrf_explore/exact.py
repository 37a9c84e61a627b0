"""Exact max-ent fit by enumeration, for small state spaces (toy, XOR, synthetic).

Minimises the convex objective  F(μ, θ) = n log Z − μ·d − θ·c + λ_μ‖μ‖² + λ_θ‖θ‖²
(intercept unpenalised) with L-BFGS, where Z = Σ_x exp(φ(x)·μ) (1 + exp(φ(x)·θ)) is
computed over every x ∈ Π_f {0..M_f−1}.  Its gradient is Lemma 2 plus the penalty:
∇_μ = E[D] − d + 2λ_μ μ,  ∇_θ = E[C] − c + 2λ_θ θ.

This is the objective the PCD trainer (``mrf.PCDTrainer``) minimises with the same λ_μ,
λ_θ and the same intercept handling (row 0 unpenalised in both μ and θ; μ_0 cancels in Z, so
the trainer keeps it fixed while here it is a flat direction): ``mrf.pcd_update`` with
exact expectations has g_μ = ∇_μ and, at μ's fixed point, g_θ = ∇_θ for the unbiased and the
true gradient (tested in tests/test_exact.py).  The targets are the projected aggregates
d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺) as in the trainer, or the raw ones (``targets="raw"``).

Suppressed rows (``box=True``): a row absent from a release because its true count is at
most k is the box constraint 0 ≤ d ≤ k (k·S_r for a row of S_r folded source cells).  In the
dual its targets d and c are the bound and its μ_r, θ_r are constrained ≤ 0 (L-BFGS-B with
bounds).  A listed row that misses suppressed source cells (``suppression.slack`` > 0:
folded values) is a two-sided box lo ≤ d ≤ hi around its listed (projected) value, and
likewise its label sum (``suppression.folded_bounds``, widened by the listed sum's noise
as the PCD trainer's): its dual term −min_{t ∈ [lo, hi]} μ·t is
piecewise linear, so μ_r = μ_r⁺ + μ_r⁻ is split into μ_r⁺ ≥ 0 with target lo and μ_r⁻ ≤ 0
with target hi (θ_r likewise; the objective stays smooth, the bounds are L-BFGS-B's), and the
model's μ_r is their sum.  :mod:`aggmrf_explore.tables.suppression` describes the constraints
and the PCD counterpart.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

from .errors import AggMRFError
from .mrf import MRFModel
from .tables import AggregatedData, TableLayout
from .tables.suppression import folded_bounds, row_noise_sd

__all__ = [
    "MAX_STATES",
    "all_states",
    "dual_objective",
    "expected_statistics",
    "fit_exact",
    "state_probabilities",
]

MAX_STATES = 2**20


def all_states(layout: TableLayout) -> np.ndarray:
    """Every x of the state space as codes, shape (Π M_f, D), in row-major order."""
    total = int(np.prod(layout.n_modalities.astype(float)))
    if total > MAX_STATES:
        raise AggMRFError(
            f"the state space has {total:.3g} states; exact enumeration is limited to {MAX_STATES} "
            "(2^20). Use the PCD trainer for larger problems."
        )
    grids = np.meshgrid(*[np.arange(m) for m in layout.n_modalities], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int32)


def _rows(layout: TableLayout) -> np.ndarray:
    return layout.rows(all_states(layout))


def state_probabilities(
    layout: TableLayout, mu: np.ndarray, theta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """π(x) (shape (S,)) and P(Y=1 | x) (shape (S,)) for every state x of all_states(layout)."""
    rows = _rows(layout)
    a = mu[rows].sum(axis=1)
    b = theta[rows].sum(axis=1)
    log_px = a + np.logaddexp(0.0, b)
    px = np.exp(log_px - logsumexp(log_px))
    return px, expit(b)


def expected_statistics(
    layout: TableLayout, mu: np.ndarray, theta: np.ndarray, n: float
) -> tuple[np.ndarray, np.ndarray]:
    """E[D] and E[C] (each shape (K,)) for n records drawn from π_{μ,θ}, exactly."""
    rows = _rows(layout)
    px, p1 = state_probabilities(layout, mu, theta)
    T = rows.shape[1]
    Ed = np.bincount(rows.ravel(), weights=np.repeat(n * px, T), minlength=layout.K)
    Ec = np.bincount(rows.ravel(), weights=np.repeat(n * px * p1, T), minlength=layout.K)
    return Ed, Ec


def fit_exact(
    data: AggregatedData,
    lambda_mu: float = 0.0,
    lambda_theta: float = 0.0,
    tol: float = 1e-12,
    max_iter: int = 5000,
    targets: str = "projected",
    box: bool = False,
) -> MRFModel:
    """The exact (regularised) max-ent MRF for aggregated data; returns an MRFModel.

    With λ = 0 the optimum matches the data exactly: E[D] = d and E[C] = c (Lemma 2).
    d and c may be fractional (e.g. expected counts of an infinite-data limit with n = 1).
    targets: "projected" (the trainer's default) or "raw" (noisy values as released, as
    ``TrainerSettings(targets="raw")``; needs λ > 0 where a raw value is negative).
    box: False (default): the suppressed rows of ``data.suppression`` count as the zeros
    stored in d and c (and folded rows as their listed values); True: they are box
    constraints, 0 ≤ d ≤ bound on absent rows (targets the bound, μ_r and θ_r ≤ 0) and
    listed ≤ d ≤ listed + slack on folded rows (see the module docstring).  Without
    suppression both solve the same problem.
    Small state spaces only (:func:`all_states`: ≤ 2^20 states).
    """
    lay = data.layout
    if lambda_mu < 0 or lambda_theta < 0 or not np.isfinite(lambda_mu + lambda_theta):
        raise AggMRFError("lambda_mu and lambda_theta must be finite and ≥ 0.")
    rows = _rows(lay)
    K = lay.K
    n = float(data.n) if data.meta.get("n_exact") is None else float(data.meta["n_exact"])
    if targets not in ("projected", "raw"):
        raise AggMRFError(f"targets must be 'projected' or 'raw'; got {targets!r}.")
    # noisy aggregates: d⁺ = max(d, 0), c⁺ = clip(c, 0, d⁺) unless raw
    fitted = data if targets == "raw" else data.projected()
    d, c = fitted.d, fitted.c
    suppression = data.suppression if box else None
    bounds = [(None, None)] * (2 * K) if box else None
    folded = np.zeros(0, dtype=np.int64)
    if suppression is not None:
        d, c = d.copy(), c.copy()
        d[suppression.rows] = suppression.bound[suppression.rows]
        c[suppression.rows] = suppression.bound[suppression.rows]
        for r in np.flatnonzero(suppression.rows):
            bounds[r] = bounds[K + r] = (None, 0.0)
        folded = np.flatnonzero(suppression.slack)
    reg_mu = np.full(K, float(lambda_mu))
    reg_theta = np.full(K, float(lambda_theta))
    if lay.intercept:
        reg_mu[0] = reg_theta[0] = 0.0

    if folded.size:
        # folded rows: μ_r, θ_r ≥ 0 aim at the lower bounds, the extra variables μ⁻, θ⁻ ≤ 0
        # at the upper ones (_split_objective); the model's μ_r is μ_r + μ⁻_r
        fb = folded_bounds(suppression, d, c, row_noise_sd(lay, suppression, data.noise))
        d[folded], c[folded] = fb.d_lo, fb.c_lo

    objective = dual_objective(rows, d, c, reg_mu, reg_theta, n)
    n_var = 2 * K
    if folded.size:
        objective = _split_objective(objective, K, folded, fb.d_hi - fb.d_lo, fb.c_hi - fb.c_lo, n)
        for r in folded:
            bounds[r] = bounds[K + r] = (0.0, None)
        bounds = bounds + [(None, 0.0)] * (2 * folded.size)
        n_var += 2 * folded.size

    res = minimize(
        objective,
        np.zeros(n_var),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-10, "maxcor": 30},
    )
    if not np.all(np.isfinite(res.x)):
        raise AggMRFError(
            "exact fit failed to produce finite parameters; add a little regularisation."
        )
    mu, theta = res.x[:K].copy(), res.x[K : 2 * K].copy()
    if folded.size:
        mu[folded] += res.x[2 * K : 2 * K + folded.size]
        theta[folded] += res.x[2 * K + folded.size :]
    return MRFModel(lay, mu, theta)


def _split_objective(objective, K: int, folded: np.ndarray, width_d, width_c, n: float):
    """``objective`` (of w = (μ, θ), :func:`dual_objective`, whose targets on the rows
    ``folded`` are their lower bounds) as a function of (μ, θ, μ⁻, θ⁻), μ⁻ and θ⁻ one per
    folded row: the model's parameters are μ + μ⁻, θ + θ⁻ on those rows, and the targets of
    μ⁻, θ⁻ are the upper bounds, lower + ``width_d`` (``width_c``)."""
    F = folded.size
    width = np.concatenate([width_d, width_c]) / max(n, 1e-300)

    def split(w: np.ndarray) -> tuple[float, np.ndarray]:
        mu, theta = w[:K].copy(), w[K : 2 * K].copy()
        extra = w[2 * K :]
        mu[folded] += extra[:F]
        theta[folded] += extra[F:]
        f, g = objective(np.concatenate([mu, theta]))
        g_extra = np.concatenate([g[folded], g[K + folded]]) - width
        return f - extra @ width, np.concatenate([g, g_extra])

    return split


def dual_objective(rows, d, c, reg_mu, reg_theta, n: float):
    """The convex dual F(μ, θ)/n = log Z − (μ·d + θ·c)/n + (λ_μ‖μ‖² + λ_θ‖θ‖²)/n and its
    gradient, for scipy.optimize.minimize(jac=True).

    rows: (S, T) table rows of every state (``all_states``); d, c, reg_mu, reg_theta: (K,);
    the argument w is (μ, θ) stacked, shape (2K,).  The gradient is (E[D] − d + 2λ_μ μ,
    E[C] − c + 2λ_θ θ)/n, zero at the max-ent fit of (d, c).
    """
    K, T = len(d), rows.shape[1]
    flat = rows.ravel()

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        mu, theta = w[:K], w[K:]
        a = mu[rows].sum(axis=1)
        b = theta[rows].sum(axis=1)
        log_px = a + np.logaddexp(0.0, b)
        logZ = logsumexp(log_px)
        px = np.exp(log_px - logZ)
        p1 = expit(b)
        Ed = np.bincount(flat, weights=np.repeat(n * px, T), minlength=K)
        Ec = np.bincount(flat, weights=np.repeat(n * px * p1, T), minlength=K)
        f = n * logZ - mu @ d - theta @ c + reg_mu @ mu**2 + reg_theta @ theta**2
        g = np.concatenate([Ed - d + 2 * reg_mu * mu, Ec - c + 2 * reg_theta * theta])
        scale = max(n, 1e-300)
        return f / scale, g / scale

    return objective
