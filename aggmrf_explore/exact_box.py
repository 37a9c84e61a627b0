"""Exact max-ent with suppressed rows as box constraints 0 ≤ d ≤ k, for small state spaces.

The dual of :func:`aggmrf_explore.exact.fit_exact` with bounds (L-BFGS-B); see
:mod:`aggmrf_explore.suppression` for the constraints and the PCD counterpart.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from .errors import AggMRFError
from .exact import all_states, dual_objective
from .mrf import MRFModel
from .tables import AggregatedData

__all__ = ["fit_exact_box"]


def fit_exact_box(
    data: AggregatedData,
    lambda_mu: float = 0.0,
    lambda_theta: float = 0.0,
    tol: float = 1e-12,
    max_iter: int = 5000,
) -> MRFModel:
    """Exact (regularised) max-ent with suppressed rows as 0 ≤ d ≤ k; returns an MRFModel.

    The dual of ``exact.fit_exact`` with bounds: F(μ, θ) = n log Z − μ·d − θ·c + λ_μ‖μ‖² +
    λ_θ‖θ‖², where a suppressed row's d and c are its bound k and its μ_r, θ_r are
    constrained ≤ 0 (L-BFGS-B).  Without suppression this is ``fit_exact``'s problem.
    Small state spaces only (``exact.all_states``: ≤ 2^20 states).
    """
    lay = data.layout
    if lambda_mu < 0 or lambda_theta < 0 or not np.isfinite(lambda_mu + lambda_theta):
        raise AggMRFError("lambda_mu and lambda_theta must be finite and ≥ 0.")
    rows = lay.rows(all_states(lay))
    K = lay.K
    n = float(data.n) if data.meta.get("n_exact") is None else float(data.meta["n_exact"])
    proj = data.projected()
    d, c = proj.d.copy(), proj.c.copy()
    box = getattr(data, "suppression", None)
    bounds = [(None, None)] * (2 * K)
    if box is not None:
        d[box.rows] = box.bound[box.rows]
        c[box.rows] = box.bound[box.rows]
        for r in np.flatnonzero(box.rows):
            bounds[r] = (None, 0.0)
            bounds[K + r] = (None, 0.0)
    reg_mu = np.full(K, float(lambda_mu))
    reg_theta = np.full(K, float(lambda_theta))
    if lay.intercept:
        reg_mu[0] = reg_theta[0] = 0.0

    objective = dual_objective(rows, d, c, reg_mu, reg_theta, n)

    res = minimize(
        objective,
        np.zeros(2 * K),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-10, "maxcor": 30},
    )
    if not np.all(np.isfinite(res.x)):
        raise AggMRFError("exact box-constrained fit failed; add a little regularisation.")
    return MRFModel(lay, res.x[:K], res.x[K:])
