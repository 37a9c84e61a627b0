"""Hostile input, third corpus (tests/hostile/round3.py): the challenge importer, the sweep,
local privacy, suppression and output paths through the command line, and the DuckDB path
and the explorer's store through the library.  Each case ends in one ``error:`` line and
exit status 2, or in a documented acceptance with correct numbers; never a traceback, a
hang, a wrong number or a file written where the user did not say."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, TableLayout

sys.path.insert(0, str(Path(__file__).parent))
from hostile.corpus import make_fixtures  # noqa: E402
from hostile.round3 import CASES  # noqa: E402

from tests.test_hostile_input import _argv, _run_in_process, check_outcome  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile3")
    make_fixtures(d)
    return d


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case, fixtures: Path, capsys):
    if case.build is not None:
        case.build(fixtures)
    argv = _argv(case, fixtures)
    outputs = {b for a, b in zip(argv, argv[1:], strict=False) if a in ("--out", "--export-model")}
    inputs = [Path(a) for a in argv if a not in outputs and Path(a).is_file()]
    before = {p: p.read_bytes() for p in inputs}
    status, out, err = _run_in_process(argv, capsys)
    check_outcome(case, fixtures, status, out, err)
    for p, data in before.items():  # no input was overwritten
        assert p.read_bytes() == data, f"{case.id}: {p.name} changed"
    if "/dev/null" in case.argv:
        assert not Path("/dev/null.csv").exists(), "wrote /dev/null.csv"


def test_corpus_covers_every_class():
    kinds = collections.Counter(c.kind for c in CASES)
    assert len({c.id for c in CASES}) == len(CASES)
    for kind in (
        "criteo-number",
        "criteo-columns",
        "local-epsilon",
        "output",
        "suppression",
        "sweep-report",
    ):
        assert kinds[kind] >= 2, kinds


def test_symlink_target_outside_is_untouched(fixtures: Path, capsys):
    from hostile.round3 import SWEEP_FAST, _symlink_out

    _symlink_out(fixtures)
    out = str(fixtures / "linked")
    _run_in_process(["sweep", "--dataset", "toy", *SWEEP_FAST, "--out", out], capsys)
    assert (fixtures / "elsewhere" / "target.csv").read_text() == "keep\n"


# ------------------------------------------------------------------------- DuckDB path
LAYOUT = TableLayout.all_pairs([3, 4], ["x0", "x1"])
GOOD = pd.DataFrame({"x0": [0, 1, 2, 1], "x1": [0, 1, 3, 2], "label": [0, 1, 1, 0]})


def _duckdb(path, **kw):
    from aggmrf_explore.tables.big import aggregate_duckdb

    return aggregate_duckdb(path, LAYOUT, **kw)


def test_duckdb_reads_a_good_file(tmp_path):
    p = tmp_path / "records.csv"
    GOOD.to_csv(p, index=False)
    agg = _duckdb(p)
    assert agg.n == 4 and agg.d[0] == 4


def test_duckdb_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "records.csv"
    os.mkfifo(fifo)
    code = (
        "from aggmrf_explore import AggMRFError, TableLayout\n"
        "from aggmrf_explore.tables.big import aggregate_duckdb\n"
        "try:\n"
        f"    aggregate_duckdb({str(fifo)!r}, TableLayout.all_pairs([3, 4], ['x0', 'x1']))\n"
        "except AggMRFError as e:\n"
        "    print('refused:', e)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "refused:" in res.stdout and "FIFO" in res.stdout, res.stdout


def test_duckdb_directory_is_refused(tmp_path):
    (tmp_path / "records.csv").mkdir()
    with pytest.raises(AggMRFError, match="directory"):
        _duckdb(tmp_path / "records.csv")


def test_duckdb_symlink_to_a_system_file_shows_nothing_of_it(tmp_path):
    link = tmp_path / "records.csv"
    link.symlink_to("/etc/passwd")
    with pytest.raises(AggMRFError) as info:
        _duckdb(link)
    msg = str(info.value)
    assert "symlink" in msg
    for line in Path("/etc/passwd").read_text().splitlines()[:3]:
        for part in line.split(":"):
            if len(part) > 3:
                assert part not in msg, (part, msg)


def test_duckdb_wrong_file_is_not_echoed(tmp_path):
    p = tmp_path / "records.csv"
    pd.DataFrame({"password_hunter2": [1, 2], "token_s3cret": [3, 4]}).to_csv(p, index=False)
    with pytest.raises(AggMRFError, match="lacks the columns") as info:
        _duckdb(p)
    assert "hunter2" not in str(info.value) and "s3cret" not in str(info.value)


def test_duckdb_duplicate_column_is_refused(tmp_path):
    p = tmp_path / "records.csv"
    p.write_text("x0,x1,x1,label\n0,0,3,0\n1,1,2,1\n")
    with pytest.raises(AggMRFError, match="two columns named 'x1'"):
        _duckdb(p)


def test_duckdb_size_cap(tmp_path):
    p = tmp_path / "records.csv"
    GOOD.to_csv(p, index=False)
    with pytest.raises(AggMRFError, match="more than"):
        _duckdb(p, max_file_bytes=16)


# ------------------------------------------------------------------------- local ε
def test_local_mechanism_refuses_an_unusable_channel():
    from aggmrf_explore.privacy.local import MIN_GAP, RandomizedResponse, min_local_epsilon

    with pytest.raises(AggMRFError, match="ε ≥"):
        RandomizedResponse(1e-300, (2, 3))
    need = min_local_epsilon((2, 3))
    with pytest.raises(AggMRFError, match="floor"):
        RandomizedResponse(need * 0.99, (2, 3))
    mech = RandomizedResponse(need * 1.01, (2, 3))
    assert min(mech.gaps.min(), mech._label_gap()) >= MIN_GAP


def test_local_release_at_the_floor_is_finite():
    from aggmrf_explore.privacy.local import local_release, make_local_mechanism, min_local_epsilon

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 3, 500), rng.integers(0, 4, 500)])
    y = rng.integers(0, 2, 500)
    mech = make_local_mechanism(min_local_epsilon((3, 4)) * 1.01, LAYOUT)
    rel = local_release(X, y, LAYOUT, mech, seed=0)
    assert np.all(np.isfinite(rel.d)) and np.all(np.isfinite(rel.noise.sigma_d))


def test_explorer_tiny_local_epsilon_is_refused_beside_its_control():
    from aggmrf_explore.explorer.store.store import ExplorerSession

    s = ExplorerSession(lazy=True, dataset="xor", n_samples=2000)
    s.load()
    assert s.propose("mechanism", "local") is None
    data, eps = s.data, s.epsilon
    msg = s.propose("epsilon", 1e-7)  # above ε's declared floor, below a usable channel's
    assert msg and "ε ≥" in msg and "Error" not in msg, msg
    assert s.errors["epsilon"] == msg
    assert s.epsilon == eps and s.data is data and s.trainer is not None  # kept


def test_explorer_link_with_tiny_local_epsilon_still_loads():
    """A link's ε is set before the first load: the load reverts ε alone, keeps the
    mechanism, and the message stays beside ε."""
    from aggmrf_explore.explorer.store.store import ExplorerSession

    s = ExplorerSession(lazy=True, dataset="xor", n_samples=2000)
    assert s.propose("mechanism", "local") is None and s.propose("epsilon", 1e-7) is None
    s.load()
    assert s.trainer is not None and "iteration 0" in s.status, s.status
    assert s.mechanism == "local" and s.epsilon == s.param["epsilon"].default
    assert "ε ≥" in s.errors.get("epsilon", ""), s.errors
    s.step(2)
    assert s.iteration == 2


# ------------------------------------------------------------------------- link length
def test_link_over_the_cap_keeps_its_settings_and_says_why():
    from aggmrf_explore.explorer.store import url
    from aggmrf_explore.explorer.store.store import URL_KEYS, ExplorerSession

    s = ExplorerSession(lazy=True)
    cap = getattr(url, "MAX_LINK_CHARS", 16_000)
    long = "?dataset=toy&hide=data&lesson=" + "x" * cap
    assert url.apply_query(s, long, URL_KEYS) == {} and s.dataset == "toy"  # key by key
    assert url.readable_query(long) == ""  # no lesson, nothing hidden from this link
    assert "characters long" in url.link_too_long(long)
    assert url.link_too_long("?lesson=short") is None and url.link_too_long("") is None


def test_written_link_stays_under_the_cap():
    from aggmrf_explore.explorer.store import url
    from aggmrf_explore.explorer.store.store import URL_KEYS, ExplorerSession

    s = ExplorerSession(lazy=True)
    cap = getattr(url, "MAX_LINK_CHARS", 16_000)
    long = url.with_settings("?hide=data&lesson=" + "%C3%A9" * 5000, s, URL_KEYS)
    assert len(long) <= cap and "lesson=" not in long, len(long)
    near = url.with_settings("?lesson=" + "%E2%82%AC" * 1700, s, URL_KEYS)  # 15 300 characters
    assert len(near) <= cap, len(near)
    short = url.with_settings("?hide=data&lesson=hello", s, URL_KEYS)
    assert "lesson=hello" in short and "hide=data" in short
