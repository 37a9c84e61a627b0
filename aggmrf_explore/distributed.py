"""PCD on a Dask cluster: the Gibbs samples split into shards, each held by one worker
(a Dask *actor*) for the whole run.

:class:`ShardedChain` implements the :class:`~aggmrf_explore.kernels.Chain` protocol, so the
one training loop (:class:`~aggmrf_explore.mrf.PCDTrainer`, via ``chain_factory``) runs
unchanged: each iteration the driver sends (μ, θ) to every shard, each shard sweeps its
samples (an :class:`~aggmrf_explore.kernels.MHGibbsChain` holding samples first .. first +
count − 1) and returns its *integer* partial statistics (one int64 per row packing the
count and the fixed-point label sum), and the driver sums them in shard order.  Integer sums are exact and the uniforms are keyed by the global sample index, so
θ and μ are bit-identical to the single-process trainer with
``MHGibbsChain(layout, n', marginals, seed)`` (``tests/test_distributed.py``), for any
number of shards.

Samples never travel during sweeps: (μ, θ) (K float64 each) go out and K int64 come back
per shard and iteration.  Workers on the driver's own host (a ``LocalCluster``, or workers
started on the same machine) exchange them through memory-mapped files instead, as joblib
does for large arrays: the driver writes (μ, θ) into one (K, 2) float64 map in a temporary
directory (``/dev/shm`` where it exists), the sweep kernel's own parameter layout, which
every shard maps once and reads in place (one copy in memory and in the shared cache, as
with threads), and each shard writes its packed statistics into a (K,) int64 map of its own, and only small messages go through Dask
(``shared="auto"``: used when every worker reports the driver's host and can open the
files; ``shared=False`` always sends the arrays).  The numbers are the same either way.
Numba kernels compile once per worker process (``cache=True``: loaded from numba's on-disk
cache when it is warm).

A lost worker: its shards are **re-created** on a live worker, with a warning, bit for bit.
Every ``checkpoint_every`` sweeps the driver copies each shard's state (codes, labels,
sweep count: n'·(D + 1) small integers, no parameters) and keeps the (μ, θ) of the sweeps
since; a lost shard is rebuilt from its constructor arguments, restored from the
checkpoint and replayed through those sweeps (the counter-based RNG keyed by (seed,
sweep, global sample) makes the replay exact), then does the current sweep.  The driver
holds at most ``checkpoint_every`` × 2K floats of parameters for this.  If no worker is
left, :class:`WorkerLostError` is raised before the trainer updates anything, so
``trainer.mu``, ``trainer.theta`` and ``trainer.model`` are the last good iterate.

:func:`connect` turns ``local:N`` into a ``LocalCluster`` with N worker processes (one
thread each) and ``tcp://HOST:PORT`` into a client of an existing scheduler, and prints
the dashboard link.

The sampler is chosen by the same rule as in one process
(:func:`~aggmrf_explore.kernels.chain.resolve_sampler`), so a command gives the same model
with and without ``--scheduler``: "mh" (``--sampler auto`` when some M_f > 1000) is split
into shards as above; the full-conditional chain ("gibbs", what ``auto`` picks for Adult or
Bank) does not split into shards yet, and runs whole on one worker (:class:`WholeChain`:
the same chain as in one process, its kernels on that worker's cores).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
import warnings
import weakref
from functools import partial

import numpy as np

from .errors import AggMRFError
from .kernels.chain import make_chain, resolve_sampler
from .kernels.mh import fixed_point
from .kernels.mh_chain import MHGibbsChain, mh_features, unpack_statistics

__all__ = [
    "ChainActor",
    "ShardActor",
    "ShardedChain",
    "WholeChain",
    "WorkerLostError",
    "cluster_chain_factory",
    "connect",
    "sharded_chain_factory",
]


class WorkerLostError(AggMRFError):
    """No worker is left to hold a lost shard: the trainer still holds the last good (μ, θ)."""


class ShardActor:
    """One shard of the chain, living on a worker (created with ``actor=True``)."""

    def __init__(self, layout, n_samples, marginals, seed, use_mh, first, count) -> None:
        self.chain = MHGibbsChain(
            layout, n_samples, marginals, seed, use_mh=use_mh, first=first, count=count
        )

    def sweep(self, mu: np.ndarray, theta: np.ndarray):
        """Sweep under (μ, θ); returns (packed statistics int64 (K,), accepted (D,),
        proposed (D,), seconds of compute on the worker)."""
        t0 = time.perf_counter()
        self.chain.sweep(mu, theta)
        packed = self.chain.packed_statistics(theta)
        return packed, self.chain.accepted, self.chain.proposed, time.perf_counter() - t0

    def attach(self, params_path: str, stats_path: str, K: int) -> bool:
        """Map the driver's parameter file (float64 (K, 2), rows (μ_r, θ_r): the sweep
        kernel's own layout, read in place by every shard on this host) and this shard's
        statistics file (int64 (K,)); False if they cannot be opened here (another host)."""
        try:
            # plain ndarray views of writable maps: the kernels' usual array types
            self._params = np.asarray(
                np.memmap(params_path, dtype=np.float64, mode="r+", shape=(K, 2))
            )
            self._out = np.asarray(np.memmap(stats_path, dtype=np.int64, mode="r+", shape=(K,)))
        except OSError:
            return False
        return True

    def sweep_shared(self):
        """:meth:`sweep` under the mapped parameters, the packed statistics written into
        the mapped statistics file; returns (None, accepted, proposed, seconds)."""
        t0 = time.perf_counter()
        self.chain.sweep_packed(self._params, self._out)
        return None, self.chain.accepted, self.chain.proposed, time.perf_counter() - t0

    def replay(self, state, params) -> int:
        """Restore ``state`` (None: the initial one) and sweep through ``params``, a list of
        (μ, θ); returns the sweeps done."""
        if state is not None:
            self.chain.restore(state)
        for mu, theta in params:
            self.chain.sweep(mu, theta, statistics=False)
        return self.chain.sweeps

    def state(self) -> dict:
        return self.chain.state()

    def statistics(self, theta: np.ndarray) -> np.ndarray:
        return self.chain.packed_statistics(theta)

    def codes(self) -> np.ndarray:
        return np.asarray(self.chain.codes)

    def rows(self) -> np.ndarray:
        return np.asarray(self.chain.rows)


class ChainActor:
    """A whole chain (``make_chain(..., sampler)``) living on a worker (``actor=True``)."""

    def __init__(self, layout, n_samples, marginals, seed, sampler) -> None:
        self.chain = make_chain(layout, n_samples, marginals, seed, sampler=sampler)

    def sweep(self, mu: np.ndarray, theta: np.ndarray):
        """Sweep under (μ, θ), then the statistics at θ, as the trainer asks in one
        process: returns (d̂, ĉ) unscaled, float64 (K,) each."""
        self.chain.sweep(mu, theta)
        return self.chain.statistics(theta)

    def statistics(self, theta: np.ndarray):
        return self.chain.statistics(theta)

    def codes(self) -> np.ndarray:
        return np.asarray(self.chain.codes)

    def rows(self) -> np.ndarray:
        return np.asarray(self.chain.rows)

    def logits(self, theta: np.ndarray) -> np.ndarray:
        return self.chain.logits(theta)


class WholeChain:
    """The :class:`~aggmrf_explore.kernels.Chain` of a sampler that does not split into
    shards (the full-conditional chain), run whole by one worker of ``client``: each
    iteration sends (μ, θ) and gets (d̂, ĉ) back.  The same calls on the same chain as in
    one process, so θ and μ are bit-identical to it.  No re-creation after a lost worker:
    that raises :class:`WorkerLostError`."""

    def __init__(self, layout, n_samples, marginals, seed, client, sampler="gibbs") -> None:
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise AggMRFError("the Dask cluster has no workers.")
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        self._n = int(n_samples)
        self._future = client.submit(
            ChainActor,
            layout,
            n_samples,
            marginals,
            seed,
            sampler,
            actor=True,
            workers=[workers[0]],
            pure=False,
        )
        self._actor = self._future.result()
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._stats_theta: np.ndarray | None = None

    def _ask(self, method: str, *args):
        try:
            return getattr(self._actor, method)(*args).result()
        except Exception as exc:  # CommClosedError, … from a lost worker
            raise WorkerLostError(
                f"the worker holding the chain was lost ({type(exc).__name__}: {exc}); "
                "the trainer keeps the last good (μ, θ)."
            ) from exc

    @property
    def n_samples(self) -> int:
        return self._n

    @property
    def memory_bytes(self) -> int:
        return 0  # (the samples live on the worker)

    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        mu = np.ascontiguousarray(mu, dtype=np.float64)
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        self._stats = self._ask("sweep", mu, theta)
        self._stats_theta = theta.copy()
        self.sweeps += 1

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if self._stats is None or not np.array_equal(theta, self._stats_theta):
            self._stats = self._ask("statistics", theta)
            self._stats_theta = theta.copy()
        return self._stats[0].copy(), self._stats[1].copy()

    @property
    def codes(self) -> np.ndarray:
        return self._ask("codes")

    @property
    def rows(self) -> np.ndarray:
        return self._ask("rows")

    def logits(self, theta: np.ndarray) -> np.ndarray:
        return self._ask("logits", np.ascontiguousarray(theta, dtype=np.float64))


class ShardedChain:
    """A chain of n' samples split into ``n_shards`` contiguous shards on Dask workers.

    Parameters: as :class:`~aggmrf_explore.kernels.MHGibbsChain` plus ``client`` (a
    ``distributed.Client``), ``n_shards`` (default: one per worker; shard j goes to worker
    j mod W), ``checkpoint_every`` (sweeps between state copies, for re-creating lost
    shards; 0 disables re-creation: a lost worker raises :class:`WorkerLostError`) and
    ``shared`` ("auto", True or False: memory-mapped (μ, θ) and statistics for workers on
    this host, see the module docstring; ``self.shared`` says whether they are in use).
    """

    def __init__(
        self,
        layout,
        n_samples: int,
        marginals,
        seed: int,
        client,
        n_shards: int | None = None,
        checkpoint_every: int = 5,
        shared: bool | str = "auto",
    ) -> None:
        info = client.scheduler_info()["workers"]
        workers = sorted(info)
        if not workers:
            raise AggMRFError("the Dask cluster has no workers.")
        n_samples = int(n_samples)
        n_shards = len(workers) if n_shards is None else int(n_shards)
        n_shards = max(1, min(n_shards, n_samples))
        bounds = np.linspace(0, n_samples, n_shards + 1).astype(np.int64)
        self.client = client
        self.K = int(layout.K)
        self.seed = int(seed)
        self.sweeps = 0
        self.checkpoint_every = int(checkpoint_every)
        self.recreated = 0  # shards re-created after a lost worker
        self.shard_seconds: list[float] = []  # last sweep's compute time per shard
        self._n = n_samples
        self._bits = fixed_point(n_samples)
        use_mh = mh_features(layout)
        self._args = [
            (layout, n_samples, marginals, seed, use_mh, int(a), int(b - a))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        self._futures = [
            self._spawn(j, workers[j % len(workers)]) for j in range(n_shards)
        ]  # keep the actors' futures alive
        self._actors = [f.result() for f in self._futures]
        self._checkpoint: list | None = None  # per-shard states (None: the initial ones)
        self._since: list[tuple[np.ndarray, np.ndarray]] = []  # (μ, θ) since the checkpoint
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._stats_theta: np.ndarray | None = None
        self.accepted = np.zeros(layout.n_features, dtype=np.int64)
        self.proposed = np.zeros(layout.n_features, dtype=np.int64)
        if shared not in ("auto", True, False):
            raise AggMRFError(f"shared must be 'auto', True or False; got {shared!r}.")
        local = all(_is_this_host(info[w].get("host", "")) for w in workers)
        self.shared = False
        if shared is True or (shared == "auto" and local):
            self._open_shared()

    # ------------------------------------------------------------------ shared memory
    def _open_shared(self) -> None:
        """Create the mapped files and attach every shard; keep the plain path if any
        shard cannot open them."""
        root = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self._dir = tempfile.mkdtemp(prefix="aggmrf-shards-", dir=root)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._params_path = os.path.join(self._dir, "params.f64")
        self._P = np.memmap(self._params_path, dtype=np.float64, mode="w+", shape=(self.K, 2))
        self._stats_paths = []
        self._stats_maps = []
        for j in range(len(self._actors)):
            path = os.path.join(self._dir, f"stats{j}.i64")
            self._stats_maps.append(np.memmap(path, dtype=np.int64, mode="w+", shape=(self.K,)))
            self._stats_paths.append(path)
        self.shared = all(self._attach(j, a) for j, a in enumerate(self._actors))
        if not self.shared:
            self._finalizer()

    def _attach(self, j: int, actor) -> bool:
        """Whether ``actor`` (shard j) mapped the shared files."""
        return actor.attach(self._params_path, self._stats_paths[j], self.K).result()

    def _spawn(self, j: int, worker: str):
        return self.client.submit(
            ShardActor, *self._args[j], actor=True, workers=[worker], pure=False
        )

    @property
    def n_samples(self) -> int:
        return self._n

    @property
    def n_shards(self) -> int:
        return len(self._actors)

    # ------------------------------------------------------------------ fault handling
    def _call(self, method: str, *args) -> list:
        """``method(*args)`` on every shard, results in shard order; lost shards are
        re-created (see the module docstring) and asked again."""
        calls: list = []
        for a in self._actors:
            try:
                calls.append(getattr(a, method)(*args))
            except Exception as e:  # the actor's worker is already known to be gone
                calls.append(e)
        out = []
        for j, c in enumerate(calls):
            try:
                if isinstance(c, Exception):
                    raise c
                out.append(c.result())
            except Exception as e:  # CommClosedError, RuntimeError, … from a dead worker
                self._recreate(j, e)
                out.append(getattr(self._actors[j], method)(*args).result())
        return out

    def _recreate(self, j: int, err: Exception) -> None:
        live = sorted(self.client.scheduler_info()["workers"])
        if self.checkpoint_every <= 0 or not live:
            raise WorkerLostError(
                f"the Dask worker holding shard {j} was lost ({type(err).__name__}: {err}); "
                "the trainer keeps the last good μ, θ (save trainer.model and restart)."
            ) from err
        warnings.warn(
            f"shard {j}'s worker was lost ({type(err).__name__}); re-creating the shard on "
            f"{live[j % len(live)]} from the checkpoint and {len(self._since)} replayed sweeps.",
            RuntimeWarning,
            stacklevel=3,
        )
        state = None if self._checkpoint is None else self._checkpoint[j]
        for attempt in range(3):  # the scheduler may still list the dead worker a moment
            try:
                fut = self._spawn(j, live[(j + attempt) % len(live)])
                actor = fut.result(timeout=120)
                actor.replay(state, self._since).result()
                if self.shared and not self._attach(j, actor):
                    raise WorkerLostError(f"the re-created shard {j} cannot map the shared files.")
                break
            except Exception:
                if attempt == 2:
                    raise
                time.sleep(1.0)
                live = sorted(self.client.scheduler_info()["workers"]) or live
        self._futures[j], self._actors[j] = fut, actor
        self.recreated += 1

    # ------------------------------------------------------------------ Chain protocol
    def sweep(self, mu: np.ndarray, theta: np.ndarray, statistics: bool = True) -> None:
        mu = np.ascontiguousarray(mu, dtype=np.float64)
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if self.shared:
            self._P[:, 0] = mu
            self._P[:, 1] = theta
            res = self._call("sweep_shared")
            res = [(self._stats_maps[j], *r[1:]) for j, r in enumerate(res)]
        else:
            res = self._call("sweep", mu, theta)
        packed = np.zeros(self.K, dtype=np.int64)
        self.accepted = np.zeros_like(self.accepted)
        self.proposed = np.zeros_like(self.proposed)
        for pk, aj, pj, _ in res:  # fixed shard order (integers: exact anyway)
            packed += pk
            self.accepted += aj
            self.proposed += pj
        self.shard_seconds = [r[3] for r in res]  # compute time of each shard's sweep
        self._stats = unpack_statistics(packed, *self._bits)
        self._stats_theta = theta.copy()
        self.sweeps += 1
        if self.checkpoint_every > 0:
            if self.sweeps % self.checkpoint_every == 0:
                self._checkpoint = self._call("state")
                self._since = []
            else:
                self._since.append((mu.copy(), theta.copy()))

    @property
    def acceptance(self) -> float | None:
        p = int(self.proposed.sum())
        return None if p == 0 else float(self.accepted.sum() / p)

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if self._stats is None or not np.array_equal(theta, self._stats_theta):
            packed = np.zeros(self.K, dtype=np.int64)
            for pk in self._call("statistics", theta):
                packed += pk
            self._stats = unpack_statistics(packed, *self._bits)
            self._stats_theta = theta.copy()
        return self._stats[0].copy(), self._stats[1].copy()

    @property
    def codes(self) -> np.ndarray:
        return np.concatenate(self._call("codes"))

    @property
    def rows(self) -> np.ndarray:
        return np.concatenate(self._call("rows"))

    @property
    def memory_bytes(self) -> int:
        """Bytes held on the driver (the samples live on the workers)."""
        return int(sum(m.nbytes + t.nbytes for m, t in self._since))

    def logits(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        return theta[self.rows].sum(axis=1)


def sharded_chain_factory(
    client,
    n_shards: int | None = None,
    checkpoint_every: int = 5,
    shared: bool | str = "auto",
    sampler: str = "mh",
    announce: bool = False,
):
    """A ``chain_factory`` for :class:`~aggmrf_explore.mrf.PCDTrainer` on ``client``.

    ``sampler`` is resolved for each layout as in one process (``resolve_sampler``):
    "mh" gives a :class:`ShardedChain`, "gibbs" a :class:`WholeChain` (said on stderr with
    ``announce``)."""
    return partial(
        _make,
        client=client,
        n_shards=n_shards,
        checkpoint_every=checkpoint_every,
        shared=shared,
        sampler=sampler,
        announce=announce,
    )


def _make(
    layout,
    n_samples,
    marginals,
    seed,
    client,
    n_shards,
    checkpoint_every,
    shared,
    sampler="mh",
    announce=False,
):
    if resolve_sampler(layout, sampler) == "gibbs":
        if announce:
            print(
                "the full-conditional sampler (gibbs: what --sampler auto picks for these "
                "tables) runs whole on one Dask worker, as it would here; --sampler mh "
                "splits the samples over the workers (another chain: other numbers)",
                file=sys.stderr,
            )
        return WholeChain(layout, n_samples, marginals, seed, client, sampler="gibbs")
    return ShardedChain(
        layout, n_samples, marginals, seed, client, n_shards, checkpoint_every, shared
    )


def _is_this_host(host: str) -> bool:
    """Whether a worker's reported host is this machine (loopback, or one of its names)."""
    if host in ("127.0.0.1", "localhost", "::1", ""):
        return host != ""
    names = {socket.gethostname(), socket.getfqdn()}
    try:
        names.add(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    return host in names


_CLIENTS: dict = {}  # one client per scheduler string and process (the CLI's runs share it)


def cluster_chain_factory(scheduler: str, n_shards: int | None = None, sampler: str = "auto"):
    """:func:`sharded_chain_factory` on the client of :func:`connect` (made once per
    process), ``sampler`` resolved as without a cluster (the command line's ``--sampler``)."""
    if scheduler not in _CLIENTS:
        _CLIENTS[scheduler] = connect(scheduler)
    return sharded_chain_factory(_CLIENTS[scheduler], n_shards, sampler=sampler, announce=True)


def connect(scheduler: str, quiet: bool = False):
    """A ``distributed.Client`` for ``local:N`` (a new LocalCluster of N single-thread
    worker processes) or ``tcp://HOST:PORT`` (an existing scheduler); prints the dashboard
    link to stderr unless ``quiet``."""
    from distributed import Client, LocalCluster

    s = str(scheduler).strip()
    if s.startswith("local:"):
        try:
            n = int(s.split(":", 1)[1])
        except ValueError:
            n = 0
        if n < 1:
            raise AggMRFError(f"--scheduler local:N needs N ≥ 1 workers; got {scheduler!r}.")
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True)
        client = Client(cluster)
    elif s.startswith("tcp://"):
        client = Client(s)
    else:
        raise AggMRFError(f"--scheduler must be local:N or tcp://HOST:PORT; got {scheduler!r}.")
    if not quiet:
        print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
    return client
