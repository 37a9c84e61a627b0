"""Metropolis-within-Gibbs (kernels.mh, kernels.mh_chain): exact alias draws, the model's
distribution left invariant (chi-square per table against enumeration), PCD with it as
close to exact max-ent as the full-conditional sampler, determinism, shards."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from aggmrf_explore.exact import all_states, expected_statistics, fit_exact, state_probabilities
from aggmrf_explore.kernels import MHGibbsChain, make_chain
from aggmrf_explore.kernels.mh import alias_table
from aggmrf_explore.kernels.mh_chain import mh_features
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.tables import AggregatedData, TableLayout

M = [3, 24, 20]


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(1)
    lay = TableLayout.all_pairs(M)
    mu = rng.normal(0, 0.8, lay.K)
    theta = rng.normal(0, 0.5, lay.K)
    return lay, mu, theta


def test_alias_table_is_exact():
    p = np.random.default_rng(0).dirichlet(np.full(37, 0.3))
    prob, alias = alias_table(p)
    implied = prob.copy()
    np.add.at(implied, alias, 1.0 - prob)
    np.testing.assert_allclose(implied / p.size, p, atol=1e-12)


def _chi2_per_dof(chain: MHGibbsChain, lay, px, p1, states_rows) -> np.ndarray:
    """chi² / dof of each released table's (row, ỹ) counts against n'·π(row, y)."""
    r, y, n = chain.rows, chain.labels, chain.n_samples
    out = []
    for t in range(1, lay.n_tables):
        size, off = int(lay.table_sizes[t]), int(lay.offsets[t])
        obs = np.stack([np.bincount(r[:, t] - off, weights=w, minlength=size) for w in (1 - y, y)])
        exp = n * np.stack(
            [
                np.bincount(states_rows[:, t] - off, weights=w, minlength=size)
                for w in (px * (1 - p1), px * p1)
            ]
        )
        out.append(((obs - exp) ** 2 / exp).sum() / (exp.size - 1))
    return np.array(out)


@pytest.mark.parametrize("use_mh", [[False, True, True], [True, True, True]])
def test_stationary_distribution_matches_enumeration(problem, use_mh):
    """n' independent chains after burn-in are n' draws of π: each table's chi² ≈ its dof.
    Averaged over 10 snapshots 10 sweeps apart, after 100 sweeps of burn-in (each snapshot is exactly multinomial under
    stationarity); a sampler of the proposal alone (all moves accepted) fails this."""
    lay, mu, theta = problem
    px, p1 = state_probabilities(lay, mu, theta)
    srows = lay.rows(all_states(lay))
    chain = MHGibbsChain(lay, 20_000, [np.ones(k) for k in M], seed=5, use_mh=np.array(use_mh))
    for _ in range(100):
        chain.sweep(mu, theta, statistics=False)
    snaps = []
    for _ in range(10):
        for _ in range(10):
            chain.sweep(mu, theta, statistics=False)
        snaps.append(_chi2_per_dof(chain, lay, px, p1, srows))
    mean = np.mean(snaps, axis=0)
    assert np.all(mean < 1.6), mean
    assert 0.05 < chain.acceptance < 0.99
    # the same check rejects a wrong sampler: the proposal's independent draws (θ, μ ignored)
    wrong = MHGibbsChain(lay, 20_000, [np.ones(k) for k in M], seed=5, use_mh=np.array(use_mh))
    wrong.sweep(np.zeros(lay.K), np.zeros(lay.K), statistics=False)
    assert _chi2_per_dof(wrong, lay, px, p1, srows).max() > 5


def test_random_subset_scan_keeps_the_stationary_distribution(problem):
    """sites = 1 of 3 features per sweep (a random-subset scan): the same chi² check as the
    full sweep's after three times the sweeps; a scan that always updated the same feature
    (not irreducible) fails it, and the subset's cost is the subset's (fewer proposals)."""
    lay, mu, theta = problem
    px, p1 = state_probabilities(lay, mu, theta)
    srows = lay.rows(all_states(lay))
    marg = [np.ones(k) for k in M]
    chain = MHGibbsChain(lay, 20_000, marg, seed=5, use_mh=np.array([True] * 3), sites=1)
    for _ in range(300):
        chain.sweep(mu, theta, statistics=False)
    assert chain.proposed.sum() == 20_000  # one feature per sample and sweep
    snaps = []
    for _ in range(10):
        for _ in range(30):
            chain.sweep(mu, theta, statistics=False)
        snaps.append(_chi2_per_dof(chain, lay, px, p1, srows))
    assert np.all(np.mean(snaps, axis=0) < 1.6), np.mean(snaps, axis=0)
    full = MHGibbsChain(lay, 20_000, marg, seed=5, use_mh=np.array([True] * 3), sites=3)
    plain = MHGibbsChain(lay, 20_000, marg, seed=5, use_mh=np.array([True] * 3))
    for ch in (full, plain):
        ch.sweep(mu, theta)
    np.testing.assert_array_equal(full.codes, plain.codes)  # sites = D is the paper's sweep
    assert full.proposed.sum() == 3 * 20_000


def test_pcd_with_mh_matches_exact_maxent_like_full_conditional(problem):
    lay, mu, theta = problem
    n = 100_000
    Ed, Ec = expected_statistics(lay, mu, theta, n)
    data = AggregatedData(lay, Ed, Ec, n)
    states = all_states(lay)
    px, _ = state_probabilities(lay, mu, theta)
    exact = fit_exact(data).predict_proba(states)[:, 1]
    st = default_settings(lay, n, lambda_theta=0.0, n_gibbs=20_000, seed=2)
    errs = {}
    for name, factory in (
        ("mh", partial(MHGibbsChain, use_mh=np.array([True, True, True]))),
        ("mh_1_site", partial(MHGibbsChain, use_mh=np.array([True, True, True]), sites=1)),
        ("gibbs", partial(make_chain, sampler="gibbs")),
    ):
        tr = PCDTrainer(data, st, chain_factory=factory)
        tr.fit(250)
        errs[name] = float(px @ np.abs(tr.predict_proba(states)[:, 1] - exact))
        if name == "mh":
            assert tr.history[-1].acceptance is not None and 0 < tr.history[-1].acceptance < 1
    assert errs["mh"] < 0.02, errs
    assert errs["mh"] <= 1.5 * errs["gibbs"] + 0.003, errs
    # a random-subset scan has the same fixed point: as close to exact max-ent
    assert errs["mh_1_site"] <= 1.5 * errs["gibbs"] + 0.003, errs


def test_mh_chain_is_deterministic_and_shards_match(problem):
    lay, mu, theta = problem
    marg = [np.ones(k) for k in M]
    whole = MHGibbsChain(lay, 1000, marg, seed=9)
    parts = [
        MHGibbsChain(lay, 1000, marg, seed=9, first=a, count=b) for a, b in ((0, 300), (300, 700))
    ]
    for _ in range(3):
        for ch in (whole, *parts):
            ch.sweep(mu, theta)
    np.testing.assert_array_equal(whole.codes, np.concatenate([p.codes for p in parts]))
    packed = whole.packed_statistics(theta)
    np.testing.assert_array_equal(packed, sum(p.packed_statistics(theta) for p in parts))
    d, c = whole.statistics(theta)
    np.testing.assert_array_equal(d, np.bincount(whole.rows.ravel(), minlength=lay.K))
    sig = 1.0 / (1.0 + np.exp(-whole.logits(theta)))
    np.testing.assert_allclose(
        c, np.bincount(whole.rows.ravel(), np.repeat(sig, lay.n_tables), lay.K), atol=1e-4
    )
    again = MHGibbsChain(lay, 1000, marg, seed=9)
    for _ in range(3):
        again.sweep(mu, theta)
    np.testing.assert_array_equal(whole.statistics(theta)[1], again.statistics(theta)[1])


@pytest.mark.parametrize(
    "use_mh, sites", [(None, None), ([True, False, True, True], None), (None, 2)]
)
def test_sorted_storage_gives_the_same_chain(use_mh, sites):
    """A chain storing its samples sorted by the large feature (the default for M_f ≥
    SORT_MIN_MODALITIES) and the same chain kept in index order give the same codes, labels,
    rows, logits, statistics and state after every sweep, whole or in shards, through a
    state round trip; and the sorted one really is stored in another order."""
    m = [7, 300, 5, 40]
    lay = TableLayout.all_pairs(m)
    rng = np.random.default_rng(4)
    mu, theta = rng.normal(0, 0.6, lay.K), rng.normal(0, 0.5, lay.K)
    marg = [rng.dirichlet(np.ones(k)) for k in m]
    kw = {} if use_mh is None else {"use_mh": np.array(use_mh)}
    kw |= {} if sites is None else {"sites": sites}
    srt = MHGibbsChain(lay, 777, marg, seed=3, **kw)
    plain = MHGibbsChain(lay, 777, marg, seed=3, **kw)
    plain.sort_feature = -1
    shards = [
        MHGibbsChain(lay, 777, marg, seed=3, first=a, count=b, **kw)
        for a, b in ((0, 400), (400, 377))
    ]
    assert srt.sort_feature == 1 and all(s.sort_feature == 1 for s in shards)
    hashed = TableLayout.all_pairs(m, hash_sizes={(0, 1): 50})
    assert MHGibbsChain(hashed, 10, [np.ones(k) for k in m], seed=0).sort_feature == -1
    for sweep in range(4):
        for ch in (srt, plain, *shards):
            ch.sweep(mu, theta)
        if sweep == 2:  # a round trip through the state (stored in index order again)
            srt.restore(srt.state())
        for name in ("codes", "labels", "rows"):
            np.testing.assert_array_equal(getattr(srt, name), getattr(plain, name))
            np.testing.assert_array_equal(
                getattr(srt, name), np.concatenate([getattr(s, name) for s in shards])
            )
        np.testing.assert_array_equal(srt.logits(theta), plain.logits(theta))
        np.testing.assert_array_equal(srt.packed_statistics(theta), plain.packed_statistics(theta))
        np.testing.assert_array_equal(
            srt.packed_statistics(theta), sum(s.packed_statistics(theta) for s in shards)
        )
        np.testing.assert_array_equal(srt.accepted, plain.accepted)
        for k, v in srt.state().items():
            np.testing.assert_array_equal(v, plain.state()[k])
    stored = srt._x[:, 1]  # noqa: SLF001 (the test reads the storage order)
    assert np.all(np.diff(stored) >= 0) and not np.all(np.diff(plain.codes[:, 1]) >= 0)
    np.testing.assert_array_equal(np.sort(stored), np.sort(srt.codes[:, 1]))


def test_cost_rule_and_make_chain_auto():
    lay = TableLayout.all_pairs([5] * 18 + [2000])
    assert mh_features(lay).tolist() == [False] * 18 + [True]
    small = TableLayout.all_pairs([3, 4])
    assert type(make_chain(small, 10, [np.ones(3), np.ones(4)], 0)).__name__ == "GibbsChain"
    big = TableLayout.all_pairs([3, 1500])
    assert isinstance(make_chain(big, 10, [np.ones(3), np.ones(1500)], 0), MHGibbsChain)
    with pytest.raises(ValueError, match="sampler"):
        make_chain(small, 10, [np.ones(3), np.ones(4)], 0, sampler="metropolis")
    # a subset scan is the MH chain's; the full-conditional chains sweep every feature
    assert make_chain(small, 10, [np.ones(3), np.ones(4)], 0, sites=1).sweeps == 0
    assert make_chain(big, 10, [np.ones(3), np.ones(1500)], 0, sites=1).sites == 1
