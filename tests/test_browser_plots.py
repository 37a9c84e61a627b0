"""Browser tests of the explorer's plots: the data the page's figures really hold.

They serve ``apps/explorer.py`` and drive Debian's chromium like tests/test_browser.py (whose
server and browser fixtures they reuse) and read the Bokeh data sources of the page with
``page.evaluate`` over ``Bokeh.documents``; they never skip.  Screenshots of the Training
tab at 1280×720 and 1600×1000 go to ``$AGGMRF_SCREENSHOT_DIR`` (default: a pytest temporary
directory; the ones in docs/ were made with ``AGGMRF_SCREENSHOT_DIR=docs``).
"""

# ruff: noqa: F811  (the fixtures of tests/test_browser.py are imported, then requested by name)
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from tests.test_browser import Page, browser, server, shots, slack  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

# every legend entry of the page's figures → the data of its (first) glyph renderer
SERIES_JS = """
() => {
  const out = {};
  for (const doc of Bokeh.documents) {
    // the models reachable from the page's roots (a replaced figure stays in all_models)
    const roots = typeof doc.roots === 'function' ? doc.roots() : doc.roots;
    const seen = new Set();
    const stack = [...roots];
    while (stack.length) {
      const m = stack.pop();
      if (seen.has(m)) continue;
      seen.add(m);
      for (const r of m.references()) stack.push(r);
    }
    for (const m of seen) {
      if (m.type !== 'LegendItem' || !m.renderers.length) continue;
      const label = m.label && m.label.value !== undefined ? m.label.value : String(m.label);
      const data = m.renderers[0].data_source.data;
      const cols = Object.keys(data);
      out[label] = {
        cols: cols,
        x: Array.from(data[cols[0]] || []),
        y: Array.from(data[cols[1]] || []),
      };
    }
  }
  return out;
}
"""


def series(p: Page) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{legend label: (x, y)} of every figure on the page (non-numbers as NaN)."""
    raw = p.page.evaluate(SERIES_JS)

    def num(v) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan

    return {
        k: (np.array([num(v) for v in d["x"]]), np.array([num(v) for v in d["y"]]))
        for k, d in raw.items()
    }


def wait_series(p: Page, cond, timeout: float = 15) -> dict:
    """Poll the page's series until ``cond(series)`` holds (a redrawn figure arrives late)."""
    t0 = time.perf_counter()
    data = series(p)
    while not cond(data) and time.perf_counter() - t0 < timeout:
        p.page.wait_for_timeout(250)
        data = series(p)
    return data


def train_until(p: Page, iterations: int, timeout: float) -> int:
    """Play until the status shows ≥ ``iterations``, then pause; returns the iteration."""
    p.play()
    t0 = time.perf_counter()
    while p.iteration() < iterations and time.perf_counter() - t0 < timeout:
        p.page.wait_for_timeout(250)
    p.button("❚❚ Pause").click()
    p.wait_status(lambda t: t.startswith("paused"), timeout=10)
    p.page.wait_for_timeout(800)  # the refresh after the pause
    return p.iteration()


def test_adult_nllh_plot_past_4500_iterations_holds_every_point(server, browser):
    """A past bug: past iteration 4 500 (⌈it / 1500⌉ = 3) the NLLH plot was empty or a
    straight line.  Adult with a small n' (fast) and big ticks; NLLH every 3rd iteration."""
    p = Page(
        browser,
        server.url + "?dataset=adult&n_gibbs=50&iters_per_tick=500",
        ready="Adult",
        timeout=120,
    )
    try:
        # ~25 s at ~190 it/s on an idle 2-core machine; longer when it is loaded
        it = train_until(p, 4600, timeout=45 * slack())
        assert it >= 4500, f"Adult reached only iteration {it} (status {p.status()!r})"
        data = series(p)
        x, y = data["MRF"]
        ok = np.isfinite(x) & np.isfinite(y)
        assert ok.sum() >= 100, f"only {ok.sum()} finite NLLH points at iteration {it}"
        x, y = x[ok], y[ok]
        assert x[-1] >= it - 5, f"the curve ends at {x[-1]}, the run is at {it}"
        assert x[0] <= 10
        # no straight-line artefact: the points are spread over the whole run (the axis is
        # logarithmic: past iteration 1 000, where its buckets hold several measurements,
        # no gap wider than two buckets)
        gaps = np.diff(np.log10(x))[x[1:] > 1000]
        assert gaps.max() <= 0.012, f"a gap of {gaps.max():.4f} decades in the curve"
        assert len(np.unique(np.round(y, 6))) >= 50
        # the convergence plot: d̂'s error downsampled on its own, the floor drawn
        dx, dy = data["d̂ (counts)"]
        assert np.isfinite(dy).sum() >= 100 and dx[-1] >= it - 1
        fx, fy = data["Monte-Carlo floor"]
        assert len(fx) == 2 and fy[0] > 0
    finally:
        p.close()


def test_pin_two_runs_and_see_their_ghosts(server, browser):
    """ "Pin this run" keeps the curves as ghosts while the next run trains (two pins)."""
    p = Page(browser, server.url + "?dataset=xor&n_gibbs=2000", ready="XOR", timeout=60)
    try:
        first = train_until(p, 60, timeout=30)
        p.button("Pin this run").click()
        wait_series(p, lambda d: "pin 1" in d)
        p.button("Reset").click()
        p.wait_status(lambda t: "iteration 0" in t, timeout=20)
        second = train_until(p, 30, timeout=30)
        p.button("Pin this run").click()
        wait_series(p, lambda d: "pin 2" in d)
        p.button("Reset").click()
        p.wait_status(lambda t: "iteration 0" in t, timeout=20)
        # the live run: a few Steps (Play under load can overshoot the pins before it pauses)
        for _ in range(3):
            p.button("Step").click()
        p.wait_status(lambda t: "iteration 3" in t, timeout=20)
        data = wait_series(p, lambda d: {"pin 1", "pin 2", "MRF"} <= set(d))
        assert {"pin 1", "pin 2", "MRF"} <= set(data), sorted(data)
        x1, y1 = data["pin 1"]
        x2, _ = data["pin 2"]
        live, _ = data["MRF"]
        assert x1.max() >= first - 1 and x2.max() >= second - 1
        assert live.max() <= 3 < min(x1.max(), x2.max())  # the live run is the new one
        assert np.isfinite(y1).all()
        caption = " ".join(p.page.locator(".aggmrf-pins p").all_inner_texts())
        assert "pin 1" in caption and "pin 2" in caption and "xor" in caption
        p.button("Clear pins").click()
        data = wait_series(p, lambda d: "pin 1" not in d)
        assert "pin 1" not in data and "MRF" in data
        assert not p.errors, p.errors
    finally:
        p.close()


@pytest.mark.parametrize("width,height", [(1280, 720), (1600, 1000)])
def test_training_tab_screenshot(server, browser, shots, width, height):
    """The Training tab of Adult after a few hundred iterations, at projector sizes."""
    p = Page(browser, server.url + "?dataset=adult&n_gibbs=10000", ready="Adult", timeout=120)
    try:
        p.page.set_viewport_size({"width": width, "height": height})
        train_until(p, 300, timeout=40)
        p.page.wait_for_timeout(2500)  # the heavy plots refresh every 2 s
        p.page.screenshot(path=str(shots / f"explorer_training_{width}x{height}.png"))
        score = " ".join(p.page.locator(".aggmrf-scoreboard p").all_inner_texts())
        assert "Test NLLH: MRF 0." in score and "skyline" in score and "gap" in score
        # the four training plots and the scoreboard fit the window without scrolling
        canvases = p.page.locator(".aggmrf-plots canvas").filter(visible=True)
        boxes = [canvases.nth(i).bounding_box() for i in range(canvases.count())]
        assert len(boxes) >= 4
        assert max(b["y"] + b["height"] for b in boxes) <= height + 1, boxes
        assert not p.errors, p.errors
    finally:
        p.close()
