"""The README's three notebook examples in real JupyterLab 4 and Notebook 7, offline, in chromium.

``jupyter lab`` is started on 127.0.0.1 with no token (the same server also serves classic
Notebook 7 at ``/notebooks/<path>``); a notebook whose cells are EXACTLY the Python blocks of
the README's "Three ways to train in a notebook" section (parsed from README.md, so README and
test cannot drift) is opened in Debian's chromium through playwright, with every non-loopback
request aborted and recorded, and run with Run > Run All Cells: first in JupyterLab
(``/lab/tree/readme.ipynb``), then in Notebook 7 (``/notebooks/readme.ipynb``).  The Notebook 7
run reuses the kernel the JupyterLab run started (one kernel per notebook path), so it also
checks a new page on a kernel that has already loaded the libraries once (a reloaded browser
tab).  Each run checks:

- the three entry points render (the inline explorer, the explorer as an ipywidget, the
  TrainingWidget), with no "Click to show javascript error" box, no page error and no
  console error;
- ``TrainingWidget.run`` redraws while it trains (≥ 3 different images) and its progress
  bar reaches the end;
- pressing Play in the inline explorer grows its NLLH line (read from the Bokeh sources)
  and redraws its d̂ vs d plot (a heavy view: its title's iteration moves on);
- ``w.explorer.session.step(5)`` run from code redraws the ipywidget explorer (its status
  line says iteration 5 and its NLLH line has the 5 points), even when the widget's view
  is drawn after the step (``Explorer.to_ipywidget`` keeps its render bundle current);
- the inline explorer's XOR bars include a logistic series with finite probabilities;
- no request left the machine: any non-loopback request fails the test (Panel's late
  stylesheets included, which ``widget.load_offline`` serves as ``data:`` URLs).

Tested versions: jupyterlab 4.6.6, notebook 7.6.5, jupyter_server 2.21.1, panel 1.9.4,
bokeh 3.9.2, jupyter_bokeh 4.1.0, ipywidgets 8.1.9, holoviews 1.23.2, with Debian's chromium.

Notebook 7's own page raises two errors on any notebook, an empty one included (its
keyboard-shortcut settings hook reads an unloaded plugin's schema; its file-browser restore
calls a command the notebook page does not register); those two exact messages are ignored
in the Notebook 7 run, nothing else.

Screenshots go to ``docs/jupyter_*.png`` when ``AGGMRF_JUPYTER_DOCS=1``, otherwise to
``$AGGMRF_SCREENSHOT_DIR`` (default: ``<pytest tmp>/screenshots``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .test_browser import CHROMIUM, CHROMIUM_ARGS, slack

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SECTION = "### Three ways to train in a notebook"
# the page that opens readme.ipynb, per front end
UI_PATHS = {"lab": "/lab/tree/readme.ipynb", "notebook": "/notebooks/readme.ipynb"}
# Notebook 7.6's own page errors, raised on an empty notebook too (see the module docstring)
NOTEBOOK7_OWN_ERRORS = (
    "pageerror: Cannot read properties of undefined (reading 'schema')",
    "pageerror: Command 'filebrowser:open-path' not registered.",
)

# legend label -> number of data points, per Bokeh document (all its models: Panel's
# notebook documents do not list the explorer's figures among their roots)
LEGEND_JS = """() => {
  const out = [];
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
    const series = {};
    for (const m of doc._all_models.values()) {
      if (m.type !== 'LegendItem' || !m.renderers.length) continue;
      const label = m.label && m.label.value !== undefined ? m.label.value : String(m.label);
      const data = m.renderers[0].data_source.data;
      const get = (k) => (data instanceof Map ? data.get(k) : data[k]);
      const keys = Array.from(data instanceof Map ? data.keys() : Object.keys(data));
      const n = Math.max(0, ...keys.map((k) => (get(k) || []).length));
      series[label] = (series[label] || 0) + n;
    }
    out.push(series);
  }
  return out;
}"""

# the XOR bars' sources: one list of [model, P(Y=1|x)] per source, per document
XOR_JS = """() => {
  const all = [];
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) for (const m of doc._all_models.values()) {
    const data = m.data;
    if (!data) continue;
    const get = (k) => (data instanceof Map ? data.get(k) : data[k]);
    if (get('model') && get('p') && get('xoffsets')) {
      const mod = get('model'), p = get('p'), out = [];
      for (let i = 0; i < p.length; i++) out.push([String(mod[i]), p[i]]);
      all.push(out);
    }
  }
  return all;
}"""


# the iterations named by the "d̂ vs d at iteration N" titles (a heavy view, redrawn every
# few seconds while training), per Bokeh document
DHAT_JS = """() => {
  const out = [];
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) for (const m of doc._all_models.values()) {
    const t = m.type === 'Title' ? String(m.text) : '';
    const hit = t.match(/vs d at iteration ([\\d,]+)/);
    if (hit) out.push(parseInt(hit[1].replace(/,/g, ''), 10));
  }
  return out;
}"""


def readme_cells() -> list[str]:
    """The ```python blocks of the README's notebook section, one cell each."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    section = text[start : end if end > 0 else len(text)]
    cells = [b.strip("\n") for b in re.findall(r"```python\n(.*?)```", section, flags=re.S)]
    assert len(cells) == 3, f"expected the README's 3 notebook examples, found {len(cells)}"
    return cells


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def jupyter_lab(root: Path):
    """A Jupyter server (JupyterLab 4 and Notebook 7) on loopback, no token, serving ``root``.

    Yields its base URL; the server is stopped on exit.  Its settings live in
    ``root/settings``: every cell rendered (no windowing), no news toast.  Its log is
    ``root/jupyterlab.log``.
    """
    # JupyterLab 4 and Notebook 7 virtualise off-screen cells ("windowing"); render them all,
    # so the outputs of the cells can be read without scrolling each one into view
    tracker = root / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    # no "get notified about Jupyter news?" toast over the screenshots
    apputils = root / "settings" / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    (root / "workspaces").mkdir()
    port = free_port()
    log = open(root / "jupyterlab.log", "w")
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.disable_check_xsrf=True",
            "--allow-root",
            "--LabApp.news_url=",
            f"--LabApp.user_settings_dir={root / 'settings'}",
            f"--JupyterNotebookApp.user_settings_dir={root / 'settings'}",
            f"--LabApp.workspaces_dir={root / 'workspaces'}",
            f"--JupyterNotebookApp.workspaces_dir={root / 'workspaces'}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
        env=env,
    )
    try:
        t0 = time.time()
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=1)
                break
            except OSError:
                if proc.poll() is not None or time.time() - t0 > 90:
                    raise RuntimeError(
                        "jupyter lab did not start:\n" + (root / "jupyterlab.log").read_text()
                    ) from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def api(url: str, method: str = "GET", body: dict | None = None):
    """One call of the Jupyter server's REST API; its JSON answer (None if empty)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read()
    return json.loads(text) if text else None


def shut_down_kernels(url: str) -> None:
    """End every session and its kernel (one notebook's kernel before the next one runs)."""
    for session in api(f"{url}/api/sessions"):
        api(f"{url}/api/sessions/{session['id']}", "DELETE")
    for kernel in api(f"{url}/api/kernels"):
        api(f"{url}/api/kernels/{kernel['id']}", "DELETE")


@pytest.fixture(scope="module")
def lab(jupyter_server):
    """The run's Jupyter server (``jupyter_server`` in tests/conftest.py: :func:`jupyter_lab`,
    started once for this module and the lessons' one) with the README notebook in its root;
    its kernels are shut down when the module is done."""
    url, root = jupyter_server
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": c,
                "outputs": [],
                "execution_count": None,
            }
            for c in readme_cells()
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "readme.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    try:
        yield url, root
    finally:
        shut_down_kernels(url)


def poll(page, seconds: float, ready) -> None:
    """Wait until ``ready()`` is true or ``seconds`` have passed (the caller asserts)."""
    t0 = time.time()
    while time.time() - t0 < seconds and not ready():
        page.wait_for_timeout(250)


def shot_path(tmp_path_factory, name: str, ui: str = "lab") -> Path:
    """Where a screenshot goes: ``docs/`` for the JupyterLab shots and Notebook 7's explorer
    when ``AGGMRF_JUPYTER_DOCS=1`` (the README shows them), else a scratch directory."""
    if ui != "lab":
        name = name.replace("jupyter_", "jupyter_nb7_")
    if os.environ.get("AGGMRF_JUPYTER_DOCS") == "1" and (ui == "lab" or "explorer" in name):
        d = ROOT / "docs"
    else:
        d = Path(os.environ.get("AGGMRF_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d / name


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_readme_notebook_examples_offline(lab, ui, tmp_path_factory):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the environment is broken, say how to fix it
        pytest.fail("playwright is missing: pip install playwright")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    url, root = lab
    k = slack()
    blocked: list[str] = []
    errors: list[str] = []
    not_found: list[str] = []  # loopback 404s (JupyterLab probes a few optional files)

    def route(r):
        u = r.request.url
        host = u.split("/")[2].split(":")[0] if "://" in u else ""
        if u.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            blocked.append(u)
            r.abort()

    def on_console(m):
        if m.type == "error":
            errors.append(f"console: {m.text}"[:400])

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            ctx.route("**/*", route)
            page = ctx.new_page()
            page.on("console", on_console)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"[:400]))
            page.on(
                "response",
                lambda r: not_found.append(r.url) if r.status == 404 else None,
            )
            page.goto(url + UI_PATHS[ui])
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000
            )
            page.wait_for_timeout(4000)  # the kernel connection (a Run All sent earlier is lost)
            # JupyterLab: fold the file browser away, so the explorer gets the page's width
            side = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
            if ui == "lab" and side.count():
                side.first.click()
            first = page.locator(".jp-Notebook .jp-CodeCell").first.locator(".jp-InputPrompt")
            for _ in range(4):  # Run > Run All Cells, again if the kernel dropped it
                page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
                page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
                t0 = time.time()
                while time.time() - t0 < 10 and not re.search(r"[*\d]", first.inner_text()):
                    page.wait_for_timeout(250)
                if re.search(r"[*\d]", first.inner_text()):
                    break

            # 3. TrainingWidget: the image changes while the last cell runs
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            img = cells.nth(2).locator(".jp-OutputArea img")
            srcs: list[str] = []
            t0 = time.time()
            while time.time() - t0 < float(os.environ.get("AGGMRF_JUPYTER_RUN_S", 150)) * k:
                if img.count():
                    s = img.first.get_attribute("src") or ""
                    if s and (not srcs or srcs[-1] != s):
                        srcs.append(s)
                prompt = cells.nth(2).locator(".jp-InputPrompt").inner_text()
                if img.count() and "*" not in prompt and re.search(r"\d", prompt):
                    break
                page.wait_for_timeout(100)
            prompts = [cells.nth(i).locator(".jp-InputPrompt").inner_text() for i in range(3)]
            if not all(re.search(r"\[\d+\]", q) for q in prompts):
                page.screenshot(path=str(shot_path(tmp_path_factory, "jupyter_failed.png", ui)))
                log = (root / "jupyterlab.log").read_text()[-3000:]
                pytest.fail(f"cells not all run: {prompts}\njupyter lab log:\n{log}")
            for i in range(3):
                err = cells.nth(i).locator("[data-mime-type='application/vnd.jupyter.stderr']")
                tb = cells.nth(i).locator(".jp-OutputArea-output[data-mime-type*='error']")
                assert tb.count() == 0, f"cell {i + 1} raised:\n{cells.nth(i).inner_text()[-2000:]}"
                del err  # numba / panel warnings on stderr are not failures
            assert len(srcs) >= 3, f"TrainingWidget redrew only {len(srcs)} time(s)"
            bar = cells.nth(2).locator(".widget-hprogress .progress-bar")
            assert bar.count() == 1, "no progress bar in the TrainingWidget's cell"
            assert "100%" in (bar.get_attribute("style") or ""), bar.get_attribute("style")
            assert "progress-bar-success" in (bar.get_attribute("class") or "")
            status = cells.nth(2).locator(".jp-OutputArea").inner_text()
            assert "200" in status, f"TrainingWidget status does not show iteration 200: {status!r}"
            cells.nth(2).scroll_into_view_if_needed()
            page.screenshot(
                path=str(shot_path(tmp_path_factory, "jupyter_training_widget.png", ui))
            )

            # 2. the explorer as an ipywidget (jupyter_bokeh) rendered its Bokeh roots, and
            # the cell's w.explorer.session.step(5) redrew it (status line and NLLH line)
            w_out = cells.nth(1).locator(".jp-OutputArea")
            # Bokeh renders inside shadow roots: inner_text() does not see them, locators do
            status = w_out.get_by_text(re.compile(r"\biteration 5 ·"))

            def stepped() -> list[int]:
                return [d.get("MRF", 0) for d in page.evaluate(LEGEND_JS)]

            # a loaded machine renders the widget's views and its comm messages late: poll
            poll(
                page,
                20 * k,
                lambda: (
                    w_out.locator(".bk-Canvas, canvas").count() > 0
                    and status.count() == 1
                    and 5 in stepped()
                ),
            )
            assert "The explorer" in w_out.inner_text()
            assert w_out.locator(".bk-Canvas, canvas").count() > 0, "ipywidget explorer: no plot"
            assert status.count() == 1, (
                "ipywidget explorer: step(5) from code did not redraw the status line: "
                + repr(w_out.get_by_text(re.compile(r"\biteration \d")).all_inner_texts())
            )
            assert 5 in stepped(), f"ipywidget explorer: no NLLH line with 5 points: {stepped()}"
            cells.nth(1).evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(500)
            page.screenshot(path=str(shot_path(tmp_path_factory, "jupyter_widget.png", ui)))

            # 1. the inline explorer: XOR bars with a finite logistic series
            out1 = cells.nth(0).locator(".jp-OutputArea")
            poll(page, 20 * k, lambda: out1.locator("canvas").count() > 0)
            assert out1.locator("canvas").count() > 0, "inline explorer: no plot"
            out1.locator(".bk-tab").filter(has_text="XOR").first.click()
            t0, bars = time.time(), []
            while time.time() - t0 < 15 * k and not bars:
                page.wait_for_timeout(500)
                bars = page.evaluate(XOR_JS)
            logistic = [pv for src in bars for name, pv in src if "logistic" in name.lower()]
            assert logistic, f"no logistic series in the XOR bars: {bars}"
            assert all(isinstance(v, int | float) and math.isfinite(v) for v in logistic), logistic

            # Play grows the inline explorer's NLLH line
            out1.locator(".bk-tab").filter(has_text="Training").first.click()
            page.wait_for_timeout(1000)
            before = page.evaluate(LEGEND_JS)
            # every explorer's "MRF" NLLH points (only the one we Play can grow)
            n0 = sum(d.get("MRF", 0) for d in before)
            cells.nth(0).scroll_into_view_if_needed()
            out1.locator("button:has-text('Play')").first.click()
            n1, t0, dhat = n0, time.time(), []
            # the NLLH line grows (fast refresh) and the d̂ vs d title moves on from the
            # iterations it was drawn at (heavy refresh, which slow ticks once starved)
            dhat0 = page.evaluate(DHAT_JS)
            while time.time() - t0 < 30 * k and (n1 < n0 + 20 or not (set(dhat) - set(dhat0))):
                page.wait_for_timeout(500)
                n1 = sum(d.get("MRF", 0) for d in page.evaluate(LEGEND_JS))
                dhat = page.evaluate(DHAT_JS)
            play_failure = (
                f"Play: the NLLH line grew {n0} -> {n1} points only; series {before}"
                if n1 < n0 + 20
                else f"Play: the d̂ vs d plot was not redrawn: iterations {dhat0} -> {dhat}"
                if not (set(dhat) - set(dhat0))
                else None
            )
            cells.nth(0).evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shot_path(tmp_path_factory, "jupyter_explorer.png", ui)))
            pause = out1.locator("button:has-text('Pause')")
            if pause.count():
                pause.first.click()
            page.wait_for_timeout(1000)

            assert page.locator("text=Click to show javascript error").count() == 0
            # e.g. a comm message from the browser that Bokeh rejects while Play runs
            all_out = page.locator(".jp-Notebook .jp-OutputArea").all_inner_texts()
            kernel_tracebacks = "\n".join(t[:1500] for t in all_out if "Traceback" in t)
        finally:
            browser.close()

    assert not kernel_tracebacks, "a kernel-side traceback in an output:\n" + kernel_tracebacks
    assert play_failure is None, play_failure
    leaks = sorted(set(blocked))
    # JupyterLab's own optional lookups (workspaces, translations, settings) may 404
    lab_404 = [u for u in not_found if not re.search(r"/(lab/api|api)/", u)]
    print(f"loopback 404s: {not_found}")
    assert not leaks, f"requests left the machine: {leaks}"
    real = [
        e
        for e in errors
        if not ("status of 404" in e and not lab_404)
        and not (ui == "notebook" and e in NOTEBOOK7_OWN_ERRORS)
    ]
    assert not real, "\n".join(real)
