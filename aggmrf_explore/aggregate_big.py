"""Aggregation past memory: coded records from a CSV / Parquet file through DuckDB, or from a
Dask DataFrame; the same tables as :func:`aggmrf_explore.tables.aggregate`.

:func:`aggregate` dispatches on its first argument:

- numpy codes (n, D) and labels (n,): the in-memory pandas/numpy path,
  :func:`aggmrf_explore.tables.aggregate` (unchanged, for small data);
- a path (str / ``os.PathLike``, ``*.csv[.gz]`` or ``*.parquet``, globs allowed):
  :func:`aggregate_duckdb`, ONE scan of the file with ``GROUP BY GROUPING SETS`` (one set
  per table of the layout, the intercept ``()`` included).  DuckDB bounds its memory
  (``memory_limit``, default 1 GB) and spills to ``temp_directory``; only (table, key,
  count, label sum) per non-empty cell comes back to Python, in Arrow batches;
- a ``dask.dataframe.DataFrame``: :func:`aggregate_dask`, per-partition (K,) partial sums
  reduced in partition order (integers held in float64: exact below 2^53 records).

The records hold the *encoded* codes, one integer column per feature of the layout
(named ``layout.feature_names`` unless ``columns`` says otherwise; codes 0..M_f − 1, as an
:class:`~aggmrf_explore.encoding.Encoder` / ``Schema.transform`` writes them) and a 0/1
label column.  The same rules as the pandas path apply: a code outside 0..M_f − 1 or
missing, a label not in {0, 1}, or zero records raise :class:`AggMRFError`; rows are
``offset_t + key_t`` for exact tables and ``offset_t + hash_rows(key_t)`` for hashed ones
(the layout's own :func:`~aggmrf_explore.tables.hash_rows`).  Results are bit-identical to
the pandas path (counts are integers).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import AggMRFError
from .tables import AggregatedData, TableLayout, hash_rows
from .tables import aggregate as aggregate_in_memory

__all__ = ["aggregate", "aggregate_duckdb", "aggregate_dask", "grouping_sql", "BATCH_ROWS"]

BATCH_ROWS = 1_000_000  # result cells per Arrow batch handed to Python


def _columns(layout: TableLayout, columns: Sequence[str] | None) -> list[str]:
    cols = list(layout.feature_names if columns is None else columns)
    if len(cols) != layout.n_features:
        raise AggMRFError(
            f"{len(cols)} feature columns for {layout.n_features} features; give one per feature."
        )
    return cols


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _reader(source: str) -> str:
    low = source.lower()
    lit = "'" + source.replace("'", "''") + "'"
    if low.endswith(".parquet") or low.endswith(".pq"):
        return f"read_parquet({lit})"
    if low.endswith(".csv") or low.endswith(".csv.gz") or low.endswith(".tsv"):
        return f"read_csv({lit}, header = true)"
    raise AggMRFError(f"{source!r}: give a .csv, .csv.gz or .parquet file (globs allowed).")


def grouping_sql(layout: TableLayout, source_sql: str, cols: Sequence[str], label: str) -> str:
    """The one-scan query: per table t (grouping set), gid = GROUPING(all features), key_t =
    Σ code·stride_t, d = count(*), c = Σ label, and per cell the number of bad codes and bad
    labels (checked in Python)."""
    q = [_quote(c) for c in cols]
    D = layout.n_features
    sets, cases = [], []
    for ti, t in enumerate(layout.tables):
        sets.append("(" + ", ".join(q[f] for f in t) + ")")
        gid = sum(1 << (D - 1 - f) for f in range(D) if f not in t)
        key = " + ".join(f"CAST({q[f]} AS BIGINT) * {int(layout.strides[ti, f])}" for f in t)
        cases.append(f"WHEN {gid} THEN {key or '0'}")
    bad_code = " OR ".join(
        f"{q[f]} IS NULL OR {q[f]} < 0 OR {q[f]} >= {int(layout.n_modalities[f])}" for f in range(D)
    )
    lab = _quote(label)
    gid_sql = f"GROUPING({', '.join(q)})"
    return f"""
WITH g AS (
  SELECT {gid_sql} AS __gid, {", ".join(q)},
         count(*) AS __d,
         sum(CAST({lab} AS DOUBLE)) AS __c,
         count_if({lab} IS NULL OR {lab} NOT IN (0, 1)) AS __bad_label,
         count_if({bad_code}) AS __bad_code
  FROM {source_sql}
  GROUP BY GROUPING SETS ({", ".join(sets)})
)
SELECT __gid, CASE __gid {" ".join(cases)} END AS __key, __d, __c, __bad_label, __bad_code
FROM g
"""


def _rows_from_keys(layout: TableLayout, gid: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Row of each result cell (int64)."""
    D = layout.n_features
    rows = np.full(gid.shape[0], -1, dtype=np.int64)
    for ti, t in enumerate(layout.tables):
        g = sum(1 << (D - 1 - f) for f in range(D) if f not in t)
        sel = gid == g
        if not np.any(sel):
            continue
        k = key[sel]
        if layout.is_hashed(ti):
            k = hash_rows(k, layout.hash_salts[ti], int(layout.hash_sizes[ti]))
        rows[sel] = layout.offsets[ti] + k
    if np.any(rows < 0):
        raise AggMRFError("internal error: a grouping set matched no table.")
    return rows


def aggregate_duckdb(
    source: str | os.PathLike,
    layout: TableLayout,
    label: str = "label",
    columns: Sequence[str] | None = None,
    memory_limit: str = "1GB",
    temp_directory: str | os.PathLike | None = None,
    threads: int | None = None,
) -> AggregatedData:
    """Aggregate the coded records of a CSV / Parquet file (or glob) in one DuckDB scan.

    ``columns``: the D feature columns (default ``layout.feature_names``); ``label``: the
    0/1 label column.  DuckDB holds at most ``memory_limit`` (1 GB; 600 MB ran out of
    memory on 10⁷ Criteo-shaped records with 191 grouping sets) and spills to
    ``temp_directory`` (default: DuckDB's own, beside its database); ``threads`` defaults
    to DuckDB's choice.  Returns d, c (K,) bit-identical to :func:`tables.aggregate`.
    """
    import duckdb

    cols = _columns(layout, columns)
    src = os.fspath(source)
    if not any(ch in src for ch in "*?[") and not Path(src).exists():
        raise AggMRFError(f"{src!r} does not exist.")
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")
        if temp_directory is not None:
            con.execute(f"SET temp_directory = '{os.fspath(temp_directory)}'")
        if threads is not None:
            con.execute(f"SET threads = {int(threads)}")
        header = con.execute(f"SELECT * FROM {_reader(src)} LIMIT 0").description
        have = [h[0] for h in header]
        missing = [c for c in [*cols, label] if c not in have]
        if missing:
            raise AggMRFError(f"{src!r} lacks the columns {missing}; it has {have}.")
        sql = grouping_sql(layout, _reader(src), cols, label)
        d = np.zeros(layout.K)
        c = np.zeros(layout.K)
        cells = bad_label = 0
        # the cells come back in Arrow batches: Python holds one batch at a time
        for batch in con.sql(sql).to_arrow_reader(BATCH_ROWS):
            res = {n: batch.column(n).to_numpy(zero_copy_only=False) for n in batch.schema.names}
            if np.any(res["__bad_code"] > 0):  # before any row is computed from a bad code
                _raise_bad_code(duckdb.connect(), layout, _reader(src), cols)
            cells += res["__gid"].size
            bad_label += int(np.count_nonzero(res["__bad_label"]))
            rows = _rows_from_keys(
                layout, res["__gid"].astype(np.int64), res["__key"].astype(np.int64)
            )
            d += np.bincount(rows, weights=res["__d"].astype(np.float64), minlength=layout.K)
            c += np.bincount(rows, weights=res["__c"].astype(np.float64), minlength=layout.K)
    except duckdb.Error as e:
        raise AggMRFError(f"DuckDB could not aggregate {src!r}: {e}") from e
    finally:
        con.close()
    if cells == 0:
        raise AggMRFError("cannot aggregate zero records.")
    if bad_label:
        raise AggMRFError(f"labels of column {label!r} must be 0 or 1; encode the label first.")
    return AggregatedData(layout, d, c, _n_records(layout, d))


def _raise_bad_code(con, layout: TableLayout, source_sql: str, cols: list[str]) -> None:
    """Name the first feature with a missing or out-of-range code (a second scan, on error only)."""
    for f, col in enumerate(cols):
        q = _quote(col)
        m = int(layout.n_modalities[f])
        row = con.execute(
            f"SELECT {q} FROM {source_sql} WHERE {q} IS NULL OR {q} < 0 OR {q} >= {m} LIMIT 1"
        ).fetchone()
        if row is not None:
            raise AggMRFError(
                f"code {row[0]} of feature {layout.feature_names[f]!r} is missing or outside "
                f"0..{m - 1}; encode the records first."
            )
    raise AggMRFError("a feature code is missing or out of range; encode the records first.")


def _n_records(layout: TableLayout, d: np.ndarray) -> int:
    """n from the first table's counts (every table counts every record once)."""
    return int(round(d[layout.offsets[0] : layout.offsets[1]].sum()))


def _partial(part, layout: TableLayout, cols: list[str], label: str) -> np.ndarray:
    """(2, K) float64 [d, c] of one partition (a pandas DataFrame); empty parts give zeros."""
    out = np.zeros((2, layout.K))
    if len(part) == 0:
        return out
    if part[cols].isna().any().any():
        raise AggMRFError("a feature code is missing; encode the records first.")
    X = part[cols].to_numpy()
    y = part[label].to_numpy()
    agg = aggregate_in_memory(X, y, layout)
    out[0], out[1] = agg.d, agg.c
    return out


def aggregate_dask(
    ddf,
    layout: TableLayout,
    label: str = "label",
    columns: Sequence[str] | None = None,
    client=None,
) -> AggregatedData:
    """Aggregate a Dask DataFrame of coded records: one (2, K) partial per partition,
    summed in partition order on the workers (tree of pairwise sums, fixed order).

    ``client``: a ``distributed.Client`` (default: the current one, or Dask's default
    scheduler).  Returns d, c (K,) bit-identical to :func:`tables.aggregate`.
    """
    import dask

    cols = _columns(layout, columns)
    missing = [c for c in [*cols, label] if c not in ddf.columns]
    if missing:
        raise AggMRFError(f"the Dask DataFrame lacks the columns {missing}.")
    parts = [dask.delayed(_partial)(p, layout, cols, label) for p in ddf.to_delayed()]
    while len(parts) > 1:  # fixed-order pairwise tree
        nxt = [dask.delayed(np.add)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    total = client.compute(parts[0]).result() if client is not None else parts[0].compute()
    if total[0].sum() == 0:
        raise AggMRFError("cannot aggregate zero records.")
    return AggregatedData(layout, total[0], total[1], _n_records(layout, total[0]))


def _is_dask_frame(obj) -> bool:
    mod = type(obj).__module__
    return mod.startswith("dask") and hasattr(obj, "to_delayed") and hasattr(obj, "columns")


def aggregate(
    source,
    y: np.ndarray | None = None,
    layout: TableLayout | None = None,
    *,
    label: str = "label",
    columns: Sequence[str] | None = None,
    **kw,
) -> AggregatedData:
    """Aggregate records into the layout's tables, whatever holds them (module docstring).

    ``aggregate(X, y, layout)``: numpy codes (n, D) and labels (n,) (tables.aggregate);
    ``aggregate(path, layout=layout, label=…)``: a CSV / Parquet file through DuckDB
    (``memory_limit``, ``temp_directory``, ``threads`` in ``kw``);
    ``aggregate(ddf, layout=layout, label=…)``: a Dask DataFrame (``client`` in ``kw``).
    """
    if isinstance(y, TableLayout) and layout is None:  # aggregate(source, layout)
        y, layout = None, y
    if layout is None:
        raise AggMRFError("aggregate needs the layout.")
    if isinstance(source, str | os.PathLike):
        if y is not None:
            raise AggMRFError("a file holds its labels: pass label=<column>, not y.")
        return aggregate_duckdb(source, layout, label, columns, **kw)
    if _is_dask_frame(source):
        if y is not None:
            raise AggMRFError("a Dask DataFrame holds its labels: pass label=<column>, not y.")
        return aggregate_dask(source, layout, label, columns, **kw)
    if y is None:
        raise AggMRFError("in-memory codes need their labels y.")
    return aggregate_in_memory(source, y, layout)
