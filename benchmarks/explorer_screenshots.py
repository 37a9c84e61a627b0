"""Screenshots of the explorer for docs/ (Debian chromium through playwright).

    python benchmarks/explorer_screenshots.py [--out docs]

Serves ``apps/explorer.py`` and saves, at 1280×720 (a projector) and 1600×1000:
``explorer_xor_<size>.png`` (the XOR tab with the triplet table released, after training),
``explorer_privacy_<size>.png`` (the Privacy tab after three ε values: the session's
price-of-privacy curve) and ``explorer_lesson_<size>.png`` (a lesson link: hidden
controls and the lesson text at the top).

``--student-views`` instead saves, at 1280×720, into ``docs/screenshots/``:
``local_noise_plot_1280x720.png`` (Adult under local randomized response, the Privacy
tab's Local noise plot), ``privacy_tab_paused_1280x720.png`` (the Privacy tab of a
Gaussian run after Pause: the legend says paused) and
``mechanism_click_plus_1s_1280x720.png`` (the page one second after a click on a
mechanism button, the pointer left where it clicked).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    start_server,
    stop_server,
)

SIZES = {"1280x720": (1280, 720), "1600x1000": (1600, 1000)}
LESSON = "?dataset=adult&gradient=true&hide=lambda_mu,step_mu,presets,privacy&lesson=" + quote(
    "Exercise 2: the true gradient. Press Play: how does the NLLH curve differ "
    "from the rescaled one? Pin the run, switch back, compare."
)


def wait_status(page, cond, timeout: float = 120.0) -> str:
    status = page.locator(".aggmrf-status p").first
    t = 0.0
    text = ""
    while t < timeout:
        try:
            text = status.inner_text(timeout=1000)
            if cond(text):
                return text
        except Exception:  # noqa: BLE001 - still rendering
            pass
        page.wait_for_timeout(200)
        t += 0.2
    raise RuntimeError(f"status never matched; last {text!r}")


def iteration(text: str) -> int:
    import re

    m = re.search(r"iteration ([\d,]+)", text)
    return int(m.group(1).replace(",", "")) if m else -1


def student_views(out: Path) -> None:
    """The three screenshots of ``--student-views`` (module docstring)."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc, _ = start_server(port, timeout=900)  # (a shared, loaded machine)
    url = f"http://127.0.0.1:{port}/explorer"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 720})
            page = ctx.new_page()
            page.set_default_navigation_timeout(900_000)  # a shared, loaded machine
            page.set_default_timeout(300_000)
            # the Local noise plot: Adult (32 561 records) under randomized response
            page.goto(url + "?dataset=adult&mechanism=local&epsilon=2")
            wait_status(page, lambda t: "iteration 0" in t and t.endswith("Adult"), 900)
            page.locator(".bk-tab").filter(has_text="Privacy").first.click()
            page.wait_for_timeout(25_000)  # (the tab's plots drawn; longer on a loaded machine)
            page.screenshot(path=str(out / "local_noise_plot_1280x720.png"))
            page.mouse.move(800, 400)
            page.mouse.wheel(0, 420)  # down to the noise plot
            page.wait_for_timeout(3000)
            page.screenshot(path=str(out / "local_noise_plot_scrolled_1280x720.png"))
            # the Privacy tab while paused: a Gaussian run on XOR, trained, then paused
            page.goto(url + "?dataset=xor&n_samples=4000&n_gibbs=2000&mechanism=gaussian")
            wait_status(page, lambda t: "iteration 0" in t and t.endswith("XOR"), 600)
            page.locator(".bk-tab").filter(has_text="Privacy").first.click()
            page.get_by_role("button", name="▶ Play").first.click()
            wait_status(page, lambda t: iteration(t) > 200, 600)
            page.get_by_role("button", name="❚❚ Pause").first.click()
            wait_status(page, lambda t: t.startswith("paused"), 300)
            page.wait_for_timeout(3000)
            page.screenshot(path=str(out / "privacy_tab_paused_1280x720.png"))
            # one second after a mechanism click (the pointer stays where it clicked)
            page.locator(".aggmrf-control-mechanism").get_by_text("Laplace", exact=True).click()
            page.wait_for_timeout(1000)
            page.screenshot(path=str(out / "mechanism_click_plus_1s_1280x720.png"))
            ctx.close()
            browser.close()
            print(f"saved local_noise_plot, privacy_tab_paused, mechanism_click_plus_1s in {out}")
    finally:
        stop_server(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--student-views", action="store_true", help="the three views (docstring)")
    args = ap.parse_args()
    out = Path(args.out)
    if args.student_views:
        student_views(out / "screenshots" if args.out == str(ROOT / "docs") else out)
        return
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc, _ = start_server(port)
    url = f"http://127.0.0.1:{port}/explorer"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for tag, (w, h) in SIZES.items():
                ctx = browser.new_context(viewport={"width": w, "height": h})
                page = ctx.new_page()
                page.set_default_navigation_timeout(180_000)  # a shared, loaded machine
                page.set_default_timeout(60_000)
                # XOR with the triplet table released, trained a few seconds
                page.goto(url + "?dataset=xor&n_samples=4000&n_gibbs=2000&triples=true")
                wait_status(page, lambda t: "iteration 0" in t and t.endswith("XOR"))
                page.get_by_role("button", name="▶ Play").first.click()
                wait_status(page, lambda t: iteration(t) > 300)
                page.locator(".bk-tab").filter(has_text="XOR").first.click()
                page.wait_for_timeout(5000)
                page.get_by_role("button", name="❚❚ Pause").first.click()
                page.wait_for_timeout(2500)
                page.screenshot(path=str(out / f"explorer_xor_{tag}.png"))
                # Privacy: three ε values, each a point of the session's curve
                page.goto(
                    url + "?dataset=xor&n_samples=4000&n_gibbs=2000&mechanism=gaussian&epsilon=0.5"
                )
                wait_status(page, lambda t: "iteration 0" in t and t.endswith("XOR"))
                page.locator(".bk-tab").filter(has_text="Privacy").first.click()
                page.get_by_role("button", name="▶ Play").first.click()
                handle = page.locator(".aggmrf-privacy-epsilon .noUi-handle").first
                for _ in range(3):
                    wait_status(page, lambda t: iteration(t) > 200)
                    handle.focus()
                    page.keyboard.press("ArrowRight")  # the next ε: a new release and run
                    wait_status(page, lambda t: iteration(t) < 150)
                wait_status(page, lambda t: iteration(t) > 200)
                page.get_by_role("button", name="❚❚ Pause").first.click()
                page.wait_for_timeout(3000)
                page.screenshot(path=str(out / f"explorer_privacy_{tag}.png"))
                # a lesson link
                page.goto(url + LESSON)
                wait_status(page, lambda t: "iteration 0" in t and t.endswith("Adult"), 300)
                page.wait_for_timeout(2000)
                page.screenshot(path=str(out / f"explorer_lesson_{tag}.png"))
                ctx.close()
                print(f"{tag}: saved explorer_xor, explorer_privacy, explorer_lesson")
            browser.close()
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
