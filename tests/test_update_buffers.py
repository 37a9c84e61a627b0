"""The trainer's per-iteration (K,) work without temporaries (kernels.update): results written
into kept buffers, fused passes, the gauge step's two columns in one pass with a block's
groups in parallel.  Each gives the bits of the numpy expressions it replaces, whatever the
input (non-finite values, signed zeros) and the thread count; the trainer keeps no buffer
as its state."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from aggmrf_explore.kernels import set_threads
from aggmrf_explore.kernels import update as ku
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.pcd import gauge_groups
from aggmrf_explore.tables import TableLayout, aggregate


def _awkward(rng, K: int, scale: float = 3.0) -> np.ndarray:
    """Normal values with a few NaN, ±inf and signed zeros."""
    a = rng.normal(0, scale, K)
    at = rng.choice(K, 6, replace=False)
    a[at] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-310]
    return a


def _same(a, b) -> bool:
    """Equal bit for bit (0.0 != -0.0), but any NaN equals any NaN (numpy's and numba's
    inf − inf differ in the sign bit of the NaN)."""
    a, b = np.atleast_1d(np.asarray(a, dtype=np.float64)), np.atleast_1d(np.asarray(b))
    nan = np.isnan(a)
    if a.shape != b.shape or not np.array_equal(nan, np.isnan(b)):
        return False
    return np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))


@pytest.mark.parametrize("K", [300, ku.SMALL + 77])
@pytest.mark.parametrize("gradient,precondition", list(itertools.product((0, 1, 2), (0, 1, 2))))
def test_update_into_buffers_is_the_update(K, gradient, precondition):
    rng = np.random.default_rng(K + 3 * gradient + precondition)
    a = [_awkward(rng, K) for _ in range(8)]
    a[2], a[4], a[6] = np.abs(a[2]), np.abs(a[4]), (rng.random(K) > 0.1).astype(float)
    arrays = ku.UpdateArrays(*a)
    scalars = ku.UpdateScalars(0.7, 3.1, 0.25, gradient, precondition, 2.5, 4.0, 0.3, 0.2, True)
    fresh = ku.update_pass(arrays, scalars)
    out = ku.update_buffers(K)
    for threads in (1, 2):
        set_threads(threads)
        for b in out:
            b[:] = 7.0  # whatever the buffers held before
        got = ku.update_pass(arrays, scalars, out)
        assert all(_same(x, y) for x, y in zip(fresh, got, strict=True))
        assert got[0] is out.new_mu and got[9] is out.dir_theta
    set_threads(2)


def _gauge_case(m, seed):
    lay = TableLayout.all_pairs(m)
    rng = np.random.default_rng(seed)
    K = lay.K
    columns = (_awkward(rng, K), rng.normal(0, 2, K))
    regs = (np.ones(K), (rng.random(K) > 0.05).astype(float))
    regs[0][0] = 0.0
    return lay, columns, regs, rng.normal(0, 50, K)


@pytest.mark.parametrize("m", [[3, 4, 2], [180, 120, 3]])
def test_gauge_pair_in_one_pass_is_the_column_by_column_pass(m):
    """Both columns in one pass, a large block's groups in parallel (180 × 120 rows are
    more than PARALLEL_BLOCK_ROWS): numpy's bits, on 1 and 2 threads; a None target is 0."""
    lay, columns, regs, target = _gauge_case(m, len(m) + m[0])
    groups = gauge_groups(lay)
    sizes = np.diff(groups.t_ptr[groups.block_ptr])
    assert (sizes >= ku.PARALLEL_BLOCK_ROWS).any() == (m[0] > 100)
    # the large blocks grouped by their table's first feature are read in row order
    assert ((sizes >= ku.PARALLEL_BLOCK_ROWS) & (groups.interleaved > 0)).any() == (m[0] > 100)
    K = lay.K
    for targets in ((target, None), (None, target)):
        args = (columns, targets, (2.0, 6.0), regs, (False, True), groups)
        ref = ku.gauge_pass(*args, compiled=False)
        zeros = tuple(np.zeros(K) if t is None else t for t in targets)
        assert all(
            _same(x, y)
            for x, y in zip(
                ref, ku.gauge_pass(columns, zeros, *args[2:], compiled=False), strict=True
            )
        )
        one_by_one = [x.copy() for x in columns]
        for x, t, lam, reg, move in zip(
            one_by_one, zeros, (2.0, 6.0), regs, (False, True), strict=True
        ):
            ku.gauge_column_compiled(x, t, lam, reg, move, *groups)
        assert all(_same(x, y) for x, y in zip(ref, one_by_one, strict=True))
        out = [np.full(K, 7.0), np.full(K, 7.0)]
        for threads in (1, 2):
            set_threads(threads)
            got = ku.gauge_pass(*args, compiled=True, out=out)
            assert got[0] is out[0] and got[1] is out[1]
            assert all(_same(x, y) for x, y in zip(ref, got, strict=True))
        set_threads(2)
    assert not _same(ref[1], columns[1])  # (the pass moved the column)


@pytest.mark.parametrize("K", [500, ku.SMALL + 5])
def test_momentum_average_errors_and_norm_are_numpys(K):
    rng = np.random.default_rng(K)
    theta, new_theta, v = _awkward(rng, K), _awkward(rng, K), _awkward(rng, K)
    beta = 0.8
    with np.errstate(all="ignore"):
        v_ref = beta * v + (new_theta - theta)
        theta_ref = theta + v_ref
    v_out, theta_out = np.empty(K), new_theta.copy()
    ku.momentum_step(theta, theta_out, v, beta, v_out, theta_out)  # (θ + v' in place)
    assert _same(v_out, v_ref) and _same(theta_out, theta_ref)

    bar, x, w = _awkward(rng, K), _awkward(rng, K), 3.0 / 7.0
    ref = bar.copy()
    with np.errstate(all="ignore"):
        ref += w * (x - ref)
    ku.average_step(bar, x, w)
    assert _same(bar, ref)


def test_the_trainer_keeps_no_buffer_as_its_state():
    """μ, θ, d̂ and ĉ a caller holds after an iteration are not rewritten by the next ones
    (the iteration's buffers are separate; the velocity, private, alternates between two
    arrays), with and without the gauge step and the momentum, at a size where the
    compiled passes run."""
    rng = np.random.default_rng(0)
    m = [30, 25, 40, 12]
    X = np.stack([rng.integers(0, k, 4000) for k in m], axis=1).astype(np.int32)
    y = (rng.random(4000) < 0.3).astype(np.int8)
    lay = TableLayout.all_pairs(m)
    assert lay.K >= ku.SMALL
    agg = aggregate(X, y, lay)
    for gauge, momentum in ((True, 0.0), (False, 0.8), (True, 0.8)):
        st = replace(default_settings(lay, agg.n), n_gibbs=300, seed=1, gauge=gauge)
        tr = PCDTrainer(agg, replace(st, momentum=momentum))
        tr.step(2)
        held = [tr.mu, tr.theta, tr.d_hat, tr.c_hat]
        kept = [a.copy() for a in held]
        tr.step(3)
        assert all(_same(a, b) for a, b in zip(held, kept, strict=True))
        assert not _same(tr.theta, kept[1])
        buf = tr._scratch["buffers"]  # noqa: SLF001
        buffers = [*buf.update, *buf.free, buf.velocity]
        state = [tr.mu, tr.theta, tr.d_hat, tr.c_hat, *tr._velocity]  # noqa: SLF001
        assert not any(np.shares_memory(a, b) for a in state for b in buffers)
