"""Correctness of the Gibbs kernel (no timing assertions anywhere).

- stationary statistics match exact expectations (pairs, and a triple + a 1-modality feature);
- the kernel draws the same samples as a plain float64 reference sweep written here in
  Python (same feature-outer scan, same counter-based RNG), up to rare float32 ties;
- bit-identical chains and statistics with NUMBA_NUM_THREADS=1 and =2;
- statistics(θ) for another θ, rows kept in sync with codes, logits;
- the package's one splitmix64 (kernels.rng) and the one row kernel (kernels.rows) against
  Python definitions written here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from aggmrf_explore import TableLayout
from aggmrf_explore.exact import expected_statistics
from aggmrf_explore.kernels import GibbsChain, warm_up
from aggmrf_explore.kernels.rng import feature_order, mix64, stream_key
from aggmrf_explore.kernels.rows import table_arrays, table_rows
from aggmrf_explore.tables import hash_rows

MASK = (1 << 64) - 1
GOLDEN, M1, M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix(z):
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def _stream(seed, it, i):
    s = _mix((seed + GOLDEN) & MASK)
    s = _mix(s ^ ((it * M1 + GOLDEN) & MASK))
    return _mix(s ^ ((i * M2 + GOLDEN) & MASK))


def _uniform(key, i, j, D1):
    """The kernel's 24-bit uniform of site j of sample i (lowbias32 of counter and key)."""
    x = ((int(i) * D1 + int(j) + 1) * 0x9E3779B9 + ((key & 0xFFFFFFFF) ^ (key >> 32))) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return (x >> 8) / 16777216.0


def _bernoulli(z, u):
    if z >= 0:
        return 1 if u * (1.0 + np.exp(-z)) < 1.0 else 0
    return 1 if u * (1.0 + np.exp(z)) < np.exp(z) else 0


def reference_sweep(codes, y, layout, mu, theta, seed, it):
    """The sweep's algorithm in float64, one sample at a time (slow, for tests).

    Feature-outer scan in the sweep's shared random order, then ỹ ~ σ(φ(x̃)·θ); ``y`` None
    means "first sweep": ỹ is drawn first, as the chain does.  Returns (codes, y).
    """
    D = layout.n_features
    codes, y = codes.astype(np.int64), None if y is None else y.copy()
    if y is None:
        key0 = _stream(seed, it, 1)
        z = theta[layout.rows(codes)].sum(axis=1)
        y = np.array([_bernoulli(z[i], _uniform(key0, i, D, D + 1)) for i in range(len(z))])
    key = _stream(seed, it, 0)
    order = feature_order(np.uint64(key), D)  # the sweep's order, drawn from its key
    for i in range(codes.shape[0]):
        x = codes[i]
        for f in order:
            M = int(layout.n_modalities[f])
            if M == 1:
                continue
            cand = np.repeat(x[None, :], M, axis=0)
            cand[:, f] = np.arange(M)
            r = layout.rows(cand)
            sc = (mu[r] + y[i] * theta[r]).sum(axis=1)
            w = np.exp(sc - sc.max())
            target = _uniform(key, i, f, D + 1) * w.sum()
            x[f] = int(np.sum(np.cumsum(w)[: M - 1] <= target))
        y[i] = _bernoulli(theta[layout.rows(x[None, :])[0]].sum(), _uniform(key, i, D, D + 1))
    return codes, y


def test_feature_order_is_a_uniform_permutation():
    orders = [tuple(feature_order(np.uint64(_stream(5, it, 0)), 3)) for it in range(30_000)]
    assert all(sorted(o) == [0, 1, 2] for o in orders)
    counts = np.unique(orders, axis=0, return_counts=True)[1]
    # 6 orders, 5 000 expected each, sd ≈ 65: allow ~5 sd
    assert counts.size == 6 and np.abs(counts - 5_000).max() < 330
    assert len({tuple(feature_order(np.uint64(_stream(5, it, 0)), 14)) for it in range(50)}) == 50


def test_splitmix64_matches_the_python_definition():
    args = [(0, 0, 0), (5, 100, 1), (-1, 3, 0), (2**40, 2**31, 2**32 - 1), (2**63 + 5, 7, 2)]
    for seed, it, i in args:
        key = stream_key(seed, it, i)
        assert type(key) is np.uint64 and int(key) == _stream(seed & MASK, it, i)
    z = np.arange(1, 50, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert mix64(z).dtype == np.uint64
    assert [int(v) for v in mix64(z)] == [_mix(int(v)) for v in z]
    assert int(mix64(np.uint64(12345))) == _mix(12345)


@pytest.mark.parametrize("hashed", [False, True])
def test_table_rows_follow_the_definition(hashed):
    """offset_t + Σ_f code_f stride_{t,f}, bucketed for hashed tables (tables/layout.py's doc)."""
    M = [3, 7, 2, 12, 5]
    sizes = {(1, 3): 16, (0, 2, 4): 5} if hashed else None
    lay = TableLayout.all_pairs(M, triples=True, hash_sizes=sizes)
    rng = np.random.default_rng(3)
    X = rng.integers(0, M, size=(500, len(M))).astype(np.int32)
    keys = X.astype(np.int64) @ lay.strides.T
    for t in range(lay.n_tables):
        if lay.is_hashed(t):
            keys[:, t] = hash_rows(keys[:, t], lay.hash_salts[t], int(lay.hash_sizes[t]))
    expected = lay.offsets[:-1] + keys
    rows = lay.rows(X)
    assert rows.dtype == np.int64
    np.testing.assert_array_equal(rows, expected)
    assert np.all((rows >= lay.offsets[:-1]) & (rows < lay.offsets[1:]))
    # any integer output, and codes padded with an extra all-zero column (the dense chain)
    padded = np.zeros((X.shape[0], X.shape[1] + 1), dtype=np.uint8)
    padded[:, :-1] = X
    tabs = table_arrays(
        lay.tables, lay.strides, lay.offsets, lay.hash_sizes, lay.hash_salts, width=3, pad=len(M)
    )
    out = np.empty(rows.shape, dtype=np.int32)
    table_rows(padded, tabs, out)
    np.testing.assert_array_equal(out, expected)


def _random_model(layout, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(0, scale, layout.K), rng.normal(0, scale, layout.K)


@pytest.mark.parametrize(
    "layout",
    [
        TableLayout.all_pairs([2, 3, 4]),
        TableLayout([2, 3, 2, 1, 5], [(0, 1, 2), (0, 3), (2, 4), (1,), (4,)]),
    ],
    ids=["pairs", "triple+M1"],
)
def test_stationary_statistics_match_exact(layout):
    mu, theta = _random_model(layout, 1)
    Ed, Ec = expected_statistics(layout, mu, theta, 1.0)
    n = 200_000
    chain = GibbsChain(layout, n, [np.ones(m) for m in layout.n_modalities], seed=0)
    for _ in range(20):
        chain.sweep(mu, theta)
    d, c = chain.statistics(theta)
    # Monte-Carlo sd of a frequency with n = 200 000 is ≤ 0.0011: allow ~5 sd
    assert np.abs(d / n - Ed).max() < 0.006
    assert np.abs(c / n - Ec).max() < 0.006
    assert d.sum() == n * layout.n_tables
    chain.sweep(mu, theta, statistics=False)
    d2, c2 = chain.statistics(theta)
    np.testing.assert_array_equal(
        d2, np.bincount(layout.rows(chain.codes).ravel(), minlength=layout.K)
    )


@pytest.mark.parametrize(
    "layout, scale",
    [
        (TableLayout.all_pairs([3, 2, 5, 4, 10]), 1.0),
        (TableLayout([2, 3, 2, 1, 5, 4], [(0, 1, 2), (0, 3), (2, 4), (1,), (4,)]), 1.0),
        # weights are products of exp(W - row max); at this scale they underflow and the
        # kernel falls back to sums of W and exps for those 8-sample groups
        (TableLayout.all_pairs([3, 2, 5, 4, 10]), 40.0),
    ],
    ids=["pairs", "triple+M1+untabled", "underflow-fallback"],
)
def test_same_samples_as_reference_sweep(layout, scale):
    mu, theta = _random_model(layout, 2, scale)
    chain = GibbsChain(layout, 300, [np.ones(m) for m in layout.n_modalities], seed=7)
    codes, y = chain.codes.copy(), None
    for it in range(2):
        chain.sweep(mu, theta)
        codes, y = reference_sweep(codes, y, layout, mu, theta, 7, it)
        # float32 parameters may flip a draw that falls within ~1e-7 of a CDF boundary
        assert np.mean(chain.codes == codes) > 0.999
        codes = chain.codes.astype(np.int64)  # continue from the chain's state
        y = chain._y.astype(np.int64)
    np.testing.assert_array_equal(chain.rows, layout.rows(chain.codes))
    assert np.all(chain.codes[:, layout.n_modalities == 1] == 0)


def test_statistics_for_another_theta_and_logits():
    lay = TableLayout.all_pairs([4, 3, 6])
    mu, theta = _random_model(lay, 3)
    chain = GibbsChain(lay, 5_000, [np.ones(m) for m in lay.n_modalities], seed=1)
    for _ in range(3):
        chain.sweep(mu, theta)
    other = theta * 0.5
    for th in (theta, other):
        d, c = chain.statistics(th)
        rows = lay.rows(chain.codes)
        z = th[rows].sum(axis=1)
        np.testing.assert_allclose(chain.logits(th), z, rtol=1e-12, atol=1e-12)
        w = 1.0 / (1.0 + np.exp(-z))
        np.testing.assert_array_equal(d, np.bincount(rows.ravel(), minlength=lay.K))
        c_ref = np.bincount(rows.ravel(), weights=np.repeat(w, lay.n_tables), minlength=lay.K)
        np.testing.assert_allclose(c, c_ref, atol=1e-6)  # fixed point: 2^-33 per sample


def test_chain_validates_input():
    lay = TableLayout.all_pairs([2, 3])
    chain = GibbsChain(lay, 10, [np.ones(2), np.ones(3)], seed=0)
    with pytest.raises(ValueError, match="shape"):
        chain.sweep(np.zeros(lay.K + 1), np.zeros(lay.K))
    with pytest.raises(ValueError, match="marginal"):
        GibbsChain(lay, 10, [np.ones(2), np.ones(2)], seed=0)
    with pytest.raises(ValueError, match="positive"):
        GibbsChain(lay, 0, [np.ones(2), np.ones(3)], seed=0)
    wide = TableLayout([2] * 40, [(f,) for f in range(40)])  # site counters past 2^32
    with pytest.raises(ValueError, match="below 2\\^32"):
        GibbsChain(wide, 110_000_000, [np.ones(2)] * 40, seed=0)
    warm_up()


def test_warm_up_says_what_it_waits_for():
    """A lesson's first cell calls ``warm_up(say=print)``: one line before the compiling
    starts (it can take a minute), one with the seconds once the sampler is there."""
    lines: list[str] = []
    warm_up(say=lines.append)
    assert len(lines) == 2, lines
    assert "about a minute" in lines[0] and "ready" in lines[1]
    assert float(lines[1].split("(")[1].split(" s")[0]) >= 0


_SCRIPT = textwrap.dedent(
    """
    import hashlib, numpy as np
    from aggmrf_explore import TableLayout
    from aggmrf_explore.kernels import GibbsChain
    lay = TableLayout.all_pairs([3, 7, 2, 12, 5])
    rng = np.random.default_rng(0)
    mu, theta = rng.normal(0, 1, lay.K), rng.normal(0, 1, lay.K)
    ch = GibbsChain(lay, 3001, [np.ones(m) for m in lay.n_modalities], seed=5)
    h = hashlib.sha256()
    for _ in range(4):
        ch.sweep(mu, theta)
        d, c = ch.statistics(theta)
        for a in (ch.codes, ch.rows, d, c, ch.statistics(theta * 0.3)[1]):
            h.update(np.ascontiguousarray(a).tobytes())
    print(h.hexdigest())
    """
)


def test_bit_identical_across_thread_counts():
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        digests.append(out.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1]
    assert len(digests[0]) == len(hashlib.sha256().hexdigest())
