"""Exported models reload exactly: same θ, same probabilities on raw records."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, TableLayout
from aggmrf_explore.encoding import Encoder, Schema
from aggmrf_explore.io import export_model_csv, export_model_json, load_model, save_model
from aggmrf_explore.mrf import MRFModel


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    n = 1500
    df = pd.DataFrame(
        {
            "income": rng.normal(50.0, 20.0, n).round(3),
            "city": rng.choice(["Paris", "Lyon", "Nice", "Lille"], n),
            "kids": rng.integers(0, 4, n),
        }
    )
    enc = Encoder(n_bins=5, unseen="other").fit(df)
    X = enc.transform(df)
    lay = TableLayout.all_pairs(
        enc.n_modalities, enc.feature_names, modality_labels=enc.modality_labels
    )
    theta = rng.normal(0, 0.7, lay.K)
    mu = rng.normal(0, 0.3, lay.K)
    return df, enc, X, MRFModel(lay, mu, theta)


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_reload_predicts_exactly(tmp_path, fitted, suffix):
    df, enc, X, model = fitted
    path = save_model(tmp_path / f"m{suffix}", model, enc)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.model.theta, model.theta)
    np.testing.assert_array_equal(loaded.model.mu, model.mu)
    new = df.sample(300, random_state=0).assign(
        city=lambda d: d["city"].where(d.index % 7 > 0, "Brest")
    )
    expected = model.predict_proba(enc.transform(new))[:, 1]
    np.testing.assert_array_equal(loaded.predict_proba(new), expected)


def test_json_string_api(fitted):
    df, enc, X, model = fitted
    d = json.loads(export_model_json(model, enc))
    assert d["format"] == "aggmrf-model" and d["intercept"]["theta"] == model.theta[0]
    age = next(f for f in d["schema"]["features"] if f["name"] == "income")
    assert age["kind"] == "numeric" and len(age["edges"]) == len(age["modalities"]) - 1
    pair = next(t for t in d["tables"] if t["features"] == ["income", "city"])
    assert len(pair["rows"]) == model.layout.n_modalities[0] * model.layout.n_modalities[1]
    csv = export_model_csv(model, Schema.from_encoder(enc))
    assert csv.splitlines()[1].startswith("intercept,")


def test_schema_must_match_model(fitted):
    _, enc, _, model = fitted
    other = MRFModel(TableLayout.all_pairs([2, 2]), np.zeros(9), np.zeros(9))
    with pytest.raises(AggMRFError, match="disagree"):
        export_model_json(other, enc)


def test_bad_model_file(tmp_path):
    p = tmp_path / "m.json"
    p.write_text('{"format": "something-else"}')
    with pytest.raises(AggMRFError, match="not an aggmrf model"):
        load_model(p)


# ---------------------------------------------------------------------- hostile models
@pytest.mark.parametrize(
    "edit, pattern",
    [
        (lambda m: m.__setitem__("version", 2), "version"),
        (lambda m: m.__setitem__("version", "1"), "version"),
        (lambda m: m["intercept"].__setitem__("theta", 1e308), "theta"),
        (lambda m: m["tables"][0]["rows"][0].__setitem__("theta", "x"), "theta"),
        (lambda m: m["tables"][0]["rows"][0].__setitem__("mu", None), "mu"),
        (lambda m: m["schema"]["features"][0].__setitem__("modalities", 3), "modalities"),
        (lambda m: m.__setitem__("tables", "all"), "tables"),
    ],
)
def test_model_fields_checked(tmp_path, fitted, edit, pattern):
    _, enc, _, model = fitted
    m = json.loads(export_model_json(model, enc))
    edit(m)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(m))
    with pytest.raises(AggMRFError, match=pattern):
        load_model(p)


def test_model_json_constants_and_directories_refused(tmp_path, fitted):
    p = tmp_path / "m.json"
    p.write_text('{"format": "aggmrf-model", "intercept": {"theta": Infinity}}')
    with pytest.raises(AggMRFError, match="intercept.theta is Infinity"):
        load_model(p)
    with pytest.raises(AggMRFError, match="directory"):
        load_model(tmp_path)


def test_save_model_checks_path_and_never_creates_directories(tmp_path, fitted):
    _, enc, _, model = fitted
    with pytest.raises(AggMRFError, match="does not exist"):
        save_model(tmp_path / "nodir" / "m.json", model, enc)
    assert not (tmp_path / "nodir").exists()
    with pytest.raises(AggMRFError, match=r"\.json or \.csv"):
        save_model(tmp_path / "m.txt", model, enc)


def test_model_csv_formula_cells_round_trip(tmp_path):
    df = pd.DataFrame({"=f": ["-x", "@y", "=z", "-1"] * 25, "k": ["a", "b"] * 50})
    enc = Encoder().fit(df)
    lay = TableLayout.all_pairs(
        enc.n_modalities, enc.feature_names, modality_labels=enc.modality_labels
    )
    model = MRFModel(lay, np.zeros(lay.K), np.linspace(-1, 1, lay.K))
    save_model(tmp_path / "m.csv", model, enc)
    text = (tmp_path / "m.csv").read_text()
    assert "'=f" in text and "'-x" in text and "'@y" in text and ",-1," in text
    back = load_model(tmp_path / "m.csv")
    np.testing.assert_array_equal(back.model.theta, model.theta)
    np.testing.assert_array_equal(
        back.predict_proba(df), model.predict_proba(enc.transform(df))[:, 1]
    )
