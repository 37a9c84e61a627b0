"""Aggregation past memory: coded records from a CSV / Parquet file through DuckDB, or from a
Dask DataFrame; the same tables as :func:`aggmrf_explore.tables.aggregate`.

:func:`aggregate` dispatches on its first argument:

- numpy codes (n, D) and labels (n,): the in-memory pandas/numpy path,
  :func:`aggmrf_explore.tables.aggregate` (unchanged, for small data);
- a path (str / ``os.PathLike``, ``*.csv[.gz]`` or ``*.parquet``, globs allowed):
  :func:`aggregate_duckdb`, ONE DuckDB scan of the file.  Two methods:

  - ``"stream"`` (default): DuckDB reads only the D + 1 needed columns and hands them to
    Python in Arrow batches of ``batch_records`` records; each batch's table rows (the
    package's row kernel) are counted into two dense int64 (K,) accumulators with
    ``np.bincount``.  Memory: 2K int64 + one batch (batch_records × T int64) + DuckDB's
    reader buffers, whatever the number of records (≈ 0.6 GB at K = 5.7·10⁶, T = 191).
    The model itself holds several K-vectors, so dense accumulators are never the
    binding limit; no hash table is needed because every row index is known in advance.
  - ``"grouping_sets"``: ``GROUP BY GROUPING SETS`` (one set per table of the layout, the
    intercept ``()`` included) inside DuckDB; only (table, key, count, label sum) per
    non-empty cell comes back.  DuckDB keeps one radix hash table per grouping set *and
    per thread*: with 191 sets it needs ≈ 1.2 GB at 10⁷ Criteo-shaped records and runs
    out of memory under a 500 MB ``memory_limit`` (measured, ``benchmarks/criteo_scale.py``),
    so it is kept for comparison and for layouts with few tables.
- a ``dask.dataframe.DataFrame``: :func:`aggregate_dask`, per-partition (K,) partial sums
  reduced in partition order (integers held in float64: exact below 2^53 records).

A path is read as the package's other readers read files (:mod:`aggmrf_explore.files`):
every file (each match of a glob) must be a regular file, checked before DuckDB opens it
(a FIFO, a device or a directory is refused, so nothing blocks); a symlink must resolve
to a file in its own directory; a file holds at most ``max_file_bytes`` (64 GiB by
default); its header names each column once (DuckDB would rename a second ``color`` to
``color_1`` and the aggregation would ignore it).  Errors name the file, never its
contents: a missing column is named, the columns the file has are not listed, and
DuckDB's own message (which may quote a line) is replaced by its kind.

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

import csv
import glob
import gzip
import os
import zlib
from collections.abc import Sequence

import numpy as np

from ..errors import AggMRFError
from ..files import check_regular_file, mib
from .layout import AggregatedData, TableLayout, hash_rows
from .layout import aggregate as aggregate_in_memory

__all__ = [
    "aggregate",
    "aggregate_duckdb",
    "aggregate_dask",
    "grouping_sql",
    "BATCH_ROWS",
    "BATCH_RECORDS",
    "METHODS",
    "MAX_FILE_BYTES",
]

BATCH_ROWS = 1_000_000  # result cells per Arrow batch handed to Python (grouping_sets)
BATCH_RECORDS = 65_536  # records per Arrow batch (stream): 65 536 × 191 tables × 8 B = 100 MB
METHODS = ("stream", "grouping_sets")
MAX_FILE_BYTES = 64 * 2**30  # one records file (CSV or Parquet) of the DuckDB path
_HEADER_BYTES = 1 << 20  # a CSV header line longer than this is refused


def _columns(layout: TableLayout, columns: Sequence[str] | None) -> list[str]:
    cols = list(layout.feature_names if columns is None else columns)
    if len(cols) != layout.n_features:
        raise AggMRFError(
            f"{len(cols)} feature columns for {layout.n_features} features; give one per feature."
        )
    return cols


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _kind(source: str) -> str:
    """The file kind, "parquet" or "csv", from the name (the error says which names are read)."""
    low = source.lower()
    if low.endswith(".parquet") or low.endswith(".pq"):
        return "parquet"
    if low.endswith(".csv") or low.endswith(".csv.gz") or low.endswith(".tsv"):
        return "csv"
    raise AggMRFError(f"{source!r}: give a .csv, .csv.gz or .parquet file (globs allowed).")


def _reader(files: Sequence[str], kind: str) -> str:
    """DuckDB's table function reading exactly ``files`` (already checked)."""
    lit = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    return f"read_parquet({lit})" if kind == "parquet" else f"read_csv({lit}, header = true)"


def _header_names(path: str, kind: str, con) -> list[str]:
    """The column names a records file declares (a CSV's header line, a Parquet schema).

    A Parquet schema is read by DuckDB (``con``), never by pyarrow: the first allocation
    from Arrow's default memory pool (mimalloc) reserves about 1 GiB of address space for
    the rest of the process, which is what made 10⁷ distinct codes (K = 10⁷ + 1) run out
    of memory under a 3 GB ``ulimit -v`` (docs/duckdb_address_space.md)."""
    shown = repr(os.path.basename(path))
    if kind == "parquet":
        import duckdb

        lit = "'" + path.replace("'", "''") + "'"
        try:
            rows = con.execute(f"SELECT name, num_children FROM parquet_schema({lit})").fetchall()
        except duckdb.Error:
            raise AggMRFError(
                f"records file {shown} is not a readable Parquet file; check the file."
            ) from None
        return _top_level(rows)
    try:
        with open(path, "rb") as raw:
            packed = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if packed else raw
            first = fh.readline(_HEADER_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        raise AggMRFError(f"records file {shown} cannot be read as CSV text.") from None
    if len(first) > _HEADER_BYTES:
        raise AggMRFError(
            f"records file {shown}: its first line is longer than {mib(_HEADER_BYTES)}; "
            "is it a CSV file with a header line?"
        )
    if b"\x00" in first:
        raise AggMRFError(f"records file {shown} holds binary data, not CSV text.")
    text = first.decode("utf-8-sig", errors="replace").rstrip("\r\n")
    sep = max((",", ";", "\t", "|"), key=text.count)
    return [c.strip() for c in next(csv.reader([text], delimiter=sep), [])]


def _top_level(rows: list[tuple[str, int | None]]) -> list[str]:
    """The top-level column names of a Parquet schema given depth first as (name, number
    of children) rows, the root first (DuckDB's ``parquet_schema``)."""
    names: list[str] = []
    pending = [int(rows[0][1] or 0)] if rows else []  # children left to see, per level
    for name, children in rows[1:]:
        while pending and pending[-1] == 0:
            pending.pop()
        if not pending:
            break
        if len(pending) == 1:
            names.append(str(name))
        pending[-1] -= 1
        if children:
            pending.append(int(children))
    return names


def _checked_files(source: str, max_file_bytes: int, con) -> tuple[list[str], str]:
    """The files a path or glob names, each checked (module docstring), and their kind
    (``con``: the DuckDB connection that reads Parquet headers)."""
    kind = _kind(source)
    if any(ch in source for ch in "*?["):
        files = sorted(glob.glob(source))
        if not files:
            raise AggMRFError(f"no file matches {source!r}; check the pattern.")
    else:
        files = [source]
    for f in files:
        shown = repr(os.path.basename(f) or f)
        if not os.path.lexists(f):
            raise AggMRFError(f"{f!r} does not exist; check the path.")
        st = check_regular_file(f, "records file", shown)
        if os.path.islink(f):
            home = os.path.dirname(os.path.abspath(f))
            if os.path.dirname(os.path.realpath(f)) != os.path.realpath(home):
                raise AggMRFError(
                    f"records file {shown} is a symlink to a file outside its directory; "
                    "give the path of the file itself."
                )
        if st.st_size > max_file_bytes:
            raise AggMRFError(
                f"records file {shown} is {mib(st.st_size)}, more than the "
                f"{mib(max_file_bytes)} allowed; if it is the right file, raise the cap "
                "(max_file_bytes=…)."
            )
        names = _header_names(f, kind, con)
        seen: set[str] = set()
        for c in names:
            if c in seen:
                raise AggMRFError(
                    f"records file {shown} has two columns named {c[:40]!r}; each column "
                    "needs its own name (rename or remove the second one)."
                )
            seen.add(c)
    return files, kind


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
    memory_limit: str = "512MB",
    temp_directory: str | os.PathLike | None = None,
    threads: int | None = None,
    method: str = "stream",
    batch_records: int = BATCH_RECORDS,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> AggregatedData:
    """Aggregate the coded records of a CSV / Parquet file (or glob) in one DuckDB scan.

    ``columns``: the D feature columns (default ``layout.feature_names``); ``label``: the
    0/1 label column.  ``method``: ``"stream"`` (default) or ``"grouping_sets"`` (module
    docstring).  DuckDB holds at most ``memory_limit`` (512 MB) and spills to
    ``temp_directory`` (default: DuckDB's own); ``threads`` defaults to DuckDB's choice;
    ``batch_records``: records per Arrow batch of the stream method.  Every file is
    checked before DuckDB opens it (module docstring; at most ``max_file_bytes`` each).
    Returns d, c (K,) float64, bit-identical to :func:`tables.aggregate`.
    """
    import duckdb

    if method not in METHODS:
        raise AggMRFError(f"method must be one of {', '.join(METHODS)}; got {method!r}.")
    cols = _columns(layout, columns)
    src = os.fspath(source)
    kind = _kind(src)
    con = duckdb.connect()
    try:
        files, kind = _checked_files(src, int(max_file_bytes), con)
        source_sql = _reader(files, kind)
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")
        if temp_directory is not None:
            con.execute(f"SET temp_directory = '{os.fspath(temp_directory)}'")
        if threads is not None:
            con.execute(f"SET threads = {int(threads)}")
        header = con.execute(f"SELECT * FROM {source_sql} LIMIT 0").description
        have = [h[0] for h in header]
        missing = [c for c in [*cols, label] if c not in have]
        if missing:
            found = len([c for c in [*cols, label] if c in have])
            raise AggMRFError(
                f"{src!r} lacks the columns {missing[:10]} (it has {found} of the "
                f"{len(cols) + 1} needed); give the coded records' file, or name its columns "
                "with columns=… and label=…."
            )
        if method == "stream":
            d, c, n = _stream(con, layout, source_sql, cols, label, int(batch_records))
        else:
            d, c, n = _grouping_sets(con, layout, source_sql, cols, label)
    except duckdb.Error as e:  # its message may quote the file: only its kind is shown
        raise AggMRFError(
            f"DuckDB could not aggregate {src!r} ({type(e).__name__}); check that it is a "
            f"{'Parquet' if kind == 'parquet' else 'CSV'} file of coded records."
        ) from None
    finally:
        con.close()
    return AggregatedData(layout, d, c, n)


def _stream(
    con, layout: TableLayout, source_sql: str, cols: list[str], label: str, batch: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The stream method: (d, c) float64 (K,) and n from Arrow batches of the D + 1 columns."""
    if batch < 1:
        raise AggMRFError(f"batch_records must be ≥ 1; got {batch}.")
    sql = f"SELECT {', '.join(_quote(c) for c in [*cols, label])} FROM {source_sql}"
    m = np.asarray(layout.n_modalities, dtype=np.int64)
    D, K = layout.n_features, layout.K
    d = np.zeros(K, dtype=np.int64)
    c = np.zeros(K, dtype=np.int64)
    n = 0
    for rb in con.sql(sql).to_arrow_reader(batch):
        nb = rb.num_rows
        if nb == 0:
            continue
        X = np.empty((nb, D), dtype=np.int32)
        for f in range(D):
            X[:, f] = _codes(rb.column(f), cols[f], layout.feature_names[f], int(m[f]), n)
        y = _labels(rb.column(D), label)
        r = layout.rows(X)  # (nb, T) int64, the package's row kernel
        d += np.bincount(r.ravel(), minlength=K)
        c += np.bincount(r[y].ravel(), minlength=K)
        n += nb
        del r, X
    if n == 0:
        raise AggMRFError("cannot aggregate zero records.")
    return d.astype(np.float64), c.astype(np.float64), n


def _codes(col, name: str, feature: str, m: int, first: int) -> np.ndarray:
    """One feature's codes of a batch (an Arrow array) as int64, checked: integer type,
    no missing value, 0..m − 1 (the error names the feature and the record)."""
    import pyarrow as pa

    if not pa.types.is_integer(col.type):
        raise AggMRFError(
            f"column {name!r} holds {col.type}, not integer codes; encode the records first."
        )
    if col.null_count:
        i = first + int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise AggMRFError(
            f"code of feature {feature!r} is missing (record {i}); encode the records first."
        )
    x = col.to_numpy()
    bad = (x < 0) | (x >= m)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise AggMRFError(
            f"code {int(x[i])} of feature {feature!r} (record {first + i}) is missing or "
            f"outside 0..{m - 1}; encode the records first."
        )
    return x


def _labels(col, label: str) -> np.ndarray:
    """A batch's labels as a bool mask (label == 1); anything but 0 / 1 raises."""
    import pyarrow as pa

    ok_type = pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
    if pa.types.is_boolean(col.type):
        ok_type = True
    y = col.to_numpy(zero_copy_only=False) if ok_type and not col.null_count else None
    if y is None or not np.all((y == 0) | (y == 1)):
        raise AggMRFError(f"labels of column {label!r} must be 0 or 1; encode the label first.")
    return y == 1


def _grouping_sets(
    con, layout: TableLayout, source_sql: str, cols: list[str], label: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """The grouping_sets method: (d, c) float64 (K,) and n from the cells of one
    GROUPING SETS query (:func:`grouping_sql`), fetched in Arrow batches."""
    sql = grouping_sql(layout, source_sql, cols, label)
    d = np.zeros(layout.K)
    c = np.zeros(layout.K)
    cells = bad_label = 0
    for batch in con.sql(sql).to_arrow_reader(BATCH_ROWS):
        res = {n: batch.column(n).to_numpy(zero_copy_only=False) for n in batch.schema.names}
        if np.any(res["__bad_code"] > 0):  # before any row is computed from a bad code
            _raise_bad_code(con.cursor(), layout, source_sql, cols)  # (the reader is still open)
        cells += res["__gid"].size
        bad_label += int(np.count_nonzero(res["__bad_label"]))
        rows = _rows_from_keys(layout, res["__gid"].astype(np.int64), res["__key"].astype(np.int64))
        d += np.bincount(rows, weights=res["__d"].astype(np.float64), minlength=layout.K)
        c += np.bincount(rows, weights=res["__c"].astype(np.float64), minlength=layout.K)
    if cells == 0:
        raise AggMRFError("cannot aggregate zero records.")
    if bad_label:
        raise AggMRFError(f"labels of column {label!r} must be 0 or 1; encode the label first.")
    return d, c, _n_records(layout, d)


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
