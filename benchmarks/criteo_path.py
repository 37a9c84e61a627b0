"""Test NLLH along the training path on a Criteo-shaped release: where is the best iterate?

    NUMBA_NUM_THREADS=1 nice -n 19 python benchmarks/criteo_path.py \\
        /tmp/criteo_defaults/n4000000_d8_m2000_s1 --label click --rules default former

``DIR``: a work directory of ``benchmarks/criteo_defaults.py`` (its ``release/`` and
``test.csv``).  For each rule of ``--rules``, the training of ``criteo_defaults.py``'s
table runs ``--iterations`` iterations (default: the rule's own count, 3 000 on these
releases) and every ``--every`` iterations the test NLLH of the reported model (the iterate
average once it starts) and of the last iterate is printed, with ‖θ‖ (the intercept left out):

- ``default``: the defaults of ``run --tables`` (MRF-N, momentum 0.8 on θ, the average over
  the second half);
- ``former``: the former convergence rule (plain step, the average from ⌈2/α_θ⌉), run past
  its 600 iterations to show where its path goes.

``--lambda-theta`` replaces the rule's λ_θ in every rule.  A path whose test NLLH rises and
then falls while ‖θ‖ grows fits the release's noise: its regularised optimum scores lower
than an iterate on the way.  One JSON line per rule at the end (the path).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from criteo_defaults import rule_settings  # (this directory: the same settings as its table)

from aggmrf_explore.callbacks import HeldOutNLLH
from aggmrf_explore.io import read_release, read_schema
from aggmrf_explore.mrf import PCDTrainer, default_iterations

RULES = ("default", "former")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dir", help="a work directory of criteo_defaults.py")
    ap.add_argument("--label", default="click", choices=("click", "sale"))
    ap.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    ap.add_argument("--iterations", type=int, default=None, help="default: the rule's")
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--lambda-theta", type=float, default=None, help="default: the rule's")
    args = ap.parse_args()
    src = Path(args.dir)
    data = read_release(src / "release", label=args.label).data
    schema = read_schema(src / "release")
    test = pd.read_csv(src / "test.csv")
    X, y = schema.transform(test), test[args.label].to_numpy().astype(np.int64)
    print(f"load average {os.getloadavg()}", flush=True)
    for rule in args.rules:
        over = {} if args.lambda_theta is None else {"lambda_theta": args.lambda_theta}
        st, _ = rule_settings(data, new_rule=rule == "default", **over)
        n_iter = default_iterations(st) if args.iterations is None else args.iterations
        held = HeldOutNLLH(X, y, every=args.every, layout=data.layout, live=True)
        path: list[tuple[int, float, float, float]] = []

        def keep(
            trainer, stats, held=held, path=path, tag=f"{rule} λθ={st.lambda_theta:g}"
        ) -> None:
            if trainer.iteration % args.every == 0:
                live = held.last if held.last_live is None else held.last_live
                path.append((trainer.iteration, held.last, live, stats.theta_norm))
                print(
                    f"{tag} it {trainer.iteration:5d}  reported "
                    f"{held.last:.4f}  last iterate {live:.4f}  ‖θ‖ {stats.theta_norm:.2f}",
                    flush=True,
                )

        t0 = time.perf_counter()
        PCDTrainer(data, st).fit(n_iter, callbacks=[held, keep])
        best = max(path, key=lambda p: p[1])
        print(
            f"{rule}: end {path[-1][1]:.4f} at {path[-1][0]}, best reported {best[1]:.4f} at "
            f"{best[0]} ({time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.1f})"
        )
        print(
            json.dumps(
                {"rule": rule, "label": args.label, "lambda_theta": st.lambda_theta, "path": path}
            )
        )


if __name__ == "__main__":
    main()
