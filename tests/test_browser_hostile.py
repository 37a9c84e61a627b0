"""Browser tests of the explorer's hardening: hostile column names open no dialog
and add no element, a too-large upload is refused in the browser while the page keeps
working, the two-ID-column CSV is refused without blowing up the server's memory, a link
is read key by key, and a closed connection shows a banner.

They serve ``apps/explorer.py`` and drive Debian's chromium like tests/test_browser.py
(whose server and browser fixtures they reuse); they never skip.
"""

# ruff: noqa: F811  (the fixtures of tests/test_browser.py are imported, then requested by name)
from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psutil
import pytest

from tests.test_browser import (  # noqa: F401 - fixtures
    Page,
    browser,
    free_port,
    server,
    start_server,
    stop_server,
)

sys.path.insert(0, str(Path(__file__).parent))
from hostile.corpus import two_id_columns  # noqa: E402

pytestmark = pytest.mark.browser

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(2)>",
    "<script>alert(3)</script>",
    "[link](javascript:alert(4))",
    "\"quoted' <b>name</b>",
]
LABEL = "<img src=y onerror=alert(5)>"
RSS_LIMIT = 1.5 * 2**30

# elements of each kind in the page, shadow roots included (Bokeh renders in shadow DOM)
COUNT_JS = """
() => {
  const counts = {img: 0, svg: 0, script: 0, iframe: 0, b: 0};
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      const t = el.tagName.toLowerCase();
      if (t in counts) counts[t] += 1;
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return counts;
}
"""


def _open(browser, url: str, query: str = "?dataset=toy") -> Page:
    p = Page(browser, url + query, ready="")
    p.dialogs = []
    p.page.on("dialog", lambda d: (p.dialogs.append(d.message), d.dismiss()))
    return p


def _choose_upload(p: Page) -> None:
    p.select_dataset("Upload a CSV…")
    p.page.locator("input[type=file]").first.wait_for(state="attached", timeout=20000)


def _upload(p: Page, path: Path) -> None:
    p.page.locator("input[type=file]").first.set_input_files(str(path))


def _wait_label_option(p: Page, value: str, timeout: float = 30) -> None:
    label = p.control("label_column").locator("select")
    label.wait_for(state="visible", timeout=20000)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        opts = label.evaluate("e => Array.from(e.options).map(o => o.value)")
        if value in opts:
            return
        p.page.wait_for_timeout(100)
    raise AssertionError(f"label option {value!r} never appeared; options: {opts}")


def _wait_idle(p: Page, timeout: float = 90) -> None:
    """Wait until a data load started by the last click has finished (spinner hidden)."""
    p.page.wait_for_timeout(1500)
    spinner = p.page.locator(".aggmrf-spinner").first
    t0 = time.perf_counter()
    while spinner.is_visible() and time.perf_counter() - t0 < timeout:
        p.page.wait_for_timeout(200)


def _error_texts(p: Page, name: str | None = None) -> list[str]:
    """The visible error messages (beside control ``name``, or all)."""
    root = p.control(name) if name else p.page
    return [e.inner_text() for e in root.locator(".aggmrf-error p").all() if e.is_visible()]


def _hostile_csv(path: Path) -> None:
    rows = [",".join('"' + c.replace('"', '""') + '"' for c in [*PAYLOADS, LABEL])]
    for i in range(240):
        cells = [f"v{(i * (k + 2)) % 3}" for k in range(len(PAYLOADS))]
        cells[0] = ["<img src=z onerror=alert(6)>", "=cmd|' /C calc'!A0", "plain"][i % 3]
        rows.append(",".join('"' + c.replace('"', '""') + '"' for c in cells) + f",{i % 2}")
    path.write_text("\n".join(rows) + "\n")


def test_hostile_column_names_open_no_dialog_and_add_no_element(server, browser, tmp_path):
    csv = tmp_path / "hostile.csv"
    _hostile_csv(csv)
    p = _open(browser, server.url)
    try:
        before = p.page.evaluate(COUNT_JS)
        _choose_upload(p)
        _upload(p, csv)
        _wait_label_option(p, LABEL)
        # the file's own name is shown, never a server path
        info = p.page.locator(".aggmrf-upload-info").first
        info.get_by_text("hostile.csv").first.wait_for(timeout=10000)
        shown = info.locator("p").first.inner_text()
        assert "hostile.csv" in shown and "/tmp" not in shown, shown
        p.control("label_column").locator("select").select_option(LABEL)
        p.wait_status(lambda t: t.endswith("uploaded CSV") and "iteration 0" in t, timeout=90)
        # open the Features choices: Choices.js renders every option label
        feats = p.control("features")
        feats.locator("input").first.click()
        p.page.wait_for_timeout(500)
        for text in PAYLOADS:  # each label is shown as its own characters
            assert feats.get_by_text(text, exact=True).count() >= 1, text
        p.page.keyboard.press("Escape")
        # pick a hostile feature: the chosen item shows its label too
        feats.locator("input").first.click()
        dropdown = feats.locator(".choices__list--dropdown").first
        dropdown.get_by_text(PAYLOADS[0], exact=True).first.click(timeout=10000)
        _wait_idle(p)
        chosen = feats.locator(".choices__list--multiple").first
        assert chosen.get_by_text(PAYLOADS[0]).count() >= 1
        _wait_idle(p)
        p.wait_status(lambda t: t.endswith("uploaded CSV") and "iteration 0" in t, timeout=90)
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() >= 1, timeout=30)
        # the Tables tab: the table of a hostile column, its title and cells as text
        p.tab("Tables")
        table = p.page.locator(".tabulator").first
        table.wait_for(timeout=20000)
        # the Tables tab's select (the label select lists the label column too)
        sel = p.page.locator("select").filter(has_text=PAYLOADS[0]).filter(has_not_text=LABEL)
        sel = sel.first
        sel.select_option(index=0)  # another table first, then the hostile one
        p.page.wait_for_timeout(1500)
        sel.select_option(label=PAYLOADS[0])
        t0, headers = time.perf_counter(), []
        while PAYLOADS[0] not in headers and time.perf_counter() - t0 < 30:
            p.page.wait_for_timeout(300)
            headers = table.locator(".tabulator-col-title").all_inner_texts()
        if PAYLOADS[0] not in headers:
            p.page.screenshot(path=str(tmp_path / "tables.png"))
        assert PAYLOADS[0] in headers, (headers, str(tmp_path / "tables.png"))
        assert table.get_by_text("<img src=z onerror=alert(6)>", exact=True).count() >= 1
        p.page.wait_for_timeout(1000)
        assert not _error_texts(p), _error_texts(p)  # every step above was accepted
        after = p.page.evaluate(COUNT_JS)
        assert p.dialogs == [], p.dialogs
        for tag in ("img", "script", "iframe", "b"):
            assert after[tag] == before[tag], (tag, before, after)
        assert after["svg"] <= before["svg"] + 20  # icons may come and go; no injected ones
        assert p.page.evaluate("() => window.__xss === undefined")
    finally:
        p.close()


def test_30mb_upload_is_refused_in_the_browser_and_the_page_keeps_working(
    server, browser, tmp_path
):
    big = tmp_path / "big.csv"
    line = "a,b,c,label\n" + "x,y,z,1\n" * 10
    with big.open("w") as fh:
        fh.write("a,b,c,label\n")
        chunk = line * 20_000
        while fh.tell() < 30 * 2**20:
            fh.write(chunk)
    p = _open(browser, server.url, "?dataset=xor&n_gibbs=2000")
    try:
        p.wait_status(lambda t: t.endswith("XOR"), timeout=60)
        assert p.page.get_by_text(re.compile(r"up to \d+(\.\d)? MB")).count() >= 1
        proc = psutil.Process(server.proc.pid)
        rss0 = proc.memory_info().rss
        _choose_upload(p)
        _upload(p, big)
        p.page.get_by_text(re.compile("too large", re.I)).first.wait_for(timeout=20000)
        p.page.wait_for_timeout(1500)
        assert proc.memory_info().rss - rss0 < 100 * 2**20, "the file reached the server"
        # the page still works: back to XOR, Step advances
        p.select_dataset("XOR counterexample")
        _wait_idle(p)
        p.wait_status(lambda t: t.endswith("XOR"), timeout=60)
        i = p.iteration()
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() == i + 1, timeout=20)
        assert p.page.locator("#aggmrf-connection-lost").count() == 0
    finally:
        p.close()


def test_two_id_column_upload_is_refused_and_the_server_stays_small(server, browser, tmp_path):
    csv = tmp_path / "ids.csv"
    two_id_columns().to_csv(csv, index=False)
    proc = psutil.Process(server.proc.pid)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)

    p = _open(browser, server.url)
    rss0 = proc.memory_info().rss
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        _choose_upload(p)
        _upload(p, csv)
        _wait_label_option(p, "y")
        p.control("label_column").locator("select").select_option("y")
        msg = p.page.get_by_text(re.compile("budget")).first
        msg.wait_for(timeout=60000)
        text = msg.inner_text()
        assert "user" in text and "item" in text, text
        p.page.wait_for_timeout(1000)
    finally:
        done.set()
        t.join()
        p.close()
    print(
        f"server RSS before the two-ID upload {rss0 / 2**20:.0f} MB, "
        f"peak while uploading and refusing it {peak[0] / 2**20:.0f} MB"
    )
    assert 0 < peak[0] < RSS_LIMIT, peak[0]


def _xor_rule_lambda(epsilon: float) -> float:
    """The default rule's λ_θ on XOR's tables under the Gaussian mechanism at ``epsilon``."""
    from aggmrf_explore.experiment import prepare
    from aggmrf_explore.privacy import make_mechanism
    from aggmrf_explore.trainer_settings import noise_penalties

    lay = prepare("xor").layout
    sd = make_mechanism("gaussian", epsilon=epsilon, layout=lay).std
    return noise_penalties(lay.n_released_tables, sd)[1]


def test_link_is_read_key_by_key(server, browser):
    p = _open(browser, server.url, "?dataset=xor&lambda_theta=nan&mechanism=gaussian&epsilon=2")
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=60)
        assert p.control("mechanism").locator(".bk-active").all_inner_texts() == ["Gaussian"]
        assert p.control("epsilon").get_by_text(re.compile(r": 2$")).count() == 1
        assert p.page.get_by_text("Gaussian σ").first.is_visible()
        p.control("lambda_theta").locator(".aggmrf-error p").first.wait_for(timeout=10000)
        assert ["finite" in t for t in _error_texts(p, "lambda_theta")] == [True]
        assert len(_error_texts(p)) == 1, _error_texts(p)  # beside its own control only
        assert not p.page.get_by_text("ignored invalid settings").count()
        # the address bar holds the settings in effect
        t0 = time.perf_counter()
        while "nan" in p.page.url and time.perf_counter() - t0 < 10:
            p.page.wait_for_timeout(100)
        # λ_θ is the default rule's at this release's noise (trainer_settings.noise_penalties)
        lam = float(parse_qs(urlparse(p.page.url).query)["lambda_theta"][0])
        assert "nan" not in p.page.url and lam == pytest.approx(_xor_rule_lambda(2.0), rel=1e-3)
        assert "mechanism=gaussian" in p.page.url and "epsilon=2" in p.page.url
    finally:
        p.close()


def test_hostile_link_values_each_stay_beside_their_control(server, browser):
    p = _open(
        browser,
        server.url,
        "?dataset=%3Cscript%3Ealert(1)%3C/script%3E&n_gibbs=1e99&epsilon=-1&mechanism=laplace"
        "&data_seed=-1&features=%5B%22nope%22%5D&table=" + "x" * 5000,
    )
    try:
        p.wait_status(lambda t: "iteration 0" in t, timeout=60)
        assert p.control("mechanism").locator(".bk-active").all_inner_texts() == ["Laplace"]
        for name in ("dataset", "n_gibbs", "epsilon", "data_seed", "features"):
            p.control(name).locator(".aggmrf-error p").first.wait_for(timeout=30000)
            (text,) = _error_texts(p, name)
            assert 10 < len(text) < 700, text
        assert "<script>" in _error_texts(p, "dataset")[0]  # shown as text, escaped
        assert p.dialogs == []
        assert "%3Cscript" not in p.page.url and "1e99" not in p.page.url
    finally:
        p.close()


def test_connection_lost_banner(browser):
    from aggmrf_explore.kernels import warm_up

    warm_up()
    port = free_port()
    proc, _ = start_server(port)
    try:
        p = _open(browser, f"http://127.0.0.1:{port}/explorer")
        assert p.page.locator("#aggmrf-connection-lost").count() == 0
        stop_server(proc)
        banner = p.page.locator("#aggmrf-connection-lost")
        banner.wait_for(state="visible", timeout=20000)
        assert "reload" in banner.inner_text().lower()
        p.close()
    finally:
        if proc.poll() is None:
            stop_server(proc)


def test_continue_from_last_good_state_after_divergence(server, browser):
    p = _open(
        browser,
        server.url,
        "?dataset=xor&n_samples=2000&n_gibbs=200&precondition=false&auto_defaults=false"
        "&step_mu=50&step_theta=50&lambda_theta=0",  # (steps of 10 no longer diverge)
    )
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=60)
        cont = p.page.get_by_role("button", name="Continue from last good state")
        assert not cont.is_visible()
        for _ in range(80):  # these step sizes diverge within a few dozen steps
            p.button("Step").click()
            p.page.wait_for_timeout(150)
            if cont.is_visible():
                break
        cont.wait_for(state="visible", timeout=10000)
        it = p.iteration()
        p.button("▶ Play").click()  # refused: it would only repeat the rejected step
        p.page.get_by_text("Continue from last good state”").first.wait_for(timeout=10000)
        p.page.wait_for_timeout(1000)
        assert p.status().startswith("paused") and p.iteration() == it
        cont.click()
        # α halved and applied (the link follows), training went on from the last good
        # iteration (at α = 25 it may diverge again: then the button is back, nothing lost)
        t0 = time.perf_counter()
        while "step_theta=25.0" not in p.page.url and time.perf_counter() - t0 < 20:
            p.page.wait_for_timeout(200)
        assert "step_theta=25.0" in p.page.url and "step_mu=25.0" in p.page.url
        p.wait_status(lambda t: p.iteration() >= it, timeout=20)
        assert p.iteration() >= it  # never back to 0
    finally:
        p.close()


@pytest.mark.parametrize(
    "query,name",
    [
        ("noise_seed=-5", "noise_seed"),
        ("noise_seed=abc", "noise_seed"),
        ("train_seed=-5", "train_seed"),
        ("train_seed=1e30", "train_seed"),
    ],
)
def test_a_bad_seed_in_a_link_shows_beside_its_control(server, browser, query, name):
    """A seed the link gets wrong is refused beside its own control (the noise seed in the
    Privacy card, the sampler seed in the Training card), like every other bad value, never
    silently replaced: the address then holds the seed in effect (0)."""
    p = _open(browser, server.url, f"?dataset=xor&{query}")
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=60)
        p.control(name).locator(".aggmrf-error p").first.wait_for(timeout=30000)
        (text,) = _error_texts(p, name)
        assert "seed" in text and query.split("=")[1] in text, text
        assert len(_error_texts(p)) == 1, _error_texts(p)  # beside its own control only
        t0 = time.perf_counter()
        while query in p.page.url and time.perf_counter() - t0 < 10:
            p.page.wait_for_timeout(100)
        assert query not in p.page.url and f"{name}=0" in p.page.url, p.page.url
        assert not p.errors, p.errors
    finally:
        p.close()
