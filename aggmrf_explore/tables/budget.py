"""The size budget: how big the tables of a layout would be, checked before anything is allocated.

A layout's table rows K = Σ_tables Π_{f in table} M_f grow with the product of modality
counts: two 20 000-value ID columns make one pair table of 4·10⁸ rows (3 GiB) from a 430 KB
CSV.  Every entry point estimates the size from the per-feature modality counts M_f and the
table list alone (:func:`estimate_size`) and refuses a layout over the budget
(:func:`check_size`) with a message naming the offending columns and the fixes.  The
records' modality counts are counted without encoding anything (:func:`estimate_modalities`:
one ``nunique`` per column).

Default budget (:class:`Budget`, adjustable: ``--max-rows`` on the command line,
``Budget(max_rows=..., max_bytes=...)`` in Python):

* ``DEFAULT_MAX_ROWS`` = 2·10⁶ table rows K;
* ``DEFAULT_MAX_BYTES`` = 1 GiB of estimated trainer memory: ``BYTES_PER_ROW`` (= 160, about
  twenty float64 vectors of length K: counts, parameters, statistics, step state) per row,
  plus ``BYTES_PER_SAMPLE_FEATURE`` (= 8) per Gibbs sample and feature for the chains.

Used by the command line (records and releases), :func:`aggmrf_explore.io.read_release`,
:func:`aggmrf_explore.io.load_model` and the explorer.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import AggMRFError

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEFAULT_MAX_BYTES",
    "BYTES_PER_ROW",
    "BYTES_PER_SAMPLE_FEATURE",
    "Budget",
    "SizeEstimate",
    "all_pairs_tables",
    "estimate_size",
    "check_size",
    "estimate_modalities",
    "check_records",
    "id_like_columns",
]

DEFAULT_MAX_ROWS = 2_000_000
DEFAULT_MAX_BYTES = 2**30
BYTES_PER_ROW = 160
BYTES_PER_SAMPLE_FEATURE = 8
MAX_CATEGORICAL_NUMERIC = 12  # as Encoder: a numeric column with ≤ 12 values is categorical
_FIXES = (
    "leave them out (--features / --drop-features), use fewer --bins for numeric columns, "
    "merge rare values (--min-count 5), or give them hashed tables "
    "(TableLayout(..., hash_sizes=...); README, 'Data past Adult')"
)


@dataclass(frozen=True)
class Budget:
    """The size limits: ``max_rows`` table rows K and ``max_bytes`` of estimated memory."""

    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        for name in ("max_rows", "max_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise AggMRFError(
                    f"the size budget's {name} must be a positive integer; got {v!r}."
                )


@dataclass(frozen=True)
class SizeEstimate:
    """The size of a layout, from its modality counts alone.

    ``rows``: K (the intercept row included); ``cells``: rows per table (T,), in the order
    given; ``bytes``: estimated trainer memory (rows × BYTES_PER_ROW + Gibbs chains).
    """

    rows: int
    cells: tuple[int, ...]
    bytes: int

    @property
    def largest(self) -> int:
        """Index of the largest table (-1 without tables)."""
        return int(np.argmax(self.cells)) if self.cells else -1


def all_pairs_tables(
    n_features: int, singles: bool = True, pairs: bool = True
) -> list[tuple[int, ...]]:
    """The tables of ``TableLayout.all_pairs``: every single, then every pair (indices)."""
    out: list[tuple[int, ...]] = []
    if singles:
        out += [(f,) for f in range(n_features)]
    if pairs:
        out += list(itertools.combinations(range(n_features), 2))
    return out


def _counts(n_modalities: Sequence[int]) -> list[int]:
    out = []
    for i, m in enumerate(n_modalities):
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 0:
            raise AggMRFError(f"modality count #{i + 1} must be a non-negative integer; got {m!r}.")
        out.append(int(m))
    return out


def estimate_size(
    n_modalities: Sequence[int],
    tables: Sequence[Sequence[int]],
    *,
    n_gibbs: int = 0,
    intercept: bool = True,
) -> SizeEstimate:
    """Rows and memory of the layout with modality counts ``n_modalities`` (D,) and
    ``tables`` (feature indices per table), in exact integers (no allocation, no overflow).
    ``n_gibbs``: Gibbs samples the trainer will keep (0: tables only)."""
    m = _counts(n_modalities)
    cells = []
    for t in tables:
        try:
            cells.append(math.prod(m[int(f)] for f in t))
        except (IndexError, TypeError, ValueError):
            raise AggMRFError(
                f"table {tuple(t)!r} names a feature outside 0..{len(m) - 1}."
            ) from None
    rows = sum(cells) + int(intercept)
    mem = rows * BYTES_PER_ROW + max(int(n_gibbs), 0) * len(m) * BYTES_PER_SAMPLE_FEATURE
    return SizeEstimate(rows, tuple(cells), mem)


def _fmt(n: int) -> str:
    return f"{n:,}" if n < 10**9 else f"{n:.2e}"


def check_size(
    n_modalities: Sequence[int],
    tables: Sequence[Sequence[int]],
    feature_names: Sequence[str] | None = None,
    *,
    budget: Budget | None = None,
    n_gibbs: int = 0,
    intercept: bool = True,
    what: str = "the tables",
) -> SizeEstimate:
    """:func:`estimate_size`, refused over ``budget`` (default :class:`Budget`).

    The error names the largest tables and the columns with the most values, and offers the
    fixes (``--features``, fewer ``--bins``, ``--min-count``, hashed tables, ``--max-rows``).
    ``what`` says what the tables are (e.g. "the release's tables").  Returns the estimate.
    """
    budget = budget or Budget()
    est = estimate_size(n_modalities, tables, n_gibbs=n_gibbs, intercept=intercept)
    if est.rows <= budget.max_rows and est.bytes <= budget.max_bytes:
        return est
    m = _counts(n_modalities)
    names = list(feature_names) if feature_names is not None else [f"#{f}" for f in range(len(m))]
    order = sorted(range(len(tables)), key=lambda i: -est.cells[i])[:2]
    big = "; ".join(
        " × ".join(f"{str(names[f])[:40]} ({_fmt(m[f])} values)" for f in tables[i])
        + f" has {_fmt(est.cells[i])} rows"
        for i in order
    )
    cols = sorted({f for i in order for f in tables[i]}, key=lambda f: -m[f])
    cols = [f for f in cols if m[f] > 1][:4] or cols[:4]
    col_list = ", ".join(repr(str(names[f])[:40]) for f in cols)
    if est.rows > budget.max_rows:
        over = (
            f"{what} would have {_fmt(est.rows)} rows, over the budget of "
            f"{_fmt(budget.max_rows)} rows"
        )
        raise_flag = "--max-rows"
    else:
        over = (
            f"{what} would need about {est.bytes / 2**30:.3g} GiB to train, over the budget of "
            f"{budget.max_bytes / 2**30:.3g} GiB"
            + (f" ({_fmt(int(n_gibbs))} Gibbs samples)" if n_gibbs else "")
        )
        raise_flag = (
            "--max-rows" if est.rows * BYTES_PER_ROW > budget.max_bytes else "--gibbs-samples"
        )
    raise AggMRFError(
        f"{over}: {big} — the columns {col_list} have too many values; {_FIXES}"
        + (
            f"; or lower {raise_flag}"
            if raise_flag == "--gibbs-samples"
            else f"; or raise {raise_flag}"
        )
        + "."
    )


def estimate_modalities(
    frame: pd.DataFrame,
    n_bins: int = 10,
    unseen: str = "error",
    min_count: int = 1,
    max_categorical_numeric: int = MAX_CATEGORICAL_NUMERIC,
) -> list[int]:
    """Modality counts the encoder would give the columns of ``frame`` (n records, D columns),
    counted without encoding: numeric columns with more than ``max_categorical_numeric``
    values get at most ``n_bins`` bins; other columns one modality per value (seen at least
    ``min_count`` times), plus "(other)" when ``unseen == "other"`` or values are merged.
    An upper bound of the encoder's counts.  Returns D ints."""
    out = []
    for j in range(frame.shape[1]):
        s = frame.iloc[:, j]
        numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
        if isinstance(s.dtype, pd.CategoricalDtype):
            numeric = False
        if min_count > 1:
            vc = s.value_counts(dropna=True)
            distinct = int(len(vc))
            kept = int((vc >= min_count).sum())
        else:
            distinct = kept = int(s.nunique(dropna=True))
        if numeric and distinct > max_categorical_numeric:
            out.append(min(distinct, int(n_bins)))
            continue
        other = unseen == "other" or kept < distinct
        out.append(max(kept + int(other), 1))
    return out


def id_like_columns(
    frame: pd.DataFrame, modalities: Sequence[int], min_values: int = 1000
) -> list[str]:
    """Columns of ``frame`` whose modality count is at least ``min_values`` and more than half
    the records: record identifiers, whose tables teach the model nothing."""
    n = len(frame)
    return [
        str(c)
        for c, m in zip(frame.columns, modalities, strict=True)
        if m >= min_values and m > 0.5 * n
    ]


def check_records(
    frame: pd.DataFrame,
    *,
    n_bins: int = 10,
    unseen: str = "error",
    min_count: int = 1,
    singles: bool = True,
    pairs: bool = True,
    budget: Budget | None = None,
    n_gibbs: int = 0,
) -> SizeEstimate:
    """The size check of the all-pairs tables of records ``frame`` (the feature columns only),
    before encoding: :func:`estimate_modalities` then :func:`check_size`; then record-ID
    columns (:func:`id_like_columns`) are refused: every value is its own modality."""
    mods = estimate_modalities(frame, n_bins, unseen, min_count)
    tables = all_pairs_tables(frame.shape[1], singles, pairs)
    est = check_size(
        mods,
        tables,
        [str(c) for c in frame.columns],
        budget=budget,
        n_gibbs=n_gibbs,
        what="the tables of these records",
    )
    ids = id_like_columns(frame, mods)
    if ids:
        shown = ", ".join(repr(c[:40]) for c in ids[:4])
        raise AggMRFError(
            f"the column(s) {shown} have almost one value per record ({_fmt(max(mods))} values in "
            f"{_fmt(len(frame))} records): identifiers, whose tables teach the model nothing and "
            f"cost memory; {_FIXES}."
        )
    return est
