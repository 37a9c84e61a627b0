"""Browser tests of what a teacher meets in class: checkboxes toggled by their text and
named for screen readers, the table browser after a dataset switch, the two ε sliders
in step with the run, the privacy curve per mechanism, lesson links that hide the run
controls, the projector layout at 1280×720, help on every control, and a quiet console.

They drive Debian's chromium through playwright against ``panel serve apps/explorer.py``
(the fixtures of ``test_browser.py``, the page helper of ``test_browser_app.py``).
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import browser, server  # noqa: F401 - pytest fixtures
from .test_browser_app import AppPage

pytestmark = pytest.mark.browser

CHECKBOXES = {
    "singles": "single-feature tables",
    "pairs": "pair tables",
    "noise_aware": "noise-aware training (MRF-N)",
    "auto_defaults": "default rule for λ and α (α = 1/T, λ_θ = min(T/2, 50))",
    "precondition": "preconditioning (diagonal Hessian)",
    "keep_settings": "keep my λ, α, n' and seeds on a dataset switch",
}


def url_value(p: AppPage, key: str) -> str | None:
    """The value of ``key`` in the page's address (the settings in effect)."""
    return parse_qs(urlparse(p.page.url).query).get(key, [None])[0]


def wait_for(cond, timeout: float = 20, page=None) -> bool:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if cond():
            return True
        (page.page.wait_for_timeout(100) if page else time.sleep(0.1))
    return bool(cond())


def test_checkbox_text_toggles_it_and_names_it(server, browser):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&mechanism=laplace", ready="XOR")
    try:
        p.page.wait_for_timeout(1000)
        for name, label in CHECKBOXES.items():
            box = p.page.get_by_role("checkbox", name=label, exact=True)
            assert wait_for(lambda b=box: b.count() == 1, page=p), f"no checkbox {label!r} ({name})"
        # clicking the text (not the box) turns MRF-N on: the run uses it
        p.control("noise_aware").get_by_text(CHECKBOXES["noise_aware"], exact=True).click()
        assert wait_for(lambda: url_value(p, "noise_aware") == "true", page=p), p.page.url
        assert p.page.get_by_role("checkbox", name=CHECKBOXES["noise_aware"]).is_checked()
        # the XOR tab's triplet table, likewise
        p.tab("XOR")
        name = "Release the triplet table (X1, X2, X3)"
        triples = p.page.get_by_role("checkbox", name=name, exact=True)
        assert wait_for(lambda: triples.count() == 1, page=p), "the triplet toggle has no name"
        p.page.get_by_text(name, exact=True).click()
        assert wait_for(lambda: url_value(p, "triples") == "true", page=p), p.page.url
        assert triples.is_checked()
    finally:
        p.close()


# every column title of the table shown: (text, its right edge, cut off with "…")
COLUMN_TITLES_JS = """() => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.classList.contains('tabulator-col-title')) found.push(e);
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  walk(document);
  return found.filter(t => t.offsetParent !== null && t.textContent.trim()).map(t =>
    [t.textContent.trim(), t.getBoundingClientRect().right, t.scrollWidth > t.clientWidth + 1]);
}"""


def test_tables_tab_after_a_dataset_switch_shows_rows_and_every_column(server, browser):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&mechanism=laplace", ready="XOR")
    try:
        p.select_dataset("Adult (census income)")
        p.wait_status(lambda t: t.endswith("Adult") and "iteration 0" in t, timeout=120)
        p.tab("Tables")
        rows = p.page.locator(".tabulator-row")
        assert wait_for(lambda: rows.count() > 0, timeout=20, page=p), "the table has no rows"
        p.page.wait_for_timeout(1000)
        assert rows.count() > 0, "the table lost its rows"
        table = p.page.locator(".aggmrf-table").first.bounding_box()
        right = min(table["x"] + table["width"], p.page.viewport_size["width"])
        titles = p.page.evaluate(COLUMN_TITLES_JS)
        assert any("true label sum" in t for t, _, _ in titles), titles
        for text, edge, cut in titles:  # (the sidebar is open)
            assert edge <= right + 1 and not cut, (text, edge, cut, right)
        # another dataset switch while the tab is shown
        p.select_dataset("Toy — the paper's Table 1")
        p.wait_status(lambda t: t.endswith("toy (Table 1)") and "iteration 0" in t, timeout=60)
        assert wait_for(lambda: rows.count() > 0, timeout=20, page=p), "no rows after Toy"
        assert not p.errors, p.errors
    finally:
        p.close()


def _slider_shows(p: AppPage, box: str) -> tuple[str, str]:
    """(the value display, the handle's position) of the ε slider in ``box``."""
    loc = p.page.locator(box).first
    label = loc.get_by_text(re.compile(r":\s*\S+$")).first.inner_text().rsplit(":", 1)[1].strip()
    return label, loc.locator(".noUi-handle").first.get_attribute("aria-valuetext")


def test_both_epsilon_sliders_end_showing_the_runs_epsilon(server, browser):  # noqa: F811
    # a large n' makes each ε change slow to apply: key presses pile up meanwhile
    query = "?dataset=xor&mechanism=laplace&n_gibbs=50000&n_samples=20000"
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.play()
        p.tab("Privacy")
        p.page.wait_for_timeout(1500)
        side = p.control("epsilon").locator(".noUi-handle").first
        tab = p.page.locator(".aggmrf-privacy-epsilon .noUi-handle").first
        for _ in range(4):
            for handle, key in ((side, "ArrowRight"), (tab, "ArrowRight"), (tab, "ArrowRight")):
                handle.focus()
                p.page.keyboard.press(key)
                p.page.wait_for_timeout(60)
            side.focus()
            p.page.keyboard.press("ArrowLeft")
            p.page.wait_for_timeout(60)
        grid = ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100"]

        def agree() -> bool:
            eps = float(url_value(p, "epsilon"))
            want = next(g for g in grid if float(g) == eps)
            shown = [_slider_shows(p, ".aggmrf-control-epsilon")]
            shown.append(_slider_shows(p, ".aggmrf-privacy-epsilon"))
            return all(lab == want and float(pos) == grid.index(want) for lab, pos in shown)

        assert wait_for(agree, timeout=15, page=p), (
            url_value(p, "epsilon"),
            _slider_shows(p, ".aggmrf-control-epsilon"),
            _slider_shows(p, ".aggmrf-privacy-epsilon"),
        )
        assert not p.errors, p.errors
    finally:
        p.close()


def test_hidden_run_controls_turn_their_keys_off(server, browser):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&hide=play,step,reset", ready="XOR")
    try:
        assert not p.visible("button:has-text('Play')")
        p.page.locator("body").click(position={"x": 700, "y": 100})
        p.page.keyboard.press("Space")
        p.page.keyboard.press("ArrowRight")
        p.page.wait_for_timeout(2500)
        assert p.status().startswith("paused") and p.iteration() == 0, p.status()
        # the hide picker shows the three controls, and no "none hidden"
        p.open_card("Save & share")
        picker = p.page.locator(".choices").filter(has_text="play").first
        chips = picker.locator(".choices__list--multiple .choices__item").all_inner_texts()
        assert sorted(c.replace("Remove item", "").strip() for c in chips) == [
            "play",
            "reset",
            "step",
        ]
        assert "none" not in (picker.locator("input").first.get_attribute("placeholder") or "")
        assert not p.errors, p.errors
    finally:
        p.close()


def test_a_lesson_link_that_hides_every_control_folds_the_sidebar(server, browser):  # noqa: F811
    hide = "play,step,reset,presets,data,privacy,training,share"
    q = AppPage(browser, server.url + f"?dataset=xor&hide={hide}", ready="XOR")
    try:
        q.page.wait_for_timeout(1000)
        sidebar = q.page.locator("#sidebar").first
        box = sidebar.bounding_box()
        assert box is None or box["width"] < 5 or box["x"] + box["width"] <= 0, box
        plots = q.page.locator(".aggmrf-plots").first.bounding_box()
        assert plots["x"] < 60, plots  # the plots take the page's width
    finally:
        q.close()


# the computed font size (px) of the text of an element (its shadow DOM's paragraph)
FONT_JS = """e => {
  const p = (e.shadowRoot && e.shadowRoot.querySelector('p')) || e.querySelector('p') || e;
  return parseFloat(getComputedStyle(p).fontSize);
}"""


def test_projector_three_pins_keep_every_plot_on_screen_and_text_readable(server, browser):  # noqa: F811
    query = "?dataset=xor&n_gibbs=2000&lesson=" + "Pin three runs, then compare them"
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.play()
        for k in range(3):
            p.wait_status(lambda t, k=k: p.iteration() > 30 * (k + 1), timeout=30)
            p.button("Pin this run").click()
            p.page.wait_for_timeout(300)
        p.page.wait_for_timeout(1500)
        assert p.visible(".aggmrf-pins"), "three pins and no caption"
        vp = p.page.viewport_size
        figures = p.page.locator(".aggmrf-plots .bk-Figure, .aggmrf-plots .bk-Canvas")
        assert figures.count() >= 4
        for i in range(figures.count()):
            box = figures.nth(i).bounding_box()
            assert box and box["y"] + box["height"] <= vp["height"] + 1, (i, box)
        for css in (".aggmrf-status", ".aggmrf-lesson"):
            size = p.page.locator(css).first.evaluate(FONT_JS)
            assert size >= 16, (css, size)
        assert not p.errors, p.errors
    finally:
        p.close()


def test_a_quiet_console_and_server_log_when_tabs_open_and_close(server, browser):  # noqa: F811
    before = len(server.log())  # (the server may have served other modules' pages)
    p = AppPage(browser, server.url + "?dataset=xor&n_gibbs=2000", ready="XOR")
    try:
        warnings: list[str] = []
        p.page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
        p.page.reload()
        p.wait_status(lambda t: "XOR" in t and "iteration 0" in t, timeout=90)
        p.open_card("Save & share")  # (the hide picker: a second Choices.js)
        p.page.wait_for_timeout(1500)
        assert not [w for w in warnings if "allowHTML" in w], warnings
        p.play()
        p.tab("Tables")
        p.page.wait_for_timeout(1000)
    finally:
        p.close()  # (while training: the page's last writes meet a closed socket)
    for query in ("?dataset=toy", "?dataset=synthetic&n_gibbs=2000"):
        q = AppPage(browser, server.url + query)
        q.play()
        q.close()
    time.sleep(5)
    log = server.log()[before:]
    assert "WebSocketClosedError" not in log and "Traceback" not in log, log[-3000:]


# the legend labels of the page's figures
LEGENDS_JS = """() => {
  const out = [];
  for (const d of Bokeh.documents) for (const m of d._all_models.values())
    if (m.type === "LegendItem" || (m.constructor && m.constructor.__name__ === "LegendItem"))
      if (m.label && m.label.value) out.push(m.label.value);
  return out;
}"""


def test_privacy_curve_has_a_line_per_mechanism_in_the_browser(server, browser):  # noqa: F811
    query = "?dataset=xor&n_gibbs=2000&mechanism=laplace&epsilon=1"
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.play()
        p.tab("Privacy")
        p.wait_status(lambda t: p.iteration() > 100, timeout=60)
        p.control("mechanism").get_by_text("Gaussian", exact=True).click()  # the Laplace run ends
        p.wait_status(lambda t: p.iteration() < 100, timeout=30)
        p.wait_status(lambda t: p.iteration() > 100, timeout=60)
        p.control("mechanism").get_by_text("Laplace", exact=True).click()  # the Gaussian run ends

        def both() -> bool:
            labels = p.page.evaluate(LEGENDS_JS)
            return all(
                any(t.startswith(f"{m} · MRF") for t in labels) for m in ("Laplace", "Gaussian")
            )

        assert wait_for(both, timeout=20, page=p), (
            p.page.evaluate(LEGENDS_JS),
            p.text(".aggmrf-privacy-runs")[:300],
        )
        runs = p.text(".aggmrf-privacy-runs")
        assert "laplace" in runs and "gaussian" in runs, runs
        assert not p.errors, p.errors
    finally:
        p.close()


def test_hovering_a_controls_help_shows_its_settings_help(server, browser):  # noqa: F811
    from aggmrf_explore.settings import SETTINGS

    p = AppPage(browser, server.url + "?dataset=xor&mechanism=laplace", ready="XOR")
    try:
        p.page.wait_for_timeout(1500)
        # a number input (Panel's tooltip) and a slider (a "?" beside it)
        for name in ("n_gibbs", "lambda_theta", "epsilon", "step_theta"):
            box = p.control(name)
            box.scroll_into_view_if_needed()
            box.locator(".bk-description").first.hover()
            text = p.page.get_by_text(SETTINGS[name].help[:40])
            assert wait_for(lambda t=text: t.count() > 0 and t.first.is_visible(), 5, p), name
            p.page.mouse.move(700, 5)
        # a checkbox: its help is the label's tooltip and the input's description
        box = p.page.get_by_role("checkbox", name="noise-aware training (MRF-N)")
        assert box.get_attribute("aria-describedby")
        described = p.control("noise_aware").locator(".aggmrf-check-help").first.text_content()
        assert described == SETTINGS["noise_aware"].help
    finally:
        p.close()
