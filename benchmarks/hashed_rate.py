"""The hashed Gibbs kernel's site-update rate on the
Criteo shape, next to the dense kernel's on Adult, measured in the same run.

    python benchmarks/hashed_rate.py            # n' = 10 000
    python benchmarks/hashed_rate.py --json

1. **Dense kernel on Adult** (``GibbsChain``): the explorer's / paper's problem, all single
   and pair tables of Adult's 14 features (K = 14 009 … rows), n' = ``--gibbs-samples``.
2. **Hashed kernel on the Criteo shape** (``HashedGibbsChain``): the generator of
   :mod:`aggmrf_explore.datasets.criteo` (seed 0: 19 features, cardinalities 18 … 2 000,
   171 pair tables), ``--records`` records aggregated into a layout where every pair table
   with more than H = ``--hash-size`` cells is hashed into H rows (the others and the
   singles exact), the same n'.

3. **Metropolis-within-Gibbs on the same hashed layout** (``MHGibbsChain``, ``sampler="mh"``):
   alias-table proposals from each feature's marginal, so a site costs O(tables holding f)
   whatever M_f (per feature, MH only where it is cheaper than the full conditional).

Each is a :class:`~aggmrf_explore.mrf.PCDTrainer` (default settings, seed 0) that first runs
``--warm`` iterations (so that μ, θ are a fitted model, not the start), then ``--sweeps``
timed sweeps ``trainer.chain.sweep(μ, θ)`` (public chain API; statistics included, as
in training).  Rate = n' × D / median sweep seconds (site updates per second: one site is
one feature of one sample).  A site update of feature f costs O(M_f × tables holding f),
so the Criteo shape (Σ M_f ≈ 3 900 vs Adult's ≈ 130) is slower per site by construction;
``per_value_rate`` = n' × Σ_f M_f T_f / sweep seconds (gathers per second) removes that
and compares the kernels' work rate.  Ratios are to Adult's figures from the same run.
Prints the uptime (load) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def criteo_data(records: int, hash_size: int, seed: int = 0, chunk: int = 200_000):
    """AggregatedData of ``records`` Criteo-shaped records (click label) on the hashed
    layout; chunked so that memory stays one chunk's (n, T) row matrix."""
    from aggmrf_explore.datasets.criteo import feature_columns, iter_records, make_truth
    from aggmrf_explore.tables import AggregatedData, TableLayout, aggregate

    truth = make_truth(seed)
    m = truth.cardinalities
    names = feature_columns(truth.n_features)
    exact = TableLayout.all_pairs(m, names)
    hashed = {
        t: int(hash_size)
        for t, s in zip(exact.tables, exact.table_sizes, strict=True)
        if len(t) == 2 and s > hash_size
    }
    lay = TableLayout.all_pairs(m, names, hash_sizes=hashed, hash_seed=seed)
    d = np.zeros(lay.K)
    c = np.zeros(lay.K)
    for X, click, _ in iter_records(truth, records, seed, chunk):
        a = aggregate(X, click.astype(np.int64), lay)
        d += a.d
        c += a.c
    return AggregatedData(lay, d, c, int(records)), len(hashed)


def adult_data():
    from aggmrf_explore.experiment import prepare

    return prepare("adult", seed=0).aggregated


def sweep_rate(data, n_gibbs: int, warm: int, sweeps: int, label: str, sampler: str = "auto"):
    """Median sweep time and site updates / s of the trainer's chain on ``data``
    (``sampler``: as :func:`aggmrf_explore.kernels.make_chain`; "auto" = the default chain)."""
    from functools import partial

    from aggmrf_explore.kernels import make_chain
    from aggmrf_explore.mrf import PCDTrainer, default_settings

    lay = data.layout
    st = default_settings(lay, data.n, n_gibbs=n_gibbs, seed=0)
    t0 = time.perf_counter()
    tr = PCDTrainer(data, st, chain_factory=partial(make_chain, sampler=sampler))
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    tr.step(warm)
    warm_s = time.perf_counter() - t0
    times = []
    for _ in range(sweeps):
        t0 = time.perf_counter()
        tr.chain.sweep(tr.mu, tr.theta)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    D = lay.n_features
    # Σ_f M_f × (tables holding f): the full conditionals' gathers per sample and sweep
    work = sum(int(lay.n_modalities[f]) * sum(f in t for t in lay.tables) for f in range(D))
    return {
        "problem": label,
        "chain": type(tr.chain).__name__,
        "K": int(lay.K),
        "D": D,
        "sum_M": int(np.sum(lay.n_modalities)),
        "n_gibbs": n_gibbs,
        "build_s": round(build, 2),
        "warm_iterations": warm,
        "warm_s": round(warm_s, 2),
        "sweep_s_median": med,
        "sweep_s_all": [round(t, 4) for t in times],
        "site_updates_per_s": n_gibbs * D / med,
        "gathers_per_s": n_gibbs * work / med,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gibbs-samples", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000, help="Criteo records aggregated")
    ap.add_argument("--hash-size", type=int, default=2**16, help="H for the big pair tables")
    ap.add_argument("--warm", type=int, default=5, help="PCD iterations before timing")
    ap.add_argument("--sweeps", type=int, default=5, help="timed sweeps (median)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from aggmrf_explore.kernels import warm_up

    warm_up()  # compiled kernels from numba's cache: no compile time in the figures
    out = {"load_before": _load()}
    t0 = time.perf_counter()
    adult = adult_data()
    criteo, n_hashed = criteo_data(args.records, args.hash_size)
    out["data_s"] = round(time.perf_counter() - t0, 1)
    timing = (args.gibbs_samples, args.warm, args.sweeps)
    hashed_title = f"Criteo shape, hashed ({n_hashed} pair tables → H = {args.hash_size})"
    rows = [
        sweep_rate(adult, *timing, "Adult, dense"),
        sweep_rate(criteo, *timing, hashed_title),
        sweep_rate(criteo, *timing, "Criteo shape, hashed, Metropolis-within-Gibbs", sampler="mh"),
    ]
    out["load_after"] = _load()
    ref = rows[0]
    for r in rows:
        r["site_rate_vs_adult"] = r["site_updates_per_s"] / ref["site_updates_per_s"]
        r["gather_rate_vs_adult"] = r["gathers_per_s"] / ref["gathers_per_s"]
    out["rows"] = rows
    out["records"] = args.records
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(out["load_before"])
    print(
        f"{'problem':<58}{'chain':<18}{'K':>9}{'ΣM':>6}{'sweep s':>9}"
        f"{'sites/s':>11}{'× Adult':>8}{'gathers/s':>11}{'× Adult':>8}"
    )
    for r in rows:
        print(
            f"{r['problem']:<58}{r['chain']:<18}{r['K']:>9}{r['sum_M']:>6}"
            f"{r['sweep_s_median']:>9.3f}{r['site_updates_per_s']:>11.3g}"
            f"{r['site_rate_vs_adult']:>8.3f}{r['gathers_per_s']:>11.3g}"
            f"{r['gather_rate_vs_adult']:>8.2f}"
        )
    print(
        f"n' = {args.gibbs_samples}, {args.records} Criteo records, median of "
        f"{args.sweeps} sweeps after {args.warm} PCD iterations; {out['load_after']}"
    )


if __name__ == "__main__":
    main()
