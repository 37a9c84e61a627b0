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

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..encoding import Encoder, Schema
from ..errors import AggMRFError
from ..files import (
    MAX_JSON_BYTES,
    check_output_file,
    decode_text,
    loads_json,
    read_bytes,
    write_text,
)
from ..mrf import MRFModel
from ..tables import TableLayout
from ..tables.budget import Budget, check_size
from .fields import (
    check_list,
    check_number,
    check_object,
    check_scalar,
    check_schema_dict,
    check_str,
    check_version,
    short,
)
from .formula import neutralise_frame, restore_cell, restore_frame

__all__ = [
    "LoadedModel",
    "model_to_dict",
    "export_model_json",
    "export_model_csv",
    "save_model",
    "load_model",
    "model_from_dict",
    "check_model_path",
    "MAX_ABS_PARAMETER",
]

FORMAT = "aggmrf-model"
VERSION = 1
INTERCEPT = "intercept"
MAX_ABS_PARAMETER = 1e4  # |θ|, |μ| of a model file; the trainer keeps |θ| ≤ 50, |μ| ≤ 200
MAX_MODEL_CSV_BYTES = 2**30


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
        if not (np.all(np.isfinite(model.theta)) and np.all(np.isfinite(model.mu))):
            raise AggMRFError(
                "the model has non-finite θ or μ (training diverged?) and cannot be saved; "
                "retrain with smaller steps or a larger λθ."
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
    return json.dumps(
        model_to_dict(model, encoder_or_schema, settings), ensure_ascii=False, allow_nan=False
    )


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
    return neutralise_frame(pd.concat(frames, ignore_index=True)).to_csv(index=False)


def save_model(
    path: str | Path,
    model: object,
    encoder_or_schema: Encoder | Schema | None = None,
    settings: dict | None = None,
) -> Path:
    """Write the model to ``path``: ``.json`` (self-contained) or ``.csv`` (+ FILE.schema.json).

    The directory must exist (it is never created); call :func:`check_model_path` before
    training to fail early.  CSV cells are formula-neutralised (:mod:`.formula`).  Each
    file is written through :func:`~aggmrf_explore.files.create_file` (a fresh temporary
    file renamed into place; a link at the name is refused, never written through).
    """
    path = check_model_path(path)
    model = _model(model)
    schema = _schema(model, encoder_or_schema)
    suffix = path.suffix.lower()
    if suffix == ".json":
        write_text(path, export_model_json(model, schema, settings) + "\n", "model file")
    elif suffix == ".csv":
        side = check_output_file(path.with_suffix(".schema.json"), "model schema file")
        write_text(path, export_model_csv(model, schema), "model file")
        write_text(
            side, json.dumps(schema.to_dict(), ensure_ascii=False) + "\n", "model schema file"
        )
    else:
        raise AggMRFError(f"model files end in .json or .csv; got {str(path)!r}.")
    return path


def check_model_path(path: str | Path) -> Path:
    """``path`` can take a model file: it ends in .json or .csv and its directory exists
    (nothing is created), and so can a CSV model's FILE.schema.json beside it.  Raises
    AggMRFError saying what to change; returns the path."""
    p = check_output_file(path, "model file", (".json", ".csv"))
    if p.suffix.lower() == ".csv":
        check_output_file(p.with_suffix(".schema.json"), "model schema file")
    return p


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


def _build(
    schema: Schema,
    tables: list[tuple[list[str], list[list[str]], np.ndarray, np.ndarray]],
    icpt: tuple[float, float] | None,
    settings: dict,
) -> LoadedModel:
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
                    f"model table {short(' × '.join(feats))}, row {r + 1}: values "
                    f"{short(vals)} are not modalities of the schema."
                ) from None
            row = lay.offsets[ti] + sum(
                c * lay.strides[ti, f] for f, c in zip(idx, codes, strict=True)
            )
            if filled[row]:
                raise AggMRFError(
                    f"model table {short(' × '.join(feats))}: row {short(vals)} appears twice."
                )
            theta[row], mu[row] = th[r], m[r]
            filled[row] = True
    if not filled.all():
        raise AggMRFError(
            f"the model file lacks {int((~filled).sum())} row(s) of its tables; it is incomplete."
        )
    return LoadedModel(MRFModel(lay, mu, theta), schema, settings)


def _parameter(value: object, what: str) -> float:
    return check_number(value, what, lo=-MAX_ABS_PARAMETER, hi=MAX_ABS_PARAMETER)


def _check_model_size(schema: Schema, tables: list, budget: Budget | None) -> None:
    """The size budget of the model's layout, before it is allocated."""
    fidx = {f: i for i, f in enumerate(schema.feature_names)}
    layout = []
    for feats, *_ in tables:
        unknown = [f for f in feats if f not in fidx]
        if unknown:
            raise AggMRFError(
                f"model table over {[short(f) for f in feats]}: features "
                f"{[short(f) for f in unknown]} are not in the schema."
            )
        layout.append(tuple(fidx[f] for f in feats))
    check_size(
        schema.n_modalities.tolist(),
        layout,
        schema.feature_names,
        budget=budget,
        what="the model's tables",
    )


def _schema_from_dict(d: object, where: str) -> Schema:
    d = check_object(d, where)
    check_schema_dict(d, where)
    return Schema.from_dict(d)


def model_from_dict(d: dict, *, budget: Budget | None = None) -> LoadedModel:
    """Inverse of :func:`model_to_dict`, every field type- and range-checked first.

    ``format`` "aggmrf-model", ``version`` 1, ``schema`` (see
    :func:`.fields.check_schema_dict`), ``intercept`` (null or finite ``theta`` / ``mu``),
    ``tables`` (1–3 schema features each; rows of ``values`` with finite ``theta`` and
    ``mu``, |·| ≤ ``MAX_ABS_PARAMETER``); the layout within ``budget``.
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise AggMRFError(
            "not an aggmrf model file (its 'format' is not 'aggmrf-model'); give a file written "
            "by `run --export-model` or save_model."
        )
    check_version(d.get("version"), "model file 'version'", VERSION)
    schema = _schema_from_dict(d.get("schema"), "model file 'schema'")
    tables = []
    for i, t in enumerate(check_list(d.get("tables"), "model file 'tables'")):
        at = f"model table #{i + 1}"
        check_object(t, at)
        feats = check_list(t.get("features"), f"{at} 'features'", min_len=1, max_len=3)
        feats = [check_str(f, f"{at} 'features' item {j + 1}") for j, f in enumerate(feats)]
        rows = check_list(t.get("rows"), f"{at} 'rows'")
        values, th, mu = [], np.empty(len(rows)), np.empty(len(rows))
        for r, row in enumerate(rows):
            rat = f"{at} row {r + 1}"
            check_object(row, rat)
            vals = check_list(
                row.get("values"), f"{rat} 'values'", min_len=len(feats), max_len=len(feats)
            )
            values.append([str(check_scalar(v, f"{rat} value")) for v in vals])
            th[r] = _parameter(row.get("theta"), f"{rat} 'theta'")
            mu[r] = _parameter(row.get("mu", 0.0), f"{rat} 'mu'")
        tables.append((feats, values, th, mu))
    icpt = d.get("intercept")
    if icpt is not None:
        check_object(icpt, "model file 'intercept'")
        icpt = (
            _parameter(icpt.get("theta"), "model file 'intercept' 'theta'"),
            _parameter(icpt.get("mu", 0.0), "model file 'intercept' 'mu'"),
        )
    settings = d.get("settings") or {}
    check_object(settings, "model file 'settings'")
    _check_model_size(schema, tables, budget)
    return _build(schema, tables, icpt, settings)


def _csv_numbers(sub: pd.DataFrame, col: str, table: str) -> np.ndarray:
    out = np.empty(len(sub))
    for r, v in enumerate(sub[col]):
        try:
            x = float(v)
        except ValueError:
            x = float("nan")
        if not abs(x) <= MAX_ABS_PARAMETER:
            raise AggMRFError(
                f"model CSV, table {short(table)} row {r + 1}: {col} is {short(v)}, not a finite "
                f"number within ±{MAX_ABS_PARAMETER:g}."
            )
        out[r] = x
    return out


def _from_csv(text: str, schema: Schema | None, budget: Budget | None = None) -> LoadedModel:
    """A model CSV (+ its schema; None: labels inferred from the CSV) → LoadedModel."""
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    header = [str(restore_cell(c.strip())) for c in next(csv.reader([first]), [])]
    if len(set(header)) != len(header):
        raise AggMRFError("the model CSV has two columns with the same name.")
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise AggMRFError(f"the model CSV cannot be parsed: {msg}.") from None
    df = restore_frame(df)
    for col in ("table", "theta"):
        if col not in df.columns:
            raise AggMRFError(
                f"a model CSV needs a {col!r} column; its header has {len(df.columns)} field(s) "
                f"without it."
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
        th = _csv_numbers(sub, "theta", name)
        mu = _csv_numbers(sub, "mu", name) if "mu" in sub else np.zeros(len(sub))
        if name == INTERCEPT:
            icpt = (float(th[0]), float(mu[0]))
            continue
        feats = [f for f in schema.feature_names if f in feat_cols and (sub[f] != "").any()]
        if not 1 <= len(feats) <= 3:
            raise AggMRFError(
                f"model CSV table {short(name)} has {len(feats)} feature columns with values; "
                "a table has 1 to 3."
            )
        values = sub[feats].to_numpy(dtype=object).astype(str).tolist()
        tables.append((feats, values, th, mu))
    _check_model_size(schema, tables, budget)
    return _build(schema, tables, icpt, {})


def load_model(path: str | Path, *, budget: Budget | None = None) -> LoadedModel:
    """Read a model written by :func:`save_model` (``.json``, or ``.csv`` + FILE.schema.json).

    Hostile files are refused with an AggMRFError: not a regular file, over the byte cap
    (``MAX_JSON_BYTES`` for JSON, ``MAX_MODEL_CSV_BYTES`` for CSV), invalid or non-standard
    JSON (NaN, Infinity), a wrong ``format`` / ``version``, a field of the wrong type, a
    non-finite or huge θ / μ (beyond ``MAX_ABS_PARAMETER``), a layout over ``budget``.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        text = decode_text(read_bytes(path, "model file", MAX_MODEL_CSV_BYTES), "model file")
        side = path.with_suffix(".schema.json")
        schema = None
        if side.exists():
            raw = read_bytes(side, "model schema file", MAX_JSON_BYTES)
            schema = _schema_from_dict(
                loads_json(raw, f"model schema file {side.name!r}"),
                f"model schema file {side.name!r}",
            )
        return _from_csv(text, schema, budget)
    raw = read_bytes(path, "model file", MAX_JSON_BYTES)
    return model_from_dict(loads_json(raw, f"model file {path.name!r}"), budget=budget)
