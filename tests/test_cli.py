"""The command line: JSON shape, the XOR command, and clear errors for bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.cli import main

FAST = ["--iterations", "30", "--gibbs-samples", "1000"]


def run_cli(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_json_shape(capsys):
    code, out, _ = run_cli(
        capsys, ["run", "--dataset", "synthetic", "--n", "3000", *FAST, "--json"]
    )
    assert code == 0
    res = json.loads(out)
    assert res["dataset"] == "synthetic" and res["n_train"] == 3000 and res["n_test"] == 3000
    assert set(res["models"]) == {
        "mrf",
        "logistic_pairs",
        "logistic",
        "naive_bayes",
        "naive_bayes_plain",
        "best_pair",
    }
    for m in res["models"].values():
        assert np.isfinite(m["nllh_test"]) and m["seconds"] >= 0
    assert res["settings"]["n_gibbs"] == 1000 and res["settings"]["iterations"] == 30
    assert res["noise"] == {"mechanism": "none"}


def test_run_on_a_local_release(capsys):
    """``run --mechanism local``: randomized response on every training record, the same
    release call as the central mechanisms; MRF-N models its per-cell noise."""
    local = ["--mechanism", "local", "--epsilon", "8", "--noise-aware"]
    argv = ["run", "--dataset", "toy", *FAST, "--no-baselines", "--json", *local]
    code, out, _ = run_cli(capsys, argv)
    assert code == 0
    res = json.loads(out)
    noise = res["noise"]
    assert noise["mechanism"] == "randomized-response" and noise["accounting"] == "local"
    assert noise["epsilon"] == 8 and noise["delta"] == 0 and noise["sigma"] > 0
    assert np.isfinite(res["models"]["mrf"]["nllh_test"]) and res["settings"]["noise_aware"]


def test_run_table_output(capsys):
    code, out, _ = run_cli(
        capsys, ["run", "--dataset", "xor", "--n", "2000", *FAST, "--no-baselines"]
    )
    assert code == 0
    assert "test NLLH" in out and "mrf" in out


def test_xor_command(capsys):
    """PCD lands within 5·10⁻³ of the exact max-ent of its own tables (measured 2–3·10⁻⁴ at
    these settings, seeds 0–3); that max-ent is infinite data's 0.1 / 0.9 up to the sampling
    error of the records.  A fresh seed each run (in the failure message)."""
    seed = int(np.random.SeedSequence().entropy % 2**31)
    argv = ["xor", "--n", "40000", "--iterations", "300", "--seed", str(seed)]
    code, out, _ = run_cli(capsys, [*argv, "--json"])
    assert code == 0
    states = json.loads(out)["states"]
    assert len(states) == 8
    for s in states:
        if s["p_x"] == 0:
            continue
        x3 = s["x"][2]
        assert s["truth"] == (0.75 if x3 else 0.25)
        assert s["maxent_exact"] == pytest.approx(0.9 if x3 else 0.1, abs=1e-3)
        assert s["mrf"] == pytest.approx(s["maxent_tables"], abs=5e-3), (seed, s)
        assert s["maxent_tables"] == pytest.approx(s["maxent_exact"], abs=0.05), (seed, s)
        assert s["logistic"] == pytest.approx(s["truth"], abs=0.02), (seed, s)
    code, text, _ = run_cli(capsys, argv)
    assert code == 0
    assert "MRF (PCD) against the exact max-ent of the same tables: max |ΔP|" in text
    assert "(the sampling error of 40,000 records)" in text


@pytest.fixture
def csv_dir(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n),
            "size": rng.normal(10, 3, n).round(2),
            "shape": rng.choice(["round", "square"], n),
        }
    )
    df["bought"] = np.where(rng.random(n) < 0.3 + 0.3 * (df["colour"] == "red"), "yes", "no")
    good = tmp_path / "good.csv"
    df.to_csv(good, index=False)
    three = df.copy()
    three.loc[:5, "bought"] = "maybe"
    three.to_csv(tmp_path / "three.csv", index=False)
    single = df.copy()
    single["bought"] = "yes"
    single.to_csv(tmp_path / "single.csv", index=False)
    holes = df.copy().astype({"size": "float64"})
    holes.loc[3, "size"] = np.nan
    holes.to_csv(tmp_path / "holes.csv", index=False)
    unseen = df.copy()
    unseen.loc[:3, "shape"] = "triangle"
    unseen.to_csv(tmp_path / "unseen_test.csv", index=False)
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 20)
    return tmp_path


def test_run_own_csv(capsys, csv_dir):
    code, out, _ = run_cli(
        capsys,
        ["run", "--csv", str(csv_dir / "good.csv"), "--label", "bought", *FAST, "--json"],
    )
    assert code == 0
    res = json.loads(out)
    assert res["n_train"] + res["n_test"] == 400 and res["n_features"] == 3


@pytest.mark.parametrize(
    "args, match",
    [
        (["run", "--dataset", "nope"], "unknown dataset 'nope'"),
        (["run", "--csv", "{d}/three.csv", "--label", "bought"], "more than two|maybe"),
        (
            ["run", "--csv", "{d}/single.csv", "--label", "bought"],
            "single class|one class|only one",
        ),
        (["run", "--csv", "{d}/holes.csv", "--label", "bought"], "size"),
        (["run", "--csv", "{d}/good.csv", "--label", "nope"], "nope"),
        (
            ["run", "--csv", "{d}/good.csv", "--label", "bought", "--features", "colour,weight"],
            "weight",
        ),
        (["run", "--csv", "{d}/binary.csv", "--label", "bought"], "CSV|csv"),
        (["run", "--csv", "{d}/missing.csv", "--label", "bought"], "not found"),
        (
            [
                "run",
                "--csv",
                "{d}/good.csv",
                "--label",
                "bought",
                "--test-csv",
                "{d}/unseen_test.csv",
                "--unseen",
                "error",
            ],
            "triangle",
        ),
        (["run", "--dataset", "toy", "--lambda-theta", "-1"], "--lambda-theta: .*≥ 0"),
        (["run", "--dataset", "toy", "--step-mu", "0"], "--step-mu: .*> 0"),
        (["run", "--dataset", "toy", "--gibbs-samples", "0"], "--gibbs-samples: .*integer"),
        (["run", "--dataset", "toy", "--iterations", "0"], "iterations"),
        (["run", "--dataset", "toy", "--mechanism", "gaussian"], "--epsilon: .*needs ε"),
        (["run", "--dataset", "toy", "--noise-aware"], "--noise-aware: .*needs a noise"),
        (
            "run --dataset toy --mechanism local --epsilon 1 --delta 1e-6".split(),
            "--delta: δ .*goes only with gaussian or discrete_gaussian; mechanism local",
        ),
        (["run"], "choose the data"),
    ],
)
def test_bad_input_gives_one_clear_line(capsys, csv_dir, args, match):
    args = [a.replace("{d}", str(csv_dir)) for a in args]
    code, out, err = run_cli(capsys, args)
    assert code == 2
    assert err.startswith("error: ") and "Traceback" not in err
    assert pytest.importorskip("re").search(match, err), err


def test_progress_bar_is_drawn_by_the_training_loop(capsys, monkeypatch):
    """On a terminal, `run` draws its bar (tqdm, on stderr) from the trainer's Progress
    callback, up to the last of 30 iterations; --quiet, or a stderr that is not a
    terminal, draws none and stdout stays clean."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run_cli(capsys, ["run", "--dataset", "toy", *FAST, "--no-baselines", "--json"])
    assert code == 0 and json.loads(out)["dataset"] == "toy"
    assert "MRF" in err and "30/30" in err and err.endswith("\n")
    code, _, err = run_cli(capsys, ["run", "--dataset", "toy", *FAST, "--no-baselines", "-q"])
    assert code == 0 and "30/30" not in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    code, _, err = run_cli(capsys, ["run", "--dataset", "toy", *FAST, "--no-baselines"])
    assert code == 0 and "30/30" not in err


def test_trainer_settings_from_the_flags():
    from aggmrf_explore.cli.args import trainer_settings
    from aggmrf_explore.cli.parser import build_parser
    from aggmrf_explore.errors import AggMRFError
    from aggmrf_explore.experiment import prepare
    from aggmrf_explore.mrf import default_settings

    layout = prepare("toy").layout
    parse = build_parser().parse_args
    flags = ["--gibbs-samples", "123", "--lambda-theta", "auto", "--step-theta", "0.05"]
    args = parse(["run", "--dataset", "toy", *flags, "--no-precondition", "--seed", "5"])
    s = trainer_settings(args, layout, 5)
    default = default_settings(layout, 5)
    assert (s.n_gibbs, s.step_theta, s.precondition, s.seed) == (123, 0.05, False, 5)
    assert s.lambda_theta == default.lambda_theta and s.step_mu == default.step_mu
    sweep = parse(["sweep", "--dataset", "toy", "--lambda-theta", "auto"])
    with pytest.raises(AggMRFError, match="`run` only"):
        trainer_settings(sweep, layout, 5)


def test_python_dash_m_runs_the_command_line():
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "aggmrf_explore.cli", "xor", "--n", "50"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("error: argument --n: must be an integer from 100 "), res.stderr


# ---------------------------------------------------------------------- one error channel
@pytest.mark.parametrize(
    "exc, says",
    [
        (PermissionError(13, "Permission denied", "/srv/x.csv"), "permission denied: '/srv/x.csv'"),
        (IsADirectoryError(21, "Is a directory", "/srv"), "is a directory"),
        (FileNotFoundError(2, "No such file", "/nope"), "no such file"),
        (MemoryError(), "out of memory"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "UTF-8"),
        (OSError(28, "No space left on device", "/full"), "no space left"),
    ],
)
def test_expected_failures_are_one_error_line(monkeypatch, capsys, exc, says):
    from aggmrf_explore import cli

    def boom(args):
        raise exc

    monkeypatch.setitem(cli.COMMANDS, "xor", boom)
    code, out, err = run_cli(capsys, ["xor"])
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert " — " in err and says.lower() in err.lower(), err


def test_a_bug_shows_its_traceback_and_asks_for_a_report(monkeypatch, capsys):
    from aggmrf_explore import cli

    def boom(args):
        raise KeyError("internal")

    monkeypatch.setitem(cli.COMMANDS, "xor", boom)
    code, out, err = run_cli(capsys, ["xor"])
    assert code == 1 and "Traceback" in err and "KeyError" in err
    assert err.strip().splitlines()[-1].startswith("this is a bug in aggmrf-explore")


def test_argparse_errors_are_one_line(capsys):
    code, out, err = run_cli(capsys, ["run", "--dataset", "toy", "--frobnicate"])
    assert code == 2 and err.count("\n") == 1 and "usage:" not in err
    assert err.startswith("error: unrecognized arguments: --frobnicate"), err


def test_long_multi_line_errors_become_one_short_line():
    from aggmrf_explore.cli.channel import MAX_LINE, one_line

    msg = (
        "inconsistent release 'r':\n  - "
        + "\n  - ".join(["problem " * 40] * 5)
        + "\n(fix: --lenient)"
    )
    line = one_line(msg)
    assert "\n" not in line and len(line) <= MAX_LINE and line.endswith("(fix: --lenient)")
    assert line.startswith("inconsistent release 'r': problem")
