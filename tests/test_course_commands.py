"""``aggmrf-explore lessons DIR`` and the checks ``aggmrf-explore serve`` makes before serving.

Lessons: written once, left alone when unchanged, replaced when still as written (a newer
package's lesson), and never overwritten when a student changed them unless ``--force`` —
in which case nothing at all is written.  Serve: every refusal is one ``error:`` line with
exit status 2, and ``--show`` opens the printed URL (the page itself is driven in chromium
by tests/test_browser_proxy.py and tests/test_packaging.py).
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import time

import pytest

import aggmrf_explore
from aggmrf_explore.cli import main
from aggmrf_explore.lessons import RECORD, lesson_names, shipped_lesson
from tests.test_browser_proxy import start_serve, stop_serve


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_six_lessons_written_then_up_to_date(tmp_path, capsys):
    dest = tmp_path / "course" / "week1"  # created, parents too
    assert main(["lessons", str(dest)]) == 0
    names = lesson_names()
    assert len(names) == 6 and names[0].startswith("01_") and names[-1].startswith("06_")
    for name in names:
        assert (dest / name).read_bytes() == shipped_lesson(name)
    record = json.loads((dest / RECORD).read_text())
    assert record["version"] == aggmrf_explore.__version__
    assert set(record["sha256"]) == set(names)
    assert capsys.readouterr().out.count("wrote") == 6
    assert main(["lessons", str(dest)]) == 0
    assert capsys.readouterr().out.count("up to date") == 6


def test_a_changed_lesson_is_refused_and_nothing_is_written(tmp_path, capsys):
    assert main(["lessons", str(tmp_path)]) == 0
    edited = tmp_path / "02_training_pcd.ipynb"
    edited.write_bytes(edited.read_bytes().replace(b"Gibbs", b"Gibbs (my notes)", 1))
    work = edited.read_bytes()
    (tmp_path / "01_aggregated_data.ipynb").unlink()
    capsys.readouterr()
    assert main(["lessons", str(tmp_path)]) == 2
    line = _error_line(capsys)
    assert "02_training_pcd.ipynb" in line and "--force" in line
    assert edited.read_bytes() == work  # the student's work is intact
    assert not (tmp_path / "01_aggregated_data.ipynb").exists()  # nothing written at all
    assert main(["lessons", str(tmp_path), "--force"]) == 0
    assert "overwrote" in capsys.readouterr().out
    assert edited.read_bytes() == shipped_lesson(edited.name)
    assert (tmp_path / "01_aggregated_data.ipynb").exists()


def test_a_lesson_still_as_written_is_replaced_by_the_new_one(tmp_path, capsys):
    """After an upgrade: a lesson an older package wrote, and nobody changed, is updated."""
    name = lesson_names()[0]
    old = b'{"cells": [], "an": "older lesson"}'
    (tmp_path / name).write_bytes(old)
    digest = hashlib.sha256(old).hexdigest()
    (tmp_path / RECORD).write_text(json.dumps({"version": "0.0.1", "sha256": {name: digest}}))
    assert main(["lessons", str(tmp_path)]) == 0
    assert (tmp_path / name).read_bytes() == shipped_lesson(name)


def test_without_a_readable_record_a_different_lesson_counts_as_changed(tmp_path, capsys):
    name = lesson_names()[0]
    (tmp_path / name).write_bytes(b"{}")
    (tmp_path / RECORD).write_text("not json")
    assert main(["lessons", str(tmp_path)]) == 2
    assert name in _error_line(capsys)
    assert (tmp_path / name).read_bytes() == b"{}"


def test_a_link_in_place_of_a_lesson_is_never_followed(tmp_path, capsys):
    """A lesson replaced by a symbolic link counts as changed; --force replaces the link
    itself and leaves the file it pointed to alone."""
    name = lesson_names()[0]
    outside = tmp_path / "outside.txt"
    outside.write_text("not a lesson")
    dest = tmp_path / "course"
    dest.mkdir()
    (dest / name).symlink_to(outside)
    assert main(["lessons", str(dest)]) == 2
    assert name in _error_line(capsys)
    assert main(["lessons", str(dest), "--force"]) == 0
    assert not (dest / name).is_symlink()
    assert (dest / name).read_bytes() == shipped_lesson(name)
    assert outside.read_text() == "not a lesson"


def test_lessons_into_a_file_is_one_error_line(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    assert main(["lessons", str(target)]) == 2
    assert "is a file" in _error_line(capsys)
    assert target.read_text() == "mine"


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"aggmrf-explore {aggmrf_explore.__version__}"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--num-procs", "0"], "--num-procs"),
        (["--prefix", "/user/a b"], "not a plain URL path"),
        (["--prefix", "/user/../etc"], "not a plain URL path"),
        (["--port", "70000"], "--port"),
        (["--allow-websocket-origin", "host:notaport"], "HOST:PORT"),
    ],
)
def test_serve_refusals_are_one_error_line(argv, expected, capsys):
    assert main(["serve", "--address", "127.0.0.1", "--port", "0", *argv]) == 2
    assert expected in _error_line(capsys)


def test_serve_on_a_taken_port_is_one_error_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--address", "127.0.0.1", "--port", str(port)]) == 2
    line = _error_line(capsys)
    assert f"127.0.0.1:{port}" in line and "--port" in line


def test_serve_show_opens_the_printed_url(tmp_path):
    """``--show`` hands the page's URL to the default browser ($BROWSER here: a script
    that writes down what it was asked to open)."""
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(
        f"import sys, pathlib\npathlib.Path({str(opened)!r}).write_text(sys.argv[1])\n"
    )
    serve = ["serve", "--port", "0", "--address", "127.0.0.1", "--show"]
    proc, url = start_serve(
        [sys.executable, "-m", "aggmrf_explore.cli", *serve],
        cwd=tmp_path,
        env={"BROWSER": f"{sys.executable} {recorder} %s"},
    )
    try:
        t0 = time.perf_counter()
        while not opened.exists() and time.perf_counter() - t0 < 30:
            time.sleep(0.1)
        assert opened.exists(), "--show opened no browser"
        assert opened.read_text() == url
    finally:
        stop_serve(proc)
