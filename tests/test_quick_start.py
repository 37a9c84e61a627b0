"""The builds of the dense chain, chosen per chain: "serial" gives the same samples and
statistics as "parallel" bit for bit (a first start runs it while the parallel builds
compile, and a chain switches mid-run), and "numpy" samples the same distribution with
no compiler at all."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aggmrf_explore.kernels import BUILDS, GibbsChain, NumpyGibbsChain, make_chain, quick
from aggmrf_explore.tables import TableLayout

M = (3, 4, 2, 5)


def _run(sweeps: int, build: str = "parallel", switch_at: int | None = None):
    lay = TableLayout.all_pairs(list(M))
    rng = np.random.default_rng(3)
    mu, theta = rng.normal(0, 0.7, lay.K), rng.normal(0, 0.7, lay.K)
    ch = GibbsChain(lay, 300, [np.ones(m) for m in M], seed=11, build=build)
    out = []
    for k in range(sweeps):
        if k == switch_at:
            quick.load_parallel()
            ch.use_build("parallel")
        ch.sweep(mu, theta)
        out.append((ch.codes.copy(), *ch.statistics(theta), *ch.statistics(theta * 0.5)))
    return out


def test_serial_builds_match_the_parallel_ones_bit_for_bit():
    reference = _run(4)
    serial = _run(4, build="serial")
    switched = _run(4, build="serial", switch_at=2)  # serial for two sweeps, then parallel
    for got in (serial, switched):
        for a, b in zip(reference, got, strict=True):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)
    # the chain moved: the comparison is not between constant states
    assert not np.array_equal(reference[0][0], reference[-1][0])


def test_the_build_is_an_argument_not_a_module_state():
    lay = TableLayout.all_pairs([2, 3])
    a = make_chain(lay, 8, [np.ones(2), np.ones(3)], 0, build="serial")
    b = make_chain(lay, 8, [np.ones(2), np.ones(3)], 0)
    assert (a.build, b.build) == ("serial", "parallel")
    assert a._kernels is not b._kernels  # (one chain's build never changes another's)
    with pytest.raises(ValueError, match="build must be one of"):
        make_chain(lay, 8, [np.ones(2), np.ones(3)], 0, build="fast")
    hashed = TableLayout.all_pairs([2, 3], hash_sizes={(0, 1): 4})
    with pytest.raises(ValueError, match="numpy build"):
        make_chain(hashed, 8, [np.ones(2), np.ones(3)], 0, build="numpy")
    assert BUILDS == ("parallel", "serial", "numpy")


def _exact_joint(lay: TableLayout, mu: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """π(x, y) ∝ exp(φ(x)·(μ + yθ)) over every (x, y), shape (Π M_f, 2)."""
    X = np.array(list(itertools.product(*[range(m) for m in lay.n_modalities])))
    rows = lay.rows(X)
    logw = np.stack([mu[rows].sum(1), (mu + theta)[rows].sum(1)], axis=1)
    w = np.exp(logw - logw.max())
    return w / w.sum()


@pytest.mark.parametrize("build", ["numpy", "parallel"])
def test_each_build_samples_the_mrf(build):
    """The empirical distribution of the chain's x̃ after burn-in, over 200 sweeps of 2 000
    samples, is within 0.02 total variation of the exact π(x) (the Monte-Carlo error of
    4·10⁵ correlated draws over 24 states is ≈ 0.005); a sweep that skipped a table's θ,
    or drew from the wrong row, lands 0.05 or more away."""
    lay = TableLayout.all_pairs([2, 3, 4])
    rng = np.random.default_rng(5)
    mu, theta = rng.normal(0, 0.8, lay.K), rng.normal(0, 0.8, lay.K)
    ch = make_chain(lay, 2000, [np.ones(m) for m in (2, 3, 4)], seed=2, build=build)
    strides = np.array([12, 4, 1])
    counts = np.zeros(24)
    for k in range(220):
        ch.sweep(mu, theta)
        if k >= 20:
            counts += np.bincount(ch.codes @ strides, minlength=24)
    exact = _exact_joint(lay, mu, theta).sum(axis=1)
    assert 0.5 * np.abs(counts / counts.sum() - exact).sum() < 0.02
    # the statistics are those of the current samples
    d, c = ch.statistics(theta)
    rows = lay.rows(ch.codes)
    np.testing.assert_allclose(d, np.bincount(rows.ravel(), minlength=lay.K))
    sig = 1 / (1 + np.exp(-theta[rows].sum(1)))
    expect_c = np.bincount(rows.ravel(), weights=np.repeat(sig, rows.shape[1]), minlength=lay.K)
    np.testing.assert_allclose(c, expect_c, rtol=0, atol=2.0**-20 * 2000)


def test_a_numpy_chain_hands_its_samples_to_a_compiled_one():
    lay = TableLayout.all_pairs(list(M))
    marg = [np.ones(m) for m in M]
    rng = np.random.default_rng(1)
    mu, theta = rng.normal(0, 0.5, lay.K), rng.normal(0, 0.5, lay.K)
    first = make_chain(lay, 500, marg, seed=4, build="numpy")
    assert isinstance(first, NumpyGibbsChain)
    for _ in range(3):
        first.sweep(mu, theta)
    moved = make_chain(lay, 500, marg, seed=4, codes=first.codes)
    np.testing.assert_array_equal(moved.codes, first.codes)
    np.testing.assert_array_equal(moved.rows, first.rows)
    assert moved.build == "parallel" and moved.n_samples == 500
