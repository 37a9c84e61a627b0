"""Browser tests of the discrete mechanisms (integer noise) in the explorer: picked in the
Privacy card (six buttons on two rows, none cut in the 330 px sidebar), their σ text, the
Privacy tab's histogram of integer noise against the pmf, and a link that restores one.

They drive Debian's chromium through playwright against ``panel serve apps/explorer.py``
(the fixtures of ``test_browser.py``, the page helper of ``test_browser_app.py``).
Screenshots go to ``$AGGMRF_SCREENSHOT_DIR`` (default: ``<pytest tmp>/screenshots``).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import browser, server, shots  # noqa: F401 - pytest fixtures
from .test_browser_app import AppPage, _no_errors

pytestmark = pytest.mark.browser

# every Bokeh model's title and legend texts of the page (the figures' own words)
FIGURE_TEXTS_JS = """() => {
  const out = [];
  for (const d of Bokeh.documents) for (const m of d._all_models.values()) {
    const name = m.type || (m.constructor && m.constructor.__name__);
    if (name === "Title" && m.text) out.push(m.text);
    if (name === "LegendItem" && m.label && m.label.value) out.push(m.label.value);
  }
  return out;
}"""
# each mechanism button: (text, right edge, its text cut off), through the shadow DOM
BUTTONS_JS = """(box) => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.tagName === 'BUTTON') found.push(e);
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  if (box.shadowRoot) walk(box.shadowRoot);
  walk(box);
  return found.map(b => [b.textContent.trim(), b.getBoundingClientRect().right,
                         b.scrollWidth > b.clientWidth + 1]);
}"""


def url_value(p: AppPage, key: str) -> str | None:
    return parse_qs(urlparse(p.page.url).query).get(key, [None])[0]


def wait_for(p: AppPage, cond, timeout: float = 30) -> bool:
    for _ in range(int(timeout * 10)):
        if cond():
            return True
        p.page.wait_for_timeout(100)
    return bool(cond())


def no_error_box(p: AppPage) -> None:
    """No console error, no traceback, no red alert and no message under a control."""
    _no_errors(p)
    for selector in (".alert-danger", ".aggmrf-error"):
        shown = [e for e in p.page.locator(selector).all() if e.is_visible() and e.inner_text()]
        assert not shown, [e.inner_text() for e in shown]


def test_discrete_gaussian_picked_in_the_privacy_card(server, browser, shots):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&n_samples=2000&n_gibbs=2000", ready="XOR")
    try:
        mech = p.control("mechanism")
        mech.scroll_into_view_if_needed()
        box = mech.bounding_box()
        right = box["x"] + box["width"]  # (the control's box: the sidebar's width)
        buttons = mech.evaluate(BUTTONS_JS)
        texts = [t for t, _, _ in buttons]
        assert texts == [
            "none",
            "Laplace",
            "Gaussian",
            "Local",
            "discrete Laplace",
            "discrete Gaussian",
        ], buttons
        for text, edge, cut in buttons:  # six buttons, each whole inside the 330 px sidebar
            assert edge <= right + 1 and edge <= 330 and not cut, (text, edge, cut, right)
        mech.get_by_text("discrete Gaussian", exact=True).click()
        assert wait_for(p, lambda: url_value(p, "mechanism") == "discrete_gaussian"), p.page.url
        assert mech.locator(".bk-active").all_inner_texts() == ["discrete Gaussian"]
        # its controls: ε and δ, no calibration (the zCDP bound calibrates it)
        assert wait_for(p, lambda: p.visible(".aggmrf-control-delta"))
        assert not p.visible(".aggmrf-control-calibration")
        assert p.visible(".aggmrf-control-epsilon") and p.visible(".aggmrf-control-accounting")
        assert wait_for(p, lambda: "discrete Gaussian σ" in p.text(".aggmrf-sigma"))
        sigma = p.text(".aggmrf-sigma")
        assert "integer noise" in sigma and "records" in sigma, sigma
        # the Privacy tab: the histogram of integer noise against the pmf
        p.tab("Privacy")
        hist = p.page.locator(".aggmrf-noise-hist").first
        assert wait_for(p, lambda: hist.is_visible(), 30)
        hist.scroll_into_view_if_needed()

        def drawn() -> bool:
            texts = p.page.evaluate(FIGURE_TEXTS_JS)
            return "Noise on released counts (integers)" in texts and any(
                t.startswith("discrete Gaussian pmf (σ ") for t in texts
            )

        assert wait_for(p, drawn, 30), p.page.evaluate(FIGURE_TEXTS_JS)
        assert hist.locator("canvas").count() > 0 or hist.evaluate(
            "e => !!(e.shadowRoot && e.shadowRoot.querySelector('canvas, .bk-Canvas'))"
        )
        p.page.wait_for_timeout(500)
        p.page.screenshot(path=str(shots / "explorer_discrete_gaussian_card_1280.png"))
        no_error_box(p)
    finally:
        p.close()


def test_a_link_restores_discrete_gaussian_on_adult(server, browser, shots):  # noqa: F811
    query = "?dataset=adult&mechanism=discrete-gaussian&epsilon=1&delta=1e-07"
    p = AppPage(browser, server.url + query, ready="Adult", timeout=180)
    try:
        mech = p.control("mechanism")
        assert wait_for(
            p, lambda: mech.locator(".bk-active").all_inner_texts() == ["discrete Gaussian"]
        )
        # the address written back names it as the library does
        assert wait_for(p, lambda: url_value(p, "mechanism") == "discrete_gaussian"), p.page.url
        p.play()
        p.wait_status(lambda t: p.iteration() > 30, timeout=120)
        p.tab("Privacy")
        hist = p.page.locator(".aggmrf-noise-hist").first
        assert wait_for(p, lambda: hist.is_visible(), 30)

        def drawn() -> bool:
            return any(
                t.startswith("discrete Gaussian pmf") for t in p.page.evaluate(FIGURE_TEXTS_JS)
            )

        assert wait_for(p, drawn, 30), p.page.evaluate(FIGURE_TEXTS_JS)
        # paused (no redraw moves the page), the sidebar at the Privacy card (buttons to σ)
        # and the tab at the noise
        p.button("❚❚ Pause").click()
        p.wait_status(lambda t: t.startswith("paused"), timeout=30)
        p.page.wait_for_timeout(2500)
        p.page.get_by_text("Noise mechanism", exact=True).first.evaluate(
            "e => e.scrollIntoView({block: 'start'})"
        )
        hist.evaluate("e => e.scrollIntoView({block: 'end'})")
        p.page.wait_for_timeout(500)
        for shown in (".aggmrf-control-mechanism", ".aggmrf-sigma", ".aggmrf-noise-hist"):
            assert p.in_view(shown), shown
        p.page.screenshot(path=str(shots / "explorer_discrete_gaussian_1280x720.png"))
        no_error_box(p)
    finally:
        p.close()
