"""The authors' full Criteo configuration, run end to end on this machine: 1 500 PCD iterations at n' = 400 000.

    python benchmarks/criteo_full.py --json docs/criteo_full.json          # ≈ 1 h on 2 cores
    python benchmarks/criteo_full.py --records 300000 --n-gibbs 20000 --iterations 20   # a check

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
   p95), peak RSS of the aggregation process and of the training process, the load average
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
    a = ap.parse_args(argv)

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

    settings = default_settings(lay, data.n, n_gibbs=a.n_gibbs, seed=a.seed)
    t0 = time.perf_counter()
    trainer = PCDTrainer(data, settings)
    res["build_seconds"] = round(time.perf_counter() - t0, 1)
    res["sampler"] = type(trainer.chain).__name__
    res["settings"] = {
        k: getattr(settings, k)
        for k in ("lambda_mu", "lambda_theta", "step_mu", "step_theta", "momentum")
    }
    res["evaluations"] = []
    seconds: list[float] = []
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
            res["evaluations"].append(row)
            res["iterations_done"] = tr.iteration
            res["train_seconds"] = row["elapsed_s"]
            s = sorted(seconds)
            res["iteration_seconds_median"] = round(s[len(s) // 2], 3)
            res["iteration_seconds_p95"] = round(s[int(0.95 * (len(s) - 1))], 3)
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
