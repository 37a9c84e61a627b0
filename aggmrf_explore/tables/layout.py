"""Contingency tables: which projections are released, and aggregation of records into them.

A *table* is a tuple of feature indices (arity 0 to 3).  The arity-0 table is the
*intercept*: one row in which every record is counted (d = n, c = number of positives).
Row index of a record x in table t::

    offset[t] + sum_f code_f(x) * stride[t, f]      (row-major over the table's features)

so φ(x) ∈ {0,1}^K marks exactly one row per table, K = Σ_t Π_{f∈t} M_f.

Hashed tables (the paper's section 4.3, φ_H = 𝓗 φ)
---------------------------------------------------
A table may instead be *hashed* into H rows (``hash_sizes={("site", "advertiser"): 4096}``)::

    offset[t] + hash_t(Σ_f code_f(x) * stride[t, f])      (H rows, whatever Π M_f)

``Σ code·stride`` is the *key* (the row the exact table would have); :func:`hash_rows`
maps it to a bucket with a fixed seeded integer hash (splitmix64's finaliser
:func:`~aggmrf_explore.kernels.rng.mix64`, then a multiply-shift range reduction; the
per-table salt comes from the layout's ``hash_seed`` and the table's features).
``kernels.rows.bucket`` is the same function in numba; :meth:`TableLayout.rows` computes
every row with the one row kernel, ``kernels.rows.table_rows``.  Memory
is O(K) for every table, never O(Π M_f).  Rows of a hashed table are buckets, not
modality combinations: :meth:`TableLayout.row_codes` (used by CSV release export and
model export) raises for them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..kernels.rng import GOLDEN, M1, mix64
from ..kernels.rows import TableArrays, table_arrays, table_rows
from .suppression import Suppression

__all__ = ["TableLayout", "AggregatedData", "aggregate", "hash_rows", "hash_salt"]

MAX_ARITY = 3
MAX_HASH_SIZE = 2**31 - 1
MAX_KEY = 2**62  # keys Σ code·stride of a hashed table must stay below this


def hash_salt(seed: int, features: Sequence[int]) -> np.uint64:
    """The 64-bit salt of a hashed table: a splitmix64 chain over (seed, feature indices)."""
    with np.errstate(over="ignore"):
        s = mix64(np.uint64(seed) + GOLDEN)
        for f in features:
            s = mix64(s ^ (np.uint64(f + 1) * M1))
    return np.uint64(s)


def hash_rows(keys: np.ndarray, salt: np.uint64, H: int) -> np.ndarray:
    """Bucket of each key: ((mix64((key ^ salt) + golden) >> 32) · H) >> 32, int64 in 0..H-1.

    ``keys``: non-negative integers (any shape).  Vectorised; ``kernels.rows.bucket``
    is the same function in numba (tested equal).
    """
    k = np.asarray(keys).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = mix64((k ^ np.uint64(salt)) + GOLDEN)
        return (((z >> np.uint64(32)) * np.uint64(H)) >> np.uint64(32)).astype(np.int64)


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
    hash_sizes : optional mapping {table's features (indices or names): H}
        Tables to hash into H rows (1 ≤ H < 2^31), see the module docstring; e.g.
        ``{("site", "advertiser"): 2**12}``.  Every key must be a listed table.
    hash_seed : int ≥ 0, seed of the hash salts.

    Attributes: ``tables`` (with the intercept ``()`` first), ``table_sizes`` (T,),
    ``offsets`` (T + 1,), ``strides`` (T, D), ``hash_sizes`` (T,) with 0 for exact
    tables, ``hash_salts`` (T,) uint64, ``K``.
    """

    def __init__(
        self,
        n_modalities: Sequence[int],
        tables: Sequence[Sequence[int]],
        feature_names: Sequence[str] | None = None,
        intercept: bool = True,
        modality_labels: Sequence[Sequence[str]] | None = None,
        hash_sizes: Mapping[Sequence[int | str] | int | str, int] | None = None,
        hash_seed: int = 0,
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
        dense = [int(np.prod(m[list(t)].astype(object))) if t else 1 for t in self.tables]
        self.dense_sizes = np.asarray([min(v, 2**63 - 1) for v in dense], dtype=np.int64)
        self._init_hashing(hash_sizes, hash_seed, dense)
        sizes = [int(h) if h else v for h, v in zip(self.hash_sizes, dense, strict=True)]
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

    def _init_hashing(self, hash_sizes, hash_seed, dense: list[int]) -> None:
        T = len(self.tables)
        if not isinstance(hash_seed, int | np.integer) or hash_seed < 0:
            raise AggMRFError(f"hash_seed must be a non-negative integer; got {hash_seed!r}.")
        self.hash_seed = int(hash_seed)
        self.hash_sizes = np.zeros(T, dtype=np.int64)
        self.hash_salts = np.zeros(T, dtype=np.uint64)
        for key, H in (hash_sizes or {}).items():
            feats = (key,) if isinstance(key, int | np.integer | str) else tuple(key)
            if not feats:
                raise AggMRFError("the intercept cannot be hashed; hash_sizes keys list features.")
            ti = self.table_index(feats)
            if not isinstance(H, int | np.integer) or not 1 <= H <= MAX_HASH_SIZE:
                raise AggMRFError(
                    f"hash size of table {self.table_name(self.tables[ti])} must be an integer "
                    f"in 1..{MAX_HASH_SIZE}; got {H!r}."
                )
            if dense[ti] > MAX_KEY:
                raise AggMRFError(
                    f"table {self.table_name(self.tables[ti])} has {dense[ti]:.3g} exact rows; "
                    "hashed tables need fewer than 2^62."
                )
            self.hash_sizes[ti] = int(H)
            self.hash_salts[ti] = hash_salt(self.hash_seed, self.tables[ti])

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
        hash_sizes: Mapping[Sequence[int | str] | int | str, int] | None = None,
        hash_seed: int = 0,
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
        return cls(
            n_modalities, tables, feature_names, intercept, modality_labels, hash_sizes, hash_seed
        )

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

    @property
    def has_hashed_tables(self) -> bool:
        """True when at least one table is hashed (the chain must then be a HashedGibbsChain)."""
        return bool(np.any(self.hash_sizes))

    def is_hashed(self, t: int) -> bool:
        """Whether table index t is hashed."""
        return bool(self.hash_sizes[t])

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

    def _hashed_error(self, t: int, what: str) -> AggMRFError:
        return AggMRFError(
            f"table {self.table_name(self.tables[t])} is hashed into {int(self.hash_sizes[t])} "
            f"buckets: its rows are not modality combinations, so {what} does not support it."
        )

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
        """Row index of each record in each table, shape (n, n_tables), int64 (hashing applied).

        Computed by the package's one row kernel (``kernels.rows.table_rows``), in parallel.
        """
        X = np.ascontiguousarray(self.check_codes(X))
        out = np.empty((X.shape[0], self.n_tables), dtype=np.int64)
        table_rows(X, self.table_arrays, out)
        return out

    @cached_property
    def table_arrays(self) -> TableArrays:
        """The tables as the row kernel reads them (``kernels.rows.TableArrays``: features,
        strides, offsets, hash sizes and salts as flat arrays); built once."""
        return table_arrays(
            self.tables, self.strides, self.offsets, self.hash_sizes, self.hash_salts
        )

    def local_rows(self, X: np.ndarray, t: int) -> np.ndarray:
        """Row of each record *within* table t (0 .. table_sizes[t] - 1), int64 (n,); hashed
        tables give the bucket.  Use it instead of ``X @ strides[t]``, which is wrong for them."""
        X = self.check_codes(X)
        key = X.astype(np.int64) @ self.strides[t]
        if self.hash_sizes[t]:
            key = hash_rows(key, self.hash_salts[t], int(self.hash_sizes[t]))
        return key

    def with_tables(
        self, tables: Sequence[Sequence[int]], intercept: bool | None = None
    ) -> TableLayout:
        """A layout over the same features with only ``tables`` (feature tuples), keeping
        the hash size and seed of every kept hashed table (so its rows are unchanged)."""
        hashed = {t: int(h) for t, h in zip(self.tables, self.hash_sizes, strict=True) if h}
        kept = [tuple(sorted(int(f) for f in t)) for t in tables]
        return TableLayout(
            self.n_modalities,
            kept,
            self.feature_names,
            self.intercept if intercept is None else intercept,
            self.modality_labels,
            hash_sizes={t: hashed[t] for t in kept if t in hashed},
            hash_seed=self.hash_seed,
        )

    def phi(self, X: np.ndarray):
        """φ(X) as a scipy CSR matrix of shape (n, K) with one 1 per table per record."""
        import scipy.sparse as sp

        r = self.rows(X)
        n, T = r.shape
        data = np.ones(n * T, dtype=np.float64)
        indptr = np.arange(0, n * T + 1, T)
        return sp.csr_matrix((data, r.ravel(), indptr), shape=(n, self.K))

    def row_codes(self, t: int) -> np.ndarray:
        """Codes of the features of table t for each of its rows, shape (size_t, arity).

        Raises AggMRFError for a hashed table (its rows are buckets).
        """
        if self.hash_sizes[t]:
            raise self._hashed_error(t, "row_codes (modality labels per row)")
        feats = self.tables[t]
        if not feats:
            return np.zeros((1, 0), dtype=np.int64)
        grids = np.meshgrid(*[np.arange(self.n_modalities[f]) for f in feats], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    def __repr__(self) -> str:
        nh = int(np.count_nonzero(self.hash_sizes))
        return (
            f"TableLayout(D={self.n_features}, tables={self.n_tables} "
            f"({self.n_released_tables} released{' + intercept' if self.intercept else ''}"
            f"{f', {nh} hashed' if nh else ''}), K={self.K})"
        )


@dataclass
class AggregatedData:
    """All the learner may see: counts d, label sums c (shape (K,), float64) and n.

    ``d`` and ``c`` are the values the trainer uses.  When a privacy mechanism made a
    noisy release, ``true_d`` and ``true_c`` keep the exact aggregates beside it (for
    teaching plots only; the trainer never reads them) and ``noise`` remembers the
    mechanism.  ``suppression`` marks the rows a release left out because their true count
    was ≤ its table's threshold (:mod:`.suppression`; their d and c are 0 and the trainer
    treats them as 0 ≤ d ≤ k).
    """

    layout: TableLayout
    d: np.ndarray
    c: np.ndarray
    n: int
    true_d: np.ndarray | None = None
    true_c: np.ndarray | None = None
    noise: object | None = None
    meta: dict = field(default_factory=dict)
    suppression: Suppression | None = None  # rows absent from the release (0 ≤ d ≤ k)

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

    def projected(self) -> AggregatedData:
        """The plain MRF's targets: d⁺ = max(d, 0), c⁺ = clip(c, 0, d⁺) (shape (K,) each).

        Exact aggregates are returned unchanged in value; noisy ones lose their negative
        counts and impossible label sums.  A new AggregatedData; ``self`` is not modified.
        """
        d_plus = np.maximum(self.d, 0.0)
        return replace(self, d=d_plus, c=np.clip(self.c, 0.0, d_plus), meta=dict(self.meta))

    def table_frame(
        self, t: int | Sequence[int | str], extra: dict[str, np.ndarray] | None = None
    ) -> pd.DataFrame:
        """Table t as a tidy DataFrame: one column per feature (modality labels), count, label_sum.

        ``t`` is a table index or the features of the table.  ``extra`` adds columns
        (arrays of shape (K,), e.g. the model's d̂) restricted to the table's rows.  A
        hashed table has one ``bucket`` column (0..H-1) instead of the feature columns.
        """
        lay = self.layout
        ti = t if isinstance(t, int | np.integer) else lay.table_index(t)
        if not 0 <= ti < lay.n_tables:
            raise AggMRFError(f"table index {ti} out of range 0..{lay.n_tables - 1}.")
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        cols: dict[str, object] = {}
        if lay.is_hashed(ti):
            cols["bucket"] = np.arange(lay.table_sizes[ti])
        else:
            codes = lay.row_codes(ti)
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
