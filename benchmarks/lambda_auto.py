"""Must-show (2) and (3) of issue 7: choosing λθ without records, on Adult and Bank.

For each dataset and each λθ of the grid (multipliers m of the default rule λθ = T/2):

* a full training run (same seed, same iterations as ``aggmrf-explore run``) → record-level
  test NLLH, and the aggregated-only metric of that model on a *second release* (the test
  records aggregated into the same tables: what an analyst would receive for another period);
* the leave-tables-out CV score that ``--lambda-theta auto`` computes from the training
  release alone (warm-started path, see aggmrf_explore.validation).

Prints the grid table, the λθ chosen by ``auto`` with its test NLLH beside the best test
NLLH of the grid, and the Spearman correlations of both aggregated metrics with the test
NLLH.  Long run (tens of minutes on 2 cores):

    python benchmarks/lambda_auto.py [--datasets adult,bank] [--iterations 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
from scipy.stats import spearmanr

from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import default_settings
from aggmrf_explore.tables import aggregate
from aggmrf_explore.validation import (
    DEFAULT_MULTIPLIERS,
    aggregated_nllh,
    choose_lambda_theta,
    lambda_grid,
    sample_codes,
)


def run_dataset(name: str, iterations: int, multipliers, seed: int = 0) -> dict:
    t0 = time.perf_counter()
    problem = prepare(name)
    lay, agg, enc = problem.layout, problem.aggregated, problem.encoded
    second = aggregate(enc.X_test, enc.y_test, lay)  # a second release (test period)
    lams = lambda_grid(lay, multipliers)
    rows = []
    for m, lam in zip(multipliers, lams, strict=True):
        st = default_settings(lay, agg.n, lambda_theta=lam, seed=seed)
        run = train_mrf(problem, st, iterations, eval_every=iterations + 1)
        sc = aggregated_nllh(run.trainer.model, sample_codes(run.trainer), second)
        rows.append({"multiplier": m, "lambda_theta": lam, "test_nllh": run.nllh_test,
                     "second_release_nllh": sc.score, "run_seconds": run.seconds})  # fmt: skip
        print(f"  {name} λθ={lam:8.3f}: test NLLH {run.nllh_test:.4f}, second-release "
              f"aggregated NLLH {sc.score:.4f} ({run.seconds:.0f}s)", flush=True)  # fmt: skip
    grid = pd.DataFrame(rows)
    choice = choose_lambda_theta(agg, multipliers, iterations=iterations, seed=seed)
    cv = choice.table.set_index("multiplier")["score"]
    grid["lto_cv_nllh"] = [float(cv[m]) for m in grid["multiplier"]]
    split = choose_lambda_theta(agg, multipliers, method="split", iterations=iterations, seed=seed)
    sp = split.table.set_index("multiplier")["score"]
    grid["split_cv_nllh"] = [float(sp[m]) for m in grid["multiplier"]]
    print(grid.to_string(index=False, float_format=lambda v: f"{v:.4f}"), flush=True)
    best = grid.loc[grid["test_nllh"].idxmax()]
    chosen = grid.loc[grid["multiplier"] == choice.multiplier].iloc[0]
    rho_cv = spearmanr(grid["lto_cv_nllh"], grid["test_nllh"]).statistic
    rho_split = spearmanr(grid["split_cv_nllh"], grid["test_nllh"]).statistic
    split_row = grid.loc[grid["multiplier"] == split.multiplier].iloc[0]
    rho_2nd = spearmanr(grid["second_release_nllh"], grid["test_nllh"]).statistic
    one_run = float(grid["run_seconds"].mean())
    out = {
        "dataset": name,
        "iterations": iterations,
        "grid": grid.to_dict(orient="records"),
        "auto": {
            "lambda_theta": choice.lambda_theta,
            "multiplier": choice.multiplier,
            "test_nllh": float(chosen["test_nllh"]),
            "cv_seconds": choice.seconds,
            "cv_cost_in_runs": choice.seconds / one_run,
            "folds": choice.details.get("folds"),
        },  # fmt: skip
        "best_on_test": {
            "lambda_theta": float(best["lambda_theta"]),
            "test_nllh": float(best["test_nllh"]),
        },  # fmt: skip
        "gap": float(best["test_nllh"] - chosen["test_nllh"]),
        "spearman_lto_cv": float(rho_cv),
        "spearman_split_cv": float(rho_split),
        "split": {
            "lambda_theta": split.lambda_theta,
            "test_nllh": float(split_row["test_nllh"]),
            "cv_seconds": split.seconds,
        },  # fmt: skip
        "spearman_second_release": float(rho_2nd),
        "seconds": time.perf_counter() - t0,
    }
    print(f"\n== {name}: grid (λθ = m·T/2, T = {lay.n_released_tables}), {iterations} iterations")
    print(grid.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"auto (leave-tables-out): λθ = {choice.lambda_theta:.3f} → test NLLH "
          f"{chosen['test_nllh']:.4f}; best λθ on test = {best['lambda_theta']:.3f} → "
          f"{best['test_nllh']:.4f}; gap {out['gap']:.4f} (must be ≤ 0.005)")  # fmt: skip
    print(f"auto cost: {choice.seconds:.0f}s = {out['auto']['cv_cost_in_runs']:.2f} training runs "
          f"(+ 1 final run)")  # fmt: skip
    print(f"split-release CV: λθ = {split.lambda_theta:.3f} → test NLLH {split_row['test_nllh']:.4f} "
          f"({split.seconds:.0f}s)")  # fmt: skip
    print(f"Spearman vs test NLLH: leave-tables-out CV {rho_cv:.3f}, split CV {rho_split:.3f}, "
          f"second release {rho_2nd:.3f}\n",
          flush=True)  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="adult,bank")
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument("--grid", default=",".join(str(m) for m in DEFAULT_MULTIPLIERS),
                    help="multipliers m of λθ = m·T/2")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = ap.parse_args()
    ms = sorted((float(v) for v in args.grid.split(",")), reverse=True)
    results = [
        run_dataset(d.strip(), args.iterations, ms, args.seed) for d in args.datasets.split(",")
    ]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2, default=float)


if __name__ == "__main__":
    main()
