"""A model-based walk through the explorer, as a class meets it on a fresh install.

A server starts on an EMPTY numba cache (``NUMBA_CACHE_DIR`` a fresh directory: the
sampler compiles while the first page shows), Play is clicked the moment the status line
shows (as a teacher does, not once it reads "iteration 0"), then a seeded random walk of
student actions — Play/Pause, Step, Reset, dataset switches (an uploaded CSV among them),
the mechanism, ε, the XOR triplet table, a second session — runs against a small model of
what the page should do (``Model``: playing or not).  After every action the invariants
are checked:

- Play (or an action while playing) trains within ``TRAIN_BOUND`` s: the status line
  reads "training" and its iteration grows;
- Pause answers within ``PAUSE_BOUND`` s: the status line no longer reads "training";
- Step advances the iteration;
- nothing stays "preparing" (the status line leaves it within ``TRAIN_BOUND`` s);
- no page error, and no traceback in the server's log.

The walk's seed is drawn per run and printed (``AGGMRF_WALK_SEED`` replays one); the
clicks are forced (``force=True``): a click on a button the page shows disabled is lost,
as a teacher's is, instead of waiting for the button like playwright's default.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from .test_browser import Page, browser, free_port, slack, start_server, stop_server  # noqa: F401

pytestmark = pytest.mark.browser

ACTIONS = 30  # student actions in the walk
TRAIN_BOUND = 30.0  # s: Play (or an action while playing) trains within this (× slack)
FIRST_BOUND = 60.0  # s: the first Play on an empty numba cache trains within this (× slack)
PAUSE_BOUND = 1.0  # s: Pause answers within this
DATASETS = {  # the dataset menu's label: the status line's name
    "XOR counterexample": "XOR",
    "Toy — the paper's Table 1": "toy (Table 1)",
    "Synthetic (random MRF)": "synthetic",
}
MECHANISMS = ("none", "Laplace", "Gaussian")


class WalkPage(Page):
    """A page opened without waiting for "iteration 0": the walk clicks at once."""

    def __init__(self, browser, url: str) -> None:  # noqa: F811
        self.ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        self.page = self.ctx.new_page()
        self.page.set_default_navigation_timeout(120_000)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.goto(url)
        # the moment the status line shows (any text) and Play with it
        self.page.locator(".aggmrf-status p").first.wait_for(state="visible", timeout=120_000)
        self.play_button().wait_for(state="visible", timeout=120_000)

    def play_button(self):
        return self.page.locator(".aggmrf-run button").first

    def click_play(self) -> None:
        self.play_button().click(force=True)

    def click_step(self) -> None:
        self.page.locator(".aggmrf-run button").nth(1).click(force=True)

    def click_reset(self) -> None:
        self.page.locator(".aggmrf-run button").nth(2).click(force=True)

    def training(self) -> bool:
        try:
            return self.status().startswith("training")
        except Exception:  # noqa: BLE001 - re-rendering
            return False


class Model:
    """What the page should do: whether the session plays."""

    def __init__(self) -> None:
        self.playing = False
        self.dataset = "XOR"
        self.mechanism = "none"
        self.fresh = False  # the last action started a fresh trainer (iteration 0)


def wait_for(cond, timeout: float, step: float = 0.05) -> float | None:
    """Seconds until ``cond()`` held, None if it never did within ``timeout``."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if cond():
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - the page re-renders
            pass
        time.sleep(step)
    return None


def assert_trains(p: WalkPage, bound: float, what: str) -> float:
    """The status line reads "training" and its iteration grows within ``bound`` s."""
    t0 = time.perf_counter()
    dt = wait_for(lambda: p.training() and p.iteration() > 0, bound)
    assert dt is not None, f"{what}: no training within {bound:.0f} s; status {p.status()!r}"
    a = p.iteration()
    rest = max(bound - (time.perf_counter() - t0), 5.0)
    assert wait_for(lambda: p.iteration() > a, rest) is not None, (
        f"{what}: the iteration stayed at {a} for {rest:.0f} s; status {p.status()!r}"
    )
    return dt


def check_invariants(p: WalkPage, model: Model, proc, what: str) -> None:
    bound = TRAIN_BOUND * slack()
    # nothing stays "preparing"
    assert wait_for(lambda: "preparing" not in p.status(), bound) is not None, (
        f"{what}: still preparing after {bound:.0f} s; status {p.status()!r}"
    )
    if model.playing:
        assert_trains(p, bound, what)
    else:
        assert wait_for(lambda: not p.training(), 2.0) is not None, (
            f"{what}: paused, but the status says {p.status()!r}"
        )
        if model.fresh:  # paused on a fresh trainer: the page shows iteration 0
            assert wait_for(lambda: p.iteration() == 0, bound) is not None, (
                f"{what}: a fresh trainer, but the status says {p.status()!r}"
            )
    model.fresh = False
    assert not p.errors, f"{what}: page errors {p.errors}"
    log = Path(proc.log_path).read_text(errors="replace")
    assert "Traceback" not in log, f"{what}: the server printed a traceback:\n{log[-3000:]}"


def upload_csv(path: Path, rows: int = 2000, seed: int = 0) -> Path:
    """A CSV as a student brings one: 4 categorical columns and a 0/1 label."""
    rng = random.Random(seed)
    lines = ["colour,size,shop,day,bought"]
    for _ in range(rows):
        c = rng.choice(["red", "blue", "green"])
        s = rng.choice(["S", "M", "L"])
        sh = rng.choice(["north", "south"])
        d = rng.choice(["mon", "tue", "wed", "thu"])
        p = 0.2 + 0.4 * (c == "red") + 0.2 * (s == "L")
        lines.append(f"{c},{s},{sh},{d},{int(rng.random() < p)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fresh_install_walk(browser, tmp_path, monkeypatch):  # noqa: F811
    seed = int(os.environ.get("AGGMRF_WALK_SEED") or random.SystemRandom().randrange(10**6))
    print(f"walk seed {seed} (AGGMRF_WALK_SEED={seed} replays it)")
    rng = random.Random(seed)
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))  # a first start: nothing compiled
    csv = upload_csv(tmp_path / "shop.csv", seed=seed)
    port = free_port()
    proc, _ = start_server(port)
    url = f"http://127.0.0.1:{port}/explorer"
    pages: list[WalkPage] = []
    try:
        t0 = time.perf_counter()
        p = WalkPage(browser, url)
        pages.append(p)
        shown = time.perf_counter() - t0
        first_status = p.status()
        p.click_play()  # the moment the status line shows
        model = Model()
        model.playing = True
        trained = assert_trains(p, FIRST_BOUND * slack(), "the first Play on a fresh install")
        print(
            f"first start: status shown {shown:.1f} s after goto ({first_status!r}); "
            f"Play trained {trained:.1f} s after the click"
        )
        check_invariants(p, model, proc, "first Play")

        def play_pause() -> str:
            was = model.playing
            p.click_play()
            model.playing = not was
            if was:  # Pause answers within PAUSE_BOUND s
                dt = wait_for(lambda: not p.training(), PAUSE_BOUND * slack(), step=0.02)
                assert dt is not None, f"Pause: still {p.status()!r} after {PAUSE_BOUND} s"
                return f"pause ({dt:.2f} s)"
            return "play"

        def step() -> str:
            before = p.iteration()
            p.click_step()
            model.playing = False
            bound = TRAIN_BOUND * slack()
            # advances (the page's iteration can lag one in-flight iteration behind a Pause)
            dt = wait_for(lambda: not p.training() and p.iteration() > before, bound)
            assert dt is not None, f"Step: iteration {before} → {p.iteration()} ({p.status()!r})"
            return f"step ({before} → {p.iteration()}, {dt:.2f} s)"

        def reset() -> str:
            p.click_reset()
            model.fresh = True
            return "reset"

        def dataset() -> str:
            label = rng.choice([k for k, v in DATASETS.items() if v != model.dataset])
            p.select_dataset(label)
            model.dataset = DATASETS[label]
            model.fresh = True
            name = model.dataset
            assert wait_for(lambda: p.status().endswith(name), TRAIN_BOUND * slack()), (
                f"switch to {name}: status {p.status()!r}"
            )
            return f"dataset {name}"

        def upload() -> str:
            p.select_dataset("Upload a CSV…")
            p.page.locator("input[type=file]").first.wait_for(state="attached", timeout=20_000)
            p.page.locator("input[type=file]").first.set_input_files(str(csv))
            label = p.control("label_column").locator("select")
            label.wait_for(state="visible", timeout=20_000)
            assert wait_for(
                lambda: "bought" in label.evaluate("e => Array.from(e.options).map(o => o.value)"),
                20,
            ), "the label menu never offered the CSV's columns"
            label.select_option("bought")
            # the same file with the same label again changes nothing: the run is kept
            model.fresh = model.fresh or model.dataset != "uploaded CSV"
            model.dataset = "uploaded CSV"
            assert wait_for(lambda: p.status().endswith("uploaded CSV"), TRAIN_BOUND * slack()), (
                f"upload: status {p.status()!r}"
            )
            return "upload"

        def mechanism() -> str:
            name = rng.choice([m for m in MECHANISMS if m != model.mechanism])
            p.control("mechanism").get_by_role("button", name=name, exact=True).click(force=True)
            model.mechanism = name
            model.fresh = True
            return f"mechanism {name}"

        def epsilon() -> str:
            handle = p.control("epsilon").locator(".noUi-handle").first
            if not handle.is_visible():
                return "ε (hidden: no mechanism)"
            handle.focus()
            key = rng.choice(["ArrowRight", "ArrowLeft"])
            p.page.keyboard.press(key)
            model.fresh = True
            return f"ε {key}"

        def triplet() -> str:
            from playwright.sync_api import TimeoutError as PlaywrightTimeout

            if model.dataset != "XOR":
                p.select_dataset("XOR counterexample")
                model.dataset = "XOR"
                assert wait_for(lambda: p.status().endswith("XOR"), TRAIN_BOUND * slack()), (
                    f"switch to XOR: status {p.status()!r}"
                )
            p.tab("XOR")
            box = p.page.get_by_text("Release the triplet table (X1, X2, X3)", exact=True).first
            # (the tab draws its content after the click: wait for it, as a user's eye does)
            try:
                box.wait_for(state="visible", timeout=10_000)
            except PlaywrightTimeout:
                # seen once in a full suite (seed 858089, the tab still closed after 64 s, not
                # reproduced since): a user clicks the tab again; said, so it stays visible
                print("    the XOR tab did not open within 10 s of its click: clicked it again")
                p.tab("XOR")
                box.wait_for(state="visible", timeout=TRAIN_BOUND * slack() * 1000)
            box.click(force=True)
            model.fresh = True
            p.tab("Training")
            return "triplet table"

        def second_session() -> str:
            q = WalkPage(browser, url)
            try:
                q.click_play()
                dt = assert_trains(q, TRAIN_BOUND * slack(), "a second session's first Play")
                q.click_play()
                assert wait_for(lambda: not q.training(), PAUSE_BOUND * slack() + 1), (
                    f"second session: Pause not answered; {q.status()!r}"
                )
                assert not q.errors, q.errors
            finally:
                q.close()
            return f"second session (trained after {dt:.1f} s)"

        actions = [
            (play_pause, 5),
            (step, 3),
            (reset, 2),
            (dataset, 3),
            (upload, 1),
            (mechanism, 3),
            (epsilon, 2),
            (triplet, 2),
            (second_session, 1),
        ]
        done: list[str] = []
        # every kind at least once, the rest drawn by weight, in a seeded order
        plan = [fn for fn, _ in actions]
        plan += rng.choices(
            [fn for fn, _ in actions], [w for _, w in actions], k=ACTIONS - len(plan)
        )
        rng.shuffle(plan)
        for i, action in enumerate(plan):
            t_a = time.perf_counter()
            what = action()
            check_invariants(p, model, proc, f"action {i + 1} ({what}) after {done[-5:]}")
            done.append(what)
            print(f"{i + 1:2d}. {what}: ok after {time.perf_counter() - t_a:.1f} s; {p.status()}")
        assert len(done) >= ACTIONS
    finally:
        for page in pages:
            page.close()
        stop_server(proc)
