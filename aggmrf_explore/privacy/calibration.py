"""Noise calibration: the σ (or scale) a mechanism needs for a privacy target, and back.

Continuous Gaussian N(0, σ²), (ε, δ)-DP: ``"analytic"`` (Balle & Wang 2018, the exact
privacy curve, any ε), ``"classic"`` (√(2 ln(1.25/δ))·Δ2/ε, valid only for ε < 1) and
``"adkdd21"`` (the formula of the AdKDD'21 experiments).

Discrete Gaussian N_Z(0, σ²) on the integers (Canonne, Kamath & Steinke 2020): with L2
sensitivity Δ2 it is ρ-zCDP with ρ = Δ2²/(2σ²) (their Thm 14 and 15, the same ρ as the
continuous Gaussian), converted to (ε, δ) by the tight conversion of their Cor 13, as
computed by OpenDP's ``make_zCDP_to_approxDP``.  This is not the continuous analytic
curve: at the same (ε, δ) the discrete σ is a few per cent larger.

Discrete Laplace (two-sided geometric) with scale t: P(x) ∝ exp(−|x|/t), ε-DP for L1
sensitivity Δ1 when t = Δ1/ε, the same rule as the continuous Laplace mechanism.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from .checks import delta_value as _delta
from .checks import opendp
from .checks import positive_finite as _positive_finite

__all__ = [
    "CALIBRATIONS",
    "ClassicGaussianWarning",
    "achieved_delta",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "adkdd21_gaussian_sigma",
    "gaussian_sigma",
    "warn_classic",
    "zcdp_rho",
    "zcdp_epsilon",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_sigma",
]

CALIBRATIONS = ("analytic", "classic", "adkdd21")


class ClassicGaussianWarning(UserWarning):
    """The classic Gaussian calibration was used with ε > 1, where it gives no (ε, δ)-DP guarantee."""


def warn_classic(epsilon: float, stacklevel: int = 1) -> None:
    """Warn (:class:`ClassicGaussianWarning`) when ε > 1, where the classic calibration gives
    no (ε, δ)-DP guarantee; ``stacklevel`` as for ``warnings.warn``, counted from the caller."""
    if epsilon > 1.0:
        warnings.warn(
            f"the classic Gaussian calibration is not a valid (ε, δ)-DP calibration for ε > 1 "
            f"(got ε = {epsilon:g}); use calibration='analytic'.",
            ClassicGaussianWarning,
            stacklevel=stacklevel + 1,
        )


def achieved_delta(sigma: float, epsilon: float, l2_sensitivity: float) -> float:
    """Exact δ of the Gaussian mechanism N(0, σ²) at ε (Balle & Wang 2018, Thm 8).

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space.
    """
    sigma = _positive_finite("sigma", sigma)
    eps = _positive_finite("epsilon", epsilon)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    return math.exp(_log_delta(sigma, eps, l2))


def _log_delta(sigma: float, eps: float, l2: float) -> float:
    u = l2 / (2.0 * sigma)
    v = eps * sigma / l2
    la = float(log_ndtr(u - v))
    lb = eps + float(log_ndtr(-u - v))
    x = lb - la  # < 0 exactly; log δ = la + log(1 − e^x)
    if x >= 0.0:
        return -math.inf
    log1mexp = math.log(-math.expm1(x)) if x > -math.log(2.0) else math.log1p(-math.exp(x))
    return la + log1mexp


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP (Balle & Wang 2018), by brentq on log σ."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    target = math.log(dl)

    def f(log_s: float) -> float:
        return _log_delta(math.exp(log_s), eps, l2) - target

    lo = hi = math.log(l2 * math.sqrt(2.0 * math.log(1.25 / dl)) / eps)
    while f(lo) <= 0.0:  # δ(σ) decreases in σ
        lo -= 1.0
    while f(hi) > 0.0:
        hi += 1.0
    return math.exp(brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


def classic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """√(2 ln(1.25/δ))·Δ2/ε (Dwork & Roth); warns (ClassicGaussianWarning) when ε > 1."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    warn_classic(eps, stacklevel=2)
    return math.sqrt(2.0 * math.log(1.25 / dl)) * l2 / eps


def adkdd21_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """σ = Δ2 (c + √(c² + ε)) / (ε√2), c = √(ln(2/(√(16δ+1) − 1))) (AdKDD'21 experiments)."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    c = math.sqrt(math.log(2.0 / math.expm1(0.5 * math.log1p(16.0 * dl))))
    return l2 * (c + math.sqrt(c * c + eps)) / (eps * math.sqrt(2.0))


_CALIBRATE = {
    "analytic": analytic_gaussian_sigma,
    "classic": classic_gaussian_sigma,
    "adkdd21": adkdd21_gaussian_sigma,
}


def gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float, calibration: str) -> float:
    """σ of the continuous Gaussian mechanism by ``calibration`` (one of ``CALIBRATIONS``)."""
    return _CALIBRATE[calibration](epsilon, delta, l2_sensitivity)


# ---------------------------------------------------------------------- zCDP (discrete Gaussian)
def zcdp_rho(sigma: float, l2_sensitivity: float) -> float:
    """ρ = Δ2²/(2σ²): the zCDP of the (discrete or continuous) Gaussian mechanism."""
    sigma = _positive_finite("sigma", sigma)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    return l2 * l2 / (2.0 * sigma * sigma)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε at which ρ-zCDP gives (ε, δ)-DP: OpenDP's ``make_zCDP_to_approxDP``
    (the conversion of Canonne, Kamath & Steinke 2020, Cor 13).

    A Gaussian of scale 1 on the reals with L2 input distance √(2ρ) has exactly ρ-zCDP
    (OpenDP's map: d²/(2·1²)); its converted privacy profile is evaluated at δ.
    """
    rho = _positive_finite("rho", rho)
    dl = _delta(delta)
    dp = opendp()
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), scale=1.0
    )
    profile = dp.c.make_zCDP_to_approxDP(meas).map(math.sqrt(2.0 * rho))
    return float(profile.epsilon(dl))


def discrete_gaussian_epsilon(sigma: float, delta: float, l2_sensitivity: float) -> float:
    """The ε of the discrete Gaussian N_Z(0, σ²) at δ (zCDP bound, converted)."""
    return zcdp_epsilon(zcdp_rho(sigma, l2_sensitivity), delta)


def discrete_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest σ (to 1e-9 relative) whose discrete Gaussian is (ε, δ)-DP for Δ2.

    ε(σ) decreases in σ; bracketed from the continuous analytic σ, solved on log σ (about
    30 OpenDP conversions).  Remembered for the last 256 distinct (ε, δ, Δ2), as floats:
    the same arguments again cost a dictionary look-up.
    """
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    return _discrete_gaussian_sigma(eps, dl, l2)


@functools.lru_cache(maxsize=256)
def _discrete_gaussian_sigma(eps: float, dl: float, l2: float) -> float:
    """:func:`discrete_gaussian_sigma` of arguments already checked and made floats."""

    def f(log_s: float) -> float:
        return discrete_gaussian_epsilon(math.exp(log_s), dl, l2) - eps

    lo = hi = math.log(analytic_gaussian_sigma(eps, dl, l2))
    while f(lo) <= 0.0:
        lo -= 0.25
    while f(hi) > 0.0:
        hi += 0.25
    return math.exp(brentq(f, lo, hi, xtol=1e-12, rtol=1e-10, maxiter=200))
