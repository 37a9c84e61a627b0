"""The exact max-ent solver: XOR's known answer, Lemma 2, and naive Bayes as a special case."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logsumexp

from aggmrf_explore import AggMRFError, AggregatedData, TableLayout, aggregate
from aggmrf_explore.datasets import xor_distribution, xor_expected_tables, xor_states
from aggmrf_explore.exact import all_states, expected_statistics, fit_exact
from aggmrf_explore.mrf import Params, PCDTrainer, Targets, default_settings, pcd_update


def test_xor_maxent_predicts_09_01():
    agg, states, dist = xor_expected_tables(), xor_states(), xor_distribution()
    model = fit_exact(agg)
    p = model.predict_proba(states)[:, 1]
    support = dist["p_x"].to_numpy() > 0
    x3 = states[:, 2]
    np.testing.assert_allclose(p[support & (x3 == 1)], 0.9, atol=1e-3)
    np.testing.assert_allclose(p[support & (x3 == 0)], 0.1, atol=1e-3)
    # while the truth is 0.75 / 0.25
    np.testing.assert_allclose(dist["p_y1"][support & (x3 == 1)], 0.75)


def test_optimum_matches_data_lemma_2(toy_problem):
    """Unregularised optimum: E[D] = d and E[C] = c (up to the zero cells)."""
    agg = toy_problem.aggregated
    model = fit_exact(agg, lambda_mu=1e-6, lambda_theta=1e-6)
    Ed, Ec = expected_statistics(agg.layout, model.mu, model.theta, agg.n)
    np.testing.assert_allclose(Ed, agg.d, atol=2e-2)
    np.testing.assert_allclose(Ec, agg.c, atol=2e-2)


def test_lemma_2_gradient_of_full_loglikelihood(toy_problem):
    """∇ of the full-data log-likelihood equals d − E[D] and c − E[C] (finite differences)."""
    agg = toy_problem.aggregated
    lay = agg.layout
    X, y = toy_problem.encoded.X_train, toy_problem.encoded.y_train
    rng = np.random.default_rng(0)
    mu, theta = rng.normal(0, 0.5, lay.K), rng.normal(0, 0.5, lay.K)
    states = all_states(lay)
    S = lay.rows(states)
    R = lay.rows(X)

    def loglik(mu, theta):
        a, b = mu[S].sum(1), theta[S].sum(1)
        logZ = logsumexp(np.concatenate([a, a + b]))
        return float(np.sum(mu[R].sum(1) + y * theta[R].sum(1)) - len(y) * logZ)

    Ed, Ec = expected_statistics(lay, mu, theta, agg.n)
    h = 1e-6
    for k in range(lay.K):
        e = np.zeros(lay.K)
        e[k] = h
        g_mu = (loglik(mu + e, theta) - loglik(mu - e, theta)) / (2 * h)
        g_th = (loglik(mu, theta + e) - loglik(mu, theta - e)) / (2 * h)
        assert g_mu == pytest.approx(agg.d[k] - Ed[k], abs=1e-5)
        assert g_th == pytest.approx(agg.c[k] - Ec[k], abs=1e-5)


def test_singles_only_maxent_is_naive_bayes(random_layout_data):
    """With single tables only, max-ent = naive Bayes P(y) Π_f P(x_f | y)."""
    _, X, y, _ = random_layout_data
    lay = TableLayout.all_pairs([2, 3, 4], pairs=False)
    agg = aggregate(X, y, lay)
    model = fit_exact(agg)
    states = all_states(lay)
    p_nb = []
    for s in states:
        num = [
            np.mean(y == v) * np.prod([np.mean(X[y == v, f] == s[f]) for f in range(3)])
            for v in (0, 1)
        ]
        p_nb.append(num[1] / (num[0] + num[1]))
    np.testing.assert_allclose(model.predict_proba(states)[:, 1], p_nb, atol=1e-4)


def test_too_large_state_space():
    lay = TableLayout.all_pairs([100] * 4)
    agg = AggregatedData(lay, np.ones(lay.K), np.zeros(lay.K), 10)
    with pytest.raises(AggMRFError, match="exact enumeration is limited"):
        fit_exact(agg)


@pytest.mark.parametrize("intercept", [True, False])
def test_same_objective_as_the_trainer(random_layout_data, intercept):
    """fit_exact minimises what PCD does: at the exact regularised optimum, the trainer's
    update fed exact expectations has g_μ = 0 and g_θ = 0 (unbiased and true gradients;
    intercept unpenalised in both), while the paper's ratio still pushes θ."""
    _, X, y, _ = random_layout_data
    lay = TableLayout.all_pairs([2, 3, 4], intercept=intercept)
    agg = aggregate(X[:600], y[:600], lay)
    lam_mu, lam_theta = 2.0, 7.0
    model = fit_exact(agg, lam_mu, lam_theta)
    Ed, Ec = expected_statistics(lay, model.mu, model.theta, agg.n)
    base = default_settings(lay, agg.n, lambda_mu=lam_mu, lambda_theta=lam_theta)
    penalty = PCDTrainer(agg, base).penalty
    assert penalty.intercept == intercept and penalty.reg_theta[0] == (0.0 if intercept else 1.0)
    grads = {}
    for g in ("rescaled", "true", "rescaled-paper"):
        st = replace(base, gradient=g)
        upd = pcd_update(Params(model.mu, model.theta), Ed, Ec, Targets(agg.d, agg.c), st, penalty)
        grads[g] = upd
    for g in ("rescaled", "true"):
        np.testing.assert_allclose(grads[g].g_mu, 0.0, atol=1e-5 * agg.n)
        np.testing.assert_allclose(grads[g].g_theta, 0.0, atol=1e-5 * agg.n)
    assert np.abs(grads["rescaled-paper"].g_theta).max() > 15 * 1e-5 * agg.n
