"""Read and write *releases*: already-aggregated contingency tables, without any record.

A release is what an analyst receives: for each released table, one row per combination
of the table's feature values with a ``count`` and a ``label_sum`` (often noisy).  Two
on-disk formats, both written by :func:`write_release` and read by :func:`read_release`:

* a **directory**: one CSV per table (feature columns holding modality labels, ``count``,
  ``label_sum``) and a ``release.json`` metadata file;
* one **long CSV**: a ``table`` column naming the table, one column per feature (empty
  where the feature is not in the table), ``count`` and ``label_sum`` (``release.json``
  beside it, or ``FILE.json``, is read when present).

``release.json`` (optional, but needed for noise-aware training and for predicting on
raw records with numeric features)::

    {"format": "aggmrf-release", "version": 1, "n": 32561,
     "label": "income", "positive_label": ">50K", "classes": ["<=50K", ">50K"],
     "features": [{"name": "age", "kind": "numeric", "modalities": ["[17, 22)", ...],
                   "edges": [22.0, ...]},
                  {"name": "sex", "kind": "categorical", "modalities": ["Female", "Male"],
                   "values": "string", "known": ["Female", "Male"], "codes": [0, 1],
                   "unseen": "error"}, ...],
     "tables": [{"name": "age", "features": ["age"], "file": "001_age.csv"}, ...],
     "intercept": {"count": 32561, "label_sum": 7841},
     "noise": {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-07, "sigma": 12.3,
               "l2_sensitivity": 14.5, "calibration": "analytic", "accounting": "both"}}

The features are the :class:`~aggmrf_explore.encoding.Schema` of the encoder that made
the tables (``Schema.to_dict``), the noise is the mechanism's ``to_dict``.  Without
``release.json`` the schema is inferred: features are the table CSVs' columns other than
``count`` / ``label_sum``, modalities are the labels in order of first appearance.

Reading is a sequence of named steps, each raising :class:`AggMRFError` with a message
that names the table, and the file line where there is one:

1. :func:`_find_manifest` / :func:`_read_manifest` — locate and parse ``release.json``;
2. :func:`_check_manifest` — its format;
3. :func:`_resolve_table_files` — which files hold the tables (declared ``file`` entries,
   the directory's CSVs, or the long CSV itself);
4. :func:`_read_table_files` — parse each file into raw tables (:func:`_split_table`:
   missing columns, non-finite counts, empty feature cells, duplicate rows);
5. :func:`_assemble` — the schema (declared or inferred), each table checked against it
   (:func:`_table_codes`), the layout, the declared noise, and the consistency checks:
   the same feature with different modalities in two tables; without noise, negative
   counts or label sums and label sums larger than their count; tables whose totals (and
   per-feature marginals) disagree beyond what the declared noise explains
   (|Δ| > 5 σ √(cells summed)).  ``strict=False`` turns these consistency errors (not the
   malformed-file ones) into warnings.  Then the :class:`AggregatedData`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import privacy
from ..budget import Budget, check_size
from ..encoding import Encoder, Schema
from ..errors import AggMRFError
from ..files import check_output_dir, check_output_file, read_bytes
from ..suppression import Suppression, suppression_from_presence
from ..tables import AggregatedData, TableLayout
from .extensions import (
    label_column,
    meta_for_label,
    noise_scale,
    select_label,
    table_suppressed_cells,
    table_thresholds,
)
from .fields import short
from .formula import neutralise_frame, restore_cell, restore_frame
from .manifest import (
    FORMAT,
    RELEASE_FILE,
    UNDECLARED_TABLE_FILE_BYTES,
    VERSION,
    check_manifest,
    check_release_size,
    read_manifest,
    table_file,
    table_file_cap,
)

__all__ = [
    "Schema",
    "Release",
    "ReleaseWarning",
    "write_release",
    "read_release",
    "read_release_noise",
    "read_schema",
    "release_from_frames",
    "mechanism_from_meta",
    "noise_meta",
    "RELEASE_FILE",
]

COUNT = "count"
LABEL_SUM = "label_sum"
TABLE = "table"
Z_NOISE = 5.0  # discrepancies beyond Z_NOISE standard deviations of the declared noise are errors
_MAX_LISTED = 8
MAX_CELL = 1e15  # |count|, |label_sum| of a table row (more is not a count of records)


class ReleaseWarning(UserWarning):
    """A release is readable but something in it looks wrong (the message says what and where)."""


# ====================================================================== noise metadata
def noise_meta(
    mechanism: privacy.Mechanism | None,
    accounting: str | None = None,
    generator: str | None = None,
) -> dict | None:
    """The ``noise`` object of release.json for a privacy mechanism (None: no noise).

    The mechanism's ``to_dict()``, plus ``accounting`` ("both" / "queries" / "replace")
    and the ``neighbouring`` relation it protects when given, and ``generator``: where the
    noise came from ("secure", "insecure-seed" or "simulation", see
    :mod:`aggmrf_explore.privacy.release`).  Never a seed or a generator's state.
    """
    if mechanism is None:
        return None
    out = mechanism.to_dict()
    if accounting is not None:
        out["accounting"] = accounting
        out["neighbouring"] = privacy.NEIGHBOURS.get(accounting, accounting)
    if generator is not None:
        out["generator"] = generator
    return out


def mechanism_from_meta(
    meta: dict | None, layout: TableLayout | None = None
) -> privacy.Mechanism | None:
    """Rebuild the mechanism object from release.json's ``noise`` (None → no noise).

    Accepted (see ``LaplaceMechanism.from_dict`` / ``GaussianMechanism.from_dict``): the
    full description written by :func:`write_release` (ε, δ, sensitivity, calibration),
    ε/δ/accounting (sensitivity from the layout), or just a noise level
    (``{"mechanism": "gaussian", "sigma": 30}`` or ``{"mechanism": "laplace", "scale": 20}``).
    """
    if meta is None or meta == {}:
        return None
    if not isinstance(meta, dict):
        raise AggMRFError("release.json 'noise' must be an object (or null).")
    kind = str(meta.get("mechanism", "none")).lower()
    if kind not in privacy.MECHANISMS:
        raise AggMRFError(
            f"release.json 'noise': unknown mechanism {meta.get('mechanism')!r}; "
            f"use one of {', '.join(privacy.MECHANISMS)}."
        )
    try:
        return privacy.mechanism_from_dict({**meta, "mechanism": kind}, layout)
    except AggMRFError as e:
        raise AggMRFError(f"release.json 'noise' is invalid: {e}") from None


# ====================================================================== release object
@dataclass
class Release:
    """What :func:`read_release` returns: the aggregates, the schema and what looked wrong."""

    data: AggregatedData
    schema: Schema
    warnings: list[str] = field(default_factory=list)
    source: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def layout(self) -> TableLayout:
        return self.data.layout


# ====================================================================== writing
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "feature"


def _released_frames(
    agg: AggregatedData, labels: dict[str, np.ndarray] | None = None
) -> list[tuple[int, pd.DataFrame]]:
    """(table index, frame) per released table: feature label columns, count, label_sum
    (and ``label_sum.L`` for each other label L of ``labels``); suppressed rows left out."""
    lay = agg.layout
    box = agg.suppression
    out = []
    for ti, t in enumerate(lay.tables):
        if not t:
            continue
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        keep = slice(None) if box is None else ~box.rows[sl]
        codes = lay.row_codes(ti)[keep]
        cols: dict[str, object] = {}
        for j, f in enumerate(t):
            labels_f = np.asarray(lay.modality_labels[f], dtype=object)
            cols[lay.feature_names[f]] = labels_f[codes[:, j]]
        cols[COUNT] = agg.d[sl][keep]
        cols[LABEL_SUM] = agg.c[sl][keep]
        for name, c in (labels or {}).items():
            cols[label_column(name, None)] = np.asarray(c, dtype=np.float64)[sl][keep]
        out.append((ti, pd.DataFrame(cols)))
    return out


def _as_int_if_exact(frame: pd.DataFrame, exact: bool) -> pd.DataFrame:
    if exact:
        for c in [COUNT, LABEL_SUM, *(c for c in frame.columns if c.startswith(LABEL_SUM + "."))]:
            v = frame[c].to_numpy()
            if np.all(v == np.round(v)):
                frame[c] = v.astype(np.int64)
    return frame


def _writer_schema(
    agg: AggregatedData,
    schema: Schema | Encoder | None,
    label: str | None,
    positive_label: str | None,
    classes: Sequence[str] | None,
) -> Schema:
    """The schema to store: given (Schema / fitted Encoder) or the layout's labels, checked."""
    if schema is None:
        schema = Schema.from_layout(agg.layout)
    elif not isinstance(schema, Schema):
        schema = Schema.from_encoder(schema)
    schema.check_layout(agg.layout)
    if label is not None:
        schema.label = label
    if positive_label is not None:
        schema.positive_label = str(positive_label)
    if classes is not None:
        schema.classes = [str(c) for c in classes]
    return schema


def _manifest(
    agg: AggregatedData,
    schema: Schema,
    accounting: str | None,
    labels: dict[str, np.ndarray] | None = None,
) -> dict:
    """release.json without its ``tables`` entries (added as the files are written)."""
    meta: dict = {
        "format": FORMAT,
        "version": VERSION,
        "n": int(agg.n),
        **schema.to_dict(),
        "tables": [],
        "noise": noise_meta(
            agg.noise, accounting or agg.meta.get("accounting"), agg.meta.get("generator")
        ),
    }
    if agg.layout.intercept:
        count, label_sum = float(agg.d[0]), float(agg.c[0])
        if agg.noise is not None and agg.noise.discrete:  # integer noise: integer sums
            count, label_sum = int(count), int(label_sum)
        meta["intercept"] = {"count": count, "label_sum": label_sum}
    if labels:  # several labels (:mod:`.extensions`): the primary one first
        meta["labels"] = [schema.label or "label", *labels]
        if agg.layout.intercept:
            meta["intercept"]["label_sums"] = {k: float(v[0]) for k, v in labels.items()}
    return meta


def _table_entry(agg: AggregatedData, ti: int, fname: str) -> dict:
    """One ``tables`` entry of release.json (with its suppression threshold, if any)."""
    lay = agg.layout
    entry = {
        "name": lay.table_name(lay.tables[ti]),
        "features": [lay.feature_names[f] for f in lay.tables[ti]],
        "file": fname,
    }
    scale = agg.meta.get("noise_scale", {}).get(ti)
    if scale is not None and scale > 1:
        entry["noise_scale"] = float(scale)
    if agg.suppression is not None and ti in agg.suppression.thresholds:
        entry["suppression"] = agg.suppression.thresholds[ti]
        if ti in agg.suppression.cells:
            entry["suppressed_cells"] = int(agg.suppression.cells[ti])
    return entry


def _write_dir(
    agg: AggregatedData, path: Path, meta: dict, labels: dict[str, np.ndarray] | None = None
) -> Path:
    """One CSV per released table in directory ``path``; returns the release.json path."""
    lay, exact = agg.layout, agg.noise is None or agg.noise.discrete
    check_output_dir(path, "release directory")
    path.mkdir(exist_ok=True)
    frames = _released_frames(agg, labels)
    width = max(3, len(str(len(frames))))
    for i, (ti, frame) in enumerate(frames):
        fname = (
            f"{i + 1:0{width}d}_"
            + "__".join(_safe(lay.feature_names[f]) for f in lay.tables[ti])
            + ".csv"
        )
        neutralise_frame(_as_int_if_exact(frame, exact)).to_csv(path / fname, index=False)
        meta["tables"].append(_table_entry(agg, ti, fname))
    return path / RELEASE_FILE


def _write_long(
    agg: AggregatedData, path: Path, meta: dict, labels: dict[str, np.ndarray] | None = None
) -> Path:
    """All released tables in one long CSV ``path``; returns the FILE.json path."""
    lay, exact = agg.layout, agg.noise is None or agg.noise.discrete
    if path.suffix.lower() != ".csv":
        raise AggMRFError(f"a long-format release is one .csv file; got {str(path)!r}.")
    check_output_file(path, "release file", (".csv",))
    parts = []
    extra = [label_column(k, None) for k in labels or {}]
    for ti, frame in _released_frames(agg, labels):
        name = lay.table_name(lay.tables[ti])
        frame = frame.copy()
        for f in lay.feature_names:
            if f not in frame.columns:
                frame[f] = ""
        frame.insert(0, TABLE, name)
        cols = [TABLE, *lay.feature_names, COUNT, LABEL_SUM, *extra]
        parts.append(_as_int_if_exact(frame, exact)[cols])
        meta["tables"].append(_table_entry(agg, ti, path.name))
    neutralise_frame(pd.concat(parts, ignore_index=True)).to_csv(path, index=False)
    return path.with_suffix(".json")


def write_release(
    agg: AggregatedData,
    path: str | Path,
    schema: Schema | Encoder | None = None,
    *,
    fmt: str = "dir",
    accounting: str | None = None,
    label: str | None = None,
    positive_label: str | None = None,
    classes: Sequence[str] | None = None,
    labels: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write the released tables of ``agg`` (never its exact values under noise).

    ``path``: a directory (``fmt="dir"``: one CSV per table + release.json) or a ``.csv``
    file (``fmt="long"``: one long CSV + ``release.json`` beside it, named FILE.json).
    ``schema``: a :class:`Schema` or a fitted Encoder (adds bin edges and the raw-value
    mapping, needed to predict on raw records); default: labels from the layout.
    ``labels``: the label sums (K,) of further labels, by name (columns ``label_sum.NAME``,
    :mod:`.extensions`); ``agg.c`` is the primary label's (``label``).  Rows that
    ``agg.suppression`` marks are left out and each table declares its threshold.
    Returns the path of the metadata file.
    """
    if not isinstance(agg, AggregatedData):
        raise AggMRFError(
            "write_release needs an AggregatedData (tables.aggregate / privacy.release)."
        )
    if fmt not in ("dir", "long"):
        raise AggMRFError(f"fmt must be 'dir' or 'long'; got {fmt!r}.")
    if agg.layout.has_hashed_tables:
        raise AggMRFError(
            "write_release does not support hashed tables (the CSV formats list modality "
            "combinations, a hashed table's rows are buckets); release exact tables only."
        )
    schema = _writer_schema(agg, schema, label, positive_label, classes)
    labels = _check_labels(agg, schema, labels)
    meta = _manifest(agg, schema, accounting, labels)
    path = Path(path)
    write = _write_dir if fmt == "dir" else _write_long
    meta_path = write(agg, path, meta, labels)
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta_path


def _check_labels(
    agg: AggregatedData, schema: Schema, labels: dict[str, np.ndarray] | None
) -> dict[str, np.ndarray] | None:
    """The further labels' sums as float64 (K,) arrays, checked (names, shapes, finite)."""
    if not labels:
        return None
    out = {}
    for name, c in labels.items():
        c = np.asarray(c, dtype=np.float64)
        if not isinstance(name, str) or not name or name == schema.label:
            raise AggMRFError(
                f"further label names must be non-empty and differ from the primary label "
                f"{schema.label!r}; got {name!r}."
            )
        if c.shape != (agg.layout.K,) or not np.all(np.isfinite(c)):
            raise AggMRFError(
                f"label {name!r}: its label sums must be finite, shape ({agg.layout.K},)."
            )
        out[name] = c
    return out


# ====================================================================== reading: files
@dataclass
class _RawTable:
    """One table as read from its file, before it is checked against the schema."""

    name: str
    features: list[str]
    frame: pd.DataFrame  # feature columns (str), count, label_sum (float)
    lines: np.ndarray  # file line of each row
    where: str  # file name, for messages


@dataclass
class _TableFile:
    """A file to read tables from (step 3's answer).

    ``kind``: "table" (one declared table: ``name`` / ``features`` from release.json),
    "long" (a long CSV; ``meta`` declares the features of its tables, if given) or "any"
    (a CSV found in the directory: a long CSV if it has a ``table`` column, else one table).
    """

    path: Path
    kind: str
    name: str | None = None
    features: list[str] | None = None
    meta: dict | None = None
    max_bytes: int = UNDECLARED_TABLE_FILE_BYTES  # byte cap (:func:`.manifest.table_file_cap`)


def _release_path(path: str | Path) -> Path:
    """The release a path names: release.json → its directory, FILE.json → FILE.csv."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        path = path.parent if path.name == RELEASE_FILE else path.with_suffix(".csv")
    return path


def _find_manifest(path: Path) -> Path | None:
    """Step 1a: the release.json of a release (None if there is none).

    A directory: its ``release.json``; a long CSV: ``FILE.json``, else ``release.json``
    beside it.
    """
    if not path.exists():
        raise AggMRFError(
            f"release not found: {str(path)!r} (a directory of CSVs or one CSV file)."
        )
    if path.is_dir():
        cands = [path / RELEASE_FILE]
    else:
        cands = [path.with_suffix(".json"), path.parent / RELEASE_FILE]
    return next((c for c in cands if c.exists()), None)


def _load_manifest(path: Path) -> dict:
    """Steps 1 and 2 for one release.json file: strict JSON, every field checked
    (:func:`.manifest.read_manifest`, :func:`.manifest.check_manifest`)."""
    return check_manifest(read_manifest(path), path)


def _resolve_table_files(path: Path, meta: dict | None) -> list[_TableFile]:
    """Step 3: which files hold the tables of the release at ``path``.

    A directory whose release.json lists tables: their ``file`` entries (all in one file:
    a long CSV); a directory without: its ``.csv`` files, sorted; a file: the long CSV.
    """
    if not path.is_dir():
        cap = table_file_cap(meta, (meta or {}).get("tables") or [{}])
        return [_TableFile(path, "long", meta=meta, max_bytes=cap)]
    if meta is not None and meta.get("tables"):
        specs = meta["tables"]
        for i, s in enumerate(specs):
            if "file" not in s:
                raise AggMRFError(f"{RELEASE_FILE}: table #{i + 1} needs a 'file'.")
            table_file(path, s["file"], i)  # confined: a plain name inside the directory
        files = sorted({s["file"] for s in specs})
        if len(files) == 1 and len(specs) > 1:
            cap = table_file_cap(meta, specs)
            return [_TableFile(path / files[0], "long", meta=meta, max_bytes=cap)]
        out = []
        for i, s in enumerate(specs):
            f = table_file(path, s["file"], i)
            name = s.get("name") or " × ".join(s.get("features") or [f.stem])
            cap = table_file_cap(meta, [s])
            out.append(_TableFile(f, "table", name=name, features=s.get("features"), max_bytes=cap))
        return out
    files = sorted(
        table_file(path, p.name, i)
        for i, p in enumerate(sorted(path.iterdir()))
        if p.suffix.lower() == ".csv"
    )
    if not files:
        raise AggMRFError(f"{str(path)!r} holds no .csv table file.")
    return [_TableFile(f, "any") for f in files]


def _read_table_files(sources: list[_TableFile], label_column: str = LABEL_SUM) -> list[_RawTable]:
    """Step 4: read each file into raw tables (a long CSV gives several); ``label_column``
    is read as ``label_sum`` (a release with several labels, :func:`.extensions.select_label`)."""
    out: list[_RawTable] = []
    for src in sources:
        f = src.path
        if src.kind == "long":
            out.extend(
                _long_tables(f, src.meta, label_column=label_column, max_bytes=src.max_bytes)
            )
            continue
        what = f"table {src.name!r}" if src.kind == "table" else f"table file {f.name!r}"
        df = select_label(_read_text_csv(f, what, src.max_bytes), label_column, what)
        lines = np.arange(len(df)) + 2
        if src.kind == "table":
            out.append(_split_table(df, src.name, f.name, lines, src.features))
        elif TABLE in df.columns:
            out.extend(_long_tables(f, None, df))
        else:
            feats = [c for c in df.columns if c not in (COUNT, LABEL_SUM)]
            # a file without a count column is not a table: never name it by its header
            name = " × ".join(feats) if COUNT in df.columns and feats else f.stem
            out.append(_split_table(df, name, f.name, lines, None))
    return out


def _columns(df: pd.DataFrame) -> str:
    """The header of a table file, for messages: listed (each name cut to 40 characters)
    only when the file has the ``count`` column of a table, else just counted, so that a
    file which is not a table is never echoed."""
    if COUNT not in df.columns:
        return f"its header line has {len(df.columns)} field(s), none named {COUNT!r}"
    return "its columns are " + ", ".join(short(str(c)) for c in list(df.columns)[:12])


def _read_text_csv(
    path: Path, what: str, max_bytes: int = UNDECLARED_TABLE_FILE_BYTES
) -> pd.DataFrame:
    """A CSV table file as strings (stripped, formula prefixes restored), separator sniffed
    from the header line; at most ``max_bytes`` bytes of a regular file are read."""
    text = read_bytes(path, what, max_bytes, shown=repr(path.name))
    if not text.strip():
        raise AggMRFError(f"{what} ({path.name}) is empty; a table needs a header line and rows.")
    if text[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise AggMRFError(
            f"{what} ({path.name}) is UTF-16 text; save the table file as UTF-8 (CSV UTF-8)."
        )
    if b"\x00" in text[:65536]:
        raise AggMRFError(f"{what} ({path.name}) is not a CSV text file (it has NUL bytes).")
    try:
        s = text.decode("utf-8-sig")
    except UnicodeDecodeError:
        s = text.decode("latin-1")
    first = s.lstrip().splitlines()[0]
    sep = max((",", ";", "\t"), key=first.count)
    header = [str(restore_cell(c.strip())) for c in next(csv.reader([first], delimiter=sep), [])]
    if len(set(header)) != len(header):
        dup = sorted({c for c in header if header.count(c) > 1})
        raise AggMRFError(
            f"{what} ({path.name}) has two columns named {short(dup[0])}; each column needs "
            "its own name."
        )
    try:
        df = pd.read_csv(
            io.StringIO(s), sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise AggMRFError(f"{what} ({path.name}) cannot be parsed as CSV: {msg}.") from None
    df.columns = [str(c).strip() for c in df.columns]
    for c in df.columns:
        df[c] = df[c].astype(str).str.strip()
    return restore_frame(df)


def _numbers(df: pd.DataFrame, col: str, table: str, lines: np.ndarray, where: str) -> np.ndarray:
    """Column ``col`` as float64 (n,), exactly as written; an error on a non-finite cell."""
    s = df[col]
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.abs(x) <= MAX_CELL)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AggMRFError(
            f"table {short(table)} ({where}), line {lines[i]}: {col} is {short(s.iloc[i])}, not a "
            f"finite number within ±{MAX_CELL:g} ({int(bad.sum())} such row(s)); every row needs "
            f"a numeric {COUNT} and {LABEL_SUM}."
        )
    # exact round trip of written floats
    return np.asarray([float(v) for v in s], dtype=np.float64)


def _split_table(
    df: pd.DataFrame, name: str, where: str, lines: np.ndarray, features: list[str] | None
) -> _RawTable:
    """One table's frame → :class:`_RawTable`, after the malformed-file checks.

    Checks: ``count`` / ``label_sum`` columns present; 1 to 3 feature columns, all present;
    no empty feature cell; finite counts and label sums; no duplicate row.
    """
    missing = [c for c in (COUNT, LABEL_SUM) if c not in df.columns]
    if missing:
        raise AggMRFError(
            f"table {name!r} ({where}) has no column {missing[0]!r}; {_columns(df)}. A table "
            f"needs its feature columns, {COUNT!r} and {LABEL_SUM!r}."
        )
    if features is None:
        features = [c for c in df.columns if c not in (COUNT, LABEL_SUM, TABLE)]
    if not features:
        raise AggMRFError(
            f"table {name!r} ({where}) has no feature column besides {COUNT!r} and {LABEL_SUM!r}."
        )
    if len(features) > 3:
        raise AggMRFError(
            f"table {name!r} ({where}) has {len(features)} feature columns {features}; tables "
            "have 1 to 3 features."
        )
    absent = [f for f in features if f not in df.columns]
    if absent:
        raise AggMRFError(
            f"table {name!r} ({where}) lacks the feature column(s) {absent} declared for it; "
            f"{_columns(df)}."
        )
    for f in features:
        empty = (df[f] == "").to_numpy()
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise AggMRFError(
                f"table {name!r} ({where}), line {lines[i]}: feature {f!r} is empty; every row "
                "needs a modality label for each of the table's features."
            )
    d = _numbers(df, COUNT, name, lines, where)
    c = _numbers(df, LABEL_SUM, name, lines, where)
    frame = pd.DataFrame({f: df[f].to_numpy(dtype=object) for f in features})
    key = frame.astype(str).agg("\x1f".join, axis=1) if len(features) > 1 else frame[features[0]]
    dup = key.duplicated(keep=False).to_numpy()
    if dup.any():
        i = np.flatnonzero(dup)
        first = key.iloc[i[0]]
        same = [int(lines[k]) for k in i if key.iloc[k] == first]
        vals = ", ".join(f"{f}={v!r}" for f, v in zip(features, first.split("\x1f"), strict=True))
        raise AggMRFError(
            f"table {name!r} ({where}): lines {same[0]} and {same[1]} are the same row ({vals}); "
            "each combination of modalities must appear once."
        )
    frame[COUNT] = d
    frame[LABEL_SUM] = c
    return _RawTable(name, list(features), frame, np.asarray(lines), where)


def _long_tables(
    path: Path,
    meta: dict | None,
    df: pd.DataFrame | None = None,
    label_column: str = LABEL_SUM,
    max_bytes: int = UNDECLARED_TABLE_FILE_BYTES,
) -> list[_RawTable]:
    """The tables of a long CSV (rows grouped by their ``table`` cell)."""
    if df is None:
        df = _read_text_csv(path, "release file", max_bytes)
        df = select_label(df, label_column, path.name)
    if TABLE not in df.columns:
        raise AggMRFError(
            f"{path.name}: a one-file release needs a {TABLE!r} column naming each row's table "
            f"(or give a directory of per-table CSVs); {_columns(df)}."
        )
    declared = {}
    if meta is not None:
        for s in meta.get("tables") or []:
            if isinstance(s, dict) and "name" in s:
                declared[str(s["name"])] = s.get("features")
    feat_cols = [c for c in df.columns if c not in (TABLE, COUNT, LABEL_SUM)]
    lines_all = np.arange(len(df)) + 2
    out = []
    names = pd.unique(df[TABLE].to_numpy(dtype=object))
    for name in names:
        if name == "":
            i = int(np.flatnonzero((df[TABLE] == "").to_numpy())[0])
            raise AggMRFError(f"{path.name}, line {lines_all[i]}: the {TABLE!r} cell is empty.")
        mask = (df[TABLE] == name).to_numpy()
        sub = df[mask]
        lines = lines_all[mask]
        feats = declared.get(str(name))
        if feats is None:
            feats = [c for c in feat_cols if (sub[c] != "").any()]
        for c in feat_cols:
            if c not in feats:
                bad = (sub[c] != "").to_numpy()
                if bad.any():
                    raise AggMRFError(
                        f"table {name!r} ({path.name}), line {lines[int(np.flatnonzero(bad)[0])]}: "
                        f"feature {c!r} has a value but is not one of the table's features {feats}."
                    )
        out.append(_split_table(sub.reset_index(drop=True), str(name), path.name, lines, feats))
    return out


def read_release(
    path: str | Path,
    *,
    strict: bool = True,
    count_tolerance: float | None = None,
    label: str | None = None,
    budget: Budget | None = None,
) -> Release:
    """Read a release (directory or long CSV) into a :class:`Release`.

    ``strict=False`` turns consistency errors (totals, marginals, label sums) into warnings.
    ``count_tolerance`` overrides the allowed discrepancy between table totals (default:
    1e-6 relative without noise, 5 σ √(cells) with declared noise).  ``label``: which label
    of a release with several (``labels`` in release.json, :mod:`.extensions`); default the
    primary one.  ``budget``: the size limits (:class:`~aggmrf_explore.budget.Budget`,
    default 2·10⁶ rows), checked from release.json before any table file is read.

    Hostile input is refused with an AggMRFError (see :mod:`.manifest`): release.json is
    parsed strictly and every field checked; table files are plain names inside the
    release directory, regular files, read up to a cap proportional to their rows.
    """
    path = _release_path(path)
    manifest = _find_manifest(path)
    meta = None if manifest is None else _load_manifest(manifest)
    if meta is not None:
        check_release_size(meta, budget)
    meta, column = meta_for_label(meta, label)
    tables = _read_table_files(_resolve_table_files(path, meta), column)
    rel = _assemble(tables, meta, strict, count_tolerance, str(path), budget)
    generator = ((meta or {}).get("noise") or {}).get("generator")
    if generator in (privacy.INSECURE_SEED, privacy.SIMULATION):
        rel.warnings.append(
            f"this release's noise was drawn from a seed ({generator}): whoever knows or "
            "guesses the seed can recover the exact counts, so it is not private; it is "
            "fine for training and teaching, not as a release of real people's data."
        )
    return rel


def read_release_noise(path: str | Path) -> privacy.Mechanism | None:
    """The noise mechanism a release declares (its release.json, strictly checked), without
    reading its tables; None when it declares none."""
    path = _release_path(path)
    manifest = _find_manifest(path)
    if manifest is None:
        raise AggMRFError(f"{str(path)!r} has no release.json, so it declares no noise.")
    return mechanism_from_meta(_load_manifest(manifest).get("noise"))


def read_schema(path: str | Path) -> Schema:
    """The schema of a release: its ``release.json`` (or FILE.json), or inferred from its tables."""
    path = Path(path)
    cand = path / RELEASE_FILE if path.is_dir() else path
    if cand.suffix.lower() == ".csv":
        cand = cand.with_suffix(".json")
    if cand.exists() and cand.suffix.lower() == ".json":
        meta = _load_manifest(cand)
        if meta.get("features"):
            return Schema.from_dict(meta)
    return read_release(path).schema


def release_from_frames(
    tables: list,
    meta: dict | None = None,
    *,
    strict: bool = True,
    count_tolerance: float | None = None,
    source: str = "",
) -> Release:
    """Build a :class:`Release` from tables given as DataFrames (the API behind read_release).

    ``tables``: a list of tidy DataFrames (feature columns, ``count``, ``label_sum``), or of
    (name, DataFrame) pairs; ``meta``: the release.json dictionary (optional).
    """
    raw: list[_RawTable] = []
    for i, item in enumerate(tables):
        if isinstance(item, _RawTable):
            raw.append(item)
            continue
        name, df = item if isinstance(item, tuple) else (None, item)
        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(f"table #{i + 1} must be a pandas DataFrame.")
        df = df.copy()
        df.columns = [str(c) for c in df.columns]
        for c in df.columns:
            df[c] = df[c].astype(str).str.strip() if c not in (COUNT, LABEL_SUM) else df[c]
        feats = [c for c in df.columns if c not in (COUNT, LABEL_SUM, TABLE)]
        name = name or " × ".join(feats)
        df = df.astype({c: str for c in (COUNT, LABEL_SUM) if c in df.columns})
        raw.append(_split_table(df, name, f"table #{i + 1}", np.arange(len(df)) + 1, None))
    if meta is not None:
        meta = check_manifest(meta, Path(RELEASE_FILE))
    return _assemble(raw, meta, strict, count_tolerance, source)


# ====================================================================== reading: assembly
@dataclass
class _Grid:
    """The release's values on its layout (K rows), and where each row came from.

    ``d`` / ``c``: counts and label sums (K,), 0 where no file row; ``present``: a file
    row gave the value; ``line_of``: its file line; ``tables[ti]``: the raw table of
    layout table ti; ``mechanism`` / ``sigma``: the declared noise (None / 0 without).
    """

    layout: TableLayout
    d: np.ndarray
    c: np.ndarray
    present: np.ndarray
    line_of: np.ndarray
    tables: dict[int, _RawTable]
    mechanism: privacy.Mechanism | None
    suppression: Suppression | None = None  # rows absent from tables with a declared threshold
    noise_scale: float = 1.0  # rows that sum several noisy source rows (.extensions.noise_scale)

    @property
    def noisy(self) -> bool:
        return self.mechanism is not None

    @property
    def sigma(self) -> float:
        # the checks' noise level: σ times the largest declared noise scale (folded rows)
        return float(self.mechanism.std) * self.noise_scale if self.noisy else 0.0

    def suppressed_in(self, ti: int) -> float:
        """Table ti's declared suppression threshold k, or 0 when it has none."""
        return float(self.suppression.thresholds.get(ti, 0.0)) if self.suppression else 0.0

    def missing_mask(self) -> np.ndarray:
        """float (K,): 1 on rows no file lists, 0 elsewhere."""
        return (~self.present).astype(np.float64)

    def shortfall(self, ti: int) -> float:
        """k × the source cells table ti left out beyond its absent rows (folded values)."""
        if not self.suppression or ti not in self.suppression.cells:
            return 0.0
        extra = self.suppression.cells[ti] - int(self.missing(ti).sum())
        return self.suppressed_in(ti) * max(extra, 0)

    def missing(self, ti: int) -> np.ndarray:
        """bool (table_sizes[ti],): the table's rows its file does not list."""
        sl = slice(self.layout.offsets[ti], self.layout.offsets[ti + 1])
        return ~self.present[sl]

    def row_desc(self, ti: int, r: int) -> str:
        """Where row r (of layout table ti) comes from, for messages."""
        lay, t = self.layout, self.tables[ti]
        code = lay.row_codes(ti)[r - lay.offsets[ti]]
        vals = ", ".join(
            f"{lay.feature_names[f]}={lay.modality_labels[f][k]!r}"
            for f, k in zip(lay.tables[ti], code, strict=True)
        )
        line = f"line {self.line_of[r]}" if self.present[r] else "missing row"
        return f"table {t.name!r} ({t.where}), {line} ({vals})"


@dataclass
class _Totals:
    """Per released table (T,): total count and label sum; the reference totals."""

    d: np.ndarray
    c: np.ndarray
    ref_d: float
    ref_c: float


def _flag(msgs: list[str], header: str, to: list[str]) -> None:
    """Append one problem line (header + the first few messages) to ``to`` if any."""
    if msgs:
        more = f" (and {len(msgs) - _MAX_LISTED} more)" if len(msgs) > _MAX_LISTED else ""
        to.append(header + "; ".join(msgs[:_MAX_LISTED]) + more)


def _release_schema(raw: list[_RawTable], meta: dict | None) -> tuple[Schema, bool]:
    """(schema, declared): release.json's ``features``, else inferred from the tables.

    Inferred modalities are the labels in order of first appearance.
    """
    if meta is not None and meta.get("features"):
        return Schema.from_dict(meta), True
    names: list[str] = []
    mods: dict[str, list[str]] = {}
    for t in raw:
        for f in t.features:
            if f not in mods:
                names.append(f)
                mods[f] = []
            seen = set(mods[f])
            for v in pd.unique(t.frame[f].to_numpy(dtype=object)):
                if v not in seen:
                    mods[f].append(str(v))
                    seen.add(v)
    schema = Schema(names, [mods[f] for f in names])
    if meta is not None:
        schema.label = meta.get("label")
        schema.positive_label = meta.get("positive_label")
        schema.classes = meta.get("classes")
    return schema, False


def _table_codes(
    raw: list[_RawTable], schema: Schema, declared: bool
) -> list[tuple[_RawTable, list[int], np.ndarray]]:
    """Check each table against the schema; (table, feature indices, codes (n_rows, k)).

    Errors: a feature the schema does not declare, two tables over the same features, a
    label that is not a modality of its feature.
    """
    fidx = {f: i for i, f in enumerate(schema.feature_names)}
    lab_idx = [{m: k for k, m in enumerate(mods)} for mods in schema.modality_labels]
    seen_tables: dict[tuple[int, ...], str] = {}
    specs = []
    for t in raw:
        unknown = [f for f in t.features if f not in fidx]
        if unknown:
            raise AggMRFError(
                f"table {t.name!r} ({t.where}) has the feature column(s) {unknown}, which "
                f"{RELEASE_FILE} does not declare; declared features: {schema.feature_names}."
            )
        feats = [fidx[f] for f in t.features]
        key = tuple(sorted(feats))
        if key in seen_tables:
            raise AggMRFError(
                f"table {t.name!r} ({t.where}) is over the same features as table "
                f"{seen_tables[key]!r}; each table may appear once."
            )
        seen_tables[key] = t.name
        codes = np.empty((len(t.frame), len(feats)), dtype=np.int64)
        for j, f in enumerate(feats):
            col = t.frame[t.features[j]].to_numpy(dtype=object)
            idx = np.asarray([lab_idx[f].get(v, -1) for v in col], dtype=np.int64)
            if np.any(idx < 0):
                i = int(np.flatnonzero(idx < 0)[0])
                mods = schema.modality_labels[f]
                raise AggMRFError(
                    f"table {t.name!r} ({t.where}), line {t.lines[i]}: {t.features[j]!r} = "
                    f"{col[i]!r} is not a modality of {t.features[j]!r}"
                    + (f" declared in {RELEASE_FILE}" if declared else "")
                    + f"; its modalities are {mods[:20]}{' …' if len(mods) > 20 else ''}."
                )
            codes[:, j] = idx
        specs.append((t, feats, codes))
    return specs


def _fill(
    layout: TableLayout,
    specs: list[tuple[_RawTable, list[int], np.ndarray]],
    mechanism: privacy.Mechanism | None,
) -> _Grid:
    """Place each table's rows on the layout (rows absent from the files stay 0)."""
    K = layout.K
    grid = _Grid(
        layout,
        np.zeros(K),
        np.zeros(K),
        np.zeros(K, dtype=bool),
        np.zeros(K, dtype=np.int64),
        {},
        mechanism,
    )
    for ti, (t, feats, codes) in enumerate(specs, start=1):
        # layout sorts a table's features; compute rows with the layout's strides
        strides = layout.strides[ti]
        rows = layout.offsets[ti] + codes @ strides[np.asarray(feats)]
        grid.d[rows] = t.frame[COUNT].to_numpy()
        grid.c[rows] = t.frame[LABEL_SUM].to_numpy()
        grid.present[rows] = True
        grid.line_of[rows] = t.lines
        grid.tables[ti] = t
    return grid


def _declared_suppression(
    grid: _Grid, thresholds: dict[str, float], cells: dict[str, int] | None = None
) -> Suppression | None:
    """Rows absent from tables that declare ``suppression`` in release.json (by table name)."""
    by_name = {t.name: ti for ti, t in grid.tables.items()}
    unknown = sorted(set(thresholds) - set(by_name))
    if unknown:
        raise AggMRFError(
            f"{RELEASE_FILE} declares a suppression threshold for {unknown[0]!r}, which is not "
            f"one of the release's tables."
        )
    return suppression_from_presence(
        grid.layout,
        grid.present,
        {by_name[name]: k for name, k in thresholds.items()},
        {by_name[name]: v for name, v in (cells or {}).items() if name in by_name},
    )


def _check_same_modalities(grid: _Grid) -> None:
    """A modality with a (significant) count in one table must have rows in every other."""
    lay, noisy, sigma = grid.layout, grid.noisy, grid.sigma
    for f in range(lay.n_features):
        holding = [ti for ti in range(1, lay.n_tables) if f in lay.tables[ti]]
        per_table = {}
        for ti in holding:
            block = _block(lay, grid.present.astype(float), ti, f)
            cnt = _block(lay, grid.d, ti, f)
            per_table[ti] = (block > 0, cnt)
        for a in holding:
            for b in holding:
                if a == b or grid.suppressed_in(b):  # a suppressed table may lack rows
                    continue
                has_a, cnt_a = per_table[a]
                has_b, _ = per_table[b]
                gap = has_a & ~has_b
                limit = Z_NOISE * sigma * math.sqrt(max(lay.table_sizes[a], 1)) if noisy else 0
                bad = gap & (np.abs(cnt_a) > limit)
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    ta, tb = grid.tables[a], grid.tables[b]
                    raise AggMRFError(
                        f"feature {lay.feature_names[f]!r} has the modality "
                        f"{lay.modality_labels[f][k]!r} (count {cnt_a[k]:g}) in table "
                        f"{ta.name!r} ({ta.where}) but not in table {tb.name!r} ({tb.where}); "
                        "the same feature must have the same modalities in every table."
                    )


def _check_missing_rows(grid: _Grid) -> list[str]:
    """Notes: rows absent from the files of a noisy release (filled with 0)."""
    absent = ~grid.present & grid.layout.released
    if grid.suppression is not None:
        absent &= ~grid.suppression.rows  # suppressed, not missing
    missing_rows = int(absent.sum())
    if missing_rows and grid.noisy:
        return [
            f"{missing_rows} row(s) absent from the tables were filled with count 0 and label sum 0."
        ]
    return []


def _check_values(grid: _Grid, problems: list[str], notes: list[str]) -> None:
    """Row values: signs and label sum ≤ count (exact), or within the declared noise."""
    lay, d, c = grid.layout, grid.d, grid.c
    row_table = lay.row_table()
    rel = lay.released
    if not grid.noisy:
        for arr, what in ((d, COUNT), (c, LABEL_SUM)):
            neg = np.flatnonzero(rel & (arr < 0))
            _flag(
                [f"{grid.row_desc(row_table[r], r)}: {what} = {arr[r]:g}" for r in neg],
                f"negative {what}s in a release without noise (declare the noise in "
                f"{RELEASE_FILE} if the release is noisy): ",
                problems,
            )
        over = np.flatnonzero(rel & (c > d + 1e-9 * np.maximum(1.0, np.abs(d))))
        _flag(
            [
                f"{grid.row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}"
                for r in over
            ],
            f"{LABEL_SUM} larger than {COUNT} (a label sum counts the positive records of the row, "
            "so it cannot exceed the count): ",
            problems,
        )
        frac = np.flatnonzero(rel & grid.present & ((d != np.round(d)) | (c != np.round(c))))
        if frac.size:
            notes.append(
                f"{frac.size} row(s) have non-integer counts or label sums without declared noise, "
                f"first: {grid.row_desc(row_table[frac[0]], frac[0])}."
            )
    else:
        limit = Z_NOISE * grid.sigma * math.sqrt(2.0)
        over = np.flatnonzero(rel & (c - d > limit))
        _flag(
            [
                f"{grid.row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}"
                for r in over
            ],
            f"{LABEL_SUM} exceeds {COUNT} by more than the declared noise explains "
            f"({Z_NOISE:g}·σ·√2 = {limit:.3g}): ",
            problems,
        )


def _check_suppression(grid: _Grid, problems: list[str]) -> None:
    """A table declaring ``suppression`` k leaves out exactly its rows of true count ≤ k, so
    every row it lists counts more than k: a listed count ≤ k (without noise), or below
    k − 7σ under the declared noise (a listed row's count is > k, so its noisy value falls
    that low once in 10¹² rows), contradicts the threshold."""
    if grid.suppression is None:
        return
    lay = grid.layout
    msgs = []
    for ti, k in sorted(grid.suppression.thresholds.items()):
        start = lay.offsets[ti]
        d = grid.d[start : lay.offsets[ti + 1]]
        listed = grid.present[start : lay.offsets[ti + 1]]
        limit = k - 7.0 * grid.sigma if grid.noisy else k
        bad = np.flatnonzero(listed & ((d < limit) if grid.noisy else (d <= limit)))
        msgs += [f"{grid.row_desc(ti, start + r)}: {COUNT} {d[r]:g}, k = {k:g}" for r in bad]
    _flag(
        msgs,
        f"rows listed although their {COUNT} is within their table's suppression threshold "
        f"(release.json declares that a row is left out exactly when its count is ≤ k"
        + (", up to 7σ of noise" if grid.noisy else "")
        + "; fix the threshold or the rows): ",
        problems,
    )


def _check_n(grid: _Grid, totals: _Totals, meta: dict | None, notes: list[str]) -> None:
    """Note: release.json's ``n`` disagrees with the tables' total count (beyond the noise)."""
    n = (meta or {}).get("n")
    if n is None:
        return
    if grid.noisy:
        allowed = Z_NOISE * grid.sigma * math.sqrt(float(grid.layout.table_sizes.max())) + 0.5
    else:
        allowed = 1e-6 * max(float(n), 1.0) + 0.5
    if abs(float(n) - totals.ref_d) > allowed:
        notes.append(
            f"{RELEASE_FILE} declares n = {n:,} records but the tables count {totals.ref_d:,.6g}; "
            "n sets the scale of training, so check it (or remove it to use the tables' total)."
        )


def _totals(grid: _Grid) -> _Totals:
    """Each released table's totals and the reference: their mean (noisy) or median."""
    lay = grid.layout
    starts = lay.offsets[1:-1]
    tot_d = np.add.reduceat(grid.d, starts)
    tot_c = np.add.reduceat(grid.c, starts)
    # suppressed tables miss their small rows' records: the reference comes from the others
    full = np.asarray([not grid.suppressed_in(ti) for ti in range(1, lay.n_tables)])
    if not full.any():
        full[:] = True
    if grid.noisy:
        n_tab = int(full.sum())
        return _Totals(
            tot_d, tot_c, float(tot_d[full].sum() / n_tab), float(tot_c[full].sum() / n_tab)
        )
    return _Totals(tot_d, tot_c, float(np.median(tot_d[full])), float(np.median(tot_c[full])))


def _check_totals(grid: _Grid, totals: _Totals, tol: float | None, problems: list[str]) -> None:
    """Every table's total count and label sum agree with the reference (within the noise)."""
    lay = grid.layout
    n_tab = lay.n_released_tables
    names = [grid.tables[ti].name for ti in range(1, lay.n_tables)]
    sizes = lay.table_sizes[1:].astype(float)
    if grid.noisy:
        allowed = (
            Z_NOISE * grid.sigma * np.sqrt(sizes) if tol is None else np.full(n_tab, float(tol))
        )
    else:
        allowed = np.full(n_tab, 1e-6 * max(abs(totals.ref_d), 1.0) if tol is None else float(tol))
    # a suppressed table may fall short by up to k per absent row
    short = np.asarray(
        [
            grid.suppressed_in(ti) * grid.missing(ti).sum() + grid.shortfall(ti)
            for ti in range(1, lay.n_tables)
        ]
    )
    for tot, ref, what in (
        (totals.d, totals.ref_d, "total count"),
        (totals.c, totals.ref_c, "total label sum"),
    ):
        bad = np.flatnonzero((tot - ref > allowed) | (ref - tot > allowed + short))
        _flag(
            [
                f"table {names[i]!r} ({grid.tables[i + 1].where}): {tot[i]:g} vs {ref:g}"
                for i in bad
            ],
            f"tables whose {what} disagrees with the others"
            + (f" beyond the declared noise ({Z_NOISE:g}·σ·√rows)" if grid.noisy else "")
            + ": ",
            problems,
        )


def _check_marginals(grid: _Grid, tol: float | None, problems: list[str]) -> None:
    """Tables sharing a feature agree on its per-modality counts (within the noise)."""
    lay, d, sigma = grid.layout, grid.d, grid.sigma
    missing = grid.missing_mask()
    for f in range(lay.n_features):
        holding = [ti for ti in range(1, lay.n_tables) if f in lay.tables[ti]]
        if len(holding) < 2:
            continue
        complete = [ti for ti in holding if not grid.suppressed_in(ti)] or holding
        ref_t = min(complete, key=lambda ti: lay.table_sizes[ti])
        ref = _block(lay, d, ref_t, f)
        ref_cells = lay.table_sizes[ref_t] / lay.n_modalities[f]
        msgs = []
        for ti in holding:
            if ti == ref_t:
                continue
            m = _block(lay, d, ti, f)
            cells = lay.table_sizes[ti] / lay.n_modalities[f]
            lim = (
                Z_NOISE * sigma * math.sqrt(cells + ref_cells)
                if grid.noisy
                else 1e-6 * max(ref.sum(), 1.0)
            )
            if tol is not None:
                lim = float(tol)
            # a suppressed table may fall short by up to k per absent row of the modality
            short = grid.suppressed_in(ti) * _block(lay, missing, ti, f) + grid.shortfall(ti)
            bad = np.flatnonzero((m - ref > lim) | (ref - m > lim + short))
            for k in bad[:2]:
                msgs.append(
                    f"table {grid.tables[ti].name!r} ({grid.tables[ti].where}) counts "
                    f"{m[k]:g} records with {lay.feature_names[f]}="
                    f"{lay.modality_labels[f][k]!r}, table {grid.tables[ref_t].name!r} "
                    f"counts {ref[k]:g}"
                )
        _flag(
            msgs,
            f"tables disagree on the counts of feature {lay.feature_names[f]!r}: ",
            problems,
        )


def _report(problems: list[str], notes: list[str], strict: bool, source: str) -> list[str]:
    """Raise on consistency problems when strict; else warn.  Returns all the messages."""
    if problems and strict:
        raise AggMRFError(
            "inconsistent release"
            + (f" {source!r}" if source else "")
            + ":\n  - "
            + "\n  - ".join(problems)
            + "\n(read_release(..., strict=False) / --lenient turns these into warnings)"
        )
    msgs = problems + notes
    for m in msgs:
        # attributed to the caller of read_release / release_from_frames
        warnings.warn(m, ReleaseWarning, stacklevel=4)
    return msgs


def _aggregated(grid: _Grid, totals: _Totals, meta: dict | None, source: str) -> AggregatedData:
    """The AggregatedData: intercept row (declared, else derived from the totals) and n."""
    meta = meta or {}
    icpt = meta.get("intercept")
    if grid.noisy:
        d0, c0 = totals.ref_d, totals.ref_c
    else:
        d0, c0 = float(totals.d[0]), float(totals.c[0])
    if isinstance(icpt, dict) and "count" in icpt and "label_sum" in icpt:
        d0, c0 = float(icpt["count"]), float(icpt["label_sum"])
    n = meta.get("n")
    n = int(n) if n is not None else max(1, int(round(d0)))
    grid.d[0], grid.c[0] = d0, c0
    info = {"source": source, "release": {k: v for k, v in meta.items() if k != "features"}}
    if grid.noisy:
        info["privacy"] = grid.mechanism.describe()
    if grid.suppression is not None:
        info["suppression"] = {
            grid.tables[ti].name: {"threshold": k, "suppressed": int(grid.missing(ti).sum())}
            for ti, k in sorted(grid.suppression.thresholds.items())
        }
    return AggregatedData(
        grid.layout,
        grid.d,
        grid.c,
        n,
        noise=grid.mechanism,
        meta=info,
        suppression=grid.suppression,
    )


def _assemble(
    raw: list[_RawTable],
    meta: dict | None,
    strict: bool,
    tol: float | None,
    source: str,
    budget: Budget | None = None,
) -> Release:
    """Step 5: raw tables + release.json → :class:`Release`, through the checks in order.

    Malformed-release errors always raise; consistency problems raise when ``strict``,
    else become warnings (:func:`_report`).
    """
    if not raw:
        raise AggMRFError("a release needs at least one table.")
    schema, declared = _release_schema(raw, meta)
    specs = _table_codes(raw, schema, declared)
    check_size(
        schema.n_modalities.tolist(), [feats for _, feats, _ in specs], schema.feature_names,
        budget=budget, what="the release's tables",
    )  # fmt: skip
    layout = TableLayout(
        schema.n_modalities,
        [tuple(feats) for _, feats, _ in specs],
        schema.feature_names,
        intercept=True,
        modality_labels=schema.modality_labels,
    )
    grid = _fill(layout, specs, mechanism_from_meta((meta or {}).get("noise"), layout))
    grid.noise_scale = noise_scale(meta)
    grid.suppression = _declared_suppression(
        grid, table_thresholds(meta), table_suppressed_cells(meta)
    )
    _check_same_modalities(grid)
    problems: list[str] = []  # consistency problems (errors when strict)
    notes = _check_missing_rows(grid)  # always warnings
    _check_values(grid, problems, notes)
    _check_suppression(grid, problems)
    totals = _totals(grid)
    _check_totals(grid, totals, tol, problems)
    if not problems:
        _check_marginals(grid, tol, problems)
    _check_n(grid, totals, meta, notes)
    msgs = _report(problems, notes, strict, source)
    return Release(_aggregated(grid, totals, meta, source), schema, msgs, source, meta or {})


def _block(layout: TableLayout, values: np.ndarray, ti: int, f: int) -> np.ndarray:
    """Sum of ``values`` over table ti's rows, per modality of feature f, shape (M_f,)."""
    t = layout.tables[ti]
    block = values[layout.offsets[ti] : layout.offsets[ti + 1]].reshape(
        [int(layout.n_modalities[g]) for g in t]
    )
    axes = tuple(j for j, g in enumerate(t) if g != f)
    return block.sum(axis=axes) if axes else block.copy()
