"""The strict reader reads back every release the package writes: count the refusals.

Each draw is what a user does: publish Adult's exact tables (the declared schema, all
pairs, T = 105) with a discrete mechanism (secure noise), write the files, read them back
with the strict reader.  Every mechanism the writer accepts for others (discrete Laplace,
discrete Gaussian), ε ∈ {0.1, 1, 8}; the draws cycle through the six.  A refusal prints
its message.

Usage: ``python benchmarks/release_readback.py [--releases 204] [--features N]
[--out docs/release_readback.json]``; ``--features N`` keeps Adult's first N features
(all 14 by default: T = 105 tables, 9 777 rows; reading one back takes seconds).
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from aggmrf_explore import TableLayout, aggregate, datasets
from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.io import read_release, write_release
from aggmrf_explore.privacy import make_mechanism, publish
from aggmrf_explore.privacy.schema import bundled_schema

MECHANISMS = ("discrete_laplace", "discrete_gaussian")
EPSILONS = (0.1, 1.0, 8.0)


def main(releases: int, out: str | None, features: int | None = None) -> dict:
    ds = datasets.adult()
    schema = bundled_schema("adult")
    if features:
        schema = schema.subset(schema.feature_names[:features])
    X = schema.transform(ds.train)
    y = (ds.train[ds.label] == ">50K").to_numpy().astype(np.int8)
    layout = TableLayout.all_pairs(
        schema.n_modalities, schema.feature_names, modality_labels=schema.modality_labels
    )
    exact = aggregate(X, y, layout)
    tmp = Path(tempfile.mkdtemp(prefix="readback_"))
    combos = itertools.cycle(itertools.product(MECHANISMS, EPSILONS))
    refused: list[dict] = []
    per: dict[str, int] = {}
    t0 = time.perf_counter()
    for i in range(releases):
        name, eps = next(combos)
        mech = make_mechanism(name, eps, 1e-7 if "gaussian" in name else None, layout)
        path = tmp / f"r{i}"
        write_release(publish(exact, mech), path, schema)
        key = f"{name} ε={eps:g}"
        per[key] = per.get(key, 0) + 1
        try:
            read_release(path)
        except AggMRFError as e:
            refused.append({"release": key, "message": str(e)[:500]})
            print(f"REFUSED {key}: {str(e)[:300]}", flush=True)
        for f in path.iterdir():
            f.unlink()
        path.rmdir()
        if (i + 1) % 20 == 0:
            print(f"{i + 1} releases read back, {len(refused)} refused", flush=True)
    result = {
        "releases": releases,
        "refused": len(refused),
        "per_mechanism": per,
        "refusals": refused,
        "seconds": time.perf_counter() - t0,
        "rows": int(layout.K),
        "tables": int(layout.n_released_tables),
    }
    print(json.dumps({k: v for k, v in result.items() if k != "refusals"}, indent=1))
    if out:
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--releases", type=int, default=204)
    ap.add_argument("--features", type=int, default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    main(a.releases, a.out, a.features)
