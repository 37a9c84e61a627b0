"""The AdKDD'21 setting on Criteo-shaped synthetic data.

    python benchmarks/criteo_real.py                     # 10^7 records (about 20 min on 2 cores)
    python benchmarks/criteo_real.py --n 1000000 --quick # a first look (a few minutes)

1. generate (``datasets.criteo.write_criteo_release``, seed 0): the challenge's two files from
   n records, a labelled granular sample (100 000) and a labelled test set (200 000);
2. ``aggmrf-explore import-criteo`` with ``--max-modalities`` (wall time, peak RSS);
3. per label (click, sale): ``run --tables`` from the aggregates only, and with
   ``--validation-csv granular_sample.csv`` (λθ and the iteration count chosen on the sample);
   test NLLH, wall time, peak RSS (each command in its own process, measured by /usr/bin/time);
4. a logistic regression (the MRF's features: one-hot singles + pair crosses, λ on a
   validation split) on the granular sample alone;
5. the oracle logistic on the first ``--oracle-records`` records of the aggregated stream
   (the full 10^7 do not fit a sparse design matrix in memory here: 1.9·10^9 non-zeros), and
   the true P(y | x) of the generator (the Bayes limit).

Every model sees the same features: the imported release's modalities (values past
``--max-modalities`` folded into "(other)").  NLLH = 1 − logloss / entropy on the test set.
Prints a markdown table and writes it, with every number, to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from aggmrf_explore.baselines import fit_logistic
from aggmrf_explore.datasets.criteo import (
    CriteoTruth,
    feature_columns,
    iter_records,
    true_probabilities,
    write_criteo_release,
)
from aggmrf_explore.io import read_schema
from aggmrf_explore.metrics import nllh

LABELS = ("click", "sale")


def timed(cmd: list[str]) -> tuple[dict | None, float, float]:
    """Run a command under /usr/bin/time: (its JSON stdout or None, seconds, peak RSS in MB)."""
    t0 = time.perf_counter()
    res = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    rss_mb = int(res.stderr.strip().splitlines()[-1]) / 1024
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        out = None
    return out, seconds, rss_mb


def coded(schema, df: pd.DataFrame, label: str) -> tuple[np.ndarray, np.ndarray]:
    return schema.transform(df), df[label].to_numpy().astype(np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000, help="records aggregated (10^7)")
    ap.add_argument("--dir", default="/tmp/criteo_real", help="work directory (files are reused)")
    ap.add_argument("--max-modalities", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument("--gibbs-samples", type=int, default=10_000)
    ap.add_argument("--oracle-records", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="200 iterations, 200 000-record oracle")
    ap.add_argument("--out", default=None, help="JSON results (default DIR/results.json)")
    args = ap.parse_args()
    if args.quick:
        args.iterations, args.oracle_records = 200, 200_000
    work = Path(args.dir)
    src = work / f"n{args.n}"
    results: dict = {
        "n": args.n,
        "max_modalities": args.max_modalities,
        "iterations": args.iterations,
        "gibbs_samples": args.gibbs_samples,
    }
    if not (src / "truth.json").exists():
        t0 = time.perf_counter()
        results["generated"] = write_criteo_release(src, n=args.n, seed=0)
        results["generate_seconds"] = time.perf_counter() - t0
    rel = work / f"release_n{args.n}_m{args.max_modalities}"
    cli = [sys.executable, "-m", "aggmrf_explore.cli"]
    pairs, singles = str(src / "aggregated_pairs.csv"), str(src / "aggregated_singles.csv")
    fold = ["--max-modalities", str(args.max_modalities)]
    rep, s, rss = timed([*cli, "import-criteo", pairs, singles, "--out", str(rel), *fold, "--json"])
    results["import"] = {"seconds": s, "peak_rss_mb": rss, "report": rep}
    print(f"import: {s:.1f}s, {rss:.0f} MB, K = {rep['n_rows']} rows", flush=True)
    common = ["--iterations", str(args.iterations), "--gibbs-samples", str(args.gibbs_samples)]
    common += ["--test-csv", str(src / "test.csv"), "--json"]
    schema = read_schema(rel)
    test = pd.read_csv(src / "test.csv")
    sample = pd.read_csv(src / "granular_sample.csv")
    truth = CriteoTruth.from_dict(json.loads((src / "truth.json").read_text())["truth"])
    p_true = dict(
        zip(LABELS, true_probabilities(truth, test[feature_columns()].to_numpy()), strict=True)
    )
    X_or, click_or, sale_or = [], [], []
    for X, c, s_ in iter_records(truth, args.oracle_records, seed=0):
        X_or.append(X)
        click_or.append(c)
        sale_or.append(s_)
    oracle = pd.DataFrame(np.concatenate(X_or), columns=feature_columns())
    oracle["click"], oracle["sale"] = np.concatenate(click_or), np.concatenate(sale_or)
    n_f = len(schema.feature_names)
    layout = schema.layout(
        [(f,) for f in range(n_f)] + [(f, g) for f in range(n_f) for g in range(f + 1, n_f)]
    )
    for label in LABELS:
        row: dict = {}
        run = [*cli, "run", "--tables", str(rel), "--label", label, *common]
        out, s, rss = timed(run)
        row["mrf"] = {
            "nllh": out["models"]["mrf"]["nllh_test"],
            "seconds": s,
            "peak_rss_mb": rss,
            "lambda_theta": out["settings"]["lambda_theta"],
        }
        print(f"{label}: MRF {row['mrf']['nllh']:.4f} ({s:.0f}s, {rss:.0f} MB)", flush=True)
        out, s, rss = timed([*run, "--validation-csv", str(src / "granular_sample.csv")])
        v = out["validation_csv"]
        row["mrf_validation_csv"] = {
            "nllh": out["models"]["mrf"]["nllh_test"],
            "seconds": s,
            "peak_rss_mb": rss,
            "lambda_theta": v["lambda_theta"],
            "iterations": v["iterations"],
            "sample_nllh": v["sample_nllh"],
        }
        print(
            f"{label}: MRF + sample {row['mrf_validation_csv']['nllh']:.4f} ({s:.0f}s)", flush=True
        )
        Xt, yt = coded(schema, test, label)
        for name, frame in (("logistic_sample", sample), ("logistic_oracle", oracle)):
            t0 = time.perf_counter()
            X, y = coded(schema, frame, label)
            model, lam, _ = fit_logistic(X, y, layout, max_iter=100)
            p = model.predict_proba(model.layout_.phi(Xt))[:, 1]
            row[name] = {
                "nllh": nllh(yt, p),
                "seconds": time.perf_counter() - t0,
                "lambda": lam,
                "records": len(y),
            }
            print(
                f"{label}: {name} {row[name]['nllh']:.4f} ({row[name]['seconds']:.0f}s)", flush=True
            )
        row["truth"] = {"nllh": nllh(test[label].to_numpy(), p_true[label])}
        results[label] = row
    out_path = Path(args.out) if args.out else work / f"results_n{args.n}.json"
    out_path.write_text(json.dumps(results, indent=1, default=float))
    print(
        f"\n{args.n:,} records aggregated; --max-modalities {args.max_modalities}; "
        f"K = {rep['n_rows']:,} rows; test NLLH on {len(test):,} records\n"
    )
    print("| model | click | sale | wall time (click, sale) | peak RSS |")
    print("|---|---|---|---|---|")
    names = [
        ("mrf", "MRF, aggregates only"),
        ("mrf_validation_csv", "MRF + `--validation-csv`"),
        ("logistic_sample", f"logistic, granular sample ({len(sample):,})"),
        ("logistic_oracle", f"logistic, first {args.oracle_records:,} records (oracle)"),
        ("truth", "true P(y | x) (Bayes limit)"),
    ]
    for key, title in names:
        c, sa = results["click"][key], results["sale"][key]
        secs = f"{c['seconds']:.0f} s, {sa['seconds']:.0f} s" if "seconds" in c else ""
        rss = f"{max(c['peak_rss_mb'], sa['peak_rss_mb']):.0f} MB" if "peak_rss_mb" in c else ""
        print(f"| {title} | {c['nllh']:.4f} | {sa['nllh']:.4f} | {secs} | {rss} |")
    imp = results["import"]
    print(f"| import-criteo | | | {imp['seconds']:.0f} s | {imp['peak_rss_mb']:.0f} MB |")
    print(f"\nwrote {out_path}")


if __name__ == "__main__":
    main()
