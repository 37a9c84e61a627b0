"""Benchmark the served explorer in a real browser (Debian chromium through playwright).

    python benchmarks/explorer_sessions.py [--seconds 60] [--adult-seconds 20]

Prints, one per line:
- time from ``panel serve`` to HTTP 200, and to a usable page (status line shows iteration 0);
- first-Play latency (click → status says training with iteration > 0);
- Adult with n' = 10 000: iterations/s measured from the status line over ``--adult-seconds``,
  and how long a λ_θ slider moved during training takes to update its value display;
- three concurrent sessions (XOR, toy, synthetic) for ``--seconds``: iterations of each
  at the start and the end, and the server's resident memory (RSS) before, during and
  after they close.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_browser import CHROMIUM, CHROMIUM_ARGS, Page, free_port, start_server, stop_server  # noqa: E402


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
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc, http_s = start_server(port)
    url = f"http://127.0.0.1:{port}/explorer"
    print(f"panel serve → HTTP 200: {http_s:.1f} s")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            t0 = time.perf_counter()
            p = Page(browser, url)
            print(f"panel serve → usable page: {http_s + (time.perf_counter() - t0):.1f} s "
                  f"(page load {p.load_seconds:.1f} s)")  # fmt: skip
            t0 = time.perf_counter()
            p.button("▶ Play").click()
            p.wait_status(lambda t: "training" in t and p.iteration() > 0, timeout=30)
            print(f"first Play → training: {time.perf_counter() - t0:.2f} s")
            p.close()

            if not args.skip_adult:
                p = Page(browser, url + "?dataset=adult&n_gibbs=10000")
                p.wait_status(lambda t: "iteration 0" in t, timeout=600)
                p.button("▶ Play").click()
                p.wait_status(lambda t: p.iteration() > 2, timeout=60)
                i0, t0 = p.iteration(), time.perf_counter()
                p.page.wait_for_timeout(args.adult_seconds * 1000 / 2)
                label = p.page.get_by_text(re.compile(r"λ_θ \(L2 on θ, log scale\):")).first
                before = label.inner_text()
                p.page.locator(".noUi-handle:visible").nth(1).focus()
                ts = time.perf_counter()
                p.page.keyboard.press("ArrowRight")
                while label.inner_text() == before and time.perf_counter() - ts < 10:
                    p.page.wait_for_timeout(20)
                slider = time.perf_counter() - ts
                p.page.wait_for_timeout(args.adult_seconds * 1000 / 2)
                i1, t1 = p.iteration(), time.perf_counter()
                print(f"adult n'=10000: {(i1 - i0) / (t1 - t0):.1f} iterations/s in the browser "
                      f"({i1 - i0} iterations in {t1 - t0:.1f} s); status: {p.status()}")  # fmt: skip
                print(f"adult: slider display updated {slider:.2f} s after the key press")
                p.close()

            base = rss_mb(proc.pid)
            print(f"server RSS before sessions: {base:.0f} MB")
            queries = ("?dataset=xor", "?dataset=toy&n_gibbs=2000", "?dataset=synthetic")
            for rnd in range(2):
                pages = [Page(browser, url + q) for q in queries]
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
                print(f"round {rnd + 1}: 3 sessions for {dt:.0f} s: iterations {start} → {end}; "
                      f"it/s {[round(r, 1) for r in rates]}; peak RSS {peak:.0f} MB")  # fmt: skip
                errors = [e for pg in pages for e in pg.errors]
                print(f"round {rnd + 1}: console errors: {len(errors)}")
                for pg in pages:
                    pg.close()
                time.sleep(8)
                print(f"round {rnd + 1}: server RSS 8 s after closing: {rss_mb(proc.pid):.0f} MB")
            browser.close()
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
