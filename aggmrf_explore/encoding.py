"""Schema: turn a DataFrame of raw records into integer codes, one categorical feature per column.

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
  ``"[25, 33)"``; the first and last bin show the training min / max.
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

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import AggMRFError

__all__ = ["Encoder", "encode_label", "OTHER", "check_no_missing"]

OTHER = "(other)"
_UNSEEN_POLICIES = ("error", "other")


def _natural_key(s: str) -> tuple:
    return tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", s) if p != ""
    )


def _fmt_number(v: float) -> str:
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def _factorize_str(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes (n,) int64 with -1 for NaN, stripped string of each distinct value).

    Strips only the distinct values: much faster than ``s.str.strip()`` on large columns.
    """
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    return codes, np.asarray([str(u).strip() for u in uniq], dtype=object)


def _missing_mask(s: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        return s.isna().to_numpy(dtype=bool, copy=True)
    codes, uniq = _factorize_str(s)
    blank = np.asarray([u == "" for u in uniq], dtype=bool)
    return (codes < 0) | (blank[codes] & (codes >= 0))


def check_no_missing(
    df: pd.DataFrame,
    columns: Sequence[str] | None = None,
    what: str = "",
    line_offset: int | None = None,
) -> None:
    """Raise AggMRFError if any of ``columns`` (default: all) has NaN / None / empty cells.

    ``what`` is appended to the column name in the message (e.g. " of 'data.csv'");
    ``line_offset``, for frames read from a file, turns row positions into file line numbers.
    """
    for col in df.columns if columns is None else columns:
        mask = _missing_mask(df[col])
        k = int(mask.sum())
        if k:
            pos = int(np.flatnonzero(mask)[0])
            if line_offset is not None:
                where = f"first on line {pos + line_offset}"
                todo = "Fill the empty cells in the file or delete those lines"
            else:
                where = f"first at row {df.index[pos]!r}"
                todo = (
                    f"Fill them (df[{col!r}] = df[{col!r}].fillna(value)) or drop those rows "
                    f"(df = df.dropna(subset=[{col!r}]))"
                )
            raise AggMRFError(
                f"column {col!r}{what} has {k} missing (NaN or empty) value(s) out of {len(df)} "
                f"rows ({where}). {todo} before encoding."
            )


def to_float(name: str, s: pd.Series) -> np.ndarray:
    """A numeric column as float64 (n,); AggMRFError naming the column on text or inf values."""
    try:
        x = pd.to_numeric(s, errors="raise").to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        bad = s[pd.to_numeric(s, errors="coerce").isna()]
        raise AggMRFError(
            f"column {name!r} must be numeric (it was at fit time) but has {len(bad)} "
            f"non-numeric value(s) here (e.g. {bad.iloc[0]!r}); clean the column."
        ) from None
    if not np.all(np.isfinite(x)):
        raise AggMRFError(f"column {name!r} has infinite values; replace or drop them.")
    return x


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

    Fitted attributes: ``feature_names`` (list, D), ``n_modalities`` (int64, shape (D,)),
    ``modality_labels`` (= ``inverse_labels``, D lists of str), ``kinds`` ("numeric" or
    "categorical" per feature), ``edges`` (per numeric feature: the lower edges of bins
    1..M-1, float64; None for categorical features).
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
        self._fitted = False

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
        self.feature_names = names
        self.kinds: list[str] = []
        self.edges: list[np.ndarray | None] = []
        self.modality_labels: list[list[str]] = []
        self._cat_values: list[pd.Index | None] = []  # known values per categorical feature
        self._cat_codes: list[np.ndarray | None] = []  # code of each known value
        self._other_code: list[int | None] = []
        self._numeric_values: list[bool] = []
        for col in df.columns:
            s = df[col]
            is_num = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(
                s.dtype
            )
            if isinstance(s.dtype, pd.CategoricalDtype):
                is_num = False
            if is_num:
                x = s.to_numpy(dtype=np.float64)
                if not np.all(np.isfinite(x)):
                    raise AggMRFError(
                        f"column {col!r} has {int((~np.isfinite(x)).sum())} infinite value(s); "
                        "replace or drop them before encoding."
                    )
                uniq = np.unique(x)
                if uniq.size > self.max_categorical_numeric:
                    self._fit_numeric(x, uniq)
                    continue
                self._fit_categorical(col, s, values=uniq, numeric=True)
            else:
                self._fit_categorical(col, s, values=None, numeric=False)
        self.n_modalities = np.asarray([len(lab) for lab in self.modality_labels], dtype=np.int64)
        self._fitted = True
        return self

    def _fit_numeric(self, x: np.ndarray, uniq: np.ndarray) -> None:
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
        labels = []
        for i in range(len(bounds) - 1):
            a, b = _fmt_number(bounds[i]), _fmt_number(bounds[i + 1])
            last = i == len(bounds) - 2
            if last and a == b:
                labels.append(a)  # a mass point at the maximum
            else:
                labels.append(f"[{a}, {b}]" if last else f"[{a}, {b})")
        self.kinds.append("numeric")
        self.edges.append(edges.astype(np.float64))
        self.modality_labels.append(labels)
        self._cat_values.append(None)
        self._cat_codes.append(None)
        self._other_code.append(None)
        self._numeric_values.append(True)

    def _fit_categorical(self, col, s: pd.Series, values, numeric: bool) -> None:
        if numeric:
            known = pd.Index(values)
            labels = [_fmt_number(v) for v in values]
            counts = pd.Series(s.to_numpy(dtype=np.float64)).value_counts()
            cnt = counts.reindex(known, fill_value=0).to_numpy()
        else:
            fcodes, uniq = _factorize_str(s)
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
                cats += sorted(present - set(cats), key=_natural_key)
            else:
                cats = sorted(present, key=_natural_key)
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
        other = None
        if need_other:
            other = len(new_labels)
            new_labels.append(OTHER)
            codes = np.where(keep, codes, other)
        self.kinds.append("categorical")
        self.edges.append(None)
        self.modality_labels.append(new_labels)
        self._cat_values.append(known)
        self._cat_codes.append(codes.astype(np.int32))
        self._other_code.append(other)
        self._numeric_values.append(numeric)

    # ------------------------------------------------------------------ transform
    def _check_fitted(self) -> None:
        if not getattr(self, "_fitted", False):
            raise AggMRFError("this Encoder is not fitted yet; call .fit(train_df) first.")

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """Encode records: returns int32 codes of shape (n, D), feature f in 0..M_f-1.

        ``df`` must hold the fitted feature columns (extra columns are ignored).
        """
        self._check_fitted()
        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(
                f"Encoder.transform expects a pandas DataFrame; got {type(df).__name__}."
            )
        cols = {str(c): c for c in df.columns}
        missing = [f for f in self.feature_names if f not in cols]
        if missing:
            raise AggMRFError(
                f"columns {missing} were present at fit time but are missing here; "
                f"available columns: {list(cols)}."
            )
        sub = df[[cols[f] for f in self.feature_names]]
        check_no_missing(sub)
        X = np.empty((len(df), len(self.feature_names)), dtype=np.int32)
        for j, name in enumerate(self.feature_names):
            s = sub.iloc[:, j]
            if self.kinds[j] == "numeric":
                X[:, j] = self._transform_numeric(name, s, self.edges[j])
            else:
                X[:, j] = self._transform_categorical(j, name, s)
        return X

    def _transform_numeric(self, name: str, s: pd.Series, edges: np.ndarray) -> np.ndarray:
        x = to_float(name, s)
        return np.searchsorted(edges, x, side="right").astype(np.int32)

    def _transform_categorical(self, j: int, name: str, s: pd.Series) -> np.ndarray:
        known = self._cat_values[j]
        if self._numeric_values[j]:
            x = to_float(name, s)
            idx = known.get_indexer(x)
            raw = x
        else:
            fcodes, uniq = _factorize_str(s)
            idx = known.get_indexer(uniq)[fcodes]
            raw = uniq[fcodes]
        unseen = idx < 0
        codes = self._cat_codes[j][np.where(unseen, 0, idx)]
        if unseen.any():
            other = self._other_code[j]
            if self.unseen == "error":
                bad = np.asarray(raw)[unseen]
                if self._numeric_values[j]:
                    bad = np.asarray([_fmt_number(v) for v in bad], dtype=object)
                vals, cnt = np.unique(bad.astype(str), return_counts=True)
                order = np.argsort(-cnt, kind="stable")
                shown = ", ".join(f"{str(vals[i])!r} ({int(cnt[i])} rows)" for i in order[:10])
                more = f" and {len(vals) - 10} more" if len(vals) > 10 else ""
                raise AggMRFError(
                    f"column {name!r} has {int(unseen.sum())} row(s) with value(s) not seen at fit "
                    f"time: {shown}{more}. Pass unseen='other' (command line: --unseen other) to map them to an extra "
                    f"'{OTHER}' modality, or fit on data that contains them."
                )
            codes = np.where(unseen, other, codes)
        return codes.astype(np.int32)

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
        self._check_fitted()
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
        state = f", D={len(self.feature_names)}" if getattr(self, "_fitted", False) else ""
        return f"Encoder(n_bins={self.n_bins}, unseen={self.unseen!r}{state})"


# ---------------------------------------------------------------------- labels
_KNOWN_PAIRS = {
    ("0", "1"): "1",
    ("-1", "1"): "1",
    ("false", "true"): "true",
    ("no", "yes"): "yes",
    ("n", "y"): "y",
    ("f", "t"): "t",
}


def _label_strings(series: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(series.dtype):
        return np.where(series.to_numpy(dtype=bool), "True", "False").astype(object)
    if pd.api.types.is_numeric_dtype(series.dtype):
        return np.asarray([_fmt_number(v) for v in series.to_numpy(dtype=np.float64)], dtype=object)
    codes, uniq = _factorize_str(series)
    return np.where(codes >= 0, uniq[np.maximum(codes, 0)] if len(uniq) else "", "nan")


def encode_label(
    series: pd.Series | Sequence,
    positive: object | None = None,
    *,
    classes: Sequence[object] | None = None,
) -> tuple[np.ndarray, str]:
    """Map a binary label column to 0/1.

    Returns ``(y, positive_label)``: y int8 of shape (n,), and the value (as str) mapped to 1.

    Which value is positive: ``positive`` if given; otherwise, case-insensitively,
    1 of {0, 1}, 1 of {-1, 1}, true of {false, true}, yes of {no, yes}, y of {n, y}, t of {f, t};
    otherwise the lexicographically larger string (so ">50K" over "<=50K").
    ``classes`` (the two class values, e.g. from the training split) allows a column where
    only one of them occurs (a small test split) and rejects any other value.
    """
    s = series if isinstance(series, pd.Series) else pd.Series(list(series))
    name = f" {s.name!r}" if s.name is not None else ""
    if len(s) == 0:
        raise AggMRFError(f"label column{name} is empty.")
    miss = _missing_mask(s)
    if miss.any():
        raise AggMRFError(
            f"label column{name} has {int(miss.sum())} missing (NaN or empty) value(s) out of {len(s)} "
            "rows; drop those rows (df.dropna(subset=[label])) before encoding."
        )
    vals = _label_strings(s)
    uniq, cnt = np.unique(vals.astype(str), return_counts=True)
    if classes is not None:
        cls = [str(c) for c in _label_strings(pd.Series(list(classes)))]
        if len(set(cls)) != 2:
            raise AggMRFError(f"classes must be two distinct values; got {list(classes)}.")
        extra = [str(u) for u in uniq if str(u) not in cls]
        if extra:
            raise AggMRFError(
                f"label column{name} has value(s) {extra} outside the two classes {cls}; "
                "the test split must use the training split's label values."
            )
        pair = sorted(cls)
    else:
        if len(uniq) > 2:
            order = np.argsort(-cnt, kind="stable")
            shown = ", ".join(f"{str(uniq[i])!r} ({int(cnt[i])})" for i in order[:20])
            raise AggMRFError(
                f"label column{name} has {len(uniq)} distinct values, the model needs exactly two: "
                f"{shown}. Map it to two classes first (e.g. df[label] = df[label] == value)."
            )
        if len(uniq) < 2:
            raise AggMRFError(
                f"label column{name} has a single class ({str(uniq[0])!r} in all {len(s)} rows); "
                "a binary model needs both classes present."
            )
        pair = sorted(str(u) for u in uniq)
    if positive is not None:
        pos = str(_label_strings(pd.Series([positive]))[0])
        if pos not in pair:
            low = {p.lower(): p for p in pair}
            if pos.lower() in low:
                pos = low[pos.lower()]
            else:
                raise AggMRFError(f"positive={positive!r} is not one of the label values {pair}.")
    else:
        key = tuple(sorted(p.lower() for p in pair))
        if key in _KNOWN_PAIRS and len({p.lower() for p in pair}) == 2:
            want = _KNOWN_PAIRS[key]
            pos = next(p for p in pair if p.lower() == want)
        else:
            pos = max(pair)
    y = (vals.astype(str) == pos).astype(np.int8)
    return y, pos
