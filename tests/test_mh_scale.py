"""The Criteo-scale fast paths: the one-pass PCD update is bit for bit the numpy
expressions it replaces, the divergence reduction finds what numpy finds, and the blocked
MH sweep (cached rows and energies, proposals gathered before the accept pass) keeps the
chain's draws independent of how samples are split, of reusing last sweep's rows, and of
hashed tables and triples (stationary distribution against enumeration)."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore.exact import all_states, state_probabilities
from aggmrf_explore.kernels import MHGibbsChain
from aggmrf_explore.kernels.update import bound_excess
from aggmrf_explore.mrf import (
    MU_BOUND,
    THETA_BOUND,
    Params,
    Penalty,
    Targets,
    TrainerSettings,
    pcd_update,
    rescaling_ratio,
)
from aggmrf_explore.tables import TableLayout


def _numpy_update(params, d_hat, c_hat, targets, st, penalty):
    """The numpy expressions of mrf.pcd_update before it became one pass (the reference)."""
    mu, theta = params
    s = penalty.s
    pen_mu = 2.0 * st.lambda_mu * penalty.reg_mu * mu
    g_mu = d_hat - targets.d + pen_mu
    ratio = rescaling_ratio(d_hat, targets.d, pen_mu, st.gradient)
    c_model = c_hat if st.gradient == "true" else ratio * c_hat
    lam_theta = 2.0 * st.lambda_theta * penalty.reg_theta
    g_theta = c_model - targets.c + lam_theta * theta
    if st.gradient == "rescaled":  # no sample in a cell the target holds: θ waits
        g_theta = np.where((d_hat > 0) | ~(targets.d - pen_mu > 0), g_theta, 0.0)
    if st.precondition and st.preconditioner == "samples":
        h_mu = np.maximum(d_hat + 2.0 * st.lambda_mu * penalty.reg_mu, s)
        h_theta = np.maximum(c_model + lam_theta, s)
    elif st.precondition:  # the curvature at the fixed point (NaN → 0, as the kernel)
        free_mu, free_theta = targets.d - pen_mu, targets.c - lam_theta * theta
        h_mu = np.where(free_mu > 0, free_mu, 0.0) + 2.0 * st.lambda_mu * penalty.reg_mu
        h_theta = np.where(free_theta > 0, free_theta, 0.0) + lam_theta
        h_mu, h_theta = np.where(h_mu < s, s, h_mu), np.where(h_theta < s, s, h_theta)
    else:
        h_mu = h_theta = max(penalty.h_plain, s)
    dir_mu = np.clip(g_mu / h_mu, -st.clip, st.clip)
    dir_theta = np.clip(g_theta / h_theta, -st.clip, st.clip)
    if penalty.intercept:
        dir_mu[0] = 0.0
    new = (mu - st.step_mu * dir_mu, theta - st.step_theta * dir_theta)
    return (*new, g_mu, g_theta, ratio, c_model, h_mu, h_theta, dir_mu, dir_theta)


@pytest.mark.parametrize("gradient", ["rescaled", "rescaled-paper", "true"])
@pytest.mark.parametrize("precondition", ["targets", "samples", False])
@pytest.mark.parametrize("intercept", [True, False])
def test_one_pass_update_is_bit_identical_to_numpy(gradient, precondition, intercept):
    rng = np.random.default_rng(3)
    K = 5000
    mu, theta = rng.normal(0, 2, K), rng.normal(0, 1, K)
    d_hat = np.where(rng.random(K) < 0.2, 0.0, rng.gamma(0.5, 30, K))  # zeros: ratio fallback
    c_hat = d_hat * rng.random(K)
    d = np.where(rng.random(K) < 0.1, 0.0, rng.gamma(0.5, 30, K))  # d − 2λμ ≤ 0 somewhere
    c = d * rng.random(K)
    d_hat[7], c_hat[8], theta[9] = np.nan, np.inf, -np.inf  # non-finite values propagate alike
    reg = np.ones(K)
    reg[0] = 0.0 if intercept else 1.0
    st = TrainerSettings(
        n_gibbs=10,
        lambda_mu=0.7,
        lambda_theta=0.3,
        step_mu=0.4,
        step_theta=0.2,
        clip=1.5,
        gradient=gradient,
        precondition=bool(precondition),
        preconditioner=precondition or "targets",
    )
    pen = Penalty(reg, reg.copy(), intercept, 3.0, 2.5)
    with np.errstate(all="ignore"):
        want = _numpy_update(Params(mu, theta), d_hat, c_hat, Targets(d, c), st, pen)
        got = pcd_update(Params(mu, theta), d_hat, c_hat, Targets(d, c), st, pen)
    got = (*got.params, *got[1:])
    for name, w, g in zip(
        "mu theta g_mu g_theta ratio c_model h_mu h_theta dir_mu dir_theta".split(),
        want,
        got,
        strict=True,
    ):
        if np.ndim(w) == 0:
            assert g == w, name
        else:
            # bit for bit, NaN included (assert_array_equal treats NaN == NaN)
            np.testing.assert_array_equal(np.asarray(g).view(np.int64), w.view(np.int64), name)


def test_bound_excess_matches_numpy():
    rng = np.random.default_rng(0)
    mu, theta = rng.normal(0, 50, 1000), rng.normal(0, 20, 1000)
    theta[[10, 20]] = 80.0  # a tie: the first position wins, as np.argmax
    for mu_, th in ((mu, theta), (mu, np.where(np.arange(1000) == 5, np.nan, theta))):
        over_t = np.where(np.isfinite(th), np.abs(th), np.inf) / THETA_BOUND
        over_m = np.where(np.isfinite(mu_), np.abs(mu_), np.inf) / MU_BOUND
        t, kt, m, km = bound_excess(mu_, th, MU_BOUND, THETA_BOUND)
        assert (t, kt, m, km) == (over_t.max(), np.argmax(over_t), over_m.max(), np.argmax(over_m))


M = [3, 24, 20]


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(1)
    lay = TableLayout.all_pairs(M)
    return lay, rng.normal(0, 0.8, lay.K), rng.normal(0, 0.5, lay.K)


def test_cached_rows_and_uneven_shards_give_the_same_chain(problem):
    """Shards whose bounds cut the kernel's sub-blocks, a restored chain (its rows recomputed)
    and the running chain (last sweep's rows reused) draw the same samples."""
    lay, mu, theta = problem
    marg = [np.ones(k) for k in M]
    whole = MHGibbsChain(lay, 997, marg, seed=4, use_mh=np.array([False, True, True]))
    parts = [
        MHGibbsChain(lay, 997, marg, seed=4, use_mh=np.array([False, True, True]), first=a, count=b)
        for a, b in ((0, 37), (37, 500), (537, 460))
    ]
    for _ in range(2):
        for ch in (whole, *parts):
            ch.sweep(mu, theta)
    saved = whole.state()
    restored = MHGibbsChain(lay, 997, marg, seed=4, use_mh=np.array([False, True, True]))
    restored.restore(saved)
    for _ in range(2):
        for ch in (whole, restored, *parts):
            ch.sweep(mu, theta)
    np.testing.assert_array_equal(whole.codes, restored.codes)
    np.testing.assert_array_equal(whole.codes, np.concatenate([p.codes for p in parts]))
    np.testing.assert_array_equal(whole.rows, lay.rows(whole.codes))
    np.testing.assert_array_equal(
        whole.packed_statistics(theta), sum(p.packed_statistics(theta) for p in parts)
    )


def test_mh_on_hashed_tables_and_triples_matches_enumeration():
    """The MH kernel's rows for hashed tables and a triple (entries with two other features):
    table frequencies of 20 000 chains after burn-in against π by enumeration."""
    m = [3, 12, 10, 4]
    lay = TableLayout(
        m,
        tables=[(0,), (1,), (2,), (3,), (0, 1), (1, 2), (0, 2, 3), (1, 3)],
        hash_sizes={(1, 2): 17, (0, 2, 3): 23},
    )
    rng = np.random.default_rng(2)
    mu, theta = rng.normal(0, 0.8, lay.K), rng.normal(0, 0.5, lay.K)
    px, p1 = state_probabilities(lay, mu, theta)
    srows = lay.rows(all_states(lay))
    chain = MHGibbsChain(
        lay, 20_000, [np.ones(k) for k in m], seed=1, use_mh=np.array([False, True, True, False])
    )
    for _ in range(60):
        chain.sweep(mu, theta, statistics=False)
    r, y = chain.rows, chain.labels
    worst = 0.0
    for t in range(1, lay.n_tables):
        size, off = int(lay.table_sizes[t]), int(lay.offsets[t])
        obs = np.stack([np.bincount(r[:, t] - off, weights=w, minlength=size) for w in (1 - y, y)])
        exp = 20_000 * np.stack(
            [
                np.bincount(srows[:, t] - off, weights=w, minlength=size)
                for w in (px * (1 - p1), px * p1)
            ]
        )
        keep = exp > 0
        worst = max(worst, ((obs - exp)[keep] ** 2 / exp[keep]).sum() / (keep.sum() - 1))
    assert worst < 2.0, worst
