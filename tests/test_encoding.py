import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.encoding import OTHER, Encoder, Schema, encode_label
from aggmrf_explore.errors import AggMRFError


def _frame(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, size=n),
            "gain": np.where(rng.random(n) < 0.92, 0, rng.integers(100, 99999, size=n)),
            "kids": rng.integers(0, 5, size=n),
            "color": rng.choice(["red", "green", "blue"], size=n),
            "flag": rng.random(n) < 0.5,
        }
    )


def test_numeric_vs_categorical_rule():
    df = _frame()
    enc = Encoder().fit(df)
    assert enc.kinds == ["numeric", "numeric", "categorical", "categorical", "categorical"]
    # small-integer column: its values, in numeric order
    assert enc.modality_labels[2] == ["0", "1", "2", "3", "4"]
    assert enc.modality_labels[3] == ["blue", "green", "red"]
    assert enc.modality_labels[4] == ["False", "True"]
    assert enc.n_modalities.dtype == np.int64
    assert enc.inverse_labels is enc.modality_labels
    assert enc.feature_names == list(df.columns)


def test_deciles_codes_in_range_and_balanced():
    x = np.arange(1000, dtype=float)
    enc = Encoder(n_bins=10).fit(pd.DataFrame({"x": x}))
    X = enc.transform(pd.DataFrame({"x": x}))
    assert X.dtype == np.int32 and X.shape == (1000, 1)
    assert enc.n_modalities.tolist() == [10]
    counts = np.bincount(X[:, 0], minlength=10)
    assert counts.min() >= 95 and counts.max() <= 105
    labels = enc.modality_labels[0]
    assert labels[0].startswith("[0, ") and labels[0].endswith(")")
    assert labels[-1].endswith(", 999]")


def test_duplicate_edges_merged_mass_points():
    df = _frame(5000)
    enc = Encoder().fit(df)
    # 92 % zeros: the decile edges collapse; zero keeps its own bin
    assert enc.n_modalities[1] == 2
    X = enc.transform(df)
    assert np.array_equal(X[:, 1] == 0, df["gain"].to_numpy() == 0)
    # mass at the maximum keeps its own bin too
    x = np.r_[np.arange(20.0), np.full(500, 999.0)]
    enc2 = Encoder().fit(pd.DataFrame({"p": x}))
    codes = enc2.transform(pd.DataFrame({"p": x}))[:, 0]
    assert enc2.modality_labels[0][-1] == "999"
    assert np.array_equal(codes == enc2.n_modalities[0] - 1, x == 999)


def test_out_of_range_values_fall_in_edge_bins():
    df = _frame()
    enc = Encoder().fit(df)
    new = df.iloc[:2].copy()
    new["age"] = [-5, 500]
    X = enc.transform(new)
    assert X[0, 0] == 0 and X[1, 0] == enc.n_modalities[0] - 1


def test_codes_in_range_on_new_data():
    enc = Encoder().fit(_frame(seed=0))
    X = enc.transform(_frame(seed=1))
    assert np.all(X >= 0) and np.all(X < enc.n_modalities[None, :])


def test_unseen_error_message():
    enc = Encoder().fit(_frame())
    new = _frame(10)
    new.loc[[0, 3, 5], "color"] = "purple"
    with pytest.raises(AggMRFError, match=r"'color'.*3 row.*'purple'.*unseen='other'"):
        enc.transform(new)
    # a small-integer column is categorical: an unseen count is unseen too
    new2 = _frame(10)
    new2.loc[0, "kids"] = 9
    with pytest.raises(AggMRFError, match=r"'kids'.*'9'"):
        enc.transform(new2)


def test_unseen_other_policy():
    df = _frame()
    enc = Encoder(unseen="other").fit(df)
    assert enc.modality_labels[3] == ["blue", "green", "red", OTHER]
    assert enc.n_modalities.tolist()[2:] == [6, 4, 3]
    new = _frame(10)
    new.loc[[0, 3], "color"] = "purple"
    X = enc.transform(new)
    assert X[0, 3] == 3 and X[3, 3] == 3
    assert X[1, 3] < 3
    # numeric (binned) columns get no "(other)"
    assert OTHER not in enc.modality_labels[0]


def test_min_count_and_max_modalities():
    df = pd.DataFrame({"c": ["a"] * 50 + ["b"] * 30 + ["c"] * 3 + ["d"] * 2})
    enc = Encoder(min_count=5).fit(df)
    assert enc.modality_labels[0] == ["a", "b", OTHER]
    X = enc.transform(df)
    assert np.bincount(X[:, 0]).tolist() == [50, 30, 5]
    enc2 = Encoder(max_modalities=2).fit(df)
    assert enc2.modality_labels[0] == ["a", OTHER]
    # merged-but-seen values are fine under unseen="error"; never-seen ones are not
    with pytest.raises(AggMRFError, match="not seen"):
        enc2.transform(pd.DataFrame({"c": ["zzz"]}))


def test_natural_order_and_categorical_dtype():
    df = pd.DataFrame({"v": ["a10", "a2", "a1", "a2"]})
    assert Encoder().fit(df).modality_labels[0] == ["a1", "a2", "a10"]
    cat = pd.DataFrame({"v": pd.Categorical(["z", "z"], categories=["z", "y", "x"])})
    enc = Encoder().fit(cat)
    assert enc.modality_labels[0] == ["z", "y", "x"]  # declared order, unused kept


def test_missing_values_raise():
    df = _frame(20)
    df["age"] = df["age"].astype(float)
    df.loc[[2, 7], "age"] = np.nan
    with pytest.raises(AggMRFError, match=r"'age' has 2 missing.*row 2.*fillna.*dropna"):
        Encoder().fit(df)
    df2 = _frame(20)
    df2.loc[4, "color"] = "  "
    with pytest.raises(AggMRFError, match=r"'color' has 1 missing"):
        Encoder().fit(df2)
    enc = Encoder().fit(_frame(20))
    df3 = _frame(20)
    df3["color"] = df3["color"].astype(object)
    df3.loc[1, "color"] = None
    with pytest.raises(AggMRFError, match=r"'color' has 1 missing"):
        enc.transform(df3)


def test_missing_column_and_unfitted():
    with pytest.raises(AggMRFError, match="not fitted"):
        Encoder().transform(_frame(5))
    enc = Encoder().fit(_frame(30))
    with pytest.raises(AggMRFError, match=r"\['color'\].*missing"):
        enc.transform(_frame(5).drop(columns="color"))
    with pytest.raises(AggMRFError, match="unseen"):
        Encoder(unseen="ignore")


def test_inverse_transform_roundtrip():
    df = _frame(50)
    enc = Encoder().fit(df)
    back = enc.inverse_transform(enc.transform(df))
    assert back["color"].tolist() == df["color"].tolist()
    assert back.shape == (50, 5)


@pytest.mark.parametrize(
    "values, pos",
    [
        ([0, 1, 1, 0], "1"),
        ([0.0, 1.0, 1.0, 0.0], "1"),
        (["no", "yes", "yes", "no"], "yes"),
        (["No", "YES", "YES", "No"], "YES"),
        ([False, True, True, False], "True"),
        (["false", "true", "true", "false"], "true"),
        (["<=50K", ">50K", ">50K", "<=50K"], ">50K"),
        (["cat", "dog", "dog", "cat"], "dog"),
    ],
)
def test_encode_label_rules(values, pos):
    y, p = encode_label(pd.Series(values))
    assert p == pos
    assert y.dtype == np.int8
    assert y.tolist() == [0, 1, 1, 0]


def test_encode_label_positive_argument_and_errors():
    y, p = encode_label(pd.Series(["cat", "dog", "cat"]), positive="cat")
    assert p == "cat" and y.tolist() == [1, 0, 1]
    with pytest.raises(AggMRFError, match="not one of the label values"):
        encode_label(pd.Series(["cat", "dog"]), positive="bird")
    with pytest.raises(AggMRFError, match=r"3 distinct values.*'a'.*'b'.*'c'"):
        encode_label(pd.Series(["a", "b", "c", "a"], name="lab"))
    with pytest.raises(AggMRFError, match="single class"):
        encode_label(pd.Series(["a", "a"]))
    with pytest.raises(AggMRFError, match="1 missing"):
        encode_label(pd.Series([1.0, np.nan, 0.0]))
    # classes= allows a one-class split but rejects foreign values
    y, p = encode_label(pd.Series(["no", "no"]), positive="yes", classes=["no", "yes"])
    assert y.tolist() == [0, 0] and p == "yes"
    with pytest.raises(AggMRFError, match="outside the two classes"):
        encode_label(pd.Series(["no", "maybe"]), positive="yes", classes=["no", "yes"])


# ---------------------------------------------------------------------- one records → codes path
# The schema written to disk (release.json, model file) and read back must encode records
# exactly as the training encoder does: same codes, same "(other)", same error messages.
def _schemas_from_disk(enc, train, tmp):
    """The encoder's schema after a trip through release.json and through a model file."""
    from aggmrf_explore import TableLayout, aggregate
    from aggmrf_explore.io import load_model, read_release, read_schema, save_model, write_release
    from aggmrf_explore.mrf import MRFModel

    lay = TableLayout.all_pairs(
        enc.n_modalities, enc.feature_names, pairs=False, modality_labels=enc.modality_labels
    )
    agg = aggregate(enc.transform(train), np.zeros(len(train), dtype=np.int8), lay)
    write_release(agg, tmp / "rel", enc, label="y", positive_label="1")
    model = MRFModel(lay, np.zeros(lay.K), np.zeros(lay.K))
    return {
        "read_schema": read_schema(tmp / "rel"),
        "read_release": read_release(tmp / "rel").schema,
        "model.json": load_model(save_model(tmp / "m.json", model, enc)).schema,
        "model.csv": load_model(save_model(tmp / "m.csv", model, enc)).schema,
        "from_schema": Encoder.from_schema(read_schema(tmp / "rel")),
    }


def _error(fn, frame):
    with pytest.raises(AggMRFError) as e:
        fn(frame)
    return str(e.value)


@pytest.fixture(scope="module", params=["adult", "bank"])
def bundled(request):
    from aggmrf_explore import datasets

    ds = getattr(datasets, request.param)()
    feats = ds.feature_columns
    return ds.train[feats].reset_index(drop=True), ds.test[feats].reset_index(drop=True)


@pytest.mark.parametrize("unseen", ["error", "other"])
@pytest.mark.parametrize("min_count", [1, 50])
def test_exported_schema_encodes_like_the_encoder(bundled, tmp_path, unseen, min_count):
    train, test = bundled
    enc = Encoder(unseen=unseen, min_count=min_count).fit(train)
    schemas = _schemas_from_disk(enc, train, tmp_path)
    assert all(
        s.to_dict()["features"] == enc.to_schema().to_dict()["features"]
        for s in schemas.values()
        if not isinstance(s, Encoder)
    )
    X_train, X_test = enc.transform(train), enc.transform(test)
    for s in schemas.values():  # the full test split, a large slice of the training split
        np.testing.assert_array_equal(s.transform(train.iloc[::3]), X_train[::3])
        np.testing.assert_array_equal(s.transform(test), X_test)

    cats = [j for j, k in enumerate(enc.kinds) if k == "categorical"]
    nums = [j for j, k in enumerate(enc.kinds) if k == "numeric"]
    assert cats and nums
    if min_count > 1:  # rare training values were merged into "(other)" and stay there
        schema = enc.to_schema()
        merged = {
            j: [
                v
                for v, c in zip(schema.known[j], schema.codes[j], strict=True)
                if enc.modality_labels[j][c] == OTHER
            ]
            for j in cats
        }
        assert any(merged.values())
        for j, values in merged.items():
            name, other = enc.feature_names[j], len(enc.modality_labels[j]) - 1
            rows = train[name].isin(values).to_numpy()
            assert rows.any() == bool(values)
            assert np.all(X_train[rows, j] == other)

    # every categorical feature gets values never seen at fit time (strings and numbers);
    # numeric features get values far outside the training range (edge bins, not unseen)
    new = test.head(3000).copy()
    rows = {j: np.arange(5 * i, 5 * i + 3) for i, j in enumerate(cats)}
    for j, r in rows.items():
        col = enc.feature_names[j]
        if enc.to_schema().values[j] == "number":
            new[col] = new[col].astype(float)
            new.loc[r, col] = 123456.5
        else:
            new[col] = new[col].astype(object)
            new.loc[r, col] = f"never seen {j}"
    for j in nums:
        col = enc.feature_names[j]
        new[col] = new[col].astype(float)
        new.loc[[0, 1], col] = [-1e9, 1e9]
    if unseen == "other":
        X = enc.transform(new)
        for j, r in rows.items():
            assert np.all(X[r, j] == enc.modality_labels[j].index(OTHER))
        for j in nums:
            assert X[0, j] == 0 and X[1, j] == enc.n_modalities[j] - 1
        for s in schemas.values():
            np.testing.assert_array_equal(s.transform(new), X)
    else:
        for j in rows:  # one bad column at a time: each feature's message
            one = test.head(3000).copy()
            col = enc.feature_names[j]
            one[col] = new[col]
            msg = _error(enc.transform, one)
            assert f"column {col!r} has 3 row(s) with value(s) not seen at fit time" in msg
            assert "--unseen other" in msg
            for s in schemas.values():
                assert _error(s.transform, one) == msg


def test_exported_schema_gives_the_same_error_messages(bundled, tmp_path):
    train, test = bundled
    enc = Encoder().fit(train)
    schemas = _schemas_from_disk(enc, train, tmp_path)
    num = enc.feature_names[enc.kinds.index("numeric")]
    cat = enc.feature_names[enc.kinds.index("categorical")]
    holes = test.head(50).astype({num: float})
    holes.loc[[3, 9], num] = np.nan
    text = test.head(50).astype({num: object})
    text.loc[4, num] = "forty"
    blank = test.head(50).astype({cat: object})
    blank.loc[2, cat] = "  "
    cases = {
        "missing value": (holes, f"column {num!r} has 2 missing"),
        "blank cell": (blank, f"column {cat!r} has 1 missing"),
        "text in a numeric column": (text, f"column {num!r} must be numeric"),
        "missing column": (test.head(5).drop(columns=[cat]), f"columns [{cat!r}] were present"),
        "not a frame": (test.head(5).to_numpy(), "expects a pandas DataFrame"),
    }
    for what, (frame, start) in cases.items():
        msg = _error(enc.transform, frame)
        assert start in msg, what
        for s in schemas.values():
            assert _error(s.transform, frame) == msg, what


def test_schema_round_trip_and_encoder_from_schema():
    df = _frame(400)
    enc = Encoder(unseen="other", n_bins=4).fit(df)
    schema = enc.to_schema("y", 1, [0, 1])
    assert (schema.label, schema.positive_label, schema.classes) == ("y", "1", ["0", "1"])
    schema.modality_labels[0][0] = "changed"  # a copy: the encoder is untouched
    assert enc.modality_labels[0][0] != "changed"
    back = Encoder.from_schema(Schema.from_dict(enc.to_schema().to_dict()))
    assert back.unseen == "other" and back.feature_names == enc.feature_names
    np.testing.assert_array_equal(back.transform(df), enc.transform(df))
    assert Schema.from_encoder(enc).to_dict() == enc.to_schema().to_dict()
    with pytest.raises(AggMRFError, match="not fitted"):
        Encoder().to_schema()
    with pytest.raises(AggMRFError, match="fitted Encoder or a Schema"):
        Schema.from_encoder(object())


def test_labels_stay_distinct_when_six_digits_collide():
    # two small-count values equal to 6 significant digits: labels shown in full
    df = pd.DataFrame({"p": [1000000.1, 1000000.2, 1000000.1, 3.0]})
    enc = Encoder().fit(df)
    assert enc.modality_labels[0] == ["3", "1000000.1", "1000000.2"]
    assert enc.to_schema().to_dict()["features"][0]["modalities"] == enc.modality_labels[0]
