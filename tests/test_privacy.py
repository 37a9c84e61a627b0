"""Tests for aggmrf_explore.privacy (mechanisms, calibration, release, MRF-N posterior)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from aggmrf_explore import AggMRFError, AggregatedData, TableLayout, aggregate
from aggmrf_explore.privacy import (
    ClassicGaussianWarning,
    GaussianMechanism,
    LaplaceMechanism,
    achieved_delta,
    adkdd21_gaussian_sigma,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    expected_noise,
    make_mechanism,
    posterior_mean_counts,
    release,
    sensitivity,
)

SQ66 = math.sqrt(66)


# ---------------------------------------------------------------- 1. paper's Table 5 values
@pytest.mark.parametrize("eps,std", [(1, 93.3), (10, 9.33)])
def test_laplace_std_table5(eps, std):
    m = LaplaceMechanism(eps, 66)
    assert round(m.std, 2 if eps == 10 else 1) == std
    assert m.scale == pytest.approx(66 / eps)
    assert m.std == pytest.approx(math.sqrt(2) * 66 / eps)


@pytest.mark.parametrize(
    "eps,delta,sigma,digits", [(1, 1e-7, 44.8, 1), (1, 1e-4, 33.1, 1), (10, 1e-7, 5.06, 2)]
)
def test_adkdd21_sigma_table5(eps, delta, sigma, digits):
    m = GaussianMechanism(eps, delta, SQ66, calibration="adkdd21")
    assert round(m.sigma, digits) == sigma
    assert m.std == m.sigma


# ---------------------------------------------------------------- 2. analytic Gaussian
@pytest.mark.parametrize(
    "eps,delta,sigma",
    [(0.1, 1e-5, 30.749566), (1, 1e-5, 3.730632), (4, 1e-6, 1.193519), (10, 1e-6, 0.541087)],
)
def test_analytic_sigma(eps, delta, sigma):
    s = GaussianMechanism(eps, delta, 1.0).sigma
    assert abs(s - sigma) < 1e-5
    # δ of N(0, s²) at ε, computed without the project's code, two ways
    assert _delta_balle_wang(s, eps, 1.0) == pytest.approx(delta, rel=1e-9)
    assert _delta_hockey_stick(s, eps, 1.0) == pytest.approx(delta, rel=1e-6)
    assert achieved_delta(s, eps, 1.0) == pytest.approx(_delta_balle_wang(s, eps, 1.0), rel=1e-9)


def _delta_balle_wang(sigma: float, eps: float, l2: float) -> float:
    """Balle & Wang (2018), Thm 8: δ = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), evaluated
    directly with scipy.stats.norm (both terms from log Φ, so e^ε cannot overflow)."""
    from scipy import stats

    u, v = l2 / (2 * sigma), eps * sigma / l2
    log_a = stats.norm.logcdf(u - v)
    log_b = eps + stats.norm.logcdf(-u - v)
    return float(np.exp(log_a) - np.exp(log_b))


def _delta_hockey_stick(sigma: float, eps: float, l2: float) -> float:
    """The definition: δ(ε) = ∫ (p(x) − e^ε q(x))₊ dx for p = N(0, σ²), q = N(Δ, σ²) (the
    worst-case neighbouring pair), by numerical integration with scipy.stats.norm."""
    from scipy import integrate, stats

    def f(x):
        return max(
            stats.norm.pdf(x, 0.0, sigma) - math.exp(eps) * stats.norm.pdf(x, l2, sigma), 0.0
        )

    x_star = l2 / 2 - eps * sigma**2 / l2  # the integrand is positive exactly for x < x*
    val, _ = integrate.quad(f, x_star - 40 * sigma, x_star, epsabs=0.0, epsrel=1e-10, limit=200)
    return val


def test_analytic_stable_large_eps_and_scaling():
    s = analytic_gaussian_sigma(50, 1e-6, 1.0)
    assert math.isfinite(s) and s > 0
    assert _delta_balle_wang(s, 50, 1.0) == pytest.approx(1e-6, rel=1e-9)
    # σ scales linearly with Δ2
    assert analytic_gaussian_sigma(1, 1e-5, SQ66) == pytest.approx(3.7306316 * SQ66, rel=1e-6)


# ---------------------------------------------------------------- 3. empirical std
@pytest.mark.parametrize("mech", [LaplaceMechanism(1, 66), GaussianMechanism(1, 1e-7, SQ66)])
def test_empirical_std(mech):
    x = mech.sample(10**6, np.random.default_rng(0))
    assert x.shape == (10**6,)
    assert abs(x.std() / mech.std - 1) < 0.01
    np.testing.assert_array_equal(x[:10], mech.sample(10**6, np.random.default_rng(0))[:10])


def test_log_density_normalised():
    for mech in (LaplaceMechanism(1, 3), GaussianMechanism(1, 1e-5, 2)):
        grid = np.linspace(-40 * mech.std, 40 * mech.std, 400001)
        mass = np.trapezoid(np.exp(mech.log_density(grid)), grid)
        assert mass == pytest.approx(1, abs=1e-6)


# ---------------------------------------------------------------- 4. analytic vs classic
@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.5, 1e-7), (0.9, 1e-3)])
def test_analytic_tighter_than_classic(eps, delta):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for ε < 1
        classic = GaussianMechanism(eps, delta, 1.0, calibration="classic").sigma
    assert classic == pytest.approx(math.sqrt(2 * math.log(1.25 / delta)) / eps)
    assert GaussianMechanism(eps, delta, 1.0).sigma < classic


def test_classic_warns_above_one():
    with pytest.warns(ClassicGaussianWarning, match="ε > 1"):
        GaussianMechanism(2.0, 1e-5, 1.0, calibration="classic")
    with pytest.warns(ClassicGaussianWarning):
        classic_gaussian_sigma(5.0, 1e-5, 1.0)


def test_describe():
    d = LaplaceMechanism(2, 10).describe()
    assert d == {
        "mechanism": "laplace",
        "epsilon": 2.0,
        "delta": 0.0,
        "scale": 5.0,
        "std": math.sqrt(2) * 5,
        "l1_sensitivity": 10.0,
    }
    g = GaussianMechanism(1, 1e-5, 1.0).describe()
    assert g["mechanism"] == "gaussian" and g["delta"] == 1e-5 and g["std"] == g["sigma"]
    assert g["calibration"] == "analytic"


def test_read_only():
    m = LaplaceMechanism(1, 2)
    with pytest.raises(AttributeError):
        m.scale = 3  # type: ignore[misc]
    g = GaussianMechanism(1, 1e-5, 1.0)
    with pytest.raises(AttributeError):
        g.sigma = 3  # type: ignore[misc]


# ---------------------------------------------------------------- 5. sensitivity accounting
def test_sensitivity_layout():
    lay = TableLayout.all_pairs([2, 3, 2, 4])  # 4 singles + 6 pairs, + intercept
    assert lay.n_released_tables == 10
    assert sensitivity(lay) == (20.0, pytest.approx(math.sqrt(20)))
    assert sensitivity(lay, "queries") == (10.0, pytest.approx(math.sqrt(10)))
    assert sensitivity(33, "both") == (66.0, pytest.approx(SQ66))
    # replace-one neighbours: 2 rows per table move (count ±1, label sum ±≤1): 4T entries
    assert sensitivity(lay, "replace") == (40.0, pytest.approx(2 * math.sqrt(10)))
    lap = make_mechanism("laplace", 1.0, None, lay, accounting="replace")
    assert lap.scale == pytest.approx(2 * make_mechanism("laplace", 1.0, None, lay).scale)
    gau = make_mechanism("gaussian", 1.0, 1e-6, lay, accounting="replace")
    ref = make_mechanism("gaussian", 1.0, 1e-6, lay)
    assert gau.sigma == pytest.approx(math.sqrt(2) * ref.sigma, rel=1e-9)
    m = make_mechanism("laplace", 1.0, None, lay)
    assert isinstance(m, LaplaceMechanism) and m.l1_sensitivity == 20
    g = make_mechanism("Gaussian", 1.0, 1e-5, lay, accounting="queries", calibration="adkdd21")
    assert isinstance(g, GaussianMechanism) and g.l2_sensitivity == pytest.approx(math.sqrt(10))
    assert make_mechanism("none") is None


# ---------------------------------------------------------------- 6. release
@pytest.fixture(scope="module")
def agg():
    rng = np.random.default_rng(3)
    lay = TableLayout.all_pairs([2, 3, 2, 4])
    X = np.column_stack([rng.integers(0, m, 20000) for m in lay.n_modalities])
    y = (rng.random(20000) < 0.3).astype(int)
    return aggregate(X, y, lay)


def test_release(agg):
    d0, c0 = agg.d.copy(), agg.c.copy()
    mech = GaussianMechanism(1.0, 1e-5, 5.0)
    r1 = release(agg, mech, seed=7)
    r2 = release(agg, mech, seed=7)
    r3 = release(agg, mech, seed=8)
    np.testing.assert_array_equal(r1.d, r2.d)
    np.testing.assert_array_equal(r1.c, r2.c)
    assert not np.array_equal(r1.d, r3.d)
    # input untouched, true values kept
    np.testing.assert_array_equal(agg.d, d0)
    np.testing.assert_array_equal(agg.c, c0)
    assert agg.noise is None and agg.true_d is None
    np.testing.assert_array_equal(r1.true_d, d0)
    np.testing.assert_array_equal(r1.true_c, c0)
    assert r1.noise is mech and r1.is_noisy
    assert r1.meta["privacy"]["sigma"] == mech.sigma and r1.meta["true_n"] == agg.n
    # noise on every released row, none elsewhere; intercept derived
    lay = agg.layout
    mask = lay.released
    assert np.all(r1.d[mask] != d0[mask]) and np.all(r1.c[mask] != c0[mask])
    starts = lay.offsets[1:-1]
    assert r1.d[0] == pytest.approx(np.add.reduceat(r1.d, starts).mean())
    assert r1.c[0] == pytest.approx(np.add.reduceat(r1.c, starts).mean())
    assert r1.n == round(r1.d[0])
    assert abs(r1.d[0] - agg.n) < 5 * mech.sigma


def test_release_noise_std(agg):
    mech = LaplaceMechanism(1.0, 20.0)
    mask = agg.layout.released
    diffs = np.concatenate(
        [
            np.concatenate([(r.d - r.true_d)[mask], (r.c - r.true_c)[mask]])
            for r in (release(agg, mech, seed=s) for s in range(400))
        ]
    )
    assert abs(diffs.std() / mech.std - 1) < 0.02
    assert abs(diffs.mean()) < 0.05 * mech.std


def test_release_none_and_errors(agg):
    r = release(agg, None, seed=1)
    assert r is not agg and not r.is_noisy
    np.testing.assert_array_equal(r.d, agg.d)
    noisy = release(agg, LaplaceMechanism(1, 20), seed=1)
    with pytest.raises(AggMRFError, match="already a noisy release"):
        release(noisy, LaplaceMechanism(1, 20), seed=1)
    with pytest.raises(AggMRFError, match="'laplace'"):
        release(agg, "laplace", seed=1)


def test_projected_targets():
    lay = TableLayout([4], [(0,)], intercept=False)
    noisy = AggregatedData(lay, [-3.0, 0.0, 5.0, 2.0], [1.0, -1.0, 7.0, 1.5], 10)
    p = noisy.projected()
    np.testing.assert_array_equal(p.d, [0, 0, 5, 2])
    np.testing.assert_array_equal(p.c, [0, 0, 5, 1.5])
    np.testing.assert_array_equal(noisy.d, [-3.0, 0.0, 5.0, 2.0])  # not modified


# ---------------------------------------------------------------- 7. MRF-N posterior means
def _brute(b, mu, n, mech, prior):
    a = np.arange(n + 1, dtype=float)
    if prior == "binomial":
        q = mu / n
        with np.errstate(divide="ignore"):
            lp = (
                gammaln(n + 1)
                - gammaln(a + 1)
                - gammaln(n - a + 1)
                + a * np.log(q)
                + (n - a) * np.log1p(-q)
            )
    else:
        with np.errstate(divide="ignore"):
            lp = a * np.log(mu) - mu - gammaln(a + 1)
    lw = lp + mech.log_density(b - a)
    return float(np.exp(lw - logsumexp(lw)) @ a)


@pytest.mark.parametrize("prior", ["binomial", "poisson"])
@pytest.mark.parametrize(
    "mech", [GaussianMechanism(1, 1e-5, 4.0), LaplaceMechanism(1, 6.0), LaplaceMechanism(1, 0.7)]
)
def test_posterior_vs_bruteforce(prior, mech):
    rng = np.random.default_rng(11)
    K = 200
    n = 150
    mu = rng.uniform(0, n, K) * rng.choice([1.0, 0.02, 1e-4], K)
    b = mu + rng.normal(0, 3 * mech.std, K) + rng.choice([0, 0, 300, -300], K)
    got = posterior_mean_counts(b, mu, n, mech, prior=prior)
    ref = np.array([_brute(b[j], mu[j], n, mech, prior) for j in range(K)])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(expected_noise(b, mu, n, mech, prior), b - ref, atol=1e-6)


def test_posterior_per_coordinate_trials():
    mech = GaussianMechanism(1, 1e-5, 3.0)
    b = np.array([5.0, 40.0, -3.0])
    mu = np.array([4.0, 10.0, 0.5])
    n = np.array([10, 60, 3])
    got = posterior_mean_counts(b, mu, n, mech)
    ref = [_brute(b[j], mu[j], int(n[j]), mech, "binomial") for j in range(3)]
    np.testing.assert_allclose(got, ref, atol=1e-6)


@pytest.mark.parametrize("mech", [GaussianMechanism(1, 1e-5, 40.0), LaplaceMechanism(1, 130.0)])
def test_posterior_extremes(mech):
    n = 32561
    b = np.array([-1e12, -1e5, -50.0, 0.0, 3.0, n / 2, n + 50.0, 1e5, 1e12, 7.0, 7.0, n - 1.0])
    mu = np.array([5.0, 0.0, 1e-9, 0.0, n, 100.0, n, n - 1e-9, 3.0, 1e-300, 3e4, 1.0])
    for prior in ("binomial", "poisson"):
        out = posterior_mean_counts(b, mu, n, mech, prior=prior)
        assert np.all(np.isfinite(out)) and np.all(out >= 0) and np.all(out <= n)
    out = posterior_mean_counts(b, mu, n, mech)
    assert out[1] == 0 and out[3] == 0  # prior mean 0: point mass at 0
    assert out[4] == n and out[6] == n  # prior mean n: point mass at n


def test_posterior_tiny_and_huge_noise():
    rng = np.random.default_rng(5)
    n = 1000
    mu = rng.uniform(0, n, 500)
    b = rng.integers(-100, n + 100, 500) + rng.uniform(-0.3, 0.3, 500)  # not near half-integers
    for tiny in (GaussianMechanism(1, 1e-5, 1e-3), LaplaceMechanism(1, 1e-3)):
        out = posterior_mean_counts(b, mu, n, tiny)
        np.testing.assert_allclose(out, np.clip(np.round(b), 0, n), atol=1e-6)
    for huge in (GaussianMechanism(1e-3, 1e-5, 1e3), LaplaceMechanism(1e-3, 1e3)):
        out = posterior_mean_counts(b, mu, n, huge)
        np.testing.assert_allclose(out, mu, rtol=1e-3, atol=1e-3)
        out = posterior_mean_counts(b, mu, n, huge, prior="poisson")
        far = mu + 8 * np.sqrt(mu) < n  # the Poisson prior is truncated at n
        np.testing.assert_allclose(out[far], mu[far], rtol=2e-3, atol=1e-3)
    np.testing.assert_array_equal(posterior_mean_counts(b, mu, n, None), np.clip(b, 0, n))


def _brute_mean_sd(b, mu, n, mech, prior):
    """Exact posterior mean and sd by summing all n + 1 integers (centred to limit roundoff)."""
    a = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore"):
        if prior == "binomial":
            q = mu / n
            lp = -gammaln(a + 1) - gammaln(n - a + 1) + a * np.log(q) + (n - a) * np.log1p(-q)
        else:
            lp = a * np.log(mu) - gammaln(a + 1)
    lw = lp + mech.log_density(b - a)
    p = np.exp(lw - logsumexp(lw))
    a0 = a[np.argmax(p)]
    m = p @ (a - a0)
    return a0 + m, math.sqrt(max(p @ (a - a0 - m) ** 2, 0.0))


ADULT_MECHS = [
    GaussianMechanism(1, 1e-7, math.sqrt(66), "adkdd21"),  # σ = 44.8
    GaussianMechanism(1, 1e-7, math.sqrt(210)),  # σ = 67.8 (Adult, both columns)
    GaussianMechanism(10, 1e-7, math.sqrt(210)),  # σ = 8.4
    LaplaceMechanism(1, 132.0),
    LaplaceMechanism(1, 210.0),
]


@pytest.mark.parametrize("prior", ["binomial", "poisson"])
@pytest.mark.parametrize("mech", ADULT_MECHS, ids=repr)
def test_posterior_adult_scale_vs_bruteforce(mech, prior):
    """Adult-sized n: every regime (tiny to huge counts, noise on and off the prior) is exact
    to 1e-6 posterior sd, whichever path (stride sum or walk) the kernel takes."""
    rng = np.random.default_rng(3)
    n, K = 32561, 48
    mu = np.exp(rng.uniform(np.log(0.05), np.log(n - 1), K))
    mu[:4] = [0.3, 3.0, n - 40.0, n / 2]
    b = mu * rng.uniform(0.7, 1.3, K) + mech.sample(K, rng) + rng.choice([0, 0, 0, 400, -400], K)
    got = posterior_mean_counts(b, mu, n, mech, prior=prior)
    for j in range(K):
        ref, sd = _brute_mean_sd(b[j], mu[j], n, mech, prior)
        assert abs(got[j] - ref) <= 1e-6 * sd + 1e-9 + 1e-12 * ref, (j, b[j], mu[j], got[j], ref)


@pytest.mark.parametrize("mech", [GaussianMechanism(1, 1e-7, 15.0), LaplaceMechanism(1, 100.0)])
def test_stride_fast_path_taken_and_exact(mech):
    """The stride sum handles interior coordinates (with the table and with Stirling's series)."""
    from aggmrf_explore.kernels.noise import NOISE_GAUSS, NOISE_LAPLACE, _stride_sum, log_factorials

    noise = NOISE_GAUSS if isinstance(mech, GaussianMechanism) else NOISE_LAPLACE
    n = 32561
    mu = np.array([500.0, 3000.0, 16000.0, 31000.0])
    shift = [60.0, -80.0, 5.0, 900.0] if noise == NOISE_GAUSS else [480.0, -640.0, 1e3, 7e3]
    b = mu + np.array(shift)  # for Laplace: the kink a = b outside the ±6.5 sd window
    for table in (log_factorials(n), log_factorials(5)):  # table / Stirling beyond k = 5
        for j in range(mu.size):
            got = _stride_sum(b[j], mu[j], float(n), mech.scale, 0, noise, table)
            assert np.isfinite(got), (j, "fast path not taken")
            ref, sd = _brute_mean_sd(b[j], mu[j], n, mech, "binomial")
            assert abs(got - ref) <= 1e-6 * sd, (j, got, ref, sd)
    # small counts and the Laplace kink inside the window fall back to the exact walk
    assert np.isnan(_stride_sum(5.0, 3.0, float(n), mech.scale, 0, noise, log_factorials(n)))
    if noise == NOISE_LAPLACE:
        assert np.isnan(_stride_sum(3000.0, 3000.0, float(n), 100.0, 0, noise, log_factorials(n)))


def test_posterior_large_n_beyond_table():
    """n beyond the log-factorial table cap: Stirling's series, still exact."""
    from aggmrf_explore.kernels.noise import LF_CAP

    mech = GaussianMechanism(1, 1e-7, 30.0)
    n = LF_CAP + 1000
    mu = np.array([n * 0.3, n - 5e4, 7e4])
    b = mu + np.array([300.0, -500.0, 0.0])
    got = posterior_mean_counts(b, mu, n, mech)
    for j in range(3):
        ref, sd = _brute_mean_sd(b[j], mu[j], n, mech, "binomial")
        assert abs(got[j] - ref) <= 1e-6 * sd + 1e-12 * ref


def test_expected_noise_on_negative_release():
    """MRF-N's gradient term on a release with negative counts: finite, targets in [0, n]."""
    rng = np.random.default_rng(0)
    n = 2000
    mech = GaussianMechanism(1, 1e-7, math.sqrt(30))
    true = rng.multinomial(n, np.full(40, 1 / 40)).astype(float)
    b = true + mech.sample(40, rng)
    b[:5] = -np.abs(b[:5]) - 50.0  # certainly negative
    model = np.concatenate([np.zeros(3), np.full(37, n / 37)])  # d̂ = 0 on some rows
    for prior in ("binomial", "poisson"):
        post = posterior_mean_counts(b, model, n, mech, prior=prior)
        term = expected_noise(b, model, n, mech, prior=prior)
        assert np.all(np.isfinite(post)) and np.all(np.isfinite(term))
        assert np.all((post >= 0) & (post <= n))
        np.testing.assert_allclose(term, b - post)
        assert np.all(post[:3] == 0)  # prior mass at 0: the target is 0 whatever b


# ---------------------------------------------------------------- 8. bad input
@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: LaplaceMechanism(0, 1), "epsilon.*0"),
        (lambda: LaplaceMechanism(-1, 1), "epsilon.*-1"),
        (lambda: LaplaceMechanism(float("inf"), 1), "epsilon.*inf"),
        (lambda: LaplaceMechanism(float("nan"), 1), "epsilon.*nan"),
        (lambda: LaplaceMechanism("1", 1), "epsilon.*'1'"),
        (lambda: LaplaceMechanism(1, 0), "l1_sensitivity.*0"),
        (lambda: GaussianMechanism(1, 0, 1), "delta.*0"),
        (lambda: GaussianMechanism(1, 1.0, 1), "delta.*1.0"),
        (lambda: GaussianMechanism(1, -0.1, 1), "delta.*-0.1"),
        (lambda: GaussianMechanism(1, 1e-5, -2), "l2_sensitivity.*-2"),
        (lambda: GaussianMechanism(1, 1e-5, 1, calibration="tight"), "'tight'.*analytic"),
        (lambda: achieved_delta(0, 1, 1), "sigma.*0"),
        (lambda: sensitivity(0), "T.*0"),
        (lambda: sensitivity(2.5), "2.5"),
        (lambda: sensitivity(3, accounting="rows"), "'rows'.*both"),
        (lambda: make_mechanism("exponential", 1, 1e-5, 3), "laplace.*'exponential'"),
        (lambda: make_mechanism("laplace", 1, 1e-7, 3), "delta.*goes only with gaussian"),
        (lambda: make_mechanism("laplace", None, None, 3), "epsilon"),
        (lambda: make_mechanism("laplace", 1, None, None), "layout"),
        (
            lambda: posterior_mean_counts([1.0], [1.0], 10, LaplaceMechanism(1, 1), "gamma"),
            "'gamma'",
        ),
        (lambda: posterior_mean_counts([np.nan], [1.0], 10, LaplaceMechanism(1, 1)), "b.*NaN"),
        (lambda: posterior_mean_counts([1.0], [np.inf], 10, LaplaceMechanism(1, 1)), "prior_mean"),
        (lambda: posterior_mean_counts([1.0], [1.0], -1, LaplaceMechanism(1, 1)), "n.*-1"),
        (lambda: posterior_mean_counts([1.0], [1.0], 2.5, LaplaceMechanism(1, 1)), "n.*2.5"),
        (
            lambda: posterior_mean_counts([1.0, 2.0], [1.0, 2.0, 3.0], 5, LaplaceMechanism(1, 1)),
            "shape",
        ),
        (lambda: posterior_mean_counts([1.0], [1.0], 5, "gauss"), "'gauss'"),
        (lambda: analytic_gaussian_sigma(1, 2, 1), "delta.*2"),
        (lambda: analytic_gaussian_sigma(0, 1e-5, 1), "epsilon.*0"),
        (lambda: classic_gaussian_sigma(1, 1e-5, float("nan")), "l2_sensitivity.*nan"),
        (lambda: adkdd21_gaussian_sigma(1, 1e-5, 0), "l2_sensitivity.*0"),
        (lambda: adkdd21_gaussian_sigma(1, True, 1), "delta.*True"),
        (lambda: achieved_delta(1, -1, 1), "epsilon.*-1"),
        (lambda: achieved_delta(1, 1, 0), "l2_sensitivity.*0"),
        (lambda: make_mechanism("gaussian", 1, 2, 3), "delta.*2"),
        (lambda: make_mechanism("gaussian", -1, 1e-7, 3), "epsilon.*-1"),
        (lambda: sensitivity("3"), "TableLayout"),
        (lambda: release("tables", None), "AggregatedData"),
        (lambda: expected_noise([1.0], [1.0], 10, "laplace"), "'laplace'"),
        (lambda: expected_noise([np.inf], [1.0], 10, LaplaceMechanism(1, 1)), "b.*inf"),
        (lambda: posterior_mean_counts([1.0], [1.0], np.nan, LaplaceMechanism(1, 1)), "n must"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(AggMRFError, match=match):
        call()


def test_a_declared_noise_level_alone_claims_no_budget():
    """A release that declares only σ (or a Laplace scale), as the challenge files do: the
    mechanism keeps the noise level exactly and reports ε and δ as unknown, and cannot be
    added up with other releases."""
    from aggmrf_explore.io import mechanism_from_meta
    from aggmrf_explore.privacy import composed_epsilon

    g = mechanism_from_meta({"mechanism": "gaussian", "sigma": 17.0})
    assert g.sigma == 17.0 and g.describe()["epsilon"] is None and g.describe()["delta"] is None
    assert mechanism_from_meta(g.to_dict()) == g and g.scaled(0.5).sigma == 8.5
    lap = mechanism_from_meta({"mechanism": "laplace", "scale": 20.0})
    assert lap.scale == 20.0 and lap.describe()["epsilon"] is None
    with pytest.raises(AggMRFError, match="only its noise level"):
        composed_epsilon([g], 1e-7)
    # the discrete Laplace likewise (it claimed ε = 1 from a bare scale)
    dl = mechanism_from_meta({"mechanism": "discrete_laplace", "scale": 3.0})
    assert dl.scale == 3.0 and dl.describe()["epsilon"] is None and not dl.budget_known
    assert mechanism_from_meta(dl.to_dict()) == dl
    with pytest.raises(AggMRFError, match="only its noise level"):
        composed_epsilon([dl], 1e-7)
