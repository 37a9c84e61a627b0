"""Is the MRF's gap to the logistic on the Criteo-shaped generator the optimiser or the model?

    NUMBA_NUM_THREADS=1 nice -n 19 python benchmarks/criteo_maxent_gap.py small
    NUMBA_NUM_THREADS=1 nice -n 19 python benchmarks/criteo_maxent_gap.py tables \\
        /tmp/criteo_defaults/n300000_d8_m32_s1 --n-gibbs 10000 50000 200000

``small``: the generator (``datasets.criteo.make_truth``) with ``--cardinalities``
(default 10,8,6,5: 2 400 states, enumerable), ``--n`` records (default 3·10⁵) aggregated
into exact single and pair tables (no noise, no suppression); per label, test NLLH on
2·10⁵ records of: the truth, an L2 logistic on the same features (λ on a validation
split), the *exact* max-ent optimum (``exact.fit_exact``, λ_μ = 1, λ_θ = the rule's and 1)
and PCD with the default rule.  PCD matching ``fit_exact`` while both miss the logistic
says the gap is the max-ent model's, not the optimiser's.

``tables DIR``: a work directory of ``benchmarks/criteo_defaults.py`` (its truth.json,
test.csv and imported release/); the MRF trained with the default rule on the *exact*
tables of the same records (no noise, no suppression; the release's schema), for each n'
of ``--n-gibbs`` and each λ_θ of ``--lambda-theta`` (default: the rule's), click only
unless ``--label``.  Prints the test NLLH, the last iteration's ‖d̂ − d‖₁/‖d‖₁ and the
Monte-Carlo floor of that error (``mrf.expected_floor``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from aggmrf_explore.baselines import fit_logistic
from aggmrf_explore.datasets.criteo import (
    CriteoTruth,
    feature_columns,
    iter_records,
    make_truth,
    true_probabilities,
)
from aggmrf_explore.exact import fit_exact
from aggmrf_explore.io import read_schema
from aggmrf_explore.metrics import nllh
from aggmrf_explore.mrf import PCDTrainer, default_iterations, default_settings, expected_floor
from aggmrf_explore.tables import TableLayout, aggregate

TEST_STREAM = 3  # the generator's test stream (datasets.criteo)


def records(truth: CriteoTruth, n: int, seed: int, stream: int = 1):
    """(X, click, sale) of ``n`` records of ``stream``."""
    return [
        np.concatenate(a) for a in zip(*iter_records(truth, n, seed, stream=stream), strict=True)
    ]


def small(args) -> None:
    card = [int(c) for c in args.cardinalities.split(",")]
    truth = make_truth(args.seed, np.array(card))
    X, click, sale = records(truth, args.n, args.seed)
    Xt, click_t, sale_t = records(truth, 200_000, args.seed, TEST_STREAM)
    p_click, p_sale = true_probabilities(truth, Xt)
    D = len(card)
    lay = TableLayout(
        card, [(f,) for f in range(D)] + [(f, g) for f in range(D) for g in range(f + 1, D)]
    )
    print(f"cardinalities {card}, {args.n:,} records, seed {args.seed}\n")
    print(
        "| label | truth | logistic | exact max-ent, rule's λ_θ | exact, λ_θ = 1 | PCD, defaults |"
    )
    print("|---|---|---|---|---|---|")
    for label, y, yt, p in (("click", click, click_t, p_click), ("sale", sale, sale_t, p_sale)):
        y, yt = y.astype(np.int64), yt.astype(np.int64)
        data = aggregate(X, y, lay)
        st = default_settings(lay, args.n)
        ex = fit_exact(data, lambda_mu=1.0, lambda_theta=st.lambda_theta)
        ex1 = fit_exact(data, lambda_mu=1.0, lambda_theta=1.0)
        pcd = PCDTrainer(data, st).fit(default_iterations(st)).model
        lg, lam, _ = fit_logistic(X, y, lay, max_iter=200)
        logistic = nllh(yt, lg.predict_proba(lg.layout_.phi(Xt))[:, 1])
        cells = [nllh(yt, m.predict_proba(Xt)[:, 1]) for m in (ex, ex1, pcd)]
        print(
            f"| {label} | {nllh(yt, p):.4f} | {logistic:.4f} (λ = {lam:g}) | "
            f"{cells[0]:.4f} (λ_θ = {st.lambda_theta:g}) | {cells[1]:.4f} | {cells[2]:.4f} |"
        )


def tables(args) -> None:
    src = Path(args.dir)
    info = json.loads((src / "truth.json").read_text())
    truth = CriteoTruth.from_dict(info["truth"])
    n, seed = info["release"]["n_records"], info["release"]["seed"]
    schema = read_schema(src / "release")
    D = truth.n_features
    X, click, sale = records(truth, n, seed)
    X = schema.transform(pd.DataFrame(X, columns=feature_columns(D)))
    y = (click if args.label == "click" else sale).astype(np.int64)
    lay = schema.layout(
        [(f,) for f in range(D)] + [(f, g) for f in range(D) for g in range(f + 1, D)]
    )
    data = aggregate(X, y, lay)
    test = pd.read_csv(src / "test.csv")
    Xt, yt = schema.transform(test), test[args.label].to_numpy().astype(np.int64)
    print(f"{src.name}: exact tables of {n:,} records, K = {lay.K:,}, label {args.label}\n")
    print("| n' | λ_θ | test NLLH | ‖d̂ − d‖₁/‖d‖₁ | Monte-Carlo floor | seconds |")
    print("|---|---|---|---|---|---|")
    for n_gibbs in args.n_gibbs:
        for lam in args.lambda_theta or [None]:
            over = {"n_gibbs": n_gibbs} | ({} if lam is None else {"lambda_theta": lam})
            st = default_settings(lay, n, **over)
            t0 = time.perf_counter()
            tr = PCDTrainer(data, st).fit(default_iterations(st))
            score = nllh(yt, tr.model.predict_proba(Xt)[:, 1])
            print(
                f"| {n_gibbs:,} | {st.lambda_theta:g} | {score:.4f} | "
                f"{tr.history[-1].d_error:.4f} | {expected_floor(data, n_gibbs):.4f} | "
                f"{time.perf_counter() - t0:.0f} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("small", help="exact max-ent vs logistic on an enumerable generator")
    s.add_argument("--cardinalities", default="10,8,6,5")
    s.add_argument("--n", type=int, default=300_000)
    s.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("tables", help="the MRF on the exact tables of a criteo_defaults run")
    t.add_argument("dir")
    t.add_argument("--label", default="click", choices=("click", "sale"))
    t.add_argument("--n-gibbs", type=int, nargs="+", default=[10_000])
    t.add_argument("--lambda-theta", type=float, nargs="*", default=None)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    small(args) if args.what == "small" else tables(args)
    print(f"\nload average {os.getloadavg()}")


if __name__ == "__main__":
    main()
