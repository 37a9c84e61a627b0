"""The explorer is one server process with one event loop: ``--num-procs`` other than 1 and
Panel's callback threads (``--num-threads``, ``PANEL_NUM_THREADS``) are refused, clearly, in
both ways a user starts it.

- ``aggmrf-explore serve --num-procs N`` (or with ``PANEL_NUM_THREADS`` set) stops at once
  with one ``error:`` line (exit 2), before any server listens;
- ``panel serve apps/explorer.py --num-procs N`` (Bokeh forks N processes), ``--num-threads
  N`` or ``PANEL_NUM_THREADS=N`` serves, instead of the explorer, a plain page with the same
  explanation, and prints it on stderr once per process.  The page is checked with a plain
  HTTP client: the message is in its HTML, it loads nothing (no script, no stylesheet, no
  address off the machine) and no explorer session was built.  (With Panel's threads Play
  did nothing: the click ran in a thread without the event loop that trains.)
"""

from __future__ import annotations

import html
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from aggmrf_explore.explorer.server.one_process import ONE_LOOP, ONE_PROCESS
from tests.test_browser import free_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the environment's console scripts
BUILT = "session page built"  # runtime.log's line for every explorer page built


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the processes Bokeh forked too), SIGKILL
    to what is left after 10 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 10:
            proc.poll()  # reap the parent: a zombie still counts as a member of the group
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


@pytest.mark.parametrize("num_procs", ["2", "0"])
def test_aggmrf_explore_serve_refuses_num_procs(num_procs, tmp_path):
    """``0`` is refused too: Bokeh takes it as one process per core."""
    port = free_port()
    cmd = [str(BIN / "aggmrf-explore"), "serve", "--address", "127.0.0.1"]
    cmd += ["--port", str(port), "--num-procs", num_procs]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - t0
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and len(lines) == 1, done.stderr
    assert errors[0].startswith(f"error: --num-procs {num_procs}: {ONE_PROCESS} — drop --num-procs")
    assert "Traceback" not in done.stderr + done.stdout
    assert "The explorer is at" not in done.stdout, done.stdout  # no server was started
    assert not listening(port)
    assert seconds < 30, seconds


def test_aggmrf_explore_serve_refuses_panel_threads(tmp_path):
    port = free_port()
    cmd = [str(BIN / "aggmrf-explore"), "serve", "--address", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PANEL_NUM_THREADS": "4"}
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"error: PANEL_NUM_THREADS=4: {ONE_LOOP} — unset it for the explorer: "
        "env -u PANEL_NUM_THREADS aggmrf-explore serve."
    ], done.stderr
    assert "The explorer is at" not in done.stdout and not listening(port)


REFUSALS = {  # how the server is started → (what the page says, the fix, the reason)
    "--num-procs 2": (
        (["--num-procs", "2"], {}),
        "This explorer server runs in several processes",
        "panel serve --num-procs other than 1",
        "without --num-procs: panel serve apps/explorer.py",
        ONE_PROCESS,
    ),
    "--num-threads 2": (
        (["--num-threads", "2"], {}),
        "This explorer server runs its callbacks in threads",
        "panel serve --num-threads",
        "without --num-threads: panel serve apps/explorer.py",
        ONE_LOOP,
    ),
    "PANEL_NUM_THREADS=0": (
        ([], {"PANEL_NUM_THREADS": "0"}),
        "This explorer server runs its callbacks in threads",
        "panel serve PANEL_NUM_THREADS=0",
        "without PANEL_NUM_THREADS: env -u PANEL_NUM_THREADS panel serve apps/explorer.py",
        ONE_LOOP,
    ),
}


@pytest.mark.parametrize("started", list(REFUSALS))
def test_panel_serve_with_a_refused_option_shows_the_refusal_page(started):
    (options, env), heading, said, fix, why = REFUSALS[started]
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="aggmrf-num-procs-", suffix=".log")
    cmd = [str(BIN / "panel"), "serve", "apps/explorer.py", *options]
    cmd += ["--port", str(port), "--address", "127.0.0.1"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "AGGMRF_EXPLORER_LOG": "1", **env},  # (logs every page built)
        start_new_session=True,  # its own process group: the forked processes are stopped too
    )
    url = f"http://127.0.0.1:{port}/explorer"
    pages: list[str] = []
    try:
        t0 = time.perf_counter()
        while len(pages) < 4:  # (each request may reach either process)
            assert proc.poll() is None, Path(log.name).read_text()
            assert time.perf_counter() - t0 < 25, Path(log.name).read_text()
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    assert r.status == 200
                    pages.append(r.read().decode("utf-8"))
            except OSError:  # not listening yet
                time.sleep(0.2)
        time.sleep(0.5)  # the log lines of the last request
        output = Path(log.name).read_text()
    finally:
        stop_group(proc)
        log.close()
    assert not listening(port)
    for page in pages:
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())  # what it says
        assert heading in text
        assert why in text
        assert f"start it again {fix}" in text
        # a page of its own: no Bokeh document, nothing to load, nothing off the machine
        lower = page.lower()
        assert "<script" not in lower and "data-root-id" not in lower
        assert "http://" not in lower and "https://" not in lower and "src=" not in lower
        assert "stylesheet" not in lower
    # the explorer was never built; the refusal printed once per process that answered
    assert BUILT not in output, output
    assert "Traceback" not in output, output
    refusals = [line for line in output.splitlines() if "aggmrf explorer: error:" in line]
    assert 1 <= len(refusals) <= 2, output
    assert refusals[0].endswith(f"{said}: {why} — stop this server and start it again {fix}.")
