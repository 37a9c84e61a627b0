"""Records needed for the same NLLH: ``--sizes`` parsing, nested subsamples, the
interpolation/extrapolation rule of ``selection.sample_size.records_needed``, the theoretical count of
``privacy.local.records_needed_theory`` against simulation, and the sweep's records outputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError
from aggmrf_explore.cli import main
from aggmrf_explore.datasets.generated import expected_tables
from aggmrf_explore.privacy.local import (
    local_release,
    make_local_mechanism,
    records_needed_theory,
)
from aggmrf_explore.selection.sample_size import (
    nested_subsample,
    parse_sizes,
    records_needed,
    records_table,
    resolve_sizes,
)
from aggmrf_explore.tables import AggregatedData, TableLayout


# ---------------------------------------------------------------------- --sizes
def test_sizes_fractions_and_counts():
    assert resolve_sizes(parse_sizes("0.25,0.5,1"), 1000) == [250, 500, 1000]
    assert resolve_sizes(parse_sizes("1000, 10_000,100"), 10_000) == [100, 1000, 10_000]
    assert resolve_sizes(parse_sizes("1,0.5,0.5"), 40) == [20, 40]  # sorted, distinct
    assert resolve_sizes(parse_sizes("1"), 77) == [77]


@pytest.mark.parametrize(
    "text,n,match",
    [
        ("0", 100, "> 0"),
        ("-0.5", 100, "> 0"),
        ("nan", 100, "> 0"),
        ("inf", 100, "> 0"),
        ("abc", 100, "not a number"),
        ("0.5,,1", 100, "comma-separated"),
        ("0.5,1000", 10_000, "mixes fractions"),
        ("100.5,200", 1000, "whole numbers"),
        ("2000", 1000, "more than the 1,000 training records"),
        ("0.001", 1000, "at least 10 records"),
    ],
)
def test_bad_sizes(text, n, match):
    with pytest.raises(AggMRFError, match=match):
        resolve_sizes(parse_sizes(text), n)


def test_nested_subsamples():
    a, b = nested_subsample(1000, 100, 3), nested_subsample(1000, 400, 3)
    assert a.size == 100 and b.size == 400 and set(a) <= set(b)
    assert np.all(np.diff(b) > 0)  # sorted, distinct
    assert nested_subsample(1000, 1000, 3) is None  # all records, in order
    assert not np.array_equal(nested_subsample(1000, 100, 4), a)  # another seed, another draw


# ---------------------------------------------------------------------- the rule
def test_records_needed_interpolates_in_log_n():
    """On a curve linear in log n the interpolation is exact (linear in n would miss by 30 %)."""
    sizes = np.array([1e3, 1e4, 1e5])
    curve = 0.05 * np.log(sizes) - 0.3
    for n_true in (2e3, 3e4, 99_000.0):
        got, status = records_needed(sizes, curve, 0.05 * math.log(n_true) - 0.3)
        assert status == "interpolated" and got == pytest.approx(n_true, rel=1e-9)


def test_records_needed_extrapolates_beyond_and_below():
    sizes = [1e3, 1e4, 1e5]
    curve = [0.0, 0.1, 0.15]  # + 0.05 per decade at the top
    got, status = records_needed(sizes, curve, 0.175)
    assert status == "extrapolated" and got == pytest.approx(1e5 * 10**0.5)
    got, status = records_needed(sizes, curve, 0.21)  # 10^1.2 × 1e5 > 10 × 1e5
    assert status == "beyond" and got == 1e6
    assert records_needed(sizes, [0.0, 0.1, 0.09], 0.2) == (1e6, "beyond")  # falling top
    assert records_needed(sizes, curve, -0.1) == (1e3, "below")
    # a non-monotone curve: the smallest n that reaches the target
    got, status = records_needed([1e3, 1e4, 1e5, 1e6], [0.0, 0.2, 0.1, 0.3], 0.1)
    assert status == "interpolated" and got == pytest.approx(10**3.5)
    # diverged (NaN) points are dropped; the result is always finite
    got, status = records_needed([1e3, 1e4, 1e5], [0.0, float("nan"), 0.2], 0.1)
    assert status == "interpolated" and got == pytest.approx(10**4)
    with pytest.raises(AggMRFError):
        records_needed([1e3, 1e4], [0.1, float("nan")], 0.0)


def test_records_table_pairs_each_central_size_with_the_local_curve():
    rows = []
    for n in (100, 1000, 10_000):
        central = 0.1 * math.log10(n)
        rows += [
            {"epsilon": 2.0, "model": "central MRF-N", "n_records": n, "mean": central},
            {"epsilon": 2.0, "model": "local MRF-N", "n_records": n, "mean": central - 0.05},
            {"epsilon": 2.0, "model": "central MRF", "n_records": n, "mean": 0.3},
            {"epsilon": 2.0, "model": "local MRF", "n_records": n, "mean": float("nan")},
        ]
    need = records_table(pd.DataFrame(rows), {2.0: lambda nc: 7.0 * nc})
    assert list(need["pair"]) == ["MRF-N"] * 3  # the all-NaN local MRF curve gives no rows
    assert list(need["n_central"]) == [100, 1000, 10_000]
    assert list(need["status"]) == ["interpolated", "interpolated", "extrapolated"]
    assert np.allclose(need["ratio"], 10**0.5) and np.allclose(need["theory_ratio"], 7.0)
    assert np.all(np.isfinite(need.select_dtypes("number")))


# ---------------------------------------------------------------------- the theory
def _small():
    """A 3 × 2 problem with a random joint law over (a, b, y): layout, P(a, b, y) (12,),
    states (12, 3), and the expected tables of n records (per record: n = 1)."""
    lay = TableLayout.all_pairs([3, 2], ["a", "b"], singles=True, pairs=True, intercept=True)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(12))
    states = np.array([(a, b, y) for a in range(3) for b in range(2) for y in range(2)])
    x, w = states[:, :2].astype(np.int32), probs
    px = np.array([w[2 * i] + w[2 * i + 1] for i in range(6)])
    py = np.array([w[2 * i + 1] for i in range(6)]) / px
    return lay, probs, states, expected_tables(lay, x[::2], px, py)


def test_theory_limits():
    lay, probs, states, per = _small()
    n = 10**6
    d, c = per.d * n, per.c * n
    nc = np.array([10.0, 100.0, 1e5, 1e7])
    # a channel that is nearly the identity and no central noise: the same number of records
    same = records_needed_theory(lay, make_local_mechanism(200.0, lay), d, c, n, 0.0, nc)
    assert same == pytest.approx(nc, rel=1e-6)
    mech = make_local_mechanism(2.0, lay)
    # σ = 50 on tables of 10–100 records: central noise dominates, n_l ∝ n_c² (and a local
    # release of fewer records matches such a noisy central one); far past the crossover
    # S/Q, sampling dominates: n_l ∝ n_c, with the noiseless ratio V/Q ≫ 1
    lo = records_needed_theory(lay, mech, d, c, n, 50.0, np.array([10.0, 100.0]))
    hi = records_needed_theory(lay, mech, d, c, n, 50.0, np.array([1e11, 1e13]))
    ratio = records_needed_theory(lay, mech, d, c, n, 0.0, 5.0) / 5.0
    assert lo[1] / lo[0] == pytest.approx(100.0, rel=0.02)
    assert hi[1] / hi[0] == pytest.approx(100.0, rel=0.02)
    assert ratio > 100.0  # ε = 2 split over 3 fields: local needs far more records
    assert hi[1] / 1e13 == pytest.approx(ratio, rel=0.01)
    assert lo[0] < 10.0  # noise-dominated central release: worse than 10 local records


def test_theory_matches_simulated_local_error():
    """V/n_l, the local χ² error index the theory uses, against 1 000 simulated local releases
    of n i.i.d. records (randomization and sampling): within 3 standard errors of the
    simulated mean (1 000 releases: SE ≈ 3.6 %; the χ² of one release is heavy-tailed, its
    small cells weigh 1/π)."""
    lay, probs, states, per = _small()
    mech = make_local_mechanism(3.0, lay)
    n, reps = 4000, 1000
    rng = np.random.default_rng(1)
    X0, y0 = states[:, :2].astype(np.int32), states[:, 2]
    truth = AggregatedData(lay, per.d * n, per.c * n, n)
    pi = {}
    for t, feats in enumerate(lay.tables):
        if feats:
            sl = slice(lay.offsets[t], lay.offsets[t + 1])
            pi[t] = np.concatenate([truth.d[sl] - truth.c[sl], truth.c[sl]]) / n
    chi2 = []
    for r in range(reps):
        idx = rng.choice(probs.size, size=n, p=probs)
        rel = local_release(X0[idx], y0[idx], lay, mech, seed=r)
        tot = 0.0
        for t, p in pi.items():
            sl = slice(lay.offsets[t], lay.offsets[t + 1])
            est = np.concatenate([rel.d[sl] - rel.c[sl], rel.c[sl]]) / n
            tot += float(np.sum((est - p) ** 2 / p))
        chi2.append(tot)
    # the theory's V: n_l = V / E_c; with E_c = 1/n_c (S = 0, Q = 1 is not true in general),
    # read V back as n_l(n_c) · (S/n_c² + Q/n_c) at σ = 0: V = n_l · Q / n_c
    Q = sum(float(np.sum(1.0 - p)) for p in pi.values())
    V = float(records_needed_theory(lay, mech, truth.d, truth.c, n, 0.0, 1.0)) * Q
    se = np.std(chi2) / np.sqrt(reps)
    assert abs(np.mean(chi2) - V / n) < 3.0 * se, (np.mean(chi2), se, V / n)
    assert se < 0.05 * V / n


# ---------------------------------------------------------------------- the sweep
SMALL = ["--dataset", "synthetic", "--n", "3000", "--iterations", "40", "--gibbs-samples", "1000"]


def test_sweep_sizes_writes_records_needed(tmp_path, capsys):
    out = tmp_path / "rn"
    flags = ["--epsilons", "8", "--noise-seeds", "2", "--privacy", "central,local"]
    status = main(["sweep", *SMALL, *flags, "--sizes", "0.25,0.5,1", "--out", str(out), "--json"])
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(set(frame["n_records"])) == [750, 1500, 3000]
    assert len(frame) == 3 * 2 * 4  # sizes × seeds × models
    need = pd.read_csv(tmp_path / "rn_records.csv")
    assert report["records_csv"] == str(tmp_path / "rn_records.csv")
    assert set(need["pair"]) == {"MRF", "MRF-N"} and set(need["n_central"]) == {750, 1500, 3000}
    assert set(need["status"]) <= {"interpolated", "extrapolated", "beyond", "below"}
    assert np.all(np.isfinite(need.select_dtypes("number"))) and np.all(need["theory_ratio"] > 1)
    png = (tmp_path / "rn_records.png").read_bytes()
    assert len(png) > 20_000 and png[:4] == b"\x89PNG"
    # subsampling changes the central tables: the smaller samples score differently
    cen = frame[frame["model"] == "central MRF"].groupby("n_records")["nllh_test"].mean()
    assert cen.nunique() == 3
    # the full size's rows are those of a sweep on all the records (no subsample drawn)
    out1 = tmp_path / "one"
    assert main(["sweep", *SMALL, *flags, "--sizes", "1", "--out", str(out1)]) == 0
    one = pd.read_csv(out1.with_suffix(".csv"))
    assert not (tmp_path / "one_records.csv").exists()  # one size: no records-needed
    full = frame[frame["n_records"] == 3000].reset_index(drop=True)
    assert np.allclose(full["nllh_test"], one["nllh_test"], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "sizes,match",
    [
        ("0", "--sizes must be finite numbers > 0"),
        ("-1", "--sizes must be finite numbers > 0"),
        ("nan", "--sizes must be finite numbers > 0"),
        ("half", "is not a number"),
        ("5000", "more than the 3,000 training records"),
        ("0.5,100", "mixes fractions"),
    ],
)
def test_sweep_bad_sizes(sizes, match, tmp_path, capsys):
    out = tmp_path / "never"
    status = main(
        ["sweep", *SMALL, "--privacy", "central,local", "--sizes", sizes, "--out", str(out)]
    )
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error:") and match in lines[0]
    assert not out.with_suffix(".csv").exists()
