"""The explorer's training tick (issue 14): the refresh's cost comes out of the training
budget (a tick longer than its period makes the periodic callback skip the next one),
and nothing trains while the sampler still compiles (a first start), though the page
says so and every other control works."""

from __future__ import annotations

import time

import pytest

from aggmrf_explore.explorer import app, runtime
from aggmrf_explore.explorer.app import Explorer
from aggmrf_explore.explorer.store import ExplorerSession


@pytest.fixture
def explorer():
    runtime.warm_up_once()
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=500)
    return Explorer(session=s, sync_url=False)


def test_refresh_first_then_training_for_the_rest_of_the_budget(explorer, monkeypatch):
    ex, s = explorer, explorer.session
    calls: list = []
    slow = 0.03

    def refresh():
        calls.append(("refresh", time.perf_counter()))
        time.sleep(slow)
        ex._last_fast = time.monotonic()

    def tick(budget):
        calls.append(("train", budget))
        return []

    monkeypatch.setattr(ex, "_refresh_fast", refresh)
    monkeypatch.setattr(s, "tick", tick)
    ex._last_fast = 0.0  # a refresh is due
    ex._tick()
    assert [c[0] for c in calls] == ["refresh", "train"]
    budget = calls[1][1]
    assert budget <= app.TICK_BUDGET - slow + 1e-3, budget  # what the refresh left
    assert budget > 0
    calls.clear()
    ex._tick()  # no refresh due: the whole budget trains
    assert [c[0] for c in calls] == ["train"]
    assert calls[0][1] == pytest.approx(app.TICK_BUDGET, abs=5e-3)


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
        ex._tick()
    assert s.iteration == 0
    ex._show_status()
    text = ex.status.object
    assert "compiling the sampler (first start only)" in text
    assert "iteration 0" not in text  # (the benchmark's "training possible")
    assert "everything but training works" in text and "Play pressed" in text
    assert ex.spinner.visible and ex.spinner.label == ""  # (not the status line again)
    monkeypatch.setattr(runtime, "kernels_ready", lambda: True)
    monkeypatch.setattr(runtime, "warm_up_message", lambda: "")
    ex._tick()  # the Play pressed meanwhile trains now
    assert s.iteration > 0
    ex._show_status()
    assert ex.status.object.startswith("training") and not ex.spinner.visible
