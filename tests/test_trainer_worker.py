"""Steps in a worker process (``trainer_worker``): the same numbers as in this process,
bit for bit, with only values sent (a recipe once, then states; never the trainer), the
shared parts sent once, a divergence and a stop as ``step`` has them, and a lost worker
leaving the trainer as it was."""

from __future__ import annotations

import gc
import io
import os
import pickle
import signal
from dataclasses import replace

import numpy as np
import pytest

from aggmrf_explore import DivergenceError, privacy
from aggmrf_explore.callbacks import TimeBox
from aggmrf_explore.mrf import PCDTrainer, TrainerState, default_settings
from aggmrf_explore.trainer_worker import TrainerRecipe, TrainerWorker, WorkerLost


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
        # the second message carries the state only: the held-out records, the data and
        # the chain's structure stayed in the worker, with the copy built from the recipe
        assert sizes[1] < sizes[0] - t.held_out.X.nbytes
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


class _Reader(pickle.Unpickler):
    """Unpickles a message as the worker would, noting every class it names (a token of a
    shared part stays a token)."""

    def __init__(self, data: bytes, classes: set) -> None:
        super().__init__(io.BytesIO(data))
        self.classes = classes

    def find_class(self, module, name):
        self.classes.add(f"{module}.{name}")
        return super().find_class(module, name)

    def persistent_load(self, token):
        return token


def test_what_goes_to_the_worker_is_values_never_the_trainer(toy_problem, worker):
    sent = []
    send = worker._send.send_bytes
    worker._send.send_bytes = lambda data: (sent.append(data), send(data))[1]
    try:
        t = _trainer(toy_problem, seed=9)
        worker.run_steps(t, 2, TimeBox(None))
        worker.run_steps(t, 3, TimeBox(None))
    finally:
        worker._send.send_bytes = send
    classes: set[str] = set()
    recipes, states = [], []
    for message in sent:
        kind, forget, new, key, payload, k, budget = pickle.loads(message)
        assert kind == "step" and isinstance(key, str)
        _Reader(new, classes).load()  # the shared parts: data, layout, records, chain parts
        recipe, state = _Reader(payload, classes).load()
        recipes.append(recipe)
        states.append(state)
    assert isinstance(recipes[0], TrainerRecipe) and recipes[1] is None  # the recipe once
    assert recipes[0].settings == t.initial_settings
    assert all(isinstance(s, TrainerState) for s in states)
    assert [s.iteration for s in states] == [0, 2]
    trainer_like = {c for c in classes if c.rsplit(".", 1)[-1] in ("PCDTrainer", "History")}
    assert not trainer_like and "aggmrf_explore.mrf.PCDTrainer" not in classes, classes
    assert "aggmrf_explore.callbacks.HeldOutNLLH" not in classes


@pytest.mark.parametrize("raw", [True, False], ids=["raw noisy targets", "MRF-N"])
def test_a_trainer_changed_before_its_first_slice_is_rebuilt_as_it_was_built(
    toy_problem, worker, raw
):
    # the recipe holds the settings the trainer was built with (here its targets: the raw
    # noisy values), not those of a later update: the copy's fixed parts are the original's
    over = {"targets": "raw", "noise_aware": False} if raw else {}
    here = _trainer(toy_problem, seed=4, noisy=True, **over)
    there = _trainer(toy_problem, seed=4, noisy=True, **over)
    for t in (here, there):
        t.update(**({"targets": "projected"} if raw else {"lambda_theta": 7.0}))
    here.step(9)
    worker.run_steps(there, 4, TimeBox(None))
    worker.run_steps(there, 5, TimeBox(None))
    _same_state(here, there)
