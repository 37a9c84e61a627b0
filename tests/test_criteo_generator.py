"""The Criteo-shaped generator (datasets.criteo): the AdKDD'21 file format exactly, suppression
at true c ≤ 10, σ = 17 noise, labelled sample / test files, and the stated truth."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.datasets.criteo import (
    NOISE_SIGMA,
    SUPPRESSION,
    criteo_cardinalities,
    feature_columns,
    iter_records,
    make_truth,
    true_probabilities,
    write_criteo_release,
    write_records,
)
from aggmrf_explore.tables import TableLayout, aggregate

CARD = [4, 5, 6, 3, 7, 4, 5, 3, 6, 4, 5, 3, 4, 6, 5, 4, 3, 5, 8]  # small K, 19 features
N = 60_000


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("criteo")
    summary = write_criteo_release(
        out, n=N, seed=3, n_sample=2_000, n_test=3_000, chunk=25_000, cardinalities=CARD
    )
    return out, summary


def _truth_tables():
    truth = make_truth(3, CARD)
    chunks = list(iter_records(truth, N, seed=3, chunk=25_000))
    X = np.concatenate([c[0] for c in chunks])
    click = np.concatenate([c[1] for c in chunks])
    sale = np.concatenate([c[2] for c in chunks])
    return truth, X, click, sale


def test_files_have_the_challenge_format(release):
    out, summary = release
    pairs = pd.read_csv(out / "aggregated_pairs.csv")
    singles = pd.read_csv(out / "aggregated_singles.csv")
    assert list(pairs.columns) == [
        "Unnamed: 0",
        "feature_1_id",
        "feature_2_id",
        "feature_1_value",
        "feature_2_value",
        "c",
        "click",
        "sale",
    ]
    assert list(singles.columns) == [
        "Unnamed: 0",
        "feature_1_id",
        "feature_1_value",
        "c",
        "click",
        "sale",
    ]
    got = set(map(tuple, pairs[["feature_1_id", "feature_2_id"]].drop_duplicates().to_numpy()))
    assert got == set(combinations(range(19), 2)) and len(got) == 171
    for name in ("granular_sample.csv", "test.csv"):
        df = pd.read_csv(out / name)
        assert list(df.columns) == [*feature_columns(), "click", "sale"]
    assert len(pd.read_csv(out / "granular_sample.csv")) == 2_000
    meta = json.loads((out / "truth.json").read_text())
    assert meta["release"]["n_records"] == N and meta["release"]["n_pairs"] == 171


def test_suppression_and_noise_match_the_true_tables(release):
    out, _ = release
    truth, X, click, sale = _truth_tables()
    lay = TableLayout.all_pairs(CARD, intercept=False)
    exact = aggregate(X, click, lay)
    pairs = pd.read_csv(out / "aggregated_pairs.csv")
    f, g = pairs["feature_1_id"].to_numpy(), pairs["feature_2_id"].to_numpy()
    ti = np.array([lay.table_index((a, b)) for a, b in zip(f, g, strict=True)])
    rows = (
        lay.offsets[ti]
        + pairs["feature_1_value"] * lay.strides[ti, f]
        + pairs["feature_2_value"] * lay.strides[ti, g]
    )
    true_c = exact.d[rows]
    assert np.all(true_c > SUPPRESSION)  # every listed row had a true count > 10 …
    pair_rows = lay.released & (lay.row_table() >= len(CARD))
    assert len(pairs) == np.count_nonzero(exact.d[pair_rows] > SUPPRESSION)  # … and all did
    resid = np.concatenate([pairs["c"] - true_c, pairs["click"] - exact.c[rows]])
    assert abs(resid.std() - NOISE_SIGMA) < 1.0 and abs(resid.mean()) < 1.0
    singles = pd.read_csv(out / "aggregated_singles.csv")
    assert len(singles) == sum(CARD)  # nothing suppressed (every value occurs here)


def test_truth_is_what_is_sampled():
    truth, X, click, sale = _truth_tables()
    pc, ps = true_probabilities(truth, X)
    assert abs(click.mean() - pc.mean()) < 4 * np.sqrt(pc.mean() / N)
    assert abs(sale.mean() - ps.mean()) < 4 * np.sqrt(ps.mean() / N)
    assert np.corrcoef(click, sale)[0, 1] > 0.05  # correlated labels
    # the tree: each child's value depends on its parent's
    f = 5
    p = int(truth.parents[f])
    tab = pd.crosstab(X[:, p], X[:, f]).to_numpy()
    expected = np.outer(tab.sum(1), tab.sum(0)) / tab.sum()
    assert ((tab - expected) ** 2 / expected).sum() > 100  # far from independence


def test_default_shape_and_chunked_records(tmp_path):
    m = criteo_cardinalities()
    assert m.size == 19 and m.max() == 2000 and m.min() >= 10
    path = write_records(tmp_path / "r.parquet", 5_000, seed=1, chunk=2_000)
    df = pd.read_parquet(path)
    assert len(df) == 5_000 and list(df.columns) == [*feature_columns(), "click", "sale"]
    assert np.all(df[feature_columns()].max().to_numpy() < make_truth(1).cardinalities)
