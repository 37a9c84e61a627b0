"""The PCD trainer: XOR against the exact solver, a well-specified synthetic model,
determinism across thread counts, edge cases (zero and negative counts) and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from aggmrf_explore import AggMRFError, AggregatedData, DivergenceError
from aggmrf_explore.baselines import logistic_pairs
from aggmrf_explore.callbacks import HeldOutNLLH, Progress, StopTraining
from aggmrf_explore.datasets import xor_distribution, xor_expected_tables, xor_states
from aggmrf_explore.exact import fit_exact
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.metrics import nllh
from aggmrf_explore.mrf import PCDTrainer, TrainerSettings, default_settings


def test_xor_pcd_close_to_exact_maxent(xor_problem):
    agg_inf, states, dist = xor_expected_tables(), xor_states(), xor_distribution()
    exact = fit_exact(agg_inf).predict_proba(states)[:, 1]
    st = default_settings(xor_problem.layout, xor_problem.n_train, lambda_theta=0.0)
    run = train_mrf(xor_problem, st, 300)
    p = run.trainer.predict_proba(states)[:, 1]
    support = dist["p_x"].to_numpy() > 0
    np.testing.assert_allclose(p[support], exact[support], atol=0.03)


def test_xor_logistic_recovers_truth(xor_problem):
    enc = xor_problem.encoded
    res = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, xor_problem.layout)
    states, dist = xor_states(), xor_distribution()
    lr = res.info["model"]
    p = lr.predict_proba(lr.layout_.phi(states))[:, 1]
    support = dist["p_x"].to_numpy() > 0
    np.testing.assert_allclose(p[support], dist["p_y1"].to_numpy()[support], atol=0.02)


def test_synthetic_well_specified_matches_truth():
    problem = prepare("synthetic", n=20_000, seed=3)
    enc = problem.encoded
    run = train_mrf(problem, default_settings(problem.layout, problem.n_train), 400)
    p = run.trainer.predict_proba(enc.X_test)[:, 1]
    assert np.mean(np.abs(p - enc.true_proba_test)) <= 0.02
    lr = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, problem.layout)
    assert abs(run.nllh_test - lr.nllh_test) <= 0.005
    assert nllh(enc.y_test, enc.true_proba_test) > 0.05  # the task is not trivial


_DETERMINISM = """
import hashlib, numpy as np
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import default_settings
pb = prepare("synthetic", n=4000, seed=1)
run = train_mrf(pb, default_settings(pb.layout, pb.n_train, n_gibbs=3000, seed=5), 15)
tr = run.trainer
h = hashlib.sha256(tr.theta.tobytes() + tr.mu.tobytes() + tr.chain.codes.tobytes()).hexdigest()
print(h)
"""


def test_same_seed_same_numbers_with_1_and_2_threads():
    out = []
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads}
        res = subprocess.run(
            [sys.executable, "-c", _DETERMINISM],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr
        out.append(res.stdout.strip())
    assert out[0] == out[1]


def test_seed_changes_the_chain(xor_problem):
    a = PCDTrainer(xor_problem.aggregated, default_settings(xor_problem.layout, 1000, seed=1))
    b = PCDTrainer(xor_problem.aggregated, default_settings(xor_problem.layout, 1000, seed=2))
    a.step(3)
    b.step(3)
    assert not np.array_equal(a.chain.codes, b.chain.codes)
    c = PCDTrainer(xor_problem.aggregated, default_settings(xor_problem.layout, 1000, seed=1))
    c.step(3)
    assert np.array_equal(a.theta, c.theta)


def test_zero_counts_and_zero_estimates_give_no_nan(random_layout_data):
    lay, X, y, agg = random_layout_data
    d = agg.d.copy()
    c = agg.c.copy()
    # empty a whole row in every pair table containing feature 2's last modality
    keep = X[:, 2] != 3
    from aggmrf_explore import aggregate

    agg0 = aggregate(X[keep], y[keep], lay)
    for gradient in ("rescaled", "true"):
        for lam in (0.0, 1.0):
            st = default_settings(
                lay, agg0.n, n_gibbs=500, lambda_mu=lam, lambda_theta=lam, gradient=gradient
            )
            tr = PCDTrainer(agg0, st)
            tr.step(30)
            assert np.all(np.isfinite(tr.mu)) and np.all(np.isfinite(tr.theta))
            assert np.any(agg0.d == 0)
    assert d.sum() > 0 and c.sum() > 0


def test_negative_noisy_counts_are_projected(random_layout_data):
    lay, X, y, agg = random_layout_data
    rng = np.random.default_rng(0)
    noisy = AggregatedData(
        lay, agg.d + rng.normal(0, 600, lay.K), agg.c + rng.normal(0, 600, lay.K), agg.n
    )
    assert np.any(noisy.d < 0) and np.any(noisy.c > noisy.d)
    tr = PCDTrainer(noisy, default_settings(lay, agg.n, n_gibbs=500))
    stats = tr.step(20)
    assert np.all(np.isfinite(tr.theta)) and all(np.isfinite(s.d_error) for s in stats)
    # targets never negative and c ≤ d: no silent sign flip of the θ gradient
    assert np.all(tr._projected.d >= 0) and np.all(tr._projected.c <= tr._projected.d)


def test_true_vs_rescaled_gradient_both_train():
    problem = prepare("synthetic", n=5000, seed=2)
    enc = problem.encoded
    for gradient in ("rescaled", "true"):
        st = default_settings(problem.layout, problem.n_train, gradient=gradient, n_gibbs=3000)
        tr = PCDTrainer(problem.aggregated, st, enc.X_test, enc.y_test)
        stats = tr.step(60)
        assert stats[-1].nllh_eval > stats[0].nllh_eval + 0.02
        assert stats[-1].d_error < stats[0].d_error


def test_update_applies_at_next_iteration(xor_problem):
    tr = PCDTrainer(
        xor_problem.aggregated, default_settings(xor_problem.layout, 1000, n_gibbs=1000)
    )
    tr.step(2)
    tr.update(step_theta=0.02, lambda_theta=3.0)
    s = tr.step(1)[0]
    assert (s.step_theta, s.lambda_theta) == (0.02, 3.0)
    with pytest.raises(AggMRFError, match="cannot change mid-run"):
        tr.update(n_gibbs=10)
    with pytest.raises(AggMRFError, match="step_mu"):
        tr.update(step_mu=-1.0)
    assert tr.settings.step_mu > 0  # the bad value was not applied


def test_divergence_is_reported_in_words(xor_problem):
    st = default_settings(
        xor_problem.layout, 1000, n_gibbs=500, step_mu=40.0, step_theta=40.0, lambda_mu=0.0
    )
    tr = PCDTrainer(xor_problem.aggregated, st)
    with pytest.raises(DivergenceError, match="diverged.*Reduce the step sizes"):
        tr.step(200)
    assert np.all(np.isfinite(tr.theta))


@pytest.mark.parametrize(
    "change, match",
    [
        ({"n_gibbs": 0}, "n_gibbs"),
        ({"lambda_theta": -1.0}, "lambda_theta"),
        ({"lambda_mu": float("nan")}, "lambda_mu"),
        ({"step_mu": 0.0}, "step_mu"),
        ({"gradient": "steepest"}, "gradient"),
        ({"noise_refresh": 0}, "noise_refresh"),
    ],
)
def test_bad_settings(change, match):
    with pytest.raises(AggMRFError, match=match):
        replace(TrainerSettings(), **change).validate()


def test_noise_aware_needs_noise(xor_problem):
    with pytest.raises(AggMRFError, match="noisy release"):
        PCDTrainer(xor_problem.aggregated, TrainerSettings(noise_aware=True))


def test_default_rule_is_a_function_of_the_layout(xor_problem):
    st = default_settings(xor_problem.layout, xor_problem.n_train)
    T = xor_problem.layout.n_released_tables
    assert st.step_theta == pytest.approx(1 / T)
    assert st.lambda_theta == pytest.approx(T / 2)
    assert st.step_mu == pytest.approx(min(5 / T, 1 / 3))


def test_one_loop_with_callbacks(xor_problem):
    """fit/step call every callback cb(trainer, stats) after each iteration, after the
    trainer's own history and held-out NLLH; Progress reports; StopTraining ends a run."""
    enc = xor_problem.encoded
    st = default_settings(xor_problem.layout, xor_problem.n_train, n_gibbs=500, eval_every=3)
    tr = PCDTrainer(xor_problem.aggregated, st, enc.X_test, enc.y_test)
    seen, reports = [], []

    def watch(trainer, stats):
        assert trainer is tr and trainer.history[-1] is stats
        seen.append((stats.iteration, stats.nllh_eval is not None))

    assert tr.fit(0) is tr and tr.iteration == 0
    tr.fit(7, [Progress(lambda done, total: reports.append((done, total)), 7, n_reports=3), watch])
    assert reports == [(2, 7), (4, 7), (6, 7), (7, 7)]
    assert seen == [(i, i in (1, 3, 6)) for i in range(1, 8)]
    assert tr.last_nllh == tr.history[5].nllh_eval and len(tr.history_frame()) == 7

    def stop_at_9(trainer, stats):
        if trainer.iteration == 9:
            raise StopTraining

    out = tr.step(10, [stop_at_9])
    assert [s.iteration for s in out] == [8, 9] and tr.iteration == 9 and len(tr.history) == 9


def test_held_out_nllh_callback_matches_the_model(xor_problem):
    enc = xor_problem.encoded
    tr = PCDTrainer(xor_problem.aggregated, default_settings(xor_problem.layout, 1000, n_gibbs=500))
    held = HeldOutNLLH(enc.X_test, enc.y_test, every=2)
    stats = tr.step(4, [held])
    assert [s.nllh_eval is not None for s in stats] == [True, True, False, True]
    assert held.last == nllh(enc.y_test, tr.predict_proba(enc.X_test)[:, 1])
    assert tr.last_nllh == held.last
    with pytest.raises(AggMRFError, match="one label per row"):
        HeldOutNLLH(enc.X_test, enc.y_test[:-1])
