"""The command line as a newcomer meets it: the messages name command-line flags, the text
tables line up, a value seen only in the test split follows the documented "(other)" policy
with a warning, and long work shows progress on a terminal (a real pseudo-terminal)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.cli import main
from aggmrf_explore.cli.report import print_run

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--iterations", "30", "--gibbs-samples", "1000"]


def run_cli(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_bad_dataset_names_the_command_line_flags(capsys):
    code, _, err = run_cli(capsys, ["run", "--dataset", "adlt"])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: unknown dataset 'adlt' — did you mean --dataset adult?"), err
    assert "--csv FILE --label COLUMN" in err and "load_csv" not in err, err


def test_the_run_table_lines_up_whatever_the_model_names(capsys):
    models = {
        "mrf": {"nllh_test": 0.133, "seconds": 0.9},
        "naive_bayes_plain": {"nllh_test": 0.2008, "seconds": 0.1},
        "a_model_with_a_long_name": {"nllh_test": float("nan"), "seconds": 12.0},
    }
    print_run(
        {
            "dataset": "xor",
            "n_train": 10,
            "n_test": 10,
            "n_features": 3,
            "n_tables": 6,
            "n_rows": 19,
            "noise": {"mechanism": "none"},
            "models": models,
            "settings": {
                "iterations": 20,
                "n_gibbs": 2000,
                "lambda_mu": 1,
                "lambda_theta": 3,
                "step_mu": 0.3,
                "step_theta": 0.2,
                "gradient": "rescaled",
                "noise_aware": False,
            },
        }
    )
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index("") + 1 :]
    assert table[0].startswith("model") and len(table) == 4, table
    # the columns are right-aligned: every row of the table ends at the same column, and
    # each score starts where the header's "test NLLH" does
    assert len({len(line) for line in table}) == 1, "\n".join(table)
    start = table[0].index("test NLLH")
    for line in table[1:]:
        assert line[start - 1] == " " and line[:start].rstrip() in models, line


@pytest.fixture()
def rare_value_csvs(tmp_path):
    """train.csv, and test.csv whose column 'previous' holds the value 7 (3 rows) that
    train.csv lacks."""
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "previous": rng.choice([0, 1, 2], n),
            "job": rng.choice(["admin", "services", "student"], n),
        }
    )
    df["y"] = np.where(rng.random(n) < 0.2 + 0.3 * (df["previous"] > 0), "yes", "no")
    df.to_csv(tmp_path / "train.csv", index=False)
    test = df.iloc[:100].copy()
    test.loc[:2, "previous"] = 7
    test.to_csv(tmp_path / "test.csv", index=False)
    return tmp_path


def test_a_value_seen_only_in_the_test_split_counts_as_other_with_a_warning(
    capsys, rare_value_csvs
):
    d = rare_value_csvs
    data = ["--csv", str(d / "train.csv"), "--label", "y", "--test-csv", str(d / "test.csv")]
    code, out, err = run_cli(capsys, ["run", *data, *FAST, "--no-baselines", "--json"])
    assert code == 0, err
    assert json.loads(out)["n_test"] == 100
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "'previous'" in warnings[0] and "'7' (3 rows)" in warnings[0], warnings
    assert "'(other)'" in warnings[0] and "--unseen error" in warnings[0], warnings
    # the strict policy is still there, as one error line
    code, out, err = run_cli(capsys, ["run", *data, *FAST, "--no-baselines", "--unseen", "error"])
    assert code == 2 and out == "" and err.startswith("error: column 'previous'"), err
    assert "'7' (3 rows)" in err and err.count("\n") == 1, err


def test_a_split_of_one_file_warns_too(capsys, tmp_path):
    """One CSV, the package's seeded split: the one row holding a rare value lands in the
    test split for one seed; that run warns and trains instead of stopping."""
    rng = np.random.default_rng(1)
    n = 200
    df = pd.DataFrame({"previous": rng.choice([0, 1], n), "job": rng.choice(["a", "b"], n)})
    df["y"] = np.where(rng.random(n) < 0.3, "yes", "no")
    df.loc[17, "previous"] = 7
    df.to_csv(tmp_path / "one.csv", index=False)
    outcomes = {}
    for seed in range(6):
        args = ["run", "--csv", str(tmp_path / "one.csv"), "--label", "y", "--seed", str(seed)]
        code, _, err = run_cli(capsys, [*args, *FAST, "--no-baselines", "--json"])
        assert code == 0, err
        outcomes[seed] = "'7' (1 row)" in err
    assert any(outcomes.values()), f"the rare row never fell in the test split: {outcomes}"


def _on_a_terminal(args: list[str], timeout: float) -> str:
    """What ``aggmrf-explore ARGS`` writes on a pseudo-terminal of 100 × 40 characters
    (stdout and stderr both, as a user sees them)."""
    import fcntl
    import select
    import struct
    import termios

    main_fd, term_fd = os.openpty()
    fcntl.ioctl(term_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    code = f"import sys; from aggmrf_explore.cli import main; sys.exit(main({args!r}))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=term_fd,
        stdout=term_fd,
        stderr=term_fd,
        env=env,
        close_fds=True,
    )
    os.close(term_fd)
    chunks, t0 = [], time.time()
    while time.time() - t0 < timeout:
        if select.select([main_fd], [], [], 1.0)[0]:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # the command ended and closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(main_fd)
    assert proc.wait(timeout=30) == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode(errors="replace")


def test_json_output_shows_progress_on_a_terminal():
    """``run --json`` on a terminal: the bars on stderr while it works, the JSON on stdout."""
    text = _on_a_terminal(["run", "--dataset", "synthetic", "--n", "3000", *FAST, "--json"], 300)
    assert re.search(r"MRF.*30/30", text), text[-1500:]
    assert re.search(r"baselines.*5/5", text), text[-1500:]
    assert '"dataset": "synthetic"' in text
    assert "preparing the data: synthetic" in text  # the phase before the first bar
