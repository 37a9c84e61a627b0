"""The discrete mechanisms: exact samplers against their probability mass functions, and
the discrete Gaussian's calibration against an independent implementation.

Sample sizes: 200 000 draws per sampler.  The χ² test over integer bins has a false-alarm
rate of 10⁻⁴ per case; a sampler whose scale is off by 5 % moves the variance by 10 %,
about 30 standard errors at this size, and a sampler that rounds a continuous draw adds
1/12 to the variance, which σ = 1.3 and t = 1 make a 5 % (Gaussian) or 3 % (Laplace) change.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2

from aggmrf_explore import AggMRFError, privacy
from aggmrf_explore.privacy import sampling

N = 200_000


def _chi2_pvalue(draws: np.ndarray, pmf) -> float:
    """χ² goodness of fit on every integer with expected count ≥ 5, plus both tails."""
    lo, hi = int(draws.min()), int(draws.max())
    x = np.arange(lo - 1, hi + 2)
    expected = pmf(x) * draws.size
    keep = expected >= 5.0
    xs = x[keep]
    observed = np.array([np.sum(draws == v) for v in xs], dtype=float)
    exp_in = expected[keep]
    tail_obs = draws.size - observed.sum()
    tail_exp = draws.size - exp_in.sum()
    stat = float(np.sum((observed - exp_in) ** 2 / exp_in))
    dof = xs.size - 1
    if tail_exp >= 5.0:
        stat += (tail_obs - tail_exp) ** 2 / tail_exp
        dof += 1
    return float(chi2.sf(stat, dof))


def _variance(pmf, half: int) -> float:
    x = np.arange(-half, half + 1)
    return float(np.sum(pmf(x) * x * x))


CASES = [
    ("discrete_gaussian", 1.3),
    ("discrete_gaussian", 20.0),
    ("discrete_laplace", 1.0),
    ("discrete_laplace", 20.0),
]


def _pmf(kind, scale):
    if kind == "discrete_gaussian":
        return lambda x: sampling.discrete_gaussian_pmf(x, scale)
    return lambda x: sampling.discrete_laplace_pmf(x, scale)


def _draw(kind, scale, source):
    if source == "secure":
        return sampling.secure_integer_noise(kind, scale, N)
    rng = np.random.default_rng(12345)
    if kind == "discrete_gaussian":
        return sampling.seeded_discrete_gaussian(scale, N, rng)
    return sampling.seeded_discrete_laplace(scale, N, rng)


@pytest.mark.parametrize("source", ["secure", "seeded"])
@pytest.mark.parametrize(("kind", "scale"), CASES)
def test_sampler_matches_its_exact_pmf(kind, scale, source):
    draws = _draw(kind, scale, source)
    assert draws.dtype == np.int64
    pmf = _pmf(kind, scale)
    assert _chi2_pvalue(draws, pmf) > 1e-4
    # the variance to 2 % (5 standard errors at N draws): a scale 5 % off moves it 10 %
    var = _variance(pmf, int(60 * scale) + 60)
    assert abs(draws.var() / var - 1.0) < 0.02
    assert abs(draws.mean()) < 5 * math.sqrt(var / N)


def test_the_pmf_tests_catch_a_wrong_scale_and_a_rounded_continuous_draw():
    """The checks above have power: a 5 % scale error and rounding a continuous draw fail."""
    rng = np.random.default_rng(7)
    wrong = sampling.seeded_discrete_gaussian(20.0 * 1.05, N, rng)
    assert _chi2_pvalue(wrong, _pmf("discrete_gaussian", 20.0)) < 1e-4
    rounded = np.rint(rng.normal(0.0, 1.3, N)).astype(np.int64)
    assert _chi2_pvalue(rounded, _pmf("discrete_gaussian", 1.3)) < 1e-4
    rounded_lap = np.rint(rng.laplace(0.0, 1.0, N)).astype(np.int64)
    assert _chi2_pvalue(rounded_lap, _pmf("discrete_laplace", 1.0)) < 1e-4


def test_pmfs_are_normalised():
    for kind, scale in CASES:
        half = int(60 * scale) + 60
        assert abs(_pmf(kind, scale)(np.arange(-half, half + 1)).sum() - 1.0) < 1e-12


# ---------------------------------------------------------------------- calibration
def _cks_log_delta(rho: float, eps: float) -> float:
    """log δ of ρ-zCDP at ε: Canonne, Kamath & Steinke 2020, Cor 13, written from the
    paper (δ = inf_{α>1} e^{(α−1)(αρ−ε)}/(α−1) · (1 − 1/α)^α), independent of OpenDP."""

    def log_d(log_a1: float) -> float:
        a = 1.0 + math.exp(log_a1)
        return (a - 1) * (a * rho - eps) - math.log(a - 1) + a * math.log1p(-1 / a)

    best = minimize_scalar(log_d, bounds=(-20, 20), method="bounded", options={"xatol": 1e-12})
    return min(best.fun, 0.0)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 8.0])
def test_discrete_gaussian_calibration_matches_an_independent_conversion(epsilon):
    delta, T = 1e-7, 105  # Adult's 105 released tables
    mech = privacy.make_mechanism("discrete_gaussian", epsilon, delta, T)
    _, l2 = privacy.sensitivity(T)
    assert mech.rho == pytest.approx(l2**2 / (2 * mech.sigma**2), rel=1e-14)
    eps_indep = brentq(
        lambda e: _cks_log_delta(mech.rho, e) - math.log(delta), 1e-9, 1e4, xtol=1e-14
    )
    assert eps_indep == pytest.approx(epsilon, rel=1e-8)
    # smallest such σ: 0.1 % less noise breaks the guarantee
    tighter = privacy.discrete_gaussian_epsilon(mech.sigma * 0.999, delta, l2)
    assert tighter > epsilon
    # the discrete σ is not the continuous one: a few per cent larger
    assert 1.0 < mech.sigma / mech.sigma_continuous < 1.1


def test_discrete_laplace_is_pure_dp_at_the_continuous_scale():
    mech = privacy.make_mechanism("discrete_laplace", 2.0, None, 10)
    assert mech.scale == 20 / 2.0 and mech.delta == 0.0
    # the privacy loss of a shift by Δ1 is exactly Δ1/t = ε for every output
    x = np.arange(-200, 200)
    pmf = sampling.discrete_laplace_pmf
    loss = np.log(pmf(x, mech.scale) / pmf(x - 20, mech.scale))
    assert np.max(np.abs(loss)) == pytest.approx(2.0, rel=1e-12)


def test_composition_adds_up_zcdp():
    g = privacy.make_mechanism("discrete_gaussian", 1.0, 1e-7, 105)
    two = privacy.composed_epsilon([g, g], 2e-7)
    assert two == pytest.approx(privacy.zcdp_epsilon(2 * g.rho, 2e-7), rel=1e-12)
    assert 1.0 < two < 2.0  # better than adding ε, worse than one release
    lap = privacy.make_mechanism("discrete_laplace", 1.0, None, 105)
    assert privacy.composed_epsilon([lap, lap, lap], 1e-7) <= 3.0


def test_discrete_gaussian_sigma_is_remembered_and_still_checks_its_arguments(monkeypatch):
    from aggmrf_explore.privacy import calibration

    l2 = math.sqrt(2 * 37)  # a (ε, δ, Δ2) no other test asks for
    first = calibration.discrete_gaussian_sigma(0.73, 1e-7, l2)
    calls = []
    monkeypatch.setattr(calibration, "zcdp_epsilon", lambda *a: calls.append(a) or 0.0)
    assert calibration.discrete_gaussian_sigma(0.73, 1e-7, l2) == first  # no OpenDP call
    assert calibration.discrete_gaussian_sigma(np.float64(0.73), 1e-7, l2) == first
    assert calls == []
    for bad in ([1.0], "1", float("nan"), -1.0):
        with pytest.raises(AggMRFError):
            calibration.discrete_gaussian_sigma(bad, 1e-7, l2)
