"""Browser test of the explorer's suppression view: load the Criteo-shaped release
whose pair cells with count ≤ 10 are left out, train, open the Suppression tab and read the
plot's data from the page (``Bokeh.documents``): one finite point per suppressed row of the
release, split into inside / outside the box 0 ≤ d ≤ k as the title counts them.  Uses the
server and browser fixtures of ``test_browser.py``; the screenshot (1280×720) goes to
``$AGGMRF_SCREENSHOT_DIR`` (docs/explorer_suppression.png was made with
``AGGMRF_SCREENSHOT_DIR=docs``)."""

# ruff: noqa: F811  (the fixtures of tests/test_browser.py are imported, then requested by name)
from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest

from aggmrf_explore.explorer.store.problems import get_problem
from aggmrf_explore.explorer.views.suppression_view import (
    INSIDE,
    OUTSIDE,
    RENDERER_PREFIX,
    THRESHOLD,
)

from .test_browser import _no_errors, browser, server, shots, slack  # noqa: F401 - fixtures
from .test_browser_app import AppPage

pytestmark = pytest.mark.browser

N = 6000  # records per split: small, so many pair cells fall at or below k = 10

# the data of every glyph renderer named "suppression:…" reachable from the page's roots
SOURCES_JS = """
(prefix) => {
  const out = {};
  for (const doc of Bokeh.documents) {
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
      if (m.type !== 'GlyphRenderer' || !m.name || !m.name.startsWith(prefix)) continue;
      const data = m.data_source.data;
      const cols = Object.keys(data);
      out[m.name.slice(prefix.length)] = {
        x: Array.from(data[cols[0]] || []), y: Array.from(data[cols[1]] || []),
      };
    }
  }
  return out;
}
"""
TITLE_JS = """
() => {
  for (const doc of Bokeh.documents) for (const m of doc._all_models.values())
    if (m.type === 'Title' && m.text && m.text.includes('suppressed cells')) return m.text;
  return null;
}
"""


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _sources(p) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    raw = p.page.evaluate(SOURCES_JS, RENDERER_PREFIX) or {}
    return {
        k: (np.array([_num(v) for v in d["x"]]), np.array([_num(v) for v in d["y"]]))
        for k, d in raw.items()
    }


def test_suppression_tab_shows_d_hat_on_every_suppressed_cell(server, browser, shots):
    expected = get_problem("criteo", N, 0, None, True, True).aggregated.suppression
    assert expected is not None and expected.n_rows > 100  # the release really suppresses
    p = AppPage(browser, server.url + f"?dataset=criteo&n_samples={N}&n_gibbs=3000", ready="Criteo")
    try:
        p.play()
        p.wait_status(lambda t: p.iteration() >= 150, timeout=60 * slack())
        p.tab("Suppression")
        t0 = time.perf_counter()
        data: dict = {}
        while time.perf_counter() - t0 < 20 * slack():
            data = _sources(p)
            if INSIDE in data and len(data[INSIDE][0]) + len(data[OUTSIDE][0]) > 0:
                break
            p.page.wait_for_timeout(300)
        p.button("❚❚ Pause").click()
        p.wait_status(lambda t: t.startswith("paused"), timeout=10)
        p.page.wait_for_timeout(2500)  # the tab's refresh after the pause
        data = _sources(p)
        assert set(data) == {INSIDE, OUTSIDE, THRESHOLD}, data.keys()
        (xi, yi), (xo, yo), (xk, yk) = data[INSIDE], data[OUTSIDE], data[THRESHOLD]
        # one point per suppressed row of the release, every one finite
        assert len(xi) + len(xo) == expected.n_rows, (len(xi), len(xo), expected.n_rows)
        for a in (xi, yi, xo, yo, xk, yk):
            assert np.all(np.isfinite(a))
        assert sorted(np.concatenate([xi, xo]).tolist()) == list(range(1, expected.n_rows + 1))
        # the threshold line at k = 10; inside points in [0, k], outside ones above it
        assert np.all(yk == 10.0)
        assert np.all((yi >= 0) & (yi <= 10.0)) and np.all(yo > 10.0)
        # the model has trained: its d̂ is not the all-zero start
        assert np.concatenate([yi, yo]).max() > 0
        title = p.page.evaluate(TITLE_JS)
        m = re.search(r"([\d,]+) suppressed cells .*: ([\d,]+) outside", title or "")
        assert m, title
        assert int(m.group(1).replace(",", "")) == expected.n_rows
        assert int(m.group(2).replace(",", "")) == len(xo)
        summary = p.page.get_by_text(re.compile(r"rows suppressed")).first.inner_text()
        assert f"{expected.n_rows:,} of" in summary
        p.page.screenshot(path=str(shots / "explorer_suppression.png"))
        _no_errors(p)
    finally:
        p.close()
