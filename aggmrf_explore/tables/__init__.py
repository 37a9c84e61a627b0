"""Contingency tables: which are released, aggregation into them, their size and their gaps.

* :mod:`.layout` — :class:`TableLayout` (which tables; offsets, strides, hashed tables),
  :class:`AggregatedData` (d, c, n, noise, suppression) and the in-memory :func:`aggregate`;
* :mod:`.big` — the same tables from a CSV / Parquet file (DuckDB, one scan) or a Dask
  DataFrame;
* :mod:`.budget` — the size budget: table rows and memory from modality counts, checked
  before anything is allocated;
* :mod:`.suppression` — suppressed rows (absent ⇔ true count ≤ k) as 0 ≤ d ≤ k, and the box
  targets the trainer uses.

The package exports the layout module's names; import the others from their modules.
"""

from .layout import AggregatedData, TableLayout, aggregate, hash_rows, hash_salt

__all__ = ["AggregatedData", "TableLayout", "aggregate", "hash_rows", "hash_salt"]
