"""Plot functions of the explorer: pure functions of a history / arrays → HoloViews objects."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from aggmrf_explore.explorer import plots

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
    assert len(ov) == 1 + len(plots.REFERENCE_NAMES)
    assert "MRF (from tables)" in _labels(ov)
    assert set(plots.REFERENCE_NAMES) <= _labels(ov)
    fig = _render(ov)
    assert "NLLH" in fig.title.text
    assert "iteration" in fig.xaxis[0].axis_label
    assert "NLLH" in fig.yaxis[0].axis_label
    assert fig.legend and len(fig.legend[0].items) >= 3
    # same structure with no data and no references
    empty = plots.nllh_plot(None, {})
    assert len(empty) == len(ov)
    _render(empty)


def test_nllh_plot_ignores_nan_and_inf():
    h = _history()
    h.loc[3, "nllh_eval"] = np.inf
    ov = plots.nllh_plot(h, {plots.REFERENCE_NAMES[0]: float("nan")})
    _render(ov)


def test_convergence_plot_log_axis_and_floor():
    ov = plots.convergence_plot(_history(), floor=0.01)
    labels = _labels(ov)
    assert "Monte-Carlo floor of n' samples" in labels
    fig = _render(ov)
    assert fig.y_scale.__class__.__name__ == "LogScale"
    assert "relative L1" in fig.yaxis[0].axis_label
    # nan/inf/zero errors never break the log axis
    h = _history()
    h.loc[0, "d_error"] = np.nan
    h.loc[1, "c_error"] = 0.0
    h.loc[2, "d_error"] = np.inf
    _render(plots.convergence_plot(h, floor=float("nan")))
    _render(plots.convergence_plot(None, None))


def test_thin_keeps_last_point():
    h = _history(5000)
    t = plots.thin(h, 100)
    assert len(t) <= 102 and t["iteration"].iloc[-1] == 5000


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
    fig = _render(plots.noise_histogram(noise, 10.0, mech))
    assert "records" in fig.xaxis[0].axis_label
    true = rng.integers(0, 1000, 300).astype(float)
    _render(plots.noisy_vs_true(true, true + noise[:300]))
    _render(plots.noise_histogram(None, float("nan"), mech))
    _render(plots.noisy_vs_true(None, None))


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
    _render(plots.xor_plot(None))


def test_explanations_exist_for_every_plot():
    for key in ("nllh", "predictions", "convergence", "dhat", "tables", "privacy", "xor"):
        assert plots.EXPLAIN[key].startswith("**What am I seeing?**")
