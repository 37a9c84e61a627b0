"""Every reader meets the hostile-input corpus (tests/hostile/corpus.py) the way a user would:
through the command line.  Each case ends in one ``error:`` line and exit status 2, or in a
documented acceptance with correct numbers; never a traceback, a hang or a wrong number."""

from __future__ import annotations

import collections
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aggmrf_explore.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from hostile.corpus import CASES, Case, make_fixtures  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    make_fixtures(d)
    return d


def _argv(case: Case, d: Path) -> list[str]:
    return [a.replace("{d}", str(d)) for a in case.argv]


def _run_in_process(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse, or a command that exits by itself
        status = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return status, out, err


def _run_subprocess(argv: list[str], timeout: float = 60.0) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "aggmrf_explore.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return proc.returncode, proc.stdout, proc.stderr


def check_outcome(case: Case, d: Path, status: int, out: str, err: str) -> None:
    assert "Traceback" not in err, f"{case.id}: traceback\n{err}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if case.expect == "error":
        errors = [ln for ln in lines if not ln.startswith("warning:")]
        assert status == 2, f"{case.id}: exit {status}, expected 2\n{err}\n{out[-2000:]}"
        assert len(errors) == 1 and errors[0].startswith("error: "), f"{case.id}:\n{err}"
        if case.says:
            assert case.says.lower() in errors[0].lower(), f"{case.id}: {errors[0]}"
        assert len(errors[0]) < 600, f"{case.id}: error line too long (echoed input?)"
    else:
        assert status == 0, f"{case.id}: exit {status}\n{err}"
        if case.warns:
            assert any(ln.startswith("warning:") for ln in lines), f"{case.id}: no warning\n{err}"
        if case.check is not None:
            case.check(d, out, err)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case: Case, fixtures: Path, capsys):
    if case.build is not None:
        case.build(fixtures)
    argv = _argv(case, fixtures)
    if case.hang:
        t0 = time.perf_counter()
        status, out, err = _run_subprocess(argv, timeout=60)
        assert time.perf_counter() - t0 < 60
    else:
        status, out, err = _run_in_process(argv, capsys)
    check_outcome(case, fixtures, status, out, err)


def test_corpus_covers_every_class():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    kinds = collections.Counter(c.kind for c in CASES)
    assert len(CASES) >= 80, len(CASES)
    for kind in ("cli-number", "csv", "release", "model", "output"):
        assert kinds[kind] >= 5, kinds


def test_no_error_path_echoes_a_foreign_file(fixtures: Path, capsys):
    """A release pointing at /etc/passwd is refused without echoing any of its lines."""
    from hostile.corpus import table_file_to

    table_file_to("/etc/passwd")(fixtures)
    status, out, err = _run_in_process(
        ["run", "--tables", str(fixtures / "rel"), "--iterations", "2"], capsys
    )
    assert status == 2
    for line in Path("/etc/passwd").read_text().splitlines()[:5]:
        assert line not in err and line not in out


def test_two_id_columns_refused_fast_and_small(fixtures: Path):
    """A clear error in < 5 s without exceeding 500 MB peak RSS.

    "5 s" is the command's CPU time (user + system, from ``getrusage``): the machine that
    runs the suite is shared, so wall time is only bounded loosely (a command that
    allocated the 3 GiB table would take far longer and far more memory).
    """
    from hostile.corpus import two_id_columns

    two_id_columns().to_csv(fixtures / "ids.csv", index=False)
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run([sys.executable, '-m', 'aggmrf_explore.cli', 'aggregate', '--csv',"
        f" {str(fixtures / 'ids.csv')!r}, '--label', 'y', '--out', {str(fixtures / 'ids_rel')!r}],"
        " capture_output=True, text=True)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(p.returncode, time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)\n"
        "print(p.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    first, *rest = res.stdout.splitlines()
    status, wall, cpu, peak_mb = first.split()
    assert int(status) == 2, res.stdout
    errors = [ln for ln in rest if ln.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: "), rest
    assert "'user'" in errors[0] and "'item'" in errors[0] and "--features" in errors[0]
    assert float(cpu) < 5, cpu
    assert float(wall) < 20, wall
    assert float(peak_mb) < 500, peak_mb
