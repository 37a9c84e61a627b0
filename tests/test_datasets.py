import gzip
import json
import shutil
import time
from importlib import resources

import numpy as np
import pytest

from aggmrf_explore import datasets
from aggmrf_explore.datasets import (
    bundled,
    expected_tables,
    load_csv,
    load_dataset,
    read_csv_file,
    xor_distribution,
    xor_expected_tables,
    xor_states,
)
from aggmrf_explore.encoding import OTHER
from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.tables import aggregate

DATA = resources.files("aggmrf_explore") / "data"


# ---------------------------------------------------------------- adult / bank
def test_adult_counts_rate_and_encoding():
    datasets.clear_cache()
    t0 = time.perf_counter()
    ds = load_dataset("adult")
    enc = ds.encode()
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0  # cold load (decompress, md5, parse) + encode
    assert (ds.n_train, ds.n_test) == (32561, 16281)
    assert len(ds.feature_columns) == 14 and ds.label == "income"
    assert enc.y_train.mean() == pytest.approx(0.2408, abs=1e-4)
    assert enc.y_test.mean() == pytest.approx(0.2362, abs=1e-3)
    assert enc.positive_label == ">50K"
    assert set(ds.test["income"]) == {"<=50K", ">50K"}  # trailing '.' removed
    assert "?" in set(ds.train["workclass"])
    assert enc.X_train.dtype == np.int32 and enc.X_train.shape == (32561, 14)
    for X in (enc.X_train, enc.X_test):
        assert np.all(X >= 0) and np.all(X < enc.n_modalities[None, :])
    f = enc.feature_names.index("capital-gain")
    assert enc.n_modalities[f] <= 3  # mostly 0: decile edges merged
    assert enc.n_modalities[enc.feature_names.index("age")] == 10
    lay = enc.layout()
    assert lay.n_released_tables == 14 + 91


def test_adult_cached_and_copies():
    a = load_dataset("adult")
    a.train["age"] = 0
    t0 = time.perf_counter()
    b = load_dataset("adult")
    assert time.perf_counter() - t0 < 0.5
    assert b.train["age"].max() == 90  # the cache was not modified


def test_bank_split_and_rare_categories():
    ds = load_dataset("bank", seed=0)
    assert ds.n_train + ds.n_test == 41188
    assert abs(ds.n_train - 0.7 * 41188) <= 1
    assert len(ds.feature_columns) == 20
    enc = ds.encode()  # must not fail on categories seen only in the test split
    assert enc.y_train.mean() == pytest.approx(enc.y_test.mean(), abs=1e-3)
    f = enc.feature_names.index("default")
    assert enc.modality_labels[f][-1] == OTHER
    assert "yes" not in enc.modality_labels[f]  # 3 records in all: merged into (other)
    assert np.all(enc.X_test < enc.n_modalities[None, :])
    other = load_dataset("bank", seed=1)
    assert not other.train["duration"].equals(ds.train["duration"])
    again = load_dataset("bank", seed=0)
    assert again.train.equals(ds.train)


@pytest.fixture
def tmp_data(tmp_path, monkeypatch):
    for name in ("adult.data.gz", "adult.test.gz", "checksums.json"):
        shutil.copyfile(str(DATA / name), tmp_path / name)
    monkeypatch.setattr(bundled, "_data_file", lambda name: tmp_path / name)
    datasets.clear_cache()
    yield tmp_path
    monkeypatch.undo()
    datasets.clear_cache()


def test_checksum_failure_detected(tmp_data):
    raw = gzip.decompress((tmp_data / "adult.data.gz").read_bytes())
    bad = raw.replace(b"State-gov", b"State-gox", 1)
    (tmp_data / "adult.data.gz").write_bytes(gzip.compress(bad))
    with pytest.raises(AggMRFError, match=r"adult.data.gz is corrupted: md5.*reinstall"):
        load_dataset("adult")


def test_truncated_gzip_and_row_count_detected(tmp_data):
    (tmp_data / "adult.test.gz").write_bytes((tmp_data / "adult.test.gz").read_bytes()[:1000])
    with pytest.raises(AggMRFError, match="adult.test.gz is not a valid gzip"):
        load_dataset("adult")
    shutil.copyfile(str(DATA / "adult.test.gz"), tmp_data / "adult.test.gz")
    manifest = json.loads((tmp_data / "checksums.json").read_text())
    manifest["adult.data.gz"]["rows"] = 32560
    (tmp_data / "checksums.json").write_text(json.dumps(manifest))
    datasets.clear_cache()
    with pytest.raises(AggMRFError, match="parsed to 32561 rows, expected 32560"):
        load_dataset("adult")


def test_bundled_checksums_match_readme():
    manifest = json.loads((DATA / "checksums.json").read_text())
    assert manifest["adult.data.gz"]["md5"] == "5d7c39d7b8804f071cdd1f2a7c460872"
    assert manifest["adult.test.gz"]["md5"] == "35238206dfdf7f1fe215bbb874adecdc"
    assert manifest["bank-additional-full.csv.gz"]["md5"] == "f6cb2c1256ffe2836b36df321f46e92c"
    assert "CC BY 4.0" in (DATA / "CITATION.md").read_text()


# ---------------------------------------------------------------- toy / xor / synthetic
def test_toy_tables():
    ds = load_dataset("toy")
    enc = ds.encode()
    assert ds.n_train == ds.n_test == 5
    assert enc.modality_labels == [["1", "2"], ["A", "B"], ["a", "b"]]
    agg = aggregate(enc.X_train, enc.y_train, enc.layout())
    tab = agg.table_frame(["Feature 2", "Feature 3"]).set_index(["Feature 2", "Feature 3"])
    got = {k: (row["count"], row["label_sum"]) for k, row in tab.iterrows()}
    assert got == {("A", "b"): (2, 1), ("B", "a"): (2, 2), ("B", "b"): (1, 0), ("A", "a"): (0, 0)}
    assert agg.d[0] == 5 and agg.c[0] == 3


def test_xor_marginals():
    ds = load_dataset("xor", n=20000, seed=0)
    enc = ds.encode()
    X, y = enc.X_train, enc.y_train
    assert X.shape == (20000, 3) and enc.n_test == 20000
    assert np.array_equal(X[:, 2], X[:, 0] ^ X[:, 1])
    assert not np.array_equal(enc.X_test[:100], X[:100])  # another stream
    for i, j in ((0, 1), (0, 2), (1, 2)):  # pairwise independent, uniform cells
        cells = np.bincount(2 * X[:, i] + X[:, j], minlength=4) / len(X)
        assert np.allclose(cells, 0.25, atol=0.015)
    for v, p in ((0, 0.25), (1, 0.75)):
        assert y[X[:, 2] == v].mean() == pytest.approx(p, abs=0.02)
    assert np.array_equal(enc.true_proba_test, 0.25 + 0.5 * enc.X_test[:, 2])
    dist = xor_distribution()
    assert dist.shape == (8, 5) and dist["p_x"].sum() == pytest.approx(1.0)
    assert (dist["p_x"] == 0).sum() == 4
    live = dist[dist["p_x"] > 0]
    assert np.array_equal(live["X3"], live["X1"] ^ live["X2"])


def test_xor_expected_tables_are_the_limit_of_the_sample_tables():
    """The infinite-data tables (n = 1) are what the sample tables / n converge to."""
    exp = xor_expected_tables()
    assert exp.n == 1 and exp.d[0] == pytest.approx(1.0) and exp.c[0] == pytest.approx(0.5)
    lay = exp.layout
    # every pair table is uniform over its 4 cells (pairwise independence), c = d · P(Y=1)
    for t, feats in enumerate(lay.tables):
        if len(feats) == 2:
            rows = slice(lay.offsets[t], lay.offsets[t] + 4)
            np.testing.assert_allclose(exp.d[rows], 0.25)
    ds = load_dataset("xor", n=200_000, seed=1)
    enc = ds.encode()
    agg = aggregate(enc.X_train, enc.y_train, enc.layout())
    np.testing.assert_allclose(agg.d / agg.n, xor_expected_tables(enc.layout()).d, atol=5e-3)
    np.testing.assert_allclose(agg.c / agg.n, xor_expected_tables(enc.layout()).c, atol=5e-3)
    states = xor_states()
    assert states.dtype == np.int32 and states.shape == (8, 3)
    np.testing.assert_array_equal(states, xor_distribution()[["X1", "X2", "X3"]].to_numpy())
    # the generic form: a point mass on one state puts 1 in each of its rows
    one = expected_tables(lay, states[:1], np.array([1.0]), np.array([0.3]))
    hit = lay.rows(states[:1]).ravel()
    assert np.all(one.d[hit] == 1.0) and one.d.sum() == lay.n_tables
    np.testing.assert_allclose(one.c[hit], 0.3)
    with pytest.raises(AggMRFError, match="p_x and p_y1"):
        expected_tables(lay, states, np.ones(3), np.ones(3))


def test_synthetic_codes_and_truth():
    ds = load_dataset("synthetic", n=20000, n_features=4, n_modalities=3, seed=0)
    enc = ds.encode()
    gen = np.column_stack([ds.train[c].cat.codes.to_numpy() for c in ds.feature_columns])
    assert np.array_equal(enc.X_train, gen)
    lay = ds.truth["layout"]
    assert enc.layout().K == lay.K and enc.modality_labels[0] == ["a0", "a1", "a2"]
    assert 0.2 <= enc.y_train.mean() <= 0.8
    theta = ds.truth["theta"]
    p_true = 1 / (1 + np.exp(-(theta[lay.rows(enc.X_train)].sum(axis=1))))
    assert np.allclose(p_true, ds.true_proba_train)
    # empirical P(Y=1|x) matches the truth on well-populated states
    key = enc.X_train @ (3 ** np.arange(4))
    for k in np.unique(key):
        m = key == k
        if m.sum() >= 400:
            se = np.sqrt(0.25 / m.sum())
            assert abs(enc.y_train[m].mean() - ds.true_proba_train[m][0]) < 4 * se
    assert ds.truth["p_x"].sum() == pytest.approx(1.0)
    # informative: true probabilities are spread out
    assert ds.true_proba_train.std() > 0.1


def test_synthetic_many_modalities_codes_and_limits():
    ds = load_dataset("synthetic", n=3000, n_features=2, n_modalities=12, seed=3)
    enc = ds.encode()
    gen = np.column_stack([ds.train[c].cat.codes.to_numpy() for c in ds.feature_columns])
    assert np.array_equal(enc.X_train, gen)  # "a10" sorts after "a9"
    assert enc.n_modalities.tolist() == [12, 12]
    with pytest.raises(AggMRFError, match="2\\^20"):
        load_dataset("synthetic", n_features=21, n_modalities=2)


# ---------------------------------------------------------------- dispatch / selection
def test_load_dataset_errors_and_selection():
    with pytest.raises(AggMRFError, match="toy, xor, synthetic, criteo, adult, bank"):
        load_dataset("mnist")
    with pytest.raises(AggMRFError, match=r"does not accept \['bogus'\]"):
        load_dataset("xor", bogus=1)
    with pytest.raises(AggMRFError, match="exactly 5 records"):
        load_dataset("toy", n=3)
    ds = load_dataset("adult", features=["age", "sex"])
    assert ds.feature_columns == ["age", "sex"] and list(ds.test.columns) == [
        "age",
        "sex",
        "income",
    ]
    ds = load_dataset("bank", drop_features=["duration"])
    assert "duration" not in ds.feature_columns and len(ds.feature_columns) == 19
    with pytest.raises(AggMRFError, match=r"unknown features \['agee'\].*'age'"):
        load_dataset("adult", features=["agee"])
    with pytest.raises(AggMRFError, match="label column"):
        load_dataset("adult", drop_features=["income"])
    small = load_dataset("adult", n=1000, seed=1)
    assert small.n_train == 1000 and small.n_test == 16281


# ---------------------------------------------------------------- CSV
def _write(tmp_path, text, name="d.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _csv_text(n=40, sep=","):
    rng = np.random.default_rng(0)
    lines = [sep.join(["age", "color", "target"])]
    for i in range(n):
        color = rng.choice(["red", "blue"])
        lines.append(sep.join([str(20 + i), color, "yes" if i % 3 == 0 else "no"]))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("sep", [",", ";"])
def test_load_csv_ok(tmp_path, sep):
    p = _write(tmp_path, _csv_text(sep=sep))
    ds = load_csv(p, "target", test_fraction=0.25, seed=1)
    assert ds.n_train + ds.n_test == 40 and ds.n_test == 10
    assert ds.feature_columns == ["age", "color"] and ds.positive == "yes"
    enc = ds.encode()
    assert enc.X_train.shape == (30, 2) and set(np.unique(enc.y_train)) == {0, 1}
    t = _write(tmp_path, _csv_text(n=12, sep=sep), "t.csv")
    ds2 = load_csv(p, "target", test_csv=t, drop_features=["age"])
    assert ds2.n_train == 40 and ds2.n_test == 12 and ds2.feature_columns == ["color"]


def test_load_csv_errors(tmp_path):
    with pytest.raises(AggMRFError, match="file not found.*check the path"):
        load_csv(tmp_path / "nope.csv", "y")
    binary = tmp_path / "b.csv"
    binary.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(AggMRFError, match="binary file, not a CSV"):
        load_csv(binary, "y")
    garbage = _write(tmp_path, "a,b,y\n1,2,0\n" + '3,"4,1\n' * 3 + "5,6,1,7,8\n", "g.csv")
    with pytest.raises(AggMRFError, match="could not parse.*same number of fields"):
        load_csv(garbage, "y")
    p = _write(tmp_path, _csv_text())
    with pytest.raises(
        AggMRFError,
        match=r"label column 'Target' not found.*did you mean 'target'.*\['age', 'color', 'target'\]",
    ):
        load_csv(p, "Target")
    with pytest.raises(AggMRFError, match="3 distinct values"):
        load_csv(_write(tmp_path, _csv_text().replace("yes", "maybe", 2), "m.csv"), "target")
    with pytest.raises(AggMRFError, match="single class"):
        load_csv(_write(tmp_path, _csv_text().replace("yes", "no"), "s.csv"), "target")
    nan_text = _csv_text().replace("\n25,", "\n,", 1)
    with pytest.raises(AggMRFError, match=r"column 'age'.* 1 missing.*line 7.*Fill"):
        load_csv(_write(tmp_path, nan_text, "n.csv"), "target")
    with pytest.raises(AggMRFError, match="only 5 record.*at least 10"):
        load_csv(_write(tmp_path, _csv_text(n=5), "few.csv"), "target")
    for frac in (0, 1, 1.5, -0.1):
        with pytest.raises(AggMRFError, match="test_fraction must be strictly between 0 and 1"):
            load_csv(p, "target", test_fraction=frac)
    with pytest.raises(AggMRFError, match=r"unknown features \['size'\]"):
        load_csv(p, "target", features=["size"])
    one = _write(tmp_path, "just one column\n1\n2\n", "one.csv")
    with pytest.raises(AggMRFError, match="separator"):
        load_csv(one, "y")


def test_read_csv_file_is_the_checked_reader(tmp_path):
    p = _write(tmp_path, " a ; b ;y\n x ;NA;1\n")
    df = read_csv_file(p)
    assert list(df.columns) == ["a", "b", "y"] and df["a"].iloc[0] == "x"
    assert df["b"].isna().all()  # "NA" is missing, never a category
    (tmp_path / "z.csv.gz").write_bytes(gzip.compress(b"a,y\n1,0\n"))
    assert read_csv_file(tmp_path / "z.csv.gz").shape == (1, 2)
    with pytest.raises(AggMRFError, match="is a directory"):
        read_csv_file(tmp_path)
    with pytest.raises(AggMRFError, match="is empty"):
        read_csv_file(_write(tmp_path, "  \n", "e.csv"))


def test_load_csv_unseen_in_test_is_an_error_unless_other(tmp_path):
    train = _write(tmp_path, _csv_text(n=60))
    test = _write(tmp_path, _csv_text(n=10) + "80,green,no\n", "t.csv")
    with pytest.raises(AggMRFError, match="'green'.*--unseen other"):
        load_csv(train, "target", test_csv=test).encode()
    enc = load_csv(train, "target", test_csv=test, unseen="other").encode()
    assert enc.modality_labels[1] == ["blue", "red", OTHER]
    assert enc.X_test[-1, 1] == 2 and enc.X_test.dtype == np.int32
