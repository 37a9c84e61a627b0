"""Records → codes: the :class:`Encoder` (fit on records) and its public form, the :class:`Schema`.

One categorical feature per column.  ``Encoder.fit`` learns a :class:`Schema`; the schema
alone maps records to codes (:meth:`Schema.transform`, the only implementation: the
encoder delegates to it), and it is what releases and model files store, so prediction
from a file gives exactly the codes of training.  ``Encoder.to_schema()`` /
``Schema.from_encoder(encoder)`` export it, ``Encoder.from_schema(schema)`` rebuilds a
fitted encoder from it.

Policies (all decided at ``fit`` time, on the training data only):

* **Numeric vs categorical.**  A column is *numeric* (discretised) when it has a numeric,
  non-boolean dtype and more than ``max_categorical_numeric`` (default 12) distinct values
  in the fit data.  Every other column is *categorical*: strings, booleans, pandas
  ``Categorical`` columns (their declared category order is kept, unused categories
  included) and numeric columns with few distinct values (e.g. a 0..7 count), whose
  modalities are the distinct values in numeric order.  String categories are sorted in
  natural order ("a2" < "a10").
* **Discretisation.**  Numeric columns are cut at the quantiles k/n_bins (deciles by
  default) of the fit data.  Bins are ``[lo, hi)`` between observed values; duplicate
  edges are merged, so a column that is mostly 0 (Adult's capital-gain) gets few bins,
  and a mass point at the minimum or the maximum keeps a bin of its own.  Values outside
  the training range fall in the first / last bin (that is not "unseen").  Labels read
  ``"[25, 33)"``; the first and last bin show the training min / max.  Numbers are shown
  with 6 significant digits, or in full when 6 digits would give two modalities the
  same label.
* **Unseen categories** (a categorical value not seen at fit time):
  ``unseen="error"`` (default) raises :class:`AggMRFError` naming the column, the values
  and the number of rows; ``unseen="other"`` reserves one extra modality ``"(other)"``
  (the last code) per categorical feature at fit time, where unseen values are mapped.
* **Rare categories.**  ``min_count`` (default 1: off) merges the categories seen fewer
  than ``min_count`` times at fit time into ``"(other)"``; ``max_modalities`` keeps only
  the most frequent categories so that a feature has at most that many modalities
  (``"(other)"`` included).  Both create ``"(other)"`` only when they merge something
  (``unseen="other"`` always creates it).
* **Missing values.**  NaN / None / empty (or blank) cells raise :class:`AggMRFError`
  with the column, the number of rows and what to do; nothing is ever filled silently.

Labels: :func:`encode_label` maps a two-valued column to 0/1 (rule in its docstring).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .errors import AggMRFError
from .high_cardinality import HashedCross, TargetEncoder
from .tables import TableLayout
from .values import (
    check_no_missing,
    encode_label,
    factorize_str,
    format_number,
    format_number_full,
    label_strings,
    natural_key,
    to_float,
)

__all__ = [
    "Encoder",
    "Schema",
    "encode_label",
    "label_strings",
    "OTHER",
    "check_no_missing",
    "to_float",
    "TargetEncoder",
    "HashedCross",
]

OTHER = "(other)"
_UNSEEN_POLICIES = ("error", "other")
_MAX_SHOWN = 10  # unseen values listed in an error message
_MAX_MODALITIES_SHOWN = 20


def _unseen_error(name: str, bad: np.ndarray, modalities: list[str]) -> AggMRFError:
    """The one message for values a categorical feature did not see at fit time.

    ``bad``: the unseen raw values of the rows (as label strings), shape (k,).
    """
    vals, cnt = np.unique(bad.astype(str), return_counts=True)
    order = np.argsort(-cnt, kind="stable")
    shown = ", ".join(f"{str(vals[i])!r} ({int(cnt[i])} rows)" for i in order[:_MAX_SHOWN])
    more = f" and {len(vals) - _MAX_SHOWN} more" if len(vals) > _MAX_SHOWN else ""
    mods = modalities[:_MAX_MODALITIES_SHOWN]
    mods_more = " …" if len(modalities) > _MAX_MODALITIES_SHOWN else ""
    return AggMRFError(
        f"column {name!r} has {len(bad)} row(s) with value(s) not seen at fit time: "
        f"{shown}{more}; its modalities are {mods}{mods_more}. Pass unseen='other' "
        f"(command line: --unseen other) when encoding to map them to an extra '{OTHER}' "
        "modality, or fit on data that contains them."
    )


# ====================================================================== schema
@dataclass
class Schema:
    """Features and their modalities (ordered labels), plus what maps raw records to codes.

    The fitted state of an :class:`Encoder` in public, serialisable form (``to_dict`` /
    ``from_dict``, as stored in ``release.json`` and model files).  D features:

    ``feature_names`` (D str); ``modality_labels`` (D lists of str, code k of feature f is
    ``modality_labels[f][k]``); ``kinds[f]``: "numeric" (``edges[f]``: lower edges of bins
    1..M-1, increasing floats) or "categorical" (``known[f]`` the raw values seen at fit
    time and ``codes[f]`` the code of each; ``values[f]`` "number" or "string", how a raw
    cell is compared with ``known``; ``unseen[f]`` "error" or "other").  ``label`` /
    ``positive_label`` / ``classes`` describe the label column (None when unknown).
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
        encoder: Encoder | Schema,
        label: str | None = None,
        positive_label: str | None = None,
        classes: Sequence[str] | None = None,
    ) -> Schema:
        """The schema of a fitted :class:`Encoder` (= ``encoder.to_schema(...)``).

        A Schema passed here is returned as it is (its label fields untouched).
        """
        if isinstance(encoder, Schema):
            return encoder
        if not isinstance(encoder, Encoder):
            raise AggMRFError(
                f"expected a fitted Encoder or a Schema; got {type(encoder).__name__}."
            )
        return encoder.to_schema(label, positive_label, classes)

    @classmethod
    def from_layout(cls, layout: TableLayout, **kw) -> Schema:
        """A label-only schema (records must hold the modality labels themselves)."""
        return cls(list(layout.feature_names), [list(m) for m in layout.modality_labels], **kw)

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        """Inverse of :meth:`to_dict` (the ``features`` / label part of release.json)."""
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
        """The JSON-able form: ``{"label", "positive_label", "classes", "features": [...]}``."""
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
        """Modalities per feature, int64 (D,)."""
        return np.asarray([len(m) for m in self.modality_labels], dtype=np.int64)

    def other_code(self, f: int) -> int | None:
        """The code unseen values of feature f map to: "(other)" under unseen="other", else None."""
        mods = self.modality_labels[f]
        if self.kinds[f] == "categorical" and self.unseen[f] == "other" and OTHER in mods:
            return mods.index(OTHER)
        return None

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
        """Raw records → int32 codes of shape (n, D), feature f in 0..M_f-1.

        The one records → codes path (``Encoder.transform`` calls it).  ``df`` must hold
        the feature columns (extra columns are ignored).  Numeric features: the bin of each
        value (out-of-range values fall in the first / last bin); categorical features: the
        code of each known value, unseen values to "(other)" or an error (``unseen``).
        Missing cells, non-numeric cells in numeric features and unseen values raise
        :class:`AggMRFError` naming the column.
        """
        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(f"transform expects a pandas DataFrame; got {type(df).__name__}.")
        cols = {str(c): c for c in df.columns}
        missing = [f for f in self.feature_names if f not in cols]
        if missing:
            raise AggMRFError(
                f"columns {missing} were present at fit time but are missing here; "
                f"available columns: {list(cols)}."
            )
        sub = df[[cols[f] for f in self.feature_names]]
        check_no_missing(sub)
        X = np.empty((len(df), self.n_features), dtype=np.int32)
        for j, name in enumerate(self.feature_names):
            s = sub.iloc[:, j]
            if self.kinds[j] == "numeric":
                X[:, j] = self._bins(j, name, s)
            else:
                X[:, j] = self._categories(j, name, s)
        return X

    def _bins(self, j: int, name: str, s: pd.Series) -> np.ndarray:
        """Bin codes (n,) int32 of numeric feature j: values below edge k+1 and ≥ edge k get k+1."""
        edges = np.asarray(self.edges[j], dtype=np.float64)
        return np.searchsorted(edges, to_float(name, s), side="right").astype(np.int32)

    def _lookup(self, j: int, name: str, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """(index among the known values of categorical feature j or -1, raw value) per row."""
        if self.values[j] == "number":
            x = to_float(name, s)
            return pd.Index(np.asarray(self.known[j], dtype=np.float64)).get_indexer(x), x
        fcodes, uniq = factorize_str(s)
        return pd.Index(self.known[j], dtype=object).get_indexer(uniq)[fcodes], uniq[fcodes]

    def unseen_values(self, df: pd.DataFrame) -> dict[str, dict[str, int]]:
        """{column: {value: rows}} of ``df``'s categorical values not seen at fit time (the
        ones :meth:`transform` maps to "(other)" or refuses); {} when every value is known."""
        out = {}
        for j, name in enumerate(self.feature_names):
            if self.kinds[j] != "numeric":
                idx, raw = self._lookup(j, name, df[name])
                fmt = format_number if self.values[j] == "number" else str
                vals, rows = np.unique([fmt(v) for v in raw[idx < 0]], return_counts=True)
                out[name] = {str(v): int(n) for v, n in zip(vals, rows, strict=True)}
        return {name: values for name, values in out.items() if values}

    def _categories(self, j: int, name: str, s: pd.Series) -> np.ndarray:
        """Codes (n,) int32 of categorical feature j; unseen values → "(other)" or an error."""
        idx, raw = self._lookup(j, name, s)
        unseen = idx < 0
        code_of = np.asarray(self.codes[j], dtype=np.int32)
        if len(code_of):
            codes = code_of[np.where(unseen, 0, idx)]
        else:
            codes = np.zeros(len(idx), dtype=np.int32)
        if unseen.any():
            other = self.other_code(j)
            if other is None:
                bad = np.asarray(raw)[unseen]
                if self.values[j] == "number":
                    bad = np.asarray([format_number(v) for v in bad], dtype=object)
                raise _unseen_error(name, bad, self.modality_labels[j])
            codes = np.where(unseen, other, codes)
        return codes.astype(np.int32)

    def encode_label(self, series: pd.Series, label: str | None = None) -> np.ndarray:
        """0/1 labels (int8, (n,)) of a record column with the schema's positive class."""
        y, _ = encode_label(series, positive=self.positive_label, classes=self.classes)
        return y

    def subset(self, names: Sequence[str]) -> Schema:
        """This schema restricted to the features ``names`` (kept in the schema's order; the
        label kept); an error naming a feature it does not declare."""
        missing = sorted(set(names) - set(self.feature_names))
        if missing:
            raise AggMRFError(
                f"the declared schema has no feature {missing[0]!r}; declare it (--schema) or "
                "drop the column (--drop-features)."
            )
        keep = [i for i, f in enumerate(self.feature_names) if f in set(names)]
        per_feature = ("feature_names", "modality_labels", "kinds", "edges", "known", "codes")
        picked = {k: [getattr(self, k)[i] for i in keep] for k in (*per_feature, "values")}
        picked["unseen"] = [self.unseen[i] for i in keep]
        return replace(self, **picked)

    def layout(self, tables: Sequence[Sequence[int]], intercept: bool = True) -> TableLayout:
        """A :class:`TableLayout` over these features and modalities."""
        return TableLayout(
            self.n_modalities, tables, self.feature_names, intercept, self.modality_labels
        )


# ====================================================================== encoder
@dataclass
class _Fitted:
    """What fitting one column gives (one feature of the schema)."""

    kind: str
    labels: list[str]
    edges: list[float] | None = None
    known: list | None = None
    codes: list[int] | None = None
    values: str = "string"


def _labels_of_bins(bounds: list[float], fmt) -> list[str]:
    """Labels "[a, b)" of the bins between consecutive ``bounds`` (the last one closed)."""
    labels = []
    for i in range(len(bounds) - 1):
        a, b = fmt(bounds[i]), fmt(bounds[i + 1])
        last = i == len(bounds) - 2
        if last and a == b:
            labels.append(a)  # a mass point at the maximum
        else:
            labels.append(f"[{a}, {b}]" if last else f"[{a}, {b})")
    return labels


def _distinct(make) -> list[str]:
    """``make(format_number)``, or ``make(format_number_full)`` when 6 digits give duplicate labels."""
    labels = make(format_number)
    return labels if len(set(labels)) == len(labels) else make(format_number_full)


class Encoder:
    """Fit a schema on records and encode them as integer codes (scikit-learn style).

    Parameters
    ----------
    n_bins : number of quantile bins for numeric columns (10 = deciles), >= 2.
    unseen : "error" or "other", what to do with categorical values not seen at fit time.
    max_modalities : optional cap on the number of modalities of a categorical feature.
    min_count : categories seen fewer times than this at fit time are merged into "(other)".
    max_categorical_numeric : a numeric column with at most this many distinct values is
        treated as categorical.

    Fitted state: ``schema_`` (:class:`Schema`), read through ``feature_names`` (list, D),
    ``n_modalities`` (int64, shape (D,)), ``modality_labels`` (= ``inverse_labels``, D lists
    of str), ``kinds`` ("numeric" or "categorical" per feature), ``edges`` (per numeric
    feature: the lower edges of bins 1..M-1, float64; None for categorical features).
    """

    def __init__(
        self,
        n_bins: int = 10,
        unseen: str = "error",
        max_modalities: int | None = None,
        min_count: int = 1,
        max_categorical_numeric: int = 12,
    ) -> None:
        if not isinstance(n_bins, int | np.integer) or n_bins < 2:
            raise AggMRFError(f"n_bins must be an integer >= 2 (10 gives deciles); got {n_bins!r}.")
        if unseen not in _UNSEEN_POLICIES:
            raise AggMRFError(
                f"unseen must be 'error' or 'other'; got {unseen!r}. 'other' maps values not seen "
                "at fit time to an extra '(other)' modality."
            )
        if max_modalities is not None and (
            not isinstance(max_modalities, int | np.integer) or max_modalities < 2
        ):
            raise AggMRFError(
                f"max_modalities must be None or an integer >= 2; got {max_modalities!r}."
            )
        if not isinstance(min_count, int | np.integer) or min_count < 1:
            raise AggMRFError(f"min_count must be an integer >= 1; got {min_count!r}.")
        self.n_bins = int(n_bins)
        self.unseen = unseen
        self.max_modalities = None if max_modalities is None else int(max_modalities)
        self.min_count = int(min_count)
        self.max_categorical_numeric = int(max_categorical_numeric)
        self.schema_: Schema | None = None

    # ------------------------------------------------------------------ schema
    @classmethod
    def from_schema(cls, schema: Schema) -> Encoder:
        """A fitted encoder whose ``transform`` is ``schema.transform`` (e.g. read from a file).

        The fit parameters (``n_bins``, ``min_count`` …) keep their defaults, except
        ``unseen``: "other" when every categorical feature maps unseen values to "(other)".
        """
        if not isinstance(schema, Schema):
            raise AggMRFError(f"Encoder.from_schema needs a Schema; got {type(schema).__name__}.")
        cats = [f for f in range(schema.n_features) if schema.kinds[f] == "categorical"]
        other = bool(cats) and all(schema.other_code(f) is not None for f in cats)
        enc = cls(unseen="other" if other else "error")
        enc.schema_ = copy.deepcopy(schema)
        enc.schema_.label = enc.schema_.positive_label = enc.schema_.classes = None
        return enc

    def to_schema(
        self,
        label: str | None = None,
        positive_label: str | None = None,
        classes: Sequence[str] | None = None,
    ) -> Schema:
        """A copy of the fitted schema, with the label column's description added."""
        self._check_fitted()
        schema = copy.deepcopy(self.schema_)
        schema.label = label
        schema.positive_label = None if positive_label is None else str(positive_label)
        schema.classes = None if classes is None else [str(c) for c in classes]
        return schema

    def _check_fitted(self) -> None:
        if self.schema_ is None:
            raise AggMRFError("this Encoder is not fitted yet; call .fit(train_df) first.")

    @property
    def feature_names(self) -> list[str]:
        """Feature (column) names, D."""
        self._check_fitted()
        return self.schema_.feature_names

    @property
    def kinds(self) -> list[str]:
        """Kind of each feature, "numeric" or "categorical", D."""
        self._check_fitted()
        return self.schema_.kinds

    @property
    def modality_labels(self) -> list[list[str]]:
        """Label of each code, D lists of str."""
        self._check_fitted()
        return self.schema_.modality_labels

    @property
    def n_modalities(self) -> np.ndarray:
        """Modalities per feature, int64 (D,)."""
        self._check_fitted()
        return self.schema_.n_modalities

    @property
    def edges(self) -> list[np.ndarray | None]:
        """Per numeric feature the lower edges of bins 1..M-1 (float64); None if categorical."""
        self._check_fitted()
        return [None if e is None else np.asarray(e, dtype=np.float64) for e in self.schema_.edges]

    # ------------------------------------------------------------------ fit
    def fit(self, df: pd.DataFrame) -> Encoder:
        """Learn modalities from ``df`` (n rows, D feature columns); returns self."""
        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(f"Encoder.fit expects a pandas DataFrame; got {type(df).__name__}.")
        if df.shape[1] == 0:
            raise AggMRFError(
                "Encoder.fit got a DataFrame without columns; give it feature columns."
            )
        if len(df) == 0:
            raise AggMRFError(
                "Encoder.fit got zero rows; it needs records to learn modalities from."
            )
        names = [str(c) for c in df.columns]
        if len(set(names)) != len(names):
            dup = sorted({c for c in names if names.count(c) > 1})
            raise AggMRFError(f"duplicate column names {dup}; rename them before encoding.")
        check_no_missing(df)
        fitted = [self._fit_column(col, df[col]) for col in df.columns]
        self.schema_ = Schema(
            feature_names=names,
            modality_labels=[f.labels for f in fitted],
            kinds=[f.kind for f in fitted],
            edges=[f.edges for f in fitted],
            known=[f.known for f in fitted],
            codes=[f.codes for f in fitted],
            values=[f.values for f in fitted],
            unseen=[self.unseen if f.kind == "categorical" else "error" for f in fitted],
        )
        return self

    def _fit_column(self, col, s: pd.Series) -> _Fitted:
        is_num = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
        if isinstance(s.dtype, pd.CategoricalDtype):
            is_num = False
        if not is_num:
            return self._fit_categorical(col, s, values=None, numeric=False)
        x = s.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise AggMRFError(
                f"column {col!r} has {int((~np.isfinite(x)).sum())} infinite value(s); "
                "replace or drop them before encoding."
            )
        uniq = np.unique(x)
        if uniq.size > self.max_categorical_numeric:
            return self._fit_numeric(x, uniq)
        return self._fit_categorical(col, s, values=uniq, numeric=True)

    def _fit_numeric(self, x: np.ndarray, uniq: np.ndarray) -> _Fitted:
        lo, hi = uniq[0], uniq[-1]
        q = np.quantile(x, np.arange(1, self.n_bins) / self.n_bins)
        # right-closed cut points c: x <= c goes below.  A cut at the max would leave an
        # empty top bin: move it just below the max so that a mass point there keeps a bin.
        below_max = uniq[-2]
        cuts = np.unique(np.where(q >= hi, below_max, q))
        # equivalent left-closed edges at observed values: first observed value above each cut
        edges = np.unique(uniq[np.searchsorted(uniq, cuts, side="right")])
        edges = edges[(edges > lo) & (edges <= hi)]
        bounds = [lo, *edges.tolist(), hi]
        labels = _distinct(lambda fmt: _labels_of_bins(bounds, fmt))
        return _Fitted("numeric", labels, edges=[float(v) for v in edges], values="number")

    def _fit_categorical(self, col, s: pd.Series, values, numeric: bool) -> _Fitted:
        if numeric:
            known = pd.Index(values)
            labels = _distinct(lambda fmt: [fmt(v) for v in values])
            counts = pd.Series(s.to_numpy(dtype=np.float64)).value_counts()
            cnt = counts.reindex(known, fill_value=0).to_numpy()
        else:
            fcodes, uniq = factorize_str(s)
            counts = (
                pd.Series(
                    np.bincount(fcodes, minlength=len(uniq)), index=pd.Index(uniq, dtype=object)
                )
                .groupby(level=0)
                .sum()
            )
            present = set(counts.index)
            if isinstance(s.dtype, pd.CategoricalDtype):
                cats = list(dict.fromkeys(str(c).strip() for c in s.cat.categories))
                cats += sorted(present - set(cats), key=natural_key)
            else:
                cats = sorted(present, key=natural_key)
            known = pd.Index(cats, dtype=object)
            labels = list(cats)
            cnt = counts.reindex(known, fill_value=0).to_numpy()
        # which known values keep their own modality
        keep = np.ones(len(known), dtype=bool)
        if self.min_count > 1:
            keep &= cnt >= self.min_count
        if self.max_modalities is not None and keep.sum() > self.max_modalities:
            order = np.argsort(-cnt, kind="stable")
            kept = [i for i in order if keep[i]][: self.max_modalities - 1]
            keep[:] = False
            keep[kept] = True
        need_other = self.unseen == "other" or not keep.all()
        if OTHER in labels and need_other:
            raise AggMRFError(
                f"column {col!r} already has a value {OTHER!r}, which the encoder reserves for "
                "merged/unseen categories; rename that value."
            )
        new_labels = [lab for lab, k in zip(labels, keep, strict=True) if k]
        codes = np.cumsum(keep) - 1
        if need_other:
            codes = np.where(keep, codes, len(new_labels))
            new_labels.append(OTHER)
        return _Fitted(
            "categorical",
            new_labels,
            known=[float(v) for v in known] if numeric else [str(v) for v in known],
            codes=[int(c) for c in codes],
            values="number" if numeric else "string",
        )

    # ------------------------------------------------------------------ transform
    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """Encode records: int32 codes of shape (n, D), feature f in 0..M_f-1.

        ``df`` must hold the fitted feature columns (extra columns are ignored); this is
        ``schema_.transform(df)``, the one records → codes path.
        """
        self._check_fitted()
        return self.schema_.transform(df)

    def fit_transform(self, df: pd.DataFrame) -> np.ndarray:
        """``fit(df).transform(df)``: int32 codes of shape (n, D)."""
        return self.fit(df).transform(df)

    def inverse_transform(self, X: np.ndarray) -> pd.DataFrame:
        """Modality labels of codes X (n, D) as a DataFrame of strings (n rows, D columns)."""
        self._check_fitted()
        X = np.asarray(X)
        D = len(self.feature_names)
        if X.ndim != 2 or X.shape[1] != D:
            raise AggMRFError(f"codes must have shape (n, {D}); got {X.shape}.")
        if X.size and (np.any(X < 0) or np.any(X >= self.n_modalities[None, :])):
            raise AggMRFError("codes out of range 0..M_f-1; were they produced by this encoder?")
        return pd.DataFrame(
            {
                f: np.asarray(self.modality_labels[j], dtype=object)[X[:, j]]
                for j, f in enumerate(self.feature_names)
            }
        )

    @property
    def inverse_labels(self) -> list[list[str]]:
        """Alias of ``modality_labels``: label of each code, D lists of str."""
        return self.modality_labels

    def describe(self) -> pd.DataFrame:
        """One row per feature: name, kind, number of modalities, labels."""
        self._check_fitted()
        return pd.DataFrame(
            {
                "feature": self.feature_names,
                "kind": self.kinds,
                "n_modalities": self.n_modalities,
                "modalities": [", ".join(lab) for lab in self.modality_labels],
            }
        )

    def __repr__(self) -> str:
        state = f", D={len(self.feature_names)}" if self.schema_ is not None else ""
        return f"Encoder(n_bins={self.n_bins}, unseen={self.unseen!r}{state})"
