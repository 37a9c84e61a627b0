"""The pure PCD update (mrf.pcd_update) on a hand-computed example of 4 coordinates.

Row 0 is the intercept (unpenalised, its μ never moves), row 2 has d̂ = 0 (the ratio falls
back to 1 and the μ preconditioner to its floor s), row 3 has a clipped θ direction (and,
for the unbiased ratio, d − 2λ_μ μ = 0: the fallback r = 1).  The expected numbers are
written out from the formulas of the mrf module docstring:

    g_μ = d̂ − d + 2λ_μ μ            g_θ = r·ĉ − c + 2λ_θ θ
    h_μ = max(d̂ + 2λ_μ, s)          h_θ = max(r·ĉ + 2λ_θ, s)
    μ' = μ − α_μ clip(g_μ/h_μ)       θ' = θ − α_θ clip(g_θ/h_θ)

with r = d/d̂ (the paper's ratio) or r = (d − 2λ_μ μ)/d̂ (unbiased: 1 at μ's fixed point).
"""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore.kernels.update import SMALL
from aggmrf_explore.mrf import (
    Params,
    Penalty,
    Targets,
    TrainerSettings,
    pcd_update,
    rescaling_ratio,
)

S = 2.0  # n / n'
SETTINGS = TrainerSettings(
    n_gibbs=10,
    lambda_mu=0.5,
    lambda_theta=0.5,
    step_mu=0.5,
    step_theta=0.25,
    clip=1.5,
    gradient="rescaled-paper",
    preconditioner="samples",
)  # 2λ_μ = 2λ_θ = 1; the paper's update (the default preconditioner: test_targets_…)
MU = np.array([0.3, -0.5, 0.2, 1.0])
THETA = np.array([-1.0, 0.5, -0.25, 3.0])
D_HAT = np.array([22.0, 8.0, 0.0, 4.0])
C_HAT = np.array([6.0, 2.0, 0.0, 3.0])
D = np.array([20.0, 10.0, 3.0, 1.0])
C = np.array([5.0, 4.0, 1.0, 0.5])
REG = np.array([0.0, 1.0, 1.0, 1.0])  # the intercept row is not penalised
PENALTY = Penalty(REG, REG.copy(), True, S, 15.0)


def _update(settings=SETTINGS, penalty=PENALTY):
    return pcd_update(Params(MU, THETA), D_HAT, C_HAT, Targets(D, C), settings, penalty)


def _with(**changes):
    return TrainerSettings(**{**SETTINGS.__dict__, **changes})


def test_rescaled_paper_preconditioned_update_by_hand():
    args = [MU, THETA, D_HAT, C_HAT, D, C]
    before = [a.copy() for a in args]
    u = _update()
    for a, b in zip(args, before, strict=True):  # pure: nothing written
        np.testing.assert_array_equal(a, b)

    # g_μ = d̂ − d + 2λ_μ·reg·μ
    np.testing.assert_allclose(
        u.g_mu, [22 - 20, 8 - 10 + 1 * -0.5, 0 - 3 + 1 * 0.2, 4 - 1 + 1 * 1.0]
    )
    # ratio d/d̂, 1 where d̂ = 0
    np.testing.assert_allclose(u.ratio, [20 / 22, 10 / 8, 1.0, 1 / 4])
    np.testing.assert_allclose(u.c_model, [6 * 20 / 22, 2 * 10 / 8, 0.0, 3 / 4])
    # g_θ = ratio·ĉ − c + 2λ_θ·reg·θ  (row 0: no penalty although θ₀ = −1)
    np.testing.assert_allclose(
        u.g_theta, [60 / 11 - 5, 2.5 - 4 + 1 * 0.5, 0 - 1 + 1 * -0.25, 0.75 - 0.5 + 1 * 3.0]
    )
    # h_μ = max(d̂ + 2λ_μ·reg, s): row 2 is at the floor s = 2
    np.testing.assert_allclose(u.h_mu, [22.0, 8 + 1, S, 4 + 1])
    # h_θ = max(ratio·ĉ + 2λ_θ·reg, s): rows 2 and 3 at the floor
    np.testing.assert_allclose(u.h_theta, [60 / 11, 2.5 + 1, S, S])
    # directions: μ₀ never moves; θ₃ = 3.25 / 2 = 1.625 is clipped to 1.5
    np.testing.assert_allclose(u.dir_mu, [0.0, -2.5 / 9, -2.8 / 2, 4 / 5])
    np.testing.assert_allclose(u.dir_theta, [(5 / 11) / (60 / 11), -1.0 / 3.5, -1.25 / 2, 1.5])
    np.testing.assert_allclose(
        u.params.mu, [0.3, -0.5 + 0.5 * 2.5 / 9, 0.2 + 0.5 * 1.4, 1.0 - 0.5 * 0.8]
    )
    np.testing.assert_allclose(
        u.params.theta,
        [-1.0 - 0.25 / 12, 0.5 + 0.25 / 3.5, -0.25 + 0.25 * 0.625, 3.0 - 0.25 * 1.5],
    )
    assert u.params.mu[0] == MU[0]


def test_targets_preconditioner_by_hand():
    """The default preconditioner: the curvatures at the fixed point, from the targets and
    the penalties, not from the chain's d̂, ĉ (the same gradients as the paper's update).

        h_μ = max((d − 2λ_μ μ)⁺ + 2λ_μ, s)      h_θ = max((c − 2λ_θ θ)⁺ + 2λ_θ, s)
    """
    paper = _update()
    targets = _with(preconditioner="targets")
    u = _update(settings=targets)
    np.testing.assert_array_equal(u.g_mu, paper.g_mu)
    np.testing.assert_array_equal(u.g_theta, paper.g_theta)
    # d − 2λ_μ·reg·μ = [20, 10.5, 2.8, 0]; + 2λ_μ·reg = [20, 11.5, 3.8, 1] → floor s = 2
    np.testing.assert_allclose(u.h_mu, [20.0, 11.5, 3.8, S])
    # c − 2λ_θ·reg·θ = [5, 3.5, 1.25, −2.5] → (·)⁺ + 2λ_θ·reg = [5, 4.5, 2.25, 1] → floor s
    np.testing.assert_allclose(u.h_theta, [5.0, 4.5, 2.25, S])
    np.testing.assert_allclose(u.dir_mu, [0.0, -2.5 / 11.5, -2.8 / 3.8, 1.5])  # 4/2 clipped
    np.testing.assert_allclose(u.dir_theta, [(5 / 11) / 5, -1.0 / 4.5, -1.25 / 2.25, 1.5])
    # the chain's counts do not enter the preconditioner: a different d̂, ĉ, the same h
    other = pcd_update(
        Params(MU, THETA), 3.0 * D_HAT + 1.0, 0.5 * C_HAT, Targets(D, C), targets, PENALTY
    )
    np.testing.assert_array_equal(other.h_mu, u.h_mu)
    np.testing.assert_array_equal(other.h_theta, u.h_theta)
    assert TrainerSettings().preconditioner == "targets"


def test_true_gradient_by_hand():
    u = _update(settings=_with(gradient="true"))
    np.testing.assert_allclose(u.c_model, C_HAT)  # ĉ itself, no rescaling
    np.testing.assert_allclose(
        u.g_theta, [6 - 5, 2 - 4 + 1 * 0.5, 0 - 1 + 1 * -0.25, 3 - 0.5 + 1 * 3.0]
    )
    np.testing.assert_allclose(u.h_theta, [6.0, 2 + 1, S, 3 + 1])
    np.testing.assert_allclose(u.dir_theta, [1 / 6, -1.5 / 3, -1.25 / 2, 5.5 / 4])
    np.testing.assert_allclose(u.g_mu, [2.0, -2.5, -2.8, 4.0])  # μ does not depend on it


def test_without_preconditioning_by_hand():
    st = _with(precondition=False)
    u = _update(settings=st)
    assert u.h_mu == u.h_theta == 15.0  # n·T/K (above the floor s)
    np.testing.assert_allclose(u.dir_mu, [0.0, -2.5 / 15, -2.8 / 15, 4 / 15])
    np.testing.assert_allclose(u.dir_theta, [(5 / 11) / 15, -1.0 / 15, -1.25 / 15, 3.25 / 15])
    low = _update(settings=st, penalty=PENALTY._replace(h_plain=0.5))
    assert low.h_mu == low.h_theta == S  # floored at s
    np.testing.assert_allclose(low.dir_theta, np.clip(u.g_theta / S, -1.5, 1.5))


def test_without_intercept_row_zero_is_an_ordinary_row():
    pen = Penalty(np.ones(4), np.ones(4), False, S, 15.0)
    u = _update(penalty=pen)
    assert u.g_mu[0] == pytest.approx(2 + 1 * 0.3)
    assert u.g_theta[0] == pytest.approx(60 / 11 - 5 + 1 * -1.0)
    assert u.dir_mu[0] == pytest.approx((2 + 0.3) / (22 + 1))
    assert u.params.mu[0] != MU[0]


def test_rescaled_unbiased_update_by_hand():
    """r = (d − 2λ_μ μ)/d̂; fallback r = 1 where d̂ = 0 (row 2) or d − 2λ_μ μ ≤ 0 (row 3).
    Row 2 has no sample (d̂ = 0) in a cell its target holds (d − 2λ_μ μ = 2.8 > 0): no
    estimate of the model's label rate there, so its θ does not move (g_θ = 0)."""
    u = _update(settings=_with(gradient="rescaled"))
    # numerators d − 2λ_μ·reg·μ = [20, 10.5, 2.8, 0]; row 0 unpenalised
    np.testing.assert_allclose(u.ratio, [20 / 22, 10.5 / 8, 1.0, 1.0])
    np.testing.assert_allclose(u.c_model, [6 * 20 / 22, 2 * 10.5 / 8, 0.0, 3.0])
    np.testing.assert_allclose(u.g_theta, [60 / 11 - 5, 2.625 - 4 + 0.5, 0.0, 3 - 0.5 + 3.0])
    np.testing.assert_allclose(u.h_theta, [60 / 11, 2.625 + 1, S, 3 + 1])
    np.testing.assert_allclose(u.dir_theta, [(5 / 11) / (60 / 11), -0.875 / 3.625, 0.0, 5.5 / 4])
    assert u.params.theta[2] == THETA[2]
    # the paper's ratio and the true gradient keep −c there (ĉ = 0 is their estimate)
    assert _update().g_theta[2] == _update(settings=_with(gradient="true")).g_theta[2] == -1.25
    np.testing.assert_allclose(u.g_mu, [2.0, -2.5, -2.8, 4.0])  # μ's update is unchanged
    np.testing.assert_allclose(u.dir_mu, _update().dir_mu)
    # a negative numerator (raw noisy targets) also falls back to the true gradient
    r = rescaling_ratio(np.array([5.0]), np.array([-3.0]), np.array([0.0]), "rescaled")
    assert r.tolist() == [1.0]


def test_unbiased_ratio_is_one_at_the_fixed_point_of_mu():
    """Where μ is at its fixed point (d̂ = d − 2λ_μ μ) the unbiased θ-gradient is the true
    gradient; the paper's ratio is d/(d − 2λ_μ μ) ≠ 1 there."""
    mu = np.array([0.0, -1.5, -0.4, 2.0])
    pen = 2 * SETTINGS.lambda_mu * REG * mu
    d_hat = D - pen  # [20, 11.5, 3.4, -1]: the last one is no fixed point (d̂ ≥ 0)
    d_hat[3] = 0.5
    c_hat = np.array([6.0, 2.0, 1.0, 0.25])

    def upd(gradient):
        st = _with(gradient=gradient)
        return pcd_update(Params(mu, THETA), d_hat, c_hat, Targets(D, C), st, PENALTY)

    unbiased, true, paper = upd("rescaled"), upd("true"), upd("rescaled-paper")
    np.testing.assert_array_equal(unbiased.ratio[:3], 1.0)
    np.testing.assert_allclose(unbiased.g_theta[:3], true.g_theta[:3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(paper.ratio[:3], D[:3] / d_hat[:3])
    assert np.all(np.abs(paper.g_theta[1:3] - true.g_theta[1:3]) > 0.05)


def test_default_gradient_is_the_unbiased_ratio():
    """TrainerSettings() uses gradient="rescaled", the unbiased ratio (d − 2λ_μ μ)/d̂;
    "rescaled-paper" is the paper's d/d̂."""
    default = TrainerSettings()
    assert default.gradient == "rescaled" and default.average
    st = TrainerSettings(
        **{
            **default.__dict__,
            **{
                k: getattr(SETTINGS, k)
                for k in ("n_gibbs", "lambda_mu", "lambda_theta", "step_mu", "step_theta", "clip")
            },
        }
    )
    u = _update(settings=st)
    np.testing.assert_allclose(u.ratio, [20 / 22, 10.5 / 8, 1.0, 1.0])
    np.testing.assert_allclose(_update().ratio, [20 / 22, 10 / 8, 1.0, 1 / 4])


@pytest.mark.parametrize("K", [2_000, SMALL + 500], ids=["numpy", "compiled"])
@pytest.mark.parametrize("gradient", ["rescaled", "rescaled-paper"])
def test_the_kernels_ratio_is_the_numpy_rescaling_ratio(gradient, K):
    """update_pass computes the ratio per coordinate (numpy below SMALL coordinates, the
    compiled loop above); it must equal mrf.rescaling_ratio bit for bit, fallbacks included
    (d̂ = 0, d − 2λ_μ μ ≤ 0, negative noisy targets)."""
    rng = np.random.default_rng(11)
    mu, theta = rng.normal(0, 2, K), rng.normal(0, 1, K)
    d_hat = np.where(rng.random(K) < 0.1, 0.0, rng.gamma(1.0, 30.0, K))
    d = rng.normal(20.0, 25.0, K)  # noisy: some negative
    c = rng.normal(5.0, 8.0, K)
    reg = np.where(np.arange(K) == 0, 0.0, 1.0)
    st = _with(gradient=gradient, lambda_mu=3.0)
    up = pcd_update(
        Params(mu, theta),
        d_hat,
        d_hat / 3,
        Targets(d, c),
        st,
        Penalty(reg, reg.copy(), True, S, 15.0),
    )
    expected = rescaling_ratio(d_hat, d, 2.0 * st.lambda_mu * reg * mu, gradient)
    assert np.array_equal(up.ratio, expected)
    assert (expected == 1.0).sum() > 100  # the fallbacks were exercised


# ---------------------------------------------------------------------- the gauge step
def _gauge_problem(intercept: bool = True):
    """Features of 2, 3, 2 modalities, singles and pairs (the intercept optional), 4 000
    records of a random pairwise law; its exact regularised optimum (λ_μ = 1, λ_θ = 3)."""
    from aggmrf_explore.exact import fit_exact
    from aggmrf_explore.tables import TableLayout, aggregate

    rng = np.random.default_rng(7)
    lay = TableLayout.all_pairs([2, 3, 2], intercept=intercept)
    X = np.column_stack([rng.integers(0, m, 4000) for m in (2, 3, 2)])
    X[:, 2] = np.where(rng.random(4000) < 0.7, X[:, 0], X[:, 2])
    y = (
        rng.random(4000) < 1 / (1 + np.exp(-(X[:, 0] - 0.5 * X[:, 1] + X[:, 0] * X[:, 2])))
    ).astype(int)
    data = aggregate(X, y, lay)
    return lay, data, fit_exact(data, 1.0, 3.0)


def _penalty(lay, intercept: bool = True) -> Penalty:
    reg = np.ones(lay.K)
    if intercept:
        reg[0] = 0.0
    return Penalty(reg, reg.copy(), intercept, 1.0, 1.0)


def test_gauge_step_keeps_the_model_and_the_exact_optimum():
    """The gauge step moves (μ, θ) along directions that leave π(x, y) and P(Y=1|x) as they
    are (here from a random start: the same logits to 1e-12); at the exact regularised
    optimum it moves nothing (≤ 1e-5, the exact solver's own tolerance: there the gradient along them is already 0, with the
    model's n as the intercept's count target of μ, not a wrong one)."""
    from aggmrf_explore.exact import all_states
    from aggmrf_explore.pcd import gauge_groups, gauge_step

    lay, data, exact = _gauge_problem()
    groups = gauge_groups(lay)
    st = TrainerSettings(lambda_mu=1.0, lambda_theta=3.0)
    pen = _penalty(lay)
    rows = lay.rows(all_states(lay))
    rng = np.random.default_rng(1)
    start = Params(rng.normal(size=lay.K), rng.normal(size=lay.K))
    moved = gauge_step(start, Targets(data.d, data.c), st, pen, groups, data.n)
    assert np.abs(moved.theta - start.theta).max() > 0.1  # it did move the parameters
    logits = lambda v: v[rows].sum(axis=1)  # noqa: E731
    np.testing.assert_allclose(logits(moved.theta), logits(start.theta), atol=1e-12)
    shift = logits(moved.mu) - logits(start.mu)  # μ: up to a constant (μ₀ cancels in Z)
    assert np.ptp(shift) < 1e-12 and moved.mu[0] == start.mu[0]
    at = gauge_step(Params(exact.mu, exact.theta), Targets(data.d, data.c), st, pen, groups, data.n)
    np.testing.assert_allclose(at.mu[1:], exact.mu[1:], atol=1e-5)
    np.testing.assert_allclose(at.theta, exact.theta, atol=1e-5)


def test_gauge_passes_converge_to_the_exact_optimum_along_the_directions():
    """Repeated passes from the exact optimum moved along the gauge by a random amount come
    back to it (the minimum along these directions is unique: the penalty's); numpy and
    numba give the same bits; without the intercept row 0 is an ordinary row."""
    from aggmrf_explore.exact import all_states
    from aggmrf_explore.kernels.update import gauge_pass
    from aggmrf_explore.pcd import gauge_groups, gauge_step

    for intercept in (True, False):
        lay, data, exact = _gauge_problem(intercept)
        groups = gauge_groups(lay)
        st = TrainerSettings(lambda_mu=1.0, lambda_theta=3.0)
        pen = _penalty(lay, intercept)
        rows = lay.rows(all_states(lay))
        # a random move along the directions: many passes towards random targets
        rng = np.random.default_rng(2)
        noise = Targets(rng.normal(0, 50, lay.K), rng.normal(0, 50, lay.K))
        p = Params(exact.mu.copy(), exact.theta.copy())
        for _ in range(5):
            p = gauge_step(p, noise, st, pen, groups, 0.0)
        assert np.abs(p.theta - exact.theta).max() > 1.0
        np.testing.assert_allclose(p.theta[rows].sum(1), exact.theta[rows].sum(1), atol=1e-9)
        for _ in range(200):
            p = gauge_step(p, Targets(data.d, data.c), st, pen, groups, data.n)
        np.testing.assert_allclose(p.theta, exact.theta, atol=1e-5)
        np.testing.assert_allclose(p.mu[1:], exact.mu[1:], atol=1e-5)
        x = np.column_stack([p.mu, p.theta])
        T = np.column_stack([data.d, data.c])
        ones = np.ones(lay.K)
        args = ((p.mu, p.theta), (data.d, data.c), (2.0, 6.0), (ones, ones), (False, True), groups)
        numpy_pass = gauge_pass(*args, compiled=False)
        compiled_pass = gauge_pass(*args, compiled=True)
        assert all(np.array_equal(a, b) for a, b in zip(numpy_pass, compiled_pass, strict=True))
        assert not np.array_equal(numpy_pass[1], p.theta)  # the pass moved θ
        # one pass is exact block by block: along the last block's directions the
        # gradient ⟨e, T − 2λ·x⟩ is 0 after it (e: +1 on the group's t rows, −1 on its s row)
        moved = x + rng.normal(size=x.shape)
        y = np.column_stack(gauge_pass((moved[:, 0], moved[:, 1]), *args[1:]))
        g0, g1 = groups.block_ptr[-2], groups.block_ptr[-1]
        for g in range(g0, g1):
            t_rows = groups.t_rows[groups.t_ptr[g] : groups.t_ptr[g + 1]]
            k = groups.s_rows[g]
            along = (T[t_rows, 1] - 6.0 * y[t_rows, 1]).sum() - (T[k, 1] - 6.0 * y[k, 1])
            assert abs(along) < 1e-9


def test_gauge_groups_leave_out_hashed_tables_and_boxed_rows():
    """A group holding a row of a hashed table or a boxed (suppressed) row is left out."""
    from aggmrf_explore.pcd import gauge_groups
    from aggmrf_explore.tables import TableLayout

    lay = TableLayout.all_pairs([2, 3, 2])
    full = gauge_groups(lay)
    # singles: 3 blocks of one group; pairs (0,1), (0,2), (1,2): 2 blocks each
    assert len(full.block_ptr) - 1 == 3 + 6
    assert len(full.s_rows) == 3 + (2 + 3) + (2 + 2) + (3 + 2)
    boxed = np.zeros(lay.K, dtype=bool)
    boxed[lay.offsets[lay.table_index((0, 1))]] = True  # row (0, 0) of the pair (0, 1)
    some = gauge_groups(lay, boxed)
    assert len(some.s_rows) == len(full.s_rows) - 2  # the group of x0 = 0 and of x1 = 0
    assert not np.isin(np.flatnonzero(boxed), some.t_rows).any()
    # the pairs' blocks grouped by their first feature are interleaved (G = the second's
    # values); the one that lost a group is not (its rows no longer fill one range)
    assert full.interleaved.tolist() == [0] * 3 + [3, 0, 2, 0, 2, 0]
    assert some.interleaved.tolist() == [0] * 3 + [0, 0, 2, 0, 2, 0]
    hashed = TableLayout.all_pairs([2, 3, 2], hash_sizes={(0, 1): 4})
    assert len(gauge_groups(hashed).s_rows) == 3 + (2 + 2) + (3 + 2)
