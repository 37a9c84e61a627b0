"""PCD with the samples sharded on Dask workers (aggmrf_explore.distributed): bit-identical
θ, μ to the single-process trainer on a 2-worker LocalCluster(processes=True); a lost
worker's shard is re-created bit for bit, or (without checkpoints) the run fails cleanly
with the last good model kept."""

from __future__ import annotations

import os
from functools import partial

import distributed
import numpy as np
import pytest

from aggmrf_explore.distributed import WorkerLostError, sharded_chain_factory
from aggmrf_explore.exact import expected_statistics
from aggmrf_explore.kernels import MHGibbsChain
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.tables import AggregatedData, TableLayout


@pytest.fixture(scope="module")
def client():
    # one numba thread per worker process, set in the workers' environment only: changing
    # this process's NUMBA_NUM_THREADS after its threads launched breaks numba's next compile
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"NUMBA_NUM_THREADS": "1"},
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture
def cluster(client):
    """The module's client once both workers are up: a nanny restarts a killed worker, which
    takes seconds on a loaded machine, and the next test must not start before it is back."""
    client.wait_for_workers(2, timeout=180)
    return client


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    lay = TableLayout.all_pairs([3, 40, 25, 6])
    mu, theta = rng.normal(0, 0.7, lay.K), rng.normal(0, 0.4, lay.K)
    n = 50_000
    return AggregatedData(lay, *expected_statistics(lay, mu, theta, n), n)


def _trainer(data, factory):
    st = default_settings(data.layout, data.n, n_gibbs=3001, seed=7)
    return PCDTrainer(data, st, chain_factory=factory)


def test_sharded_pcd_is_bit_identical(cluster, data):
    one = _trainer(data, partial(MHGibbsChain))
    many = _trainer(data, sharded_chain_factory(cluster))
    assert many.chain.n_shards == 2
    assert many.chain.shared  # a LocalCluster: (μ, θ) and statistics through mapped files
    one.fit(6)
    many.fit(6)
    np.testing.assert_array_equal(one.mu, many.mu)
    np.testing.assert_array_equal(one.theta, many.theta)
    np.testing.assert_array_equal(one.chain.codes, many.chain.codes)
    assert one.history[-1].acceptance == many.history[-1].acceptance is not None
    # shards ≠ workers, and the arrays sent through Dask instead of the mapped files
    three = _trainer(data, sharded_chain_factory(cluster, n_shards=3, shared=False))
    assert not three.chain.shared
    three.fit(6)
    np.testing.assert_array_equal(one.theta, three.theta)
    np.testing.assert_array_equal(one.mu, three.mu)


def _kill_one_worker(client) -> None:
    victim = sorted(client.scheduler_info()["workers"])[0]
    client.run(os._exit, 1, workers=[victim], on_error="ignore")


@pytest.fixture
def short_timeouts():
    """Calls to a dead worker fail after 3 s instead of the default 30 s connect timeout."""
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        yield


def test_lost_worker_shard_is_recreated_bit_for_bit(cluster, data, short_timeouts):
    """A worker dies after 7 iterations (checkpoint at 5, two sweeps replayed): the run
    continues with a warning and ends exactly where the single-process run ends."""
    one = _trainer(data, partial(MHGibbsChain))
    one.fit(10)
    tr = _trainer(data, sharded_chain_factory(cluster, checkpoint_every=5))
    tr.fit(7)
    _kill_one_worker(cluster)
    with pytest.warns(RuntimeWarning, match="re-creating the shard"):
        tr.fit(3)
    assert tr.chain.recreated >= 1
    np.testing.assert_array_equal(tr.mu, one.mu)
    np.testing.assert_array_equal(tr.theta, one.theta)


def test_lost_worker_without_checkpoints_fails_cleanly(cluster, data, short_timeouts):
    tr = _trainer(data, sharded_chain_factory(cluster, checkpoint_every=0))
    tr.fit(2)
    mu, theta = tr.mu.copy(), tr.theta.copy()
    _kill_one_worker(cluster)
    with pytest.raises(WorkerLostError, match="last good"):
        tr.fit(1)
    assert tr.iteration == 2
    np.testing.assert_array_equal(tr.mu, mu)
    np.testing.assert_array_equal(tr.model.theta, theta)
