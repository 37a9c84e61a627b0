"""Releases on disk: round trips (directory, long CSV, noisy) and clear errors on bad tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, TableLayout, aggregate
from aggmrf_explore.io import (
    ReleaseWarning,
    Schema,
    mechanism_from_meta,
    noise_meta,
    read_release,
    release_from_frames,
    write_release,
)
from aggmrf_explore.privacy import GaussianMechanism, LaplaceMechanism, make_mechanism, release


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float) + 0.5,
            "color": rng.choice(["red", "green", "blue"], n),
            "size": rng.choice(["S", "M"], n),
        }
    )
    y = (rng.random(n) < 0.2 + 0.3 * (df["color"] == "red") + 0.004 * (df["age"] - 18)).astype(int)
    from aggmrf_explore.encoding import Encoder

    enc = Encoder(n_bins=4).fit(df)
    X = enc.transform(df)
    lay = TableLayout.all_pairs(
        enc.n_modalities, enc.feature_names, modality_labels=enc.modality_labels
    )
    return df, y, enc, X, lay, aggregate(X, y, lay)


@pytest.mark.parametrize("fmt", ["dir", "long"])
def test_round_trip_exact(tmp_path, records, fmt):
    df, y, enc, X, lay, agg = records
    path = tmp_path / ("rel" if fmt == "dir" else "rel.csv")
    write_release(agg, path, enc, fmt=fmt, label="y", positive_label="1")
    rel = read_release(path)
    assert rel.layout.tables == lay.tables
    np.testing.assert_array_equal(rel.data.d, agg.d)
    np.testing.assert_array_equal(rel.data.c, agg.c)
    assert rel.data.n == agg.n and rel.data.noise is None and rel.warnings == []
    # the schema maps raw records (numeric bins included) exactly like the encoder
    np.testing.assert_array_equal(rel.schema.transform(df), X)
    assert rel.schema.edges[0] == [float(v) for v in enc.edges[0]]


def test_round_trip_noisy_keeps_values_and_mechanism(tmp_path, records):
    *_, lay, agg = records
    mech = make_mechanism("gaussian", 1.0, 1e-6, lay)
    noisy = release(agg, mech, seed=5)
    write_release(noisy, tmp_path / "n", accounting="both", simulation=True)
    meta = json.loads((tmp_path / "n" / "release.json").read_text())
    assert meta["noise"]["mechanism"] == "gaussian" and "true_count" not in str(meta)
    rel = read_release(tmp_path / "n")
    np.testing.assert_array_equal(rel.data.d, noisy.d)
    np.testing.assert_array_equal(rel.data.c, noisy.c)
    assert rel.data.n == noisy.n
    assert rel.data.noise.sigma == pytest.approx(mech.sigma, rel=1e-12)


def test_inferred_schema_without_metadata(tmp_path, records):
    *_, agg = records
    write_release(agg, tmp_path / "r")
    (tmp_path / "r" / "release.json").unlink()
    rel = read_release(tmp_path / "r")
    np.testing.assert_array_equal(rel.data.d, agg.d)
    assert rel.schema.feature_names == ["age", "color", "size"]


def _frames(agg):
    lay = agg.layout
    return [
        (
            lay.table_name(t),
            agg.table_frame(i)[[*(lay.feature_names[f] for f in t), "count", "label_sum"]],
        )
        for i, t in enumerate(lay.tables)
        if t
    ]


def test_label_sum_larger_than_count_names_table_and_row(records):
    *_, agg = records
    frames = _frames(agg)
    name, f = frames[4]
    f = f.copy()
    f.loc[2, "label_sum"] = f.loc[2, "count"] + 3
    frames[4] = (name, f)
    with pytest.raises(AggMRFError, match=rf"label_sum larger than count.*table '{name}'.*line 3"):
        release_from_frames(frames)


def test_totals_disagree(records):
    *_, agg = records
    frames = _frames(agg)
    name, f = frames[1]
    f = f.copy()
    f.loc[0, "count"] += 40
    frames[1] = (name, f)
    with pytest.raises(AggMRFError, match=rf"total count disagrees.*table '{name}'"):
        release_from_frames(frames)
    with pytest.warns(ReleaseWarning, match="total count"):
        rel = release_from_frames(frames, strict=False)
    assert any("total count" in w for w in rel.warnings)


def test_noise_explains_small_disagreement(tmp_path, records):
    *_, lay, agg = records
    noisy = release(agg, make_mechanism("laplace", 1.0, None, lay), seed=1)
    write_release(noisy, tmp_path / "n", simulation=True)
    rel = read_release(tmp_path / "n")  # noisy totals differ, within the declared noise
    assert rel.data.noise is not None


def test_same_feature_different_modalities(tmp_path, records):
    *_, agg = records
    write_release(agg, tmp_path / "r")
    (tmp_path / "r" / "release.json").unlink()
    p = next(tmp_path.glob("r/*color__size.csv"))
    df = pd.read_csv(p, dtype=str)
    df.loc[df["color"] == "red", "color"] = "rouge"
    df.to_csv(p, index=False)
    with pytest.raises(AggMRFError, match=r"feature 'color' has the modality '(red|rouge)'.*table"):
        read_release(tmp_path / "r")


def test_unknown_modality_with_declared_schema(tmp_path, records):
    *_, agg = records
    write_release(agg, tmp_path / "r")
    p = tmp_path / "r" / "003_size.csv"
    df = pd.read_csv(p, dtype=str)
    df.loc[1, "size"] = "XL"
    df.to_csv(p, index=False)
    with pytest.raises(AggMRFError, match=r"table 'size' \(003_size.csv\), line 3: 'size' = 'XL'"):
        read_release(tmp_path / "r")


@pytest.mark.parametrize(
    "edit, pattern",
    [
        (
            lambda df: df.assign(count=df["count"].astype(str).where(df.index != 1, "many")),
            r"line 3: count is 'many', not a finite number",
        ),
        (
            lambda df: pd.concat([df, df.iloc[[0]]], ignore_index=True),
            r"lines 2 and \d+ are the same row",
        ),
        (lambda df: df.drop(columns=["label_sum"]), r"has no column 'label_sum'"),
        (
            lambda df: df.assign(color=df["color"].where(df.index != 0, "")),
            r"line 2: feature 'color' is empty",
        ),
    ],
)
def test_malformed_table_messages(tmp_path, records, edit, pattern):
    *_, agg = records
    write_release(agg, tmp_path / "r")
    p = tmp_path / "r" / "002_color.csv"
    edit(pd.read_csv(p, dtype=str)).to_csv(p, index=False)
    with pytest.raises(AggMRFError, match=pattern) as e:
        read_release(tmp_path / "r")
    assert "color" in str(e.value)


def test_schema_unseen_value_is_a_clear_error(records):
    df, y, enc, *_ = records
    schema = Schema.from_encoder(enc)
    bad = df.head(3).assign(color=["red", "purple", "blue"])
    with pytest.raises(AggMRFError, match="'color'.*'purple'"):
        schema.transform(bad)


@pytest.mark.parametrize(
    "mech",
    [
        LaplaceMechanism(0.5, 6.0),
        GaussianMechanism(1.0, 1e-6, 2.0, "analytic"),
        GaussianMechanism(0.7, 1e-5, 3.0, "classic"),
        GaussianMechanism(2.0, 1e-7, 1.5, "adkdd21"),
    ],
    ids=["laplace", "analytic", "classic", "adkdd21"],
)
def test_mechanism_dict_round_trip(mech):
    d = json.loads(json.dumps(mech.to_dict()))
    back = type(mech).from_dict(d)
    assert back == mech and back.std == mech.std
    assert d["sigma"] == mech.std and d["mechanism"] == mech.name
    assert mechanism_from_meta(d) == mech
    meta = noise_meta(mech, "both")
    assert meta == {**mech.to_dict(), "accounting": "both", "neighbouring": meta["neighbouring"]}
    assert "add or remove one record" in meta["neighbouring"]
    other = GaussianMechanism if isinstance(mech, LaplaceMechanism) else LaplaceMechanism
    with pytest.raises(AggMRFError, match="not a"):
        other.from_dict(d)


def test_hand_written_noise_forms(records):
    *_, lay, _ = records
    assert mechanism_from_meta({"mechanism": "gaussian", "sigma": 30}).std == pytest.approx(30)
    assert mechanism_from_meta({"mechanism": "laplace", "scale": 20}).scale == pytest.approx(20)
    eps_only = mechanism_from_meta({"mechanism": "Gaussian", "epsilon": 1.0, "delta": 1e-6}, lay)
    assert eps_only == make_mechanism("gaussian", 1.0, 1e-6, lay)
    assert mechanism_from_meta({"mechanism": "none"}) is None and mechanism_from_meta(None) is None
    with pytest.raises(AggMRFError, match="unknown mechanism 'poisson'"):
        mechanism_from_meta({"mechanism": "poisson"})
    with pytest.raises(AggMRFError, match="'noise' is invalid.*needs epsilon"):
        mechanism_from_meta({"mechanism": "laplace"})
    with pytest.raises(AggMRFError, match="must be an object"):
        mechanism_from_meta(["gaussian"])


# ---------------------------------------------------------------------- hostile releases
def _hostile_release(tmp_path):
    """A release whose labels and feature names look like spreadsheet formulas."""
    from aggmrf_explore.encoding import Encoder

    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {
            "=cmd|' /C calc'!A0": rng.choice(["-2+3", "+x", "@SUM(1)", "'=q", "plain"], 400),
            "size": rng.choice(["S", "-1", "\tT"], 400),
        }
    )
    y = rng.integers(0, 2, 400)
    enc = Encoder().fit(df)
    lay = TableLayout.all_pairs(
        enc.n_modalities, enc.feature_names, modality_labels=enc.modality_labels
    )
    agg = aggregate(enc.transform(df), y, lay)
    write_release(agg, tmp_path / "r", enc)
    return agg, tmp_path / "r"


def test_formula_cells_neutralised_and_read_back(tmp_path):
    agg, path = _hostile_release(tmp_path)
    for f in path.glob("*.csv"):
        for cell in (
            pd.read_csv(f, dtype=str, keep_default_na=False, header=None).to_numpy().ravel()
        ):
            assert cell[:1] not in ("=", "+", "@", "\t") and not (
                cell.startswith("-") and cell != "-1"
            ), cell
    rel = read_release(path)
    assert rel.schema.feature_names == agg.layout.feature_names
    assert rel.schema.modality_labels == [list(m) for m in agg.layout.modality_labels]
    np.testing.assert_array_equal(rel.data.d, agg.d)


@pytest.mark.parametrize(
    "value, pattern",
    [
        ("../x.csv", "plain file name"),
        ("/etc/passwd", "plain file name"),
        ("sub/x.csv", "plain file name"),
        (".", "plain file name"),
        (5, "must be a string"),
    ],
)
def test_table_file_confined(tmp_path, records, value, pattern):
    agg = records[-1]
    write_release(agg, tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    meta["tables"][0]["file"] = value
    (tmp_path / "r" / "release.json").write_text(json.dumps(meta))
    with pytest.raises(AggMRFError, match=pattern):
        read_release(tmp_path / "r")


def test_symlink_out_fifo_and_oversized_table_refused(tmp_path, records):
    import os

    agg = records[-1]
    write_release(agg, tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    first = tmp_path / "r" / meta["tables"][0]["file"]
    outside = tmp_path / "outside.csv"
    outside.write_text(first.read_text())
    first.unlink()
    os.symlink(outside, first)
    with pytest.raises(AggMRFError, match="outside the release directory"):
        read_release(tmp_path / "r")
    first.unlink()
    os.mkfifo(first)
    with pytest.raises(AggMRFError, match="FIFO"):
        read_release(tmp_path / "r")
    first.unlink()
    first.write_text("x" * (3 * 2**20))
    with pytest.raises(AggMRFError, match="MiB"):
        read_release(tmp_path / "r")


@pytest.mark.parametrize(
    "text, pattern",
    [
        (b'{"n": NaN}', "NaN"),
        (b'{"n": 1, "n": 2}', "twice"),
        (b'{"n": 1e18}', "between"),
        (b'{"n": "many"}', "integer"),
        (b'{"version": 2}', "version"),
        (b'{"format": "x"}', "format"),
        (b'{"features": []}', "features"),
        (b'{"noise": "gaussian"}', "noise"),
        (b"\xff\xfe\xff", "UTF"),
    ],
)
def test_manifest_fields_checked(tmp_path, records, text, pattern):
    agg = records[-1]
    write_release(agg, tmp_path / "r")
    (tmp_path / "r" / "release.json").write_bytes(text)
    with pytest.raises(AggMRFError, match=pattern):
        read_release(tmp_path / "r")


def test_size_budget_before_reading_tables(tmp_path, records):
    from aggmrf_explore.tables.budget import Budget

    agg = records[-1]
    write_release(agg, tmp_path / "r")
    with pytest.raises(AggMRFError, match="max-rows"):
        read_release(tmp_path / "r", budget=Budget(max_rows=10))
    assert read_release(tmp_path / "r", budget=Budget(max_rows=agg.layout.K)).data.n == agg.n


def test_n_inconsistent_with_totals_is_refused(tmp_path, records):
    """n sets the scale of training: a forged n is refused (strict) or warned (lenient)."""
    agg = records[-1]
    write_release(agg, tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    meta["n"] = 10 * int(agg.n)
    (tmp_path / "r" / "release.json").write_text(json.dumps(meta))
    with pytest.raises(AggMRFError, match="'n' = "):
        read_release(tmp_path / "r")
    with pytest.warns(ReleaseWarning, match="'n' = "):
        rel = read_release(tmp_path / "r", strict=False)
    assert any("contradict" in w for w in rel.warnings)


def test_writer_never_creates_parents(tmp_path, records):
    with pytest.raises(AggMRFError, match="does not exist"):
        write_release(records[-1], tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()
