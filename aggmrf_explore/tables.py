"""Contingency tables: which projections are released, and aggregation of records into them.

A *table* is a tuple of feature indices (arity 0 to 3).  The arity-0 table is the
*intercept*: one row in which every record is counted (d = n, c = number of positives).
Row index of a record x in table t::

    offset[t] + sum_f code_f(x) * stride[t, f]      (row-major over the table's features)

so φ(x) ∈ {0,1}^K marks exactly one row per table, K = Σ_t Π_{f∈t} M_f.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import AggMRFError

__all__ = ["TableLayout", "AggregatedData", "aggregate"]

MAX_ARITY = 3


class TableLayout:
    """Which tables are released for D categorical features.

    Parameters
    ----------
    n_modalities : sequence of int, shape (D,)
        Number of modalities M_f of each feature (codes are 0 .. M_f - 1).
    tables : sequence of tuples of int
        The released tables, each a tuple of distinct feature indices (arity 1..3).
    feature_names : optional names, shape (D,)
    intercept : bool
        Add the arity-0 intercept table (row 0).  It is not a released table: under
        privacy noise its count and label sum are derived from the released tables.
    modality_labels : optional list of D lists of str, for display.
    """

    def __init__(
        self,
        n_modalities: Sequence[int],
        tables: Sequence[Sequence[int]],
        feature_names: Sequence[str] | None = None,
        intercept: bool = True,
        modality_labels: Sequence[Sequence[str]] | None = None,
    ) -> None:
        m = np.asarray(n_modalities, dtype=np.int64)
        if m.ndim != 1 or m.size == 0:
            raise AggMRFError("n_modalities must be a non-empty 1-d sequence of integers.")
        if np.any(m < 1):
            raise AggMRFError(f"every feature needs at least one modality; got {m.tolist()}.")
        self.n_modalities = m
        D = m.size
        self.feature_names = (
            list(feature_names) if feature_names is not None else [f"x{f}" for f in range(D)]
        )
        if len(self.feature_names) != D:
            raise AggMRFError(
                f"{len(self.feature_names)} feature names for {D} features; give one name per feature."
            )
        self.modality_labels = (
            [list(map(str, labels)) for labels in modality_labels]
            if modality_labels is not None
            else [[str(v) for v in range(M)] for M in m]
        )
        clean: list[tuple[int, ...]] = []
        for t in tables:
            t = tuple(int(f) for f in t)
            if not 1 <= len(t) <= MAX_ARITY:
                raise AggMRFError(
                    f"table {t} has arity {len(t)}; tables have 1 to {MAX_ARITY} features."
                )
            if len(set(t)) != len(t) or any(not 0 <= f < D for f in t):
                raise AggMRFError(f"table {t} must list distinct feature indices in 0..{D - 1}.")
            t = tuple(sorted(t))
            if t in clean:
                raise AggMRFError(f"table {t} is listed twice.")
            clean.append(t)
        if not clean:
            raise AggMRFError(
                "a layout needs at least one table (e.g. TableLayout.all_pairs(...))."
            )
        self.intercept = bool(intercept)
        self.tables: list[tuple[int, ...]] = ([()] if intercept else []) + clean
        sizes = [int(np.prod(m[list(t)])) if t else 1 for t in self.tables]
        self.table_sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.table_sizes)]).astype(np.int64)
        self.K = int(self.offsets[-1])
        # strides[t, f]: stride of feature f in table t (0 when f is not in t)
        strides = np.zeros((len(self.tables), D), dtype=np.int64)
        for ti, t in enumerate(self.tables):
            s = 1
            for f in reversed(t):
                strides[ti, f] = s
                s *= int(m[f])
        self.strides = strides

    # ------------------------------------------------------------------ constructors
    @classmethod
    def all_pairs(
        cls,
        n_modalities: Sequence[int],
        feature_names: Sequence[str] | None = None,
        singles: bool = True,
        pairs: bool = True,
        triples: bool = False,
        intercept: bool = True,
        modality_labels: Sequence[Sequence[str]] | None = None,
    ) -> TableLayout:
        """Every single-feature table, every pair table (and optionally every triple)."""
        D = len(n_modalities)
        tables: list[tuple[int, ...]] = []
        if singles:
            tables += [(f,) for f in range(D)]
        if pairs:
            tables += list(itertools.combinations(range(D), 2))
        if triples:
            tables += list(itertools.combinations(range(D), 3))
        if not tables:
            raise AggMRFError(
                "no tables selected: ask for singles, pairs or triples (with one feature, only singles exist)."
            )
        return cls(n_modalities, tables, feature_names, intercept, modality_labels)

    # ------------------------------------------------------------------ properties
    @property
    def n_features(self) -> int:
        return int(self.n_modalities.size)

    @property
    def n_tables(self) -> int:
        """Number of tables including the intercept."""
        return len(self.tables)

    @property
    def n_released_tables(self) -> int:
        """T: the tables a release publishes (the intercept is derived, not released)."""
        return len(self.tables) - int(self.intercept)

    @property
    def released(self) -> np.ndarray:
        """Boolean mask over the K rows: True for rows of released tables."""
        mask = np.ones(self.K, dtype=bool)
        if self.intercept:
            mask[0] = False
        return mask

    def table_index(self, features: Sequence[int | str]) -> int:
        """Index of the table over these features (indices or names)."""
        idx = tuple(sorted(self._feature_index(f) for f in features))
        try:
            return self.tables.index(idx)
        except ValueError:
            raise AggMRFError(
                f"no table over {self.table_name(idx) if idx else '()'}; available: "
                + ", ".join(self.table_names)
            ) from None

    def _feature_index(self, f: int | str) -> int:
        if isinstance(f, str):
            if f not in self.feature_names:
                raise AggMRFError(f"unknown feature {f!r}; features are {self.feature_names}.")
            return self.feature_names.index(f)
        return int(f)

    def table_name(self, t: tuple[int, ...]) -> str:
        return " × ".join(self.feature_names[f] for f in t) if t else "intercept"

    @property
    def table_names(self) -> list[str]:
        return [self.table_name(t) for t in self.tables]

    def row_table(self) -> np.ndarray:
        """Table index of each of the K rows, shape (K,)."""
        return np.repeat(np.arange(self.n_tables), self.table_sizes)

    # ------------------------------------------------------------------ encoding
    def check_codes(self, X: np.ndarray) -> np.ndarray:
        """Validate an integer code matrix of shape (n, D); returns it as int32."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise AggMRFError(
                f"codes must have shape (n, {self.n_features}); got {X.shape}. Encode records first."
            )
        if X.size and not np.issubdtype(X.dtype, np.integer):
            raise AggMRFError("codes must be integers; encode records with encoding.Encoder first.")
        if X.size and (np.any(X < 0) or np.any(X >= self.n_modalities[None, :])):
            bad = np.argwhere((X < 0) | (X >= self.n_modalities[None, :]))[0]
            raise AggMRFError(
                f"code {int(X[bad[0], bad[1]])} of feature {self.feature_names[bad[1]]!r} (record {bad[0]}) "
                f"is outside 0..{int(self.n_modalities[bad[1]]) - 1}."
            )
        return X.astype(np.int32, copy=False)

    def rows(self, X: np.ndarray) -> np.ndarray:
        """Row index of each record in each table, shape (n, n_tables), int64."""
        X = self.check_codes(X)
        return self.offsets[:-1][None, :] + X.astype(np.int64) @ self.strides.T

    def phi(self, X: np.ndarray):
        """φ(X) as a scipy CSR matrix of shape (n, K) with one 1 per table per record."""
        import scipy.sparse as sp

        r = self.rows(X)
        n, T = r.shape
        data = np.ones(n * T, dtype=np.float64)
        indptr = np.arange(0, n * T + 1, T)
        return sp.csr_matrix((data, r.ravel(), indptr), shape=(n, self.K))

    def row_codes(self, t: int) -> np.ndarray:
        """Codes of the features of table t for each of its rows, shape (size_t, arity)."""
        feats = self.tables[t]
        if not feats:
            return np.zeros((1, 0), dtype=np.int64)
        grids = np.meshgrid(*[np.arange(self.n_modalities[f]) for f in feats], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    # ------------------------------------------------------------------ kernel view
    def kernel_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays the Gibbs kernel needs (CSR from features to the tables holding them)."""
        D = self.n_features
        ptr = [0]
        tab: list[int] = []
        stride: list[int] = []
        for f in range(D):
            for ti, t in enumerate(self.tables):
                if f in t:
                    tab.append(ti)
                    stride.append(int(self.strides[ti, f]))
            ptr.append(len(tab))
        return {
            "n_modalities": self.n_modalities.astype(np.int64),
            "feat_ptr": np.asarray(ptr, dtype=np.int64),
            "feat_tables": np.asarray(tab, dtype=np.int64),
            "feat_strides": np.asarray(stride, dtype=np.int64),
            "offsets": self.offsets[:-1].astype(np.int64),
            "strides": self.strides.astype(np.int64),
        }

    def __repr__(self) -> str:
        return (
            f"TableLayout(D={self.n_features}, tables={self.n_tables} "
            f"({self.n_released_tables} released{' + intercept' if self.intercept else ''}), K={self.K})"
        )


@dataclass
class AggregatedData:
    """All the learner may see: counts d, label sums c (shape (K,), float64) and n.

    ``d`` and ``c`` are the values the trainer uses.  When a privacy mechanism made a
    noisy release, ``true_d`` and ``true_c`` keep the exact aggregates beside it (for
    teaching plots only; the trainer never reads them) and ``noise`` remembers the
    mechanism.
    """

    layout: TableLayout
    d: np.ndarray
    c: np.ndarray
    n: int
    true_d: np.ndarray | None = None
    true_c: np.ndarray | None = None
    noise: object | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.d = np.asarray(self.d, dtype=np.float64)
        self.c = np.asarray(self.c, dtype=np.float64)
        K = self.layout.K
        if self.d.shape != (K,) or self.c.shape != (K,):
            raise AggMRFError(
                f"d and c must have shape ({K},); got {self.d.shape} and {self.c.shape}."
            )
        if not (np.all(np.isfinite(self.d)) and np.all(np.isfinite(self.c))):
            raise AggMRFError("aggregated counts contain NaN or inf; check the source tables.")
        if int(self.n) <= 0:
            raise AggMRFError(f"n must be a positive number of records; got {self.n}.")
        self.n = int(self.n)

    @property
    def is_noisy(self) -> bool:
        return self.noise is not None

    def table_frame(
        self, t: int | Sequence[int | str], extra: dict[str, np.ndarray] | None = None
    ) -> pd.DataFrame:
        """Table t as a tidy DataFrame: one column per feature (modality labels), count, label_sum.

        ``t`` is a table index or the features of the table.  ``extra`` adds columns
        (arrays of shape (K,), e.g. the model's d̂) restricted to the table's rows.
        """
        lay = self.layout
        ti = t if isinstance(t, int | np.integer) else lay.table_index(t)
        if not 0 <= ti < lay.n_tables:
            raise AggMRFError(f"table index {ti} out of range 0..{lay.n_tables - 1}.")
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        codes = lay.row_codes(ti)
        cols: dict[str, object] = {}
        for j, f in enumerate(lay.tables[ti]):
            labels = np.asarray(lay.modality_labels[f], dtype=object)
            cols[lay.feature_names[f]] = labels[codes[:, j]]
        cols["count"] = self.d[sl]
        cols["label_sum"] = self.c[sl]
        if self.true_d is not None:
            cols["true_count"] = self.true_d[sl]
            cols["true_label_sum"] = self.true_c[sl]
        for name, arr in (extra or {}).items():
            cols[name] = np.asarray(arr)[sl]
        return pd.DataFrame(cols)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table as a DataFrame, keyed by table name."""
        return {name: self.table_frame(i) for i, name in enumerate(self.layout.table_names)}


def aggregate(X: np.ndarray, y: np.ndarray, layout: TableLayout) -> AggregatedData:
    """Aggregate coded records into the layout's tables.

    X : int codes, shape (n, D);  y : labels in {0, 1}, shape (n,).
    Returns d = Σ_i φ(x_i) and c = Σ_i y_i φ(x_i), both shape (K,).
    """
    X = layout.check_codes(X)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise AggMRFError(f"y must have shape ({X.shape[0]},); got {y.shape}.")
    if X.shape[0] == 0:
        raise AggMRFError("cannot aggregate zero records.")
    if not np.all((y == 0) | (y == 1)):
        raise AggMRFError("labels must be 0 or 1; encode the label column first.")
    r = layout.rows(X).ravel()
    yy = np.repeat(y.astype(np.float64), layout.n_tables)
    d = np.bincount(r, minlength=layout.K).astype(np.float64)
    c = np.bincount(r, weights=yy, minlength=layout.K)
    return AggregatedData(layout, d, c, X.shape[0])
