"""Suppression, the parts around the trainer: the model's d̂ on suppressed rows
(per cell, per table, by sampling), splits and sub-releases of a suppressed release (what
``--lambda-theta auto`` fits), and the explorer view's data."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import AggMRFError, TableLayout, aggregate
from aggmrf_explore import mrf as mrf_module
from aggmrf_explore.exact import all_states, expected_statistics
from aggmrf_explore.explorer.views.suppression_view import (
    INSIDE,
    OUTSIDE,
    THRESHOLD,
    summary_markdown,
    suppression_data,
)
from aggmrf_explore.kernels import make_chain
from aggmrf_explore.privacy import GaussianMechanism, release
from aggmrf_explore.selection.lambda_theta import choose_lambda_theta
from aggmrf_explore.selection.releases import split_release, sub_release
from aggmrf_explore.tables.suppression import (
    apply_suppression,
    model_counts,
    suppress_pair_tables,
    suppressed_cells,
    suppression_check,
)

K = 10.0


def _release(seed: int = 0, n: int = 4000, M=(8, 6, 4)):
    """Records with Zipf-like marginals (so pair cells ≤ 10 exist), exact and suppressed."""
    rng = np.random.default_rng(seed)
    lay = TableLayout.all_pairs(M)
    X = np.column_stack([np.minimum(rng.zipf(1.5, n) - 1, m - 1) for m in M]).astype(np.int32)
    y = (rng.random(n) < 0.2 + 0.3 * (X[:, 0] == 0)).astype(np.int64)
    agg = aggregate(X, y, lay)
    return agg, suppress_pair_tables(agg, K)


@pytest.fixture(scope="module")
def rel():
    return _release()


def test_suppressed_cells_and_check_count_d_hat_outside_the_box(rel):
    agg, sup = rel
    box = sup.suppression
    r = np.flatnonzero(box.rows)
    assert r.size > 10
    d_hat = np.full(agg.layout.K, 100.0)  # released rows: irrelevant
    d_hat[r] = np.linspace(0.0, 2.0 * K, r.size)  # half of them above k
    cells = suppressed_cells(sup, d_hat)
    assert len(cells) == r.size and np.array_equal(cells["row"].to_numpy(), r)
    np.testing.assert_array_equal(cells["d_hat"].to_numpy(), d_hat[r])
    np.testing.assert_array_equal(cells["outside"].to_numpy(), d_hat[r] > K)
    np.testing.assert_allclose(cells["ratio"].to_numpy(), d_hat[r] / K)
    lay = agg.layout
    names = np.asarray(lay.table_names, dtype=object)[lay.row_table()[r]]
    assert list(cells["table"]) == list(names)
    check = suppression_check(sup, d_hat)
    assert check["suppressed_rows"] == r.size == box.n_rows
    assert check["outside"] == int((d_hat[r] > K).sum())
    assert check["max_ratio"] == pytest.approx(2.0)
    assert sum(v["outside"] for v in check["tables"].values()) == check["outside"]
    assert sum(v["suppressed"] for v in check["tables"].values()) == r.size
    for name, v in check["tables"].items():
        mine = cells[cells["table"] == name]
        assert v["outside"] == int(mine["outside"].sum())
    # nothing suppressed: empty frame, no check
    assert suppressed_cells(agg, d_hat).empty and suppression_check(agg, d_hat) is None
    with pytest.raises(AggMRFError, match="non-finite"):
        suppressed_cells(sup, np.where(np.arange(lay.K) == r[0], np.nan, d_hat))
    with pytest.raises(AggMRFError, match="shape"):
        suppressed_cells(sup, d_hat[:-1])


def test_model_counts_estimates_the_exact_expected_counts(rel):
    """model_counts: the mean chain count (scaled n/n') at (μ, θ) = n·P(row), checked
    against exact enumeration (3·10⁴ samples × 30 sweeps: a few % on rows with ≥ 50)."""
    _, sup = rel
    lay = sup.layout
    rng = np.random.default_rng(3)
    mu, theta = rng.normal(0, 0.7, lay.K), rng.normal(0, 0.7, lay.K)
    Ed, _ = expected_statistics(lay, mu, theta, sup.n)
    marg = [np.full(m, 1.0 / m) for m in lay.n_modalities]
    chain = make_chain(lay, 30_000, marg, seed=1)
    before = chain.codes.copy()
    d_hat = model_counts(chain, mu, theta, sup.n, sweeps=30, burn_in=30)
    assert np.array_equal(chain.codes, before)  # the caller's chain is untouched
    big = Ed >= 50
    rel_err = np.abs(d_hat[big] - Ed[big]) / Ed[big]
    assert rel_err.max() < 0.08, rel_err.max()
    assert abs(d_hat[0] - sup.n) < 1e-6 * sup.n  # the intercept row counts every record
    with pytest.raises(AggMRFError, match="sweeps"):
        model_counts(chain, mu, theta, sup.n, sweeps=0)
    assert all_states(lay).shape[0] == np.prod(lay.n_modalities)


@pytest.mark.parametrize("noisy", [False, True])
def test_split_release_keeps_suppressed_rows_with_scaled_bounds(rel, noisy):
    agg, _ = rel
    data = agg
    if noisy:  # Gaussian noise, then suppression by the true counts (as a data owner does)
        mech = GaussianMechanism.from_dict({"mechanism": "gaussian", "sigma": 3.0}, agg.layout)
        data = release(agg, mech, seed=0)
    pairs = {i: K for i, t in enumerate(agg.layout.tables) if len(t) == 2}
    sup = apply_suppression(data, pairs)
    box = sup.suppression
    A, B = split_release(sup, 0.5, seed=2)
    for half in (A, B):
        hb = half.suppression
        assert hb is not None, "the split dropped the suppression"
        np.testing.assert_array_equal(hb.rows, box.rows)  # the same absent cells
        np.testing.assert_array_equal(hb.bound, 0.5 * box.bound)  # bound f·k
        assert hb.thresholds == {t: 0.5 * K for t in pairs}
        assert np.all(half.d[hb.rows] == 0) and np.all(half.c[hb.rows] == 0)
        # n from the complete (single) tables: about half the records, not less
        assert abs(half.n - agg.n / 2) < 0.05 * agg.n
    f = 0.25
    A, B = split_release(sup, f, seed=2)
    np.testing.assert_array_equal(A.suppression.bound, f * box.bound)
    np.testing.assert_array_equal(B.suppression.bound, (1 - f) * box.bound)


def test_sub_release_keeps_the_suppression_of_its_tables(rel):
    _, sup = rel
    lay = sup.layout
    pair_idx = [i for i, t in enumerate(lay.tables) if len(t) == 2]
    keep = [1, pair_idx[0], pair_idx[2]]
    sub = sub_release(sup, keep)
    sb = sub.suppression
    assert sb is not None
    for j, t in enumerate(keep):
        tj = sub.layout.table_index(lay.tables[t])
        assert tj == j + 1
        a = slice(lay.offsets[t], lay.offsets[t + 1])
        b = slice(sub.layout.offsets[tj], sub.layout.offsets[tj + 1])
        np.testing.assert_array_equal(sb.rows[b], sup.suppression.rows[a])
        np.testing.assert_array_equal(sb.bound[b], sup.suppression.bound[a])
        assert sb.thresholds.get(tj) == sup.suppression.thresholds.get(t)
    assert sub_release(sup, [1, 2]).suppression is None  # singles only: nothing suppressed


@pytest.mark.parametrize("method", ["split", "leave-tables-out"])
def test_lambda_auto_fits_suppressed_rows_as_boxes(rel, monkeypatch, method):
    """Every fit of ``choose_lambda_theta`` on a suppressed release sees the suppression
    (the trainer calls box_targets, with the absent rows of the release), never absent = 0."""
    _, sup = rel
    seen = []
    real = mrf_module.box_targets

    def spy(d_hat, c_hat, d, c, box, ratio=None):
        seen.append(box.rows.sum())
        return real(d_hat, c_hat, d, c, box, ratio)

    monkeypatch.setattr(mrf_module, "box_targets", spy)
    fits = []
    real_init = mrf_module.PCDTrainer.__init__

    def init(self, data, *a, **kw):
        fits.append(data.suppression is not None)
        real_init(self, data, *a, **kw)

    monkeypatch.setattr(mrf_module.PCDTrainer, "__init__", init)
    choice = choose_lambda_theta(
        sup,
        [4.0, 1.0],
        method=method,
        iterations=20,
        settings_overrides={"n_gibbs": 500},
        seed=0,
    )
    assert np.isfinite(choice.lambda_theta)
    assert fits and all(fits), fits
    assert len(seen) >= 20 and all(s > 0 for s in seen)
    if method == "split":
        assert set(seen) == {sup.suppression.n_rows}


def test_suppression_view_data_is_finite_and_counts_every_cell(rel):
    _, sup = rel
    box = sup.suppression
    d_hat = np.zeros(sup.layout.K)
    r = np.flatnonzero(box.rows)
    d_hat[r] = np.linspace(0.0, 3.0 * K, r.size)
    cells = suppressed_cells(sup, d_hat)
    d = suppression_data(cells, iteration=7)
    (xi, yi), (xo, yo), (xk, yk) = d.layers[INSIDE], d.layers[OUTSIDE], d.layers[THRESHOLD]
    assert len(xi) + len(xo) == r.size and len(xo) == int((d_hat[r] > K).sum())
    assert sorted(np.concatenate([xi, xo])) == list(range(1, r.size + 1))
    assert np.all(yi <= K) and np.all(yo > K) and np.all(yk == K)
    # sorted by d̂: the rank order is the d̂ order
    x, y = np.concatenate([xi, xo]), np.concatenate([yi, yo])
    assert np.all(np.diff(y[np.argsort(x)]) >= 0)
    for a in (xi, yi, xo, yo, xk, yk, np.array(d.xlim), np.array(d.ylim)):
        assert np.all(np.isfinite(a))
    assert d.ylim[1] >= 3.0 * K and f"{r.size:,} suppressed cells" in d.title
    assert f"{len(xo):,} outside" in d.title and "iteration 7" in d.title
    # several thresholds: d̂/k drawn, the line at 1
    box2 = apply_suppression(sup, {1: 1e6, **dict.fromkeys(box.thresholds, K)})  # all of table 1
    d2 = suppression_data(suppressed_cells(box2, d_hat))
    assert d2.extra["unit"] == "ratio" and np.all(d2.layers[THRESHOLD][1] == 1.0)
    # empty and markdown
    empty = suppression_data(None)
    assert all(len(v[0]) == 0 for k, v in empty.layers.items() if k != THRESHOLD)
    md = summary_markdown(suppression_check(sup, d_hat))
    assert f"{r.size:,} of" in md and "| table |" in md
    assert "no suppressed cells" in summary_markdown(None)


def test_explorer_criteo_problem_is_a_suppressed_release():
    """The explorer's "Criteo-shaped (small, suppressed)" problem: its pair cells with true
    count ≤ 10 are absent (d = c = 0, marked); under Gaussian noise the cells of noisy count
    ≤ 10 are; singles complete; the records are the generator's (same seed → same data)."""
    from aggmrf_explore.datasets.criteo import SMALL_CARDINALITIES, small_dataset
    from aggmrf_explore.explorer.store.problems import get_problem, get_release, suppression_of

    b = get_problem("criteo", 3000, 1, None, True, True)
    exact = aggregate(b.encoded.X_train, b.encoded.y_train, b.layout)
    lay, box = b.layout, b.aggregated.suppression
    assert list(lay.n_modalities) == list(SMALL_CARDINALITIES)
    pair = np.isin(lay.row_table(), [i for i, t in enumerate(lay.tables) if len(t) == 2])
    np.testing.assert_array_equal(box.rows, pair & (exact.d <= suppression_of("criteo")))
    assert box.n_rows > 100
    assert np.all(b.aggregated.d[box.rows] == 0) and np.all(b.aggregated.c[box.rows] == 0)
    np.testing.assert_array_equal(b.aggregated.d[~box.rows], exact.d[~box.rows])
    # the noisy release: noise on every cell, then the cells of *noisy* count ≤ k left out
    noisy, _ = get_release(b, "gaussian", 1.0, 1e-7, "both", "analytic", 0)
    left_out = noisy.suppression.rows
    assert noisy.is_noisy and np.all(noisy.d[left_out] == 0) and not np.any(left_out & ~pair)
    assert np.all(noisy.d[pair & ~left_out] > suppression_of("criteo"))
    np.testing.assert_array_equal(noisy.true_d, exact.d)  # the noise went on the exact cells
    assert np.any(left_out != box.rows)  # decided on the noise, not on the true counts
    a, c = small_dataset(500, seed=4), small_dataset(500, seed=4)
    assert a.train.equals(c.train) and not a.train.equals(small_dataset(500, seed=5).train)
    with pytest.raises(AggMRFError, match="label"):
        small_dataset(10, label="conversion")
