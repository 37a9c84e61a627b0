"""A trainer's state as a value (``PCDTrainer.state()`` / ``restore()``): training split
across round trips, in this process and through a worker process, gives the numbers of
one uninterrupted run bit for bit, and a state is not changed by the training after it."""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pytest

from aggmrf_explore import privacy
from aggmrf_explore.callbacks import TimeBox
from aggmrf_explore.mrf import PCDTrainer, TrainerState, default_settings

SLICES = (1, 7, 3, 12, 5)  # several sizes; the held-out NLLH every 4 iterations


def _trainer(problem, noisy: bool = False, **over) -> PCDTrainer:
    data = problem.aggregated
    settings = default_settings(problem.layout, data.n, n_gibbs=2_000, seed=7, eval_every=4)
    # the iterate average from iteration 6 on, and momentum: both carry state of their own
    settings = replace(settings, average_start=6, momentum=0.3, **over)
    if noisy:  # MRF-N: noise-aware targets, refreshed every few iterations
        mech = privacy.make_mechanism("laplace", 1.0, layout=problem.layout)
        data = privacy.release(data, mech, 11)
        settings = replace(settings, noise_aware=True, noise_refresh=3)
    enc = problem.encoded
    return PCDTrainer(data, settings, enc.X_test, enc.y_test)


def _assert_same(a: PCDTrainer, b: PCDTrainer) -> None:
    """Every array and counter the two trainers report, compared exactly."""
    assert a.iteration == b.iteration and a.n_averaged == b.n_averaged
    assert a.average_from == b.average_from and a.status == b.status
    for name in ("mu", "theta", "d_hat", "c_hat"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.model.mu, b.model.mu) and np.array_equal(a.model.theta, b.model.theta)
    assert np.array_equal(a.chain.codes, b.chain.codes)
    assert a.last_nllh == b.last_nllh
    assert a.settings == b.settings
    timeless = [{**asdict(s), "seconds": 0.0} for s in a.history]
    assert timeless == [{**asdict(s), "seconds": 0.0} for s in b.history]


@pytest.mark.parametrize("noisy", [False, True], ids=["exact", "MRF-N"])
def test_round_trips_through_fresh_trainers_give_the_uninterrupted_run(toy_problem, noisy):
    straight = _trainer(toy_problem, noisy)
    split = _trainer(toy_problem, noisy)
    for k in SLICES:
        straight.step(k)
        split.step(k)
        # the state, and only the state, goes on: a fresh trainer on the same data
        fresh = _trainer(toy_problem, noisy)
        fresh.restore(split.state(), split.history)
        split = fresh
    assert straight.n_averaged > 0 and straight.last_nllh is not None
    # a change between slices travels too (it restarts the average)
    straight.update(step_theta=straight.settings.step_theta / 2)
    split.update(step_theta=split.settings.step_theta / 2)
    state, history = split.state(), split.history
    split = _trainer(toy_problem, noisy)
    split.restore(state)  # (no statistics given: the history starts empty)
    assert split.history == [] and split.iteration == sum(SLICES)
    split.restore(state, history)
    straight.step(9)
    split.step(9)
    assert split.iteration == len(split.history) == sum(SLICES) + 9
    _assert_same(straight, split)


def test_a_state_is_a_value_that_training_on_does_not_change(toy_problem):
    t = _trainer(toy_problem)
    t.step(8)
    state = t.state()
    theta = state.theta.copy()
    codes = state.chain.codes.copy()
    t.step(6)  # the trainer goes on: the state stays as it was taken
    assert state.iteration == 8 and np.array_equal(state.theta, theta)
    assert np.array_equal(state.chain.codes, codes)
    # restored twice, it gives the same run twice (restore copies it)
    first, second = _trainer(toy_problem), _trainer(toy_problem)
    first.restore(state, t.history[:8])
    first.step(6)
    second.restore(state, t.history[:8])
    second.step(6)
    _assert_same(first, t)
    _assert_same(second, t)


def test_the_state_holds_everything_training_and_update_rebind(toy_problem):
    """Each attribute that stepping, a divergence-free ``update`` or the noise-aware
    refresh rebinds is a field of the state (a new attribute of the trainer that changes
    while it trains must join ``TrainerState``, or a worker would lose it)."""
    t = _trainer(toy_problem, noisy=True)
    before = dict(vars(t))
    t.step(5)
    t.update(lambda_theta=t.settings.lambda_theta * 2)
    t.step(5)
    rebound = {name.lstrip("_") for name, v in vars(t).items() if before.get(name) is not v}
    assert rebound, "nothing changed"
    assert rebound <= set(TrainerState._fields), rebound - set(TrainerState._fields)


def test_slices_here_and_in_a_worker_give_the_uninterrupted_run(toy_problem, worker):
    straight = _trainer(toy_problem, noisy=True)
    split = _trainer(toy_problem, noisy=True)
    for i, k in enumerate(SLICES):
        straight.step(k)
        if i % 2 == 0:  # in the worker: the state comes back as a value
            box = TimeBox(None)
            worker.run_steps(split, k, box)
            assert [s.iteration for s in box.stats] == [s.iteration for s in straight.history[-k:]]
        else:  # here, on a fresh trainer restored from the state
            fresh = _trainer(toy_problem, noisy=True)
            fresh.restore(split.state(), split.history)
            fresh.step(k)
            split = fresh
    _assert_same(straight, split)
