"""Steps in a worker process (``trainer_worker``): the same numbers as in this process,
bit for bit, with the shared parts sent once, a divergence and a stop as ``step`` has
them, and a lost worker leaving the trainer as it was."""

from __future__ import annotations

import gc
import os
import signal
from dataclasses import replace

import numpy as np
import pytest

from aggmrf_explore import DivergenceError, privacy
from aggmrf_explore.callbacks import TimeBox
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.trainer_worker import TrainerWorker, WorkerLost


def _trainer(problem, seed: int = 3, noisy: bool = False, **over) -> PCDTrainer:
    data = problem.aggregated
    settings = default_settings(problem.layout, data.n, n_gibbs=2_000, seed=seed, eval_every=4)
    if noisy:
        mech = privacy.make_mechanism("laplace", 1.0, layout=problem.layout)
        data = privacy.release(data, mech, 11)
        settings = replace(settings, noise_aware=True)
    settings = replace(settings, **over)
    enc = problem.encoded
    return PCDTrainer(data, settings, enc.X_test, enc.y_test)


def _same_state(a: PCDTrainer, b: PCDTrainer) -> None:
    assert a.iteration == b.iteration
    for name in ("mu", "theta", "d_hat", "c_hat"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.model.theta, b.model.theta)
    assert np.array_equal(a.chain.codes, b.chain.codes)
    assert a.last_nllh == b.last_nllh
    assert [s.d_error for s in a.history] == [s.d_error for s in b.history]
    assert [s.nllh_eval for s in a.history] == [s.nllh_eval for s in b.history]


@pytest.mark.parametrize("noisy", [False, True], ids=["exact", "MRF-N"])
def test_steps_in_the_worker_are_the_steps_here(toy_problem, worker, noisy):
    # (the iterate average from iteration 6 on: it travels too)
    here = _trainer(toy_problem, noisy=noisy, average_start=6)
    there = _trainer(toy_problem, noisy=noisy, average_start=6)
    for k in (1, 7, 3, 12):  # slices of several sizes, the held-out NLLH every 4
        here.step(k)
        box = TimeBox(None)
        worker.run_steps(there, k, box)
        assert [s.iteration for s in box.stats] == [s.iteration for s in here.history[-k:]]
    assert there.n_averaged > 0
    here.update(momentum=0.5)  # a change between slices goes too (it restarts the average)
    there.update(momentum=0.5)
    here.step(12)
    worker.run_steps(there, 12, TimeBox(None))
    _same_state(here, there)
    assert len(there.history) == 35 and there.n_averaged > 0


def test_shared_parts_go_once_and_are_forgotten_with_their_trainer(toy_problem, worker):
    sizes = []
    send = worker._send.send_bytes

    def record(data):
        sizes.append(len(data))
        return send(data)

    worker._send.send_bytes = record
    try:
        t = _trainer(toy_problem, seed=5)
        worker.run_steps(t, 2, TimeBox(None))
        worker.run_steps(t, 2, TimeBox(None))
        held = set(worker.holding)
        assert held, "nothing was kept in the worker"
        # the second message carries the state only: the held-out rows, the data and the
        # chain's structure stayed in the worker
        assert sizes[1] < sizes[0] - t.held_out.rows.nbytes
        del t
        gc.collect()
        worker.forget_dead()
        # the trainer's own parts are dropped (its named tuples: its data and layout are
        # the problem's, alive in the fixture, and stay for the next trainer on them)
        assert not any(h.startswith("t") for h in worker.holding & held)
    finally:
        worker._send.send_bytes = send


def test_a_divergence_restores_the_last_good_state_then_raises_as_step_does(toy_problem, worker):
    here = _trainer(toy_problem, step_theta=50.0, step_mu=50.0)
    there = _trainer(toy_problem, step_theta=50.0, step_mu=50.0)
    with pytest.raises(DivergenceError) as local:
        here.step(50)
    with pytest.raises(DivergenceError) as remote:
        worker.run_steps(there, 50, TimeBox(None))
    assert str(remote.value) == str(local.value)
    assert there.status == "diverged"
    _same_state(here, there)


def test_a_stop_ends_the_steps_after_the_iteration_under_way(toy_problem, worker):
    t = _trainer(toy_problem)
    asked = []

    def stop() -> bool:  # polled while the worker steps: true from the first poll on
        asked.append(1)
        return True

    box = TimeBox(None, stop=stop)
    worker.run_steps(t, 100_000, box)
    assert asked and 1 <= t.iteration < 100_000
    assert len(box.stats) == t.iteration == len(t.history)


def test_a_lost_worker_leaves_the_trainer_as_it_was(toy_problem):
    w = TrainerWorker()
    assert w.wait_ready(120)
    t = _trainer(toy_problem)
    w.run_steps(t, 3, TimeBox(None))
    theta = t.theta.copy()
    os.kill(w.proc.pid, signal.SIGKILL)
    w.proc.wait()
    with pytest.raises(WorkerLost):
        w.run_steps(t, 3, TimeBox(None))
    assert t.iteration == 3 and np.array_equal(t.theta, theta)
    t.step(2)  # and it trains on here
    assert t.iteration == 5
    w.close()
