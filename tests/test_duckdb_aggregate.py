"""tables.big: DuckDB (CSV / Parquet) and Dask aggregation equal the pandas path bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.datasets import load_dataset
from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.tables import TableLayout
from aggmrf_explore.tables import aggregate as aggregate_pandas
from aggmrf_explore.tables.big import aggregate, aggregate_dask, aggregate_duckdb


def _encoded(name: str):
    enc = load_dataset(name).encode()
    lay = enc.layout()
    df = pd.DataFrame(enc.X_train, columns=lay.feature_names)
    df["label"] = enc.y_train
    return enc.X_train, enc.y_train, lay, df


def _same(a, b) -> None:
    assert a.n == b.n
    assert np.array_equal(a.d, b.d)
    assert np.array_equal(a.c, b.c)


@pytest.mark.parametrize("name", ["adult", "bank"])
def test_duckdb_equals_pandas(name, tmp_path):
    X, y, lay, df = _encoded(name)
    ref = aggregate_pandas(X, y, lay)
    pq = tmp_path / "records.parquet"
    df.to_parquet(pq)
    _same(ref, aggregate(pq, layout=lay))  # the default method, "stream"
    _same(ref, aggregate_duckdb(pq, lay, method="grouping_sets"))
    if name == "adult":  # CSV read as well (Bank's 45 000 rows: Parquet only, for time)
        csv = tmp_path / "records.csv"
        df.to_csv(csv, index=False)
        # small batches: the counts accumulate over 32 Arrow batches
        _same(ref, aggregate_duckdb(csv, lay, memory_limit="500MB", threads=1, batch_records=1024))
        _same(ref, aggregate_duckdb(csv, lay, method="grouping_sets", threads=1))


def test_duckdb_hashed_tables_and_renamed_columns(tmp_path):
    rng = np.random.default_rng(3)
    m = [5, 40, 70]
    X = np.stack([rng.integers(0, k, 3000) for k in m], axis=1).astype(np.int32)
    y = rng.integers(0, 2, 3000)
    lay = TableLayout.all_pairs(m, hash_sizes={(1, 2): 97})
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(click=y)
    path = tmp_path / "r.parquet"
    df.to_parquet(path)
    _same(
        aggregate_pandas(X, y, lay),
        aggregate(path, layout=lay, label="click", columns=["a", "b", "c"]),
    )


def test_duckdb_rejects_what_pandas_rejects(tmp_path):
    lay = TableLayout.all_pairs([3, 4])
    good = pd.DataFrame({"x0": [0, 1, 2], "x1": [0, 1, 3], "label": [0, 1, 1]})
    bad_code = good.assign(x1=[0, 1, 4])
    bad_label = good.assign(label=[0, 2, 1])
    for df, msg in ((bad_code, "x1"), (bad_label, "0 or 1")):
        p = tmp_path / "bad.csv"
        df.to_csv(p, index=False)
        for method in ("stream", "grouping_sets"):
            with pytest.raises(AggMRFError, match=msg):
                aggregate_duckdb(p, lay, method=method)
    with pytest.raises(AggMRFError, match="method"):
        aggregate_duckdb(p, lay, method="fast")
    p = tmp_path / "missing.csv"
    good.drop(columns="x1").to_csv(p, index=False)
    with pytest.raises(AggMRFError, match="lacks the columns"):
        aggregate(p, layout=lay)
    with pytest.raises(AggMRFError, match="does not exist"):
        aggregate(tmp_path / "nope.parquet", layout=lay)


def test_dask_dataframe_on_local_cluster():
    """Dask DataFrame partitions on a LocalCluster (processes=False: threads in this
    process, to keep the test fast; the reduction runs in a fixed order either way)."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    X, y, lay, df = _encoded("adult")
    ref = aggregate_pandas(X, y, lay)
    ddf = dd.from_pandas(df, npartitions=5)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        _same(ref, aggregate(ddf, layout=lay, client=client))
        _same(ref, aggregate_dask(ddf.repartition(npartitions=3), lay, client=client))
