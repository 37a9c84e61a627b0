"""kernels/sums.py: numpy's pairwise sums, bit for bit, on any number of threads."""

import numpy as np
import pytest

from aggmrf_explore import metrics
from aggmrf_explore.kernels import set_threads, sums


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or np.float64(a).tobytes() == np.float64(b).tobytes()


def _values(rng, K: int) -> np.ndarray:
    """Magnitudes over six decades (an order-sensitive sum), a few signed zeros."""
    a = rng.normal(0, 1, K) * 10.0 ** rng.uniform(-3, 3, K)
    if K >= 3:
        a[rng.choice(K, 3, replace=False)] = [0.0, -0.0, 1e-310]
    return a


# around numpy's block (128), the compiled threshold and the top split, and a large odd size
SIZES = [0, 1, 7, 8, 127, 128, 129, 1000, 99_991, sums.SMALL - 1, sums.SMALL, 4 * sums.SMALL + 9]


@pytest.mark.parametrize("K", SIZES)
def test_relative_l1_pair_has_numpys_bits(K):
    rng = np.random.default_rng(K)
    e_d, t_d, e_c, t_c = (_values(rng, K + 2) for _ in range(4))
    subset = np.flatnonzero(rng.random(K + 2) > 0.3)
    for rows in (np.arange(1, K + 1), subset):  # a range (no index read) and a gather
        want = (
            metrics.relative_l1(e_d[rows], t_d[rows]),
            metrics.relative_l1(e_c[rows], t_c[rows]),
        )
        for threads in (1, 2):
            set_threads(threads)
            got = sums.relative_l1_pair(e_d, t_d, e_c, t_c, rows)
            assert all(_same(g, w) and type(g) is float for g, w in zip(got, want, strict=True))
    set_threads(2)


def test_relative_l1_pair_conventions_and_non_finite():
    K = sums.SMALL + 3
    rng = np.random.default_rng(1)
    est, rows = _values(rng, K), np.arange(1, K)
    zero = np.zeros(K)
    assert sums.relative_l1_pair(zero, zero, est, est, rows) == (0.0, 0.0)
    d_err, _ = sums.relative_l1_pair(est, zero, est, est, rows)
    assert d_err == float("inf")
    bad = est.copy()
    bad[[5, 9]] = [np.inf, np.nan]
    want = metrics.relative_l1(bad[rows], est[rows])
    got = sums.relative_l1_pair(bad, est, bad, est, rows)
    assert np.isnan(want) and all(np.isnan(g) for g in got)


@pytest.mark.parametrize("K", SIZES[1:])
def test_squares_sum_has_numpys_bits(K):
    x = _values(np.random.default_rng(K + 7), K)
    for start in (0, 1):
        for threads in (1, 2):
            set_threads(threads)
            assert _same(sums.squares_sum(x, start), np.sum(x[start:] ** 2))
    set_threads(2)


def test_the_order_is_numpys_not_any_order():
    """A deliberate change of the order (a plain left-to-right sum) changes the bits on these
    values: the tests above can fail."""
    x = _values(np.random.default_rng(3), 99_991)
    left_to_right = 0.0
    for v in x * x:
        left_to_right += v
    assert not _same(left_to_right, np.sum(x**2))
