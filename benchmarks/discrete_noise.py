"""MRF-N on a discrete release against MRF-N on a continuous release, at the same (ε, δ).

A release for others carries integer noise (discrete Gaussian, calibrated by its zCDP
bound, so a few per cent more noise than the continuous analytic Gaussian at the same
ε and δ).  This script measures what that costs the learner: for each dataset, ε and noise
draw, it releases the training tables both ways (seeded simulations of the same
mechanisms, so that each draw is reproducible) and trains MRF-N with default settings.

    python benchmarks/discrete_noise.py --datasets adult,synthetic --epsilons 1,8 --draws 3

Prints one row per run and a summary (mean ± sd of test NLLH over draws); ``--json``
writes every row too.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace

import numpy as np

from aggmrf_explore import privacy
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import default_settings

MECHANISMS = ("gaussian", "discrete_gaussian")


def run(datasets, epsilons, draws, delta=1e-7, iterations=None):
    rows = []
    for name in datasets:
        problem = prepare(name, seed=0)
        for eps in epsilons:
            for mech_name in MECHANISMS:
                mech = privacy.make_mechanism(mech_name, eps, delta, problem.layout)
                for draw in range(draws):
                    data = privacy.release(problem.aggregated, mech, seed=1000 + draw)
                    settings = replace(default_settings(problem.layout, data.n), noise_aware=True)
                    t0 = time.perf_counter()
                    res = train_mrf(problem, settings, iterations, data=data, eval_every=10**9)
                    row = {
                        "dataset": name,
                        "epsilon": eps,
                        "mechanism": mech_name,
                        "sigma": mech.std,
                        "draw": draw,
                        "nllh_test": res.nllh_test,
                        "seconds": time.perf_counter() - t0,
                        "load": os.getloadavg()[0],
                    }
                    rows.append(row)
                    print(
                        f"{name:10s} ε={eps:<4g} {mech_name:18s} σ={mech.std:8.3f} draw {draw}: "
                        f"NLLH {res.nllh_test:.4f} ({row['seconds']:.0f} s, load {row['load']:.1f})",
                        flush=True,
                    )
    return rows


def summary(rows):
    print(
        "\n| dataset | ε | σ continuous | σ discrete | MRF-N continuous | MRF-N discrete | difference |"
    )
    print("|---|---|---|---|---|---|---|")
    keys = sorted({(r["dataset"], r["epsilon"]) for r in rows})
    for ds, eps in keys:
        cell = {}
        for m in MECHANISMS:
            sel = [r for r in rows if (r["dataset"], r["epsilon"], r["mechanism"]) == (ds, eps, m)]
            v = np.array([r["nllh_test"] for r in sel])
            cell[m] = (v.mean(), v.std(ddof=1) if v.size > 1 else 0.0, sel[0]["sigma"], v)
        c, d = cell["gaussian"], cell["discrete_gaussian"]
        diff = d[3] - c[3]
        print(
            f"| {ds} | {eps:g} | {c[2]:.2f} | {d[2]:.2f} | {c[0]:.4f} ± {c[1]:.4f} | "
            f"{d[0]:.4f} ± {d[1]:.4f} | {diff.mean():+.4f} ± {diff.std(ddof=1) if diff.size > 1 else 0:.4f} |"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="adult,synthetic")
    p.add_argument("--epsilons", default="1,8")
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--json", help="write the rows to this file")
    a = p.parse_args()
    rows = run(
        a.datasets.split(","),
        [float(e) for e in a.epsilons.split(",")],
        a.draws,
        iterations=a.iterations,
    )
    summary(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
