"""High-cardinality helpers: target encoding on held-out rows, hashing, synthetic data, and the
hashing experiment of ``benchmarks/hashing.py``."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore.datasets import (
    hashed_layout,
    high_cardinality_dataset,
    target_encode,
    vocabulary_codes,
)
from aggmrf_explore.encoding import HashedCross, TargetEncoder
from aggmrf_explore.errors import AggMRFError


def test_target_encoder_buckets_by_count_and_rate():
    rng = np.random.default_rng(0)
    values = np.concatenate([np.repeat(["a", "b", "c", "d"], [1000, 1000, 10, 10])])
    rate = {"a": 0.9, "b": 0.1, "c": 0.9, "d": 0.1}
    y = (rng.random(values.size) < np.vectorize(rate.get)(values)).astype(int)
    enc = TargetEncoder(n_count_bins=2, n_rate_bins=2, smoothing=0.0).fit(values, y)
    codes = enc.transform(["a", "b", "c", "d", "never-seen"])
    assert enc.n_buckets == 5 and len(enc.labels) == 5
    assert codes[4] == enc.n_buckets - 1  # unseen bucket
    assert len(set(codes[:2])) == 2  # same count, different rate
    assert codes.dtype == np.int32 and codes.min() >= 0 and codes.max() < enc.n_buckets


def test_target_encoder_validates():
    with pytest.raises(AggMRFError, match="n_rate_bins"):
        TargetEncoder(n_rate_bins=0)
    with pytest.raises(AggMRFError, match="fit"):
        TargetEncoder().transform(["a"])
    with pytest.raises(AggMRFError, match="0 or 1"):
        TargetEncoder().fit(["a", "b"], [0, 2])


def test_target_encode_never_aggregates_held_out_rows():
    ds = high_cardinality_dataset(5_000, seed=1)
    out, encoders = target_encode(ds, ["site", "advertiser"], holdout_fraction=0.4, seed=3)
    assert len(out.train) == 5_000 - 2_000
    assert len(out.test) == len(ds.test)
    # the encoder saw exactly the held-out rows: their modalities are all "seen"
    enc = encoders["site"]
    assert int(enc.mapping_.sum() >= 0) and len(enc.mapping_) <= ds.train["site"].nunique()
    # the aggregated rows are the complement of the held-out ones (same multiset of labels)
    assert out.train["y"].sum() + 0 <= ds.train["y"].sum()
    assert set(out.train["site"].cat.categories) == set(enc.labels)
    enc_data = out.encode()
    assert enc_data.n_modalities.max() <= enc.n_buckets + 1  # + "(other)"


def test_hashed_cross_is_deterministic_and_uniform():
    h = HashedCross(64, seed=5)
    a = np.repeat(np.arange(200), 200)
    b = np.tile(np.arange(200), 200)
    z = h.transform(a, b)
    np.testing.assert_array_equal(z, HashedCross(64, seed=5).transform(a, b))
    assert z.min() >= 0 and z.max() < 64
    counts = np.bincount(z, minlength=64)
    assert counts.min() > 0.7 * counts.mean() and counts.max() < 1.3 * counts.mean()
    assert not np.array_equal(z, HashedCross(64, seed=6).transform(a, b))
    with pytest.raises(AggMRFError):
        h.transform([-1], [0])


def test_high_cardinality_dataset_shape_and_memory_is_per_record():
    ds = high_cardinality_dataset(2_000, seed=0)
    assert len(ds.train) == 2_000 and len(ds.test) == 1_000
    assert ds.true_proba_train.shape == (2_000,)
    assert ds.train["site"].nunique() > 300  # many raw values even on a small sample
    assert set(ds.train["y"].unique()) <= {0, 1}
    with pytest.raises(AggMRFError):
        high_cardinality_dataset(10)


def test_hashed_layout_and_vocabulary_codes():
    ds = high_cardinality_dataset(1_000, seed=2, n_sites=500, n_advertisers=60)
    X, y, Xt, yt, sizes = vocabulary_codes(ds)
    assert sizes == [500, 60, 3, 24, 8, 4]
    assert X.shape == (1_000, 6) and Xt.shape == (500, 6) and X.min() >= 0
    assert np.all(X < np.asarray(sizes)) and np.all(Xt < np.asarray(sizes))
    assert ds.train["site"].iloc[0] == f"s{X[0, 0]}"
    lay = hashed_layout(sizes, list(ds.feature_columns), 128)
    hashed = [lay.table_name(t) for ti, t in enumerate(lay.tables) if lay.is_hashed(ti)]
    assert len(hashed) == 11 and all("site" in h or "advertiser" in h for h in hashed)
    assert lay.K == 1 + 11 * 128 + (3 + 24 + 8 + 4) + (72 + 24 + 12 + 192 + 96 + 32)
    assert lay.dense_sizes.sum() > 20 * lay.K  # the exact tables would be much larger


def test_site_device_interaction_is_optional():
    a = high_cardinality_dataset(500, seed=1)
    b = high_cardinality_dataset(500, seed=1, site_device_scale=0.5, n_sites=100)
    assert a.truth["site_device"] is None and b.truth["site_device"].shape == (100, 3)
    with pytest.raises(AggMRFError, match="n_sites"):
        high_cardinality_dataset(500, n_sites=1)


def test_hashed_compare_small_run():
    from benchmarks.hashing import hashed_compare

    out = hashed_compare(
        n=3_000,
        H=256,
        n_sites=300,
        n_advertisers=40,
        n_gibbs=300,
        iterations=20,
        lambdas=(4.0, 16.0),
    )
    assert out["K"] == 1 + 11 * 256 + 39 + 428 and out["dense_rows"] > out["K"]
    nl = out["nllh_test"]
    assert nl["truth"] > 0.1 and 0 < nl["mrf_hashed"] < nl["truth"]
    assert abs(nl["mrf_hashed"] - nl["logistic_hashed"]) < 0.05
    assert out["peak_rss_mb_end"] >= out["peak_rss_mb_after_data"] > 0
    assert out["chain_mb"] > 0 and out["logistic_lambda"] in (4.0, 16.0)
