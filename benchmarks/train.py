"""Wall time of a default ``aggmrf-explore run --dataset adult``, split into its parts.

    python benchmarks/train.py --json [--dataset adult] [--iterations 600]
    python benchmarks/train.py --highcard --json   # + target-encoded synthetic comparison

Parts: data preparation (load, encode, aggregate), baselines (the four of the CLI), MRF
iterations (ms per iteration, as the CLI runs them: no held-out evaluation inside the
loop).  Also the number of threads, the load average (the machine may be shared) and
the MRF's test NLLH, so that a speed regression that changes the result is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time


def run(dataset: str, iterations: int) -> dict:
    import numba

    from aggmrf_explore.baselines import fit_baselines
    from aggmrf_explore.experiment import prepare, train_mrf
    from aggmrf_explore.kernels import warm_up
    from aggmrf_explore.mrf import default_settings

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    warm_up()
    t_warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    problem = prepare(dataset)
    t_prep = time.perf_counter() - t0
    settings = default_settings(problem.layout, problem.aggregated.n)
    t0 = time.perf_counter()
    mrf = train_mrf(problem, settings, iterations, eval_every=iterations + 1)
    t_mrf = time.perf_counter() - t0
    per_iter = [h.seconds for h in mrf.history]
    t0 = time.perf_counter()
    base = fit_baselines(problem)
    t_base = time.perf_counter() - t0
    return {
        "dataset": dataset,
        "threads": numba.get_num_threads(),
        "seconds": {
            "numba_warm_up": t_warm,
            "prepare": t_prep,
            "mrf": t_mrf,
            "baselines": t_base,
            "total": t_warm + t_prep + t_mrf + t_base,
        },
        "mrf_iterations": iterations,
        "ms_per_iteration": 1e3 * t_mrf / iterations,
        "ms_per_iteration_median": 1e3 * sorted(per_iter)[len(per_iter) // 2],
        "nllh_test": {"mrf": mrf.nllh_test, **{k: v.nllh_test for k, v in base.items()}},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_average": [load0, os.getloadavg()[0]],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--highcard", action="store_true", help="add hashing.target_encoding_compare")
    args = ap.parse_args(argv)
    out = {"run": run(args.dataset, args.iterations)}
    if args.highcard:
        from hashing import target_encoding_compare  # benchmarks/hashing.py

        out["highcard"] = target_encoding_compare()
    if args.json:
        print(json.dumps(out, indent=1, default=float))
    else:
        r = out["run"]
        s = r["seconds"]
        print(
            f"{r['dataset']}: prepare {s['prepare']:.1f} s, baselines {s['baselines']:.1f} s, "
            f"MRF {r['mrf_iterations']} it × {r['ms_per_iteration']:.1f} ms = {s['mrf']:.1f} s, "
            f"total {s['total']:.1f} s ({r['threads']} threads); NLLH {r['nllh_test']}"
        )
        if "highcard" in out:
            print(out["highcard"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
