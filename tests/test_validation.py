"""The aggregated-only metric and λθ selection, on small synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import AggMRFError, aggregate
from aggmrf_explore.experiment import prepare
from aggmrf_explore.mrf import MRFModel, PCDTrainer, default_settings
from aggmrf_explore.validation import (
    aggregated_nllh,
    choose_lambda_theta,
    lambda_grid,
    sample_codes,
    split_release,
    sub_release,
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
    base = MRFModel(
        problem.layout, trained.mu, np.where(np.arange(problem.layout.K) == 0, trained.theta, 0)
    )
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


@pytest.mark.parametrize("method", ["leave-tables-out", "split"])
def test_choose_lambda_theta_runs_on_tables_only(problem, method):
    ch = choose_lambda_theta(
        problem.aggregated, [2.0, 0.5], method=method, iterations=24, n_folds=1,
        settings_overrides={"n_gibbs": 1000},
    )  # fmt: skip
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
        choose_lambda_theta(singles, [1.0, 0.5], iterations=6)
