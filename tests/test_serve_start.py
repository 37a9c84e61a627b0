"""The served page's start-up: what its first request imports, and what it leaves for later.

A server's first page pays every import it makes; HoloViews' Bokeh plotting (with the
matplotlib it pulls in, and ``matplotlib.figure``, which Panel's pane detection then
imports for each slider) is not needed to show it, so ``serve.build_app`` leaves those
imports to a background thread started once the page is answered.  These tests serve the
app for real (``panel serve apps/explorer.py``) and read the server's timing trace.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.explorer.server import environment, serve
from tests.test_browser import free_port, server_log, start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]


def _wait_for(proc, text: str, timeout: float = 60.0) -> str:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        log = server_log(proc)
        if text in log:
            return log
        time.sleep(0.1)
    raise AssertionError(f"the server never logged {text!r}:\n{server_log(proc)[-3000:]}")


def test_first_page_leaves_the_plotting_imports_for_after_it():
    port = free_port()
    proc, _ = start_server(port)
    try:
        url = f"http://127.0.0.1:{port}/explorer"
        with urllib.request.urlopen(url, timeout=60) as r:
            assert r.status == 200 and b"bokeh" in r.read()
        # the background thread imports only what is not imported yet: its line naming
        # both modules shows that the first page was built without them
        log = _wait_for(proc, "imported in")
        line = next(x for x in log.splitlines() if "imported in" in x)
        for module in serve.PLOTTING_MODULES:
            assert module in line, line
        with urllib.request.urlopen(url, timeout=60) as r:  # a second page, after them
            assert r.status == 200
        assert "Traceback" not in server_log(proc)
    finally:
        stop_server(proc)


def test_render_makes_the_bokeh_backend_current_with_its_hooks():
    """With HoloViews' Bokeh plotting imported but no ``hv.extension`` call (the served
    app's background import), ``hv.opts.Overlay`` does not exist until the backend is made
    current through ``Store.set_current_backend``; ``liveplots.render`` does that."""
    code = """
import holoviews as hv
import holoviews.plotting.bokeh  # as the server's background thread: no hv.extension
from aggmrf_explore.explorer.views import privacy_plots
from aggmrf_explore.explorer.views.liveplots import render
fig = render(lambda: privacy_plots.privacy_curve_plot(
    [{"epsilon": 1.0, "nllh": 0.4, "iterations": 50, "mechanism": "laplace",
      "noise_aware": False, "dataset": "adult"}], None, 0.38, "adult"))
print(type(fig).__name__, fig.sizing_mode, len(fig.legend[0].items) if fig.legend else 0)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    name, sizing, items = out.stdout.split()
    assert name == "figure" and int(items) >= 1


def test_a_session_opened_while_the_sampler_compiles_does_not_wait_for_it():
    """Every new page asks for the warm-up thread; while the kernels compile (a minute on
    a first start) that call must return at once, or the server's event loop stalls and
    every student's page with it."""
    code = """
import threading, time
from aggmrf_explore import kernels
from aggmrf_explore.explorer.server import runtime
runtime.first_start = lambda: False
kernels.warm_up = lambda: time.sleep(3.0)  # the compile, under the warm-up lock
runtime.train_first_screen = lambda iterations=2: None
threading.Thread(target=runtime.warm_up_once, daemon=True).start()
time.sleep(0.5)
t0 = time.perf_counter()
runtime.warm_up_in_background()  # what a new page's first load calls
print(time.perf_counter() - t0, runtime.kernels_ready())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seconds, ready = out.stdout.split()
    assert ready == "False"  # (it was still compiling)
    assert float(seconds) < 1.0


def _serve_command(how: str, port: int) -> list[str]:
    where = ["--port", str(port), "--address", "127.0.0.1"]
    where += ["--allow-websocket-origin", f"127.0.0.1:{port}"]
    if how == "panel":
        return [sys.executable, "-m", "panel", "serve", "apps/explorer.py", *where]
    return [sys.executable, "-m", "aggmrf_explore.cli", "serve", *where]


@pytest.mark.browser
@pytest.mark.parametrize("how", ["panel", "aggmrf-explore"])
def test_ctrl_c_stops_the_server_while_it_fits_a_baseline(how, tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) while a page's data load and its
    baselines are under way (Adult on an empty cache: the logistic skyline fits for tens
    of seconds on a busy machine): the server ends within 10 s (before, Python's exit
    waited for the worker threads' fit)."""
    from playwright.sync_api import sync_playwright

    from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, Page

    port = free_port()
    env = {**os.environ, "AGGMRF_CACHE_DIR": str(tmp_path / "cache")}  # nothing fitted yet
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        _serve_command(how, port),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 90:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/static/js/bokeh.min.js")
                    break
                except OSError:
                    time.sleep(0.2)
            p = Page(b, f"http://127.0.0.1:{port}/explorer?dataset=adult", ready="Adult")
            p.button("▶ Play").click()
            p.page.wait_for_timeout(3000)  # (training, the baselines fitting)
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
            t0 = time.perf_counter()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{how} serve still runs 10 s after Ctrl-C")
            print(f"{how} serve stopped {time.perf_counter() - t0:.1f} s after Ctrl-C")
            b.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
    text = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in text.split("Interrupted")[0], text[-2000:]


BAD_VALUES = ("four", "-5", str(10**20))


@pytest.mark.parametrize("name", sorted(environment.VARIABLES))
@pytest.mark.parametrize("value", BAD_VALUES)
def test_every_environment_variable_is_checked(name, value):
    with pytest.raises(AggMRFError, match=rf"^{name}=") as err:
        environment.check_environment({name: value})
    assert "\n" not in str(err.value) and f"env -u {name}" in str(err.value)


def test_good_environment_values_are_read():
    env = {"AGGMRF_TRAIN_THREADS": " 3 ", "AGGMRF_MAX_SESSIONS": "", "AGGMRF_TRAIN_PROCESSES": "0"}
    environment.check_environment(env)
    assert environment.env_int("AGGMRF_TRAIN_THREADS", None, env) == 3
    assert environment.env_int("AGGMRF_MAX_SESSIONS", 40, env) == 40  # (empty: the default)
    assert environment.env_flag("AGGMRF_TRAIN_PROCESSES", True, env) is False
    assert environment.env_flag("AGGMRF_EXPLORER_LOG", False, env) is False


@pytest.mark.parametrize("name", sorted(environment.VARIABLES))
def test_aggmrf_explore_serve_names_a_bad_variable_in_one_line(name):
    env = {**os.environ, name: "four"}
    done = subprocess.run(
        [sys.executable, "-m", "aggmrf_explore.cli", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = [x for x in done.stderr.splitlines() if x.strip() and not x.startswith("[aggmrf")]
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}='four'"), done.stderr
    assert "Traceback" not in done.stderr and "The explorer is at" not in done.stdout


def test_panel_serve_with_a_bad_variable_shows_the_refusal(monkeypatch):
    monkeypatch.setenv("AGGMRF_TRAIN_THREADS", "four")
    port = free_port()
    proc, _ = start_server(port)
    try:
        url = f"http://127.0.0.1:{port}/explorer"
        with urllib.request.urlopen(url, timeout=60) as r:
            page = r.read().decode()
        assert "AGGMRF_TRAIN_THREADS" in page and "env -u AGGMRF_TRAIN_THREADS" in page
        assert "not a whole number" in page
        log = server_log(proc)
        assert log.count("error: panel serve AGGMRF_TRAIN_THREADS=four") == 1, log[-2000:]
        assert "Traceback" not in log
    finally:
        stop_server(proc)
