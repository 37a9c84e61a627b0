"""Benchmark the served explorer in a real browser (Debian chromium through playwright).

    python benchmarks/explorer_sessions.py [--seconds 60] [--adult-seconds 20] [--rounds 3]
    python benchmarks/explorer_sessions.py --skip-adult --rounds 0   # start-up and first Play only
    python benchmarks/explorer_sessions.py --starts-only   # first start (empty caches) + warm start
    python benchmarks/explorer_sessions.py --starts-only --busy 4   # the same at load ≈ 5

``--starts`` (implied by ``--starts-only``) first measures two server starts: a *first start*
with ``NUMBA_CACHE_DIR`` and ``AGGMRF_CACHE_DIR`` pointing at empty temporary directories
(numba compiles every kernel and HoloViews draws every figure, as on a fresh machine) and
a *warm start* on the caches it filled.  For
each: ``panel serve`` → HTTP 200, → page visible (the status line shows, e.g. "compiling
the sampler (first start only)…"), → training possible (status "iteration 0"), and the first
Play; with the load average (the machine is shared: the compile time scales with it).

Prints, one per line:
- time from ``panel serve`` to HTTP 200, and to a usable page (status line shows iteration 0);
- first-Play latency (click → status says training with iteration > 0);
- Adult with n' = 10 000: iterations/s measured from the status line over ``--adult-seconds``,
  and how long a λ_θ slider moved during training takes to update its value display;
- three concurrent sessions (XOR, toy, synthetic) for ``--seconds``, ``--rounds`` times:
  iterations of each at the start and the end, and the server's resident memory (RSS)
  before, during and after they close (read ``--settle`` s after the server has destroyed
  them, which its log reports).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = False  # --trace: print the server's timeline of each start
sys.path.insert(0, str(ROOT / "tests"))

sys.path.insert(0, str(ROOT))
from test_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    server_log,
    start_server,
    stop_server,
)

from tests.test_browser_app import AppPage  # noqa: E402


def Page(browser, url: str, ready: str = "iteration 0", timeout: float = 300):  # noqa: N802
    """An explorer page at 1600×1000 (navigation may take long on a loaded machine)."""
    return AppPage(browser, url, ready, timeout, viewport={"width": 1600, "height": 1000})


def rss_mb(pid: int) -> float:
    total = 0
    for p in [pid, *children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def wait_closed(proc, closed_before: int, n: int, timeout: float) -> tuple[int, float]:
    """Wait until the server has destroyed ``n`` more sessions (its log says "session closed").

    Bokeh destroys a session whose browser left once it has been unused for
    ``--unused-session-lifetime`` (15 s), checked every 17 s: up to ~35 s after closing.
    Returns (sessions closed so far, seconds waited).
    """
    t0 = time.perf_counter()
    count = closed_before
    while time.perf_counter() - t0 < timeout:
        count = server_log(proc).count("session closed (")
        if count >= closed_before + n:
            break
        time.sleep(0.5)
    return count, time.perf_counter() - t0


def measure_start(
    browser, label: str, cache: str, timeout: float = 900.0, compile_wait: float = 600.0
) -> None:
    """One server start on numba cache directory ``cache``: print its timings.

    page visible: the status line shows (e.g. "compiling the sampler (first start only)…");
    usable: the data are loaded and every control works (status "… loaded: everything
    but training works now" while the sampler compiles, or "iteration 0");
    training possible: status "iteration 0" (the sampler is ready: Play trains).
    A first start then waits for the server to say that the parallel sampler is compiled
    (numba's cache complete), so that the next start is a warm one.
    """
    os.environ["NUMBA_CACHE_DIR"] = cache
    load0 = os.getloadavg()[0]
    t0, wall0 = time.perf_counter(), time.time()
    port = free_port()
    proc, http_s = start_server(port, timeout=timeout)
    try:
        ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        page = ctx.new_page()
        page.set_default_navigation_timeout(timeout * 1000)
        page.goto(f"http://127.0.0.1:{port}/explorer")
        status = page.locator(".aggmrf-status p").first
        status.wait_for(state="visible", timeout=timeout * 1000)
        visible, first_text = time.perf_counter() - t0, status.inner_text()
        deadline = time.perf_counter() + timeout
        usable = None
        while time.perf_counter() < deadline:
            text = status.inner_text()
            if usable is None and ("iteration 0" in text or "everything but training" in text):
                usable = time.perf_counter() - t0
            if "iteration 0" in text:
                break
            page.wait_for_timeout(100)
        trainable = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.get_by_role("button", name="▶ Play").first.click()
        while time.perf_counter() < deadline:
            m = re.search(r"iteration ([\d,]+)", status.inner_text())
            if m and int(m.group(1).replace(",", "")) > 0:
                break
            page.wait_for_timeout(50)
        play = time.perf_counter() - t1
        ctx.close()
        load1 = os.getloadavg()[0]
        print(
            f"{label}: HTTP 200 after {http_s:.1f} s; page visible after {visible:.1f} s "
            f"(status {first_text!r}); usable after {usable or trainable:.1f} s; training "
            f"possible after {trainable:.1f} s; first Play → training {play:.2f} s (Play trains "
            f"{trainable + play - visible:.1f} s after the page shows); "
            f"load average {load0:.1f} → {load1:.1f} on {os.cpu_count()} cores",
            flush=True,
        )
        if TRACE:  # the server's own timeline, from `panel serve` (before any compile wait)
            for line in server_log(proc).splitlines():
                trace = re.match(r"\[aggmrf explorer ([\d.]+)\] (.*)", line)
                if trace:
                    print(f"    {float(trace[1]) - wall0:6.2f} s  {trace[2]}", flush=True)
        if "compiling the sampler" in server_log(proc):  # first start: wait for the rest
            wait = time.perf_counter() + compile_wait
            while time.perf_counter() < wait:
                if "compiled sampler ready" in server_log(proc) or proc.poll() is not None:
                    print(f"    every kernel compiled after {time.perf_counter() - t0:.1f} s")
                    break
                time.sleep(0.5)
        for line in server_log(proc).splitlines():
            if line.startswith("aggmrf explorer:"):
                print(f"    terminal: {line}", flush=True)
    finally:
        stop_server(proc)


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="duration of the 3-session run")
    ap.add_argument("--adult-seconds", type=float, default=20.0)
    ap.add_argument("--skip-adult", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of 3 concurrent sessions")
    ap.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds to wait, once the server has destroyed the closed sessions (Bokeh drops"
        " an unused session after --unused-session-lifetime 15 s, checked every 17 s), before"
        " reading RSS (the explorer releases their memory 5 s after they are destroyed)",
    )
    ap.add_argument("--starts", action="store_true", help="first start + warm start first")
    ap.add_argument("--starts-only", action="store_true", help="only the two starts")
    ap.add_argument("--busy", type=int, default=0, help="busy-loop processes meanwhile (load)")
    ap.add_argument("--trace", action="store_true", help="the server's timeline of each start")
    args = ap.parse_args()
    global TRACE
    TRACE = args.trace
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        run(args)
    finally:
        for b in busy:
            b.kill()


def run(args) -> None:
    from playwright.sync_api import sync_playwright

    if args.starts or args.starts_only:
        saved = {k: os.environ.get(k) for k in ("NUMBA_CACHE_DIR", "AGGMRF_CACHE_DIR")}
        with tempfile.TemporaryDirectory(prefix="aggmrf-start-") as tmp:
            # a fresh machine: numba's cache and the explorer's (figures, baselines) empty
            os.environ["AGGMRF_CACHE_DIR"] = os.path.join(tmp, "aggmrf")
            cache = os.path.join(tmp, "numba")
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                measure_start(browser, "first start (empty caches)", cache)
                measure_start(browser, "warm start (caches filled)", cache)
                browser.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if args.starts_only:
            return

    port = free_port()
    proc, http_s = start_server(port)
    url = f"http://127.0.0.1:{port}/explorer"
    print(f"panel serve → answering HTTP: {http_s:.1f} s; load average {os.getloadavg()[0]:.1f}")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            t0 = time.perf_counter()
            p = Page(browser, url)
            print(
                f"panel serve → usable page: {http_s + (time.perf_counter() - t0):.1f} s "
                f"(page load {p.load_seconds:.1f} s)"
            )
            print(f"first Play → training: {p.play():.2f} s")
            p.close()

            if not args.skip_adult:
                p = Page(browser, url + "?dataset=adult&n_gibbs=10000", ready="Adult", timeout=600)
                p.play()
                p.page.wait_for_timeout(1000)
                rate1 = p.rate(args.adult_seconds / 2)
                slider, before, after = p.slider_latency("lambda_theta")
                rate2 = p.rate(args.adult_seconds / 2)
                print(
                    f"adult n'=10000: {(rate1 + rate2) / 2:.1f} iterations/s in the browser "
                    f"over {args.adult_seconds:.0f} s; status: {p.status()}"
                )
                print(f"adult: slider display {before!r} → {after!r} {slider:.2f} s after the key")
                p.close()

            if args.rounds < 1:
                browser.close()
                return
            opened = 1 if args.skip_adult else 2  # sessions opened so far (one per Page)
            closed, waited = wait_closed(proc, 0, opened, timeout=120)
            time.sleep(args.settle)
            base = rss_mb(proc.pid)
            print(
                f"server RSS before the 3-session rounds (the {closed} earlier sessions "
                f"destroyed after {waited:.0f} s, + {args.settle:.0f} s): {base:.0f} MB"
            )
            queries = (
                ("?dataset=xor", "XOR"),
                ("?dataset=toy&n_gibbs=2000", "toy (Table 1)"),
                ("?dataset=synthetic", "synthetic"),
            )
            for rnd in range(args.rounds):
                pages = [Page(browser, url + q, ready=name) for q, name in queries]
                for pg in pages:
                    pg.button("▶ Play").click()
                for pg in pages:
                    pg.wait_status(lambda t, pg=pg: pg.iteration() > 0, timeout=60)
                start = [pg.iteration() for pg in pages]
                t0 = time.perf_counter()
                peak = 0.0
                while time.perf_counter() - t0 < args.seconds:
                    pages[0].page.wait_for_timeout(2000)
                    peak = max(peak, rss_mb(proc.pid))
                end = [pg.iteration() for pg in pages]
                dt = time.perf_counter() - t0
                rates = [(e - s) / dt for s, e in zip(start, end, strict=True)]
                print(
                    f"round {rnd + 1}: 3 sessions for {dt:.0f} s: iterations {start} → {end}; "
                    f"it/s {[round(r, 1) for r in rates]}; peak RSS {peak:.0f} MB"
                )
                errors = [e for pg in pages for e in pg.errors]
                print(f"round {rnd + 1}: console errors: {len(errors)}")
                for pg in pages:
                    pg.close()
                closed, waited = wait_closed(proc, closed, len(pages), timeout=120)
                time.sleep(args.settle)
                print(
                    f"round {rnd + 1}: sessions destroyed by the server {waited:.0f} s after "
                    f"closing ({closed} in all); server RSS {args.settle:.0f} s later: "
                    f"{rss_mb(proc.pid):.0f} MB; load average {os.getloadavg()[0]:.1f}"
                )
            browser.close()
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
