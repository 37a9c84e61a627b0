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


def test_bound_excess_in_numpy_is_the_kernel():
    rng = np.random.default_rng(1)
    for _ in range(20):
        mu, theta = rng.normal(0, 80, 50), rng.normal(0, 30, 50)
        if rng.random() < 0.5:
            theta[rng.integers(50)] = np.nan
        assert kupdate.bound_excess(mu, theta, 200.0, 50.0) == tuple(
            kupdate.bound_excess_compiled(mu, theta, 200.0, 50.0)
        )


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
