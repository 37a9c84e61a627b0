"""MRF-N's per-table prior on the label's interactions, learnt from the noisy release alone
(``aggmrf_explore.mrfn``; ``TrainerSettings.table_prior``).

Records are drawn with a known interaction on one pair of features only (a logit effect of
sd 0.6 per cell of (x0, x1)); the estimator sees the noisy tables and σ.  It must find that
table's variance and see none in the two others, which a noise term left out of the
moment equation (or a wrong σ) breaks: the noise then reads as interaction everywhere."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from aggmrf_explore import TableLayout, aggregate
from aggmrf_explore.mrf import PCDTrainer
from aggmrf_explore.mrfn import interaction_variance, table_penalties
from aggmrf_explore.privacy import GaussianMechanism
from aggmrf_explore.trainer_settings import cell_penalty_weights, default_settings

M = 12  # values per feature
TAU = 0.6  # sd of the (x0, x1) cells' logit effects


def _release(sigma: float, seed: int):
    """(noisy release with σ = ``sigma``, exact aggregates, the drawn effects u (M, M))."""
    rng = np.random.default_rng(seed)
    n = 150_000
    X = rng.integers(0, M, size=(n, 3))
    w = rng.normal(0.0, 0.4, (3, M))
    u = rng.normal(0.0, TAU, (M, M))
    logit = -1.5 + w[0, X[:, 0]] + w[1, X[:, 1]] + w[2, X[:, 2]] + u[X[:, 0], X[:, 1]]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    lay = TableLayout.all_pairs([M] * 3)
    agg = aggregate(X, y, lay)
    rel = lay.released
    d, c = agg.d.astype(float), agg.c.astype(float)
    d[rel] += rng.normal(0.0, sigma, rel.sum())
    c[rel] += rng.normal(0.0, sigma, rel.sum())
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    return replace(agg, d=d, c=c, noise=mech.scaled(sigma / mech.sigma)), agg, u


@pytest.mark.parametrize("seed", [0, 1])
def test_the_interacting_table_is_found_above_the_noise_and_the_others_are_not(seed):
    """σ = 30 against cells of ≈ 1 000 records and ≈ 200 positives.  (x0, x1): τ̂² within 40 %
    of the drawn effects' variance (what the singles do not absorb) and its lower bound
    above 0; (x0, x2) and (x1, x2): |τ̂²| < 2 se.  Without the σ² term each null table
    reads τ̂² ≈ 900/200² ≈ 0.1 per cell: far outside."""
    data, _, u = _release(30.0, seed)
    lay = data.layout
    est = interaction_variance(data, 30.0)
    target = np.var(u - u.mean(0) - u.mean(1)[:, None] + u.mean())  # no single absorbs this
    tau2, se = est[lay.table_index((0, 1))]
    assert tau2 == pytest.approx(target, rel=0.4)
    assert tau2 - 2.0 * se > 0.0
    for t in ((0, 2), (1, 2)):
        tau2, se = est[lay.table_index(t)]
        assert abs(tau2) < 2.0 * se, (t, tau2, se)
        assert se < 0.1 * target  # the bound is informative, not vacuous


def test_table_penalties_name_only_the_interacting_table():
    data, agg, u = _release(30.0, 0)
    lay = data.layout
    lam = table_penalties(data, 30.0)
    assert set(lam) == {lay.table_index((0, 1))}  # the null tables are not the release's to set
    tau2, se = interaction_variance(data, 30.0)[lay.table_index((0, 1))]
    assert lam[lay.table_index((0, 1))] == pytest.approx(0.5 / (tau2 - 2.0 * se))
    assert 1.0 < lam[lay.table_index((0, 1))] < 10.0
    assert table_penalties(data, 30.0, lo=8.0)[lay.table_index((0, 1))] == 8.0
    # the exact tables (σ = 0) see the same interaction, more sharply
    exact = interaction_variance(agg, 0.0)
    t01 = lay.table_index((0, 1))
    assert exact[t01][1] < se and exact[t01][0] == pytest.approx(tau2, rel=0.4)


def test_the_trainer_carries_the_table_penalties_only_with_table_prior():
    """``table_prior``: the θ rows of the interacting table get at most λ_t/λ_θ
    (cell_penalty_weights, and the trainer's penalty); every other row keeps the per-row
    rule; the plain MRF, a release whose noise does not raise λ and the default (table_prior
    off) are untouched."""
    data, agg, _ = _release(30.0, 0)
    lay = data.layout
    st = default_settings(lay, data.n, noise_sd=30.0, noise_aware=True, table_prior=True)
    assert st.lambda_theta == 3.0  # T = 6: min(T/2, 50)
    _, m_theta = cell_penalty_weights(data, st)
    _, m_rows = cell_penalty_weights(data, replace(st, table_prior=False))
    t01 = lay.table_index((0, 1))
    rows = np.zeros(lay.K, dtype=bool)
    rows[lay.offsets[t01] : lay.offsets[t01 + 1]] = True
    lam_t = table_penalties(data, 30.0)[t01]
    np.testing.assert_allclose(m_theta[rows], np.minimum(m_rows[rows], lam_t / st.lambda_theta))
    np.testing.assert_array_equal(m_theta[~rows], m_rows[~rows])
    big = rows & (m_rows > 1.0)  # rows the per-row rule raised to λ_A = ½·30·√6 = 36.7
    assert big.any() and (m_theta[big] < m_rows[big]).all()
    trainer = PCDTrainer(data, st)
    rel = lay.released
    np.testing.assert_allclose(trainer.penalty.reg_theta[rel], m_theta[rel])
    assert all((m == 1.0).all() for m in cell_penalty_weights(data, replace(st, noise_aware=False)))
    faint = replace(data, noise=data.noise.scaled(0.01 / 30.0))  # σ = 0.01: λ stays the rule's
    assert all((m == 1.0).all() for m in cell_penalty_weights(faint, st))
    assert not default_settings(lay, data.n, noise_sd=30.0, noise_aware=True).table_prior
