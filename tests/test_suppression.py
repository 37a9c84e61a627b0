"""Suppressed cells: absent rows as 0 ≤ d ≤ k, in the PCD targets and exactly."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import AggMRFError, TableLayout, aggregate
from aggmrf_explore.exact import all_states, expected_statistics, fit_exact
from aggmrf_explore.metrics import nllh
from aggmrf_explore.mrf import PCDTrainer, default_settings, rescaling_ratio
from aggmrf_explore.tables.suppression import (
    Suppression,
    apply_suppression,
    box_targets,
    suppressed_per_table,
    without_suppression,
)

K_SUPP = 10


def _problem(seed: int = 0, n: int = 3000, M=(8, 6, 4)):
    """A pairwise MRF with Zipf-like marginals (so pair cells ≤ 10 exist); records + test."""
    rng = np.random.default_rng(seed)
    lay = TableLayout.all_pairs(M)
    S = all_states(lay)
    R = lay.rows(S)
    mu = rng.normal(0, 0.5, lay.K)
    th = rng.normal(0, 0.8, lay.K)
    mu[0], th[0] = 0.0, -1.0
    for ti, t in enumerate(lay.tables):
        if len(t) == 1:
            sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
            mu[sl] = -1.2 * np.log(np.arange(1, lay.table_sizes[ti] + 1))
    a, b = mu[R].sum(1), th[R].sum(1)
    p = np.exp(a - a.max())
    p /= p.sum()
    py = 1.0 / (1.0 + np.exp(-b))

    def draw(m):
        i = rng.choice(len(S), size=m, p=p)
        return S[i], (rng.random(m) < py[i]).astype(np.int64)

    X, y = draw(n)
    Xt, yt = draw(100_000)
    agg = aggregate(X, y, lay)
    pairs = [i for i, t in enumerate(lay.tables) if len(t) == 2]
    return agg, apply_suppression(agg, {i: K_SUPP for i in pairs}), Xt, yt


@pytest.fixture(scope="module")
def problem():
    return _problem()


def test_apply_suppression_marks_rows_with_true_count_at_most_k(problem):
    agg, sup, _, _ = problem
    box = sup.suppression
    lay = agg.layout
    pair_rows = np.isin(lay.row_table(), [i for i, t in enumerate(lay.tables) if len(t) == 2])
    np.testing.assert_array_equal(box.rows, pair_rows & (agg.d <= K_SUPP))
    assert box.n_rows > 5
    assert np.all(sup.d[box.rows] == 0) and np.all(sup.c[box.rows] == 0)
    np.testing.assert_array_equal(sup.d[~box.rows], agg.d[~box.rows])
    np.testing.assert_array_equal(box.bound[box.rows], K_SUPP)
    per = suppressed_per_table(sup)
    assert sum(v["suppressed"] for v in per.values()) == box.n_rows
    assert all(v["threshold"] == K_SUPP for v in per.values())
    assert without_suppression(sup).suppression is None
    with pytest.raises(AggMRFError, match="threshold"):
        apply_suppression(agg, {1: -1})


def test_box_targets_on_exact_expectations(problem):
    """Inside the box: the target is the model's own expectation (no gradient); outside: the
    nearest bound; released rows keep their data; label sums clip to [0, d_target]."""
    _, sup, _, _ = problem
    lay, box = sup.layout, sup.suppression
    rng = np.random.default_rng(1)
    mu, theta = rng.normal(0, 1.0, lay.K), rng.normal(0, 1.0, lay.K)
    Ed, Ec = expected_statistics(lay, mu, theta, sup.n)
    r = box.rows
    assert np.any(Ed[r] > K_SUPP) and np.any(Ed[r] < K_SUPP)  # both cases occur
    d_t, c_t = box_targets(Ed, Ec, sup.d, sup.c, box)  # true gradient
    np.testing.assert_array_equal(d_t[~r], sup.d[~r])
    np.testing.assert_array_equal(c_t[~r], sup.c[~r])
    inside = r & (Ed <= K_SUPP)
    outside = r & (Ed > K_SUPP)
    np.testing.assert_array_equal(d_t[inside], Ed[inside])  # g_μ = Ed − d_t = 0
    np.testing.assert_array_equal(d_t[outside], K_SUPP)  # pushed back to k
    np.testing.assert_array_equal(c_t[inside], Ec[inside])  # E[C] ≤ E[D] ≤ k: no θ push
    np.testing.assert_allclose(c_t[outside], np.minimum(Ec[outside], K_SUPP))
    # the rescaled gradient compares (d_t / d̂)·ĉ ≤ d_t: never a θ push on suppressed rows
    pen = np.zeros(lay.K)
    d2, c2 = box_targets(
        Ed, Ec, sup.d, sup.c, box, lambda t: rescaling_ratio(Ed, t, pen, "rescaled")
    )
    np.testing.assert_array_equal(d2, d_t)
    np.testing.assert_allclose(c2[r], (d_t[r] / Ed[r]) * Ec[r])
    # inputs untouched
    assert np.all(sup.d[r] == 0)


def test_exact_box_satisfies_kkt(problem):
    """Exact box max-ent: E[D] ≤ k (+ its penalty) on suppressed rows, μ_r ≤ 0 with
    complementary slackness, θ_r = 0 (E[C] ≤ k is never active), released rows fitted."""
    _, sup, _, _ = problem
    box = sup.suppression
    m = fit_exact(sup, 1.0, 1.0, box=True)
    Ed, Ec = expected_statistics(sup.layout, m.mu, m.theta, sup.n)
    r = box.rows
    assert np.all(m.mu[r] <= 0) and np.all(np.abs(m.theta[r]) < 1e-5)
    slack = K_SUPP - Ed[r] - 2.0 * m.mu[r]  # KKT: E[D] − k + 2λμ ≤ 0, = 0 where μ < 0
    assert np.all(slack >= -1e-3)
    assert np.all(np.abs(slack[m.mu[r] < -1e-6]) < 1e-3)
    assert np.any(m.mu[r] < -1e-3)  # some constraints are active


def test_pcd_matches_exact_box_and_both_beat_absent_zero(problem):
    """Must-show 1: averaged PCD with box targets within 5e-3 max |ΔP(Y=1|x)| of the exact
    box-constrained max-ent (same penalties); both beat "absent = 0" on held-out NLLH."""
    agg, sup, Xt, yt = problem
    lay = agg.layout
    st = default_settings(lay, agg.n, n_gibbs=20_000, average=True, gradient="rescaled")
    exact_box = fit_exact(sup, st.lambda_mu, st.lambda_theta, box=True)
    exact_zero = fit_exact(without_suppression(sup), st.lambda_mu, st.lambda_theta)
    pcd_box = PCDTrainer(sup, st).fit(3000).model
    pcd_zero = PCDTrainer(without_suppression(sup), st).fit(3000).model
    S = all_states(lay)
    dp = np.abs(pcd_box.predict_proba(S)[:, 1] - exact_box.predict_proba(S)[:, 1])
    scores = {
        name: nllh(yt, m.predict_proba(Xt)[:, 1])
        for name, m in [
            ("exact_box", exact_box),
            ("exact_zero", exact_zero),
            ("pcd_box", pcd_box),
            ("pcd_zero", pcd_zero),
        ]
    }
    print(f"max |ΔP| = {dp.max():.4g}; held-out NLLH {scores}")
    assert dp.max() < 5e-3
    assert scores["exact_box"] > scores["exact_zero"] + 3e-4
    assert scores["pcd_box"] > scores["pcd_zero"] + 3e-4


def test_suppression_validation():
    with pytest.raises(AggMRFError, match="same shape"):
        Suppression(np.zeros(3, bool), np.zeros(4))
    with pytest.raises(AggMRFError, match="≥ 0"):
        Suppression(np.ones(2, bool), np.array([1.0, -1.0]))
