"""Reproducing the paper's Table 4: a quick version for every run, the full one marked slow.

Full runs: `python -m pytest -m slow tests/test_reproduction.py` (a few minutes).
"""

from __future__ import annotations

import json

import pytest

from aggmrf_explore.baselines import fit_baselines
from aggmrf_explore.cli import main
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import default_settings


def test_quick_adult_reproduction():
    """Adult subsample (8 000 records), short training: the paper's ordering holds."""
    problem = prepare("adult", n=8000, seed=0)
    settings = default_settings(problem.layout, problem.n_train, n_gibbs=4000)
    run = train_mrf(problem, settings, 250, eval_every=1000)
    base = fit_baselines(problem)
    assert run.nllh_test > 0.37
    assert abs(run.nllh_test - base["logistic_pairs"].nllh_test) < 0.02
    assert base["naive_bayes"].nllh_test < run.nllh_test
    assert base["best_pair"].nllh_test < run.nllh_test


@pytest.mark.slow
@pytest.mark.parametrize("dataset, floor", [("adult", 0.40), ("bank", 0.40)])
def test_full_reproduction(capsys, dataset, floor):
    assert main(["run", "--dataset", dataset, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    m = res["models"]
    assert m["mrf"]["nllh_test"] >= floor
    # seed 0 gives 0.0014 (Adult), 0.0029 (Bank) with the default momentum and 3 000
    # iterations (docs/out_of_sample.md; 0.0015, 0.0034 before: docs/bank_gap.md)
    assert abs(m["mrf"]["nllh_test"] - m["logistic_pairs"]["nllh_test"]) <= 0.004
    assert m["naive_bayes"]["nllh_test"] < m["mrf"]["nllh_test"]
    assert m["best_pair"]["nllh_test"] < m["mrf"]["nllh_test"]
