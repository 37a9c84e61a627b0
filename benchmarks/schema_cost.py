"""The cost of a private schema: test NLLH on Adult, by where the release's schema came from.

Each draw releases Adult's training records with the README's command (``aggregate --csv
adult.csv --label income --mechanism gaussian --epsilon E``) under three schemas, trains
with ``run --tables … --test-csv adult_test.csv`` (every default), and reads the MRF's test
NLLH:

* ``records``: fitted on the records (``--schema-from-records``; the former default, not
  private: the exact deciles and every category seen);
* ``declared``: Adult's declared public schema (``--schema`` on the bundled codebook file;
  what ``aggregate --dataset adult`` uses);
* ``dp``: the default for a CSV without a declared schema (ε/2 more for the schema).

Usage: ``python benchmarks/schema_cost.py [--epsilons 1,8] [--draws 3] [--out docs/schema_cost.json]``.
Prints one line per (ε, schema): mean ± sd over the draws; the noise and the DP schema are
drawn fresh (secure) in every draw.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from importlib import resources
from pathlib import Path

from aggmrf_explore import datasets
from aggmrf_explore.cli import main

SCHEMAS = {
    "records": ["--schema-from-records"],
    "declared": ["--schema", str(resources.files("aggmrf_explore") / "data" / "adult.schema.json")],
    "dp": [],
}


def _json(argv: list[str]) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return json.loads(buf.getvalue())


def one(tmp: Path, schema: str, epsilon: float, draw: int) -> dict:
    rel = tmp / f"rel_{schema}_{epsilon}_{draw}"
    agg = _json(
        [
            "aggregate", "--csv", str(tmp / "adult.csv"), "--label", "income",
            "--out", str(rel), "--mechanism", "gaussian", "--epsilon", str(epsilon),
            *SCHEMAS[schema],
        ]
    )  # fmt: skip
    t0 = time.perf_counter()
    run = _json(["run", "--tables", str(rel), "--test-csv", str(tmp / "adult_test.csv"), "--json"])
    return {
        "schema": schema,
        "epsilon": epsilon,
        "draw": draw,
        "epsilon_total": agg["privacy"]["epsilon"],
        "rows": agg["n_rows"],
        "nllh_test": run["models"]["mrf"]["nllh_test"],
        "seconds": time.perf_counter() - t0,
    }


def run(epsilons: list[float], draws: int) -> list[dict]:
    ds = datasets.adult()
    tmp = Path(tempfile.mkdtemp(prefix="schema_cost_"))
    cols = [*ds.feature_columns, ds.label]
    ds.train[cols].to_csv(tmp / "adult.csv", index=False)
    ds.test[cols].to_csv(tmp / "adult_test.csv", index=False)
    rows = []
    for eps in epsilons:
        for draw in range(draws):
            for schema in SCHEMAS:
                r = one(tmp, schema, eps, draw)
                rows.append(r)
                print(
                    f"ε={eps:g} draw {draw} {schema:>8}: NLLH {r['nllh_test']:.4f} "
                    f"(ε total {r['epsilon_total']:.2f}, {r['rows']} rows, {r['seconds']:.0f} s)",
                    flush=True,
                )
    return rows


def summary(rows: list[dict]) -> list[str]:
    out = []
    for eps in sorted({r["epsilon"] for r in rows}):
        for schema in SCHEMAS:
            v = [r["nllh_test"] for r in rows if r["epsilon"] == eps and r["schema"] == schema]
            sd = statistics.stdev(v) if len(v) > 1 else 0.0
            tot = next(
                r["epsilon_total"] for r in rows if r["epsilon"] == eps and r["schema"] == schema
            )
            out.append(
                f"| {eps:g} | {schema} | {tot:g} | {statistics.mean(v):.4f} ± {sd:.4f} | {len(v)} |"
            )
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epsilons", default="1,8")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    a = ap.parse_args()
    rows = run([float(e) for e in a.epsilons.split(",")], a.draws)
    print(
        "\n| ε (counts) | schema | ε total | test NLLH (mean ± sd) | draws |\n|---|---|---|---|---|"
    )
    print("\n".join(summary(rows)))
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")
