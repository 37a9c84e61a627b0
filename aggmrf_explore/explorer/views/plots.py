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

from .series import Series, downsample

__all__ = [
    "PlotData",
    "PinnedRun",
    "pin_run",
    "run_label",
    "log_ticks",
    "nice_floor",
    "pins_caption",
    "nllh_data",
    "convergence_data",
    "dhat_data",
    "predictions_data",
    "xor_values",
    "xor_title",
    "nllh_plot",
    "convergence_plot",
    "dhat_scatter",
    "predictions_plot",
    "predictions_mode",
    "xor_plot",
    "scoreboard",
    "finite",
    "log_x_hook",
    "xy",
    "legend_opts",
    "off_scale_layers",
    "COMMON",
    "REF_STYLE",
    "REFERENCE_NAMES",
    "MAX_PINS",
    "MRF_NAME",
]

REFERENCE_NAMES = (
    "logistic skyline (pairs, full data)",
    "naive Bayes (single tables)",
    "best pair table",
)
REF_STYLE = {
    REFERENCE_NAMES[0]: ("#2ca02c", "dashed"),
    REFERENCE_NAMES[1]: ("#9467bd", "dotted"),
    REFERENCE_NAMES[2]: ("#8c564b", "dashdot"),
}
MRF_COLOR = "#1f77b4"
MRF_NAME = "MRF"  # the live curve's layer and legend label (legends are one row: short)
LABEL_COLORS = {"Y = 0": "#1f77b4", "Y = 1": "#d62728"}
KIND_COLORS = {"single": "#ff7f0e", "pair": "#1f77b4", "triple": "#2ca02c"}
FONTS = {"title": "13pt", "labels": "12pt", "xticks": "10pt", "yticks": "10pt", "legend": "10pt"}
_LEGEND_STYLE = {"spacing": 2, "padding": 2, "margin": 0, "label_height": 14, "glyph_height": 14}
COMMON = dict(
    responsive=True,
    min_height=220,  # (a live plot is PLOT_HEIGHT = 236 px: two rows fit 1280×720)
    framewise=True,
    fontsize=FONTS,
    toolbar=None,  # a toolbar sits in the title row and hides titles on a narrow plot
    default_tools=["save"],
)


def _history(history: pd.DataFrame | None) -> pd.DataFrame:
    cols = ["iteration", "d_error", "c_error", "nllh_eval"]
    if history is None or len(history) == 0:
        return pd.DataFrame({c: np.zeros(0) for c in cols})
    h = history[cols].copy()
    for c in cols:
        h[c] = pd.to_numeric(h[c], errors="coerce").astype(float)
    return h


def finite(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


@dataclass
class PlotData:
    """What a live plot shows: one layer per label, ranges, title.

    A layer is an (x, y) pair of arrays, or a dict of columns ({"x", "y", "text"}) for a
    text layer.  The app pushes these arrays into the existing Bokeh data sources of a
    figure first drawn by the matching HoloViews function (same labels, same layer
    order), so a refresh never rebuilds the figure.  ``extra`` may hold "yticks" /
    "yminor" and "xticks" / "xminor" (tick positions of a log axis), "legend" ({layer: legend label}) and
    "image" (predictions, binned).
    """

    layers: dict[str, tuple[np.ndarray, np.ndarray] | dict[str, np.ndarray]]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    title: str
    extra: dict = field(default_factory=dict)


def xy(xs, ys) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


# ---------------------------------------------------------------------- log-axis ticks
_COARSER = ((1, 2, 5), (1, 3), (1,))
_FINER = ((1, 1.5, 2, 3, 4, 5, 6, 8), tuple(np.arange(1, 10, 0.5)))


def log_ticks(lo: float, hi: float, max_ticks: int = 6) -> tuple[list[float], list[float]]:
    """Labelled (major) and minor tick positions for a log axis spanning [lo, hi] (> 0).

    Majors are the finest of {1, 2, 5}·10ⁿ, {1, 3}·10ⁿ, 10ⁿ with at most ``max_ticks``
    labels in the range; a range too short for 3 of them gets {1, 1.5, 2, 3, …}·10ⁿ (then
    steps of 0.5·10ⁿ).  Minors are every integer multiple of each decade.  Bokeh's own log
    ticker labels only whole decades, or falls back to linear ticks on a short range (0.5
    and 1 on an axis whose curves sit near 0.04).
    """
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= lo:
        return [], []
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(mantissas) -> list[float]:
        vals = {float(f"{m * 10.0**e:.6g}") for e in range(e0, e1 + 1) for m in mantissas}
        return sorted(v for v in vals if lo <= v <= hi)

    for mantissas in _COARSER:
        majors = within(mantissas)
        if len(majors) <= max_ticks:
            break
    if len(majors) < 3:
        for mantissas in _FINER:
            majors = within(mantissas)
            if len(majors) >= 3:
                break
    minors = [v for v in within(range(1, 10)) if v not in majors]
    return majors, minors


def nice_floor(v: float) -> float:
    """The largest 1-2-5 value (1, 2 or 5 × 10ⁿ) ≤ v > 0: a log axis starting there has a
    labelled tick at its bottom."""
    e = math.floor(math.log10(v))
    for m in (5, 2, 1):
        if m * 10.0**e <= v * (1 + 1e-12):
            return float(f"{m * 10.0**e:.6g}")
    return 10.0**e


def _log_axis_hook(plot, element) -> None:
    """HoloViews hook: the plot's y axis ticks from ``log_ticks`` of its y range."""
    _fixed_log_ticks(plot.state, "y")


def log_x_hook(plot, element) -> None:
    """HoloViews hook: the plot's x axis ticks from ``log_ticks`` of its x range."""
    _fixed_log_ticks(plot.state, "x")


def iteration_range(iterations) -> tuple[float, float]:
    """The x range of the training plots: a log axis of iterations from 1 to a little
    past the last one (at least 10), so that the first iterations, where most of the
    learning happens, get as much room as the last thousands."""
    last = max([10.0, *(float(np.max(x)) for x in iterations if len(x))])
    return (1.0, last * 1.15)


def _x_ticks(xlim: tuple[float, float]) -> dict:
    majors, minors = log_ticks(*xlim)
    return {"xticks": majors, "xminor": minors}


def _log_x_opts(d, hooks=()) -> dict:
    """HoloViews options of a log iteration axis with 1-2-5 ticks (``d``: PlotData)."""
    return dict(
        logx=True,
        xlim=d.xlim,
        xticks=d.extra["xticks"] or None,
        xformatter="%g",
        hooks=[*hooks, log_x_hook],
    )


def _fixed_log_ticks(fig, axis: str) -> None:
    from bokeh.models import FixedTicker

    r = fig.y_range if axis == "y" else fig.x_range
    majors, minors = log_ticks(r.start, r.end)
    if majors:
        (fig.yaxis if axis == "y" else fig.xaxis)[0].ticker = FixedTicker(
            ticks=majors, minor_ticks=minors
        )


# ---------------------------------------------------------------------- pinned runs
MAX_PINS = 3
PIN_COLORS = ("#7f7f7f", "#bcbd22", "#e377c2")
NLLH_PER_DECADE = 200  # points per decade of iterations (log axis; ~500–800 px wide)
ERROR_PER_DECADE = 100  # the noisy errors: fewer buckets, each with its min–max band


@dataclass(frozen=True)
class PinnedRun:
    """A finished or paused run kept as a ghost on the training plots ("Pin this run").

    label: what the legend says (settings and iteration); nllh: its test-NLLH curve;
    d_error: its relative L1 error of d̂ (both downsampled once, when pinned).
    """

    label: str
    nllh: Series
    d_error: Series


def pin_run(history: pd.DataFrame | None, label: str) -> PinnedRun:
    """Freeze a run's curves (a history as in :func:`nllh_plot`) under a legend label."""
    h = _history(history)
    return PinnedRun(
        str(label),
        downsample(h["iteration"], h["nllh_eval"], how="last", per_decade=NLLH_PER_DECADE),
        downsample(
            h["iteration"], _positive(h["d_error"]), how="mean", per_decade=ERROR_PER_DECADE
        ),
    )


def run_label(settings: dict, iteration: int) -> str:
    """A short legend label for a run: the settings a comparison usually varies.

    ``settings``: the store's settings dict (dataset, gradient, lambda_theta, n_gibbs,
    mechanism, epsilon, noise_aware, …); missing keys are left out.
    """
    parts = [str(settings.get("dataset", ""))]
    if "gradient" in settings:
        parts.append(f"{settings['gradient']} gradient")
    if "lambda_theta" in settings:
        parts.append(f"λθ {float(settings['lambda_theta']):.3g}")
    if "n_gibbs" in settings:
        parts.append(f"n' {int(settings['n_gibbs']):,}")
    mech = settings.get("mechanism", "none")
    if mech and mech != "none":
        parts.append(f"{mech} ε {float(settings.get('epsilon', float('nan'))):g}")
        if settings.get("noise_aware"):
            parts.append("MRF-N")
    parts.append(f"{int(iteration):,} it")
    return " · ".join(p for p in parts if p)


def _pin_names(pinned) -> list[str]:
    return [f"pin {i + 1}" for i, _ in enumerate(list(pinned)[-MAX_PINS:])]


def pins_caption(pinned) -> str:
    """What the pinned ghosts are (Markdown, one line): "pin 1: … · pin 2: …" (the legend
    names them "pin 1", "pin 2" only, so it fits above a narrow plot)."""
    pins = list(pinned)[-MAX_PINS:]
    if not pins:
        return ""
    return " · ".join(
        f"**{name}**: {p.label}" for name, p in zip(_pin_names(pins), pins, strict=True)
    )


# ---------------------------------------------------------------------- test NLLH
NLLH_FLOOR = -1.0  # the NLLH axis never goes below this: lower values get a marker
OFF_SCALE = "below the axis"
_REF_SHORT = {
    REFERENCE_NAMES[0]: "skyline",
    REFERENCE_NAMES[1]: "naive Bayes",
    REFERENCE_NAMES[2]: "best pair",
}


def nllh_data(
    history: pd.DataFrame | None,
    references: dict[str, float] | None = None,
    pinned=(),
) -> PlotData:
    """Layers and ranges of :func:`nllh_plot` (finite values only).

    The MRF curve is the held-out NLLH downsampled on its own measured iterations
    (:func:`series.downsample`, last value per bucket).  ``pinned``: :class:`PinnedRun`
    ghosts (the last ``MAX_PINS``).  A current value below the axis (< ``NLLH_FLOOR``)
    gets a marker at the bottom edge and a text with its value.
    """
    h = _history(history)
    mrf = downsample(h["iteration"], h["nllh_eval"], how="last", per_decade=NLLH_PER_DECADE)
    pins = list(pinned)[-MAX_PINS:]
    references = references or {}
    xlim = iteration_range([h["iteration"], *(p.nllh.x for p in pins)])
    # layer order = drawing order: ghosts under the live curve, references over it
    layers: dict = {}
    values = [mrf.y]
    for name, p in zip(_pin_names(pins), pins, strict=True):
        layers[name] = xy(p.nllh.x, p.nllh.y)
        values.append(p.nllh.y)
    layers[MRF_NAME] = xy(mrf.x, mrf.y)
    for name in REFERENCE_NAMES:
        v = finite(references.get(name))
        if math.isfinite(v):
            values.append(np.array([v]))
            layers[_REF_SHORT[name]] = xy(list(xlim), [v, v])
        else:
            layers[_REF_SHORT[name]] = xy([], [])
    vals = np.concatenate(values)
    lo = min(float(vals.min()) if vals.size else 0.0, 0.0)
    hi = max(float(vals.max()) if vals.size else 0.05, 0.05)
    pad = 0.06 * (hi - max(lo, NLLH_FLOOR) or 1.0)
    ylim = (max(lo - pad, NLLH_FLOOR), hi + pad)
    now = float(mrf.y[-1]) if len(mrf) else float("nan")
    if math.isfinite(now) and now < ylim[0]:
        mark_y = ylim[0] + 0.03 * (ylim[1] - ylim[0])
        layers[OFF_SCALE] = xy([mrf.x[-1]], [mark_y])
        text = f"now {now:.3g} ▼ (below the axis)".replace("-", "−")
        layers["off-scale value"] = {  # (centred: whole at any x, near either edge)
            "x": xy([math.sqrt(xlim[0] * xlim[1])], [0])[0],
            "y": xy([0], [ylim[0] + 0.1 * (ylim[1] - ylim[0])])[1],
            "text": np.array([text], dtype=object),
        }
    else:
        layers[OFF_SCALE] = xy([], [])
        layers["off-scale value"] = {
            "x": np.zeros(0),
            "y": np.zeros(0),
            "text": np.zeros(0, dtype=object),
        }
    return PlotData(layers, xlim, ylim, "Test NLLH (higher is better)", _x_ticks(xlim))


def off_scale_layers(d: PlotData, xdim, ydim, font_size: str) -> list:
    """The red ▼ at the bottom edge for a value below the axis, and its value as a centred
    text (``d.layers``' OFF_SCALE and "off-scale value"; empty layers when on the scale)."""
    off = d.layers["off-scale value"]
    marker = hv.Scatter(d.layers[OFF_SCALE], xdim, ydim).opts(
        color="#d62728", marker="inverted_triangle", size=14
    )
    text = hv.Labels((off["x"], off["y"], off["text"]), [xdim, ydim], "text").opts(
        text_color="#d62728", text_align="center", text_font_size=font_size, text_baseline="bottom"
    )
    return [marker, text]


def legend_opts(n_items: int) -> dict:
    """A legend outside the data: one row above the plot (short labels: the explanation
    under the plots names them in full)."""
    return dict(legend_position="top", legend_cols=n_items, legend_opts=_LEGEND_STYLE)


def nllh_plot(
    history: pd.DataFrame | None,
    references: dict[str, float] | None = None,
    pinned=(),
) -> hv.Overlay:
    """Test NLLH vs iteration for the MRF, with the baselines as horizontal reference lines.

    ``references``: {name: test NLLH}; the names of REFERENCE_NAMES always get a layer
    (empty when unknown) so the layer structure depends on the number of ``pinned``
    runs only (their ghosts are drawn under the live curve).
    """
    d = nllh_data(history, references, pinned)
    xdim = hv.Dimension("iteration", label="iteration (PCD steps, log scale)")
    ydim = hv.Dimension("nllh", label="test NLLH (unitless)")
    pins = _pin_names(list(pinned)[-MAX_PINS:])
    layers = [
        hv.Curve(d.layers[name], xdim, ydim, label=name).opts(
            color=PIN_COLORS[i], line_width=2.5, alpha=0.6
        )
        for i, name in enumerate(pins)
    ]
    layers.append(
        hv.Curve(d.layers[MRF_NAME], xdim, ydim, label=MRF_NAME).opts(color=MRF_COLOR, line_width=3)
    )
    for name in REFERENCE_NAMES:
        short = _REF_SHORT[name]
        color, dash = REF_STYLE[name]
        layers.append(
            hv.Curve(d.layers[short], xdim, ydim, label=short).opts(
                color=color, line_dash=dash, line_width=2
            )
        )
    layers += off_scale_layers(d, xdim, ydim, "12pt")
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(title=d.title, ylim=d.ylim, **_log_x_opts(d), **legend_opts(4), **COMMON),
    )


# ---------------------------------------------------------------------- convergence
CONVERGENCE_NAMES = ("d̂ (counts)", "ĉ (label sums)", "Monte-Carlo floor")
_TINY, _HUGE = 1e-6, 1e3  # errors are clipped to this range on the log axis
_BAND_NAMES = ("d̂ range", "ĉ range")


def _positive(v) -> np.ndarray:
    """Errors for a log axis: NaN stays NaN (not measured), the rest clipped to [1e-6, 1e3]."""
    a = pd.to_numeric(pd.Series(np.asarray(v, dtype=object)), errors="coerce").to_numpy(float)
    a = np.where(np.isposinf(a), _HUGE, a)
    return np.where(np.isfinite(a), np.clip(a, _TINY, _HUGE), np.nan)


def convergence_data(
    history: pd.DataFrame | None, floor: float | None = None, pinned=()
) -> PlotData:
    """Layers and ranges of :func:`convergence_plot` (errors clipped to [1e-6, 1e3]).

    Each error is downsampled on its own (bucket mean, with the bucket's min–max as a
    band: MRF-N's error drops below the floor on every target refresh and rises between
    them, and a line through one phase of that period would lie).  ``extra["yticks"]`` /
    ``extra["yminor"]``: the log axis' labelled and minor ticks (:func:`log_ticks`).
    """
    h = _history(history)
    pins = list(pinned)[-MAX_PINS:]
    ds = downsample(
        h["iteration"], _positive(h["d_error"]), how="mean", per_decade=ERROR_PER_DECADE
    )
    cs = downsample(
        h["iteration"], _positive(h["c_error"]), how="mean", per_decade=ERROR_PER_DECADE
    )
    xlim = iteration_range([h["iteration"], *(p.d_error.x for p in pins)])
    f = finite(floor)
    has_floor = math.isfinite(f) and f > 0
    layers: dict = {_BAND_NAMES[0]: ds.band(), _BAND_NAMES[1]: cs.band()}
    values = [ds.lo, ds.hi, cs.lo, cs.hi]
    for name, p in zip(_pin_names(pins), pins, strict=True):
        layers[name] = xy(p.d_error.x, p.d_error.y)
        values.append(p.d_error.y)
    layers[CONVERGENCE_NAMES[0]] = xy(ds.x, ds.y)
    layers[CONVERGENCE_NAMES[1]] = xy(cs.x, cs.y)
    layers[CONVERGENCE_NAMES[2]] = xy(list(xlim), [f, f]) if has_floor else xy([], [])
    if has_floor:
        values.append(np.array([f]))
    vals = np.concatenate(values)
    vals = vals[np.isfinite(vals)]
    lo = max(nice_floor(float(vals.min()) / 1.25) if vals.size else 1e-3, _TINY)
    hi = float(vals.max()) * 1.6 if vals.size else 1.0
    ylim = (lo, max(hi, 3 * lo))
    majors, minors = log_ticks(*ylim)
    return PlotData(
        layers,
        xlim,
        ylim,
        "Convergence of d̂ → d and ĉ → c",
        {"yticks": majors, "yminor": minors, **_x_ticks(xlim)},
    )


def convergence_plot(
    history: pd.DataFrame | None, floor: float | None = None, pinned=()
) -> hv.Overlay:
    """Relative L1 error of d̂ and ĉ vs iteration (log axis, 1-2-5 ticks), with their
    min–max bands, pinned runs' d̂ error as ghosts and the Monte-Carlo floor drawn on top."""
    d = convergence_data(history, floor, pinned)
    xdim = hv.Dimension("iteration", label="iteration (PCD steps, log scale)")
    ydim = hv.Dimension("error", label="relative L1 error (log)")
    layers = []
    for name, color in zip(_BAND_NAMES, (MRF_COLOR, "#ff7f0e"), strict=True):
        # HoloViews draws an Area between lo and hi as the polygon Series.band() holds
        px, py = d.layers[name]
        m = px.size // 2
        band = (px[:m], py[m:][::-1], py[:m])
        layers.append(hv.Area(band, xdim, [ydim, "hi"]).opts(color=color, alpha=0.25, line_alpha=0))
    for i, name in enumerate(_pin_names(list(pinned)[-MAX_PINS:])):
        layers.append(
            hv.Curve(d.layers[name], xdim, ydim, label=name).opts(
                color=PIN_COLORS[i], line_width=2.5, alpha=0.6
            )
        )
    styles = (
        dict(color=MRF_COLOR, line_width=2.5),
        dict(color="#ff7f0e", line_width=2.5),
        dict(color="black", line_dash="dashed", line_width=2.5),
    )
    for name, style in zip(CONVERGENCE_NAMES, styles, strict=True):
        layers.append(hv.Curve(d.layers[name], xdim, ydim, label=name).opts(**style))
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title,
            logy=True,
            ylim=d.ylim,
            yticks=d.extra["yticks"] or None,
            yformatter="%g",
            **_log_x_opts(d, hooks=[_log_axis_hook]),
            **legend_opts(3),
            **COMMON,
        ),
    )


# ---------------------------------------------------------------------- scoreboard
def scoreboard(nllh: float | None, references: dict[str, float] | None = None) -> str:
    """The one big line over the training plots (Markdown): the MRF's current test NLLH
    against the skyline (with the gap), naive Bayes and the best pair.  Short enough for
    one line beside the pin buttons at 1280 px."""
    refs = references or {}
    v = finite(nllh)
    parts = [f"Test NLLH: **MRF {v:.4f}**" if math.isfinite(v) else "Test NLLH: **MRF –**"]
    sky = finite(refs.get(REFERENCE_NAMES[0]))
    if math.isfinite(sky):
        gap = f" (gap **{v - sky:+.4f}**)".replace("-", "−") if math.isfinite(v) else ""
        parts.append(f"skyline {sky:.4f}{gap}")
    else:
        parts.append("skyline: fitting…")
    for name, short in ((REFERENCE_NAMES[1], "naive Bayes"), (REFERENCE_NAMES[2], "best pair")):
        r = finite(refs.get(name))
        if math.isfinite(r):
            parts.append(f"{short} {r:.3f}")
    return " · ".join(parts)


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
        layers[f"{kind}-feature tables"] = xy(xs, ys)
    hi *= 1.5
    layers["d̂ = d"] = xy([floor, hi], [floor, hi])
    title = f"d̂ vs d at iteration {int(iteration):,} (0 shown as 0.5)"
    return PlotData(layers, (floor, hi), (floor, hi), title)


def dhat_scatter(frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 4000):
    """Target d vs current d̂ per released row (log–log, floored at 0.5), coloured by table kind.

    ``frame`` columns: d, d_hat, kind ("single" / "pair" / "triple").
    """
    d = dhat_data(frame, iteration, max_points)
    xdim = hv.Dimension("d", label="released count d (records, log)")
    ydim = hv.Dimension("d_hat", label="model d̂ (records, log)")
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
            **legend_opts(3),
            **COMMON,
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
        title = "P(Y=1|x): the logistic skyline is still fitting…"
        layers["records"] = xy([], [])
    elif mode == "scatter":
        title = "P(Y=1|x): MRF vs logistic (test records)"
        for v, name in ((0, "Y = 0"), (1, "Y = 1")):
            m = lab == v
            layers[f"test records, {name}"] = xy(lx[m], my[m])
    else:
        title = f"P(Y=1|x): MRF vs logistic ({len(frame):,} records)"
        edges = np.linspace(0, 1, PRED_BINS + 1)
        cnt, _, _ = np.histogram2d(my, lx, bins=[edges, edges])
        pos, _, _ = np.histogram2d(my, lx, bins=[edges, edges], weights=lab)
        # row 0 = lowest MRF probability (Bokeh's image orientation)
        extra["image"] = np.where(cnt > 0, pos / np.maximum(cnt, 1), np.nan)
    layers["y = x"] = xy([0, 1], [0, 1])
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
    opts = dict(xlim=d.xlim, ylim=d.ylim, title=d.title, **legend_opts(3), **COMMON)
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
        vdims=[hv.Dimension("share", label="share of Y = 1", range=(0, 1))],
        bounds=(0, 0, 1, 1),
    ).opts(
        cmap="coolwarm",
        colorbar=True,
        clim=(0, 1),
        clipping_colors={"NaN": "transparent"},
        colorbar_opts={"title": "share of Y = 1"},
    )
    return (img * diag).opts(hv.opts.Overlay(**opts))


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
                v = finite(r.get(m, np.nan))
                rows.append((r["state"], m, v if math.isfinite(v) else 0.0))
    if not rows:
        rows = [("(no data)", m, 0.0) for m in XOR_MODELS]
    return pd.DataFrame(rows, columns=["state", "model", "p"])


def xor_title(frame: pd.DataFrame | None) -> str:
    """The XOR plot's title: the truth and the exact max-ent values of the states, in bar
    order, computed from ``frame`` (at n = 100 the exact bars are ≈ 1.0 / 0.0 / 0.8 / 0.2,
    not the large-n 0.9 / 0.1)."""

    def fmt(v: float) -> str:
        if not math.isfinite(v):
            return "–"
        text = f"{v:.2f}"
        return text[:-1] if text.endswith("0") else text  # 0.80 → 0.8, 0.75 stays

    def values(col: str) -> str:
        if frame is None or col not in frame or not len(frame):
            return "–"
        return " / ".join(fmt(finite(v)) for v in frame[col])

    return f"XOR, P(Y=1|x): truth {values('truth')}, exact max-ent {values('exact max-ent')}"


def xor_plot(frame: pd.DataFrame | None):
    """Grouped bars: P(Y=1|x) per XOR state for truth, exact max-ent, live MRF, logistic.

    Within each state the bars are in ``XOR_MODELS`` order, as in the legend.
    """
    bars = hv.Bars(
        xor_values(frame),
        [
            hv.Dimension("state", label="state x = (x1, x2, x3)"),
            hv.Dimension("model", values=list(XOR_MODELS)),
        ],
        hv.Dimension("p", label="P(Y=1|x) (probability)", range=(0, 1)),
    ).opts(
        color="model",
        cmap=dict(zip(XOR_MODELS, XOR_COLORS, strict=True)),
        show_legend=True,
        legend_position="right",
        ylim=(0, 1),
        title=xor_title(frame),
        xrotation=0,
        multi_level=False,  # the legend names the bars; inner labels would overlap
        **COMMON,
    )
    return bars
