"""The PCD trainer against the exact regularised optimum (XOR, generated problems, exact
expectations), determinism across thread counts, iterate averaging, divergence, edge cases
(zero and negative counts) and bad input."""

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
from aggmrf_explore.datasets import xor_distribution, xor_states
from aggmrf_explore.exact import all_states, fit_exact
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.metrics import nllh
from aggmrf_explore.mrf import (
    GRADIENTS,
    MRFModel,
    Params,
    PCDTrainer,
    Targets,
    TrainerSettings,
    default_gibbs,
    default_iterations,
    default_settings,
    divergence,
    pcd_update,
    sigmoid,
)


def _max_gap(model, exact, states, support=None):
    """max |P(Y=1|x) − P_exact(Y=1|x)| over ``states`` (optionally only where ``support``)."""
    gap = np.abs(model.predict_proba(states)[:, 1] - exact.predict_proba(states)[:, 1])
    return float(gap[support].max() if support is not None else gap.max())


def test_default_rule_lambda_theta_and_iterations():
    """λθ = T/2 up to T = 100, then 50 (each θ's prior sd stays ≥ 0.1); no momentum, the
    gauge step on; iterations max(3000, ⌈6/α_θ⌉), following an overridden α_θ
    (docs/bank_gap.md, docs/out_of_sample.md)."""
    from aggmrf_explore.tables import TableLayout

    got = {}
    for D in (3, 13, 14, 20):  # T = D(D+1)/2 = 6, 91, 105, 210
        lay = TableLayout.all_pairs([3] * D)
        st = default_settings(lay, 30_000)
        T = lay.n_released_tables
        got[T] = (st.lambda_theta, st.step_theta * T, st.momentum, st.gauge, default_iterations(st))
    assert got == {
        6: (3.0, 1.0, 0.0, True, 3000),
        91: (45.5, 1.0, 0.0, True, 3000),
        105: (50.0, 1.0, 0.0, True, 3000),
        210: (50.0, 1.0, 0.0, True, 3000),
    }
    lay = TableLayout.all_pairs([3] * 20)
    assert default_iterations(default_settings(lay, 10, step_theta=0.0001)) == 60000
    assert default_settings(lay, 10, lambda_theta=7.0).lambda_theta == 7.0


def test_default_rule_gibbs_samples():
    """n' = max(10 000, min(⌈n/10⌉, 400 000)): the paper's 10 000 up to 10⁵ records
    (Adult and Bank, and small data: no cap at n), one sample per 10 records up to the
    paper's Criteo 400 000; an explicit n_gibbs wins."""
    from aggmrf_explore.tables import TableLayout

    got = {n: default_gibbs(n) for n in (0, 1, 5_000, 32_561, 100_000, 100_001, 10**6, 10**8)}
    assert got == {
        0: 10_000,
        1: 10_000,
        5_000: 10_000,
        32_561: 10_000,
        100_000: 10_000,
        100_001: 10_001,
        10**6: 100_000,
        10**8: 400_000,
    }
    lay = TableLayout.all_pairs([3] * 4)
    assert default_settings(lay, 300_000).n_gibbs == 30_000
    assert default_settings(lay, 28_832).n_gibbs == 10_000
    assert default_settings(lay, 300_000, n_gibbs=123).n_gibbs == 123


def test_default_rule_sweep_sites():
    """Every feature in every sweep below 400 000 Gibbs samples; from there on a random
    tenth of them (at least one), from the n' actually used; an explicit value wins, and
    the trainer's MH chain sweeps exactly that many features."""
    from functools import partial

    from aggmrf_explore.kernels import MHGibbsChain
    from aggmrf_explore.tables import TableLayout, aggregate
    from aggmrf_explore.trainer_settings import default_sweep_sites

    assert [default_sweep_sites(d, 400_000) for d in (1, 5, 10, 19, 40)] == [1, 1, 1, 2, 4]
    assert default_sweep_sites(19, 399_999) is None
    lay = TableLayout.all_pairs([3] * 19)
    assert default_settings(lay, 10**7).sweep_sites == 2
    assert default_settings(lay, 10**6).sweep_sites is None  # n' = 10⁵
    assert default_settings(lay, 10**6, n_gibbs=400_000).sweep_sites == 2
    assert default_settings(lay, 10**7, n_gibbs=1_000).sweep_sites is None
    assert default_settings(lay, 10**7, sweep_sites=None).sweep_sites is None
    small = TableLayout.all_pairs([3, 300])
    rng = np.random.default_rng(0)
    X = np.stack([rng.integers(0, 3, 3000), rng.integers(0, 300, 3000)], axis=1)
    data = aggregate(X.astype(np.int32), (rng.random(3000) < 0.3).astype(np.int8), small)
    every = partial(MHGibbsChain, use_mh=np.array([True, True]))  # both features by MH
    for sites, proposed in ((1, 64), (None, 128)):
        st = default_settings(small, 3000, n_gibbs=64, sweep_sites=sites)
        tr = PCDTrainer(data, st, chain_factory=every)
        tr.step(1)
        assert tr.chain.proposed.sum() == proposed
    with pytest.raises(AggMRFError, match="sweep_sites"):
        default_settings(lay, 10**7, sweep_sites=0)
    with pytest.raises(AggMRFError, match="cannot change mid-run"):
        tr.update(sweep_sites=1)


def test_xor_pcd_matches_the_exact_regularised_optimum():
    """λ_θ = 20 on 2 000 records moves P(Y=1|x) by ≈ 0.05, so a wrong penalty shows; the
    averaged PCD lands within 1e-3 of fit_exact with the same penalties, and within 3e-3
    already after 100 iterations (the preconditioner: without it the gap is ≈ 0.01 there)."""
    pb = prepare("xor", n=2000, seed=0)
    states, support = xor_states(), xor_distribution()["p_x"].to_numpy() > 0
    exact = fit_exact(pb.aggregated, lambda_mu=1.0, lambda_theta=20.0)
    assert _max_gap(fit_exact(pb.aggregated), exact, states, support) > 0.04
    st = default_settings(
        pb.layout,
        pb.aggregated.n,
        n_gibbs=10_000,
        lambda_mu=1.0,
        lambda_theta=20.0,
        gradient="rescaled",
        average=True,
    )
    tr = PCDTrainer(pb.aggregated, st).fit(100)
    assert _max_gap(tr.model, exact, states, support) < 3e-3
    tr.fit(1400)
    assert _max_gap(tr.model, exact, states, support) < 1e-3


def _exact_expectation_run(pb, settings, iterations):
    """PCD's update fed exact E[D], E[C] (no Monte Carlo): its deterministic fixed point."""
    lay, agg = pb.layout, pb.aggregated
    rows = lay.rows(all_states(lay))
    tr = PCDTrainer(agg, settings)  # for the initial values and the penalty masks
    mu, theta = tr.mu, tr.theta
    for _ in range(iterations):
        a, b = mu[rows].sum(1), theta[rows].sum(1)
        log_px = a + np.logaddexp(0.0, b)
        px = np.exp(log_px - log_px.max())
        px *= agg.n / px.sum()
        Ed = np.bincount(rows.ravel(), np.repeat(px, rows.shape[1]), lay.K)
        Ec = np.bincount(rows.ravel(), np.repeat(px * sigmoid(b), rows.shape[1]), lay.K)
        upd = pcd_update(Params(mu, theta), Ed, Ec, Targets(agg.d, agg.c), settings, tr.penalty)
        mu, theta = upd.params
    return MRFModel(lay, mu, theta)


def test_fixed_point_with_exact_expectations():
    """With exact expectations the unbiased ratio's fixed point is the exact
    regularised optimum; the paper's ratio stops ≈ 1e-3 away (XOR, n = 500, λ_μ = 1)."""
    pb = prepare("xor", n=500, seed=0)
    states, support = xor_states(), xor_distribution()["p_x"].to_numpy() > 0
    exact = fit_exact(pb.aggregated, lambda_mu=1.0, lambda_theta=20.0)
    gaps = {}
    for gradient in ("rescaled", "rescaled-paper"):
        st = default_settings(
            pb.layout, pb.aggregated.n, lambda_mu=1.0, lambda_theta=20.0, gradient=gradient
        )
        model = _exact_expectation_run(pb, st, 2000)
        gaps[gradient] = _max_gap(model, exact, states, support)
    assert gaps["rescaled"] < 2e-5
    assert gaps["rescaled-paper"] > 5e-4


def test_averaged_pcd_reaches_the_regularised_optimum_on_a_generated_problem():
    """Must-show 1 in small (benchmarks/fixed_point.py has the three problems): 5 binary
    features, all pairs, n = 1 000, λ_μ = 1, λ_θ = T/2, n' = 10 000.  The averaged PCD with the
    unbiased ratio lands within 2e-3 of the exact regularised optimum over every state; the
    paper's ratio lands measurably further away."""
    pb = prepare("synthetic", n=1000, seed=2, n_features=5, n_modalities=2)
    lay, agg = pb.layout, pb.aggregated
    base = default_settings(lay, agg.n, n_gibbs=10_000, lambda_mu=1.0, average=True)
    exact = fit_exact(agg, base.lambda_mu, base.lambda_theta)
    states = all_states(lay)
    gaps = {}
    for gradient in ("rescaled", "rescaled-paper"):
        tr = PCDTrainer(agg, replace(base, gradient=gradient)).fit(2000)
        gaps[gradient] = _max_gap(tr.model, exact, states)
    assert gaps["rescaled"] <= 2e-3
    assert gaps["rescaled-paper"] > 2 * gaps["rescaled"] + 1e-3


def test_xor_logistic_recovers_truth(xor_problem):
    enc = xor_problem.encoded
    res = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, xor_problem.layout)
    states, dist = xor_states(), xor_distribution()
    lr = res.info["model"]
    p = lr.predict_proba(lr.layout_.phi(states))[:, 1]
    support = dist["p_x"].to_numpy() > 0
    np.testing.assert_allclose(p[support], dist["p_y1"].to_numpy()[support], atol=0.02)


def test_synthetic_well_specified_default_training():
    """Default settings, 1 500 iterations, on records from a known pairwise MRF: the model is
    within 5e-3 of the exact regularised optimum (same penalties) on every state (without
    the θ-penalty: ≈ 0.01), hence close to the truth and to the logistic skyline."""
    problem = prepare("synthetic", n=20_000, seed=3)
    enc, lay, agg = problem.encoded, problem.layout, problem.aggregated
    st = default_settings(lay, agg.n, gradient="rescaled", average=True)
    run = train_mrf(problem, st, 1500)
    exact = fit_exact(agg, st.lambda_mu, st.lambda_theta)
    assert _max_gap(run.trainer.model, exact, all_states(lay)) < 5e-3
    p = run.trainer.predict_proba(enc.X_test)[:, 1]
    assert np.mean(np.abs(p - enc.true_proba_test)) <= 0.02
    lr = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    assert abs(run.nllh_test - lr.nllh_test) <= 0.005


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
    """Feature 2's last modality never occurs: its cells have d = c = 0.  Every gradient
    trains without NaN, and the model learns that those cells are (nearly) empty."""
    lay, X, y, _ = random_layout_data
    keep = X[:, 2] != 3
    from aggmrf_explore import aggregate

    agg0 = aggregate(X[keep], y[keep], lay)
    empty = agg0.d == 0
    for gradient in GRADIENTS:
        for lam in (0.0, 1.0):
            st = default_settings(
                lay, agg0.n, n_gibbs=500, lambda_mu=lam, lambda_theta=lam, gradient=gradient
            )
            tr = PCDTrainer(agg0, st)
            tr.step(30)
            assert np.all(np.isfinite(tr.mu)) and np.all(np.isfinite(tr.theta))
            assert np.all(np.isfinite(tr.d_hat)) and np.all(np.isfinite(tr.c_hat))
            assert tr.d_hat[empty].max() < 0.01 * agg0.n  # the chain (nearly) never goes there


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
    for gradient in GRADIENTS:
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


def test_divergence_keeps_the_last_good_state_and_training_continues(xor_problem):
    """The step that trips the guard is rejected (nothing is stored), the
    error names the likely cause, and training continues once α_θ is reduced."""
    enc = xor_problem.encoded
    good = default_settings(xor_problem.layout, 1000, n_gibbs=500, average=True, average_start=0)
    tr = PCDTrainer(xor_problem.aggregated, good, enc.X_test, enc.y_test)
    tr.step(5)
    tr.update(step_theta=40.0)
    good_state = {}

    def snapshot(trainer, stats):  # the state after each accepted iteration
        good_state.update(
            mu=trainer.mu.copy(),
            theta=trainer.theta.copy(),
            avg=trainer.averaged.theta,
            d_hat=trainer.d_hat.copy(),
            iteration=trainer.iteration,
            history=len(trainer.history),
            n_averaged=trainer.n_averaged,
        )

    with pytest.raises(DivergenceError, match=r"θ\[\d+\] .*step size α_θ = 40") as err:
        tr.step(20, [snapshot])
    last = good_state["iteration"]
    assert 5 <= last < 25 and tr.iteration == last
    assert f"iteration {last + 1}:" in str(err.value)
    assert f"those of iteration {last}, the last good state" in str(err.value)
    assert tr.status == "diverged" and tr.last_error == str(err.value)
    np.testing.assert_array_equal(tr.mu, good_state["mu"])
    np.testing.assert_array_equal(tr.theta, good_state["theta"])
    np.testing.assert_array_equal(tr.averaged.theta, good_state["avg"])
    np.testing.assert_array_equal(tr.d_hat, good_state["d_hat"])
    assert len(tr.history) == good_state["history"] == last
    assert tr.n_averaged == good_state["n_averaged"]
    assert np.abs(tr.theta).max() <= 50
    tr.update(step_theta=good.step_theta)
    stats = tr.step(60)
    assert tr.iteration == last + 60 and tr.status == "training" and len(tr.history) == last + 60
    assert tr.last_error is None and np.abs(tr.theta).max() < 50
    # the wild θ of the α_θ = 40 iterations is pulled back and the held-out NLLH improves
    # (the default heavy ball on θ swings for its first ~20 iterations, hence 60)
    assert stats[-1].theta_norm < 0.9 * stats[0].theta_norm
    assert stats[-1].nllh_eval > stats[0].nllh_eval + 0.5
    assert tr.n_averaged == 60  # update() restarted the average (average_start=0)


def test_divergence_diagnosis_names_the_cause(random_layout_data):
    """divergence(): '' for an acceptable step; a cell with c = 0 and no θ-penalty → raise
    λ_θ; a penalised cell pushed past the bound → the step size; likewise for μ."""
    lay, _, _, agg = random_layout_data
    st = default_settings(lay, agg.n, lambda_theta=0.0, lambda_mu=0.0)
    tr = PCDTrainer(agg, st)
    d, c = agg.d.copy(), agg.c.copy()
    k = lay.offsets[4] + 1  # a pair cell
    c[k] = 0.0
    upd = pcd_update(Params(tr.mu, tr.theta), d, c, Targets(d, c), st, tr.penalty)
    assert divergence(upd, Targets(d, c), st, lay) == ""
    theta = upd.params.theta.copy()
    theta[k] = -60.0
    bad = upd._replace(params=Params(upd.params.mu, theta))
    msg = divergence(bad, Targets(d, c), st, lay)
    assert f"θ[{k}]" in msg and "no positive label" in msg and "increase λ_θ" in msg
    msg = divergence(bad, Targets(d, c), replace(st, lambda_theta=1e4), lay)
    assert "reduce α_θ" in msg
    mu = upd.params.mu.copy()
    mu[k] = np.nan
    msg = divergence(upd._replace(params=Params(mu, upd.params.theta)), Targets(d, c), st, lay)
    assert f"μ[{k}]" in msg and "became nan" in msg and "reduce α_μ" in msg
    # μ past its bound while the model's count of the row stays far from its target: the
    # message also names contradicting tables (here d̂ = d/2), not when d̂ ≈ d
    mu = upd.params.mu.copy()
    mu[k] = 201.0
    g_mu = upd.g_mu.copy()
    for d_hat, says in ((0.5 * d[k], True), (d[k], False)):
        mu_old = mu[k] + st.step_mu * upd.dir_mu[k]
        g_mu[k] = d_hat - d[k] + 2.0 * st.lambda_mu * mu_old
        drift = upd._replace(params=Params(mu, upd.params.theta), g_mu=g_mu)
        msg = divergence(drift, Targets(d, c), st, lay)
        assert "reduce α_μ" in msg and ("contradict this row" in msg) == says
        assert (f"count of this row is {d_hat:.6g} against its target {d[k]:.6g}" in msg) == says


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


def test_held_out_rows_are_shared_while_held_and_freed_after(xor_problem):
    """Two evaluators of the same records under the same layout share one read-only copy of
    the rows; once nothing holds it, it is freed, and records at a reused address get their
    own rows."""
    import gc
    import weakref

    from aggmrf_explore.callbacks import held_out_rows

    layout, X = xor_problem.layout, xor_problem.encoded.X_test.copy()
    a = HeldOutNLLH(X, xor_problem.encoded.y_test, layout=layout)
    b = HeldOutNLLH(X, xor_problem.encoded.y_test, layout=layout)
    assert a.rows is b.rows and not a.rows.flags.writeable
    np.testing.assert_array_equal(a.rows, layout.rows(X))
    gone = weakref.ref(a.rows)
    del a, b
    gc.collect()
    assert gone() is None, "the rows outlived every evaluator"
    other = X[::-1].copy()  # may take the freed address; must not get X's rows
    np.testing.assert_array_equal(held_out_rows(layout, other), layout.rows(other))
    as_list = X.tolist()  # records as a list, which has no weak reference: rows all the same
    held = HeldOutNLLH(as_list, xor_problem.encoded.y_test, layout=layout)
    np.testing.assert_array_equal(held.rows, layout.rows(X))


def test_iterate_average_rule(xor_problem):
    """The documented rule: the average starts after ⌈2/α_θ⌉ iterations; the j-th iterate
    since then weighs ∝ j(j+1) (w_k = 3/(k+2)); the model is the average, live_model the last
    iterate; update() restarts it except for eval_every / average."""
    enc = xor_problem.encoded
    st = default_settings(xor_problem.layout, 1000, n_gibbs=500, average=True)
    tr = PCDTrainer(xor_problem.aggregated, st, enc.X_test, enc.y_test)
    delay = int(np.ceil(2 / st.step_theta))
    assert tr.average_from == delay == 12
    tr.held_out.live = True
    thetas, mus = [], []

    def keep(trainer, stats):
        thetas.append(trainer.theta.copy())
        mus.append(trainer.mu.copy())

    stats = tr.step(40, [keep])
    assert tr.n_averaged == 40 - delay and [s.n_averaged for s in stats][delay - 1 : delay + 1] == [
        0,
        1,
    ]
    j = np.arange(1, 41 - delay, dtype=float)
    w = j * (j + 1) / np.sum(j * (j + 1))
    np.testing.assert_allclose(tr.averaged.theta, w @ np.array(thetas[delay:]), rtol=1e-12)
    np.testing.assert_allclose(tr.averaged.mu, w @ np.array(mus[delay:]), rtol=1e-12)
    np.testing.assert_array_equal(tr.model.theta, tr.averaged.theta)
    np.testing.assert_array_equal(tr.live_model.theta, thetas[-1])
    # held-out NLLH: of the average (nllh_eval) and of the last iterate (nllh_live)
    assert stats[-1].nllh_eval == nllh(enc.y_test, tr.predict_proba(enc.X_test)[:, 1])
    assert stats[-1].nllh_live == nllh(enc.y_test, tr.live_model.predict_proba(enc.X_test)[:, 1])
    assert stats[0].nllh_live == stats[0].nllh_eval  # before the average starts: one model
    # average=False reports the last iterate (the average is still kept)
    tr.update(average=False, eval_every=2)
    assert tr.n_averaged == 40 - delay
    np.testing.assert_array_equal(tr.model.theta, tr.theta)
    tr.update(average=True, lambda_theta=5.0)  # moves the optimum: restart
    assert tr.n_averaged == 0 and tr.averaged is None and tr.average_from == 40 + delay
    np.testing.assert_array_equal(tr.model.theta, tr.theta)


def test_fit_plans_the_average_over_the_second_half(xor_problem):
    """The first fit(n) since the start or a restart moves the average's start to n/2 when
    that is later than ⌈2/α_θ⌉; later fits, step() and an explicit average_start do not."""
    st = default_settings(xor_problem.layout, 1000, n_gibbs=500)
    rule = int(np.ceil(2 / st.step_theta))
    tr = PCDTrainer(xor_problem.aggregated, st).fit(100)
    assert tr.average_from == 50 > rule and tr.n_averaged == 50
    tr.fit(100)
    assert tr.average_from == 50 and tr.n_averaged == 150
    tr.update(lambda_theta=5.0)  # restart: the next fit plans again
    tr.fit(10)
    assert tr.average_from == 200 + rule  # 10 // 2 < ⌈2/α_θ⌉
    tr = PCDTrainer(xor_problem.aggregated, st)
    tr.step(100)
    assert tr.average_from == rule
    tr = PCDTrainer(xor_problem.aggregated, replace(st, average_start=7)).fit(100)
    assert tr.average_from == 7


def test_train_mrf_scores_and_reports_the_average(xor_problem):
    st = default_settings(xor_problem.layout, 1000, n_gibbs=500, average=True)
    run = train_mrf(xor_problem, st, 30)
    tr = run.trainer
    assert tr.n_averaged == 30 - tr.average_from > 0
    np.testing.assert_array_equal(tr.model.theta, tr.averaged.theta)
    assert not np.array_equal(tr.model.theta, tr.theta)
    enc = xor_problem.encoded
    assert run.nllh_test == nllh(enc.y_test, tr.model.predict_proba(enc.X_test)[:, 1])


def test_the_gauge_step_fits_exact_or_noise_aware_targets_only():
    """Raw noisy counts contradict one another along the directions the model does not see;
    their exact minimum there lies at |μ| ~ noise/2λ_μ, past the divergence bound.  The
    defaults on a declared Laplace release (toy, ε = 0.05: the tables' noise ≫ the counts)
    train without the gauge step and without diverging; noise-aware keeps it."""
    from aggmrf_explore.privacy import make_mechanism, release

    problem = prepare("toy")
    lay, agg = problem.layout, problem.aggregated
    noisy = release(agg, make_mechanism("laplace", epsilon=0.05, layout=lay), seed=5)
    tr = PCDTrainer(noisy, default_settings(lay, noisy.n, n_gibbs=500))
    assert not tr.gauge_active
    tr.step(20)  # (with the gauge step: diverged at iteration 1)
    assert np.all(np.abs(tr.mu) < 200) and np.all(np.isfinite(tr.theta))
    aware = PCDTrainer(noisy, default_settings(lay, noisy.n, n_gibbs=500, noise_aware=True))
    assert aware.gauge_active
    exact = PCDTrainer(agg, default_settings(lay, agg.n, n_gibbs=500))
    assert exact.gauge_active


def test_the_gauge_step_turns_itself_off_on_a_release_that_contradicts_itself():
    """Noise that no release declares (σ = 10⁵ on toy's counts): the first step whose gauge
    minimum would pass the bound goes on without it, instead of diverging."""
    problem = prepare("toy")
    lay, agg = problem.layout, problem.aggregated
    rng = np.random.default_rng(1)
    noisy = AggregatedData(
        lay, agg.d + rng.normal(0, 1e5, lay.K), agg.c + rng.normal(0, 1e5, lay.K), agg.n
    )
    tr = PCDTrainer(noisy, default_settings(lay, agg.n, n_gibbs=500))
    assert tr.gauge_active  # (nothing declared)
    tr.step(5)
    assert not tr.gauge_active and tr.iteration == 5
