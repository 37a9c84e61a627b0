"""The explorer's training loop: slices of training run in the server's pool of training
threads (never on the event loop, which only queues them and refreshes the page), the
refreshes stretch with the class but stay frequent, a Step goes ahead of queued slices, and
nothing trains while the sampler still compiles (a first start), though the page says so
and every other control works."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from aggmrf_explore.callbacks import TimeBox
from aggmrf_explore.explorer.server import runtime
from aggmrf_explore.explorer.store.store import ExplorerSession
from aggmrf_explore.explorer.views import app
from aggmrf_explore.explorer.views.app import Explorer


@pytest.fixture
def explorer():
    runtime.warm_up_once()
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=500)
    return Explorer(session=s, sync_url=False)


def test_slices_train_in_the_pool_and_the_loop_refreshes(explorer, monkeypatch):
    ex, s = explorer, explorer.session
    threads: list[str] = []
    train = s.run.train_slice

    def recorded(*args):
        threads.append(threading.current_thread().name)
        return train(*args)

    monkeypatch.setattr(s.run, "train_slice", recorded)
    refreshes: list[str] = []
    fast = ex._refresh_fast
    monkeypatch.setattr(ex, "_refresh_fast", lambda: (refreshes.append("fast"), fast()))

    s.play()  # (no event loop yet: no training loop starts, this test drives it)
    assert not ex._looping

    async def run() -> None:
        ex._last_fast = 0.0  # a refresh is due
        await ex._train_once()
        await ex._train_once()

    asyncio.run(run())
    assert threads and all(name.startswith("aggmrf-train-") for name in threads), threads
    assert s.iteration > 0
    assert refreshes == ["fast"]  # due once, then not again within FAST_REFRESH
    shown = ex.status.object  # the first slice's iterations (the refresh after it)
    assert shown.startswith("training") and "iteration 0 " not in shown, shown
    s.pause()


def test_refresh_intervals_stretch_with_the_class_but_stay_bounded():
    assert app.refresh_intervals(1, 2) == (app.FAST_REFRESH, app.HEAVY_REFRESH)
    assert app.refresh_intervals(2, 2) == (app.FAST_REFRESH, app.HEAVY_REFRESH)
    fast4, heavy4 = app.refresh_intervals(4, 2)
    assert fast4 == 2 * app.FAST_REFRESH and heavy4 == 2 * app.HEAVY_REFRESH
    fast, heavy = app.refresh_intervals(30, 2)
    assert fast == app.MAX_FAST_REFRESH <= 3.0  # the line plots: at least every 3 s
    assert app.STATUS_REFRESH <= 1.0  # the status line alone: every second
    assert heavy == app.MAX_HEAVY_REFRESH


def test_the_status_line_changes_when_the_heavy_views_take_their_turn(explorer, monkeypatch):
    """With a class training, a session's fast refresh (status and line plots) comes every
    MAX_FAST_REFRESH s and its heavy one every MAX_HEAVY_REFRESH s, never both at once: the
    status line alone still changes at the latest every STATUS_REFRESH s."""
    ex = explorer
    shown: list[str] = []
    show = ex.messages.show_status
    monkeypatch.setattr(ex.messages, "show_status", lambda: (shown.append("status"), show()))
    monkeypatch.setattr(ex, "_refresh_heavy", lambda: shown.append("heavy"))
    monkeypatch.setattr(ex, "_refresh_fast", lambda: shown.append("fast"))
    now = time.monotonic()
    ex._last_fast = ex._last_status = now - app.STATUS_REFRESH - 0.1  # fast not yet due…
    ex._last_heavy = now - 2 * app.MAX_HEAVY_REFRESH  # …the heavy views far more overdue
    ex._refresh_due(30)
    assert shown == ["heavy", "status"]
    shown.clear()
    ex._refresh_due(30)  # just shown: not again before STATUS_REFRESH
    assert "status" not in shown
    assert app.STATUS_REFRESH <= 1.0


def test_a_step_goes_ahead_of_queued_slices():
    pool = runtime.TrainingPool(workers=1)
    order: list[str] = []
    gate = threading.Event()
    first = pool.submit(gate.wait)  # keeps the only worker busy
    queued = [pool.submit(order.append, f"slice {k}") for k in range(3)]
    step = pool.submit(order.append, "step", priority=0)
    gate.set()
    for f in (first, *queued, step):
        f.result(timeout=10)
    assert order == ["step", "slice 0", "slice 1", "slice 2"]


def test_slices_of_two_sessions_run_at_the_same_time():
    """numba's kernels release the GIL: two sessions' slices overlap in time."""
    runtime.warm_up_once()
    sessions = [ExplorerSession(dataset="synthetic", n_gibbs=20_000) for _ in range(2)]
    for s in sessions:
        s.step(2)
    pool = runtime.TrainingPool(workers=2)
    spans: list[tuple[float, float]] = []

    def timed(s):
        t0 = time.perf_counter()
        s.run.train_slice(None, 40)
        spans.append((t0, time.perf_counter()))

    for f in [pool.submit(timed, s) for s in sessions]:
        f.result(timeout=120)
    (a0, a1), (b0, b1) = sorted(spans)
    assert b0 < a1, f"the second slice started after the first ended: {spans}"


def test_no_training_while_the_sampler_compiles(explorer, monkeypatch):
    ex, s = explorer, explorer.session
    monkeypatch.setattr(runtime, "kernels_ready", lambda: False)
    monkeypatch.setattr(
        runtime, "warm_up_message", lambda: "compiling the sampler (first start only)… 3 s"
    )
    ex._step()  # Step waits too, without an error
    assert s.iteration == 0 and not ex.message.visible
    s.play()
    for _ in range(3):
        ex.tick()
    assert s.iteration == 0
    ex.messages.show_status()
    text = ex.status.object
    assert "compiling the sampler (first start only)" in text
    assert "iteration 0" not in text  # (the benchmark's "training possible")
    assert "Play pressed: training starts once the sampler is ready" in text
    assert ex.spinner.visible and ex.spinner.label == ""  # (not the status line again)
    monkeypatch.setattr(runtime, "kernels_ready", lambda: True)
    monkeypatch.setattr(runtime, "warm_up_message", lambda: "")
    ex.tick()  # the Play pressed meanwhile trains now
    assert s.iteration > 0
    ex.messages.show_status()
    assert ex.status.object.startswith("training") and not ex.spinner.visible


def test_a_live_setting_changed_during_a_slice_applies_after_it(explorer):
    s = explorer.session
    s.step(1)
    with s.run.lock:  # a slice is training (in a worker thread)
        s.propose("lambda_theta", 7.0)
        assert s.trainer.settings.lambda_theta != 7.0  # not changed under the slice
    s.finish_slice(s.run.train_slice(None, 1))
    assert s.trainer.settings.lambda_theta == 7.0


def test_a_pause_stops_a_slice_after_its_current_iteration(explorer):
    s = explorer.session
    box = TimeBox(None, stop=lambda: len(box.stats) >= 3)  # "paused" after 3 iterations
    s.trainer.step(50, callbacks=[box])
    assert len(box.stats) == 3
    s.play()
    assert len(s.run.train_slice(None, 5, while_running=True).stats) == 5
    s.pause()
    assert s.run.train_slice(None, 50, while_running=True).stats == []  # paused: nothing


def test_the_status_says_paused_only_once_the_last_slice_is_back(explorer, monkeypatch):
    """A Pause during a slice: "pausing" while its current iteration ends, then "paused"
    beside the iteration that stays (the page never shows "paused" and then a count that
    still moves)."""
    s = explorer.session
    started, release = threading.Event(), threading.Event()
    step = s.trainer.step

    def slow_step(k, callbacks=()):  # the slice's iteration takes until `release`
        started.set()
        release.wait(10)
        return step(k, callbacks)

    monkeypatch.setattr(s.trainer, "step", slow_step)
    s.play()
    done: list = []
    worker = threading.Thread(target=lambda: done.append(s.run.train_slice(None, 50, True)))
    worker.start()  # (as the pool runs it)
    assert started.wait(10)
    s.pause()
    assert s.status.startswith("pausing"), s.status
    release.set()
    worker.join(10)
    assert len(done[0].stats) == 1  # the iteration under way, then none
    s.finish_slice(done[0])
    assert s.status.startswith(f"paused · iteration {s.iteration:,} "), s.status


def test_a_session_trains_on_the_build_ready_and_moves_to_a_faster_one():
    """A first start: the session trains on the numpy chain while nothing is compiled,
    then its next slice moves the same samples to the compiled chain; a layout the numpy
    chain cannot sample waits (``can_train``) instead of compiling in a slice."""
    ready = ["numpy"]
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=500, chain_build=lambda: ready[0])
    assert s.trainer.chain.build == "numpy" and s.run.can_train()
    s.step(3)
    assert "numpy sampler" in s.status
    codes = s.trainer.chain.codes.copy()
    ready[0] = "parallel"
    s.update_status()  # paused, still on the numpy chain: the note goes once compiled is ready
    assert s.trainer.chain.build == "numpy" and "numpy" not in s.status
    s.run.faster_chain(s.trainer)  # (what the next slice does first)
    assert s.trainer.chain.build == "parallel"
    np.testing.assert_array_equal(s.trainer.chain.codes, codes)
    s.step(2)
    assert s.iteration == 5 and "numpy" not in s.status
    ready[0] = None
    assert not s.run.can_train()
