"""Writing a release: one CSV per table + release.json, or one long CSV + FILE.json
(:func:`write_release`); every table's values exactly as released, integers written as
integers, cells neutralised against spreadsheet formulas."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ...encoding import Encoder, Schema
from ...errors import AggMRFError
from ...files import check_output_dir, check_output_file, create_file, write_text
from ...privacy import SIMULATION
from ...tables import AggregatedData
from ..extensions import (
    SUPPRESSED_CELLS,
    label_column,
)
from ..formula import neutralise_frame
from ..manifest import (
    FORMAT,
    RELEASE_FILE,
    VERSION,
)
from .common import (
    COUNT,
    LABEL_SUM,
    TABLE,
    noise_meta,
)


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
        missing = _missing_cells(agg, ti)
        if missing is not None:
            cols[SUPPRESSED_CELLS] = missing[keep]
        out.append((ti, pd.DataFrame(cols)))
    return out


def _missing_cells(agg: AggregatedData, ti: int) -> np.ndarray | None:
    """Table ti's ``suppressed_cells`` column (int64, one per row of the table; the writer
    keeps the listed ones): the suppressed source cells m_r = slack / k of each row, when
    the table declares a threshold k and folds values (``suppression.source_values``) or
    has slack; None otherwise (no column)."""
    box = agg.suppression
    if box is None or ti not in box.thresholds:
        return None
    lay = agg.layout
    sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
    slack = box.slack[sl]
    folds = any(f in box.source_values for f in lay.tables[ti])
    if not folds and not slack.any():
        return None
    k = float(box.thresholds[ti])
    if k <= 0:
        return np.zeros(slack.shape, dtype=np.int64)
    return np.rint(slack / k).astype(np.int64)


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
    box = agg.suppression
    if box is not None and box.source_values:  # folded values (:mod:`.extensions`)
        lay = agg.layout
        meta["source_values"] = {
            lay.feature_names[f]: {
                lay.modality_labels[f][m]: int(v[m]) for m in np.flatnonzero(v > 1)
            }
            for f, v in sorted(box.source_values.items())
        }
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
        with create_file(path / fname, "release table", newline="") as fh:
            neutralise_frame(_as_int_if_exact(frame, exact)).to_csv(fh, index=False)
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
    frames = _released_frames(agg, labels)
    if any(SUPPRESSED_CELLS in frame.columns for _, frame in frames):
        extra.append(SUPPRESSED_CELLS)
    for ti, frame in frames:
        name = lay.table_name(lay.tables[ti])
        frame = frame.copy()
        for f in [*lay.feature_names, *extra]:
            if f not in frame.columns:
                frame[f] = ""
        frame.insert(0, TABLE, name)
        cols = [TABLE, *lay.feature_names, COUNT, LABEL_SUM, *extra]
        parts.append(_as_int_if_exact(frame, exact)[cols])
        meta["tables"].append(_table_entry(agg, ti, path.name))
    with create_file(path, "release file", newline="") as fh:
        neutralise_frame(pd.concat(parts, ignore_index=True)).to_csv(fh, index=False)
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
    simulation: bool = False,
    extra: dict | None = None,
) -> Path:
    """Write the released tables of ``agg`` (never its exact values under noise).

    Files are for someone else, so noise this package added must be integers (a
    discrete mechanism, :func:`~aggmrf_explore.privacy.publish`): continuous noise it
    added (``meta["generator"] == "simulation"``, or the exact values still held in
    ``agg.true_d``) leaks the counts through its low bits and is refused, unless
    ``simulation=True``: the file is then marked ``"simulation": true`` and the reader warns
    that it is not a private release.  A release received from others (continuous noise,
    no exact values held, e.g. the AdKDD'21 challenge's) is written as it was received.

    ``path``: a directory (``fmt="dir"``: one CSV per table + release.json) or a ``.csv``
    file (``fmt="long"``: one long CSV + ``release.json`` beside it, named FILE.json).
    ``schema``: a :class:`Schema` or a fitted Encoder (adds bin edges and the raw-value
    mapping, needed to predict on raw records); default: labels from the layout.
    ``labels``: the label sums (K,) of further labels, by name (columns ``label_sum.NAME``,
    :mod:`.extensions`); ``agg.c`` is the primary label's (``label``).  Rows that
    ``agg.suppression`` marks are left out and each table declares its threshold.
    ``extra``: further top-level entries of release.json (JSON-able; never one of its own).
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
    _check_noise_for_files(agg, simulation)
    schema = _writer_schema(agg, schema, label, positive_label, classes)
    labels = _check_labels(agg, schema, labels)
    meta = _manifest(agg, schema, accounting, labels)
    if simulation:
        meta = {"simulation": True, **meta}
    for key, value in (extra or {}).items():  # e.g. aggregate's "privacy" and "schema_source"
        if key in meta:
            raise AggMRFError(f"write_release: extra key {key!r} would replace release.json's own.")
        meta[key] = value
    path = Path(path)
    write = _write_dir if fmt == "dir" else _write_long
    meta_path = write(agg, path, meta, labels)
    write_text(meta_path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n", "release metadata")
    return meta_path


def _check_noise_for_files(agg: AggregatedData, simulation: bool) -> None:
    """Refuse continuous noise that this package added, unless the file is a simulation."""
    noise = agg.noise
    if noise is None or getattr(noise, "discrete", False) or simulation:
        return
    if agg.meta.get("generator") == SIMULATION or agg.true_d is not None:
        raise AggMRFError(
            f"this release carries continuous {noise.name} noise, whose low bits leak the "
            "counts: a file for someone else needs integer noise (privacy.publish with "
            f"discrete_{noise.name.removeprefix('discrete_')}); pass simulation=True to write "
            "a file marked as a simulation."
        )


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
