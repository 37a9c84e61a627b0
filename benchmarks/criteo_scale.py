"""The Criteo-sized path end to end: aggregation, samplers, PCD iterations, a Dask cluster.

    python benchmarks/criteo_scale.py --quick --json      # < 2 min idle: 3·10^5 records, n' = 20 000
    python benchmarks/criteo_scale.py --json              # 10^7 records, n' = 400 000

Data: :mod:`aggmrf_explore.datasets.criteo` (19 features, cardinalities 18 … 2000, 171 pair
tables + 19 singles + the intercept: K = 5 715 585 rows), records written to Parquet in
chunks of 10^6.

1. Aggregation of the records into every table, each in a fresh process (its peak RSS is
   the process's ru_maxrss): DuckDB (``tables.big.aggregate_duckdb``, one scan, the
   default "stream" method: Arrow batches counted into (K,) accumulators, DuckDB
   memory_limit 512 MB) and the pandas path (``pd.read_parquet`` then
   ``tables.aggregate``; in full mode it is run on 10^6 records only, because its (n, T)
   int64 row matrix needs ≈ 31 GB at 10^7, more than this machine has; the JSON says so).
2. Samplers at n' on the Criteo layout, one process with ``--threads`` numba threads:
   the new MHGibbsChain (Metropolis-within-Gibbs) and the old dense GibbsChain; site
   updates per second of a sweep and ms per PCD iteration (PCDTrainer.step: sweep,
   statistics, update), median of ``--iterations`` after one warm-up iteration.
3. The same PCD iterations on a 2-worker LocalCluster (processes, one thread each; the
   ShardedChain of ``aggmrf_explore.distributed``), against (2) with 2 threads; compute
   per shard (measured on the workers) and the rest (driver update + communication).
   Twice: with (μ, θ) and the statistics in memory-mapped files (the default for workers
   on the driver's host) and with the arrays sent through Dask (as to other machines).
4. Projection to W workers: t(W) = update + compute(1 thread)/W + W · comm per shard
   (the driver sends μ, θ and receives K packed int64 from each shard in turn, measured with
   the arrays sent through Dask), and the time of
   the authors' full configuration, 1 500 iterations at n' = 400 000.

Also the machine's load average before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

N_FULL, N_QUICK = 10_000_000, 300_000
GIBBS_FULL, GIBBS_QUICK = 400_000, 20_000
PANDAS_MAX = 1_000_000  # the pandas path's records (its memory grows like 3 KB/record)
FULL_ITERATIONS = 1_500  # the authors' configuration


# ------------------------------------------------------------------ 1. aggregation
def _agg_worker(kind: str, path: str, q) -> None:
    import numpy as np

    from aggmrf_explore.datasets.criteo import feature_columns, make_truth
    from aggmrf_explore.tables import TableLayout

    lay = TableLayout.all_pairs(make_truth(0).cardinalities, feature_columns())
    t0 = time.perf_counter()
    if kind == "duckdb":
        from aggmrf_explore.tables.big import aggregate_duckdb

        agg = aggregate_duckdb(path, lay, label="click")  # "stream", memory_limit 512 MB
    else:
        import pandas as pd

        from aggmrf_explore.tables import aggregate

        df = pd.read_parquet(path)
        agg = aggregate(df[feature_columns()].to_numpy(), df["click"].to_numpy(), lay)
    secs = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MB
    if kind == "duckdb":
        np.savez(path + ".agg.npz", d=agg.d, c=agg.c, n=agg.n)
    q.put(
        {
            "seconds": round(secs, 2),
            "peak_rss_mb": round(rss),
            "n": agg.n,
            "d_sum": float(agg.d.sum()),
            "c_sum": float(agg.c.sum()),
        }
    )


def _in_process(kind: str, path: str) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_agg_worker, args=(kind, path, q))
    p.start()
    p.join()
    if p.exitcode != 0:
        return {"error": f"exit code {p.exitcode}"}
    return q.get()


def aggregation(n: int, workdir: Path, pandas_n: int) -> dict:
    from aggmrf_explore.datasets.criteo import write_records

    out = {}
    t0 = time.perf_counter()
    big = workdir / f"records_{n}.parquet"
    write_records(big, n, seed=0)
    out["generate_seconds"] = round(time.perf_counter() - t0, 1)
    out["records"] = n
    out["duckdb"] = _in_process("duckdb", str(big))
    small = big
    if pandas_n != n:
        small = workdir / f"records_{pandas_n}.parquet"
        write_records(small, pandas_n, seed=0)
        out["duckdb_same_n_as_pandas"] = _in_process("duckdb", str(small))
        out["pandas_note"] = (
            f"pandas path on {pandas_n} records: at {n} its (n, T) int64 row matrix and "
            f"the repeated labels need ≈ {2 * n * 191 * 8 / 1e9:.0f} GB"
        )
    out["pandas"] = _in_process("pandas", str(small))
    out["pandas"]["records"] = pandas_n
    return out


# ------------------------------------------------------------------ 2./3. samplers, PCD
def _data(path: Path):
    import numpy as np

    from aggmrf_explore.datasets.criteo import feature_columns, make_truth
    from aggmrf_explore.tables import AggregatedData, TableLayout

    z = np.load(str(path) + ".agg.npz")
    lay = TableLayout.all_pairs(make_truth(0).cardinalities, feature_columns())
    return AggregatedData(lay, z["d"], z["c"], int(z["n"]))


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def pcd_times(data, n_gibbs: int, iterations: int, factory, label: str) -> dict:
    """ms per sweep (site updates/s) and per PCD iteration, median over iterations."""
    from aggmrf_explore.mrf import PCDTrainer, default_settings

    st = default_settings(data.layout, data.n, n_gibbs=n_gibbs, seed=0)
    t0 = time.perf_counter()
    tr = PCDTrainer(data, st, chain_factory=factory)
    build = time.perf_counter() - t0
    tr.step(1)  # warm-up (first touch of the arrays, compilation if the cache is cold)
    sweeps, iters, extra = [], [], []
    for _ in range(iterations):
        t0 = time.perf_counter()
        tr.chain.sweep(tr.mu, tr.theta)
        sweeps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        tr.step(1)
        iters.append(time.perf_counter() - t0)
        extra.append(list(getattr(tr.chain, "shard_seconds", [])))
    D = data.layout.n_features
    out = {
        "sampler": label,
        "n_gibbs": n_gibbs,
        "build_seconds": round(build, 2),
        "sweep_ms": round(1e3 * _median(sweeps), 1),
        "site_updates_per_s": round(n_gibbs * D / _median(sweeps)),
        "pcd_iteration_ms": round(1e3 * _median(iters), 1),
        "acceptance": tr.history[-1].acceptance,
    }
    if extra and extra[0]:
        comp = [max(e) for e in extra]
        out["shard_compute_ms"] = round(1e3 * _median(comp), 1)
    return out


def _single(args, n_gibbs, threads: int, which: list[str]) -> list[dict]:
    """Run (2) in a fresh process with NUMBA_NUM_THREADS = threads (set before import)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_single_worker, args=(args, n_gibbs, threads, which, q))
    p.start()
    p.join()
    return q.get() if p.exitcode == 0 else [{"error": f"exit code {p.exitcode}"}]


def _single_worker(args, n_gibbs, threads, which, q) -> None:
    os.environ["NUMBA_NUM_THREADS"] = str(threads)
    from functools import partial

    from aggmrf_explore.kernels import make_chain

    data = _data(args["path"])
    out = []
    for w in which:
        r = pcd_times(data, n_gibbs, args["iterations"], partial(make_chain, sampler=w), w)
        r["threads"] = threads
        r["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        out.append(r)
    q.put(out)


def cluster(args, n_gibbs: int) -> tuple[dict, dict]:
    """(3) on one 2-worker LocalCluster, twice: (μ, θ) and the statistics through memory-
    mapped files (``shared="auto"``: the workers are on this host) and sent through Dask
    (``shared=False``: what workers on other machines do)."""
    os.environ["NUMBA_NUM_THREADS"] = "1"
    from distributed import Client, LocalCluster

    from aggmrf_explore.distributed import sharded_chain_factory

    data = _data(args["path"])
    t0 = time.perf_counter()
    out = []
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc,
        Client(lc) as client,
    ):
        start = time.perf_counter() - t0
        for shared, label in (
            ("auto", "mh (2 workers, mapped files)"),
            (False, "mh (2 workers, arrays sent)"),
        ):
            factory = sharded_chain_factory(client, checkpoint_every=0, shared=shared)
            r = pcd_times(data, n_gibbs, args["iterations"], factory, label)
            r["cluster_start_seconds"] = round(start, 1)
            out.append(r)
    return out[0], out[1]


def projection(single1: dict, single2: dict, clus: dict, update_ms: float, K: int) -> dict:
    """t(W) = update + compute(1 thread)/W + W · comm per shard (module docstring)."""
    compute1 = single1["pcd_iteration_ms"] - update_ms
    comm = max(0.0, (clus["pcd_iteration_ms"] - update_ms - clus["shard_compute_ms"]) / 2)
    out = {
        "update_ms": round(update_ms, 1),
        "compute_1_thread_ms": round(compute1, 1),
        "comm_per_shard_ms": round(comm, 1),
        "bytes_per_shard_per_iteration": 3 * 8 * K,
    }
    table = {}
    for W in (1, 2, 4, 8, 16, 32, 64, 200):
        t = update_ms + compute1 / W + W * comm
        table[W] = {
            "ms_per_iteration": round(t),
            "hours_1500": round(t * FULL_ITERATIONS / 3.6e6, 2),
        }
    out["workers"] = table
    out["two_threads_one_process_hours_1500"] = round(
        single2["pcd_iteration_ms"] * FULL_ITERATIONS / 3.6e6, 2
    )
    out["cluster_overhead_vs_2_threads"] = round(
        clus["pcd_iteration_ms"] / single2["pcd_iteration_ms"] - 1.0, 3
    )
    return out


def update_ms(data, n_gibbs: int) -> float:
    """ms of the pure update (pcd_update on K-vectors), the driver's part of an iteration."""
    import numpy as np

    from aggmrf_explore.mrf import Params, PCDTrainer, Targets, default_settings, pcd_update

    st = default_settings(data.layout, data.n, n_gibbs=n_gibbs)

    class _Null:  # no chain: only the update is timed
        def __init__(self, layout, *a):
            self.K = layout.K

    tr = PCDTrainer(data, st, chain_factory=_Null)
    d, c = data.d.copy(), data.c.copy()
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        pcd_update(Params(tr.mu, tr.theta), d, c, Targets(d, c), st, tr.penalty)
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="3·10^5 records, n' = 20 000, 1 timed iteration (< 2 min on an idle machine)",
    )
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--n-gibbs", type=int, default=None)
    ap.add_argument("--iterations", type=int, default=None, help="timed iterations (3; quick 1)")
    ap.add_argument("--old", action="store_true", help="also time the old dense GibbsChain")
    ap.add_argument("--workdir", default=None)
    ap.add_argument(
        "--skip-aggregation",
        action="store_true",
        help="reuse the records and DuckDB tables already in --workdir",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    n = a.records or (N_QUICK if a.quick else N_FULL)
    n_gibbs = a.n_gibbs or (GIBBS_QUICK if a.quick else GIBBS_FULL)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="criteo_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"load_before": os.getloadavg()[0], "cpus": os.cpu_count()}
    t_all = time.perf_counter()
    if not a.skip_aggregation:
        res["aggregation"] = aggregation(n, work, min(n, PANDAS_MAX))
    iterations = a.iterations or (1 if a.quick else 3)
    args = {"path": work / f"records_{n}.parquet", "iterations": iterations}
    which = ["mh", "gibbs"] if a.old or a.quick else ["mh"]
    res["one_process_2_threads"] = _single(args, n_gibbs, 2, which)
    res["one_process_1_thread"] = _single(args, n_gibbs, 1, ["mh"])
    res["cluster_2_workers"], res["cluster_2_workers_sent"] = cluster(args, n_gibbs)
    data = _data(args["path"])
    upd = update_ms(data, n_gibbs)
    # the projection to W machines uses the communication of the arrays sent through Dask
    res["projection"] = projection(
        res["one_process_1_thread"][0],
        res["one_process_2_threads"][0],
        res["cluster_2_workers_sent"],
        upd,
        data.layout.K,
    )
    cluster_ms = res["cluster_2_workers"]["pcd_iteration_ms"]
    threads_ms = res["one_process_2_threads"][0]["pcd_iteration_ms"]
    overhead = round(cluster_ms / threads_ms - 1.0, 3)
    res["projection"]["cluster_overhead_vs_2_threads_mapped_files"] = overhead
    res["K"] = data.layout.K
    res["load_after"] = os.getloadavg()[0]
    res["total_seconds"] = round(time.perf_counter() - t_all, 1)
    if a.json:
        print(json.dumps(res, indent=1, default=str))
    else:
        for k, v in res.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
