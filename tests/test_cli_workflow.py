"""The records-free workflow from the command line: aggregate → run --tables → predict."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.cli import main
from aggmrf_explore.selection.lambda_theta import DEFAULT_MULTIPLIERS


@pytest.fixture(scope="module")
def csvs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(3)

    def make(n):
        age = rng.integers(18, 70, n)
        job = rng.choice(["a", "b", "c"], n)
        town = rng.choice(["x", "y"], n)
        p = 0.15 + 0.4 * (job == "a") + 0.005 * (age - 18) * (town == "x")
        return pd.DataFrame(
            {"age": age, "job": job, "town": town, "y": (rng.random(n) < p).astype(int)}
        )

    make(1500).to_csv(d / "train.csv", index=False)
    make(600).to_csv(d / "test.csv", index=False)
    return d


FAST = ["--iterations", "20", "--gibbs-samples", "500", "--seed", "4"]


def _run(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_round_trip_same_model_and_nllh(csvs, capsys):
    d = csvs
    train, test = str(d / "train.csv"), str(d / "test.csv")
    flags = ["--label", "y", "--no-baselines", "--json", "--export-model", str(d / "m_csv.json")]
    a = json.loads(_run(capsys, ["run", "--csv", train, "--test-csv", test, *flags, *FAST]))
    _run(capsys, ["aggregate", "--csv", train, "--label", "y", "--out", str(d / "rel")])
    flags = ["--test-csv", test, "--json", "--export-model", str(d / "m_tab.json")]
    b = json.loads(_run(capsys, ["run", "--tables", str(d / "rel"), *flags, *FAST]))
    assert a["models"]["mrf"]["nllh_test"] == b["models"]["mrf"]["nllh_test"]
    m1 = json.loads((d / "m_csv.json").read_text())
    m2 = json.loads((d / "m_tab.json").read_text())
    assert m1["tables"] == m2["tables"] and m1["intercept"] == m2["intercept"]
    # predict on raw records gives the in-memory probabilities' NLLH
    model, out = str(d / "m_tab.json"), str(d / "p.csv")
    _run(capsys, ["predict", "--model", model, "--csv", test, "--out", out, "--label", "y"])
    p = pd.read_csv(d / "p.csv")["probability"].to_numpy()
    from aggmrf_explore.metrics import nllh

    y = pd.read_csv(d / "test.csv")["y"].to_numpy()
    assert nllh(y, p) == pytest.approx(b["models"]["mrf"]["nllh_test"], abs=1e-12)


def test_second_release_and_auto(csvs, capsys):
    d = csvs
    train, test = str(d / "train.csv"), str(d / "test.csv")
    r1, r2, schema = str(d / "r1"), str(d / "r2"), str(d / "r1" / "release.json")
    noise = ["--mechanism", "gaussian", "--epsilon", "5"]
    _run(capsys, ["aggregate", "--csv", train, "--label", "y", "--out", r1, *noise])
    _run(capsys, ["aggregate", "--csv", test, "--label", "y", "--out", r2, "--schema", schema])
    flags = ["--lambda-theta", "auto", "--noise-aware", "--json"]
    out = json.loads(
        _run(capsys, ["run", "--tables", r1, "--validation-tables", r2, *flags, *FAST])
    )
    assert out["noise"]["mechanism"] == "discrete_gaussian"  # aggregate: integer noise
    auto = out["lambda_theta_auto"]
    assert auto["method"] == "second release" and len(auto["grid"]) == len(DEFAULT_MULTIPLIERS)
    assert out["settings"]["lambda_theta"] == auto["lambda_theta"]
    mrf = out["models"]["mrf"]
    assert np.isfinite(mrf["aggregated_nllh"])
    # the cross-fit metric estimates the record-level NLLH (same scale, base rate = 0)
    assert 0.0 < mrf["cross_fit_nllh"] < 1.0


def test_malformed_release_is_a_one_line_error(csvs, capsys):
    d = csvs
    _run(
        capsys,
        ["aggregate", "--csv", str(d / "train.csv"), "--label", "y", "--out", str(d / "bad")],
    )
    f = next((d / "bad").glob("*_job__town.csv"))
    df = pd.read_csv(f)
    df.loc[0, "label_sum"] = df.loc[0, "count"] + 5
    df.to_csv(f, index=False)
    assert main(["run", "--tables", str(d / "bad"), *FAST]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "job × town" in err and "line 2" in err


def test_lambda_theta_auto_is_run_only(capsys):
    assert main(["sweep", "--dataset", "toy", "--lambda-theta", "auto", "--epsilons", "1"]) == 2
    assert "auto" in capsys.readouterr().err


def test_a_release_that_declares_noise_trains_mrf_n_by_default(csvs, capsys):
    """Defaults read the release: declared noise → MRF-N, said on stderr; --no-noise-aware
    trains the plain MRF; an exact release trains the plain MRF."""
    d = csvs
    for name, noise in (("noisy", ["--mechanism", "laplace", "--epsilon", "2"]), ("exact", [])):
        argv = ["aggregate", "--csv", str(d / "train.csv"), "--label", "y", "--out", str(d / name)]
        assert main([*argv, *noise]) == 0
        capsys.readouterr()
    assert main(["run", "--tables", str(d / "noisy"), "--json", *FAST]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["settings"]["noise_aware"] is True
    assert "declares its noise (discrete_laplace" in err and "--no-noise-aware" in err
    plain = json.loads(
        _run(capsys, ["run", "--tables", str(d / "noisy"), "--no-noise-aware", "--json", *FAST])
    )
    assert plain["settings"]["noise_aware"] is False
    exact = json.loads(_run(capsys, ["run", "--tables", str(d / "exact"), "--json", *FAST]))
    assert exact["settings"]["noise_aware"] is False
