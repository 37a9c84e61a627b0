"""Browser tests: serve the explorer with ``panel serve`` and drive Debian's chromium (playwright).

These never skip: without /usr/bin/chromium or playwright they fail with a message saying
how to install them (``apt-get install -y chromium``; ``pip install playwright``).
Screenshots go to ``$AGGMRF_SCREENSHOT_DIR`` (default: ``<pytest tmp>/screenshots``).

These tests check behaviour, with generous bounds that only catch a frozen or broken page
(serve → usable page 60 s, first Play 5 s, slider display 3 s, Adult ≥ 5 iterations/s);
the issue's speed targets (15 s, 2 s, 1 s, 20 it/s on an idle 2-core machine) are measured
and printed by ``benchmarks/explorer_sessions.py``, not asserted here, because a shared CI
machine cannot time them reliably.  ``AGGMRF_MAX_START_S``, ``AGGMRF_MAX_PLAY_S``,
``AGGMRF_MAX_SLIDER_S`` and ``AGGMRF_MIN_ADULT_ITS`` set other bounds.  The numba kernels
are compiled into numba's on-disk cache before the server starts (a warm cache, as the
issue specifies), so a first run on a fresh checkout does not time the compiler.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1600, "height": 1000}
STATUS_RE = re.compile(r"iteration ([\d,]+)")
RATE_RE = re.compile(r"([\d.]+) it/s")


def slack() -> float:
    """How much slower than an idle 2-core machine this one is now (load average / cores)."""
    try:
        return min(max(os.getloadavg()[0] / (os.cpu_count() or 1), 1.0), 4.0)
    except OSError:
        return 1.0


def max_seconds(env: str, bound: float) -> float:
    v = os.environ.get(env)
    return float(v) if v else bound * slack()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, timeout: float = 90.0) -> tuple[subprocess.Popen, float]:
    """Start ``panel serve apps/explorer.py`` on a free port; returns (process, seconds until it answers HTTP)."""
    t0 = time.perf_counter()
    log = tempfile.NamedTemporaryFile("w+", prefix="aggmrf-serve-", suffix=".log", delete=False)
    env = {**os.environ, "AGGMRF_EXPLORER_LOG": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "panel",
            "serve",
            str(ROOT / "apps" / "explorer.py"),
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
            "--allow-websocket-origin",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    proc.log_path = log.name
    # poll a static file: a GET of the app itself would build a session nobody uses
    url = f"http://127.0.0.1:{port}/static/js/bokeh.min.js"
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited early:\n{server_log(proc)}")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                if r.status == 200:
                    return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.05)  # fine polling: the start-up benchmark times from here
    proc.kill()
    raise RuntimeError(f"panel serve did not answer on {url} within {timeout:.0f} s")


def server_log(proc: subprocess.Popen) -> str:
    try:
        return Path(proc.log_path).read_text()
    except OSError:
        return ""


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


class Server:
    def __init__(self, url: str, http_seconds: float, proc: subprocess.Popen) -> None:
        self.url, self.http_seconds, self.proc = url, http_seconds, proc

    def log(self) -> str:
        return server_log(self.proc)


def _new_server() -> Server:
    from aggmrf_explore.kernels import warm_up

    warm_up()  # fill numba's on-disk cache: the server then loads, not compiles, the kernels
    port = free_port()
    proc, seconds = start_server(port)
    return Server(f"http://127.0.0.1:{port}/explorer", seconds, proc)


@pytest.fixture(scope="module")
def server(request):
    """One explorer server for every browser test module of the run (started by the first
    module that asks, stopped at the end of the run; started again if it died): a server's
    start and first page cost 10–30 s, once instead of once per module.  A test that needs
    a server nobody used yet takes ``fresh_server``."""
    shared = getattr(request.config, "aggmrf_server", None)
    if shared is None or shared.proc.poll() is not None:
        shared = _new_server()
        request.config.aggmrf_server = shared
        request.config.add_cleanup(lambda: stop_server(shared.proc))
    return shared


@pytest.fixture
def fresh_server(request):
    """A server of its own, started for the test (the start-up time is the first page's).
    Once the test is done it becomes the shared ``server`` of the run if there is none yet
    (the modules after it then start no server of their own); otherwise it is stopped."""
    s = _new_server()
    yield s
    shared = getattr(request.config, "aggmrf_server", None)
    if s.proc.poll() is None and (shared is None or shared.proc.poll() is not None):
        request.config.aggmrf_server = s
        request.config.add_cleanup(lambda: stop_server(s.proc))
    else:
        stop_server(s.proc)


@pytest.fixture(scope="module")
def browser(request):
    """Debian's chromium, one for consecutive modules that ask for it (launching one costs
    ≈ 1.7 s): launched by the first, relaunched if it died, and closed by tests/conftest.py
    after the last test of such a run, before any test that does not ask for it (one that
    drives playwright itself cannot while another playwright runs in the same thread)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium "
            "chromium-driver); the browser tests never download a browser."
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright (python) is missing: pip install playwright")
    shared = getattr(request.config, "aggmrf_chromium", None)
    if shared is not None and not shared[1].is_connected():
        close_shared_browser(request.config)
        shared = None
    if shared is None:
        pw = sync_playwright().start()
        shared = (pw, pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS))
        request.config.aggmrf_chromium = shared
    return shared[1]


def close_shared_browser(config) -> None:
    """Close the chromium of the ``browser`` fixture and its playwright, if one runs."""
    shared = getattr(config, "aggmrf_chromium", None)
    config.aggmrf_chromium = None
    if shared is not None:
        pw, b = shared
        try:
            b.close()
        finally:
            pw.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    d = os.environ.get("AGGMRF_SCREENSHOT_DIR")
    path = Path(d) if d else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Page:
    """A served explorer page with its console errors collected."""

    def __init__(self, browser, url: str, ready: str = "iteration 0", timeout: float = 90) -> None:
        self.ctx = browser.new_context(viewport=VIEWPORT)
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("requestfailed", self._request_failed)
        t0 = time.perf_counter()
        self.page.goto(url)
        self.wait_status(lambda text: ready in text and "iteration 0" in text, timeout=timeout)
        self.load_seconds = time.perf_counter() - t0

    def _request_failed(self, request) -> None:
        """A request the server did not answer is an error, with the browser's reason; one
        the page cancelled itself (net::ERR_ABORTED: its element replaced or gone while it
        loaded) is not a server's failure."""
        failure = request.failure or ""
        if "ERR_ABORTED" not in failure:
            self.errors.append(f"request failed ({failure}): {request.url}")

    def status(self) -> str:
        return self.page.locator(".aggmrf-status p").first.inner_text()

    def iteration(self) -> int:
        m = STATUS_RE.search(self.status())
        return int(m.group(1).replace(",", "")) if m else -1

    def wait_status(self, cond, timeout: float = 30) -> str:
        t0 = time.perf_counter()
        text = ""
        while time.perf_counter() - t0 < timeout:
            try:
                text = self.status()
                if cond(text):
                    return text
            except Exception:  # noqa: BLE001 - page still rendering
                pass
            self.page.wait_for_timeout(50)
        raise AssertionError(f"status never matched within {timeout} s; last: {text!r}")

    def button(self, name: str):
        return self.page.get_by_role("button", name=name).first

    def tab(self, title: str) -> None:
        self.page.locator(".bk-tab").filter(has_text=title).first.click()

    def control(self, name: str):
        """The sidebar control bound to session setting ``name``."""
        return self.page.locator(f".aggmrf-control-{name}").first

    def select_dataset(self, label: str) -> None:
        self.control("dataset").locator("select").select_option(label=label)

    def play(self) -> float:
        """Press Play; seconds until the status says training with iteration > 0."""
        t0 = time.perf_counter()
        self.button("▶ Play").click()
        self.wait_status(lambda t: t.startswith("training") and self.iteration() > 0, timeout=60)
        return time.perf_counter() - t0

    def rate(self, seconds: float) -> float:
        """Iterations per second read from the status line over ``seconds``."""
        i0, t0 = self.iteration(), time.perf_counter()
        self.page.wait_for_timeout(seconds * 1000)
        return (self.iteration() - i0) / (time.perf_counter() - t0)

    def slider_latency(self, name: str = "lambda_theta") -> tuple[float, str, str]:
        """Press → on a log slider; seconds until its value display changes (before, after)."""
        box = self.control(name)
        label = box.get_by_text(re.compile(r":\s*\S")).first  # "λ_θ (…): 3"
        before = label.inner_text()
        box.locator(".noUi-handle").first.focus()
        t0 = time.perf_counter()
        self.page.keyboard.press("ArrowRight")
        after = before
        while after == before and time.perf_counter() - t0 < 10:
            self.page.wait_for_timeout(10)
            after = label.inner_text()
        return time.perf_counter() - t0, before, after

    def close(self) -> None:
        self.ctx.close()


def _no_errors(p: Page) -> None:
    assert not p.errors, p.errors
    for bad in ("Traceback", "NaN", "Infinity"):  # (locators pierce the shadow DOM)
        hits = p.page.get_by_text(re.compile(rf"\b{bad}\b")).all_inner_texts()
        assert not hits, f"{bad!r} reached the page: {hits[:3]}"


def test_server_starts_fast_and_page_is_usable(fresh_server, browser, shots):
    server = fresh_server
    p = Page(browser, server.url)
    try:
        total = server.http_seconds + p.load_seconds
        limit = max_seconds("AGGMRF_MAX_START_S", 60)
        print(f"panel serve → answering {server.http_seconds:.1f} s, → usable {total:.1f} s")
        assert total < limit, (
            f"panel serve → usable page took {total:.1f} s (HTTP 200 after "
            f"{server.http_seconds:.1f} s), limit {limit:.1f} s (slack {slack():.2f})\n"
            + "\n".join(line for line in server.log().splitlines() if "aggmrf" in line)
        )
        assert not p.page.locator(".aggmrf-spinner").first.is_visible()
        p.page.screenshot(path=str(shots / "explorer_start.png"))
        _no_errors(p)
    finally:
        p.close()


def test_xor_play_pause_step(server, browser, shots):
    p = Page(browser, server.url)
    try:
        p.select_dataset("XOR counterexample")
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=60)
        first_play = p.play()
        a = p.iteration()
        p.page.wait_for_timeout(2000)
        b = p.iteration()
        assert b > a, f"iterations did not advance: {a} → {b}"
        p.page.screenshot(path=str(shots / "explorer_xor_training.png"))
        p.tab("XOR")
        p.page.wait_for_timeout(3000)
        bars = p.page.locator(".bk-Canvas, canvas").filter(visible=True)
        assert bars.count() >= 1, "the XOR tab shows no plot"
        assert p.page.get_by_text("Why max-ent fails").first.is_visible()
        p.page.screenshot(path=str(shots / "explorer_xor_tab.png"))
        p.button("❚❚ Pause").click()
        p.wait_status(lambda t: t.startswith("paused"), timeout=10)
        c = p.iteration()
        p.page.wait_for_timeout(800)
        assert p.iteration() == c
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() == c + 1, timeout=10)
        limit = max_seconds("AGGMRF_MAX_PLAY_S", 5)
        assert first_play < limit, (
            f"first Play took {first_play:.2f} s to start training, limit {limit:.1f} s "
            f"(slack {slack():.2f})"
        )
        _no_errors(p)
    finally:
        p.close()


def test_adult_speed_and_slider_during_training(server, browser, shots):
    p = Page(browser, server.url + "?dataset=adult&n_gibbs=10000", ready="Adult", timeout=120)
    try:
        p.play()
        p.page.wait_for_timeout(1000)
        rate = p.rate(6)
        dt, before, after = p.slider_latency("lambda_theta")
        it = p.iteration()
        # (polled: a worker niced to 19 behind other work may take seconds per iteration)
        p.wait_status(lambda t: p.iteration() > it, timeout=10 * slack())
        assert p.iteration() > it, "training stopped after the slider moved"
        p.page.screenshot(path=str(shots / "explorer_adult_training.png"))
        print(f"adult n'=10000: {rate:.1f} it/s; slider display after {dt:.2f} s; {p.status()}")
        limit = max_seconds("AGGMRF_MAX_SLIDER_S", 3)
        assert after != before and dt < limit, (
            f"slider display took {dt:.2f} s, limit {limit:.1f} s (slack {slack():.2f})"
        )
        env = os.environ.get("AGGMRF_MIN_ADULT_ITS")
        need = float(env) if env else 5 / slack()
        assert rate >= need, (
            f"Adult n'=10000 trains at {rate:.1f} it/s in the browser, need {need:.1f} "
            f"(the issue asks 20 on an idle 2-core machine; slack {slack():.2f})"
        )
        _no_errors(p)
    finally:
        p.close()


def test_url_settings_and_csv_upload(server, browser, tmp_path):
    p = Page(
        browser,
        server.url + "?dataset=xor&mechanism=gaussian&epsilon=2"
        "&n_gibbs=3000&auto_defaults=false&lambda_theta=10",
        ready="XOR",
    )
    try:
        assert p.control("n_gibbs").locator("input").first.input_value() in ("3000", "3,000")
        assert p.control("lambda_theta").get_by_text(re.compile(r": 10$")).count() == 1
        # several settings restored at once: each control shows its own
        assert p.control("mechanism").locator(".bk-active").all_inner_texts() == ["Gaussian"]
        assert p.control("epsilon").get_by_text(re.compile(r": 2$")).count() == 1
        assert p.page.get_by_text("Gaussian σ").first.is_visible()
        rows = ["colour,size,buys"] + [
            f"{c},{s},{int((i * 7) % 5 < 2 + (c == 'red'))}"
            for i, (c, s) in enumerate(
                (c, s) for _ in range(40) for c in ("red", "blue", "green") for s in ("S", "M")
            )
        ]
        csv = tmp_path / "shop.csv"
        csv.write_text("\n".join(rows) + "\n")
        p.page.locator("input[type=file]").first.set_input_files(str(csv))
        label = p.control("label_column").locator("select")
        label.wait_for(state="visible", timeout=20000)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 20:
            opts = label.evaluate("e => Array.from(e.options).map(o => o.value)")
            if "buys" in opts:
                break
            p.page.wait_for_timeout(100)
        label.select_option("buys")
        p.wait_status(lambda t: t.endswith("uploaded CSV") and "iteration 0" in t, timeout=60)
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() == 1, timeout=20)
        _no_errors(p)
    finally:
        p.close()


def test_three_sessions_do_not_interfere(server, browser):
    queries = (
        ("?dataset=xor&n_gibbs=2000", "XOR"),
        ("?dataset=toy&n_gibbs=1000", "toy (Table 1)"),
        ("?dataset=synthetic&n_gibbs=2000", "synthetic"),
    )
    pages = [Page(browser, server.url + q, ready=name) for q, name in queries]
    try:
        for p in pages:
            p.button("▶ Play").click()
        for p in pages:
            p.wait_status(lambda t, p=p: p.iteration() > 0, timeout=60)
        first = [p.iteration() for p in pages]
        pages[0].page.wait_for_timeout(4000)
        second = [p.iteration() for p in pages]
        assert all(b > a for a, b in zip(first, second, strict=True)), (first, second)
        # pausing one leaves the others running
        pages[1].button("❚❚ Pause").click()
        pages[1].wait_status(lambda t: t.startswith("paused"), timeout=10)
        frozen = pages[1].iteration()
        others = [pages[0].iteration(), pages[2].iteration()]
        pages[0].page.wait_for_timeout(3000)
        assert pages[1].iteration() == frozen
        assert pages[0].iteration() > others[0] and pages[2].iteration() > others[1]
        for p, (_, name) in zip(pages, queries, strict=True):
            assert p.status().endswith(name), (p.status(), name)
            _no_errors(p)
    finally:
        for p in pages:
            p.close()
