"""How raw column values are read before encoding: missing cells, numbers as labels,
strings stripped once per distinct value, and the binary label column (which value is
the positive class).

Pure functions of pandas Series; :mod:`aggmrf_explore.encoding` builds on them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import AggMRFError

__all__ = [
    "natural_key",
    "format_number",
    "format_number_full",
    "factorize_str",
    "missing_mask",
    "check_no_missing",
    "to_float",
    "label_strings",
    "encode_label",
]


def natural_key(s: str) -> tuple:
    """A sort key that orders "x2" before "x10" (digit runs compared as numbers)."""
    return tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", s) if p != ""
    )


def format_number(v: float) -> str:
    """A number as a modality label: integers without ".0", else 6 significant digits."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def format_scale(v: float) -> str:
    """A positive size for a legend (a noise's σ, counts): three significant digits, never
    in exponent notation from 1 000 on ("1,234", not "1.23e+03": read on a projector)."""
    v = float(v)
    if math.isfinite(v) and abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def format_number_full(v: float) -> str:
    """A number as a label without rounding (shortest repr that reads back exactly)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def factorize_str(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes (n,) int64 with -1 for NaN, stripped string of each distinct value).

    Strips only the distinct values: much faster than ``s.str.strip()`` on large columns.
    """
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    return codes, np.asarray([str(u).strip() for u in uniq], dtype=object)


def missing_mask(s: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        return s.isna().to_numpy(dtype=bool, copy=True)
    codes, uniq = factorize_str(s)
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
        mask = missing_mask(df[col])
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


# ---------------------------------------------------------------------- labels
_KNOWN_PAIRS = {
    ("0", "1"): "1",
    ("-1", "1"): "1",
    ("false", "true"): "true",
    ("no", "yes"): "yes",
    ("n", "y"): "y",
    ("f", "t"): "t",
}


def label_strings(series: pd.Series) -> np.ndarray:
    """The label values as strings, object (n,): numbers as ``encode_label`` writes them
    ("1" not "1.0"), booleans as "True"/"False", missing as "nan"."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return np.where(series.to_numpy(dtype=bool), "True", "False").astype(object)
    if pd.api.types.is_numeric_dtype(series.dtype):
        return np.asarray(
            [format_number(v) for v in series.to_numpy(dtype=np.float64)], dtype=object
        )
    codes, uniq = factorize_str(series)
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
    miss = missing_mask(s)
    if miss.any():
        raise AggMRFError(
            f"label column{name} has {int(miss.sum())} missing (NaN or empty) value(s) out of {len(s)} "
            "rows; drop those rows (df.dropna(subset=[label])) before encoding."
        )
    vals = label_strings(s)
    uniq, cnt = np.unique(vals.astype(str), return_counts=True)
    if classes is not None:
        cls = [str(c) for c in label_strings(pd.Series(list(classes)))]
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
        pos = str(label_strings(pd.Series([positive]))[0])
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


# ====================================================================== high cardinality
# High-cardinality encoders: target encoding and hashed crosses
