"""Choosing λθ without records, on Adult and Bank.

For each dataset and each λθ of the grid (multipliers m of the default rule λθ = m·T/2):

* a full training run (same seed, same iterations as ``aggmrf-explore run``) → record-level
  test NLLH, and the aggregated-only metric of that model on a *second release* (the test
  records aggregated into the same tables: what an analyst would receive for another period);
* the split-release CV score that ``--lambda-theta auto`` computes from the training release
  alone (warm-started paths on two thinned halves), and the leave-tables-out CV score
  (``--lto``, the other records-free method of aggmrf_explore.selection.lambda_theta).

Prints the grid table; the λθ chosen by ``auto`` (split CV, one-standard-error rule) with its
test NLLH beside the best test NLLH of the grid; the choices of the other metrics and rules;
the Spearman correlations of the aggregated metrics with the test NLLH; the cost of ``auto``
in training runs (CPU time, and PCD iterations); and the seed noise of the test NLLH (a
second seed at the best λθ and its neighbours).  Long run (≈ 10 min for Adult, more for Bank
on 2 shared cores):

    python benchmarks/lambda_auto.py [--datasets adult,bank] [--iterations 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.selection.lambda_theta import (
    DEFAULT_MULTIPLIERS,
    choose_lambda_theta,
    lambda_grid,
    leave_tables_out,
)
from aggmrf_explore.selection.scores import aggregated_nllh, cross_fit_nllh, sample_codes
from aggmrf_explore.tables import aggregate

FMT = {"float_format": lambda v: f"{v:.4f}", "index": False}


def _train(problem, lam, iterations, seed, second):
    lay, agg = problem.layout, problem.aggregated
    st = default_settings(lay, agg.n, lambda_theta=lam, seed=seed)
    cpu = time.process_time()
    run = train_mrf(problem, st, iterations, eval_every=iterations + 1)
    cpu = time.process_time() - cpu
    sc = aggregated_nllh(run.trainer.model, sample_codes(run.trainer), second)
    return run, sc, cpu


def _reference(second, lam, iterations, seed):
    """The least-regularised fit on the second release alone (its λθ scaled to its size)."""
    st = default_settings(second.layout, second.n, lambda_theta=lam, seed=seed)
    tr = PCDTrainer(second, st)
    tr.step(iterations)
    return tr.model, sample_codes(tr)


def _pick(col: pd.Series) -> int:
    return int(np.argmax(col.to_numpy()))


def run_dataset(name: str, iterations: int, multipliers, seed: int = 0, lto: bool = True) -> dict:
    t0 = time.perf_counter()
    problem = prepare(name)
    lay, agg, enc = problem.layout, problem.aggregated, problem.encoded
    second = aggregate(enc.X_test, enc.y_test, lay)  # a second release (test period)
    lams = lambda_grid(lay, multipliers)
    ref, ref_codes = _reference(second, lams[-1] * second.n / agg.n, iterations, seed + 7)
    rate2 = float(second.c[0] / second.d[0])
    rows = []
    for m, lam in zip(multipliers, lams, strict=True):
        run, sc, cpu = _train(problem, lam, iterations, seed, second)
        xf = cross_fit_nllh(run.trainer.model, ref, ref_codes, rate2)
        rows.append(
            {
                "multiplier": m,
                "lambda_theta": lam,
                "test_nllh": run.nllh_test,
                "second_cell_nllh": sc.score,
                "second_xfit_nllh": xf,
                "run_cpu_seconds": cpu,
            }
        )
        print(
            f"  {name} λθ={lam:8.3f}: test NLLH {run.nllh_test:.4f}, second release: cell "
            f"{sc.score:.4f}, cross-fit {xf:.4f} ({run.seconds:.0f}s, {cpu:.0f}s CPU)",
            flush=True,
        )
    grid = pd.DataFrame(rows)
    one_run_cpu = float(grid["run_cpu_seconds"].median())

    # --lambda-theta auto: split-release CV, cross-fit record-level score (the defaults)
    choice = choose_lambda_theta(agg, multipliers, iterations=iterations, seed=seed)
    cv = choice.table.set_index("multiplier")
    grid["split_xfit_nllh"] = [float(cv.loc[m, "score"]) for m in grid["multiplier"]]
    grid["split_cell_nllh"] = [float(cv.loc[m, "cell_score"]) for m in grid["multiplier"]]
    if lto:
        lt = leave_tables_out(
            agg,
            multipliers,
            n_folds=2,
            seed=seed,
            iterations=iterations // 2,
            warm_iterations=iterations // 10,
        )
        grid["lto_cell_nllh"] = lt["score"].to_numpy()
    print(grid.to_string(**FMT), flush=True)

    best = grid.loc[grid["test_nllh"].idxmax()]
    metrics = {
        "auto: split CV, cross-fit (split_xfit_nllh)": "split_xfit_nllh",
        "split CV, cell-level (split_cell_nllh)": "split_cell_nllh",
        "second release, cross-fit (second_xfit_nllh)": "second_xfit_nllh",
        "second release, cell-level (second_cell_nllh)": "second_cell_nllh",
    }
    if lto:
        metrics["leave-tables-out CV, cell-level (lto_cell_nllh)"] = "lto_cell_nllh"
    choices = {}
    for label, col in metrics.items():
        r = grid.iloc[_pick(grid[col])]
        choices[label] = {
            "metric": col,
            "multiplier": float(r["multiplier"]),
            "lambda_theta": float(r["lambda_theta"]),
            "test_nllh": float(r["test_nllh"]),
            "gap": float(best["test_nllh"] - r["test_nllh"]),
            "spearman": float(spearmanr(grid[col], grid["test_nllh"]).statistic),
        }
    auto = choices["auto: split CV, cross-fit (split_xfit_nllh)"]
    assert auto["multiplier"] == choice.multiplier

    # seed noise of the test NLLH: a second seed at the best λθ of the grid and its neighbours
    ib = int(grid["test_nllh"].idxmax())
    noise = []
    for i in range(max(0, ib - 1), min(len(grid), ib + 2)):
        run, sc, _ = _train(problem, lams[i], iterations, seed + 1, second)
        xf = cross_fit_nllh(run.trainer.model, ref, ref_codes, rate2)
        noise.append(
            {
                "multiplier": float(grid["multiplier"].iloc[i]),
                "lambda_theta": lams[i],
                f"test_nllh_seed{seed}": float(grid["test_nllh"].iloc[i]),
                f"test_nllh_seed{seed + 1}": run.nllh_test,
                f"second_cell_seed{seed}": float(grid["second_cell_nllh"].iloc[i]),
                f"second_cell_seed{seed + 1}": sc.score,
                f"second_xfit_seed{seed + 1}": xf,
            }
        )
    noise = pd.DataFrame(noise)
    cost_cpu = choice.details["cpu_seconds"] / one_run_cpu
    out = {
        "dataset": name,
        "T": lay.n_released_tables,
        "iterations": iterations,
        "seed": seed,
        "grid": grid.to_dict(orient="records"),
        "auto": {
            **auto,
            "method": choice.method,
            "rule": choice.details["rule"],
            "seconds": choice.seconds,
            "cpu_seconds": choice.details["cpu_seconds"],
            "cost_in_runs_cpu": cost_cpu,
            "cost_in_runs_iterations": choice.details["cost_in_iterations"],
        },
        "best_on_test": {
            "multiplier": float(best["multiplier"]),
            "lambda_theta": float(best["lambda_theta"]),
            "test_nllh": float(best["test_nllh"]),
        },
        "gap": auto["gap"],
        "choices": choices,
        "seed_noise": noise.to_dict(orient="records"),
        "seconds": time.perf_counter() - t0,
    }
    print(
        f"\n== {name}: grid (λθ = m·T/2, T = {lay.n_released_tables}), {iterations} iterations, "
        f"seed {seed}"
    )
    print(grid.drop(columns=["run_cpu_seconds"]).to_string(**FMT))
    print(
        f"auto (split CV, cross-fit record-level NLLH): λθ = {auto['lambda_theta']:.3f} "
        f"(m = {auto['multiplier']:g}) → test NLLH {auto['test_nllh']:.4f}; best λθ of the grid "
        f"on test = {best['lambda_theta']:.3f} → {best['test_nllh']:.4f}; gap {auto['gap']:.4f} "
        "(must be ≤ 0.005)"
    )
    print(
        f"auto cost: {choice.details['cpu_seconds']:.0f}s CPU = {cost_cpu:.2f} training runs by "
        f"CPU time (one run: {one_run_cpu:.0f}s CPU), "
        f"{choice.details['cost_in_iterations']:.2f} runs by PCD iterations; + 1 final run "
        "with the chosen λθ"
    )
    print(
        "each metric's choice (its best grid point), gap to the best test NLLH, Spearman "
        "with the test NLLH:"
    )
    for k, c in choices.items():
        print(
            f"  {k:50s} λθ = {c['lambda_theta']:8.3f}  test NLLH {c['test_nllh']:.4f}  "
            f"gap {c['gap']:.4f}  Spearman {c['spearman']:+.3f}"
        )
    print("seed noise (same λθ, another seed):")
    print(noise.to_string(**FMT) + "\n", flush=True)
    return out


def measure_cost(name: str, iterations: int, seed: int = 0) -> dict:
    """CPU time of ``auto`` against two full runs measured in the same process (warm caches)."""
    problem = prepare(name)
    st = default_settings(problem.layout, problem.aggregated.n, seed=seed)
    train_mrf(problem, st, 20, eval_every=21)  # numba caches loaded
    runs = []
    for i in range(2):
        cpu = time.process_time()
        train_mrf(problem, st, iterations, eval_every=iterations + 1)
        runs.append(time.process_time() - cpu)
        if i == 0:
            choice = choose_lambda_theta(problem.aggregated, iterations=iterations, seed=seed)
    one = float(np.mean(runs))
    out = {
        "dataset": name,
        "run_cpu_seconds": runs,
        "auto_cpu_seconds": choice.details["cpu_seconds"],
        "auto_wall_seconds": choice.seconds,
        "cost_in_runs_cpu": choice.details["cpu_seconds"] / one,
        "cost_in_runs_iterations": choice.details["cost_in_iterations"],
        "lambda_theta": choice.lambda_theta,
    }
    print(
        f"{name}: one run {one:.1f}s CPU; auto {out['auto_cpu_seconds']:.1f}s CPU "
        f"({choice.seconds:.0f}s wall) = {out['cost_in_runs_cpu']:.2f} runs by CPU time, "
        f"{out['cost_in_runs_iterations']:.2f} by PCD iterations; λθ {choice.lambda_theta:g}",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="adult,bank")
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument(
        "--grid",
        default=",".join(f"{m:g}" for m in DEFAULT_MULTIPLIERS),
        help="multipliers m of λθ = m·T/2",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-lto", dest="lto", action="store_false", help="skip the leave-tables-out CV column"
    )
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument(
        "--cost", action="store_true", help="only measure the CPU cost of auto in training runs"
    )
    args = ap.parse_args()
    if args.cost:
        for d in args.datasets.split(","):
            measure_cost(d.strip(), args.iterations, args.seed)
        return
    ms = sorted((float(v) for v in args.grid.split(",")), reverse=True)
    results = [
        run_dataset(d.strip(), args.iterations, ms, args.seed, args.lto)
        for d in args.datasets.split(",")
    ]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2, default=float)
    if np.isfinite([r["gap"] for r in results]).all():
        print("gaps:", ", ".join(f"{r['dataset']} {r['gap']:.4f}" for r in results))


if __name__ == "__main__":
    main()
