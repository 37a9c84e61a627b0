"""The whole release is private: an attacker who holds every record but one compares files.

Played as the attacker of a differential-privacy release: release D, and D less one record
(the only holder of a rare value, the holder of an extreme value, an ordinary record), with
the README's command as a user runs it (``aggregate --csv … --mechanism gaussian --epsilon
1``), and diff *everything* in the files but the noise.  Under a declared schema nothing
but the noisy numbers may differ; under the default (a DP schema) no value that fewer than
a handful of records hold, and no data extreme, may appear anywhere.  The control
(``--schema-from-records``, the former default) shows the attack working: the same diff
tells D from D less the rare value's holder with certainty.

Suppression is attacked the same way: a target in a row of true count k + 1, released many
times with and without it; the attacker guesses "in" when the row is listed.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import TableLayout, aggregate, datasets
from aggmrf_explore.cli import main
from aggmrf_explore.privacy import make_mechanism, publish
from aggmrf_explore.privacy.schema import GRID
from aggmrf_explore.tables.suppression import apply_suppression

NOISY = ("n", "intercept")  # release.json's entries computed from the noisy counts
HANDFUL = 5


def _declared(name: str) -> str:
    return str(resources.files("aggmrf_explore") / "data" / f"{name}.schema.json")


def _release(tmp: Path, df: pd.DataFrame, label: str, tag: str, *extra: str) -> Path:
    """Write ``df`` as a CSV and release it with the README's command (+ ``extra``)."""
    csv = tmp / f"{tag}.csv"
    df.to_csv(csv, index=False)
    out = tmp / f"rel_{tag}"
    argv = ["aggregate", "--csv", str(csv), "--label", label, "--out", str(out)]
    code = main([*argv, "--mechanism", "gaussian", "--epsilon", "1", *extra])
    assert code == 0
    return out


def _files(rel: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(rel.iterdir())}


def _rows(text: str) -> pd.DataFrame:
    """A table file's rows without its noisy columns (what the release lists)."""
    df = pd.read_csv(pd.io.common.StringIO(text), dtype=str, keep_default_na=False)
    return df.drop(columns=[c for c in df.columns if c.startswith(("count", "label_sum"))])


def _targets(df: pd.DataFrame, rare_col: str, extreme_col: str, rng) -> dict[str, int]:
    """Row indices of the records to remove: the only holder of a value of ``rare_col``
    (or the holder of its rarest value), the holder of ``extreme_col``'s maximum, one at
    random."""
    counts = df[rare_col].value_counts()
    rare_value = counts.index[-1]
    return {
        "rare": int(df.index[df[rare_col] == rare_value][0]),
        "extreme": int(df[extreme_col].idxmax()),
        "ordinary": int(rng.integers(len(df))),
    }


def _rare_values(df: pd.DataFrame, label: str) -> set[tuple[str, str]]:
    """(column, value) of every categorical value held by fewer than HANDFUL records."""
    out: set[tuple[str, str]] = set()
    for c in df.columns:
        if c != label and not pd.api.types.is_numeric_dtype(df[c]):
            vc = df[c].astype(str).value_counts()
            out.update((c, v) for v in vc.index[vc < HANDFUL])
    return out


def _printed(files: dict[str, str], meta: dict) -> set[tuple[str, str]]:
    """(feature, value) of everything the release prints: modalities and table cells."""
    out = {(f["name"], v) for f in meta["features"] for v in f["modalities"]}
    for fname, text in files.items():
        if fname.endswith(".csv"):
            for col, values in _rows(text).items():
                out.update((col, v) for v in values)
    return out


def _extremes(df: pd.DataFrame, label: str) -> set[float]:
    """Each numeric column's minimum and maximum that is not a round grid number (a grid
    number may be an edge because it is on the grid, not because a record holds it)."""
    out = set()
    for c in df.columns:
        if c != label and pd.api.types.is_numeric_dtype(df[c]):
            out.update(float(v) for v in (df[c].min(), df[c].max()) if not np.isin(v, GRID))
    return out


def _numbers_in_schema(meta: dict) -> set[float]:
    """Every number release.json's schema prints: edges and numbers in modality labels."""
    out = set()
    for f in meta["features"]:
        out.update(float(v) for v in f.get("edges") or [])
        for label in f["modalities"]:
            for tok in label.replace("[", " ").replace(")", " ").replace(",", " ").split():
                try:
                    out.add(float(tok))
                except ValueError:
                    pass
    return out


CASES = [("adult", "income", "native-country", "fnlwgt"), ("bank", "y", "default", "duration")]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def neighbours(request, tmp_path_factory):
    name, label, rare_col, extreme_col = request.param
    ds = getattr(datasets, name)()
    df = ds.train[[*ds.feature_columns, ds.label]].reset_index(drop=True)
    rng = np.random.default_rng()  # fresh records every run
    return name, label, df, _targets(df, rare_col, extreme_col, rng), tmp_path_factory.mktemp(name)


def test_declared_schema_files_differ_only_in_noise(neighbours):
    """Under the dataset's declared schema, D and D less any one record give files that
    differ only in the noisy numbers: the same release.json (but n and the intercept), the
    same files, the same rows in the same order."""
    name, label, df, targets, tmp = neighbours
    schema = ["--schema", _declared(name)]
    full = _files(_release(tmp, df, label, "full_declared", *schema))
    for who, row in targets.items():
        less = _files(_release(tmp, df.drop(index=row), label, f"{who}_declared", *schema))
        assert sorted(less) == sorted(full), who
        a, b = json.loads(full["release.json"]), json.loads(less["release.json"])
        for key in NOISY:
            a.pop(key), b.pop(key)
        assert a == b, f"release.json differs beyond the noise without the {who} record"
        for fname in full:
            if fname.endswith(".csv"):
                pd.testing.assert_frame_equal(_rows(full[fname]), _rows(less[fname]))


def test_default_schema_prints_no_rare_value(neighbours):
    """The default path (no --schema on a CSV: a DP schema) never prints a value that fewer
    than a handful of records hold, nor a column's minimum or maximum, in any file, with or
    without the target; its numeric edges are grid points, its categories values that many
    records hold; release.json states the schema's ε and adds it to the total."""
    name, label, df, targets, tmp = neighbours
    rare, extremes = _rare_values(df, label), _extremes(df, label)
    assert rare and extremes  # the datasets do have them
    for who, data in (("full", df), ("rare", df.drop(index=targets["rare"]))):
        rel = _release(tmp, data, label, f"{who}_dp")
        files = _files(rel)
        meta = json.loads(files["release.json"])
        assert meta["schema_source"]["source"] == "dp"
        priv = meta["privacy"]
        assert priv["schema"]["epsilon"] == pytest.approx(0.5)
        assert priv["epsilon"] == pytest.approx(1.5)
        assert 0 < priv["delta"] <= 2e-7
        for f in meta["features"]:
            if f["kind"] == "numeric":
                assert all(np.isin(f["edges"], GRID)), f["name"]
            else:
                held = data[f["name"]].astype(str).value_counts()
                assert all(held.get(v, 0) >= HANDFUL for v in f["known"]), f["name"]
        assert not _numbers_in_schema(meta) & extremes
        leaked = sorted(rare & _printed(files, meta))
        assert not leaked, f"values held by < {HANDFUL} records in the {who} release: {leaked[:5]}"


def test_control_schema_from_records_tells_the_neighbours_apart(neighbours):
    """The control: a schema fitted on the records (the former default) differs, the same
    way every time, between D and D less the rare value's holder, and prints rare values,
    so the tests above can fail."""
    name, label, df, targets, tmp = neighbours
    flag = ["--schema-from-records", "--min-count", "1"]
    full = _files(_release(tmp, df, label, "full_records", *flag))
    less = _files(_release(tmp, df.drop(index=targets["rare"]), label, "rare_records", *flag))
    a, b = json.loads(full["release.json"]), json.loads(less["release.json"])
    assert a["features"] != b["features"]
    assert a["privacy"]["private"] is False
    printed = {(f["name"], v) for f in a["features"] for v in f["modalities"]}
    assert printed & _rare_values(df, label) or _numbers_in_schema(a) & _extremes(df, label)


# ---------------------------------------------------------------------- suppression
K_SUPPRESS = 5
EPSILON = 1.0


def _suppression_records(with_target: bool) -> tuple[np.ndarray, np.ndarray]:
    """3 features; the pair cell (x0=1, x1=1) holds K_SUPPRESS + 1 records with the target,
    K_SUPPRESS without; everything else well populated."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(3000, 3))
    X[(X[:, 0] == 1) & (X[:, 1] == 1), 1] = 0
    cell = np.tile([1, 1, 2], (K_SUPPRESS + int(with_target), 1))
    X = np.vstack([X, cell])
    y = rng.integers(0, 2, len(X))
    return X, y


def test_suppression_is_decided_on_noisy_counts_attack():
    """A target in a row of true count k + 1: over many secure releases of D and of D less
    the target, the attacker who says "in" when the row is listed does no better than
    ε-DP allows (accuracy ≤ e^ε / (1 + e^ε) plus sampling error).  Deciding on true counts
    (the former rule) gives accuracy 1."""
    lay = TableLayout.all_pairs([3, 3, 3])
    ti = lay.table_index((0, 1))
    row = lay.offsets[ti] + 1 * 3 + 1  # cell (1, 1) of table (0, 1)
    mech = make_mechanism("discrete_laplace", EPSILON, None, lay)
    listed = {}
    for with_target in (True, False):
        agg = aggregate(*_suppression_records(with_target), lay)
        assert agg.d[row] == K_SUPPRESS + int(with_target)
        hits = 0
        for _ in range(300):
            rel = apply_suppression(publish(agg, mech), {ti: K_SUPPRESS})
            hits += not rel.suppression.rows[row]
        listed[with_target] = hits / 300
    accuracy = 0.5 * (listed[True] + (1 - listed[False]))
    bound = math.exp(EPSILON) / (1 + math.exp(EPSILON))
    assert accuracy <= bound + 3 * math.sqrt(0.25 / 600), (listed, accuracy)
    # the former rule, on true counts, as the control
    agg_in = aggregate(*_suppression_records(True), lay)
    truth = apply_suppression(agg_in, {ti: K_SUPPRESS})  # exact: released = true counts
    assert not truth.suppression.rows[row]
