"""Every lesson opened the way a class opens it: real JupyterLab, network cut, Run All.

One JupyterLab server (:func:`tests.test_jupyterlab.jupyter_lab`, shared with the README
notebook's test) serves a scratch copy of the six notebooks of ``aggmrf_explore/lessons/``
(a copy, so JupyterLab's autosave never touches the committed files).  One chromium (Debian's, through playwright) opens each lesson
at 1280×720 with every non-loopback request aborted and recorded, runs Run > Run All Cells,
waits until every code cell has an execution number, and checks:

- no cell shows an error output (a Python traceback) and no "Click to show javascript
  error" box is on the page;
- no page error and no console error (JupyterLab's own 404s for optional files aside);
- no request left the machine;
- the lesson's live widgets are drawn and, where the lesson has one that trains, train:
  lesson 02's TrainingWidget reaches 100 % and redraws its plot; lesson 03's explorer
  (an ipywidget) draws its plots, its status line follows the next cell's ten steps, and
  Play grows its NLLH line; lesson 04's what-if sliders redraw their plot when ε moves.

After each lesson its kernel is shut down, so the six lessons never run side by side.
Run All of a lesson takes 12–45 s at load ≈ 12 (``notebooks/README.md``); each lesson may
take ``AGGMRF_LESSON_RUN_S`` (default 240) seconds times :func:`tests.test_browser.slack`.
Screenshots of each lesson's live widget go to ``$AGGMRF_SCREENSHOT_DIR`` (default: a
pytest scratch directory).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest

from .test_browser import CHROMIUM, CHROMIUM_ARGS, slack
from .test_jupyterlab import LEGEND_JS, api, poll, shut_down_kernels

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.name for p in (ROOT / "aggmrf_explore" / "lessons").glob("*.ipynb"))
VIEWPORT = {"width": 1280, "height": 720}  # a projector, or a student's laptop


def test_six_lessons_are_found():
    assert len(LESSONS) == 6, LESSONS


@pytest.fixture(scope="module")
def lesson_lab(jupyter_server):
    """One JupyterLab for all lessons (the run's ``jupyter_server``, tests/conftest.py, which
    the README notebook's test shares), serving a scratch copy of them: (url, root)."""
    url, root = jupyter_server
    shut_down_kernels(url)  # no kernel of an earlier module runs beside the lessons
    for name in LESSONS:
        # the stored execution counts cleared: a cell's prompt shows a number only once
        # this run has executed it (the code and the stored outputs are left as shipped)
        nb = nbformat.read(ROOT / "aggmrf_explore" / "lessons" / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.execution_count = None
        nbformat.write(nb, root / name)
    yield url, root


@pytest.fixture(scope="module")
def chromium():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the environment is broken, say how to fix it
        pytest.fail("playwright is missing: pip install playwright")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def start_kernel(url: str, name: str) -> None:
    """The notebook's session and kernel, started before the page opens: the page connects
    to it (no second kernel started by the page, which once swallowed Run All)."""
    api(
        f"{url}/api/sessions",
        "POST",
        {"path": name, "type": "notebook", "kernel": {"name": "python3"}},
    )


def cell_with(page, text: str):
    """The code cell whose source contains ``text`` (exactly one)."""
    cells = page.locator(".jp-Notebook .jp-CodeCell").filter(
        has=page.locator(".jp-InputArea", has_text=text)
    )
    assert cells.count() == 1, f"{cells.count()} code cells contain {text!r}"
    return cells.first


def run_all(page, seconds: float) -> None:
    """Run > Run All Cells, again if the first cell (the set-up) has not run within
    ``seconds`` (a kernel connection that dropped the request)."""
    first = page.locator(".jp-Notebook .jp-CodeCell").first.locator(".jp-InputPrompt")
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        poll(page, seconds, lambda: re.search(r"\d", first.inner_text()) is not None)
        if re.search(r"\d", first.inner_text()):
            return
    pytest.fail(f"Run All Cells did not run the first cell: its prompt is {first.inner_text()!r}")


def prompts(page) -> list[str]:
    return page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_inner_texts()


# ------------------------------------------------------------------ live widgets, per lesson
def check_training_widget(page, k: float) -> None:
    """Lesson 02: the TrainingWidget trained its 100 iterations and drew its plot."""
    cell = cell_with(page, "widget.run(100)")
    bar = cell.locator(".widget-hprogress .progress-bar")
    assert bar.count() == 1, "lesson 02: no progress bar in the TrainingWidget's cell"
    assert "100%" in (bar.get_attribute("style") or ""), bar.get_attribute("style")
    assert "progress-bar-success" in (bar.get_attribute("class") or "")
    assert "iteration 100" in cell.locator(".jp-OutputArea").inner_text()
    src = cell.locator(".jp-OutputArea img").first.get_attribute("src") or ""
    assert src.startswith("blob:") or src.startswith("data:image/png"), src[:80]


def check_explorer(page, k: float) -> None:
    """Lesson 03: the explorer widget draws, follows code's steps, and Play trains it."""
    cell = cell_with(page, "explorer_widget(dataset=")
    out = cell.locator(".jp-OutputArea")
    # the next cell pressed Step once and stepped 9 more from code: iteration 10
    status = out.get_by_text(re.compile(r"\biteration 10 ·"))
    poll(page, 30 * k, lambda: out.locator("canvas").count() > 0 and status.count() == 1)
    assert out.locator("canvas").count() > 0, "lesson 03: the explorer drew no plot"
    assert status.count() == 1, "lesson 03: the status line does not follow the steps: " + repr(
        out.get_by_text(re.compile(r"\biteration \d")).all_inner_texts()
    )

    def mrf_points() -> int:
        return sum(d.get("MRF", 0) for d in page.evaluate(LEGEND_JS))

    n0 = mrf_points()
    cell.evaluate("e => e.scrollIntoView({block: 'start'})")
    out.locator("button:has-text('Play')").first.click()
    poll(page, 30 * k, lambda: mrf_points() >= n0 + 20)
    n1 = mrf_points()
    pause = out.locator("button:has-text('Pause')")
    if pause.count():
        pause.first.click()
    assert n1 >= n0 + 20, f"lesson 03: Play grew the NLLH line {n0} -> {n1} points only"


def check_what_if(page, k: float) -> None:
    """Lesson 04: the ε/δ sliders are drawn, and moving ε retrains and redraws the bars."""
    cell = cell_with(page, "eps_slider = widgets.FloatLogSlider")
    out = cell.locator(".jp-Cell-outputArea")  # (the widget's own Output area is inside it)
    img = out.locator("img")
    poll(page, 20 * k, lambda: img.count() > 0)
    assert out.locator(".widget-slider").count() >= 2, "lesson 04: the sliders are not drawn"
    assert img.count() == 1, f"lesson 04: {img.count()} plots under the sliders"
    before = img.first.get_attribute("src")
    cell.evaluate("e => e.scrollIntoView({block: 'start'})")
    handle = out.locator(".widget-slider .noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")  # ε one step up: a new release, both models retrained

    def redrawn() -> bool:
        return img.count() == 1 and img.first.get_attribute("src") != before

    poll(page, 60 * k, redrawn)
    assert redrawn(), "lesson 04: moving ε did not redraw the what-if plot"
    assert "1.26" in out.inner_text(), "lesson 04: the ε slider does not read 1.26 after →"


LIVE = {
    "02_training_pcd.ipynb": check_training_widget,
    "03_xor_counterexample.ipynb": check_explorer,
    "04_privacy_cost.ipynb": check_what_if,
}


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_runs_offline_in_jupyterlab(lesson_lab, chromium, name, tmp_path_factory):
    url, root = lesson_lab
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

    t_start = time.time()
    start_kernel(url, name)
    ctx = chromium.new_context(viewport=VIEWPORT)
    try:
        ctx.route("**/*", route)
        page = ctx.new_page()
        page.on(
            "console",
            lambda m: errors.append(f"console: {m.text}"[:400]) if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"[:400]))
        page.on("response", lambda r: not_found.append(r.url) if r.status == 404 else None)
        # a workspace of its own: no tab of an earlier lesson restored beside it
        page.goto(f"{url}/lab/workspaces/{name[:2]}/tree/{name}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_selector(
            ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000
        )
        page.wait_for_timeout(2000)  # the kernel connection (a Run All sent earlier is lost)
        side = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
        if side.count():  # fold the file browser away: the page's width for the lesson
            side.first.click()
        run_all(page, 60 * k)
        budget = float(os.environ.get("AGGMRF_LESSON_RUN_S", 240)) * k
        errors_shown = page.locator(".jp-OutputArea-output[data-mime-type*='error']")

        def finished() -> bool:  # every cell ran, or Run All stopped at an error
            return errors_shown.count() > 0 or all(
                re.fullmatch(r"\[\d+\]:", p.strip()) for p in prompts(page)
            )

        poll(page, budget, finished)
        t_run = time.time() - t_start
        done = prompts(page)
        tracebacks = [
            t[-1500:]
            for t in page.locator(".jp-Notebook .jp-CodeCell").all_inner_texts()
            if "Traceback (most recent call last)" in t or re.search(r"\n\w+Error: ", t)
        ]
        error_outputs = page.locator(".jp-OutputArea-output[data-mime-type*='error']").count()
        js_error_boxes = page.get_by_text("Click to show javascript error").count()
        live_failure = None
        if all(re.fullmatch(r"\[\d+\]:", p.strip()) for p in done) and not error_outputs:
            try:
                LIVE.get(name, lambda page, k: None)(page, k)
            except AssertionError as exc:  # reported after the page's errors, which explain it
                live_failure = str(exc)
        page.wait_for_timeout(1000)  # late page errors of the widgets just used
        js_error_boxes += page.get_by_text("Click to show javascript error").count()
        shots = Path(os.environ.get("AGGMRF_SCREENSHOT_DIR") or tmp_path_factory.mktemp("shots"))
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"lesson_{name.removesuffix('.ipynb')}.png"))
    finally:
        ctx.close()
        shut_down_kernels(url)
    print(
        f"{name}: Run All and checks {time.time() - t_start:.1f} s (cells {t_run:.1f} s), "
        f"load {os.getloadavg()[0]:.1f}"
    )

    assert all(re.fullmatch(r"\[\d+\]:", p.strip()) for p in done), (
        f"{name}: not every cell ran within {budget:.0f} s: {done}\n"
        + (root / "jupyterlab.log").read_text()[-2000:]
    )
    assert not tracebacks and not error_outputs, f"{name}: a cell raised:\n" + "\n".join(tracebacks)
    assert js_error_boxes == 0, f"{name}: a 'Click to show javascript error' box is on the page"
    assert not sorted(set(blocked)), f"{name}: requests left the machine: {sorted(set(blocked))}"
    lab_404 = [u for u in not_found if not re.search(r"/(lab/api|api)/", u)]
    real = [e for e in errors if not ("status of 404" in e and not lab_404)]
    assert not real, f"{name}: page errors:\n" + "\n".join(real)
    assert live_failure is None, live_failure
