"""Pure plot functions: a training history or a few arrays → a HoloViews object.

Every function is a pure function of its arguments (testable without a browser) and
returns an element with a title, axis labels with units and a legend.  The layer
structure of each plot depends only on its ``mode`` argument(s), never on the data,
so the app can stream new data into a ``DynamicMap`` without rebuilding the figure.
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd

__all__ = [
    "thin",
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
        "are binned into hexagons coloured by the share of positive labels."
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
        "**What am I seeing?** P(Y=1|x) for the four possible states of the XOR example. "
        "The pair tables alone cannot tell this distribution from one where the label depends "
        "on X3 much more strongly, and the maximum-entropy model picks that flatter-in-x, "
        "sharper-in-y solution (0.9 / 0.1 instead of the true 0.75 / 0.25); a logistic on "
        "the full records recovers the truth."
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


def nllh_plot(
    history: pd.DataFrame | None, references: dict[str, float] | None = None
) -> hv.Overlay:
    """Test NLLH vs iteration for the MRF, with the baselines as horizontal reference lines.

    ``references``: {name: test NLLH}; the names of REFERENCE_NAMES always get a layer
    (empty when unknown) so the layer structure never changes.
    """
    h = thin(_history(history).dropna(subset=["nllh_eval"]))
    references = references or {}
    x_max = max(float(h["iteration"].max()) if len(h) else 0.0, 10.0)
    mrf = hv.Curve(
        (h["iteration"].to_numpy(float), h["nllh_eval"].to_numpy(float)),
        hv.Dimension("iteration", label="iteration (PCD steps)"),
        hv.Dimension("nllh", label="test NLLH (unitless, higher is better)"),
        label="MRF (from tables)",
    ).opts(color=MRF_COLOR, line_width=2.5)
    layers = [mrf]
    values = [v for v in h["nllh_eval"].to_numpy(float) if math.isfinite(v)]
    for name in REFERENCE_NAMES:
        v = _finite(references.get(name))
        color, dash = _REF_STYLE[name]
        xs, ys = ([0.0, x_max], [v, v]) if math.isfinite(v) else ([], [])
        if math.isfinite(v):
            values.append(v)
        layers.append(
            hv.Curve((xs, ys), "iteration", "nllh", label=f"{name}").opts(
                color=color, line_dash=dash, line_width=2
            )
        )
    lo = min(values + [0.0]) if values else 0.0
    hi = max(values + [0.05]) if values else 1.0
    pad = 0.05 * (hi - lo or 1.0)
    return hv.Overlay(layers).opts(
        hv.opts.Curve(framewise=True),
        hv.opts.Overlay(
            title="Test NLLH while training",
            legend_position="bottom_right",
            ylim=(max(lo - pad, -1.0), hi + pad),
            xlim=(0, x_max),
            **_COMMON,
        ),
    )


def convergence_plot(history: pd.DataFrame | None, floor: float | None = None) -> hv.Overlay:
    """Relative L1 error of d̂ and ĉ vs iteration (log axis), with the Monte-Carlo floor."""
    h = thin(_history(history))
    x = h["iteration"].to_numpy(float)
    tiny = 1e-6
    x_max = max(float(x.max()) if len(x) else 0.0, 10.0)
    yd = np.clip(np.nan_to_num(h["d_error"].to_numpy(float), nan=1.0, posinf=1e3), tiny, 1e3)
    yc = np.clip(np.nan_to_num(h["c_error"].to_numpy(float), nan=1.0, posinf=1e3), tiny, 1e3)
    xdim = hv.Dimension("iteration", label="iteration (PCD steps)")
    ydim = hv.Dimension("error", label="relative L1 error (unitless, log)")
    f = _finite(floor)
    layers = [
        hv.Curve((x, yd), xdim, ydim, label="d̂ (counts)").opts(color=MRF_COLOR, line_width=2.5),
        hv.Curve((x, yc), xdim, ydim, label="ĉ (label sums)").opts(color="#ff7f0e", line_width=2.5),
        hv.Curve(
            ([0.0, x_max], [f, f]) if math.isfinite(f) and f > 0 else ([], []),
            xdim,
            ydim,
            label="Monte-Carlo floor of n' samples",
        ).opts(color="grey", line_dash="dashed", line_width=2),
    ]
    vals = np.r_[yd, yc, [f] if math.isfinite(f) and f > 0 else []]
    lo = float(np.min(vals)) / 2 if vals.size else 1e-3
    hi = float(np.max(vals)) * 2 if vals.size else 1.0
    return hv.Overlay(layers).opts(
        hv.opts.Curve(framewise=True),
        hv.opts.Overlay(
            title="Convergence of d̂ → d and ĉ → c",
            logy=True,
            legend_position="top_right",
            ylim=(max(lo, tiny), max(hi, 2 * max(lo, tiny))),
            xlim=(0, x_max),
            **_COMMON,
        ),
    )


def dhat_scatter(frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 4000):
    """Target d vs current d̂ per released row (log–log, floored at 0.5), coloured by table kind.

    ``frame`` columns: d, d_hat, kind ("single" / "pair" / "triple").
    """
    floor = 0.5
    xdim = hv.Dimension("d", label="released count d (records, log)")
    ydim = hv.Dimension("d_hat", label="model estimate d̂ (records, log)")
    layers = []
    if frame is None:
        frame = pd.DataFrame({"d": [], "d_hat": [], "kind": []})
    if len(frame) > max_points:
        frame = frame.iloc[np.linspace(0, len(frame) - 1, max_points).astype(int)]
    hi = 10.0
    for kind, color in KIND_COLORS.items():
        sub = frame[frame["kind"] == kind]
        if kind == "triple" and len(sub) == 0:
            continue
        xs = np.maximum(np.nan_to_num(sub["d"].to_numpy(float)), floor)
        ys = np.maximum(np.nan_to_num(sub["d_hat"].to_numpy(float)), floor)
        if len(xs):
            hi = max(hi, float(xs.max()), float(ys.max()))
        layers.append(
            hv.Scatter((xs, ys), xdim, ydim, label=f"{kind}-feature tables").opts(
                color=color, size=5, alpha=0.6
            )
        )
    hi *= 1.5
    layers.append(
        hv.Curve(([floor, hi], [floor, hi]), xdim, ydim, label="d̂ = d").opts(
            color="black", line_dash="dashed", line_width=1.5
        )
    )
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=f"d̂ vs d at iteration {int(iteration):,} (0 shown as 0.5)",
            logx=True,
            logy=True,
            xlim=(floor, hi),
            ylim=(floor, hi),
            legend_position="bottom_right",
            **_COMMON,
        )
    )


def predictions_mode(n_points: int, has_logistic: bool, max_points: int = 3000) -> str:
    """ "scatter", "hex" or "waiting": the layer structure predictions_plot will use."""
    if not has_logistic:
        return "waiting"
    return "scatter" if n_points <= max_points else "hex"


def predictions_plot(frame: pd.DataFrame | None, mode: str | None = None, max_points: int = 3000):
    """MRF vs logistic P(Y=1|x) on the test set, with the y = x line.

    ``frame`` columns: mrf, logistic, label (0/1).  Few points: a scatter coloured by label;
    many: hexagonal bins coloured by the share of Y = 1 (aggregated rendering).
    """
    if frame is None:
        frame = pd.DataFrame({"mrf": [], "logistic": [], "label": []})
    has_log = bool(len(frame)) and bool(np.isfinite(frame["logistic"].to_numpy(float)).any())
    mode = mode or predictions_mode(len(frame), has_log, max_points)
    xdim = hv.Dimension("logistic", label="logistic (full data): P(Y=1|x)", range=(0, 1))
    ydim = hv.Dimension("mrf", label="MRF (tables only): P(Y=1|x)", range=(0, 1))
    diag = hv.Curve(([0, 1], [0, 1]), xdim, ydim, label="y = x").opts(
        color="black", line_dash="dashed", line_width=1.5
    )
    opts = dict(xlim=(0, 1), ylim=(0, 1), **_COMMON)
    if mode == "waiting":
        x = np.zeros(0)
        pts = hv.Scatter((x, x), xdim, ydim, label="records").opts(color="grey")
        return (pts * diag).opts(
            hv.opts.Overlay(
                title="MRF vs logistic P(Y=1|x) — logistic skyline still fitting…",
                legend_position="bottom_right",
                **opts,
            )
        )
    lx = np.clip(np.nan_to_num(frame["logistic"].to_numpy(float), nan=0.5), 0, 1)
    my = np.clip(np.nan_to_num(frame["mrf"].to_numpy(float), nan=0.5), 0, 1)
    lab = frame["label"].to_numpy(float)
    if mode == "scatter":
        layers = []
        for v, name in ((0, "Y = 0"), (1, "Y = 1")):
            m = lab == v
            layers.append(
                hv.Scatter((lx[m], my[m]), xdim, ydim, label=f"test records, {name}").opts(
                    color=LABEL_COLORS[name], size=6, alpha=0.5
                )
            )
        return hv.Overlay([*layers, diag]).opts(
            hv.opts.Overlay(
                title="MRF vs logistic P(Y=1|x) on test records",
                legend_position="bottom_right",
                **opts,
            )
        )
    hexes = hv.HexTiles(
        pd.DataFrame({"logistic": lx, "mrf": my, "share": lab}),
        [xdim, ydim],
        hv.Dimension("share", label="share of Y = 1 in the bin", range=(0, 1)),
    ).opts(
        aggregator=np.mean,
        gridsize=30,
        cmap="coolwarm",
        colorbar=True,
        clim=(0, 1),
        line_width=0,
    )
    return (hexes * diag).opts(
        hv.opts.Overlay(
            title=f"MRF vs logistic P(Y=1|x), {len(frame):,} test records (binned)",
            legend_position="bottom_right",
            show_legend=True,
            **opts,
        )
    )


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


def xor_plot(frame: pd.DataFrame | None):
    """Grouped bars: P(Y=1|x) per XOR state for truth, exact max-ent, live MRF, logistic."""
    rows = []
    if frame is not None:
        for _, r in frame.iterrows():
            for m in XOR_MODELS:
                v = _finite(r.get(m, np.nan))
                rows.append((r["state"], m, v if math.isfinite(v) else 0.0))
    if not rows:
        rows = [("(no data)", m, 0.0) for m in XOR_MODELS]
    df = pd.DataFrame(rows, columns=["state", "model", "p"])
    bars = hv.Bars(
        df,
        [hv.Dimension("state", label="state x = (x1, x2, x3)"), "model"],
        hv.Dimension("p", label="P(Y=1|x) (probability)", range=(0, 1)),
    ).opts(
        color="model",
        cmap=dict(zip(XOR_MODELS, XOR_COLORS, strict=True)),
        show_legend=True,
        legend_position="right",
        ylim=(0, 1),
        title="XOR: P(Y=1|x) per state — truth 0.75 / 0.25, max-ent 0.9 / 0.1",
        xrotation=0,
        **_COMMON,
    )
    return bars
