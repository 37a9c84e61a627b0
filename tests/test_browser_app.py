"""Browser tests of the explorer's controls and teaching aids: lesson links,
a feature subset built by clicking, a dataset switch mid-training, the XOR triplet table,
the ε slider of the Privacy tab, and the projector layout (1280×720, sidebar open and
closed, keyboard shortcuts).

They drive Debian's chromium through playwright against ``panel serve apps/explorer.py``
(the server and browser fixtures of ``test_browser.py``); each takes well under a minute.
Screenshots go to ``$AGGMRF_SCREENSHOT_DIR`` (default: ``<pytest tmp>/screenshots``).
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import parse_qs, quote, urlparse

import pytest

from .test_browser import Page, browser, server, shots  # noqa: F401 - pytest fixtures

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1280, "height": 720}
# the XOR bars' data source(s) of the page: one list of (model, P(Y=1|x)) per source
XOR_SOURCE_JS = """() => {
  const all = [];
  for (const d of Bokeh.documents) for (const m of d._all_models.values()) {
    const data = m.data;
    if (data && data.model && data.p && data.xoffsets) {
      const out = [];
      for (let i = 0; i < data.p.length; i++) out.push([String(data.model[i]), data.p[i]]);
      all.push(out);
    }
  }
  return all;
}"""


class AppPage(Page):
    """A served explorer page at a given viewport (default: a 1280×720 projector)."""

    def __init__(self, browser, url, ready="iteration 0", timeout=90, viewport=PROJECTOR):  # noqa: F811
        self.ctx = browser.new_context(viewport=viewport)
        self.page = self.ctx.new_page()
        self.page.set_default_navigation_timeout(timeout * 1000)  # (a loaded, shared machine)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e} {e.stack}"))
        t0 = time.perf_counter()
        self.page.goto(url)
        self.wait_status(lambda text: ready in text and "iteration 0" in text, timeout=timeout)
        self.load_seconds = time.perf_counter() - t0

    def visible(self, selector: str) -> bool:
        loc = self.page.locator(selector)
        return loc.count() > 0 and loc.first.is_visible()

    def in_view(self, selector: str) -> bool:
        """The element is shown entirely inside the viewport (no scrolling needed)."""
        box = self.page.locator(selector).first.bounding_box()
        vp = self.page.viewport_size
        return (
            box is not None
            and box["x"] >= 0
            and box["y"] >= 0
            and box["x"] + box["width"] <= vp["width"] + 1
            and box["y"] + box["height"] <= vp["height"] + 1
        )

    def text(self, selector: str) -> str:
        """All the text of an element, its shadow DOM included (Panel renders in one)."""
        return self.page.locator(selector).first.evaluate(
            "e => (e.shadowRoot ? e.shadowRoot.textContent : '') + ' ' + e.textContent"
        )

    def open_card(self, title: str) -> None:
        self.page.locator(".card-header, .card-button").filter(has_text=title).first.click()
        self.page.wait_for_timeout(400)


def _no_errors(p: AppPage) -> None:
    assert not p.errors, p.errors
    hits = p.page.get_by_text(re.compile(r"\bTraceback\b")).all_inner_texts()
    assert not hits, hits


def test_lesson_link_round_trip_with_hidden_controls(server, browser, shots):  # noqa: F811
    text = "Compare the <b>true</b> gradient: press Play"
    query = (
        "?dataset=xor&n_samples=2000&gradient=true&auto_defaults=false&lambda_theta=10"
        "&hide=lambda_mu,step_mu,presets&lesson=" + quote(text)
    )
    p = AppPage(browser, server.url + query, ready="XOR")
    try:

        def check(page: AppPage) -> None:
            # the lesson text is shown literally (escaped), never as HTML
            banner = page.page.locator(".aggmrf-lesson").first
            assert banner.is_visible()
            assert "<b>true</b>" in page.text(".aggmrf-lesson")
            assert banner.locator("b").count() == 0
            assert not page.visible(".aggmrf-control-lambda_mu")
            assert not page.visible(".aggmrf-control-step_mu")
            assert page.visible(".aggmrf-control-lambda_theta")
            assert page.control("gradient").locator(".bk-active").all_inner_texts() == ["true"]
            assert page.control("lambda_theta").get_by_text(re.compile(r": 10$")).count() == 1

        check(p)
        p.page.screenshot(path=str(shots / "explorer_lesson_1280.png"))
        p.open_card("Save & share")
        link = p.page.locator(".aggmrf-lesson-link input").first.input_value()
        assert p.visible(".aggmrf-copy")
        for part in ("gradient=true", "lambda_theta=10", "hide=lambda_mu%2Cstep_mu%2Cpresets"):
            assert part in link, (part, link)
        assert "lesson=Compare" in link
        q = AppPage(browser, link, ready="XOR")
        try:
            check(q)
            _no_errors(q)
        finally:
            q.close()
        _no_errors(p)
    finally:
        p.close()


def _chips(p: AppPage) -> list[str]:
    return [
        t.replace("Remove item", "").strip(" ×\n")
        for t in p.control("features").locator(".choices__inner .choices__item").all_inner_texts()
    ]


def _url_features(p: AppPage) -> list[str]:
    """The feature subset the page's URL holds (written back from the session)."""
    raw = parse_qs(urlparse(p.page.url).query).get("features", [""])[0]
    return json.loads(raw) if raw.startswith("[") else [v for v in raw.split(",") if v]


def test_feature_subset_built_by_clicking(server, browser):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=synthetic&n_samples=2000", ready="synthetic")
    try:
        box = p.control("features")
        for k, name in enumerate(("x1", "x2"), start=1):
            box.locator("input").first.click()
            box.locator(".choices__item--choice").filter(has_text=name).first.click()
            p.page.keyboard.press("Escape")
            want = ["x1", "x2"][:k]
            t0 = time.perf_counter()
            while _chips(p) != want and time.perf_counter() - t0 < 20:
                p.page.wait_for_timeout(100)
            p.page.wait_for_timeout(300)
            p.page.locator(".aggmrf-spinner").first.wait_for(state="hidden", timeout=30000)
            p.wait_status(lambda t: "iteration 0" in t and t.endswith("synthetic"), timeout=30)
            # the pick stays (no "best_pair needs at least two features" and no revert)
            assert _chips(p) == want, _chips(p)
            t0 = time.perf_counter()  # (the URL follows the settings' next sync, not at once)
            while _url_features(p) != want and time.perf_counter() - t0 < 10:
                p.page.wait_for_timeout(100)
            assert _url_features(p) == want, p.page.url
            assert not p.visible(".alert-danger"), p.text(".alert-danger")
            assert "best_pair" not in p.text(".aggmrf-control-features")
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() == 1, timeout=20)
        # a link with the subset shows it in the widget
        q = AppPage(browser, server.url + "?dataset=synthetic&features=x2,x3", ready="synthetic")
        try:
            t0 = time.perf_counter()  # (the card's chips are drawn just after the status line)
            while _chips(q) != ["x2", "x3"] and time.perf_counter() - t0 < 10:
                q.page.wait_for_timeout(100)
            assert _chips(q) == ["x2", "x3"]
        finally:
            q.close()
        _no_errors(p)
    finally:
        p.close()


def test_dataset_switch_mid_training_resets_status_notice_and_defaults(server, browser):  # noqa: F811
    query = "?dataset=xor&n_samples=2000&n_gibbs=3000&auto_defaults=false&lambda_theta=10"
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.play()
        # far enough that the toy run (fast) cannot catch up while the status is in transit
        p.wait_status(lambda t: p.iteration() > 800, timeout=60)
        old = p.iteration()
        p.select_dataset("Toy — the paper's Table 1")
        seen: list[str] = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 30:
            text = p.status()
            seen.append(text)
            if text.endswith("toy (Table 1)"):
                break
            p.page.wait_for_timeout(20)
        toy = [t for t in seen if t.endswith("toy (Table 1)")]
        assert toy, seen[-3:]
        it = int(STATUS_ITER.search(toy[0]).group(1).replace(",", ""))
        assert it < old, f"status showed the previous run's iteration: {toy[0]!r} (XOR was {old})"
        # hand-set n' and λθ are back to the defaults (the rule) on the new dataset
        assert p.control("n_gibbs").locator("input").first.input_value() in ("10000", "10,000")
        assert p.control("lambda_theta").get_by_text(re.compile(r": 10$")).count() == 0
        assert p.control("auto_defaults").locator("input").first.is_checked()
        notice = p.page.locator(".aggmrf-notice").first
        assert notice.is_visible() and "dataset changed" in p.text(".aggmrf-notice")
        assert not (notice.is_visible() and p.visible(".alert-danger"))
        # the notice goes away once the new run has trained a while
        t0 = time.perf_counter()
        while notice.is_visible() and time.perf_counter() - t0 < 30:
            p.page.wait_for_timeout(250)
        assert not notice.is_visible(), "the 'dataset changed' notice stayed"
        assert p.status().startswith("training")
        _no_errors(p)
    finally:
        p.close()


STATUS_ITER = re.compile(r"iteration ([\d,]+)")


def _live_mrf(p: AppPage) -> list[float]:
    sources = p.page.evaluate(XOR_SOURCE_JS) or []
    rows = sources[-1] if sources else []
    return [v for m, v in rows if m == "live MRF"]


def test_xor_triplet_table_moves_the_mrf_toward_the_truth(server, browser, shots):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&n_samples=4000&n_gibbs=2000", ready="XOR")
    try:
        p.play()
        p.tab("XOR")
        t0 = time.perf_counter()
        pairs_only: list[float] = []
        while time.perf_counter() - t0 < 20 and not (pairs_only and max(pairs_only) > 0.85):
            p.page.wait_for_timeout(500)
            pairs_only = _live_mrf(p)
        assert len(pairs_only) == 4 and max(pairs_only) > 0.85 and min(pairs_only) < 0.15, (
            pairs_only
        )
        p.page.get_by_text("Release the triplet table (X1, X2, X3)", exact=True).click()
        p.wait_status(lambda t: t.endswith("XOR") and p.iteration() > 150, timeout=40)
        truth = (0.25, 0.25, 0.75, 0.75)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 20:  # the bars refresh every 2 s (× sessions training)
            with_triple = _live_mrf(p)
            if len(with_triple) == 4 and all(
                abs(v - t) < 0.07 for v, t in zip(sorted(with_triple), truth, strict=True)
            ):
                break
            p.page.wait_for_timeout(500)
        print(f"XOR live MRF, pair tables: {pairs_only}; with the triplet table: {with_triple}")
        assert len(with_triple) == 4, with_triple
        assert all(abs(v - t) < 0.07 for v, t in zip(sorted(with_triple), truth, strict=True)), (
            with_triple
        )
        assert "triples=true" in p.page.url
        p.page.screenshot(path=str(shots / "explorer_xor_triplet_1280.png"))
        _no_errors(p)
    finally:
        p.close()


def test_privacy_tab_epsilon_slider_adds_points(server, browser, shots):  # noqa: F811
    query = "?dataset=xor&n_samples=2000&n_gibbs=2000&mechanism=gaussian&epsilon=1"
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.tab("Privacy")
        handle = p.page.locator(".aggmrf-privacy-epsilon .noUi-handle").first
        p.play()
        for _ in range(2):  # ε 1 → 2 → 5: each move re-releases and retrains
            p.wait_status(lambda t: p.iteration() > 100, timeout=30)
            before = p.iteration()
            for attempt in range(3):  # (a key press lost while the tab re-renders: retry)
                handle.focus()
                p.page.keyboard.press("ArrowRight")
                try:
                    p.wait_status(lambda t, b=before: p.iteration() < b, 15)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
        p.wait_status(lambda t: p.iteration() > 40, timeout=30)
        runs = p.text(".aggmrf-privacy-runs")
        assert "final test NLLH" in runs and runs.count("gaussian") == 2, runs
        p.page.screenshot(path=str(shots / "explorer_privacy_1280.png"))
        _no_errors(p)
    finally:
        p.close()


def test_projector_layout_and_keyboard_shortcuts(server, browser, shots):  # noqa: F811
    p = AppPage(browser, server.url, ready="XOR")
    try:
        for sidebar in ("open", "closed"):
            if sidebar == "closed":
                p.page.locator("#sidebar-toggle").first.click()
                p.page.wait_for_timeout(800)
                assert not p.control("dataset").is_visible()
            assert p.in_view(".aggmrf-plots"), p.page.locator(".aggmrf-plots").bounding_box()
            for name in ("▶ Play", "Step", "Reset"):
                assert p.button(name).is_visible() and p.in_view(f"button:has-text('{name}')"), (
                    sidebar,
                    name,
                )
            p.page.screenshot(path=str(shots / f"explorer_projector_sidebar_{sidebar}.png"))
        # keyboard: space = play / pause, → = one step; not while typing in an input
        p.page.locator("body").click(position={"x": 700, "y": 100})
        p.page.keyboard.press("Space")
        p.wait_status(lambda t: t.startswith("training") and p.iteration() > 0, timeout=20)
        p.page.keyboard.press("Space")
        p.wait_status(lambda t: t.startswith("paused"), timeout=10)
        it = p.iteration()
        p.page.keyboard.press("ArrowRight")
        p.wait_status(lambda t: p.iteration() == it + 1, timeout=10)
        p.page.locator("#sidebar-toggle").first.click()
        p.page.wait_for_timeout(800)
        p.control("n_gibbs").locator("input").first.focus()
        p.page.keyboard.press("Space")
        p.page.wait_for_timeout(800)
        assert p.status().startswith("paused") and p.iteration() == it + 1
        _no_errors(p)
    finally:
        p.close()
