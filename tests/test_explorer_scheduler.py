"""The training scheduler without Panel: the pool hands the cores out by fair share (the CPU
seconds each session got), and a session's run loop plays, pauses and steps a real store
with asyncio alone."""

from __future__ import annotations

import asyncio
import threading
import time

from aggmrf_explore.explorer.server import scheduler
from aggmrf_explore.explorer.server.scheduler import (
    ACTIVE_SECONDS,
    CREDIT_SECONDS,
    RunLoop,
    Share,
    TrainingPool,
)
from aggmrf_explore.explorer.store.store import ExplorerSession


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_slice_is_charged_the_cpu_seconds_it_used_not_its_wall_time():
    pool = TrainingPool(workers=1)
    busy, starved = Share(), Share()
    pool.submit(_spin, 0.2, share=busy).result(timeout=30)
    pool.submit(time.sleep, 0.2, share=starved).result(timeout=30)  # a core it never got
    assert 0.15 < busy.used < 0.5, busy.used
    assert starved.used < 0.05, starved.used
    assert busy.slices == starved.slices == 1


def test_the_session_that_got_least_goes_first():
    """A session whose slices ran on a starved core (few CPU seconds) is served before the
    ones that trained, whatever the order of submission; Steps still go ahead of all."""
    pool = TrainingPool(workers=1)
    gate = threading.Event()
    pool.submit(gate.wait)  # keeps the only thread busy while the queue fills
    shares = {"trained a lot": Share(), "trained some": Share(), "starved": Share()}
    shares["trained a lot"].used, shares["trained some"].used = 0.6, 0.3
    order: list[str] = []
    futures = [pool.submit(order.append, name, share=sh) for name, sh in shares.items()]
    futures.append(pool.submit(order.append, "step", priority=0, share=shares["trained a lot"]))
    gate.set()
    for f in futures:
        f.result(timeout=10)
    assert order == ["step", "starved", "trained some", "trained a lot"]


def test_a_session_far_behind_keeps_only_a_bounded_credit():
    """A session that paused (or just opened) while the others trained starts at most
    ``CREDIT_SECONDS`` behind the last slice handed out: it does not take the cores until
    it has caught up."""
    pool = TrainingPool(workers=1)
    pool.clock = 100.0
    late = Share()
    pool.submit(lambda: None, share=late).result(timeout=10)
    assert late.used >= 100.0 - CREDIT_SECONDS


def test_a_session_far_ahead_waits_for_the_one_behind(monkeypatch):
    """Two sessions, two threads, one thread starved (the slice of the session behind runs
    there, getting no CPU): the session ahead by more than ``LEAD_SECONDS`` does not take
    the free thread again and again (each session keeping "its" thread: one trains at full
    speed, the other crawls); it waits until the one behind is back in the queue (and then
    goes first) or stops training.  (The lead cap is off by default: ``LEAD_SECONDS``.)"""
    monkeypatch.setattr(scheduler, "LEAD_SECONDS", 0.3)
    pool = TrainingPool(workers=2)
    ahead, behind = Share(), Share()
    ahead.used = 0.8
    gate = threading.Event()
    started: list[str] = []
    slow = pool.submit(lambda: (started.append("behind"), gate.wait(10)), share=behind)
    while not started:
        time.sleep(0.005)
    held = pool.submit(started.append, "ahead", share=ahead)
    time.sleep(0.3)  # a thread is free all this time
    assert started == ["behind"] and not held.done()
    gate.set()
    slow.result(timeout=10)
    again = pool.submit(started.append, "behind again", share=behind)
    held.result(timeout=10)
    again.result(timeout=10)
    assert started == ["behind", "behind again", "ahead"]
    # once the one behind stops training, the one ahead is held no more
    t0 = time.monotonic()
    pool.submit(started.append, "ahead alone", share=ahead).result(timeout=10)
    assert time.monotonic() - t0 < ACTIVE_SECONDS + 0.5


def test_a_step_is_never_held_back(monkeypatch):
    monkeypatch.setattr(scheduler, "LEAD_SECONDS", 0.3)
    pool = TrainingPool(workers=2)
    ahead, behind = Share(), Share()
    ahead.used = 0.8
    gate = threading.Event()
    pool.submit(gate.wait, 10, share=behind)
    try:
        assert pool.submit(lambda: "stepped", priority=0, share=ahead).result(timeout=5)
    finally:
        gate.set()


def _toy_store() -> ExplorerSession:
    return ExplorerSession(dataset="toy", n_gibbs=500)


def _run_loop(store, tasks: list, **callbacks) -> RunLoop:
    """A RunLoop on one training thread whose ``execute`` queues asyncio tasks in ``tasks``."""
    return RunLoop(
        store,
        TrainingPool(workers=1),
        execute=lambda fn: tasks.append(asyncio.ensure_future(fn())),
        ready=lambda: True,
        **callbacks,
    )


def test_the_run_loop_plays_pauses_and_steps_a_store_without_panel(monkeypatch):
    monkeypatch.setattr(scheduler, "TICK_MS", 10)
    s = _toy_store()
    refreshed: list[bool] = []
    stopped: list[bool] = []
    reports: list[str] = []

    async def scenario():
        tasks = []
        loop = _run_loop(
            s,
            tasks,
            after_slice=refreshed.append,
            stopped=lambda: stopped.append(True),
            report=reports.append,
        )
        s.play()
        assert loop.start() and not loop.start()  # one loop however many Plays
        deadline = time.monotonic() + 600  # (an empty numba cache compiles first: 200 s loaded)
        # (the trainer counts its iterations as it goes; the page refreshes after the slice)
        while (s.iteration < 5 or not refreshed) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert s.iteration >= 5 and refreshed[0] is True  # a Play's first slice at once
        s.pause()
        loop.cancel_queued()
        await asyncio.gather(*tasks)
        assert stopped == [True] and not loop.looping
        before = s.iteration
        loop.step()
        await asyncio.gather(*tasks)
        assert s.iteration == before + 1 and s.run.steps_wanted == 0
        loop.close()
        assert not loop.start()  # a closed page never trains again

    asyncio.run(scenario())
    assert not reports


def test_a_play_pressed_while_the_loop_ends_is_not_lost(monkeypatch):
    """Pause, then Play again while the loop waits for its last slice: training goes on."""
    monkeypatch.setattr(scheduler, "TICK_MS", 10)
    s = _toy_store()

    async def scenario():
        tasks = []
        loop = _run_loop(
            s,
            tasks,
            after_slice=lambda first: None,
            stopped=lambda: None,
            report=lambda text: None,
        )
        s.play()
        loop.start()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if s.iteration >= 3:
                break
        s.pause()
        loop.cancel_queued()
        s.play()
        loop.start()  # (nothing if the loop under way is still ending: it goes on by itself)
        before = s.iteration
        for _ in range(300):
            await asyncio.sleep(0.01)
            if s.iteration >= before + 5:
                break
        assert s.iteration >= before + 5 and loop.looping
        s.pause()
        loop.cancel_queued()
        while any(not t.done() for t in tasks):
            await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_a_step_pressed_before_the_sampler_is_ready_runs_once_it_is(monkeypatch):
    monkeypatch.setattr(scheduler, "WAIT_POLL", 0.01)
    s = _toy_store()
    ready = [False]

    async def scenario():
        tasks = []
        loop = RunLoop(
            s,
            TrainingPool(workers=1),
            execute=lambda fn: tasks.append(asyncio.ensure_future(fn())),
            ready=lambda: ready[0],
            after_slice=lambda first: None,
            stopped=lambda: None,
            report=lambda text: None,
        )
        loop.step()
        await asyncio.sleep(0.1)
        assert s.iteration == 0 and s.run.steps_wanted == 1  # waits, and says so
        ready[0] = True
        await asyncio.gather(*tasks)
        assert s.iteration == 1 and s.run.steps_wanted == 0

    asyncio.run(scenario())


def test_an_event_loop_that_ends_while_a_session_plays_ends_its_run_loop(monkeypatch):
    """The page's event loop ends (a failed test, a server shutting down) while the session
    still plays: cancelling the run loop's task ends it; it neither swallows the
    cancellation and trains on forever nor restarts itself."""
    monkeypatch.setattr(scheduler, "TICK_MS", 10)
    s = _toy_store()
    outcome: list[str] = []

    async def scenario():
        tasks = []
        loop = _run_loop(
            s, tasks, after_slice=lambda first: None, stopped=lambda: None, report=print
        )
        s.play()
        loop.start()
        deadline = time.monotonic() + 600  # (an empty numba cache compiles first: 200 s loaded)
        while s.iteration < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        raise RuntimeError("the event loop ends")  # asyncio.run cancels the run loop

    def run() -> None:
        try:
            asyncio.run(scenario())
        except RuntimeError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(700)
    assert not thread.is_alive(), "asyncio.run never returned: the run loop outlived its loop"
    assert outcome == ["the event loop ends"] and s.iteration >= 2 and s.running
