"""A class on one server: N explorer sessions training at once (Debian chromium + Bokeh clients).

    python benchmarks/explorer_load.py --sessions 10
    python benchmarks/explorer_load.py --sessions 30 --browsers 3 --seconds 40
    python benchmarks/explorer_load.py --sessions 20 --memory-rounds 3   # memory, class after class

One ``aggmrf-explore serve`` (the page of ``panel serve apps/explorer.py``; one process,
which trains in its worker processes).  ``--browsers`` of the
sessions are real chromium pages (what a student sees); the others are lighter Python
clients (``bokeh.client.pull_session``: they receive every change the server pushes, and
press Play with the same click event a browser sends).  Every session opens Adult with
n' = 10 000 (``--dataset``, ``--n-gibbs``) and presses Play.  Then:

- per-session iterations per second over ``--seconds`` (read from each page's status
  line): min, median, max, and the longest time a status line went unchanged;
- control latency on the chromium pages (``--cycles`` rounds of Pause, Step, Step, Play
  each; click → the status line shows the result): p50, p95, max;
- a late joiner: a new chromium page opened while the class trains: seconds until its
  first plot is drawn;
- the server's resident memory (its processes summed): with one idle session, peak, and
  after every session closed (Bokeh destroys a closed session after
  ``--unused-session-lifetime``, 15 s, checked every 17 s; the explorer then frees it);
- errors: console errors and failed requests of the pages, requests leaving the machine,
  server log lines with a traceback or an error while the class trains, clients that
  lost their connection; at close, errors other than Tornado's tracebacks of a message
  under way to a socket that just closed (counted apart);
- the load average before and after (the machine is shared: read the figures beside it),
  and the CPU the whole machine was busy with during the window.

The pages and clients stand in for the students' own machines: by default they take only
the CPU the server leaves (:func:`server_first`; ``--share-cores`` lets them compete).

:func:`run` returns the figures as a dict (``tests/test_browser_load.py`` runs N = 5).
"""

from __future__ import annotations

import argparse
import html
import importlib
import json
import math
import os
import pkgutil
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, server_log, stop_server  # noqa: E402

# The light clients stand in for the students' own machines, which a real class does not
# share with the server: their threads are niced so that they take only the CPU the server
# leaves (the chromium pages, what a student sees, are not).
CLIENT_NICE = 10
ITERATION_RE = re.compile(r"iteration ([\d,]+)")
ERROR_LINES = ("Traceback", "AssertionError", "ERROR")


# ---------------------------------------------------------------------------- server
def start_server(
    port: int,
    env: dict | None = None,
    timeout: float = 120,
    own_session: bool = False,
):
    """``aggmrf-explore serve`` (the page of ``panel serve apps/explorer.py``, Python's small
    objects on the C allocator) on ``port``; returns the process once it answers."""
    log = tempfile.NamedTemporaryFile("w+", prefix="aggmrf-load-", suffix=".log", delete=False)
    cmd = [sys.executable, "-m", "aggmrf_explore.cli", "serve"]  # what a class is served with
    cmd += ["--port", str(port), "--address", "127.0.0.1"]
    cmd += ["--allow-websocket-origin", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "AGGMRF_EXPLORER_LOG": "1", **(env or {})},
        start_new_session=own_session,
    )
    proc.log_path = log.name
    url = f"http://127.0.0.1:{port}/static/js/bokeh.min.js"
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited early:\n{server_log(proc)}")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"panel serve did not answer within {timeout:.0f} s")


def server_first(server_pid: int, nice: int = 10) -> int:
    """Give the server the machine's cores first: lower the scheduling group of every
    other session among this process and its descendants (this benchmark's light clients,
    the chromium pages) to ``nice``; returns how many groups were lowered.

    Linux schedules each session (its "autogroup") as one unit, so a thread's own nice
    value counts only against threads of its own session; the server must run in a session
    of its own (``start_server(own_session=True)``).  The stand-ins for the students'
    machines then take only the CPU the server leaves, as they would on a real class's
    own laptops.  Raising a group's nice value needs no privilege; where autogroups do not
    exist nothing changes (0 is returned).
    """
    import psutil

    server_sid = os.getsid(server_pid)
    me = psutil.Process()
    sessions: dict[int, int] = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            sid = os.getsid(p.pid)
        except OSError:
            continue
        if sid != server_sid:
            sessions.setdefault(sid, p.pid)
    lowered = 0
    for pid in sessions.values():
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))
            lowered += 1
        except OSError:
            pass
    return lowered


def server_pids(pid: int) -> list[int]:
    """The server process and all its descendants (its training worker processes, a
    compiler), whichever of its threads started them."""
    import psutil

    out = [pid]
    try:
        out += [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        pass
    return out


def stop_server_tree(proc) -> None:
    """Stop the server and its descendants (a child that would outlive its parent)."""
    import signal

    kids = server_pids(proc.pid)[1:]
    stop_server(proc)
    for pid in kids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass


def rss_mb(pid: int) -> float:
    total = 0
    for p in server_pids(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy so far (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait (and steal, field 8, is another guest's)
    return (sum(fields[:7]) - idle) / os.sysconf("SC_CLK_TCK")


RELEASED = "memory released after closed sessions"  # the explorer's log, 5 s after a close


def wait_for_release(proc, before: int, timeout: float = 60.0) -> None:
    """Wait until the server has logged one more memory release than ``before`` (it
    collects and trims the heap 5 s after the last session of a burst is destroyed),
    then 1 s for the system's figures."""
    t0 = time.perf_counter()
    while server_log(proc).count(RELEASED) <= before and time.perf_counter() - t0 < timeout:
        time.sleep(0.5)
    time.sleep(1.0)


WORKER = "aggmrf_explore.trainer_worker"  # the command line of a training worker process


def cpu_seconds(pid: int, only: str = "") -> float:
    """CPU time (user + system) the server's processes have used so far (``only``: those
    whose command line holds it, e.g. the training worker processes)."""
    total = 0
    for p in server_pids(pid):
        try:
            if only and only not in Path(f"/proc/{p}/cmdline").read_text():
                continue
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


class RssSampler(threading.Thread):
    """The server's RSS every ``period`` s; ``peak`` is the largest so far."""

    def __init__(self, pid: int, period: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.period, self.peak, self._stop = pid, period, 0.0, threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()


# ---------------------------------------------------------------------------- sessions
def iteration_of(text: str) -> int:
    m = ITERATION_RE.search(text or "")
    return int(m.group(1).replace(",", "")) if m else -1


class Watched:
    """What every kind of session offers: its status text, and when it last changed."""

    name = "session"

    def __init__(self) -> None:
        self.changes: list[tuple[float, str]] = []  # (time, status) at each change seen

    def status(self) -> str:
        raise NotImplementedError

    def observe(self) -> str:
        text = self.status()
        if not self.changes or self.changes[-1][1] != text:
            self.changes.append((time.perf_counter(), text))
        return text

    def longest_gap(self, t0: float, t1: float) -> float:
        """Longest time the status line went unchanged within [t0, t1]."""
        times = [t for t, _ in self.changes if t0 <= t <= t1]
        marks = [t0, *times, t1]
        return max(b - a for a, b in zip(marks[:-1], marks[1:], strict=True))

    def rate_between_changes(self, t0: float, t1: float) -> float:
        """Iterations per second between the first and the last status change seen in [t0, t1].

        A status shown late shifts both ends of a fixed window's difference by up to one
        status gap (seconds, at 30 sessions), which dominates a short window; measured from
        change to change, the lag cancels.  NaN if fewer than two changes were seen."""
        seen = [(t, iteration_of(text)) for t, text in self.changes if t0 <= t <= t1]
        seen = [(t, i) for t, i in seen if i >= 0]
        if len(seen) < 2 or seen[-1][0] <= seen[0][0]:
            return float("nan")
        return (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0])


_MODELS_LOADED = False


def _load_panel_models() -> None:
    """Register Panel's (lazily imported) Bokeh models, so a client can decode the page."""
    global _MODELS_LOADED
    if _MODELS_LOADED:
        return
    import panel.models

    import aggmrf_explore.explorer.views.checkbox  # noqa: F401 - the page's own components
    import aggmrf_explore.explorer.views.shortcuts  # noqa: F401
    import aggmrf_explore.explorer.views.upload_widget  # noqa: F401

    for m in pkgutil.iter_modules(panel.models.__path__):
        try:
            importlib.import_module(f"panel.models.{m.name}")
        except Exception:  # noqa: BLE001 - a model the page does not use
            pass
    _MODELS_LOADED = True


class LightClient(Watched):
    """A Bokeh client session (its own thread and IO loop): receives everything the server
    pushes, tells the server the page is shown, and clicks buttons like a browser.

    (Bokeh's client handles each message one coroutine deeper than the last: its thread
    gets a large stack and Python a high recursion limit, for the thousands of messages
    of a long run.)"""

    name = "client"

    def __init__(self, url: str, arguments: dict) -> None:
        super().__init__()
        _load_panel_models()
        self.url, self.arguments = url, arguments
        self.session = None
        self.error = ""
        self.closed_by_us = False
        self._ready = threading.Event()
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 200_000))
        old = threading.stack_size(512 * 1024 * 1024)
        try:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(old)

    def _run(self) -> None:
        from bokeh.client import pull_session
        from bokeh.events import DocumentReady

        # a stand-in for a student's own machine: it takes only the CPU the server leaves
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CLIENT_NICE)
        except (AttributeError, OSError):
            pass
        try:
            self.session = pull_session(url=self.url, arguments=self.arguments)
            doc = self.session.document
            self._status = next(
                m for m in doc.models if "aggmrf-status" in (getattr(m, "css_classes", None) or [])
            )
            self._send(DocumentReady())
        except Exception as exc:  # noqa: BLE001 - reported as an error of the run
            self.error = f"connect: {type(exc).__name__}: {exc}"
            return
        finally:
            self._ready.set()
        self.session._connection.loop_until_closed()
        if not self.closed_by_us:
            self.error = "the connection closed"

    def wait_connected(self, timeout: float) -> bool:
        return self._ready.wait(timeout) and self.session is not None and not self.error

    def _send(self, event) -> None:
        doc = self.session.document
        self.session._connection.io_loop.add_callback(lambda: doc.callbacks.send_event(event))

    def status(self) -> str:
        """The status line as a browser shows it (the model holds escaped HTML)."""
        text = getattr(getattr(self, "_status", None), "text", "") or ""
        return html.unescape(re.sub(r"<[^>]*>", "", html.unescape(text))).strip()

    def click(self, label: str) -> None:
        from bokeh.events import ButtonClick

        doc = self.session.document
        button = next(
            m
            for m in doc.models
            if type(m).__name__ == "Button" and label in str(getattr(m, "label", ""))
        )
        self._send(ButtonClick(button))

    def close(self) -> None:
        if self.session is not None:
            self.closed_by_us = True
            loop = self.session._connection.io_loop
            loop.add_callback(self.session.close)


class BrowserPage(Watched):
    """A chromium page (its console errors, failed and outside requests collected)."""

    name = "browser"

    def __init__(self, browser, url: str, port: int) -> None:
        super().__init__()
        self.ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        self.page = self.ctx.new_page()
        self.page.set_default_navigation_timeout(300_000)
        self.errors: list[str] = []
        self.outside: list[str] = []
        here = (f"127.0.0.1:{port}", f"localhost:{port}")
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("data:", "blob:")) or any(h in r.url for h in here)
                else self.outside.append(r.url)
            ),
        )
        self.t_open = time.perf_counter()
        self.page.goto(url)

    def status(self) -> str:
        try:
            return self.page.locator(".aggmrf-status p").first.inner_text(timeout=2000)
        except Exception:  # noqa: BLE001 - still rendering
            return ""

    def wait(self, cond, timeout: float) -> float:
        """Seconds until ``cond(status)`` holds (polling every 25 ms); raises on timeout."""
        t0 = time.perf_counter()
        text = ""
        while time.perf_counter() - t0 < timeout:
            text = self.observe()
            if cond(text):
                return time.perf_counter() - t0
            self.page.wait_for_timeout(25)
        raise TimeoutError(f"status never matched in {timeout:.0f} s; last {text!r}")

    def first_plot_seconds(self, timeout: float) -> float:
        """Seconds from opening the page until a plot of the Training tab is drawn."""
        plot = self.page.locator(".aggmrf-plots canvas").filter(visible=True).first
        plot.wait_for(state="visible", timeout=timeout * 1000)
        return time.perf_counter() - self.t_open

    def click(self, label: str) -> None:
        self.page.get_by_role("button", name=label).first.click()

    def close(self) -> None:
        self.ctx.close()


# ---------------------------------------------------------------------------- a busy loop
def busy_loop(core: int = 0) -> subprocess.Popen:
    """A process spinning on ``core`` at the default niceness (another job on the server
    while the class trains); end it with ``.kill()``."""
    code = f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


# ---------------------------------------------------------------------------- upload vs Adult
def shop_csv(path: Path, rows: int = 2000, seed: int = 0) -> Path:
    """A CSV as a student brings one: 4 categorical columns and a 0/1 label."""
    import random

    rng = random.Random(seed)
    lines = ["colour,size,shop,day,bought"]
    for _ in range(rows):
        c, s = rng.choice(["red", "blue", "green"]), rng.choice(["S", "M", "L"])
        shop, day = rng.choice(["north", "south"]), rng.choice(["mon", "tue", "wed", "thu"])
        p = 0.2 + 0.4 * (c == "red") + 0.2 * (s == "L")
        lines.append(f"{c},{s},{shop},{day},{int(rng.random() < p)}")
    path.write_text("\n".join(lines) + "\n")
    return path


OPTIONS_JS = "e => Array.from(e.options).map(o => o.value)"  # a select's option values


def upload_vs_adult(seconds: float = 10.0, say=print) -> dict[str, float]:
    """One server, one chromium page at a time: an uploaded CSV (2 000 rows, 4 categorical
    columns, a 0/1 label) and Adult (n' = 10 000), each trained for ``seconds``; their
    iterations per second read from the status line, {"upload": …, "adult": …}."""
    from playwright.sync_api import sync_playwright

    from aggmrf_explore.kernels import warm_up

    warm_up()
    csv = shop_csv(Path(tempfile.mkdtemp(prefix="aggmrf-upload-")) / "shop.csv")
    port = free_port()
    proc = start_server(port)
    url = f"http://127.0.0.1:{port}/explorer"
    rates: dict[str, float] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for which in ("upload", "adult"):
                page = BrowserPage(
                    browser, url + ("?dataset=adult" if which == "adult" else ""), port
                )
                page.wait(lambda t: "iteration 0" in t, 300)
                if which == "upload":
                    page.page.locator(".aggmrf-control-dataset select").first.select_option(
                        label="Upload a CSV…"
                    )
                    page.page.locator("input[type=file]").first.set_input_files(str(csv))
                    label = page.page.locator(".aggmrf-control-label_column select").first
                    label.wait_for(state="visible", timeout=30_000)
                    page.wait(lambda t, box=label: "bought" in box.evaluate(OPTIONS_JS), 30)
                    label.select_option("bought")
                    page.wait(lambda t: t.endswith("uploaded CSV") and "iteration 0" in t, 120)
                page.click("▶ Play")
                page.wait(lambda t: t.startswith("training") and iteration_of(t) > 0, 120)
                page.page.wait_for_timeout(2000)
                i0, t0 = iteration_of(page.status()), time.perf_counter()
                page.page.wait_for_timeout(seconds * 1000)
                rates[which] = (iteration_of(page.status()) - i0) / (time.perf_counter() - t0)
                page.close()
            browser.close()
    finally:
        stop_server_tree(proc)
    say(
        f"uploaded CSV (2 000 rows, 4 categorical columns): {rates['upload']:.1f} it/s; "
        f"Adult (n' = 10 000): {rates['adult']:.1f} it/s; ratio "
        f"{rates['upload'] / max(rates['adult'], 1e-9):.2f} (load {os.getloadavg()[0]:.1f})"
    )
    return rates


# ---------------------------------------------------------------------------- the run
def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q * (len(v) - 1))))]


def control_latencies(page: BrowserPage, cycles: int, timeout: float) -> dict[str, list[float]]:
    """``cycles`` × (Pause, Step, Step, Play) on a training page: click → status shows it."""
    out: dict[str, list[float]] = {"pause": [], "step": [], "play": []}
    for _ in range(cycles):
        t0 = time.perf_counter()
        page.click("❚❚ Pause")
        page.wait(lambda t: t.startswith("paused"), timeout)
        out["pause"].append(time.perf_counter() - t0)
        for _ in range(2):
            before = iteration_of(page.observe())
            t0 = time.perf_counter()
            page.click("Step")
            page.wait(lambda t, b=before: iteration_of(t) == b + 1, timeout)
            out["step"].append(time.perf_counter() - t0)
        before = iteration_of(page.observe())
        t0 = time.perf_counter()
        page.click("▶ Play")
        page.wait(lambda t, b=before: t.startswith("training") and iteration_of(t) > b, timeout)
        out["play"].append(time.perf_counter() - t0)
        page.page.wait_for_timeout(1000)
    return out


def run(
    sessions: int = 5,
    browsers: int = 2,
    seconds: float = 30.0,
    dataset: str = "adult",
    n_gibbs: int = 10_000,
    cycles: int = 2,
    timeout: float = 300.0,
    say=print,
    server_cores_first: bool = False,
    rates_only: bool = False,
) -> dict:
    """Serve the explorer, open ``sessions`` sessions (``browsers`` of them in chromium),
    train them all, measure (see the module doc); returns the figures.
    ``server_cores_first``: the server in a session of its own, the pages and clients
    in lowered scheduling groups (:func:`server_first`)."""
    from playwright.sync_api import sync_playwright

    from aggmrf_explore.explorer.store.problems import get_baselines, get_problem
    from aggmrf_explore.explorer.store.store import ExplorerSession
    from aggmrf_explore.kernels import warm_up

    browsers = max(1, min(browsers, sessions))
    warm_up()  # numba's cache: the server loads the kernels, never compiles them
    probe = ExplorerSession(lazy=True, dataset=dataset)
    get_baselines(get_problem(**probe.data_key()), ("logistic_pairs",))  # (cached on disk)
    load0 = os.getloadavg()
    port = free_port()
    proc = start_server(
        port,
        env={"AGGMRF_MAX_SESSIONS": str(sessions + 10)},
        own_session=server_cores_first,
    )
    query = {"dataset": dataset, "n_gibbs": str(n_gibbs)}
    url = f"http://127.0.0.1:{port}/explorer"
    page_url = f"{url}?{urlencode(query)}"
    sampler = RssSampler(proc.pid)
    sampler.start()
    res: dict = {"sessions": sessions, "browsers": browsers}
    pages: list[BrowserPage] = []
    clients: list[LightClient] = []

    def ready(text: str) -> bool:  # loaded: "iteration 0", on the asked dataset
        return "iteration 0" in text and (dataset != "adult" or "Adult" in text)

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            if server_cores_first:
                res["groups_lowered"] = server_first(proc.pid)
            # the level to come back to: one idle session (kernels, HoloViews, the data)
            first = BrowserPage(browser, page_url, port)
            first.wait(ready, timeout)
            time.sleep(3)
            res["rss_one_idle_mb"] = rss_mb(proc.pid)
            pages.append(first)
            say(f"one idle session: server RSS {res['rss_one_idle_mb']:.0f} MB")
            t_open = time.perf_counter()
            clients = [LightClient(url, query) for _ in range(sessions - browsers)]
            pages += [BrowserPage(browser, page_url, port) for _ in range(browsers - 1)]
            for c in clients:
                if not c.wait_connected(timeout):
                    raise RuntimeError(f"a client could not connect: {c.error}")
            everyone: list[Watched] = [*pages, *clients]
            deadline = time.perf_counter() + timeout
            for s in everyone:
                while not ready(s.observe()):
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"a {s.name} never loaded: {s.status()!r}")
                    time.sleep(0.1)
            res["open_seconds"] = time.perf_counter() - t_open
            say(f"{sessions} sessions open and loaded in {res['open_seconds']:.1f} s")
            for s in everyone:
                s.click("▶ Play")
            deadline = time.perf_counter() + timeout  # (a slow opening leaves Play its time)
            for s in everyone:
                while not (s.observe().startswith("training") and iteration_of(s.status()) > 0):
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"a {s.name} never trained: {s.status()!r}")
                    time.sleep(0.1)
            time.sleep(3)  # (every session past its first slices)
            # ---- the rates: every session, read in turns every 0.25 s
            t0 = time.perf_counter()
            cpu0, busy0 = cpu_seconds(proc.pid), machine_busy_seconds()
            train0 = cpu_seconds(proc.pid, WORKER)
            start = [iteration_of(s.observe()) for s in everyone]
            while time.perf_counter() - t0 < seconds:
                for s in everyone:
                    s.observe()
                time.sleep(0.25)
            t1 = time.perf_counter()
            end = [iteration_of(s.observe()) for s in everyone]
            res["server_cores"] = (cpu_seconds(proc.pid) - cpu0) / (t1 - t0)
            res["machine_cores"] = (machine_busy_seconds() - busy0) / (t1 - t0)
            res["training_cores"] = (cpu_seconds(proc.pid, WORKER) - train0) / (t1 - t0)
            rates = [(b - a) / (t1 - t0) for a, b in zip(start, end, strict=True)]
            gaps = [s.longest_gap(t0, t1) for s in everyone]
            res["rates_window"] = win = rates
            # the fairness figure: change to change, so a late status does not count as slow
            rates = [s.rate_between_changes(t0, t1) for s in everyone]
            rates = [r if math.isfinite(r) else w for r, w in zip(rates, win, strict=True)]
            res["rates"] = rates
            res["rate_min"], res["rate_median"], res["rate_max"] = (
                min(rates),
                statistics.median(rates),
                max(rates),
            )
            res["rate_total"] = sum(rates)
            res["status_gap_max"] = max(gaps)
            res["status_gap_pages"] = max(gaps[: len(pages)])
            res["stalled"] = sum(r < 0.5 * res["rate_median"] for r in rates)
            say(
                f"it/s over the fixed window (lagged by the status gaps): min {min(win):.1f}, "
                f"median {statistics.median(win):.1f}, max {max(win):.1f}"
            )
            say(
                f"it/s per session: min {min(rates):.1f}, median {res['rate_median']:.1f}, "
                f"max {max(rates):.1f}, total {sum(rates):.0f}; the server used "
                f"{res['server_cores']:.2f} cores, {res['training_cores']:.2f} of them in its "
                f"training processes (the machine {res['machine_cores']:.2f}: "
                "the rest is the pages and clients); longest unchanged status "
                f"{max(gaps):.1f} s (chromium pages {res['status_gap_pages']:.1f} s); below half "
                f"the median: {res['stalled']}"
            )
            # ---- controls on the chromium pages (the others keep training)
            lat: dict[str, list[float]] = {"pause": [], "step": [], "play": []}
            for p in pages if not rates_only else []:
                for k, v in control_latencies(p, cycles, timeout).items():
                    lat[k] += v
            controls = lat["pause"] + lat["step"] + lat["play"] or [math.nan]
            res["latency"] = lat
            res["control_p50"], res["control_p95"] = (
                percentile(controls, 0.5),
                percentile(controls, 0.95),
            )
            res["control_max"] = max(controls)
            res["pause_step_p95"] = percentile(lat["pause"] + lat["step"] or [math.nan], 0.95)
            say(
                f"controls ({len(controls)} clicks): p50 {res['control_p50']:.2f} s, p95 "
                f"{res['control_p95']:.2f} s, max {res['control_max']:.2f} s (Pause/Step p95 "
                f"{res['pause_step_p95']:.2f} s)"
            )
            # ---- a late joiner while the class trains
            res["late_first_plot"] = math.nan
            if not rates_only:
                late = BrowserPage(browser, page_url, port)
                res["late_first_plot"] = late.first_plot_seconds(timeout)
                say(f"late joiner: first plot after {res['late_first_plot']:.1f} s")
                pages.append(late)
            res["rss_peak_mb"] = sampler.peak
            # ---- errors, then close everything
            res["page_errors"] = [e for p in pages for e in p.errors]
            res["outside_requests"] = sorted({u for p in pages for u in p.outside})
            res["client_errors"] = [c.error for c in clients if c.error]
            log_before_close = len(server_log(proc))
            for p in pages:
                p.close()
            for c in clients:
                c.close()
            browser.close()
        closed_before = 0
        t_close = time.perf_counter()
        n_open = len(pages) + len(clients)
        while time.perf_counter() - t_close < 120:
            closed = server_log(proc).count("session closed (") - closed_before
            if closed >= n_open:
                break
            time.sleep(0.5)
        res["sessions_destroyed"] = server_log(proc).count("session closed (")
        res["close_seconds"] = time.perf_counter() - t_close
        # Bokeh destroys closed sessions in batches (every 17 s): a release may already
        # have followed an earlier batch, so wait for the one after the last destroy
        # (RELEASE_DELAY = 5 s after it; this loop saw the destroy within 0.5 s)
        wait_for_release(proc, server_log(proc).count(RELEASED))
        res["rss_after_close_mb"] = rss_mb(proc.pid)
        res["rss_peak_mb"] = max(res["rss_peak_mb"], sampler.peak)
        log = server_log(proc)
        # the training worker processes the server started (one per core once a class trains)
        res["training_processes"] = len(re.findall(r"training worker process \d+ started", log))
        res["server_errors"] = [
            line
            for line in log[:log_before_close].splitlines()
            if any(k in line for k in ERROR_LINES)
        ]
        # closing pages that are still training: Tornado logs "Task exception was never
        # retrieved … WebSocketClosedError" for a message under way to a closed socket
        # (Bokeh's server does not await that write): counted apart, by kind
        after = log[log_before_close:]
        res["close_tracebacks"] = after.count("Traceback")
        res["close_other_errors"] = [
            line
            for line in after.splitlines()
            if "Error" in line
            and not any(k in line for k in ("WebSocketClosedError", "StreamClosedError"))
            and "Traceback" not in line
        ]
    finally:
        sampler.stop()
        for c in clients:
            c.close()
        stop_server_tree(proc)
    res["load_before"], res["load_after"] = load0, os.getloadavg()
    res["errors"] = (
        len(res.get("page_errors", []))
        + len(res.get("outside_requests", []))
        + len(res.get("client_errors", []))
        + len(res.get("server_errors", []))
        + len(res.get("close_other_errors", []))
    )
    say(
        f"server RSS: one idle session {res['rss_one_idle_mb']:.0f} MB, peak "
        f"{res['rss_peak_mb']:.0f} MB, after close {res['rss_after_close_mb']:.0f} MB "
        f"({res['sessions_destroyed']} sessions destroyed {res['close_seconds']:.0f} s after "
        f"closing); errors {res['errors']} (page {len(res['page_errors'])}, outside requests "
        f"{len(res['outside_requests'])}, clients {len(res['client_errors'])}, server "
        f"{len(res['server_errors'])}; at close: {len(res['close_other_errors'])}, and "
        f"{res['close_tracebacks']} tracebacks of messages to closed websockets); load average {load0[0]:.2f} → {res['load_after'][0]:.2f} "
        f"on {os.cpu_count()} cores"
    )
    for key in (
        "page_errors",
        "outside_requests",
        "client_errors",
        "server_errors",
        "close_other_errors",
    ):
        for line in res[key][:5]:
            say(f"    {key}: {line}")
    return res


def memory_rounds(rounds: int, sessions: int, seconds: float = 20.0, say=print) -> list[float]:
    """``rounds`` classes of ``sessions`` Bokeh clients, one after the other on one server
    (one more client stays open, idle): each trains Adult for ``seconds``, then closes.
    Says the server's RSS with the one idle session, and each round's peak and RSS once
    every session of the round was destroyed; returns the RSS after each round (MB)."""
    from aggmrf_explore.kernels import warm_up

    warm_up()
    port = free_port()
    proc = start_server(port, env={"AGGMRF_MAX_SESSIONS": str(sessions + 10)})
    url, query = f"http://127.0.0.1:{port}/explorer", {"dataset": "adult", "n_gibbs": "10000"}
    out: list[float] = []
    clients: list[LightClient] = []
    try:
        idle = LightClient(url, query)
        clients.append(idle)
        idle.wait_connected(300)
        while "iteration 0" not in idle.status():
            time.sleep(0.2)
        time.sleep(3)
        say(f"one idle session: {rss_mb(proc.pid):.0f} MB; load {os.getloadavg()[0]:.2f}")
        closed, released = 0, 0
        for k in range(rounds):
            batch = [LightClient(url, query) for _ in range(sessions)]
            clients += batch
            for c in batch:
                c.wait_connected(300)
                while "iteration 0" not in c.status():
                    time.sleep(0.2)
                c.click("▶ Play")
            time.sleep(seconds)
            peak = rss_mb(proc.pid)
            for c in batch:
                c.close()
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 120:
                if server_log(proc).count("session closed (") >= closed + sessions:
                    break
                time.sleep(0.5)
            closed = server_log(proc).count("session closed (")
            wait_for_release(proc, released)
            released = server_log(proc).count(RELEASED)
            out.append(rss_mb(proc.pid))
            say(
                f"round {k + 1}: {sessions} sessions, peak {peak:.0f} MB, after close "
                f"{out[-1]:.0f} MB; load {os.getloadavg()[0]:.2f}"
            )
    finally:
        for c in clients:
            c.close()
        stop_server_tree(proc)
    return out


def table_row(r: dict) -> str:
    """One markdown row of docs/explorer.md's table."""
    return (
        f"| {r['sessions']} ({r['browsers']} chromium) | {r['rate_min']:.0f} / "
        f"{r['rate_median']:.0f} / {r['rate_max']:.0f} | {r['rate_total']:.0f} | "
        f"{r['server_cores']:.2f} | "
        f"{r['status_gap_max']:.1f} s | {r['control_p50']:.2f} / {r['control_p95']:.2f} s | "
        f"{r['late_first_plot']:.1f} s | {r['rss_one_idle_mb']:.0f} / {r['rss_peak_mb']:.0f} / "
        f"{r['rss_after_close_mb']:.0f} MB | {r['errors']} | {r['load_before'][0]:.1f} → "
        f"{r['load_after'][0]:.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--sessions", type=int, nargs="+", default=[5], help="N (several: one run each)"
    )
    ap.add_argument("--browsers", type=int, default=3, help="how many of them are chromium pages")
    ap.add_argument(
        "--seconds", type=float, default=30.0, help="the window the rates are read over"
    )
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--n-gibbs", type=int, default=10_000)
    ap.add_argument("--cycles", type=int, default=2, help="Pause/Step/Step/Play rounds per page")
    ap.add_argument("--json", help="append each run's figures to this JSON-lines file")
    ap.add_argument(
        "--share-cores",
        action="store_true",
        help="let the pages and clients compete with the server for the cores (by default "
        "they take only what the server leaves, as the students' own machines would)",
    )
    ap.add_argument(
        "--memory-rounds",
        type=int,
        default=0,
        help="instead: this many classes of --sessions clients, one after the other on one "
        "server, and the server's memory after each",
    )
    ap.add_argument(
        "--busy-core",
        action="store_true",
        help="a busy loop on core 0 (another job on the server) while the class trains",
    )
    ap.add_argument(
        "--rates-only",
        action="store_true",
        help="only the training rates (no control clicks, no late joiner): the fairness run",
    )
    ap.add_argument(
        "--upload-vs-adult",
        action="store_true",
        help="instead: an uploaded CSV's rate beside Adult's (one page each)",
    )
    a = ap.parse_args()
    if a.upload_vs_adult:
        upload_vs_adult(a.seconds, say=lambda m: print(m, flush=True))
        return
    if a.memory_rounds:
        memory_rounds(a.memory_rounds, a.sessions[0], say=lambda m: print(m, flush=True))
        return
    rows = []
    for n in a.sessions:
        print(
            f"== N = {n} ({time.strftime('%H:%M:%S')}, load {os.getloadavg()[0]:.2f})", flush=True
        )
        busy = busy_loop(0) if a.busy_core else None
        try:
            r = run(
                n,
                a.browsers,
                a.seconds,
                a.dataset,
                a.n_gibbs,
                a.cycles,
                say=lambda m: print(m, flush=True),
                server_cores_first=not a.share_cores,
                rates_only=a.rates_only,
            )
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        r["busy_core"] = bool(a.busy_core)
        print(
            f"slowest / median session: {r['rate_min'] / max(r['rate_median'], 1e-9):.2f} "
            f"(N = {n}{', a busy loop on core 0' if a.busy_core else ''})",
            flush=True,
        )
        rows.append(table_row(r))
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    print(
        "\n| N | it/s per session min / median / max | total it/s | server cores used "
        "| longest unchanged status "
        "| controls p50 / p95 | late joiner's first plot | RSS one idle / peak / after close "
        "| errors | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
