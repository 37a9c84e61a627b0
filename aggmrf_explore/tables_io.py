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

Without it, the schema is inferred: features are the table CSVs' columns other than
``count`` / ``label_sum``, modalities are the labels in order of first appearance.

Checks on reading (each message names the table, and the file line where there is one):
malformed files (missing columns, non-numeric or non-finite counts, empty feature cells,
duplicate rows, modalities not in the declared schema); the same feature with different
modalities in two tables; without noise, negative counts or label sums and label sums
larger than their count; tables whose totals (and per-feature marginals) disagree beyond
what the declared noise explains (|Δ| > 5 σ √(cells summed)).  ``strict=False`` turns the
consistency errors (not the malformed-file ones) into warnings.
"""

from __future__ import annotations

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

from .errors import AggMRFError
from .tables import AggregatedData, TableLayout

__all__ = [
    "Schema",
    "Release",
    "ReleaseWarning",
    "write_release",
    "read_release",
    "read_schema",
    "release_from_frames",
    "mechanism_from_meta",
    "noise_meta",
    "RELEASE_FILE",
]

RELEASE_FILE = "release.json"
FORMAT = "aggmrf-release"
VERSION = 1
COUNT = "count"
LABEL_SUM = "label_sum"
TABLE = "table"
Z_NOISE = 5.0  # discrepancies beyond Z_NOISE standard deviations of the declared noise are errors
_MAX_LISTED = 8


class ReleaseWarning(UserWarning):
    """A release is readable but something in it looks wrong (the message says what and where)."""


# ====================================================================== schema
def _fmt_number(v: float) -> str:
    from .encoding import _fmt_number as f

    return f(v)


@dataclass
class Schema:
    """Features and their modalities (ordered labels), plus what maps raw records to codes.

    ``kinds[f]``: "numeric" (``edges[f]``: lower edges of bins 1..M-1, as in
    :class:`~aggmrf_explore.encoding.Encoder`) or "categorical" (``known[f]`` raw values and
    ``codes[f]`` their code; ``values[f]`` "number" or "string"; ``unseen[f]`` "error" or
    "other").  ``label`` / ``positive_label`` / ``classes`` describe the label column.
    """

    feature_names: list[str]
    modality_labels: list[list[str]]
    kinds: list[str] = field(default_factory=list)
    edges: list[list[float] | None] = field(default_factory=list)
    known: list[list | None] = field(default_factory=list)
    codes: list[list[int] | None] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    label: str | None = None
    positive_label: str | None = None
    classes: list[str] | None = None

    def __post_init__(self) -> None:
        D = len(self.feature_names)
        if len(self.modality_labels) != D:
            raise AggMRFError(f"{len(self.modality_labels)} modality lists for {D} features.")
        if len(set(self.feature_names)) != D:
            raise AggMRFError(f"duplicate feature names in the schema: {self.feature_names}.")
        self.modality_labels = [[str(v) for v in m] for m in self.modality_labels]
        for name, mods in zip(self.feature_names, self.modality_labels, strict=True):
            if not mods:
                raise AggMRFError(f"feature {name!r} has no modality.")
            if len(set(mods)) != len(mods):
                dup = sorted({m for m in mods if mods.count(m) > 1})
                raise AggMRFError(f"feature {name!r} lists the modalities {dup} twice.")
        self.kinds = list(self.kinds) or ["categorical"] * D
        self.edges = list(self.edges) or [None] * D
        self.values = list(self.values) or ["string"] * D
        self.unseen = list(self.unseen) or ["error"] * D
        self.known = list(self.known) or [None] * D
        self.codes = list(self.codes) or [None] * D
        for f in range(D):
            name, M = self.feature_names[f], len(self.modality_labels[f])
            if self.kinds[f] not in ("numeric", "categorical"):
                raise AggMRFError(
                    f"feature {name!r}: kind must be 'numeric' or 'categorical'; got {self.kinds[f]!r}."
                )
            if self.kinds[f] == "numeric":
                e = self.edges[f]
                if e is None or len(e) != M - 1:
                    raise AggMRFError(
                        f"numeric feature {name!r} needs {M - 1} bin edges for its {M} modalities; "
                        f"got {None if e is None else len(e)}."
                    )
                e = np.asarray(e, dtype=np.float64)
                if not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
                    raise AggMRFError(f"bin edges of {name!r} must be finite and increasing.")
                self.edges[f] = [float(v) for v in e]
            elif self.known[f] is None:
                self.known[f] = list(self.modality_labels[f])
                self.codes[f] = list(range(M))
            else:
                if self.codes[f] is None or len(self.codes[f]) != len(self.known[f]):
                    raise AggMRFError(f"feature {name!r}: 'known' and 'codes' differ in length.")
                if any(not 0 <= int(c) < M for c in self.codes[f]):
                    raise AggMRFError(f"feature {name!r}: a code is outside 0..{M - 1}.")
                self.codes[f] = [int(c) for c in self.codes[f]]

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_encoder(
        cls,
        encoder,
        label: str | None = None,
        positive_label: str | None = None,
        classes: Sequence[str] | None = None,
    ) -> Schema:
        """The schema of a fitted :class:`~aggmrf_explore.encoding.Encoder` (exact transform)."""
        if isinstance(encoder, Schema):
            return encoder
        if not getattr(encoder, "_fitted", False):
            raise AggMRFError("the encoder is not fitted; fit it (or Dataset.encode()) first.")
        D = len(encoder.feature_names)
        known, codes, values, unseen = [], [], [], []
        for j in range(D):
            if encoder.kinds[j] == "numeric":
                known.append(None)
                codes.append(None)
                values.append("number")
                unseen.append("error")
                continue
            num = bool(encoder._numeric_values[j])
            kv = encoder._cat_values[j]
            known.append([float(v) for v in kv] if num else [str(v) for v in kv])
            codes.append([int(c) for c in encoder._cat_codes[j]])
            values.append("number" if num else "string")
            unseen.append(encoder.unseen)
        return cls(
            feature_names=list(encoder.feature_names),
            modality_labels=[list(m) for m in encoder.modality_labels],
            kinds=list(encoder.kinds),
            edges=[None if e is None else [float(v) for v in e] for e in encoder.edges],
            known=known,
            codes=codes,
            values=values,
            unseen=unseen,
            label=label,
            positive_label=None if positive_label is None else str(positive_label),
            classes=None if classes is None else [str(c) for c in classes],
        )

    @classmethod
    def from_layout(cls, layout: TableLayout, **kw) -> Schema:
        """A label-only schema (records must hold the modality labels themselves)."""
        return cls(list(layout.feature_names), [list(m) for m in layout.modality_labels], **kw)

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        feats = d.get("features")
        if not isinstance(feats, list) or not feats:
            raise AggMRFError("the schema needs a non-empty 'features' list.")
        cols: dict[str, list] = {k: [] for k in ("names", "mods", "kinds", "edges", "known")}
        codes, values, unseen = [], [], []
        for i, f in enumerate(feats):
            if not isinstance(f, dict) or "name" not in f or "modalities" not in f:
                raise AggMRFError(
                    f"feature #{i + 1} of the schema needs a 'name' and a 'modalities' list."
                )
            cols["names"].append(str(f["name"]))
            cols["mods"].append([str(m) for m in f["modalities"]])
            cols["kinds"].append(f.get("kind", "categorical"))
            cols["edges"].append(f.get("edges"))
            cols["known"].append(f.get("known"))
            codes.append(f.get("codes"))
            values.append(f.get("values", "number" if f.get("kind") == "numeric" else "string"))
            unseen.append(f.get("unseen", "error"))
        return cls(
            cols["names"],
            cols["mods"],
            cols["kinds"],
            cols["edges"],
            cols["known"],
            codes,
            values,
            unseen,
            label=d.get("label"),
            positive_label=d.get("positive_label"),
            classes=d.get("classes"),
        )

    def to_dict(self) -> dict:
        feats = []
        for f, name in enumerate(self.feature_names):
            item: dict = {
                "name": name,
                "kind": self.kinds[f],
                "modalities": list(self.modality_labels[f]),
            }
            if self.kinds[f] == "numeric":
                item["edges"] = list(self.edges[f])
            else:
                item.update(
                    values=self.values[f],
                    known=list(self.known[f]),
                    codes=list(self.codes[f]),
                    unseen=self.unseen[f],
                )
            feats.append(item)
        return {
            "label": self.label,
            "positive_label": self.positive_label,
            "classes": self.classes,
            "features": feats,
        }

    # ------------------------------------------------------------------ use
    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def n_modalities(self) -> np.ndarray:
        return np.asarray([len(m) for m in self.modality_labels], dtype=np.int64)

    def check_layout(self, layout: TableLayout) -> None:
        """Raise unless the layout has exactly these features and modalities."""
        if (
            list(layout.feature_names) != list(self.feature_names)
            or [list(m) for m in layout.modality_labels] != self.modality_labels
        ):
            raise AggMRFError(
                "the model's layout and the schema disagree on the features or their modalities; "
                "export the model with the schema (encoder) it was trained with."
            )

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """Raw records → int32 codes (n, D), exactly as the fitted Encoder would."""
        from .encoding import OTHER, _factorize_str, check_no_missing, to_float

        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(f"transform expects a pandas DataFrame; got {type(df).__name__}.")
        cols = {str(c): c for c in df.columns}
        missing = [f for f in self.feature_names if f not in cols]
        if missing:
            raise AggMRFError(
                f"the records lack the feature columns {missing}; their columns are {list(cols)}."
            )
        sub = df[[cols[f] for f in self.feature_names]]
        check_no_missing(sub)
        X = np.empty((len(df), self.n_features), dtype=np.int32)
        for j, name in enumerate(self.feature_names):
            s = sub.iloc[:, j]
            if self.kinds[j] == "numeric" or self.values[j] == "number":
                x = to_float(name, s)
            if self.kinds[j] == "numeric":
                edges = np.asarray(self.edges[j], dtype=np.float64)
                X[:, j] = np.searchsorted(edges, x, side="right")
                continue
            if self.values[j] == "number":
                idx = pd.Index(np.asarray(self.known[j], dtype=np.float64)).get_indexer(x)
                raw = np.asarray([_fmt_number(v) for v in x], dtype=object)
            else:
                fcodes, uniq = _factorize_str(s)
                idx = pd.Index(self.known[j], dtype=object).get_indexer(uniq)[fcodes]
                raw = uniq[fcodes]
            code_of = np.asarray(self.codes[j], dtype=np.int32)
            unseen = idx < 0
            out = code_of[np.where(unseen, 0, idx)] if len(code_of) else np.zeros(len(idx))
            if unseen.any():
                mods = self.modality_labels[j]
                if self.unseen[j] == "other" and OTHER in mods:
                    out = np.where(unseen, mods.index(OTHER), out)
                else:
                    vals = sorted({str(v) for v in np.asarray(raw)[unseen]})
                    shown = ", ".join(repr(v) for v in vals[:10])
                    raise AggMRFError(
                        f"column {name!r} has {int(unseen.sum())} row(s) with value(s) not in the "
                        f"schema: {shown}{' …' if len(vals) > 10 else ''}; its modalities are "
                        f"{mods[:20]}{' …' if len(mods) > 20 else ''}."
                    )
            X[:, j] = out
        return X

    def encode_label(self, series: pd.Series, label: str | None = None) -> np.ndarray:
        """0/1 labels of a record column with the schema's positive class."""
        from .encoding import encode_label

        y, _ = encode_label(series, positive=self.positive_label, classes=self.classes)
        return y

    def layout(self, tables: Sequence[Sequence[int]], intercept: bool = True) -> TableLayout:
        return TableLayout(
            self.n_modalities, tables, self.feature_names, intercept, self.modality_labels
        )


# ====================================================================== noise metadata
def noise_meta(mechanism, accounting: str | None = None) -> dict | None:
    """The ``noise`` object of release.json for a privacy mechanism (None: no noise)."""
    if mechanism is None:
        return None
    out = dict(mechanism.describe())
    out["sigma"] = float(mechanism.std)
    if accounting is not None:
        out["accounting"] = accounting
    return out


def mechanism_from_meta(meta: dict | None, layout: TableLayout | None = None):
    """Rebuild the mechanism object from release.json's ``noise`` (None → no noise).

    Accepted: the full description written by :func:`write_release` (ε, δ, sensitivity,
    calibration), ε/δ/accounting (sensitivity from the layout), or just a noise level
    (``{"mechanism": "gaussian", "sigma": 30}`` or ``{"mechanism": "laplace", "scale": 20}``).
    """
    from . import privacy

    if meta is None or meta == {} or str(meta.get("mechanism", "none")).lower() == "none":
        return None
    if not isinstance(meta, dict):
        raise AggMRFError("release.json 'noise' must be an object (or null).")
    kind = str(meta.get("mechanism", "")).lower()
    try:
        if kind == "laplace":
            if "epsilon" in meta and "l1_sensitivity" in meta:
                return privacy.LaplaceMechanism(meta["epsilon"], meta["l1_sensitivity"])
            if "epsilon" in meta and layout is not None:
                return privacy.make_mechanism(
                    "laplace", meta["epsilon"], None, layout, meta.get("accounting", "both")
                )
            scale = meta.get("scale")
            if scale is None and meta.get("sigma") is not None:
                scale = float(meta["sigma"]) / math.sqrt(2.0)
            if scale is None:
                raise AggMRFError("a laplace 'noise' needs epsilon (+ l1_sensitivity) or scale.")
            return privacy.LaplaceMechanism(1.0, float(scale))
        if kind == "gaussian":
            calib = meta.get("calibration", "analytic")
            if "epsilon" in meta and "l2_sensitivity" in meta:
                return privacy.GaussianMechanism(
                    meta["epsilon"], meta.get("delta", 1e-7), meta["l2_sensitivity"], calib
                )
            if "epsilon" in meta and layout is not None:
                return privacy.make_mechanism(
                    "gaussian",
                    meta["epsilon"],
                    meta.get("delta", 1e-7),
                    layout,
                    meta.get("accounting", "both"),
                    calib,
                )
            sigma = meta.get("sigma", meta.get("scale"))
            if sigma is None:
                raise AggMRFError("a gaussian 'noise' needs epsilon (+ l2_sensitivity) or sigma.")
            unit = privacy.analytic_gaussian_sigma(1.0, 1e-6, 1.0)
            return privacy.GaussianMechanism(1.0, 1e-6, float(sigma) / unit)
    except AggMRFError as e:
        raise AggMRFError(f"release.json 'noise' is invalid: {e}") from None
    raise AggMRFError(
        f"release.json 'noise': unknown mechanism {meta.get('mechanism')!r}; "
        "use 'laplace', 'gaussian' or 'none'."
    )


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


def _released_frames(agg: AggregatedData) -> list[tuple[int, pd.DataFrame]]:
    lay = agg.layout
    out = []
    for ti, t in enumerate(lay.tables):
        if not t:
            continue
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        codes = lay.row_codes(ti)
        cols: dict[str, object] = {}
        for j, f in enumerate(t):
            labels = np.asarray(lay.modality_labels[f], dtype=object)
            cols[lay.feature_names[f]] = labels[codes[:, j]]
        cols[COUNT] = agg.d[sl]
        cols[LABEL_SUM] = agg.c[sl]
        out.append((ti, pd.DataFrame(cols)))
    return out


def _as_int_if_exact(frame: pd.DataFrame, exact: bool) -> pd.DataFrame:
    if exact:
        for c in (COUNT, LABEL_SUM):
            v = frame[c].to_numpy()
            if np.all(v == np.round(v)):
                frame[c] = v.astype(np.int64)
    return frame


def write_release(
    agg: AggregatedData,
    path: str | Path,
    schema: Schema | object | None = None,
    *,
    fmt: str = "dir",
    accounting: str | None = None,
    label: str | None = None,
    positive_label: str | None = None,
    classes: Sequence[str] | None = None,
) -> Path:
    """Write the released tables of ``agg`` (never its exact values under noise).

    ``path``: a directory (``fmt="dir"``: one CSV per table + release.json) or a ``.csv``
    file (``fmt="long"``: one long CSV + ``release.json`` beside it, named FILE.json).
    ``schema``: a :class:`Schema` or a fitted Encoder (adds bin edges and the raw-value
    mapping, needed to predict on raw records); default: labels from the layout.
    Returns the path of the metadata file.
    """
    if not isinstance(agg, AggregatedData):
        raise AggMRFError(
            "write_release needs an AggregatedData (tables.aggregate / privacy.release)."
        )
    if fmt not in ("dir", "long"):
        raise AggMRFError(f"fmt must be 'dir' or 'long'; got {fmt!r}.")
    lay = agg.layout
    if lay.hashed:
        raise AggMRFError(
            "write_release does not support hashed tables (the CSV formats list modality "
            "combinations, a hashed table's rows are buckets); release exact tables only."
        )
    if schema is None:
        schema = Schema.from_layout(lay)
    elif not isinstance(schema, Schema):
        schema = Schema.from_encoder(schema)
    schema.check_layout(lay)
    if label is not None:
        schema.label = label
    if positive_label is not None:
        schema.positive_label = str(positive_label)
    if classes is not None:
        schema.classes = [str(c) for c in classes]
    exact = agg.noise is None
    frames = _released_frames(agg)
    path = Path(path)
    meta: dict = {
        "format": FORMAT,
        "version": VERSION,
        "n": int(agg.n),
        **schema.to_dict(),
        "tables": [],
        "noise": noise_meta(agg.noise, accounting or agg.meta.get("accounting")),
    }
    if lay.intercept:
        meta["intercept"] = {"count": float(agg.d[0]), "label_sum": float(agg.c[0])}
    if fmt == "dir":
        if path.exists() and not path.is_dir():
            raise AggMRFError(f"{str(path)!r} exists and is not a directory.")
        path.mkdir(parents=True, exist_ok=True)
        width = max(3, len(str(len(frames))))
        for i, (ti, frame) in enumerate(frames):
            name = lay.table_name(lay.tables[ti])
            fname = (
                f"{i + 1:0{width}d}_"
                + "__".join(_safe(lay.feature_names[f]) for f in lay.tables[ti])
                + ".csv"
            )
            _as_int_if_exact(frame, exact).to_csv(path / fname, index=False)
            feats = [lay.feature_names[f] for f in lay.tables[ti]]
            meta["tables"].append({"name": name, "features": feats, "file": fname})
        meta_path = path / RELEASE_FILE
    else:
        if path.suffix.lower() != ".csv":
            raise AggMRFError(f"a long-format release is one .csv file; got {str(path)!r}.")
        path.parent.mkdir(parents=True, exist_ok=True)
        parts = []
        for ti, frame in frames:
            name = lay.table_name(lay.tables[ti])
            frame = frame.copy()
            for f in lay.feature_names:
                if f not in frame.columns:
                    frame[f] = ""
            frame.insert(0, TABLE, name)
            parts.append(
                _as_int_if_exact(frame, exact)[[TABLE, *lay.feature_names, COUNT, LABEL_SUM]]
            )
            feats = [lay.feature_names[f] for f in lay.tables[ti]]
            meta["tables"].append({"name": name, "features": feats, "file": path.name})
        pd.concat(parts, ignore_index=True).to_csv(path, index=False)
        meta_path = path.with_suffix(".json")
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta_path


# ====================================================================== reading
@dataclass
class _RawTable:
    name: str
    features: list[str]
    frame: pd.DataFrame  # feature columns (str), count, label_sum (float)
    lines: np.ndarray  # file line of each row
    where: str  # file name, for messages


def _read_text_csv(path: Path, what: str) -> pd.DataFrame:
    if not path.exists():
        raise AggMRFError(f"{what}: file not found: {str(path)!r}.")
    text = path.read_bytes()
    if not text.strip():
        raise AggMRFError(f"{what} ({path.name}) is empty; a table needs a header line and rows.")
    if b"\x00" in text[:65536]:
        raise AggMRFError(f"{what} ({path.name}) is not a CSV text file (it has NUL bytes).")
    try:
        s = text.decode("utf-8-sig")
    except UnicodeDecodeError:
        s = text.decode("latin-1")
    first = s.lstrip().splitlines()[0]
    sep = max((",", ";", "\t"), key=first.count)
    try:
        df = pd.read_csv(
            io.StringIO(s), sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AggMRFError(f"{what} ({path.name}) cannot be parsed as CSV: {msg}.") from None
    df.columns = [str(c).strip() for c in df.columns]
    for c in df.columns:
        df[c] = df[c].astype(str).str.strip()
    return df


def _numbers(df: pd.DataFrame, col: str, table: str, lines: np.ndarray, where: str) -> np.ndarray:
    s = df[col]
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AggMRFError(
            f"table {table!r} ({where}), line {lines[i]}: {col} is {s.iloc[i]!r}, not a finite "
            f"number ({int(bad.sum())} such row(s)); every row needs a numeric {COUNT} and {LABEL_SUM}."
        )
    # exact round trip of written floats
    return np.asarray([float(v) for v in s], dtype=np.float64)


def _split_table(
    df: pd.DataFrame, name: str, where: str, lines: np.ndarray, features: list[str] | None
) -> _RawTable:
    missing = [c for c in (COUNT, LABEL_SUM) if c not in df.columns]
    if missing:
        raise AggMRFError(
            f"table {name!r} ({where}) has no column {missing[0]!r}; its columns are "
            f"{list(df.columns)}. A table needs its feature columns, {COUNT!r} and {LABEL_SUM!r}."
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
            f"its columns are {list(df.columns)}."
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


def _load_meta(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise AggMRFError(f"{str(path)!r} is not valid JSON: {e}.") from None
    if not isinstance(meta, dict):
        raise AggMRFError(f"{str(path)!r} must hold a JSON object.")
    if meta.get("format", FORMAT) != FORMAT:
        raise AggMRFError(f"{str(path)!r} is not a release file (format {meta.get('format')!r}).")
    return meta


def _raw_tables(path: Path) -> tuple[list[_RawTable], dict | None, str]:
    path = Path(path)
    if not path.exists():
        raise AggMRFError(
            f"release not found: {str(path)!r} (a directory of CSVs or one CSV file)."
        )
    if path.is_dir():
        meta_path = path / RELEASE_FILE
        meta = _load_meta(meta_path) if meta_path.exists() else None
        if meta is not None and meta.get("tables"):
            specs = meta["tables"]
            files = sorted({s.get("file") for s in specs if isinstance(s, dict)} - {None})
            if len(files) == 1 and len(specs) > 1:
                return _long_tables(path / files[0], meta), meta, str(path)
            out = []
            for i, s in enumerate(specs):
                if not isinstance(s, dict) or "file" not in s:
                    raise AggMRFError(f"{RELEASE_FILE}: table #{i + 1} needs a 'file'.")
                f = path / s["file"]
                name = s.get("name") or " × ".join(s.get("features") or [f.stem])
                df = _read_text_csv(f, f"table {name!r}")
                lines = np.arange(len(df)) + 2
                out.append(_split_table(df, name, f.name, lines, s.get("features")))
            return out, meta, str(path)
        files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".csv")
        if not files:
            raise AggMRFError(f"{str(path)!r} holds no .csv table file.")
        out = []
        for f in files:
            df = _read_text_csv(f, f"table file {f.name!r}")
            lines = np.arange(len(df)) + 2
            if TABLE in df.columns:
                out.extend(_long_tables(f, None, df))
                continue
            feats = [c for c in df.columns if c not in (COUNT, LABEL_SUM)]
            out.append(_split_table(df, " × ".join(feats) or f.stem, f.name, lines, None))
        return out, meta, str(path)
    meta = None
    for cand in (path.with_suffix(".json"), path.parent / RELEASE_FILE):
        if cand.exists():
            meta = _load_meta(cand)
            break
    return _long_tables(path, meta), meta, str(path)


def _long_tables(path: Path, meta: dict | None, df: pd.DataFrame | None = None) -> list[_RawTable]:
    if df is None:
        df = _read_text_csv(path, "release file")
    if TABLE not in df.columns:
        raise AggMRFError(
            f"{path.name}: a one-file release needs a {TABLE!r} column naming each row's table "
            f"(or give a directory of per-table CSVs); its columns are {list(df.columns)}."
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
            filled = [c for c in feat_cols if (sub[c] != "").any()]
            feats = filled
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
    path: str | Path, *, strict: bool = True, count_tolerance: float | None = None
) -> Release:
    """Read a release (directory or long CSV) into a :class:`Release`.

    ``strict=False`` turns consistency errors (totals, marginals, label sums) into warnings.
    ``count_tolerance`` overrides the allowed discrepancy between table totals (default:
    1e-6 relative without noise, 5 σ √(cells) with declared noise).
    """
    path = Path(path)
    if path.suffix.lower() == ".json":  # the metadata file: its release
        path = path.parent if path.name == RELEASE_FILE else path.with_suffix(".csv")
    tables, meta, source = _raw_tables(path)
    return release_from_frames(
        tables, meta, strict=strict, count_tolerance=count_tolerance, source=source
    )


def read_schema(path: str | Path) -> Schema:
    """The schema of a release: its ``release.json`` (or FILE.json), or inferred from its tables."""
    path = Path(path)
    cand = path / RELEASE_FILE if path.is_dir() else path
    if cand.suffix.lower() == ".csv":
        cand = cand.with_suffix(".json")
    if cand.exists() and cand.suffix.lower() == ".json":
        meta = _load_meta(cand)
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
    if not raw:
        raise AggMRFError("a release needs at least one table.")
    return _assemble(raw, meta, strict, count_tolerance, source)


def _assemble(
    raw: list[_RawTable], meta: dict | None, strict: bool, tol: float | None, source: str
) -> Release:
    problems: list[str] = []  # consistency problems (errors when strict)
    notes: list[str] = []  # always warnings

    # ---------------------------------------------------------------- schema
    if meta is not None and meta.get("features"):
        schema = Schema.from_dict(meta)
        declared = True
    else:
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
        declared = False
        if meta is not None:
            schema.label = meta.get("label")
            schema.positive_label = meta.get("positive_label")
            schema.classes = meta.get("classes")
    fidx = {f: i for i, f in enumerate(schema.feature_names)}
    lab_idx = [{m: k for k, m in enumerate(mods)} for mods in schema.modality_labels]

    # ---------------------------------------------------------------- tables → codes
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
    layout_tables = [tuple(feats) for _, feats, _ in specs]
    layout = TableLayout(
        schema.n_modalities,
        layout_tables,
        schema.feature_names,
        intercept=True,
        modality_labels=schema.modality_labels,
    )
    mech = mechanism_from_meta((meta or {}).get("noise"), layout)
    noisy = mech is not None
    sigma = float(mech.std) if noisy else 0.0

    # ---------------------------------------------------------------- fill d, c
    K = layout.K
    d = np.zeros(K)
    c = np.zeros(K)
    present = np.zeros(K, dtype=bool)
    line_of = np.zeros(K, dtype=np.int64)
    where_of: dict[int, _RawTable] = {}
    for ti, (t, feats, codes) in enumerate(specs, start=1):
        # layout sorts a table's features; compute rows with the layout's strides
        strides = layout.strides[ti]
        rows = layout.offsets[ti] + codes @ strides[np.asarray(feats)]
        d[rows] = t.frame[COUNT].to_numpy()
        c[rows] = t.frame[LABEL_SUM].to_numpy()
        present[rows] = True
        line_of[rows] = t.lines
        where_of[ti] = t

    def row_desc(ti: int, r: int) -> str:
        t = where_of[ti]
        feats = layout.tables[ti]
        code = layout.row_codes(ti)[r - layout.offsets[ti]]
        vals = ", ".join(
            f"{layout.feature_names[f]}={layout.modality_labels[f][k]!r}"
            for f, k in zip(feats, code, strict=True)
        )
        line = f"line {line_of[r]}" if present[r] else "missing row"
        return f"table {t.name!r} ({t.where}), {line} ({vals})"

    # modalities present in one table but absent from another
    for f in range(layout.n_features):
        holding = [ti for ti in range(1, layout.n_tables) if f in layout.tables[ti]]
        per_table = {}
        for ti in holding:
            block = _block(layout, present.astype(float), ti, f)
            cnt = _block(layout, d, ti, f)
            per_table[ti] = (block > 0, cnt)
        for a in holding:
            for b in holding:
                if a == b:
                    continue
                has_a, cnt_a = per_table[a]
                has_b, _ = per_table[b]
                gap = has_a & ~has_b
                limit = Z_NOISE * sigma * math.sqrt(max(layout.table_sizes[a], 1)) if noisy else 0
                bad = gap & (np.abs(cnt_a) > limit)
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    raise AggMRFError(
                        f"feature {layout.feature_names[f]!r} has the modality "
                        f"{layout.modality_labels[f][k]!r} (count {cnt_a[k]:g}) in table "
                        f"{where_of[a].name!r} ({where_of[a].where}) but not in table "
                        f"{where_of[b].name!r} ({where_of[b].where}); the same feature must have "
                        "the same modalities in every table."
                    )
    missing_rows = int((~present[layout.released]).sum())
    if missing_rows and noisy:
        notes.append(
            f"{missing_rows} row(s) absent from the tables were filled with count 0 and label sum 0."
        )

    # ---------------------------------------------------------------- values
    def flag(msgs: list[str], header: str, to: list[str]) -> None:
        if msgs:
            more = f" (and {len(msgs) - _MAX_LISTED} more)" if len(msgs) > _MAX_LISTED else ""
            to.append(header + "; ".join(msgs[:_MAX_LISTED]) + more)

    row_table = layout.row_table()
    rel = layout.released
    if not noisy:
        for arr, what in ((d, COUNT), (c, LABEL_SUM)):
            neg = np.flatnonzero(rel & (arr < 0))
            flag(
                [f"{row_desc(row_table[r], r)}: {what} = {arr[r]:g}" for r in neg],
                f"negative {what}s in a release without noise (declare the noise in "
                f"{RELEASE_FILE} if the release is noisy): ",
                problems,
            )
        over = np.flatnonzero(rel & (c > d + 1e-9 * np.maximum(1.0, np.abs(d))))
        flag(
            [f"{row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}" for r in over],
            f"{LABEL_SUM} larger than {COUNT} (a label sum counts the positive records of the row, "
            "so it cannot exceed the count): ",
            problems,
        )
        frac = np.flatnonzero(rel & present & ((d != np.round(d)) | (c != np.round(c))))
        if frac.size:
            notes.append(
                f"{frac.size} row(s) have non-integer counts or label sums without declared noise, "
                f"first: {row_desc(row_table[frac[0]], frac[0])}."
            )
    else:
        limit = Z_NOISE * sigma * math.sqrt(2.0)
        over = np.flatnonzero(rel & (c - d > limit))
        flag(
            [f"{row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}" for r in over],
            f"{LABEL_SUM} exceeds {COUNT} by more than the declared noise explains "
            f"({Z_NOISE:g}·σ·√2 = {limit:.3g}): ",
            problems,
        )

    # ---------------------------------------------------------------- totals
    starts = layout.offsets[1:-1]
    tot_d = np.add.reduceat(d, starts)
    tot_c = np.add.reduceat(c, starts)
    n_tab = layout.n_released_tables
    names = [where_of[ti].name for ti in range(1, layout.n_tables)]
    sizes = layout.table_sizes[1:].astype(float)
    if noisy:
        ref_d, ref_c = float(tot_d.sum() / n_tab), float(tot_c.sum() / n_tab)
        allowed = Z_NOISE * sigma * np.sqrt(sizes) if tol is None else np.full(n_tab, float(tol))
    else:
        ref_d, ref_c = float(np.median(tot_d)), float(np.median(tot_c))
        allowed = np.full(n_tab, 1e-6 * max(abs(ref_d), 1.0) if tol is None else float(tol))
    for tot, ref, what in ((tot_d, ref_d, "total count"), (tot_c, ref_c, "total label sum")):
        bad = np.flatnonzero(np.abs(tot - ref) > allowed)
        flag(
            [f"table {names[i]!r} ({where_of[i + 1].where}): {tot[i]:g} vs {ref:g}" for i in bad],
            f"tables whose {what} disagrees with the others"
            + (f" beyond the declared noise ({Z_NOISE:g}·σ·√rows)" if noisy else "")
            + ": ",
            problems,
        )

    # ---------------------------------------------------------------- marginals
    if not problems:
        for f in range(layout.n_features):
            holding = [ti for ti in range(1, layout.n_tables) if f in layout.tables[ti]]
            if len(holding) < 2:
                continue
            ref_t = min(holding, key=lambda ti: layout.table_sizes[ti])
            ref = _block(layout, d, ref_t, f)
            ref_cells = layout.table_sizes[ref_t] / layout.n_modalities[f]
            msgs = []
            for ti in holding:
                if ti == ref_t:
                    continue
                m = _block(layout, d, ti, f)
                cells = layout.table_sizes[ti] / layout.n_modalities[f]
                lim = (
                    Z_NOISE * sigma * math.sqrt(cells + ref_cells)
                    if noisy
                    else 1e-6 * max(ref.sum(), 1.0)
                )
                if tol is not None:
                    lim = float(tol)
                bad = np.flatnonzero(np.abs(m - ref) > lim)
                for k in bad[:2]:
                    msgs.append(
                        f"table {where_of[ti].name!r} ({where_of[ti].where}) counts "
                        f"{m[k]:g} records with {layout.feature_names[f]}="
                        f"{layout.modality_labels[f][k]!r}, table {where_of[ref_t].name!r} "
                        f"counts {ref[k]:g}"
                    )
            flag(
                msgs,
                f"tables disagree on the counts of feature {layout.feature_names[f]!r}: ",
                problems,
            )

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
        warnings.warn(m, ReleaseWarning, stacklevel=3)

    # ---------------------------------------------------------------- intercept and n
    icpt = (meta or {}).get("intercept")
    if noisy:
        d0, c0 = ref_d, ref_c
    else:
        d0, c0 = float(tot_d[0]), float(tot_c[0])
    if isinstance(icpt, dict) and "count" in icpt and "label_sum" in icpt:
        d0, c0 = float(icpt["count"]), float(icpt["label_sum"])
    n = (meta or {}).get("n")
    n = int(n) if n is not None else max(1, int(round(d0)))
    d[0], c[0] = d0, c0
    info = {"source": source, "release": {k: v for k, v in (meta or {}).items() if k != "features"}}
    if noisy:
        info["privacy"] = mech.describe()
    agg = AggregatedData(layout, d, c, n, noise=mech, meta=info)
    return Release(agg, schema, msgs, source, meta or {})


def _block(layout: TableLayout, values: np.ndarray, ti: int, f: int) -> np.ndarray:
    """Sum of ``values`` over table ti's rows, per modality of feature f, shape (M_f,)."""
    t = layout.tables[ti]
    block = values[layout.offsets[ti] : layout.offsets[ti + 1]].reshape(
        [int(layout.n_modalities[g]) for g in t]
    )
    axes = tuple(j for j, g in enumerate(t) if g != f)
    return block.sum(axis=axes) if axes else block.copy()
