"""selection/: aggregated-only scores, sub-releases and the λθ choice, on small synthetic data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, aggregate
from aggmrf_explore.experiment import prepare
from aggmrf_explore.mrf import MRFModel, PCDTrainer, default_settings, sigmoid
from aggmrf_explore.selection.lambda_theta import (
    choose_lambda_theta,
    fit_path,
    lambda_grid,
    pick,
)
from aggmrf_explore.selection.releases import split_release, sub_release
from aggmrf_explore.selection.scores import (
    aggregated_nllh,
    cross_fit_losses,
    cross_fit_nllh,
    sample_codes,
)


@pytest.fixture(scope="module")
def problem():
    return prepare("synthetic", n=4000, n_features=4, n_modalities=3, coupling=2.0, seed=2)


@pytest.fixture(scope="module")
def trained(problem):
    st = default_settings(problem.layout, problem.aggregated.n, n_gibbs=2000, seed=0)
    tr = PCDTrainer(problem.aggregated, st)
    tr.step(60)
    return tr


def test_metric_orders_models(problem, trained):
    enc = problem.encoded
    second = aggregate(enc.X_test, enc.y_test, problem.layout)
    codes = sample_codes(trained, extra_sweeps=2)
    assert codes.shape == (3 * 2000, 4)
    good = aggregated_nllh(trained.model, codes, second)
    # the base rate alone (θ₀ of a trained model is not it: the gauge step splits the
    # intercept's logit with the tables' θ, mrf.TrainerSettings.gauge)
    rate = problem.aggregated.c[0] / problem.aggregated.d[0]
    flat_theta = np.zeros(problem.layout.K)
    flat_theta[0] = np.log(rate / (1.0 - rate))
    base = MRFModel(problem.layout, trained.mu, flat_theta)
    flat = aggregated_nllh(base, codes, second)
    assert good.score > 0.02 and abs(flat.score) < 0.02 and good.score > flat.score
    assert len(good.per_table) == problem.layout.n_released_tables
    assert np.isfinite(good.per_table["aggregated_nllh"]).all()


def test_sample_codes_leaves_trainer_untouched(trained):
    before = trained.chain.codes.copy()
    sample_codes(trained, extra_sweeps=1)
    np.testing.assert_array_equal(trained.chain.codes, before)


def test_sub_and_split_release(problem):
    agg = problem.aggregated
    lay = agg.layout
    keep = [ti for ti, t in enumerate(lay.tables) if len(t) == 1]
    sub = sub_release(agg, keep)
    assert sub.layout.n_released_tables == len(keep) and sub.d[0] == agg.d[0]
    a, b = split_release(agg, 0.5, seed=1)
    np.testing.assert_array_equal(a.d[1:] + b.d[1:], agg.d[1:])
    np.testing.assert_array_equal(a.c[1:] + b.c[1:], agg.c[1:])
    assert np.all(a.c <= a.d) and abs(a.n - agg.n / 2) < 0.1 * agg.n


@pytest.mark.parametrize(
    "kind,fission,factor,independent",
    [
        ("gaussian", True, np.sqrt(0.5), True),  # data fission: σ/√2 each, independent
        ("gaussian", False, 0.5, False),  # plain thinning: L/2 each, the same L
        ("laplace", True, 0.5, False),  # no fission for Laplace noise
    ],
)
def test_split_release_halves_carry_the_noise_they_have(kind, fission, factor, independent):
    """Each half's mechanism is the noise it actually has, measured against the true counts:
    z_A = d_A − d/2 (noise + thinning of the true records) has sd² ≈ (factor·σ)² + d/4,
    and the halves' noises are independent exactly when split by fission."""
    from aggmrf_explore import TableLayout
    from aggmrf_explore.privacy import make_mechanism, release

    rng = np.random.default_rng(0)
    lay = TableLayout.all_pairs([5] * 6)
    X = rng.integers(0, 5, size=(50_000, 6))
    y = (rng.random(50_000) < 0.3).astype(int)
    agg = aggregate(X, y, lay)
    delta = 1e-6 if "gaussian" in kind else None  # (the Laplace mechanisms take no δ)
    mech = make_mechanism(kind, 0.1, delta, lay)  # std ≈ 250–400 counts, cells of 2 000+
    rel = lay.released
    za, zb = [], []
    for seed in range(5):
        noisy = release(agg, mech, seed=seed)
        a, b = split_release(noisy, 0.5, seed=seed, fission=fission)
        assert a.noise.std == pytest.approx(factor * mech.std) and b.noise.std == a.noise.std
        assert type(a.noise) is type(mech) and a.noise.epsilon == mech.epsilon
        za.append(a.d[rel] - agg.d[rel] / 2)
        zb.append(b.d[rel] - agg.d[rel] / 2)
    za, zb = np.concatenate(za), np.concatenate(zb)
    thinning_var = agg.d[rel].mean() / 4  # Var Binomial(d, ½), averaged over cells
    measured = np.sqrt(max(za.var() - thinning_var, 0.0))
    assert measured == pytest.approx(factor * mech.std, rel=0.08)
    corr = np.corrcoef(za, zb)[0, 1]
    assert abs(corr) < 0.08 if independent else corr > 0.8
    f_a, f_b = split_release(release(agg, mech, seed=9), 0.3, seed=0, fission=fission)
    fa, fb = (np.sqrt(0.3), np.sqrt(0.7)) if independent else (0.3, 0.7)
    assert f_a.noise.std == pytest.approx(fa * mech.std)
    assert f_b.noise.std == pytest.approx(fb * mech.std)
    exact_a, _ = split_release(agg, 0.5, seed=0)
    assert exact_a.noise is None


@pytest.mark.parametrize("method", ["leave-tables-out", "split"])
def test_choose_lambda_theta_runs_on_tables_only(problem, method):
    ch = choose_lambda_theta(
        problem.aggregated,
        [2.0, 0.5],
        method=method,
        iterations=24,
        n_folds=1,
        settings_overrides={"n_gibbs": 1000},
    )
    assert ch.multiplier in (2.0, 0.5)
    assert ch.lambda_theta == lambda_grid(problem.layout, [ch.multiplier])[0]
    assert list(ch.table["multiplier"]) == [2.0, 0.5] and ch.table["score"].notna().all()


def test_validation_release_must_share_schema(problem, trained):
    other = prepare("synthetic", n=500, n_features=3, seed=1).aggregated
    with pytest.raises(AggMRFError, match="different features"):
        aggregated_nllh(trained.model, trained.chain.codes, other)


def test_singles_only_needs_second_release():
    p = prepare(
        "synthetic",
        n=500,
        n_features=3,
        seed=1,
    )
    lay = p.layout
    singles = sub_release(p.aggregated, [ti for ti, t in enumerate(lay.tables) if len(t) == 1])
    with pytest.raises(AggMRFError, match="second release"):
        choose_lambda_theta(singles, [1.0, 0.5], method="leave-tables-out", iterations=6)


def test_pick_one_standard_error_rule():
    table = pd.DataFrame(
        {
            "multiplier": [4.0, 2.0, 1.0, 0.5],
            "lambda_theta": [20.0, 10.0, 5.0, 2.5],
            "score": [0.100, 0.118, 0.120, 0.121],
            "se": [0.004, 0.002, 0.0015, 0.0],
        }
    )
    assert pick(table, "max") == 3
    # the largest λθ within its se of the best: 2.0 is not (0.118 < 0.121 - 0.002), 1.0 is
    assert pick(table, "one-se") == 2
    table.loc[1, "se"] = 0.0035
    assert pick(table, "one-se") == 1
    with pytest.raises(AggMRFError, match="rule"):
        pick(table, "median")


def test_paired_standard_error_of_the_grid(problem, trained):
    """score and se of the grid table follow from the per-table log-likelihoods."""
    from aggmrf_explore.selection.lambda_theta import _Units

    enc = problem.encoded
    second = aggregate(enc.X_test, enc.y_test, problem.layout)
    codes = sample_codes(trained, extra_sweeps=1)
    flat = MRFModel(
        problem.layout, trained.mu, np.where(np.arange(problem.layout.K) == 0, trained.theta, 0)
    )
    scores = [aggregated_nllh(mdl, codes, second) for mdl in (flat, trained.model)]
    units = _Units(2)
    units.add(scores)
    frame = units.frame([2.0, 1.0], problem.layout)
    # the flat model's score is near 0 (≈ −1e-4): a relative tolerance alone would ask for
    # more than float64's rounding of the per-table sums
    np.testing.assert_allclose(frame["score"], [sc.score for sc in scores], rtol=1e-12, atol=1e-14)
    ll = np.column_stack([sc.per_table["loglik"] for sc in scores])
    base = scores[0].per_table["base_loglik"].sum()
    diff = ll[:, 0] - ll[:, 1]
    se = np.sqrt(len(diff)) * diff.std(ddof=1) / abs(base)
    np.testing.assert_allclose(frame["se"], [se, 0.0], atol=1e-15)
    assert frame["se"].iloc[0] > 0


def test_fit_path_lambda_scale_and_warm_start(problem):
    data = problem.aggregated
    pts = fit_path(
        data,
        [1.0, 2.0],
        iterations=5,
        warm_iterations=3,
        lambda_scale=0.5,
        settings_overrides={"n_gibbs": 500},
    )
    T = problem.layout.n_released_tables
    assert [p.multiplier for p in pts] == [2.0, 1.0]  # largest λθ first
    assert [p.lambda_theta for p in pts] == [0.5 * 2.0 * T / 2, 0.5 * 1.0 * T / 2]
    assert [p.iterations for p in pts] == [5, 8]  # the second point continues the first
    with pytest.raises(AggMRFError, match="lambda_scale"):
        fit_path(data, [1.0], iterations=1, lambda_scale=0.0)


def test_choose_reports_cost_and_rule(problem):
    ch = choose_lambda_theta(
        problem.aggregated,
        [2.0, 1.0, 0.5],
        iterations=20,
        rule="max",
        settings_overrides={"n_gibbs": 500},
    )
    assert ch.method == "split" and ch.details["rule"] == "max"
    assert {"score", "se", "cell_score", "cell_se"} <= set(ch.table.columns)
    assert ch.details["path_iterations"] == 2 * (10 + 2 * 2)
    assert ch.details["cost_in_iterations"] == pytest.approx(28 / 20)
    best = ch.table["multiplier"].iloc[int(np.argmax(ch.table["score"]))]
    assert ch.multiplier == best and (ch.table["se"] >= 0).all()
    with pytest.raises(AggMRFError, match="method"):
        choose_lambda_theta(problem.aggregated, [1.0], method="bootstrap")


def test_cross_fit_nllh_exact(problem, trained):
    """The cross-fit score: entropy of the reference against itself, 0 for the base rate,
    and no model beats the reference it is scored against (Gibbs' inequality)."""
    codes = sample_codes(trained, extra_sweeps=0)
    ref = trained.model
    q = sigmoid(ref.decision_function(codes))
    h = -(q * np.log(q) + (1 - q) * np.log1p(-q))
    np.testing.assert_allclose(cross_fit_losses(ref, ref, codes), h, rtol=1e-9)
    rate = float(q.mean())
    K = problem.layout.K
    theta0 = np.zeros(K)
    theta0[0] = np.log(rate / (1 - rate))
    base = MRFModel(problem.layout, trained.mu, theta0)
    assert cross_fit_nllh(base, ref, codes, rate) == pytest.approx(0.0, abs=1e-12)
    own = cross_fit_nllh(ref, ref, codes, rate)
    assert own == pytest.approx(
        1 - h.mean() / (-(rate * np.log(rate) + (1 - rate) * np.log1p(-rate)))
    )
    shrunk = MRFModel(problem.layout, trained.mu, np.where(np.arange(K) == 0, 1.0, 0.5) * ref.theta)
    assert own > cross_fit_nllh(shrunk, ref, codes, rate) > 0


def test_choose_with_second_release_uses_cross_fit(problem):
    enc = problem.encoded
    second = aggregate(enc.X_test, enc.y_test, problem.layout)
    ch = choose_lambda_theta(
        problem.aggregated,
        [2.0, 0.5],
        validation=second,
        iterations=20,
        settings_overrides={"n_gibbs": 500},
    )
    assert ch.method == "second release"
    assert ch.multiplier == ch.table["multiplier"].iloc[int(np.argmax(ch.table["score"]))]
    assert ch.details["path_iterations"] == 2 * 10 + 2
    assert ch.table["cell_score"].between(-1, 1).all() and ch.table["score"].between(0, 1).all()


def test_hashed_tables_keep_their_buckets():
    """Sub-releases keep a table's hash size, and the rows used for per-row rates are the
    hashed buckets (layout.rows), not Σ code·stride."""
    from aggmrf_explore.selection.scores import predicted_rates
    from aggmrf_explore.tables import TableLayout, aggregate

    rng = np.random.default_rng(1)
    X = rng.integers(0, 40, size=(500, 3)).astype(np.int32)
    y = (rng.random(500) < 0.4).astype(np.int8)
    lay = TableLayout(
        [40, 40, 40], [(0,), (1,), (2,), (0, 1), (1, 2)], ["a", "b", "c"], hash_sizes={(0, 1): 16}
    )
    ti = lay.table_index([0, 1])
    model = MRFModel(lay, np.zeros(lay.K), np.zeros(lay.K))
    rate, samples = predicted_rates(model, X, lay, [ti])[ti]
    assert rate.shape == (16,)
    np.testing.assert_array_equal(samples, np.bincount(lay.local_rows(X, ti), minlength=16))
    agg = aggregate(X, y, lay)
    sub = sub_release(agg, [lay.table_index([0, 1]), lay.table_index([0])])
    assert sub.layout.hash_sizes.tolist() == [0, 0, 16]
    np.testing.assert_array_equal(sub.d, aggregate(X, y, sub.layout).d)
