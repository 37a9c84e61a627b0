"""Releases with several labels: the format, and each label's fit equals a
single-label fit with the same seed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, TableLayout, aggregate
from aggmrf_explore.cli import main
from aggmrf_explore.io import read_release, write_release
from aggmrf_explore.mrf import PCDTrainer, default_settings


@pytest.fixture(scope="module")
def two_labels():
    rng = np.random.default_rng(0)
    M = (4, 3, 3)
    lay = TableLayout.all_pairs(M, ["a", "b", "c"])
    n = 4000
    X = np.column_stack([rng.integers(0, m, n) for m in M]).astype(np.int32)
    click = (rng.random(n) < 0.2 + 0.15 * (X[:, 0] == 1)).astype(np.int64)
    sale = (rng.random(n) < 0.05 + 0.4 * click * (X[:, 1] == 2)).astype(np.int64)
    return aggregate(X, click, lay), aggregate(X, sale, lay), X, click, sale


@pytest.fixture(scope="module")
def releases(two_labels, tmp_path_factory):
    agg_click, agg_sale, *_ = two_labels
    root = tmp_path_factory.mktemp("ml")
    write_release(agg_click, root / "both", label="click", labels={"sale": agg_sale.c})
    write_release(agg_click, root / "click", label="click")
    write_release(agg_sale, root / "sale", label="sale")
    write_release(
        agg_click, root / "both.csv", fmt="long", label="click", labels={"sale": agg_sale.c}
    )
    return root


def test_format_is_backward_compatible(releases):
    meta = json.loads((releases / "both" / "release.json").read_text())
    assert meta["labels"] == ["click", "sale"] and meta["label"] == "click"
    assert "labels" not in json.loads((releases / "click" / "release.json").read_text())
    first = sorted((releases / "both").glob("*.csv"))[0]
    cols = list(pd.read_csv(first).columns)
    assert cols[-3:] == ["count", "label_sum", "label_sum.sale"]
    # the primary label reads as before; the column layout of a one-label release is unchanged
    one = pd.read_csv(sorted((releases / "click").glob("*.csv"))[0])
    assert list(one.columns)[-2:] == ["count", "label_sum"]


@pytest.mark.parametrize("where", ["both", "both.csv"])
def test_each_label_reads_as_its_single_label_release(releases, where):
    for label in ("click", "sale"):
        multi = read_release(releases / where, label=label).data
        single = read_release(releases / label).data
        np.testing.assert_array_equal(multi.d, single.d)
        np.testing.assert_array_equal(multi.c, single.c)
    default = read_release(releases / where)
    assert default.schema.label == "click"
    with pytest.raises(AggMRFError, match="its labels are"):
        read_release(releases / where, label="nope")


def test_each_label_fit_equals_the_single_label_fit(releases):
    """Same seed, same settings: bit-identical μ and θ (nothing is shared between labels)."""
    for label in ("click", "sale"):
        multi = read_release(releases / "both", label=label).data
        single = read_release(releases / label).data
        st = default_settings(multi.layout, multi.n, n_gibbs=1000, seed=4)
        a = PCDTrainer(multi, st).fit(40).model
        b = PCDTrainer(single, st).fit(40).model
        np.testing.assert_array_equal(a.theta, b.theta)
        np.testing.assert_array_equal(a.mu, b.mu)
    # and the two labels really give different fits
    c = PCDTrainer(read_release(releases / "both", label="click").data, st).fit(40).model
    assert not np.allclose(c.theta, b.theta)


def test_cli_label_all_reports_each_label(releases, two_labels, tmp_path, capsys):
    _, _, X, click, sale = two_labels
    test = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "click": click, "sale": sale})
    test.to_csv(tmp_path / "test.csv", index=False)
    common = ["--iterations", "30", "--gibbs-samples", "1000", "--seed", "2", "--json"]
    common += ["--test-csv", str(tmp_path / "test.csv")]
    assert main(["run", "--tables", str(releases / "both"), "--label", "all", *common]) == 0
    both = json.loads(capsys.readouterr().out)
    assert set(both["labels"]) == {"click", "sale"}
    for label in ("click", "sale"):
        assert main(["run", "--tables", str(releases / label), *common]) == 0
        single = json.loads(capsys.readouterr().out)
        assert both["labels"][label]["label"] == label
        assert (
            both["labels"][label]["models"]["mrf"]["nllh_test"]
            == single["models"]["mrf"]["nllh_test"]
        )
    assert main(["run", "--tables", str(releases / "both"), "--label", "nope"]) == 2
    assert "its labels are" in capsys.readouterr().err


def test_cli_validation_csv_chooses_lambda_and_iterations(releases, two_labels, tmp_path, capsys):
    _, _, X, click, sale = two_labels
    sample = pd.DataFrame({"a": X[:500, 0], "b": X[:500, 1], "c": X[:500, 2], "sale": sale[:500]})
    sample.to_csv(tmp_path / "sample.csv", index=False)
    args = ["run", "--tables", str(releases / "both"), "--label", "sale", "--iterations", "40"]
    args += ["--gibbs-samples", "1000", "--validation-csv", str(tmp_path / "sample.csv"), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["validation_csv"]
    assert v["n_sample"] == 500 and len(v["grid"]) == 4
    best = max(v["grid"], key=lambda r: r["nllh"])
    assert v["lambda_theta"] == best["lambda_theta"] and v["iterations"] == best["best_iteration"]
    assert out["settings"]["lambda_theta"] == v["lambda_theta"]
    assert out["settings"]["iterations"] == v["iterations"]
    assert main([*args, "--lambda-theta", "auto"]) == 2
