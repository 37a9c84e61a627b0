"""The PCD update's elementwise work in one pass over the K coordinates.

:func:`aggmrf_explore.mrf.pcd_update` is a chain of elementwise numpy expressions; written
with numpy, each makes a (K,) temporary (about thirty of them, ≈ 1.5 s per iteration at
K = 5.7·10⁶ rows).  :func:`update_pass` computes the same expressions per coordinate, in the
same order of operations (IEEE double, no contraction, no reassociation: the results are bit
for bit those of the numpy expressions, ``tests/test_update.py`` checks it), in parallel
over coordinates (each is independent: thread-count independent).  :func:`bound_excess`
is the divergence check's reduction (the largest |θ|/bound and |μ|/bound and their first
positions) without temporaries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

__all__ = ["GRADIENT_CODES", "UpdateArrays", "UpdateScalars", "update_pass", "bound_excess"]

GRADIENT_CODES = {"rescaled": 0, "rescaled-paper": 1, "true": 2}


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
    precondition: bool
    h_plain: float  # both preconditioners without ``precondition`` (≥ s)
    clip: float  # bound on each coordinate of the direction
    step_mu: float  # α_μ
    step_theta: float  # α_θ
    intercept: bool  # coordinate 0 is the intercept: μ_0 does not move


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def update_pass(arrays, scalars):
    """The new (μ, θ) and every intermediate of ``mrf.pcd_update``, float64 (K,) arrays.

    arrays : :class:`UpdateArrays`;  scalars : :class:`UpdateScalars`.  Without
    ``precondition`` both preconditioners are the scalar h_plain and the returned h arrays
    are empty.  Returns (new_mu, new_theta, g_mu, g_theta, ratio, c_model, h_mu, h_theta,
    dir_mu, dir_theta).  The ratio is ``mrf.rescaling_ratio``'s, per coordinate.
    """
    mu, theta, d_hat, c_hat, d, c, reg_mu, reg_theta = arrays
    two_lam_mu, two_lam_theta, s, gradient, precondition = scalars[:5]
    h_plain, clip, step_mu, step_theta, intercept = scalars[5:]
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
        if gradient == 0:
            num = d[k] - pen
            r = num / d_hat[k] if (d_hat[k] > 0 and num > 0) else 1.0
        else:
            r = d[k] / d_hat[k] if d_hat[k] > 0 else 1.0
        cm = c_hat[k] if gradient == 2 else r * c_hat[k]
        lam = two_lam_theta * reg_theta[k]
        gt = cm - c[k] + lam * theta[k]
        if precondition:
            hm = d_hat[k] + two_lam_mu * reg_mu[k]
            hm = s if hm < s else hm  # np.maximum(·, s): NaN stays NaN
            ht = cm + lam
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


@njit(cache=True, nogil=True)
def bound_excess(mu, theta, mu_bound, theta_bound):
    """(max_k |θ_k|/theta_bound, its first k, max_k |μ_k|/mu_bound, its first k); a
    non-finite coordinate counts as +inf.  mu, theta float64 (K,), K ≥ 1."""
    t, kt = _excess(theta, theta_bound)
    m, km = _excess(mu, mu_bound)
    return t, kt, m, km
