"""Folded values (``import-criteo --max-modalities``): a folded pair row is a box.

A row that sums S_r source cells, m_r of which the pairs file does not list (each had a
true count ≤ k), is listed ≤ d ≤ listed + k·m_r; an absent one 0 ≤ d ≤ k·S_r.  The import
counts m_r from the files, the release carries it, the PCD trainer and the exact fit use
the boxes, and PCD lands on the exact box optimum where the old exact targets do not.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, DivergenceError, TableLayout, aggregate
from aggmrf_explore.exact import all_states, expected_statistics, fit_exact
from aggmrf_explore.io import read_release, write_release
from aggmrf_explore.io.criteo import OTHER, import_criteo, read_criteo, write_criteo
from aggmrf_explore.mrf import PCDTrainer, default_settings, rescaling_ratio
from aggmrf_explore.pcd import Params, Penalty, Targets, pcd_update
from aggmrf_explore.tables.suppression import (
    DualStep,
    Suppression,
    apply_suppression,
    box_targets,
    folded_bounds,
    row_noise_sd,
    source_cells,
    summed_cells,
)

K_SUPP = 10.0
M_SOURCE = (12, 9, 4)  # hash_2 is not folded; its rare value 3 makes absent folded rows
ZIPF = (1.5, 1.5, 4.0)
MAX_MODALITIES = 4
# PCD (6 000 iterations, averaged) against the exact box optimum, max |ΔP(Y=1|x)| over every
# state: 1.7e-3 measured.  Deliberate bugs land far outside: the folded rows' d̂ clipped into
# the box without the proximal form 1.5e-2, folded rows as exact targets (the old model)
# 5.3e-2, the exact fit's label-sum box collapsed to its lower end 2.9e-1.
TOL = 3e-3
SIGMA_SMALL = 0.01


def _source(seed: int = 0, n: int = 4000):
    """(exact source aggregates, their suppressed release): three Zipf features hash_0..2
    with integer values, a label depending on them and a cross."""
    rng = np.random.default_rng(seed)
    names = [f"hash_{i}" for i in range(len(M_SOURCE))]
    labels = [[str(v) for v in range(m)] for m in M_SOURCE]
    lay = TableLayout.all_pairs(M_SOURCE, names, modality_labels=labels)
    X = np.column_stack(
        [np.minimum(rng.zipf(a, n) - 1, m - 1) for a, m in zip(ZIPF, M_SOURCE, strict=True)]
    )
    X = X.astype(np.int32)
    logit = -1.0 + 0.4 * (X[:, 0] % 3) - 0.3 * (X[:, 1] % 2) + 0.5 * ((X[:, 0] + X[:, 2]) % 2)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    agg = aggregate(X, y, lay)
    pairs = {i: K_SUPP for i, t in enumerate(lay.tables) if len(t) == 2}
    return agg, apply_suppression(agg, pairs)


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """(exact source, suppressed source, challenge files, folded release imported).

    The files hold exact sums; the import declares σ = 0.01 (a folded row's box is widened
    by 2σ·√s_r, :func:`folded_bounds`), so the boxes are those of the suppression alone and
    some of their bounds are active.  ``noisy`` is the same files imported with the
    challenge's σ = 17."""
    d = tmp_path_factory.mktemp("folded")
    agg, sup = _source()
    files = write_criteo(sup, sup.c, d / "aggregated_pairs.csv", d / "aggregated_singles.csv")
    meta_path, rel = import_criteo(
        *files, d / "release", max_modalities=MAX_MODALITIES, sigma=SIGMA_SMALL
    )
    return agg, sup, files, rel, meta_path.parent


@pytest.fixture(scope="module")
def noisy(folded, tmp_path_factory):
    """The folded fixture's files imported with σ = 17: (release, its directory)."""
    d = tmp_path_factory.mktemp("noisy")
    meta_path, rel = import_criteo(*folded[2], d / "release", max_modalities=MAX_MODALITIES)
    return rel, meta_path.parent


def _code_maps(rel) -> list[dict[int, int]]:
    """Per feature: source value → folded code (the kept values, the rest "(other)")."""
    out = []
    for f, labs in enumerate(rel.data.layout.modality_labels):
        kept = {int(v): k for k, v in enumerate(labs) if v != OTHER}
        out.append({v: kept.get(v, len(labs) - 1) for v in range(M_SOURCE[f])})
    return out


def test_import_counts_each_folded_rows_suppressed_cells_exactly(folded):
    """Per folded pair row: m_r = its source cells the pairs file does not list (brute force
    over the source cells), slack k·m_r; absent rows k·S_r; the true count lies in the box."""
    agg, sup, _, rel, _ = folded
    lay, src_lay, box = rel.data.layout, sup.layout, rel.data.suppression
    maps = _code_maps(rel)
    S = np.zeros(lay.K, dtype=np.int64)  # source cells per folded row
    listed = np.zeros(lay.K, dtype=np.int64)  # of which listed
    true_d = np.zeros(lay.K)
    for ti, t in enumerate(src_lay.tables):
        if len(t) != 2:
            continue
        tj = lay.table_index(tuple(t))
        codes = src_lay.row_codes(ti)
        rows = (
            lay.offsets[tj]
            + np.asarray([maps[t[0]][a] for a in codes[:, 0]]) * lay.strides[tj, t[0]]
            + np.asarray([maps[t[1]][b] for b in codes[:, 1]]) * lay.strides[tj, t[1]]
        )
        src_rows = np.arange(src_lay.offsets[ti], src_lay.offsets[ti + 1])
        np.add.at(S, rows, 1)
        np.add.at(listed, rows, (~sup.suppression.rows[src_rows]).astype(np.int64))
        np.add.at(true_d, rows, agg.d[src_rows])
    pair = np.isin(lay.row_table(), [i for i, t in enumerate(lay.tables) if len(t) == 2])
    np.testing.assert_array_equal(box.rows, pair & (listed == 0))
    on = pair & (listed > 0)
    np.testing.assert_array_equal(box.slack[on], K_SUPP * (S - listed)[on])
    np.testing.assert_array_equal(box.slack[~on], 0.0)
    np.testing.assert_array_equal(box.bound[box.rows], K_SUPP * S[box.rows])
    assert np.any(box.rows & (S > 1))  # an absent folded row: 0 ≤ d ≤ k·S_r
    assert box.n_folded > 3 and rel.report["pair_rows_missing_cells"] == box.n_folded
    assert rel.report["pair_cells_missing_from_listed_rows"] == int((S - listed)[on].sum())
    # each listed row sums its listed source cells: their noise adds up (σ·√s_r)
    s = summed_cells(lay, box)
    np.testing.assert_array_equal(s[on], listed[on])
    np.testing.assert_array_equal(s[box.rows], 0.0)
    sd = row_noise_sd(lay, box, rel.data.noise)
    np.testing.assert_allclose(sd, np.where(s > 1, SIGMA_SMALL * np.sqrt(s), 0.0))
    singles = lay.table_index(("hash_0",))
    assert s[lay.offsets[singles + 1] - 1] == M_SOURCE[0] - (MAX_MODALITIES - 1)  # "(other)"
    # the truth is inside every box (no noise here: the listed values are exact sums)
    lo, hi = box.limits(rel.data.d)
    assert np.all(true_d[pair] >= lo[pair] - 1e-9) and np.all(true_d[pair] <= hi[pair] + 1e-9)
    assert np.any(true_d[on] > rel.data.d[on])  # and the listed sums do miss records
    # without folding nothing has slack, and absent rows keep the bound k
    plain = read_criteo(*folded[2]).data.suppression
    assert not plain.slack.any() and not plain.source_values
    np.testing.assert_array_equal(plain.bound[plain.rows], K_SUPP)


def test_release_files_carry_the_boxes(folded, tmp_path):
    """release.json declares the source values per modality, the pair files a
    ``suppressed_cells`` column; the reader (both labels, directory and long CSV) rebuilds
    the same boxes."""
    _, _, _, rel, out = folded
    box = rel.data.suppression
    meta = json.loads((out / "release.json").read_text())
    assert meta["source_values"]["hash_0"] == {OTHER: M_SOURCE[0] - (MAX_MODALITIES - 1)}
    pair_files = [t["file"] for t in meta["tables"] if len(t["features"]) == 2]
    assert all("suppressed_cells" in pd.read_csv(out / f).columns for f in pair_files)
    got = [read_release(out, label=label).data.suppression for label in ("click", "sale")]
    long = write_release(read_release(out).data, tmp_path / "long.csv", fmt="long")
    got.append(read_release(long.with_suffix(".csv")).data.suppression)
    for g in got:
        for a in ("rows", "bound", "slack"):
            np.testing.assert_array_equal(getattr(g, a), getattr(box, a))
        assert g.thresholds == box.thresholds and g.cells == box.cells
        assert {f: v.tolist() for f, v in g.source_values.items()} == {
            f: v.tolist() for f, v in box.source_values.items()
        }


def _copy_release(src, dst):
    dst.mkdir()
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst


def test_reader_checks_the_declared_cells(folded, tmp_path):
    _, _, _, rel, out = folded
    lay = rel.data.layout
    meta = json.loads((out / "release.json").read_text())
    entry = next(t for t in meta["tables"] if t["features"] == ["hash_0", "hash_1"])
    # a row declaring more missing cells than it has source cells (less one listed)
    bad = _copy_release(out, tmp_path / "too_many")
    frame = pd.read_csv(bad / entry["file"], dtype=str, keep_default_na=False)
    frame.loc[0, "suppressed_cells"] = "1000000"
    frame.to_csv(bad / entry["file"], index=False)
    with pytest.raises(AggMRFError, match="suppressed_cells = 1000000 is impossible"):
        read_release(bad)
    # a fraction is not a number of cells
    frame.loc[0, "suppressed_cells"] = "1.5"
    frame.to_csv(bad / entry["file"], index=False)
    with pytest.raises(AggMRFError, match="not an integer ≥ 0"):
        read_release(bad)
    # source values of a feature the release does not have
    odd = _copy_release(out, tmp_path / "odd")
    m = dict(meta, source_values={"hash_9": {OTHER: 3}})
    (odd / "release.json").write_text(json.dumps(m))
    with pytest.raises(AggMRFError, match="names the feature 'hash_9'"):
        read_release(odd)
    # without the column a listed row gets the upper bound m_r ≤ S_r − 1
    loose = _copy_release(out, tmp_path / "loose")
    frame = pd.read_csv(loose / entry["file"], dtype=str, keep_default_na=False)
    frame.drop(columns="suppressed_cells").to_csv(loose / entry["file"], index=False)
    got = read_release(loose).data.suppression
    ti = lay.table_index(("hash_0", "hash_1"))
    sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
    S = source_cells(lay, rel.data.suppression.source_values)[sl]
    listed = ~got.rows[sl]
    np.testing.assert_array_equal(got.slack[sl][listed], K_SUPP * (S[listed] - 1))
    assert np.all(got.slack >= rel.data.suppression.slack)


def test_box_targets_on_folded_rows(folded):
    """Count targets: d̂ inside [listed, listed + s], the nearest bound outside; label sums
    inside [listed c, min(listed c + s, d_t)]; the proximal form lands μ on 0 inside."""
    _, _, _, rel, _ = folded
    data = rel.data
    lay, box = data.layout, data.suppression
    f = box.folded
    rng = np.random.default_rng(3)
    mu, theta = rng.normal(0, 1.0, lay.K), rng.normal(0, 0.5, lay.K)
    Ed, Ec = expected_statistics(lay, mu, theta, data.n)
    d, c = data.d, data.c
    lo, hi = d[f], d[f] + box.slack[f]
    d_t, c_t = box_targets(Ed, Ec, d, c, box)
    np.testing.assert_array_equal(d_t[f], np.clip(Ed[f], lo, hi))
    assert np.any(Ed[f] < lo) or np.any(Ed[f] > hi)
    up = np.minimum(c[f] + box.slack[f], d_t[f])
    np.testing.assert_array_equal(c_t[f], np.clip(Ec[f], np.minimum(c[f], up), up))
    exact = ~box.rows & ~f
    np.testing.assert_array_equal(d_t[exact], d[exact])
    np.testing.assert_array_equal(c_t[exact], c[exact])
    # zero slack: the absent rows' targets only, bit for bit
    plain = Suppression(box.rows, box.bound, box.thresholds, box.cells)
    d0, c0 = box_targets(Ed, Ec, d, c, plain)
    np.testing.assert_array_equal(d0[~f], d_t[~f])
    np.testing.assert_array_equal(d0[f], d[f])
    # the proximal form: one PCD step from μ ≠ 0 lands on μ = 0 where the model's count is
    # inside the box, and takes the bound as target where it is outside
    # a release with folded rows trains with the samples' preconditioner (mrf.PCDTrainer)
    st = default_settings(lay, data.n, momentum=0.0, preconditioner="samples")
    pen = np.ones(lay.K)
    pen[0] = 0.0
    idx = np.flatnonzero(f)
    out = idx[::2]  # outside, above the box, μ < 0
    Ed, Ec = Ed.copy(), Ec.copy()
    Ed[idx] = d[idx] + 0.5 * box.slack[idx]
    Ed[out] = d[out] + box.slack[out] + 50.0
    Ec[idx] = 0.3 * Ed[idx]
    mu = mu.copy()
    mu[idx] = 1e-4
    mu[out] = -0.5
    lam_mu, lam_theta = 2 * st.lambda_mu * pen, 2 * st.lambda_theta * pen
    step = DualStep(mu, theta, lam_mu, lam_theta, st.step_mu, st.step_theta, 1.0)

    def ratio(t):
        return rescaling_ratio(Ed, t, lam_mu * mu, st.gradient)

    d_p, c_p = box_targets(Ed, Ec, d, c, box, ratio, step=step)
    np.testing.assert_array_equal(d_p[out], d[out] + box.slack[out])
    upd = pcd_update(
        Params(mu, theta), Ed, Ec, Targets(d_p, c_p), st, Penalty(pen, pen, True, 1.0, 1.0)
    )
    inside = np.setdiff1d(idx, out)
    np.testing.assert_allclose(upd.params.mu[inside], 0.0, atol=1e-12)
    assert np.all(upd.params.mu[out] < mu[out])  # pushed further down: d̂ above the box


def test_exact_box_kkt_on_folded_rows(folded):
    """Exact box max-ent: on each folded row E[D] − t + 2λμ = 0 with t the lower bound where
    μ > 0, the upper where μ < 0, and E[D] inside the box where μ = 0; the same for θ and the
    label sums; released exact rows fitted."""
    _, _, _, rel, _ = folded
    data = rel.data
    box = data.suppression
    m = fit_exact(data, 1.0, 1.0, box=True)
    Ed, Ec = expected_statistics(data.layout, m.mu, m.theta, data.n)
    f = box.folded
    sd = row_noise_sd(data.layout, box, data.noise)  # boxes widened by 2σ_r (σ = 0.01)
    fb = folded_bounds(box, data.projected().d, data.projected().c, sd)
    np.testing.assert_array_equal(fb.rows, np.flatnonzero(f))
    for w, E, a, b in ((m.mu[f], Ed[f], fb.d_lo, fb.d_hi), (m.theta[f], Ec[f], fb.c_lo, fb.c_hi)):
        t = np.where(w > 1e-7, a, np.where(w < -1e-7, b, E))
        np.testing.assert_allclose(E - t + 2.0 * w, 0.0, atol=2e-3)
        free = np.abs(w) <= 1e-7
        assert np.all(E[free] >= a[free] - 2e-3) and np.all(E[free] <= b[free] + 2e-3)
    assert np.any(m.mu[f] < -1e-3)  # an upper bound is active
    assert np.any(np.abs(m.mu[f]) <= 1e-7)  # and some rows lie inside their box
    exact = ~box.boxed
    exact[0] = False
    np.testing.assert_allclose(Ed[exact] + 2.0 * m.mu[exact], data.d[exact], rtol=1e-5, atol=2e-3)


def test_pcd_on_a_folded_release_lands_on_the_exact_box_optimum(folded):
    """The release as ``run --tables`` reads it: averaged PCD (6 000 iterations; 3 000 leave
    4.5e-3 in this problem's slowest direction) within TOL of the exact box optimum; the old
    model (folded rows as exact targets) is far from it."""
    _, _, _, _, out = folded
    data = read_release(out).data
    lay = data.layout
    st = default_settings(lay, data.n, n_gibbs=20_000)
    exact_box = fit_exact(data, st.lambda_mu, st.lambda_theta, box=True)
    box = data.suppression
    old = replace(data, suppression=Suppression(box.rows, box.bound, box.thresholds, box.cells))
    exact_old = fit_exact(old, st.lambda_mu, st.lambda_theta, box=True)
    S = all_states(lay)
    p_box = exact_box.predict_proba(S)[:, 1]
    model = PCDTrainer(data, st).fit(6000).model
    dp = np.abs(model.predict_proba(S)[:, 1] - p_box).max()
    dp_old = np.abs(exact_old.predict_proba(S)[:, 1] - p_box).max()
    print(
        f"max |ΔP| PCD − exact box {dp:.3g}; exact with folded rows exact − exact box {dp_old:.3g}"
    )
    assert dp < TOL
    assert dp_old > 10 * TOL


@pytest.mark.slow  # 3 000 noise-aware iterations: 280 s on the CI's machine
def test_run_defaults_train_a_noisy_folded_release(noisy):
    """What ``run --tables`` does on the σ = 17 import (noise-aware, since the release
    declares its noise): no divergence, the model's counts of the folded rows inside their
    noise-widened boxes (± 3 sd of a count)."""
    rel, out = noisy
    data = read_release(out).data
    box = data.suppression
    sd = row_noise_sd(data.layout, box, data.noise)
    assert sd is not None and sd.max() > 17.0  # the folded rows' noise adds up
    fb = folded_bounds(box, data.projected().d, data.projected().c, sd)
    b, w = data.projected().d[fb.rows], 2.0 * sd[fb.rows]
    np.testing.assert_allclose(fb.d_lo, np.maximum(b - w, 0.0))
    np.testing.assert_allclose(fb.d_hi, b + w + box.slack[fb.rows])
    st = default_settings(data.layout, data.n, noise_aware=True)
    tr = PCDTrainer(data, st)
    try:
        tr.fit(3000)
    except DivergenceError as e:  # pragma: no cover - the failure this test guards
        pytest.fail(f"a folded release diverged: {e}")
    m = tr.model
    Ed, _ = expected_statistics(data.layout, m.mu, m.theta, data.n)
    tol = 3.0 * np.sqrt(np.maximum(Ed[fb.rows], 1.0))
    assert np.all(Ed[fb.rows] >= fb.d_lo - tol) and np.all(Ed[fb.rows] <= fb.d_hi + tol)
    # the plain MRF (projected targets) lands on the exact optimum of the widened boxes,
    # which differs from that of the boxes on the noisy listed sums themselves
    st = default_settings(data.layout, data.n, n_gibbs=20_000)
    exact_box = fit_exact(data, st.lambda_mu, st.lambda_theta, box=True)
    S = all_states(data.layout)
    p_box = exact_box.predict_proba(S)[:, 1]
    dp = np.abs(PCDTrainer(data, st).fit(6000).model.predict_proba(S)[:, 1] - p_box).max()
    tight = replace(data, noise=None)  # σ_r = 0: the boxes on the listed sums
    dp_tight = np.abs(
        fit_exact(tight, st.lambda_mu, st.lambda_theta, box=True).predict_proba(S)[:, 1] - p_box
    ).max()
    print(f"σ = 17: max |ΔP| PCD − exact box {dp:.3g}; unwidened − widened {dp_tight:.3g}")
    assert dp < TOL < dp_tight  # measured 1.8e-3 and 4.5e-3; PCD without widening: 5.0e-3


def test_noise_aware_targets_use_each_summed_rows_noise(noisy):
    """MRF-N's posterior on a row summing s_r noisy source rows uses their sd σ·√s_r; the
    other rows are bit for bit those without ``row_sd``."""
    from aggmrf_explore.privacy import noise_aware_targets
    from aggmrf_explore.privacy.posterior import posterior_mean_counts

    rel, _ = noisy
    data = rel.data
    sd = row_noise_sd(data.layout, data.suppression, data.noise)
    rng = np.random.default_rng(0)
    d_hat = np.maximum(data.d, 1.0) * rng.uniform(0.5, 1.5, data.layout.K)
    c_hat = 0.3 * d_hat
    d0, c0 = noise_aware_targets(data, d_hat, c_hat, 1.0)
    d1, c1 = noise_aware_targets(data, d_hat, c_hat, 1.0, row_sd=sd)
    r = np.flatnonzero(data.layout.released & (sd > 0))
    others = np.setdiff1d(np.arange(data.layout.K), r)
    assert r.size and np.array_equal(d1[others], d0[others])
    assert np.array_equal(c1[others], c0[others])
    want = posterior_mean_counts(data.d[r], np.maximum(d_hat[r], 1.0), data.n, sd[r])
    np.testing.assert_allclose(d1[r], want, rtol=1e-12)
    assert np.abs(d1[r] - d0[r]).max() > 1.0  # the wider noise matters
    # and the trainer's MRF-N targets are these (its first call computes them)
    tr = PCDTrainer(data, default_settings(data.layout, data.n, noise_aware=True))
    floor = tr.scale if tr.settings.noise_prior_floor else 0.0
    label_floor = floor * (tr.label_rate if tr.settings.label_floor == "rate" else 1.0)
    want_d, want_c = noise_aware_targets(
        data, d_hat, c_hat, floor, row_sd=sd, label_floor=label_floor
    )
    got = tr._targets(d_hat, c_hat)
    assert np.array_equal(got.d, want_d) and np.array_equal(got.c, want_c)
