"""The `sweep` subcommand (CSV + PNG of test NLLH against ε), its input errors, the noise
report of `run --json`, and MRF-N on releases with negative counts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.cli import main

SMALL = ["--dataset", "synthetic", "--n", "3000", "--iterations", "40", "--gibbs-samples", "1000"]
COLUMNS = [
    "epsilon",
    "delta",
    "mechanism",
    "sigma",
    "model",
    "noise_seed",
    "nllh_test",
    "seconds",
    "mrf_noiseless",
    "logistic_pairs",
]
MODELS = ["MRF (raw)", "MRF (projected)", "MRF-N"]


def test_sweep_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "sub" / "sweep_small"
    (tmp_path / "sub").mkdir()  # the command line never creates directories
    noise = ["--mechanism", "gaussian", "--delta", "1e-7", "--noise-seeds", "2"]
    status = main(["sweep", *SMALL, "--epsilons", "1,10", *noise, "--out", str(out), "--json"])
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    csv, png = tmp_path / "sub" / "sweep_small.csv", tmp_path / "sub" / "sweep_small.png"
    assert report["csv"] == str(csv) and report["png"] == str(png)
    frame = pd.read_csv(csv)
    assert list(frame.columns) == COLUMNS
    assert len(frame) == 2 * 2 * 3  # ε × noise seeds × models
    assert sorted(
        zip(frame["epsilon"], frame["noise_seed"], frame["model"], strict=True)
    ) == sorted((e, k, m) for e in (1.0, 10.0) for k in (0, 1) for m in MODELS)
    # the two seeds are different releases: different scores
    one = frame[(frame["epsilon"] == 1.0) & (frame["model"] == "MRF-N")]["nllh_test"]
    assert one.nunique() == 2
    summary = pd.DataFrame(report["summary"])
    assert list(summary["model"]) == MODELS * 2 and set(summary["n"]) == {2}
    m = summary[(summary["epsilon"] == 1.0) & (summary["model"] == "MRF-N")]
    assert m["mean"].iloc[0] == pytest.approx(one.mean()) and m["sd"].iloc[0] == pytest.approx(
        one.std()
    )
    assert set(frame["mechanism"]) == {"gaussian"} and set(frame["delta"]) == {1e-7}
    assert np.all(np.isfinite(frame[["sigma", "nllh_test", "mrf_noiseless", "logistic_pairs"]]))
    # σ shrinks as ε grows
    s = frame.groupby("epsilon")["sigma"].first()
    assert s[1.0] > s[10.0] > 0
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_laplace(tmp_path):
    out = tmp_path / "lap"
    argv = ["sweep", *SMALL, "--iterations", "10", "--epsilons", "2", "--mechanism", "laplace"]
    assert main([*argv, "--out", str(out)]) == 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert list(frame["model"]) == MODELS * 3 and set(frame["mechanism"]) == {"laplace"}
    assert list(frame["noise_seed"]) == [0] * 3 + [1] * 3 + [2] * 3  # 3 seeds by default
    assert (out.with_suffix(".png")).exists()


def test_sweep_quick(tmp_path):
    """--quick: ε 1 and 10, 2 noise seeds, 150 iterations (each flag still overrides it)."""
    out = tmp_path / "quick"
    small = ["--dataset", "synthetic", "--n", "2000", "--gibbs-samples", "500"]
    assert main(["sweep", *small, "--quick", "--out", str(out)]) == 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(set(frame["epsilon"])) == [1.0, 10.0] and sorted(set(frame["noise_seed"])) == [
        0,
        1,
    ]
    assert len(frame) == 2 * 2 * 3
    flags = ["--epsilons", "3", "--noise-seeds", "1", "--iterations", "5"]
    assert main(["sweep", *small, "--quick", *flags, "--out", str(out)]) == 0
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert set(frame["epsilon"]) == {3.0} and len(frame) == 3


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--epsilons", "0,-1"], "--epsilons must be positive finite numbers"),
        (["--epsilons", "abc"], "--epsilons must be comma-separated numbers"),
        (["--epsilons", "1,inf"], "--epsilons must be positive finite numbers"),
        (["--epsilons", ","], "--epsilons must be comma-separated numbers"),
        (
            ["--mechanism", "gaussian", "--delta", "2", "--epsilons", "1"],
            "--delta: must be a finite number ≥ 1e-50 and < 1",
        ),
        (["--mechanism", "gaussian", "--delta", "0", "--epsilons", "1"], "delta"),
        (["--iterations", "0", "--epsilons", "1"], "--iterations: must be an integer from 1"),
        (["--noise-seeds", "0", "--epsilons", "1"], "--noise-seeds: must be an integer from 1"),
    ],
)
def test_sweep_bad_input(extra, match, tmp_path, capsys):
    out = tmp_path / "never"
    status = main(["sweep", *SMALL, *extra, "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and match in lines[0], err
    assert not out.with_suffix(".csv").exists() and not out.with_suffix(".png").exists()


@pytest.mark.parametrize(
    "mechanism,keys",
    [
        ("gaussian", ("sigma", "l2_sensitivity")),
        ("laplace", ("sigma", "scale", "l1_sensitivity")),
    ],
)
def test_run_json_reports_noise(mechanism, keys, capsys):
    argv = ["run", *SMALL, "--iterations", "5", "--mechanism", mechanism, "--epsilon", "1"]
    status = main([*argv, "--json", "--no-baselines", "--noise-aware"])
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    noise = out["noise"]
    assert noise["mechanism"] == mechanism and noise["epsilon"] == 1.0
    assert noise["accounting"] == "both"
    for k in keys:
        assert np.isfinite(noise[k]) and noise[k] > 0, k
    T = out["n_tables"]
    if mechanism == "gaussian":  # both columns: Δ2 = √(2T)
        assert noise["l2_sensitivity"] == pytest.approx(np.sqrt(2 * T))
    else:  # Δ1 = 2T, std = √2·b
        assert noise["l1_sensitivity"] == pytest.approx(2 * T)
        assert noise["sigma"] == pytest.approx(np.sqrt(2) * noise["scale"])
    if mechanism == "gaussian":
        assert noise["calibration"] == "analytic"
    assert out["settings"]["noise_aware"] is True
    assert np.isfinite(out["models"]["mrf"]["nllh_test"])


def test_mrf_n_gradient_with_negative_counts():
    """Very noisy release (many negative counts and label sums): MRF-N's targets are finite and
    in [0, n], c ≤ d, and training stays finite."""
    from aggmrf_explore.experiment import prepare
    from aggmrf_explore.mrf import PCDTrainer, default_settings
    from aggmrf_explore.privacy import make_mechanism, release

    problem = prepare("synthetic", n=3000, seed=0)
    lay = problem.layout
    mech = make_mechanism("gaussian", 0.05, 1e-7, lay)
    data = release(problem.aggregated, mech, seed=1)
    rel = lay.released
    assert (data.d[rel] < 0).mean() > 0.1 and (data.c[rel] < 0).mean() > 0.1
    settings = default_settings(lay, data.n, n_gibbs=1000, noise_aware=True)
    trainer = PCDTrainer(data, settings, problem.encoded.X_test, problem.encoded.y_test)
    for stats in trainer.step(20):
        assert np.isfinite(stats.d_error) and np.isfinite(stats.c_error)
        assert np.isfinite(stats.nllh_eval)
    tg = trainer._targets(trainer.d_hat, trainer.c_hat)
    assert np.all(np.isfinite(tg.d)) and np.all(np.isfinite(tg.c))
    d, c = tg.d[rel], tg.c[rel]  # (the derived intercept row keeps its projected total)
    assert np.all((d >= 0) & (d <= data.n)) and np.all((c >= 0) & (c <= d))
    noise_term = data.d[rel] - tg.d[rel]  # E[L | A + L = b], the paper's extra gradient term
    assert np.all(np.isfinite(noise_term))
    assert np.all(np.isfinite(trainer.mu)) and np.all(np.isfinite(trainer.theta))


def test_sweep_central_and_local(tmp_path, capsys):
    """``--privacy central,local``: four models per ε and seed; local MRF-N beats local MRF."""
    out = tmp_path / "cl"
    flags = ["--epsilons", "2,8", "--noise-seeds", "2", "--privacy", "central,local"]
    status = main(["sweep", *SMALL, *flags, "--sizes", "1", "--out", str(out), "--json"])
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(tmp_path / "cl.csv")
    assert (tmp_path / "cl.png").stat().st_size > 0
    assert list(frame.columns) == [*COLUMNS[:8], "privacy", "noise_rms", "n_records", *COLUMNS[8:]]
    models = ["central MRF", "central MRF-N", "local MRF", "local MRF-N"]
    assert sorted(
        zip(frame["epsilon"], frame["noise_seed"], frame["model"], strict=True)
    ) == sorted((e, k, m) for e in (2.0, 8.0) for k in (0, 1) for m in models)
    assert set(frame.loc[frame["model"].str.startswith("local"), "privacy"]) == {"local"}
    # local noise (σ ∝ √n per cell) is far larger than central noise at the same ε
    local_rms = frame.loc[frame["privacy"] == "local", "noise_rms"]
    central_rms = frame.loc[frame["privacy"] == "central", "noise_rms"]
    assert local_rms.min() > central_rms.max()
    s = pd.DataFrame(report["summary"]).set_index(["epsilon", "model"])["mean"]
    assert s[(2.0, "local MRF-N")] > s[(2.0, "local MRF")]
    bad = main(["sweep", *SMALL, "--privacy", "central,remote", "--out", str(tmp_path / "x")])
    assert bad != 0 and "--privacy" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
