"""The authors' full Criteo configuration, run end to end on this machine: 1 500 PCD iterations at n' = 400 000.

    python benchmarks/criteo_full.py --json docs/criteo_full.json          # ≈ 1 h on 2 cores
    python benchmarks/criteo_full.py --records 300000 --n-gibbs 20000 --iterations 20   # a check
    python benchmarks/criteo_full.py --workdir /tmp/cf --profile 3      # where the time goes
    python benchmarks/criteo_full.py --workdir /tmp/cf --skyline 1000000 --skyline-c 0.1,1
    python benchmarks/criteo_full.py --workdir /tmp/cf --sort-ab 6     # sorted vs index order

``--profile N`` times N iterations phase by phase beside the counting floor measured in the
same process (:func:`profile`; the floor: np.bincount of the chain's cells, samples in a
random order, as the speed target defines it; also the table-by-table and sorted orders);
``--skyline N`` fits the logistic on the MRF's features (:func:`skyline`); ``--sort-ab N``
times the MH chain's sweep with its samples stored sorted and in index order, alternating in
one process (:func:`sort_ab`).  They reuse the tables of ``--workdir`` and stop there.
Freed memory is kept in glibc's heap (:func:`keep_freed_memory`; ``--os-allocator`` for the defaults).

Not a projection (``benchmarks/criteo_scale.py`` times a few iterations): every iteration is
run and timed.

1. Generate ``--records`` records of the Criteo-shaped truth
   (:mod:`aggmrf_explore.datasets.criteo`: 19 hashed features, cardinalities 18 … 2 000, a
   known logistic with 8 pair crosses) to Parquet, and aggregate them with DuckDB
   (``tables.big.aggregate_duckdb``, label click) in a child process: every pair table and
   single, K = 5 715 585 rows, exact counts (no noise, no suppression: this measures the
   trainer at the authors' scale, not a release).
2. Train in this process with :func:`aggmrf_explore.mrf.default_settings` at
   ``--n-gibbs`` Gibbs samples and the sampler the ``auto`` rule picks (Metropolis-within-
   Gibbs here), on ``NUMBA_NUM_THREADS`` threads, for ``--iterations`` iterations with
   ``fit`` (the second half averaged).  Every ``--eval-every`` iterations the test NLLH of
   the current reported model is computed and the figures so far are written to
   ``--json`` (a run stopped early still leaves its numbers).
3. Report: wall time (generation, aggregation, build, training, per iteration median and
   p95), the counting floor measured at every evaluation (:func:`counting_floor`, outside
   the iterations' times) and the median iteration's ratio to its median, peak RSS of the aggregation process and of the training process, the load average
   before and after, and the normalised test NLLH (1 − logloss / entropy, click) of the
   model, of the true probabilities (the best any model can do) and of the constant model
   (0), on ``--test`` fresh records of an independent stream.
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

TEST_STREAM = 99  # a stream no other benchmark or release uses


def keep_freed_memory() -> bool:
    """Make glibc keep freed memory for reuse (no mmap per large block, no trim below 2 GB).

    The trainer allocates about thirty float64 (K,) arrays per iteration (46 MB each at the
    full configuration); by default glibc maps each from the kernel and unmaps it when freed,
    so every iteration page-faults and zeroes ≈ 1.4 GB afresh (measured: about 1 s of the
    iteration at load 7–10, docs/criteo_full.md).  With these two settings the same blocks
    are reused.  The numbers computed are unchanged.  False where glibc is not the C library."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_max = -1, -4
    return bool(libc.mallopt(m_mmap_max, 0)) and bool(libc.mallopt(m_trim_threshold, 2**31 - 1))


def _peak_rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _aggregate(path: str, q) -> None:
    """Child process: DuckDB aggregation of the Parquet records into every table."""
    import numpy as np

    from aggmrf_explore.datasets.criteo import feature_columns, make_truth
    from aggmrf_explore.tables import TableLayout
    from aggmrf_explore.tables.big import aggregate_duckdb

    lay = TableLayout.all_pairs(make_truth(0).cardinalities, feature_columns())
    t0 = time.perf_counter()
    agg = aggregate_duckdb(path, lay, label="click")
    secs = time.perf_counter() - t0
    np.savez(path + ".agg.npz", d=agg.d, c=agg.c, n=agg.n)
    q.put({"seconds": round(secs, 1), "peak_rss_mb": _peak_rss_mb(), "n": int(agg.n)})


def aggregate_in_child(path: Path) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_aggregate, args=(str(path), q))
    p.start()
    p.join()
    if p.exitcode != 0:
        raise SystemExit(f"error: the aggregation process ended with exit code {p.exitcode}")
    return q.get()


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def random_order_cells(rows, seed: int = 1):
    """The counting floor's cells: the chain's rows (n', T), sample by sample with the
    samples in a random order (``seed``), as one int64 array of n'·T cells."""
    import numpy as np

    perm = np.random.default_rng(seed).permutation(rows.shape[0])
    return np.ascontiguousarray(rows[perm]).ravel().astype(np.int64)


def counting_floor(trainer, seed: int) -> float:
    """Seconds of the counting floor (np.bincount of the chain's current cells, samples in
    a random order drawn from ``seed``: :func:`random_order_cells`) into the K rows, once."""
    import numpy as np

    cells = random_order_cells(np.asarray(trainer.chain.rows), seed)
    t0 = time.perf_counter()
    np.bincount(cells, minlength=trainer.layout.K)
    return time.perf_counter() - t0


def references(rows_tm, K: int, repeats: int = 3, rows_random=None) -> dict:
    """The physical references, measured now (seconds, median of ``repeats``).

    rows_tm: int64, the chain's rows table by table (T·n' cells, the order the statistics
    visit them); rows_random: the same cells sample by sample, the samples in a random
    order (:func:`random_order_cells`).  ``bincount_random``: np.bincount of rows_random
    into K bins, one thread: the counting floor as the speed target defines it ("one
    np.bincount of 400 000 × 190 random cells into 5.7 M bins"), the ratio's reference;
    ``bincount``: the same cells table by table (since the chain stores its samples sorted
    by the largest feature, this order is partly local: not the floor); ``bincount_sorted``:
    the cells sorted; ``gather``: θ[rows] for the table-by-table cells (one 8-byte read
    each, one thread); ``stream``: one copy of a float64 (K,) array (the update's unit of
    sequential work: 2·8·K bytes moved).  ``*_cpu``: the same in CPU seconds."""
    import numpy as np

    theta = np.random.default_rng(0).normal(size=K)
    srt = np.sort(rows_tm)
    dst = np.empty(K)
    jobs = {}
    if rows_random is not None:
        jobs["bincount_random"] = lambda: np.bincount(rows_random, minlength=K)
    jobs |= {
        "bincount": lambda: np.bincount(rows_tm, minlength=K),
        "bincount_sorted": lambda: np.bincount(srt, minlength=K),
        "gather": lambda: theta[rows_tm],
        "stream": lambda: np.copyto(dst, theta),
    }
    out = {}
    for name, job in jobs.items():
        ts, cs = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            job()
            ts.append(time.perf_counter() - t0)
            cs.append(time.process_time() - c0)
        out[name] = round(_median(ts), 4)
        out[name + "_cpu"] = round(_median(cs), 4)
    return out


def profile(trainer, n_iter: int) -> dict:
    """Seconds per phase of ``n_iter`` iterations (after one untimed warm-up), beside the
    references (:func:`references`) measured before and after them.

    Wall seconds and CPU seconds (all threads of the process: robust to other jobs taking
    the cores, not to their use of the caches and memory) per phase.  Phases: ``sweep`` (the chain's sweep: the MH/Gibbs site updates, rows, σ's),
    ``statistics`` (counting every sample's cells into the K rows, unpacking),
    ``update`` (``pcd_update``: the gradient and preconditioned step, one pass over K),
    ``divergence`` (the bound check), ``rest`` (the trainer's bookkeeping: scaling,
    momentum, averaging, the iteration's errors and norms)."""
    import numpy as np

    from aggmrf_explore import mrf

    chain = trainer.chain
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}

    def timed(name, fn):
        def wrapper(*args, **kw):
            t0, c0 = time.perf_counter(), time.process_time()
            out = fn(*args, **kw)
            times.setdefault(name, []).append(time.perf_counter() - t0)
            cpu.setdefault(name, []).append(time.process_time() - c0)
            return out

        return wrapper

    patches = {
        (chain, "sweep"): timed("sweep", chain.sweep),
        (chain, "statistics"): timed("statistics", chain.statistics),
        (mrf, "pcd_update"): timed("update", mrf.pcd_update),
        (mrf, "divergence"): timed("divergence", mrf.divergence),
    }
    originals = {k: getattr(*k) for k in patches}
    trainer.step(1)  # compile / warm caches
    rows = np.asarray(chain.rows)  # (n', T), in sample order
    rows_tm = np.ascontiguousarray(rows.T).ravel().astype(np.int64)
    rows_random = random_order_cells(rows)
    ref_before = references(rows_tm, trainer.layout.K, rows_random=rows_random)
    for (obj, name), fn in patches.items():
        setattr(obj, name, fn)
    total, total_cpu = [], []
    try:
        for _ in range(n_iter):
            t0, c0 = time.perf_counter(), time.process_time()
            trainer.step(1)
            total.append(time.perf_counter() - t0)
            total_cpu.append(time.process_time() - c0)
    finally:
        for (obj, name), fn in originals.items():
            setattr(obj, name, fn)
    ref_after = references(rows_tm, trainer.layout.K, rows_random=rows_random)
    phases = {k: round(_median(v), 4) for k, v in times.items()}
    phases["rest"] = round(_median(total) - sum(phases.values()), 4)
    phases_cpu = {k: round(_median(v), 4) for k, v in cpu.items()}
    phases_cpu["rest"] = round(_median(total_cpu) - sum(phases_cpu.values()), 4)
    ref = {k: round((ref_before[k] + ref_after[k]) / 2, 4) for k in ref_before}
    return {
        "iterations": n_iter,
        "iteration_median": round(_median(total), 4),
        "iteration_all": [round(t, 3) for t in total],
        "phases_median": phases,
        "iteration_cpu_median": round(_median(total_cpu), 4),
        "phases_cpu_median": phases_cpu,
        "references": ref,
        "references_before": ref_before,
        "references_after": ref_after,
        # the ratio of the target: to the counting floor (random sample order)
        "ratio_to_floor": round(_median(total) / ref["bincount_random"], 2),
        "cpu_ratio_to_floor_cpu": round(_median(total_cpu) / ref["bincount_random_cpu"], 2),
        # as printed before: to the table-by-table (partly local) bincount
        "ratio_to_bincount": round(_median(total) / ref["bincount"], 2),
        "cpu_ratio_to_bincount_cpu": round(_median(total_cpu) / ref["bincount_cpu"], 2),
        "cells": int(rows_tm.size),
        "acceptance": getattr(chain, "acceptance", None),
    }


def sort_ab(trainer, n_sweeps: int) -> dict:
    """CPU and wall seconds per sweep of the trainer's MHGibbsChain (samples stored sorted by
    the largest feature) and of a copy in the same state kept in index order
    (``sort_feature = -1``), sweeps alternating A, B, B, A, … under the same (μ, θ) after two
    iterations, on 1 then 2 threads: both chains stay bit-identical (checked after each
    pair), so only the storage order differs.  Medians."""
    import numba
    import numpy as np

    from aggmrf_explore.kernels import MHGibbsChain

    trainer.step(2)
    a = trainer.chain
    lay = trainer.layout
    b = MHGibbsChain(lay, a.n_samples, [np.ones(int(m)) for m in lay.n_modalities], a.seed)
    b._mh = a._mh  # noqa: SLF001 (the same proposals as the trainer's chain)
    b.restore(a.state())
    b.sort_feature = -1
    mu, theta = trainer.mu, trainer.theta
    out = {"sort_feature": a.sort_feature}
    for threads in (1, 2):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        runs: dict[str, list[tuple[float, float]]] = {"sorted": [], "index_order": []}
        for ch in (a, b):
            ch.sweep(mu, theta)
        for r in range(n_sweeps):
            pair = (("sorted", a), ("index_order", b))
            for name, ch in pair if r % 2 == 0 else pair[::-1]:
                t0, c0 = time.perf_counter(), time.process_time()
                ch.sweep(mu, theta)
                runs[name].append((time.perf_counter() - t0, time.process_time() - c0))
            if not np.array_equal(a.codes, b.codes):
                raise SystemExit("error: the sorted and index-order chains differ")
        out[f"threads_{threads}"] = {
            k: {
                "wall": round(_median([w for w, _ in v]), 3),
                "cpu": round(_median([c for _, c in v]), 3),
            }
            for k, v in runs.items()
        }
        print(threads, "threads:", out[f"threads_{threads}"], f"load {os.getloadavg()[0]:.2f}")
    return out


def print_profile(p: dict, load0: float, load1: float) -> None:
    r = p["references"]
    ref = r["bincount_random"]
    print(
        f"load {load0} → {load1}; counting floor (np.bincount of the {p['cells']} cells, "
        f"samples in a random order) {ref:.3f} s; table by table {r['bincount']:.3f} s, "
        f"sorted {r['bincount_sorted']:.3f} s"
    )
    print(f"{'phase':<12} {'s/iter':>8} {'× floor':>8} {'CPU s/iter':>11}")
    for k, v in p["phases_median"].items():
        print(f"{k:<12} {v:8.3f} {v / ref:8.2f} {p['phases_cpu_median'][k]:11.3f}")
    print(
        f"{'iteration':<12} {p['iteration_median']:8.3f} {p['ratio_to_floor']:8.2f}"
        f" {p['iteration_cpu_median']:11.3f}"
    )
    print(
        f"iteration ÷ table-by-table bincount {p['ratio_to_bincount']:.2f}; "
        f"÷ sorted {p['iteration_median'] / r['bincount_sorted']:.2f}"
    )
    print("references:", r)


def skyline(lay, records: Path, n: int, test_rows, y_test, cs: str) -> dict:
    """The logistic skyline on the MRF's own features: one-hot singles and pair crosses,
    i.e. the K − 1 table rows (the intercept as the model's intercept), fitted by
    scikit-learn's L-BFGS on the first ``n`` records of ``records`` (Parquet), for each
    inverse penalty C of ``cs``; each scored on the test records (normalised NLLH)."""
    import numpy as np
    import pyarrow.parquet as pq
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    from aggmrf_explore.datasets.criteo import feature_columns
    from aggmrf_explore.metrics import nllh

    t0 = time.perf_counter()
    pf = pq.ParquetFile(records)
    parts, got = [], 0
    for g in range(pf.num_row_groups):
        if got >= n:
            break
        parts.append(pf.read_row_group(g, columns=[*feature_columns(), "click"]).to_pandas())
        got += len(parts[-1])
    import pandas as pd

    frame = pd.concat(parts).iloc[:n]
    X = frame[feature_columns()].to_numpy(np.int32)
    y = frame["click"].to_numpy(np.int8)

    def design(rows):
        rows = rows[:, 1:] - 1 if lay.intercept else rows  # drop the intercept's column
        m, w = rows.shape
        return sparse.csr_matrix(
            (np.ones(m * w), rows.astype(np.int32).ravel(), np.arange(0, m * w + 1, w)),
            shape=(m, lay.K - int(lay.intercept)),
        )

    A = design(lay.rows(X).astype(np.int64))
    A_test = design(np.asarray(test_rows, dtype=np.int64))
    out = {"records": int(len(y)), "columns": int(A.shape[1]), "nnz": int(A.nnz)}
    out["build_seconds"] = round(time.perf_counter() - t0, 1)
    out["fits"] = []
    for c in (float(v) for v in cs.split(",")):
        t0 = time.perf_counter()
        lr = LogisticRegression(C=c, solver="lbfgs", max_iter=300, tol=1e-6)
        lr.fit(A, y)
        p = lr.predict_proba(A_test)[:, 1]
        fit = {
            "C": c,
            "test_nllh": round(nllh(y_test, p), 5),
            "train_nllh": round(nllh(y, lr.predict_proba(A)[:, 1]), 5),
            "iterations": int(lr.n_iter_[0]),
            "seconds": round(time.perf_counter() - t0, 1),
            "load": round(os.getloadavg()[0], 2),
        }
        out["fits"].append(fit)
        print(fit, flush=True)
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--n-gibbs", type=int, default=400_000)
    ap.add_argument("--iterations", type=int, default=1_500)
    ap.add_argument("--test", type=int, default=200_000, help="fresh test records")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None, help="reuses records and tables already there")
    ap.add_argument("--json", default=None, help="write the figures here (also while running)")
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        help="time N iterations phase by phase beside the counting floor (np.bincount of the "
        "chain's cells, samples in a random order) and other references, then stop",
    )
    ap.add_argument(
        "--skyline",
        type=int,
        default=0,
        help="fit the logistic skyline on the first N records (one-hot singles and every pair "
        "cross, the MRF's features), score it on the test records, then stop",
    )
    ap.add_argument(
        "--skyline-c",
        default="0.1",
        help="comma-separated inverse penalties C of the skyline (scikit-learn's; C = N/(2 λ n) "
        "is the MRF's λθ per record: 0.1 for N = 10⁶ of n = 10⁷ records at λθ = 50)",
    )
    ap.add_argument(
        "--sort-ab",
        type=int,
        default=0,
        help="time N sweeps of the MH chain stored sorted and N in index order, alternating, "
        "then stop",
    )
    ap.add_argument(
        "--sweep-sites",
        type=int,
        default=None,
        help="features each Gibbs sample updates per iteration (TrainerSettings.sweep_sites; "
        "default: the rule's)",
    )
    ap.add_argument(
        "--os-allocator",
        action="store_true",
        help="leave glibc's defaults (each large array mapped and unmapped; keep_freed_memory)",
    )
    a = ap.parse_args(argv)
    heap = False if a.os_allocator else keep_freed_memory()

    import numpy as np

    from aggmrf_explore.datasets.criteo import (
        feature_columns,
        make_truth,
        sample_records,
        true_probabilities,
        write_records,
    )
    from aggmrf_explore.metrics import log_loss, nllh
    from aggmrf_explore.mrf import PCDTrainer, default_settings
    from aggmrf_explore.tables import AggregatedData, TableLayout

    res: dict = {
        "command": "python benchmarks/criteo_full.py " + " ".join(argv or sys.argv[1:]),
        "records": a.records,
        "n_gibbs": a.n_gibbs,
        "iterations_asked": a.iterations,
        "numba_threads": int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1)),
        "cpus": os.cpu_count(),
        "load_before": round(os.getloadavg()[0], 2),
        "freed_memory_kept": heap,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }

    def save() -> None:
        res["load_now"] = round(os.getloadavg()[0], 2)
        res["train_peak_rss_mb"] = _peak_rss_mb()
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=1) + "\n")

    work = Path(a.workdir or tempfile.mkdtemp(prefix="criteo_full_"))
    work.mkdir(parents=True, exist_ok=True)
    records = work / f"records_{a.records}_{a.seed}.parquet"
    truth = make_truth(a.seed)
    if not Path(str(records) + ".agg.npz").exists():
        t0 = time.perf_counter()
        write_records(records, a.records, seed=a.seed, truth=truth)
        res["generate_seconds"] = round(time.perf_counter() - t0, 1)
        res["aggregation"] = aggregate_in_child(records)
        print(f"generated in {res['generate_seconds']} s; aggregated: {res['aggregation']}")

    lay = TableLayout.all_pairs(truth.cardinalities, feature_columns())
    z = np.load(str(records) + ".agg.npz")
    data = AggregatedData(lay, z["d"], z["c"], int(z["n"]))
    X, y, _ = sample_records(
        truth, a.test, np.random.default_rng(np.random.SeedSequence([a.seed, TEST_STREAM]))
    )
    p_true = true_probabilities(truth, X)[0]
    res["K"] = int(lay.K)
    res["test_records"] = a.test
    res["test_click_rate"] = round(float(y.mean()), 5)
    res["test_nllh_truth"] = round(nllh(y, p_true), 5)
    res["test_logloss_truth"] = round(log_loss(y, p_true), 5)
    rows = lay.rows(X).astype(np.int32)

    if a.skyline:
        res["skyline"] = skyline(lay, records, a.skyline, rows, y, a.skyline_c)
        res["load_after"] = round(os.getloadavg()[0], 2)
        save()
        print(json.dumps(res["skyline"], indent=1))
        return 0
    sites = {} if a.sweep_sites is None else {"sweep_sites": a.sweep_sites}
    settings = default_settings(lay, data.n, n_gibbs=a.n_gibbs, seed=a.seed, **sites)
    t0 = time.perf_counter()
    trainer = PCDTrainer(data, settings)
    res["build_seconds"] = round(time.perf_counter() - t0, 1)
    res["sampler"] = type(trainer.chain).__name__
    res["settings"] = {
        k: getattr(settings, k)
        for k in ("lambda_mu", "lambda_theta", "step_mu", "step_theta", "momentum")
    }
    if a.sort_ab:
        res["sort_ab"] = sort_ab(trainer, a.sort_ab)
        res["load_after"] = round(os.getloadavg()[0], 2)
        save()
        return 0
    if a.profile:
        res["profile"] = profile(trainer, a.profile)
        res["load_after"] = round(os.getloadavg()[0], 2)
        save()
        print_profile(res["profile"], res["load_before"], res["load_after"])
        return 0
    res["evaluations"] = []
    seconds: list[float] = []
    floors: list[float] = []
    t_train = time.perf_counter()

    def progress(tr, stats) -> None:
        seconds.append(stats.seconds)
        if tr.iteration % a.eval_every == 0 or tr.iteration == a.iterations:
            p = tr.model.proba_of_rows(rows)
            row = {
                "iteration": tr.iteration,
                "elapsed_s": round(time.perf_counter() - t_train, 1),
                "test_nllh": round(nllh(y, p), 5),
                "test_logloss": round(log_loss(y, p), 5),
                "d_error": round(stats.d_error, 5),
                "averaged": bool(tr.settings.average and tr.iteration > tr.average_from),
            }
            # the speed target's reference, in this run: timed here, outside the iterations
            floors.append(counting_floor(tr, seed=tr.iteration))
            row["counting_floor_s"] = round(floors[-1], 4)
            res["evaluations"].append(row)
            res["iterations_done"] = tr.iteration
            res["train_seconds"] = row["elapsed_s"]
            s = sorted(seconds)
            res["iteration_seconds_median"] = round(s[len(s) // 2], 3)
            res["iteration_seconds_p95"] = round(s[int(0.95 * (len(s) - 1))], 3)
            res["counting_floor_median"] = round(_median(floors), 4)
            res["ratio_to_floor"] = round(_median(seconds) / _median(floors), 2)
            save()
            print(row, f"load {res['load_now']}", flush=True)

    trainer.fit(a.iterations, callbacks=[progress])
    final = res["evaluations"][-1]
    res["test_nllh_model"] = final["test_nllh"]
    res["gap_to_truth"] = round(res["test_nllh_truth"] - final["test_nllh"], 5)
    res["load_after"] = round(os.getloadavg()[0], 2)
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save()
    print(json.dumps({k: v for k, v in res.items() if k != "evaluations"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
