"""Below a size threshold the row, logit, update and bound computations run in numpy (a
first start's small data then need no compiler); they give the same bits as the numba
kernels, whatever the input (non-finite values, hashed tables, every update variant)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aggmrf_explore.kernels import rows as krows
from aggmrf_explore.kernels import update as kupdate
from aggmrf_explore.kernels.update import UpdateArrays, UpdateScalars
from aggmrf_explore.tables import TableLayout


def _arrays(rng, K: int) -> UpdateArrays:
    a = [rng.normal(0, 3, K) for _ in range(8)]
    a[2] = np.abs(a[2]) * (rng.random(K) > 0.2)  # d̂ ≥ 0, some zeros
    a[4] = np.abs(a[4])
    a[6] = (rng.random(K) > 0.1).astype(float)
    for arr in a[:4]:  # a few non-finite values
        arr[rng.integers(0, K, 2)] = [np.nan, np.inf]
    return UpdateArrays(*(np.ascontiguousarray(x) for x in a))


@pytest.mark.parametrize(
    "gradient,precondition,intercept", itertools.product((0, 1, 2), (0, 1, 2), (True, False))
)
def test_update_pass_in_numpy_is_the_kernel_bit_for_bit(gradient, precondition, intercept):
    rng = np.random.default_rng(gradient * 4 + precondition * 2 + intercept)
    arrays = _arrays(rng, 300)
    scalars = UpdateScalars(0.7, 3.1, 0.25, gradient, precondition, 2.5, 4.0, 0.3, 0.2, intercept)
    small = kupdate.update_pass(arrays, scalars)
    compiled = kupdate.update_pass_compiled(arrays, scalars)
    for a, b in zip(small, compiled, strict=True):
        np.testing.assert_array_equal(a, b)  # (NaN == NaN here)


@pytest.mark.parametrize("K", [1, 50, 5_000, kupdate.BOUND_COMPILED_FROM + 7])
def test_bound_excess_in_numpy_is_the_kernel(K):
    """The same (maximum, first position) as numpy's argmax, with ties and non-finite values
    in different chunks of the kernel's parallel maximum."""
    rng = np.random.default_rng(K)

    def numpy_excess(a, bound):
        v = np.where(np.isfinite(a), np.abs(a), np.inf) / bound
        return float(v.max()), int(np.argmax(v))

    for trial in range(20):
        mu, theta = rng.normal(0, 80, K), rng.normal(0, 30, K)
        at = rng.integers(K, size=2)
        if trial % 4 == 1:
            theta[at] = 400.0  # a tie, possibly in two chunks: the first wins
        elif trial % 4 == 2:
            theta[at] = [np.nan, -np.inf]
        elif trial % 4 == 3:
            mu[at] = -mu[at].max() * 2
        want = (*numpy_excess(theta, 50.0), *numpy_excess(mu, 200.0))
        assert kupdate.bound_excess(mu, theta, 200.0, 50.0) == want
        assert tuple(kupdate.bound_excess_compiled(mu, theta, 200.0, 50.0)) == want


@pytest.mark.parametrize("hashed", [False, True])
def test_rows_and_logits_in_numpy_are_the_kernels(hashed):
    m = [5, 7, 3, 40]
    sizes = {(0, 3): 17, (1, 3): 23} if hashed else None
    lay = TableLayout.all_pairs(m, hash_sizes=sizes)
    rng = np.random.default_rng(2)
    X = np.stack([rng.integers(0, k, 900) for k in m], axis=1).astype(np.int32)
    assert X.shape[0] * lay.n_tables < krows.SMALL  # (the numpy path)
    small = np.empty((900, lay.n_tables), dtype=np.int64)
    compiled = np.empty_like(small)
    krows.table_rows(X, lay.table_arrays, small)
    krows.table_rows_compiled(X, lay.table_arrays, compiled)
    np.testing.assert_array_equal(small, compiled)
    theta = rng.normal(0, 1, lay.K)
    np.testing.assert_array_equal(
        krows.sample_logits(small, theta), krows.sample_logits_compiled(small, theta)
    )
    # (a large input takes the kernel: the same numbers either way)
    big = np.tile(X, (1200, 1))
    assert big.shape[0] * lay.n_tables >= krows.SMALL
    np.testing.assert_array_equal(lay.rows(big)[:900], small)
