"""Plot functions of the explorer: pure functions of a history / arrays → HoloViews objects."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.explorer.views import plots, privacy_plots
from aggmrf_explore.explorer.views.help import EXPLAIN
from aggmrf_explore.explorer.views.series import downsample
from aggmrf_explore.explorer.views.table_view import table_display

hv.extension("bokeh")


def _history(n: int = 50) -> pd.DataFrame:
    it = np.arange(1, n + 1)
    return pd.DataFrame(
        {
            "iteration": it,
            "d_error": 1.0 / it,
            "c_error": 2.0 / it,
            "nllh_eval": [None if i % 3 else 0.4 * (1 - np.exp(-i / 10)) for i in it],
            "seconds": np.full(n, 0.01),
            "theta_norm": np.linspace(0, 1, n),
        }
    )


def _render(obj):
    fig = hv.render(obj, backend="bokeh")
    assert fig is not None
    return fig


def _labels(obj) -> set[str]:
    return {el.label for el in obj}


def test_nllh_plot_has_fixed_layers_titles_and_units():
    refs = {plots.REFERENCE_NAMES[0]: 0.42, plots.REFERENCE_NAMES[1]: 0.2}
    ov = plots.nllh_plot(_history(), refs)
    labels = _labels(ov)
    assert plots.MRF_NAME in labels
    assert {"skyline", "naive Bayes", "best pair"} <= labels
    fig = _render(ov)
    assert "NLLH" in fig.title.text
    assert "iteration" in fig.xaxis[0].axis_label
    assert "NLLH" in fig.yaxis[0].axis_label
    assert fig.legend and len(fig.legend[0].items) >= 3
    # the legend sits outside the data (one row above the plot), not over the curves
    assert fig.legend[0] in fig.above
    assert fig.toolbar_location is None  # no toolbar in the title row over the title
    # same structure with no data and no references
    empty = plots.nllh_plot(None, {})
    assert len(empty) == len(ov)
    _render(empty)


def test_nllh_plot_ignores_nan_and_inf():
    h = _history()
    h.loc[3, "nllh_eval"] = np.inf
    ov = plots.nllh_plot(h, {plots.REFERENCE_NAMES[0]: float("nan")})
    _render(ov)
    d = plots.nllh_data(h)
    assert np.isfinite(d.layers[plots.MRF_NAME][1]).all()


def _every_third(n: int) -> pd.DataFrame:
    """A long history as the explorer records it on Adult: NLLH every 3rd iteration."""
    it = np.arange(1, n + 1)
    curve = 0.13 + 0.28 * (1 - np.exp(-it / 400))
    return pd.DataFrame(
        {
            "iteration": it,
            "d_error": 0.5 / np.sqrt(it),
            "c_error": 0.6 / np.sqrt(it),
            "nllh_eval": np.where(it % 3 == 0, curve, np.nan),
        }
    )


@pytest.mark.parametrize("n", [4296, 3907, 7600, 9000])
def test_nllh_curve_of_a_long_run_follows_every_measured_point(n):
    """A past bug: ⌈n / 1500⌉ a multiple of 3 left no NLLH point (3 907) or a straight
    line between two (4 296): each series is now downsampled on its own measured rows."""
    h = _every_third(n)
    x, y = plots.nllh_data(h).layers[plots.MRF_NAME]
    measured = h.dropna(subset=["nllh_eval"])
    assert len(x) >= 100 and np.isfinite(y).all()
    assert x[-1] == measured["iteration"].iloc[-1]  # up to the current value
    assert x[0] == measured["iteration"].iloc[0]
    # no straight-line artefact: consecutive points are consecutive measurements or at
    # most two buckets apart on the log axis, and they lie on the measured curve (the
    # last value of each bucket)
    step = np.diff(np.log10(x))
    assert ((np.diff(x) == 3) | (step <= 2 / plots.NLLH_PER_DECADE + 1e-12)).all()
    truth = np.interp(x, measured["iteration"], measured["nllh_eval"])
    assert np.allclose(y, truth)
    assert len(x) <= np.log10(n) * plots.NLLH_PER_DECADE + 2


def test_the_iteration_axis_is_logarithmic_so_early_learning_has_room():
    """On Adult the MRF is near its final NLLH by iteration ~350; after 6 800 iterations a
    linear axis squeezed that into its left 5 %.  On the log axis the first 350 iterations
    take most of its width and keep a point each (every 3rd iteration measured)."""
    h = _every_third(6800)
    d = plots.nllh_data(h)
    x, _ = d.layers[plots.MRF_NAME]
    lo, hi = np.log10(d.xlim)
    assert d.xlim[0] == 1.0 and d.xlim[1] > 6800
    assert (np.log10(344) - lo) / (hi - lo) > 0.6
    assert (x <= 344).sum() >= 100
    assert plots.convergence_data(h).xlim == d.xlim
    fig = _render(plots.nllh_plot(h))
    assert type(fig.x_scale).__name__ == "LogScale"
    assert list(fig.xaxis[0].ticker.ticks)[:3] == [1.0, 10.0, 100.0]


def test_downsample_keeps_last_value_and_envelope():
    x = np.arange(1, 1001, dtype=float)
    y = np.where(x % 2 == 0, 1.0, 3.0)
    s = downsample(x, y, max_points=100, how="last")
    assert len(s) == 101 and s.x[-1] == 1000 and s.y[-1] == 1.0
    assert (s.lo[1:] == 1.0).all() and (s.hi[1:] == 3.0).all()
    m = downsample(x, y, max_points=100, how="mean")
    assert np.allclose(m.y[1:], 2.0)
    bx, by = m.band()
    assert len(bx) == 2 * len(m) and by.max() == 3.0 and by.min() == 1.0
    # unmeasured values (None / NaN / inf) are not points
    s = downsample([1, 2, 3, 4], [None, 1.0, np.inf, 2.0])
    assert list(s.x) == [2.0, 4.0]
    assert len(downsample([], [])) == 0
    with pytest.raises(ValueError):
        downsample([1], [1], how="median")


def _mrfn_history(n: int, floor: float) -> pd.DataFrame:
    """MRF-N as the trainer records it: targets refreshed on iterations 1, 4, 7, … (error
    below the Monte-Carlo floor right after the refresh), above the floor in between."""
    it = np.arange(1, n + 1)
    phase = (it - 1) % 3
    d = np.select([phase == 0, phase == 1], [0.4 * floor, 1.6 * floor], 2.2 * floor)
    return pd.DataFrame(
        {"iteration": it, "d_error": d, "c_error": d * 1.1, "nllh_eval": np.full(n, 0.3)}
    )


@pytest.mark.parametrize("n", [4296, 9000])
def test_mrfn_convergence_is_not_a_flat_line_below_the_floor(n):
    floor = 0.02
    d = plots.convergence_data(_mrfn_history(n, floor), floor=floor)
    x, y = d.layers[plots.CONVERGENCE_NAMES[0]]
    assert len(x) >= 100
    assert np.median(y) > floor  # the bucket means: 1.4 × the floor
    bx, by = d.layers["d̂ range"]
    assert by.min() < floor < by.max()  # the band shows the refresh dips and the rises
    assert x[-1] == n


def test_convergence_plot_log_axis_readable_ticks_and_floor_on_top():
    it = np.arange(1, 3001)
    h = pd.DataFrame(
        {
            "iteration": it,
            "d_error": 0.04 + 0.3 * np.exp(-it / 50),
            "c_error": 0.05 + 0.3 * np.exp(-it / 50),
            "nllh_eval": np.nan,
        }
    )
    ov = plots.convergence_plot(h, floor=0.038)
    assert "Monte-Carlo floor" in _labels(ov)
    fig = _render(ov)
    assert fig.y_scale.__class__.__name__ == "LogScale"
    assert "relative L1" in fig.yaxis[0].axis_label
    ticks = list(fig.yaxis[0].ticker.ticks)
    # the curves end near 0.04: labelled ticks below and above them, at 1-2-5 values
    assert any(t <= 0.04 for t in ticks) and any(0.04 < t <= 0.1 for t in ticks), ticks
    assert len(ticks) >= 3 and fig.yaxis[0].ticker.minor_ticks
    assert ticks[0] == pytest.approx(fig.y_range.start)  # a labelled tick at the bottom
    # the dashed floor is the last glyph drawn: over the curves, never hidden under them
    lines = [r for r in fig.renderers if hasattr(r, "glyph")]
    assert lines[-1].glyph.line_dash == [6] or lines[-1].glyph.line_dash == "dashed"
    assert np.allclose(lines[-1].data_source.data["error"], 0.038)
    # nan/inf/zero errors never break the log axis
    h = _history()
    h.loc[0, "d_error"] = np.nan
    h.loc[1, "c_error"] = 0.0
    h.loc[2, "d_error"] = np.inf
    _render(plots.convergence_plot(h, floor=float("nan")))
    _render(plots.convergence_plot(None, None))


@pytest.mark.parametrize(
    "lo,hi,must", [(0.02, 0.1, 0.05), (0.005, 0.9, 0.01), (1e-5, 3.0, 1e-3), (0.031, 0.049, 0.04)]
)
def test_log_ticks_label_the_range(lo, hi, must):
    majors, minors = plots.log_ticks(lo, hi)
    assert 3 <= len(majors) <= 9 and must in majors, majors
    assert all(lo <= t <= hi for t in majors + minors)
    assert not set(majors) & set(minors)
    assert plots.log_ticks(0, 1) == ([], [])


def test_off_scale_nllh_gets_a_marker_and_its_value():
    h = _history()
    h.loc[h["iteration"] == 48, "nllh_eval"] = -16.04  # the last measured one
    d = plots.nllh_data(h)
    mx, my = d.layers[plots.OFF_SCALE]
    assert len(mx) == 1 and mx[0] == 48
    assert d.ylim[0] <= my[0] <= d.ylim[1]  # on the plot, at its bottom edge
    assert "−16" in d.layers["off-scale value"]["text"][0]
    fig = _render(plots.nllh_plot(h))
    text = [r.glyph for r in fig.renderers if type(r.glyph).__name__ == "Text"]
    # the text is centred in the plot: never cut at its left or right edge
    assert text and text[0].text_align == "center"
    tx = np.log10(d.layers["off-scale value"]["x"][0])  # (the axis is logarithmic)
    lo, hi = np.log10(d.xlim)
    assert abs(tx - (lo + hi) / 2) < 0.05 * (hi - lo)
    # a value on the scale: no marker
    assert len(plots.nllh_data(_history()).layers[plots.OFF_SCALE][0]) == 0


def test_pinned_runs_are_ghosts_with_a_legend():
    a = plots.pin_run(_every_third(900), "xor · rescaled gradient · 900 it")
    b = plots.pin_run(_every_third(600), "xor · true gradient · 600 it")
    live = _every_third(300)
    ov = plots.nllh_plot(live, {}, pinned=[a, b])
    assert {"pin 1", "pin 2", plots.MRF_NAME} <= _labels(ov)
    d = plots.nllh_data(live, {}, pinned=[a, b])
    assert d.xlim[1] >= 900  # the longer pinned run fits
    px, py = d.layers["pin 1"]
    assert len(px) >= 150 and px[-1] == 900 and np.allclose(py[-1], a.nllh.y[-1])
    fig = _render(ov)
    legend = [item.label.value for item in fig.legend[0].items]
    assert legend[:3] == ["pin 1", "pin 2", plots.MRF_NAME]
    caption = plots.pins_caption([a, b])
    assert "**pin 1**: xor · rescaled gradient · 900 it" in caption
    assert "**pin 2**: xor · true gradient · 600 it" in caption
    assert plots.pins_caption([]) == ""
    conv = plots.convergence_plot(live, 0.01, pinned=[a, b])
    assert {"pin 1", "pin 2"} <= _labels(conv)
    # at most MAX_PINS ghosts: the oldest go
    many = [plots.pin_run(live, f"run {i}") for i in range(plots.MAX_PINS + 2)]
    names = [k for k in plots.nllh_data(live, {}, many).layers if k.startswith("pin ")]
    assert len(names) == plots.MAX_PINS
    assert plots.pins_caption(many).endswith(f"run {plots.MAX_PINS + 1}")
    label = plots.run_label(
        {
            "dataset": "adult",
            "gradient": "true",
            "lambda_theta": 53.0,
            "n_gibbs": 10000,
            "mechanism": "gaussian",
            "epsilon": 1.0,
            "noise_aware": True,
        },
        4512,
    )
    assert label == "adult · true gradient · λθ 53 · n' 10,000 · gaussian ε 1 · MRF-N · 4,512 it"


def test_live_plot_updates_pins_in_place():
    """A new pin of the same count is data: the live figure takes its curve in place."""
    from aggmrf_explore.explorer.views.liveplots import LivePlot

    lp = LivePlot(plots.nllh_plot, plots.nllh_data)
    a = plots.pin_run(_every_third(900), "first")
    b = plots.pin_run(_every_third(600), "second")
    lp.update({"history": _every_third(300), "references": {}, "pinned": [a]}, key=1)
    fig = lp.fig
    lp.update({"history": _every_third(330), "references": {}, "pinned": [b]}, key=1)
    assert lp.fig is fig
    assert [item.label.value for item in fig.legend[0].items][:2] == ["pin 1", plots.MRF_NAME]
    ghost = lp.renderers[0].data_source.data
    assert max(ghost[next(iter(ghost))]) == 600
    live = lp.renderers[1].data_source.data
    assert max(live[next(iter(live))]) == 330
    # the log-axis ticks follow the data
    lc = LivePlot(plots.convergence_plot, plots.convergence_data)
    lc.update({"history": _every_third(300), "floor": 0.01, "pinned": []}, key=0)
    lc.update({"history": _every_third(3000), "floor": 0.001, "pinned": []}, key=0)
    assert min(lc.fig.yaxis[0].ticker.ticks) <= 0.001 * 1.6


def test_scoreboard_line():
    refs = {plots.REFERENCE_NAMES[0]: 0.42, plots.REFERENCE_NAMES[1]: 0.31}
    line = plots.scoreboard(0.4012, refs)
    assert "MRF 0.4012" in line and "skyline 0.4200" in line and "naive Bayes 0.310" in line
    assert "−0.0188" in line
    assert "fitting" in plots.scoreboard(None, {})


def test_table_display_speaks_words_and_whole_counts():
    frame = pd.DataFrame(
        {
            "age": ["<30", "30+"],
            "count": [12.0, 30.0],
            "label_sum": [3.0, 9.0],
            "d_hat": [11.84, 30.27],
            "c_hat": [2.95, 9.01],
        }
    )
    out = table_display(frame)
    assert list(out.columns) == ["age", "count d", "model d̂", "label sum c", "model ĉ"]
    assert out["count d"].dtype.kind == "i" and out["count d"].tolist() == [12, 30]
    assert out["model d̂"].tolist() == [11.8, 30.3]
    noisy = frame.assign(true_count=[10.0, 31.0], true_label_sum=[3.0, 8.0], count=[12.4, 29.2])
    out = table_display(noisy)
    assert list(out.columns)[-2:] == ["true count", "true label sum"]
    assert "noisy count d" in out.columns
    assert out["noisy count d"].tolist() == [12.4, 29.2]


def test_privacy_curve_fills_in_point_by_point():
    runs = [
        {"dataset": "adult", "epsilon": 1.0, "nllh": 0.30, "noise_aware": False},
        {"dataset": "adult", "epsilon": 0.1, "nllh": 0.12, "noise_aware": False},
        {"dataset": "adult", "epsilon": 0.1, "nllh": 0.20, "noise_aware": True},
        {"dataset": "bank", "epsilon": 5.0, "nllh": 0.9, "noise_aware": False},
    ]
    live = {"dataset": "adult", "epsilon": 10.0, "nllh": 0.35}
    d = privacy_plots.privacy_curve_data(runs, live, skyline=0.38, dataset="adult")
    x, y = d.layers["MRF (finished runs)"]
    assert list(x) == [0.1, 1.0] and list(y) == [0.12, 0.30]  # in ε order
    assert list(d.layers["MRF-N (finished runs)"][0]) == [0.1]
    assert list(d.layers["this run (training)"][0]) == [10.0]
    sx, sy = d.layers["skyline (no privacy)"]
    assert sx[0] <= 0.1 and sx[-1] >= 10 and set(sy) == {0.38}
    assert "3 finished runs" in d.title
    fig = _render(privacy_plots.privacy_curve_plot(runs, live, 0.38, "adult"))
    assert fig.x_scale.__class__.__name__ == "LogScale"
    assert "ε" in fig.xaxis[0].axis_label
    assert {0.1, 1.0, 10.0} <= set(fig.xaxis[0].ticker.ticks)  # labelled log ticks
    # nothing yet: no curve, the live marker, the skyline
    empty = privacy_plots.privacy_curve_data([], None, None)
    assert privacy_plots.privacy_series([]) == () and "this run (training)" in empty.layers
    _render(privacy_plots.privacy_curve_plot(None))


def test_privacy_curve_draws_one_line_per_mechanism_and_keeps_points_below_the_axis():
    runs = [
        {"dataset": "toy", "mechanism": "laplace", "epsilon": 1.0, "nllh": -0.546},
        {"dataset": "toy", "mechanism": "gaussian", "epsilon": 1.0, "nllh": 0.269},
        {"dataset": "toy", "mechanism": "laplace", "epsilon": 10.0, "nllh": 0.30},
        {"dataset": "toy", "mechanism": "gaussian", "epsilon": 0.1, "nllh": -3.5},
        {
            "dataset": "toy",
            "mechanism": "laplace",
            "epsilon": 0.1,
            "nllh": 0.1,
            "noise_aware": True,
        },
    ]
    assert privacy_plots.privacy_series(runs, "toy") == (
        "Laplace · MRF",
        "Laplace · MRF-N",
        "Gaussian · MRF",
    )
    d = privacy_plots.privacy_curve_data(runs, None, 0.4, "toy")
    lap = d.layers["Laplace · MRF (finished runs)"]
    gau = d.layers["Gaussian · MRF (finished runs)"]
    assert list(lap[0]) == [1.0, 10.0] and list(lap[1]) == [-0.546, 0.30]  # no mixing
    assert list(gau[0]) == [0.1, 1.0] and gau[1][1] == 0.269
    # −3.5 is below the axis (never below −1): a marker on the axis with its value
    lo, hi = d.ylim
    assert lo >= plots.NLLH_FLOOR - 0.5 and lo < -0.546
    x, y = d.layers[plots.OFF_SCALE]
    assert list(x) == [0.1] and lo <= y[0] <= hi
    assert list(d.layers["off-scale value"]["text"]) == ["−3.5 ▼"]
    assert lo <= gau[1][0] <= hi  # its line goes down to the marker
    for layer in d.layers.values():
        arrays = layer.values() if isinstance(layer, dict) else layer
        assert all(np.isfinite(a).all() for a in arrays if a.dtype != object)
    # two values below the axis at one ε: their labels never overlap
    both = [*runs, {"dataset": "toy", "mechanism": "laplace", "epsilon": 0.1, "nllh": -9.0}]
    ys = privacy_plots.privacy_curve_data(both, None, 0.4, "toy").layers["off-scale value"]["y"]
    assert len(ys) == 2 and abs(ys[0] - ys[1]) > 0.05 * (hi - lo)
    # one finished run, below the axis: the plot still shows it
    one = privacy_plots.privacy_curve_data(runs[3:4], None, None, "toy")
    assert "1 finished run" in one.title and len(one.layers[plots.OFF_SCALE][0]) == 1
    fig = _render(privacy_plots.privacy_curve_plot(runs, None, 0.4, "toy"))
    legend = {item.label.value for lg in fig.legend for item in lg.items}
    assert {"Laplace · MRF", "Gaussian · MRF", "Laplace · MRF-N"} <= legend


def test_y_axis_labels_fit_a_projector_plot():
    """A 236-pixel plot shows about 27 characters of a 12 pt axis label."""
    frame = pd.DataFrame({"d": [1.0, 5.0], "d_hat": [1.2, 4.0], "kind": ["single", "pair"]})
    figs = [
        _render(plots.nllh_plot(_history())),
        _render(plots.convergence_plot(_history())),
        _render(plots.dhat_scatter(frame)),
        _render(privacy_plots.privacy_curve_plot(None)),
    ]
    for fig in figs:
        label = fig.yaxis[0].axis_label
        assert len(label) <= 27, label


def test_dhat_scatter_coloured_by_table_kind():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "d": rng.integers(0, 1000, 200).astype(float),
            "d_hat": rng.integers(0, 1000, 200).astype(float),
            "kind": ["single"] * 50 + ["pair"] * 150,
        }
    )
    ov = plots.dhat_scatter(frame, iteration=12)
    assert {"single-feature tables", "pair-feature tables", "d̂ = d"} <= _labels(ov)
    fig = _render(ov)
    assert "12" in fig.title.text
    _render(plots.dhat_scatter(None))


@pytest.mark.parametrize("n,mode", [(200, "scatter"), (10_000, "binned")])
def test_predictions_plot_modes(n, mode):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"mrf": rng.random(n), "logistic": rng.random(n), "label": rng.integers(0, 2, n)}
    )
    assert plots.predictions_mode(n, True) == mode
    ov = plots.predictions_plot(frame)
    if mode == "binned":
        assert any(isinstance(el, hv.Image) for el in ov)
    else:
        assert {"test records, Y = 0", "test records, Y = 1"} <= _labels(ov)
    fig = _render(ov)
    assert "P(Y=1|x)" in fig.xaxis[0].axis_label


def test_predictions_plot_waiting_for_logistic():
    frame = pd.DataFrame({"mrf": [0.2, 0.8], "logistic": [np.nan, np.nan], "label": [0, 1]})
    assert plots.predictions_mode(2, False) == "waiting"
    fig = _render(plots.predictions_plot(frame))
    assert "still fitting" in fig.title.text


@pytest.mark.parametrize("mech", ["laplace", "gaussian"])
def test_noise_plots(mech):
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 10, 500)
    fig = _render(privacy_plots.noise_histogram(noise, 10.0, mech))
    assert "records" in fig.xaxis[0].axis_label
    true = rng.integers(0, 1000, 300).astype(float)
    _render(privacy_plots.noisy_vs_true(true, true + noise[:300]))
    _render(privacy_plots.noise_histogram(None, float("nan"), mech))
    _render(privacy_plots.noisy_vs_true(None, None))


@pytest.mark.parametrize("mech", ["laplace", "gaussian"])
def test_a_large_noise_reads_without_exponent_in_the_legend(mech):
    """σ from ε = 0.1 on a large release runs into the thousands: "1,235", not "1.23e+03"."""
    noise = np.random.default_rng(3).normal(0, 1234.6, 500)
    labels = [el.label for el in privacy_plots.noise_histogram(noise, 1234.6, mech)]
    assert any("1,235" in lab for lab in labels), labels
    assert not any("e+" in lab for lab in labels), labels


def test_xor_plot():
    frame = pd.DataFrame(
        {
            "state": ["x = (0, 0, 0)", "x = (0, 1, 1)"],
            "truth": [0.25, 0.75],
            "exact max-ent": [0.1, 0.9],
            "live MRF": [0.12, 0.88],
            "logistic": [np.nan, 0.75],
        }
    )
    bars = plots.xor_plot(frame)
    assert len(bars.data) == 8
    fig = _render(bars)
    assert "XOR" in fig.title.text and "P(Y=1|x)" in fig.yaxis[0].axis_label
    # each bar is coloured by its model (not by its state): the colour column follows the bars
    src = next(r.data_source for r in fig.renderers if hasattr(r, "data_source"))
    assert [x[1] for x in src.data["xoffsets"]] == list(src.data["color"])
    # the legend (models in data order) is the bar order within each state
    assert [str(f[1]) for f in fig.x_range.factors[:4]] == list(plots.XOR_MODELS)
    first_seen = list(dict.fromkeys(src.data["color"]))
    assert first_seen == list(plots.XOR_MODELS)
    _render(plots.xor_plot(None))


def test_xor_title_is_computed_from_the_exact_solution():
    """A past bug: at n = 100 the exact bars are ≈ 1.0 / 0.0 / 0.8 / 0.2, not 0.9 / 0.1."""
    frame = pd.DataFrame(
        {
            "state": ["x = (0, 0, 0)", "x = (0, 1, 1)", "x = (1, 0, 1)", "x = (1, 1, 0)"],
            "truth": [0.25, 0.75, 0.75, 0.25],
            "exact max-ent": [0.998, 0.002, 0.801, 0.2],
        }
    )
    title = plots.xor_title(frame)
    assert "exact max-ent 1.0 / 0.0 / 0.8 / 0.2" in title
    assert "truth 0.25 / 0.75 / 0.75 / 0.25" in title
    assert "0.9 / 0.1" not in title
    assert _render(plots.xor_plot(frame.assign(**{"live MRF": 0.5}))).title.text == title


def test_explanations_exist_for_every_plot():
    for key in ("nllh", "predictions", "convergence", "dhat", "tables", "privacy", "xor"):
        assert EXPLAIN[key].startswith("**What am I seeing?**")


def _bars_and_curve(overlay):
    hist, curve = overlay.values()[:2]
    edges = np.asarray(hist.edges, dtype=float)
    bars = hist.dframe().iloc[:, 1].to_numpy()
    xs, ys = (curve.dframe().iloc[:, i].to_numpy() for i in (0, 1))
    mid = (edges[:-1] + edges[1:]) / 2
    return edges, bars, np.interp(mid, xs, ys)


def test_local_noise_plot_density_and_bars_agree():
    """Local privacy: each count has its own σ (channel inversion: from tens of records to
    millions).  One σ for all (their root mean square) put the density far below the bars;
    the mixture of the counts' Gaussians agrees with them, over the range of 99.5 % of
    the noise."""
    rng = np.random.default_rng(5)
    sigmas = np.repeat([30.0, 3e3, 3e5], [4000, 3000, 2000])
    noise = rng.normal(0.0, sigmas)
    rms = float(np.sqrt(np.mean(sigmas**2)))
    fig = privacy_plots.noise_histogram(noise, rms, "local", sigmas=sigmas, records=32_561)
    edges, bars, curve = _bars_and_curve(fig)
    assert abs(edges[-1] - np.quantile(np.abs(noise), 0.995)) < 1e-6 * edges[-1]
    mismatch = np.abs(curve - bars).sum() / bars.sum()
    assert mismatch < 0.15, mismatch
    assert "the data: 32,561" in fig.values()[0].kdims[0].label
    # (one σ, their RMS: the curve misses the bars by far more)
    _, bars1, curve1 = _bars_and_curve(privacy_plots.noise_histogram(noise, rms, "local"))
    assert np.abs(curve1 - bars1).sum() / bars1.sum() > 3 * mismatch


def test_counts_and_noise_read_as_plain_numbers():
    """Noise of ±400 000 records reads "400,000" on the axis (Bokeh's default switches to
    "4.000e+5" past 10⁵); a noise of a few records keeps its decimals."""
    from bokeh.models import NumeralTickFormatter

    rng = np.random.default_rng(6)
    sigmas = np.full(3000, 2e5)
    wide = privacy_plots.noise_histogram(rng.normal(0, sigmas), 2e5, "local", sigmas=sigmas)
    true = rng.integers(0, 32_561, 300).astype(float)
    scatter = privacy_plots.noisy_vs_true(true, true + rng.normal(0, 2e5, 300))
    narrow = privacy_plots.noise_histogram(rng.normal(0, 0.3, 500), 0.3, "gaussian")
    for fig, axes in ((wide, "x"), (scatter, "xy"), (narrow, "x")):
        rendered = _render(fig)
        for axis in axes:
            fmt = getattr(rendered, f"{axis}axis")[0].formatter
            assert isinstance(fmt, NumeralTickFormatter), (axis, fmt)
            assert fmt.format == privacy_plots.RECORDS_FORMAT


def test_the_live_point_says_paused_when_paused():
    """The privacy curve's live point: "this run (training)" while the session trains,
    "this run (paused)" once paused, in a figure refreshed in place (its legend follows)."""
    from aggmrf_explore.explorer.views.liveplots import LivePlot

    runs = [{"dataset": "xor", "mechanism": "gaussian", "epsilon": 1.0, "nllh": 0.1}]
    kw = {"runs": runs, "live": {"dataset": "xor", "epsilon": 2.0, "nllh": 0.12}}
    kw |= {"skyline": 0.2, "dataset": "xor"}
    plot = LivePlot(privacy_plots.privacy_curve_plot, privacy_plots.privacy_curve_data)
    key = privacy_plots.privacy_series(runs, "xor")

    def legend() -> set[str]:
        labels = (item.label for lg in plot.fig.legend for item in lg.items)
        return {lab.get("value") if isinstance(lab, dict) else lab.value for lab in labels}

    plot.update({**kw, "running": True}, key=key)
    assert "this run (training)" in legend() and "this run (paused)" not in legend()
    plot.update({**kw, "running": False}, key=key)  # (the same figure, in place)
    assert "this run (paused)" in legend() and "this run (training)" not in legend()
