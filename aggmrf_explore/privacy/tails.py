"""How far a mechanism's noise can reach: tail bounds for the reader's consistency checks.

A reader that checks a noisy release (a label sum above its count, tables whose totals
disagree) must allow what the declared noise can do, and no more.  A fixed multiple of σ
is wrong for the Laplace mechanisms, whose tails are heavier than a Gaussian's: on a large
release some cell's noise passes 7σ.  :func:`noise_tail` gives, for one mechanism, the
distance t such that a sum of m independent noises exceeds t in absolute value with
probability at most q, from the Chernoff bound

    P(|Z_1 + … + Z_m| > t) ≤ 2 · min_λ exp(−λ t) · M(λ)^m,

where M is the noise's moment generating function (exact for both Laplace mechanisms;
for the Gaussians exp(σ²λ²/2), which bounds the discrete Gaussian's too, Canonne, Kamath &
Steinke 2020).  A check that makes N comparisons at tail probability q/N each refuses an
honest release with probability at most q (union bound).
"""

from __future__ import annotations

import functools
import math

from scipy.optimize import minimize_scalar

from ..errors import AggMRFError

__all__ = ["noise_tail", "FALSE_ALARM"]

FALSE_ALARM = 1e-9  # the reader refuses an honest release with at most this probability per check


def _log_mgf(mech, lam: float) -> float:
    """log E[exp(λ Z)] of one draw of ``mech``'s noise, for 0 < λ < its limit."""
    density = getattr(mech, "density", None)
    if density == "gauss":
        return 0.5 * (mech.scale * lam) ** 2
    if density != "laplace":
        raise AggMRFError(f"no tail bound for the noise of {mech!r}.")
    b = mech.scale
    if mech.discrete:  # P(x) ∝ a^|x|, a = e^(−1/b): M = (1 − a)² / ((1 − a e^λ)(1 − a e^−λ))
        a = math.exp(-1.0 / b)
        return (
            2.0 * math.log1p(-a) - math.log1p(-a * math.exp(lam)) - math.log1p(-a * math.exp(-lam))
        )
    return -math.log1p(-((b * lam) ** 2))  # continuous Laplace: 1 / (1 − b²λ²)


@functools.lru_cache(maxsize=4096)
def noise_tail(mech, q: float, m: float = 1.0) -> float:
    """t (counts) with P(|sum of m i.i.d. noises of ``mech``| > t) ≤ q (Chernoff bound).

    ``mech``: a central noise mechanism (Laplace or Gaussian family, discrete or not);
    ``q``: the tail probability, 0 < q < 1;  ``m`` > 0: how many noises are summed (a
    difference of two independent noises has the tails of their sum).  None → 0.
    Remembered for the last 4 096 distinct arguments (mechanisms are frozen, hashable).
    """
    if mech is None or m <= 0:
        return 0.0
    if not 0.0 < q < 1.0:
        raise AggMRFError(f"a tail probability must be in (0, 1); got {q!r}.")
    c = math.log(2.0 / q)
    if mech.density == "gauss":  # closed form of the Chernoff bound
        return mech.scale * math.sqrt(2.0 * m * c)
    b = mech.scale
    hi = (1.0 / b) * (1.0 - 1e-12)

    def bound(lam: float) -> float:
        return (c + m * _log_mgf(mech, lam)) / lam

    res = minimize_scalar(
        bound, bounds=(hi * 1e-9, hi), method="bounded", options={"xatol": hi * 1e-9}
    )
    return float(min(res.fun, bound(hi * 0.5)))
