"""Correctness of the Gibbs kernel (no timing assertions anywhere).

- stationary statistics match exact expectations (pairs, and a triple + a 1-modality feature);
- the optimised kernel draws the same samples as a plain float64 reference sweep written
  here in Python (same counter-based RNG), up to rare float32 ties;
- bit-identical chains and statistics with NUMBA_NUM_THREADS=1 and =2;
- statistics(θ) for another θ, rows kept in sync with codes, logits.
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


def _next(state):
    state = (state + GOLDEN) & MASK
    return state, (_mix(state) >> 11) * (1.0 / 9007199254740992.0)


def reference_sweep(codes, layout, mu, theta, seed, it):
    """The pre-optimisation algorithm, float64, one sample at a time (slow, for tests)."""
    codes = codes.copy()
    for i in range(codes.shape[0]):
        state = _stream(seed, it, i)
        x = codes[i].astype(np.int64)
        logit = theta[layout.rows(x[None, :])[0]].sum()
        state, u = _next(state)
        if logit >= 0:
            y = 1.0 if u * (1.0 + np.exp(-logit)) < 1.0 else 0.0
        else:
            el = np.exp(logit)
            y = 1.0 if u * (1.0 + el) < el else 0.0
        order = list(range(layout.n_features))
        for f in range(layout.n_features - 1, 0, -1):
            state, u = _next(state)
            j = int(u * (f + 1))
            order[f], order[j] = order[j], order[f]
        for f in order:
            M = int(layout.n_modalities[f])
            if M == 1:
                continue
            cand = np.repeat(x[None, :], M, axis=0)
            cand[:, f] = np.arange(M)
            r = layout.rows(cand)
            sc = (mu[r] + y * theta[r]).sum(axis=1)
            w = np.exp(sc - sc.max())
            state, u = _next(state)
            target, acc, new = u * w.sum(), 0.0, M - 1
            for v in range(M):
                acc += w[v]
                if target < acc:
                    new = v
                    break
            x[f] = new
        codes[i] = x
    return codes


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


def test_same_samples_as_reference_sweep():
    lay = TableLayout.all_pairs([3, 2, 5, 4, 10])
    mu, theta = _random_model(lay, 2)
    chain = GibbsChain(lay, 300, [np.ones(m) for m in lay.n_modalities], seed=7)
    start = chain.codes.copy()
    chain.sweep(mu, theta)
    ref = reference_sweep(start, lay, mu, theta, 7, 0)
    # float32 parameters may flip a draw that falls within ~1e-7 of a CDF boundary
    assert np.mean(chain.codes == ref) > 0.999
    np.testing.assert_array_equal(chain.rows, lay.rows(chain.codes))


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
    warm_up()


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
