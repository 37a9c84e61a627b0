"""The served page's start-up: what its first request imports, and what it leaves for later.

A server's first page pays every import it makes; HoloViews' Bokeh plotting (with the
matplotlib it pulls in, and ``matplotlib.figure``, which Panel's pane detection then
imports for each slider) is not needed to show it, so ``serve.build_app`` leaves those
imports to a background thread started once the page is answered.  These tests serve the
app for real (``panel serve apps/explorer.py``) and read the server's timing trace.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from aggmrf_explore.explorer import serve
from tests.test_browser import free_port, server_log, start_server, stop_server


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
from aggmrf_explore.explorer import privacy_plots
from aggmrf_explore.explorer.liveplots import render
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
from aggmrf_explore.explorer import runtime
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
