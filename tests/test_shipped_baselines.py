"""The slow baselines of the bundled datasets ship with the package: a class switching to
Adult sees the logistic skyline at once, and ``run --dataset adult`` does not fit it again.
A shipped result is used only for exactly the problem, seed and code it was fitted for."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from aggmrf_explore import baselines

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "notebooks" / "tools"))
from ship_baselines import default_problems  # noqa: E402


@pytest.fixture(scope="module")
def problems():
    return default_problems()


def test_every_default_problem_is_shipped_for_this_code(problems):
    """Fails after a change to baselines.py or to the bundled data: run
    ``python notebooks/tools/ship_baselines.py`` (a stale file is never used)."""
    assert baselines.SHIPPED.exists()
    for problem in problems:
        for name in baselines.SHIPPED_BASELINES:
            got = baselines.shipped_baseline(problem, name, seed=0)
            assert got is not None, f"{name} of {problem.name} is not shipped for this code"
            assert got.proba_test.shape == problem.encoded.y_test.shape
            assert np.isfinite(got.proba_test).all() and 0 < got.nllh_test < 1


def test_fit_baselines_takes_them_instead_of_fitting(problems, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("fitted a shipped baseline again")

    monkeypatch.setattr(baselines, "logistic_pairs", refuse)
    monkeypatch.setattr(baselines, "logistic_onehot", refuse)
    out = baselines.fit_baselines(problems[0], which=baselines.SHIPPED_BASELINES)
    assert all(r.info["precomputed"] for r in out.values())


def test_another_problem_or_seed_is_never_given_a_shipped_result(problems):
    p = problems[0]
    assert baselines.shipped_baseline(p, "logistic_pairs", seed=1) is None
    enc = p.encoded
    fewer = dataclasses.replace(
        p, encoded=dataclasses.replace(enc, X_test=enc.X_test[1:], y_test=enc.y_test[1:])
    )
    assert baselines.shipped_baseline(fewer, "logistic_pairs", seed=0) is None
    assert baselines.shipped_baseline(p, "naive_bayes", seed=0) is None  # (cheap: not shipped)


def test_a_shipped_result_is_what_a_fit_gives():
    """Bank's one-hot logistic refitted here (seconds) equals the shipped one."""
    bank = [p for p in default_problems() if "bank" in p.name.lower()][0]
    enc = bank.encoded
    fresh = baselines.logistic_onehot(
        enc.X_train, enc.y_train, enc.X_test, enc.y_test, bank.layout, seed=0
    )
    shipped = baselines.shipped_baseline(bank, "logistic", seed=0)
    assert shipped.nllh_test == pytest.approx(fresh.nllh_test, abs=1e-12)
    np.testing.assert_allclose(shipped.proba_test, fresh.proba_test, rtol=1e-6, atol=1e-7)
