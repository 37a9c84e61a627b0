"""Pure plot functions: a training history or a few arrays → a HoloViews object.

Every function is a pure function of its arguments (testable without a browser) and
returns an element with a title, axis labels with units and a legend.  The layer
structure of each plot depends only on its ``mode`` argument(s), never on the data,
so the app can stream new data into a ``DynamicMap`` without rebuilding the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import holoviews as hv
import numpy as np
import pandas as pd

__all__ = [
    "thin",
    "PlotData",
    "nllh_data",
    "convergence_data",
    "dhat_data",
    "predictions_data",
    "xor_values",
    "nllh_plot",
    "convergence_plot",
    "dhat_scatter",
    "predictions_plot",
    "predictions_mode",
    "noise_histogram",
    "noisy_vs_true",
    "xor_plot",
    "REFERENCE_NAMES",
    "EXPLAIN",
]

REFERENCE_NAMES = (
    "logistic skyline (pairs, full data)",
    "naive Bayes (single tables)",
    "best pair table",
)
_REF_STYLE = {
    REFERENCE_NAMES[0]: ("#2ca02c", "dashed"),
    REFERENCE_NAMES[1]: ("#9467bd", "dotted"),
    REFERENCE_NAMES[2]: ("#8c564b", "dashdot"),
}
MRF_COLOR = "#1f77b4"
LABEL_COLORS = {"Y = 0": "#1f77b4", "Y = 1": "#d62728"}
KIND_COLORS = {"single": "#ff7f0e", "pair": "#1f77b4", "triple": "#2ca02c"}
FONTS = {"title": "13pt", "labels": "12pt", "xticks": "10pt", "yticks": "10pt", "legend": "10pt"}
_COMMON = dict(
    responsive=True,
    min_height=250,
    framewise=True,
    fontsize=FONTS,
    toolbar="above",
    default_tools=["save"],
)

EXPLAIN = {
    "nllh": (
        "**What am I seeing?** The MRF's normalised log-likelihood on held-out records "
        "(1 − logloss / entropy of the label: 0 = base rate, higher is better) as it trains "
        "from the tables only. Dashed lines: the same metric for models fitted elsewhere — the "
        "logistic *skyline* uses the full disaggregated records, naive Bayes only single tables."
    ),
    "predictions": (
        "**What am I seeing?** Each test record's P(Y=1|x) under the live MRF (vertical) "
        "against the logistic fitted on full data (horizontal). On the diagonal the tables "
        "told the MRF as much as the records told the logistic. With many records the points "
        "are binned into squares coloured by the share of positive labels."
    ),
    "convergence": (
        "**What am I seeing?** How far the model's expected tables d̂ (counts) and ĉ (label "
        "sums) are from the released ones, as relative L1 error on a log axis. It cannot go "
        "below the Monte-Carlo floor of n' Gibbs samples (grey): add samples to go lower."
    ),
    "dhat": (
        "**What am I seeing?** Every released table row: its target count d (horizontal) and "
        "the model's current estimate d̂ (vertical), log–log. Training pulls the points onto "
        "the diagonal; colour tells single-feature from pair tables."
    ),
    "tables": (
        "**What am I seeing?** One released table: a row per combination of modalities with its "
        "count and label sum (noisy if a mechanism is on, exact values beside them), and the "
        "model's current d̂ and ĉ for the same rows."
    ),
    "privacy": (
        "**What am I seeing?** Left: the noise added to every released count (histogram) and "
        "the mechanism's density (line). Right: released vs true counts — the vertical "
        "spread around the diagonal is the price of privacy; small counts suffer most."
    ),
    "xor": (
        "**What am I seeing?** P(Y=1|x) for the four states that occur in the XOR example "
        "(X3 = X1 xor X2, P(Y=1|x) = 0.25 + 0.5·x3). **Why max-ent fails:** every pair table "
        "looks like independent, uniform features, so the maximum-entropy model spreads the "
        "records over all eight states, half of which never occur. The pairwise parameters "
        "that reproduce the label sums over those eight states give 0.9 / 0.1 on the four "
        "real ones instead of 0.75 / 0.25 — the live MRF converges to that max-ent answer, "
        "while the logistic, fitted on the full records, recovers the truth."
    ),
}


def thin(frame: pd.DataFrame, max_points: int = 1500) -> pd.DataFrame:
    """Every k-th row (and the last) so at most ~max_points rows remain."""
    n = len(frame)
    if n <= max_points:
        return frame
    k = math.ceil(n / max_points)
    idx = np.unique(np.r_[np.arange(0, n, k), n - 1])
    return frame.iloc[idx]


def _history(history: pd.DataFrame | None) -> pd.DataFrame:
    cols = ["iteration", "d_error", "c_error", "nllh_eval"]
    if history is None or len(history) == 0:
        return pd.DataFrame({c: np.zeros(0) for c in cols})
    h = history[cols].copy()
    for c in cols[1:]:
        h[c] = pd.to_numeric(h[c], errors="coerce").astype(float)
    return h


def _finite(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


@dataclass
class PlotData:
    """What a live plot shows: one (x, y) pair of arrays per layer label, ranges, title.

    The app pushes these arrays into the existing Bokeh data sources of a figure first
    drawn by the matching HoloViews function (same labels, same layer order), so a
    refresh never rebuilds the figure.
    """

    layers: dict[str, tuple[np.ndarray, np.ndarray]]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    title: str
    extra: dict = field(default_factory=dict)


def _xy(xs, ys) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def nllh_data(history: pd.DataFrame | None, references: dict[str, float] | None = None) -> PlotData:
    """Layers and ranges of :func:`nllh_plot` (finite values only)."""
    h = thin(_history(history))
    h = h[np.isfinite(h["nllh_eval"].to_numpy(float))]
    references = references or {}
    x_max = max(float(h["iteration"].max()) if len(h) else 0.0, 10.0)
    layers = {"MRF (from tables)": _xy(h["iteration"], h["nllh_eval"])}
    values = list(h["nllh_eval"].to_numpy(float))
    for name in REFERENCE_NAMES:
        v = _finite(references.get(name))
        if math.isfinite(v):
            values.append(v)
            layers[name] = _xy([0.0, x_max], [v, v])
        else:
            layers[name] = _xy([], [])
    lo = min(values + [0.0])
    hi = max(values + [0.05])
    pad = 0.05 * (hi - lo or 1.0)
    return PlotData(
        layers, (0.0, x_max), (max(lo - pad, -1.0), hi + pad), "Test NLLH while training"
    )


def nllh_plot(
    history: pd.DataFrame | None, references: dict[str, float] | None = None
) -> hv.Overlay:
    """Test NLLH vs iteration for the MRF, with the baselines as horizontal reference lines.

    ``references``: {name: test NLLH}; the names of REFERENCE_NAMES always get a layer
    (empty when unknown) so the layer structure never changes.
    """
    d = nllh_data(history, references)
    xdim = hv.Dimension("iteration", label="iteration (PCD steps)")
    ydim = hv.Dimension("nllh", label="test NLLH (unitless, higher is better)")
    layers = [
        hv.Curve(d.layers["MRF (from tables)"], xdim, ydim, label="MRF (from tables)").opts(
            color=MRF_COLOR, line_width=2.5
        )
    ]
    for name in REFERENCE_NAMES:
        color, dash = _REF_STYLE[name]
        layers.append(
            hv.Curve(d.layers[name], xdim, ydim, label=name).opts(
                color=color, line_dash=dash, line_width=2
            )
        )
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title, legend_position="bottom_right", ylim=d.ylim, xlim=d.xlim, **_COMMON
        ),
    )


CONVERGENCE_NAMES = ("d̂ (counts)", "ĉ (label sums)", "Monte-Carlo floor of n' samples")


def convergence_data(history: pd.DataFrame | None, floor: float | None = None) -> PlotData:
    """Layers and ranges of :func:`convergence_plot` (errors clipped to [1e-6, 1e3])."""
    h = thin(_history(history))
    x = h["iteration"].to_numpy(float)
    tiny = 1e-6
    x_max = max(float(x.max()) if len(x) else 0.0, 10.0)
    yd = np.clip(np.nan_to_num(h["d_error"].to_numpy(float), nan=1.0, posinf=1e3), tiny, 1e3)
    yc = np.clip(np.nan_to_num(h["c_error"].to_numpy(float), nan=1.0, posinf=1e3), tiny, 1e3)
    f = _finite(floor)
    has_floor = math.isfinite(f) and f > 0
    layers = {
        CONVERGENCE_NAMES[0]: _xy(x, yd),
        CONVERGENCE_NAMES[1]: _xy(x, yc),
        CONVERGENCE_NAMES[2]: _xy([0.0, x_max], [f, f]) if has_floor else _xy([], []),
    }
    vals = np.r_[yd, yc, [f] if has_floor else []]
    lo = max(float(np.min(vals)) / 2 if vals.size else 1e-3, tiny)
    hi = float(np.max(vals)) * 2 if vals.size else 1.0
    return PlotData(layers, (0.0, x_max), (lo, max(hi, 2 * lo)), "Convergence of d̂ → d and ĉ → c")


def convergence_plot(history: pd.DataFrame | None, floor: float | None = None) -> hv.Overlay:
    """Relative L1 error of d̂ and ĉ vs iteration (log axis), with the Monte-Carlo floor."""
    d = convergence_data(history, floor)
    xdim = hv.Dimension("iteration", label="iteration (PCD steps)")
    ydim = hv.Dimension("error", label="relative L1 error (unitless, log)")
    styles = (
        dict(color=MRF_COLOR, line_width=2.5),
        dict(color="#ff7f0e", line_width=2.5),
        dict(color="grey", line_dash="dashed", line_width=2),
    )
    layers = [
        hv.Curve(d.layers[name], xdim, ydim, label=name).opts(**style)
        for name, style in zip(CONVERGENCE_NAMES, styles, strict=True)
    ]
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title,
            logy=True,
            legend_position="top_right",
            ylim=d.ylim,
            xlim=d.xlim,
            **_COMMON,
        ),
    )


def dhat_kinds(frame: pd.DataFrame | None) -> tuple[str, ...]:
    """Table kinds with a layer in :func:`dhat_scatter` (single and pair always, triple if any)."""
    kinds = ["single", "pair"]
    if frame is not None and len(frame) and (frame["kind"] == "triple").any():
        kinds.append("triple")
    return tuple(kinds)


def dhat_data(frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 4000) -> PlotData:
    """Layers and ranges of :func:`dhat_scatter` (0 shown as 0.5 on the log axes)."""
    floor = 0.5
    if frame is None:
        frame = pd.DataFrame({"d": [], "d_hat": [], "kind": []})
    if len(frame) > max_points:
        frame = frame.iloc[np.linspace(0, len(frame) - 1, max_points).astype(int)]
    hi = 10.0
    layers = {}
    for kind in dhat_kinds(frame):
        sub = frame[frame["kind"] == kind]
        xs = np.maximum(np.nan_to_num(sub["d"].to_numpy(float), posinf=0.0), floor)
        ys = np.maximum(np.nan_to_num(sub["d_hat"].to_numpy(float), posinf=0.0), floor)
        if len(xs):
            hi = max(hi, float(xs.max()), float(ys.max()))
        layers[f"{kind}-feature tables"] = _xy(xs, ys)
    hi *= 1.5
    layers["d̂ = d"] = _xy([floor, hi], [floor, hi])
    title = f"d̂ vs d at iteration {int(iteration):,} (0 shown as 0.5)"
    return PlotData(layers, (floor, hi), (floor, hi), title)


def dhat_scatter(frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 4000):
    """Target d vs current d̂ per released row (log–log, floored at 0.5), coloured by table kind.

    ``frame`` columns: d, d_hat, kind ("single" / "pair" / "triple").
    """
    d = dhat_data(frame, iteration, max_points)
    xdim = hv.Dimension("d", label="released count d (records, log)")
    ydim = hv.Dimension("d_hat", label="model estimate d̂ (records, log)")
    layers = [
        hv.Scatter(
            d.layers[f"{kind}-feature tables"], xdim, ydim, label=f"{kind}-feature tables"
        ).opts(color=KIND_COLORS[kind], size=6, alpha=0.6)
        for kind in dhat_kinds(frame)
    ]
    layers.append(
        hv.Curve(d.layers["d̂ = d"], xdim, ydim, label="d̂ = d").opts(
            color="black", line_dash="dashed", line_width=1.5
        )
    )
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title,
            logx=True,
            logy=True,
            xlim=d.xlim,
            ylim=d.ylim,
            legend_position="bottom_right",
            **_COMMON,
        )
    )


def predictions_mode(n_points: int, has_logistic: bool, max_points: int = 3000) -> str:
    """ "scatter", "binned" or "waiting": the layer structure predictions_plot will use."""
    if not has_logistic:
        return "waiting"
    return "scatter" if n_points <= max_points else "binned"


PRED_BINS = 40


def predictions_data(
    frame: pd.DataFrame | None, mode: str | None = None, max_points: int = 3000
) -> PlotData:
    """Layers of :func:`predictions_plot`; ``extra["image"]`` holds the binned share of Y = 1.

    Binned mode: a PRED_BINS × PRED_BINS grid over [0, 1]², each cell the share of
    positive labels among its records (NaN where empty, drawn transparent).
    """
    if frame is None:
        frame = pd.DataFrame({"mrf": [], "logistic": [], "label": []})
    lx = frame["logistic"].to_numpy(float)
    has_log = bool(len(frame)) and bool(np.isfinite(lx).any())
    mode = mode or predictions_mode(len(frame), has_log, max_points)
    lx = np.clip(np.nan_to_num(lx, nan=0.5), 0, 1)
    my = np.clip(np.nan_to_num(frame["mrf"].to_numpy(float), nan=0.5, posinf=1, neginf=0), 0, 1)
    lab = np.nan_to_num(frame["label"].to_numpy(float))
    layers: dict = {}
    extra: dict = {"mode": mode, "n": len(frame)}
    if mode == "waiting":
        title = "MRF vs logistic P(Y=1|x) — logistic skyline still fitting…"
        layers["records"] = _xy([], [])
    elif mode == "scatter":
        title = "MRF vs logistic P(Y=1|x) on test records"
        for v, name in ((0, "Y = 0"), (1, "Y = 1")):
            m = lab == v
            layers[f"test records, {name}"] = _xy(lx[m], my[m])
    else:
        title = f"MRF vs logistic P(Y=1|x), {len(frame):,} test records (binned)"
        edges = np.linspace(0, 1, PRED_BINS + 1)
        cnt, _, _ = np.histogram2d(my, lx, bins=[edges, edges])
        pos, _, _ = np.histogram2d(my, lx, bins=[edges, edges], weights=lab)
        # row 0 = lowest MRF probability (Bokeh's image orientation)
        extra["image"] = np.where(cnt > 0, pos / np.maximum(cnt, 1), np.nan)
    layers["y = x"] = _xy([0, 1], [0, 1])
    return PlotData(layers, (0.0, 1.0), (0.0, 1.0), title, extra)


def predictions_plot(frame: pd.DataFrame | None, mode: str | None = None, max_points: int = 3000):
    """MRF vs logistic P(Y=1|x) on the test set, with the y = x line.

    ``frame`` columns: mrf, logistic, label (0/1).  Few points: a scatter coloured by label;
    many: a grid of bins coloured by the share of Y = 1 (aggregated rendering).
    """
    d = predictions_data(frame, mode, max_points)
    xdim = hv.Dimension("logistic", label="logistic (full data): P(Y=1|x)", range=(0, 1))
    ydim = hv.Dimension("mrf", label="MRF (tables only): P(Y=1|x)", range=(0, 1))
    diag = hv.Curve(d.layers["y = x"], xdim, ydim, label="y = x").opts(
        color="black", line_dash="dashed", line_width=1.5
    )
    opts = dict(xlim=d.xlim, ylim=d.ylim, title=d.title, legend_position="bottom_right", **_COMMON)
    mode = d.extra["mode"]
    if mode == "waiting":
        pts = hv.Scatter(d.layers["records"], xdim, ydim, label="records").opts(color="grey")
        return (pts * diag).opts(hv.opts.Overlay(**opts))
    if mode == "scatter":
        layers = [
            hv.Scatter(
                d.layers[f"test records, {name}"], xdim, ydim, label=f"test records, {name}"
            ).opts(color=LABEL_COLORS[name], size=6, alpha=0.5)
            for name in ("Y = 0", "Y = 1")
        ]
        return hv.Overlay([*layers, diag]).opts(hv.opts.Overlay(**opts))
    img = hv.Image(
        np.flipud(d.extra["image"]),  # HoloViews: first row at the top
        kdims=[xdim, ydim],
        vdims=[hv.Dimension("share", label="share of Y = 1 in the bin", range=(0, 1))],
        bounds=(0, 0, 1, 1),
    ).opts(
        cmap="coolwarm",
        colorbar=True,
        clim=(0, 1),
        clipping_colors={"NaN": "transparent"},
        colorbar_opts={"title": "share of Y = 1"},
    )
    return (img * diag).opts(hv.opts.Overlay(**opts))


def noise_histogram(noise: np.ndarray | None, std: float, mechanism: str, bins: int = 40):
    """Histogram (density) of the noise added to released counts, with the mechanism's density."""
    xdim = hv.Dimension("noise", label="noise added to a count (records)")
    ydim = hv.Dimension("density", label="density (1 / record)")
    noise = np.asarray(noise if noise is not None else [], dtype=float)
    noise = noise[np.isfinite(noise)]
    s = _finite(std)
    if not math.isfinite(s) or s <= 0:
        s = float(np.std(noise)) if noise.size else 1.0
    s = max(s, 1e-9)
    lim = 4 * s
    edges = np.linspace(-lim, lim, bins + 1)
    counts, _ = np.histogram(np.clip(noise, -lim, lim), bins=edges, density=noise.size > 0)
    hist = hv.Histogram((edges, counts), kdims=[xdim], vdims=[ydim], label="released rows").opts(
        color="#aec7e8", line_color="white"
    )
    xs = np.linspace(-lim, lim, 201)
    if mechanism == "laplace":
        b = s / math.sqrt(2)
        ys = np.exp(-np.abs(xs) / b) / (2 * b)
        name = f"Laplace density (std {s:.3g})"
    else:
        ys = np.exp(-0.5 * (xs / s) ** 2) / (s * math.sqrt(2 * math.pi))
        name = f"Gaussian density (σ {s:.3g})"
    curve = hv.Curve((xs, ys), xdim, ydim, label=name).opts(color="#d62728", line_width=2)
    return (hist * curve).opts(
        hv.opts.Overlay(
            title="Noise on released counts",
            legend_position="top_right",
            xlim=(-lim, lim),
            **_COMMON,
        )
    )


def noisy_vs_true(true: np.ndarray | None, noisy: np.ndarray | None, max_points: int = 4000):
    """Released (noisy) vs true count of every released row, with the y = x line."""
    true = np.asarray(true if true is not None else [], dtype=float)
    noisy = np.asarray(noisy if noisy is not None else [], dtype=float)
    if true.size > max_points:
        idx = np.linspace(0, true.size - 1, max_points).astype(int)
        true, noisy = true[idx], noisy[idx]
    xdim = hv.Dimension("true", label="true count (records)")
    ydim = hv.Dimension("noisy", label="released noisy count (records)")
    lo = float(min(true.min(), noisy.min(), 0.0)) if true.size else 0.0
    hi = float(max(true.max(), noisy.max(), 1.0)) if true.size else 1.0
    pts = hv.Scatter((true, noisy), xdim, ydim, label="table rows").opts(
        color="#1f77b4", size=5, alpha=0.5
    )
    diag = hv.Curve(([lo, hi], [lo, hi]), xdim, ydim, label="no noise").opts(
        color="black", line_dash="dashed", line_width=1.5
    )
    return (pts * diag).opts(
        hv.opts.Overlay(title="Released vs true counts", legend_position="bottom_right", **_COMMON)
    )


XOR_MODELS = ("truth", "exact max-ent", "live MRF", "logistic")
XOR_COLORS = ["#7f7f7f", "#d62728", "#1f77b4", "#2ca02c"]


def xor_values(frame: pd.DataFrame | None) -> pd.DataFrame:
    """Long form of the XOR comparison: one row per (state, model) with P(Y=1|x) (NaN → 0).

    Rows are model-major: HoloViews groups the bars that way, and with another row order
    its colour column comes out in a different order from the bars (bars would be
    coloured by state instead of by model).
    """
    rows = []
    if frame is not None:
        for m in XOR_MODELS:
            for _, r in frame.iterrows():
                v = _finite(r.get(m, np.nan))
                rows.append((r["state"], m, v if math.isfinite(v) else 0.0))
    if not rows:
        rows = [("(no data)", m, 0.0) for m in XOR_MODELS]
    return pd.DataFrame(rows, columns=["state", "model", "p"])


def xor_plot(frame: pd.DataFrame | None):
    """Grouped bars: P(Y=1|x) per XOR state for truth, exact max-ent, live MRF, logistic."""
    bars = hv.Bars(
        xor_values(frame),
        [hv.Dimension("state", label="state x = (x1, x2, x3)"), "model"],
        hv.Dimension("p", label="P(Y=1|x) (probability)", range=(0, 1)),
    ).opts(
        color="model",
        cmap=dict(zip(XOR_MODELS, XOR_COLORS, strict=True)),
        show_legend=True,
        legend_position="right",
        ylim=(0, 1),
        title="XOR: P(Y=1|x) per state — truth 0.75 / 0.25, exact max-ent 0.9 / 0.1",
        xrotation=0,
        multi_level=False,  # the legend names the bars; inner labels would overlap
        **_COMMON,
    )
    return bars
