"""Export and import fitted models: θ (and μ) per row of each table, the intercept, the schema.

JSON (``export_model_json`` / ``save_model(path.json)``)::

    {"format": "aggmrf-model", "version": 1,
     "schema": {...release schema: features, modalities, bin edges, label...},
     "intercept": {"theta": -1.2, "mu": 0.0},
     "tables": [{"name": "age × sex", "features": ["age", "sex"],
                 "rows": [{"values": ["[17, 22)", "Female"], "theta": 0.01, "mu": -3.2}, ...]},
                ...],
     "settings": {...}}

CSV (``export_model_csv`` / ``save_model(path.csv)``): one long table with columns
``table``, one column per feature (empty where the feature is not in the table), ``theta``
and ``mu``; the intercept is the row whose ``table`` is ``intercept``.  The schema (needed
to map raw records with numeric features to bins) goes beside it in ``FILE.schema.json``.

Floats are written with Python's repr (shortest round-trip form), so a reloaded model has
bit-identical θ and predicts exactly what the in-memory model predicts.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..encoding import Encoder, Schema
from ..errors import AggMRFError
from ..mrf import MRFModel
from ..tables import TableLayout

__all__ = [
    "LoadedModel",
    "model_to_dict",
    "export_model_json",
    "export_model_csv",
    "save_model",
    "load_model",
    "model_from_dict",
]

FORMAT = "aggmrf-model"
VERSION = 1
INTERCEPT = "intercept"


def _schema(model: MRFModel, encoder_or_schema: Encoder | Schema | None) -> Schema:
    """The schema stored with the model: given (Schema / fitted Encoder) or its labels."""
    if encoder_or_schema is None:
        schema = Schema.from_layout(model.layout)
    elif isinstance(encoder_or_schema, Schema):
        schema = encoder_or_schema
    else:
        schema = Schema.from_encoder(encoder_or_schema)
    schema.check_layout(model.layout)
    return schema


def _model(model: object) -> MRFModel:
    """The MRFModel of a model, a PCDTrainer or a LoadedModel (hashed layouts refused)."""
    inner = getattr(model, "model", None)  # a PCDTrainer, or a LoadedModel
    model = inner if isinstance(inner, MRFModel) else model
    if isinstance(model, MRFModel):
        if model.layout.has_hashed_tables:
            raise AggMRFError(
                "model export does not support hashed tables yet (their rows are hash "
                "buckets, not modality combinations); use MRFModel.predict_proba directly."
            )
        return model
    raise AggMRFError(f"expected a fitted MRFModel (or a PCDTrainer); got {type(model).__name__}.")


def model_to_dict(
    model: object, encoder_or_schema: Encoder | Schema | None = None, settings: dict | None = None
) -> dict:
    """The JSON-able dictionary of a fitted model (see the module docstring)."""
    model = _model(model)
    schema = _schema(model, encoder_or_schema)
    lay = model.layout
    tables = []
    icpt = None
    for ti, t in enumerate(lay.tables):
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        if not t:
            icpt = {"theta": float(model.theta[sl][0]), "mu": float(model.mu[sl][0])}
            continue
        codes = lay.row_codes(ti)
        labels = [np.asarray(lay.modality_labels[f], dtype=object) for f in t]
        rows = [
            {
                "values": [str(labels[j][codes[r, j]]) for j in range(len(t))],
                "theta": float(th),
                "mu": float(m),
            }
            for r, (th, m) in enumerate(zip(model.theta[sl], model.mu[sl], strict=True))
        ]
        tables.append(
            {
                "name": lay.table_name(t),
                "features": [lay.feature_names[f] for f in t],
                "rows": rows,
            }
        )
    return {
        "format": FORMAT,
        "version": VERSION,
        "schema": schema.to_dict(),
        "intercept": icpt,
        "tables": tables,
        "settings": settings or {},
    }


def export_model_json(
    model: object, encoder_or_schema: Encoder | Schema | None = None, settings: dict | None = None
) -> str:
    """The fitted model as a JSON string (θ and μ per row of each table, intercept, schema).

    ``encoder_or_schema``: the fitted Encoder (``EncodedData.encoder``) or a
    :class:`~aggmrf_explore.encoding.Schema` (e.g. ``read_release(...).schema``); it maps raw
    records to codes, bin edges included.  ``None``: labels only (records must hold labels).
    """
    return json.dumps(model_to_dict(model, encoder_or_schema, settings), ensure_ascii=False)


def export_model_csv(model: object, encoder_or_schema: Encoder | Schema | None = None) -> str:
    """The fitted model as one long CSV (table, feature columns, theta, mu); intercept first."""
    model = _model(model)
    _schema(model, encoder_or_schema)
    lay = model.layout
    frames = []
    for ti, t in enumerate(lay.tables):
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        cols: dict[str, object] = {"table": lay.table_name(t) if t else INTERCEPT}
        codes = lay.row_codes(ti)
        n = int(lay.table_sizes[ti])
        for f, name in enumerate(lay.feature_names):
            if f in t:
                j = t.index(f)
                cols[name] = np.asarray(lay.modality_labels[f], dtype=object)[codes[:, j]]
            else:
                cols[name] = np.full(n, "", dtype=object)
        cols["theta"] = [repr(float(v)) for v in model.theta[sl]]
        cols["mu"] = [repr(float(v)) for v in model.mu[sl]]
        frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True).to_csv(index=False)


def save_model(
    path: str | Path,
    model: object,
    encoder_or_schema: Encoder | Schema | None = None,
    settings: dict | None = None,
) -> Path:
    """Write the model to ``path``: ``.json`` (self-contained) or ``.csv`` (+ FILE.schema.json)."""
    path = Path(path)
    model = _model(model)
    schema = _schema(model, encoder_or_schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".json":
        path.write_text(export_model_json(model, schema, settings) + "\n", encoding="utf-8")
    elif suffix == ".csv":
        path.write_text(export_model_csv(model, schema), encoding="utf-8")
        side = path.with_suffix(".schema.json")
        side.write_text(json.dumps(schema.to_dict(), ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        raise AggMRFError(f"model files end in .json or .csv; got {str(path)!r}.")
    return path


@dataclass
class LoadedModel:
    """A model read back: ``model`` (MRFModel), ``schema``, and ``predict_proba(records)``."""

    model: MRFModel
    schema: Schema
    settings: dict = field(default_factory=dict)

    @property
    def layout(self) -> TableLayout:
        return self.model.layout

    def transform(self, records: pd.DataFrame) -> np.ndarray:
        """Raw records → int32 codes (n, D), the schema's (= the training encoder's) transform."""
        return self.schema.transform(records)

    def predict_proba(self, records: pd.DataFrame) -> np.ndarray:
        """P(Y=1 | x) for raw records (a DataFrame with the feature columns), shape (n,)."""
        return self.model.predict_proba(self.schema.transform(records))[:, 1]


def _build(schema: Schema, tables: list[tuple[list[str], list[list[str]], np.ndarray, np.ndarray]],
           icpt: tuple[float, float] | None, settings: dict) -> LoadedModel:  # fmt: skip
    """θ and μ placed on the schema's layout from (features, row values, θ, μ) per table.

    Errors: a feature not in the schema, a value that is not a modality, a row twice, a
    missing row.
    """
    fidx = {f: i for i, f in enumerate(schema.feature_names)}
    lab = [{m: k for k, m in enumerate(mods)} for mods in schema.modality_labels]
    layout_tables = []
    for feats, _, _, _ in tables:
        unknown = [f for f in feats if f not in fidx]
        if unknown:
            raise AggMRFError(
                f"model table over {feats}: features {unknown} are not in the schema."
            )
        layout_tables.append(tuple(fidx[f] for f in feats))
    lay = schema.layout(layout_tables, intercept=icpt is not None)
    theta = np.zeros(lay.K)
    mu = np.zeros(lay.K)
    filled = np.zeros(lay.K, dtype=bool)
    if icpt is not None:
        theta[0], mu[0] = icpt
        filled[0] = True
    for ti, (feats, values, th, m) in enumerate(tables, start=int(icpt is not None)):
        idx = [fidx[f] for f in feats]
        for r, vals in enumerate(values):
            try:
                codes = [lab[f][v] for f, v in zip(idx, vals, strict=True)]
            except (KeyError, ValueError):
                raise AggMRFError(
                    f"model table {' × '.join(feats)!r}, row {r + 1}: values {vals} are not "
                    "modalities of the schema."
                ) from None
            row = lay.offsets[ti] + sum(
                c * lay.strides[ti, f] for f, c in zip(idx, codes, strict=True)
            )
            if filled[row]:
                raise AggMRFError(f"model table {' × '.join(feats)!r}: row {vals} appears twice.")
            theta[row], mu[row] = th[r], m[r]
            filled[row] = True
    if not filled.all():
        raise AggMRFError(
            f"the model file lacks {int((~filled).sum())} row(s) of its tables; it is incomplete."
        )
    return LoadedModel(MRFModel(lay, mu, theta), schema, settings)


def model_from_dict(d: dict) -> LoadedModel:
    """Inverse of :func:`model_to_dict`."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise AggMRFError("not an aggmrf model file (its 'format' is not 'aggmrf-model').")
    schema = Schema.from_dict(d.get("schema") or {})
    tables = []
    for i, t in enumerate(d.get("tables") or []):
        try:
            feats = [str(f) for f in t["features"]]
            rows = t["rows"]
            values = [[str(v) for v in r["values"]] for r in rows]
            th = np.asarray([float(r["theta"]) for r in rows])
            mu = np.asarray([float(r.get("mu", 0.0)) for r in rows])
        except (KeyError, TypeError, ValueError) as e:
            raise AggMRFError(f"model table #{i + 1} is malformed ({e!r}).") from None
        tables.append((feats, values, th, mu))
    icpt = d.get("intercept")
    icpt = None if icpt is None else (float(icpt["theta"]), float(icpt.get("mu", 0.0)))
    return _build(schema, tables, icpt, d.get("settings") or {})


def _from_csv(text: str, schema: Schema | None) -> LoadedModel:
    """A model CSV (+ its schema; None: labels inferred from the CSV) → LoadedModel."""
    df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    for col in ("table", "theta"):
        if col not in df.columns:
            raise AggMRFError(
                f"a model CSV needs a {col!r} column; its columns are {list(df.columns)}."
            )
    feat_cols = [c for c in df.columns if c not in ("table", "theta", "mu")]
    if schema is None:
        mods: dict[str, list[str]] = {f: [] for f in feat_cols}
        for f in feat_cols:
            for v in pd.unique(df[f].to_numpy(dtype=object)):
                if v != "":
                    mods[f].append(str(v))
        schema = Schema(feat_cols, [mods[f] for f in feat_cols])
    tables = []
    icpt = None
    for name in pd.unique(df["table"].to_numpy(dtype=object)):
        sub = df[df["table"] == name]
        th = np.asarray([float(v) for v in sub["theta"]])
        mu = np.asarray([float(v) for v in sub["mu"]]) if "mu" in sub else np.zeros(len(sub))
        if name == INTERCEPT:
            icpt = (float(th[0]), float(mu[0]))
            continue
        feats = [f for f in schema.feature_names if f in feat_cols and (sub[f] != "").any()]
        values = sub[feats].to_numpy(dtype=object).astype(str).tolist()
        tables.append((feats, values, th, mu))
    return _build(schema, tables, icpt, {})


def load_model(path: str | Path) -> LoadedModel:
    """Read a model written by :func:`save_model` (``.json``, or ``.csv`` + FILE.schema.json)."""
    path = Path(path)
    if not path.exists():
        raise AggMRFError(f"model file not found: {str(path)!r}.")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        side = path.with_suffix(".schema.json")
        schema = (
            Schema.from_dict(json.loads(side.read_text(encoding="utf-8")))
            if side.exists()
            else None
        )
        return _from_csv(text, schema)
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise AggMRFError(f"{str(path)!r} is not valid JSON: {e}.") from None
    return model_from_dict(d)
