"""Pure plot functions of the Privacy tab: the noise a release added (histogram against
the mechanism's density or pmf, released against true counts) and the price of privacy
(each finished run's final test NLLH against its ε, one line per mechanism and learner).

Like :mod:`.plots`, whose helpers and styles they share: pure functions of their
arguments, each returning a HoloViews element whose layer structure depends only on its
``mode``-like arguments (:func:`privacy_series` names the curve's structure).
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
from bokeh.models import NumeralTickFormatter

from ...privacy.registry import REGISTRY
from ...values import format_scale
from .plots import (
    COMMON,
    MRF_COLOR,
    NLLH_FLOOR,
    OFF_SCALE,
    REF_STYLE,
    REFERENCE_NAMES,
    PlotData,
    finite,
    legend_opts,
    log_ticks,
    log_x_hook,
    off_scale_layers,
    xy,
)

#: counts and noise in records as a student reads them: 400,000 and 0.5, never 4.000e+5
RECORDS_FORMAT = "0,0.[00]"

__all__ = [
    "RECORDS_FORMAT",
    "noise_histogram",
    "noisy_vs_true",
    "privacy_curve_data",
    "privacy_curve_plot",
    "privacy_series",
    "MECHANISM_LABELS",
    "MECHANISM_COLORS",
    "PRIVACY_LIVE",
    "PRIVACY_PAUSED",
    "PRIVACY_SKYLINE",
]


def noise_histogram(
    noise: np.ndarray | None,
    std: float,
    mechanism: str,
    pmf=None,
    bins: int = 40,
    sigmas: np.ndarray | None = None,
    records: int | None = None,
):
    """Histogram (density) of the noise added to released counts, with the mechanism's
    density; for integer noise (``pmf``: x ↦ P(noise = x), a discrete mechanism's ``pmf``)
    bins of whole integers and the pmf at the integers.  ``sigmas`` (one σ per count, the
    local mechanism's, where a count's noise is ≈ N(0, σ²) with σ from a few records to
    millions): the density of a count drawn at random is the mixture of those Gaussians,
    drawn over the range that holds 99.5 % of the noise (not ±4 root-mean-square σ: there
    the bars and the curve sat in one bin far below each other)."""
    if sigmas is not None:
        return _mixture_histogram(noise, sigmas, mechanism, bins, records)
    xdim = hv.Dimension("noise", label="noise added to a count (records)")
    ydim = hv.Dimension("density", label="density (1 / record)")
    noise = np.asarray(noise if noise is not None else [], dtype=float)
    noise = noise[np.isfinite(noise)]
    s = finite(std)
    if not math.isfinite(s) or s <= 0:
        s = float(np.std(noise)) if noise.size else 1.0
    s = max(s, 1e-9)
    lim = 4 * s
    edges = np.linspace(-lim, lim, bins + 1) if pmf is None else _integer_edges(lim, bins)
    lo, hi = float(edges[0]), float(edges[-1])
    inner = (lo, hi) if pmf is None else (lo + 0.5, hi - 0.5)  # (integers of the end bins)
    counts, _ = np.histogram(np.clip(noise, *inner), bins=edges, density=noise.size > 0)
    hist = hv.Histogram((edges, counts), kdims=[xdim], vdims=[ydim], label="released rows").opts(
        color="#aec7e8", line_color="white"
    )
    label = MECHANISM_LABELS.get(mechanism, mechanism)
    shape = getattr(REGISTRY.get(mechanism), "density", "gauss")  # the density's shape
    if pmf is not None:
        xs = np.unique(np.linspace(inner[0], inner[1], 401).round())
        ys = np.asarray(pmf(xs), dtype=float)
        size = "σ" if shape == "gauss" else "std"
        name = f"{label} pmf ({size} {format_scale(s)})"
    elif shape == "laplace":
        xs = np.linspace(-lim, lim, 201)
        b = s / math.sqrt(2)
        ys = np.exp(-np.abs(xs) / b) / (2 * b)
        name = f"Laplace density (std {format_scale(s)})"
    else:
        xs = np.linspace(-lim, lim, 201)
        ys = np.exp(-0.5 * (xs / s) ** 2) / (s * math.sqrt(2 * math.pi))
        name = f"Gaussian density (σ {format_scale(s)})"
    curve = hv.Curve((xs, ys), xdim, ydim, label=name).opts(color="#d62728", line_width=2)
    layers = [hist, curve]
    if pmf is not None and xs.size <= 61:  # few integers: a dot on each
        layers.append(hv.Scatter((xs, ys), xdim, ydim).opts(color="#d62728", size=6))
    heights = np.concatenate([np.asarray(counts, dtype=float), ys])
    heights = heights[np.isfinite(heights)]
    top = float(heights.max()) if heights.size else 0.0
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title="Noise on released counts" + (" (integers)" if pmf is not None else ""),
            legend_position="top_right",
            xlim=(lo, hi),
            ylim=(0, 1.45 * top if top > 0 else 1.0),  # (room for the legend above the bars)
            yformatter="%.2g",
            xformatter=NumeralTickFormatter(format=RECORDS_FORMAT),
            **COMMON,
        )
    )


MIXTURE_SIGMAS = 2000  # the most σ's the mixture density sums (evenly picked)


def _mixture_histogram(noise, sigmas, mechanism: str, bins: int, records: int | None = None):
    """:func:`noise_histogram` with one σ per count (``sigmas``); ``records``: the data's
    number of records, in the title (the noise on a count may exceed it)."""
    of = f"; the data: {records:,}" if records else ""
    xdim = hv.Dimension("noise", label=f"noise added to a count (records{of})")
    ydim = hv.Dimension("density", label="density (1 / record)")
    noise = np.asarray(noise if noise is not None else [], dtype=float)
    noise = noise[np.isfinite(noise)]
    sig = np.asarray(sigmas, dtype=float)
    sig = np.sort(sig[np.isfinite(sig) & (sig > 0)])
    if sig.size > MIXTURE_SIGMAS:
        sig = sig[np.linspace(0, sig.size - 1, MIXTURE_SIGMAS).round().astype(int)]
    lim = float(np.quantile(np.abs(noise), 0.995)) if noise.size else 0.0
    if not lim > 0:
        lim = 4 * float(np.median(sig)) if sig.size else 1.0
    edges = np.linspace(-lim, lim, bins + 1)
    inside = noise[np.abs(noise) <= lim]
    counts, _ = np.histogram(inside, bins=edges)
    # the share of all counts per record of noise (the 0.5 % beyond the range left out)
    dens = counts / max(noise.size, 1) / (edges[1] - edges[0])
    label = MECHANISM_LABELS.get(mechanism, mechanism)
    hist = hv.Histogram((edges, dens), kdims=[xdim], vdims=[ydim], label="released rows").opts(
        color="#aec7e8", line_color="white"
    )
    # the mixture's expected density over each bar's bin (a narrow σ's spike averaged over
    # its bin as the bars average it), drawn through the bins' middles
    xs = (edges[:-1] + edges[1:]) / 2
    if sig.size:
        from scipy.special import ndtr

        mass = ndtr(edges[1:, None] / sig[None, :]) - ndtr(edges[:-1, None] / sig[None, :])
        ys = mass.mean(axis=1) / (edges[1] - edges[0])
        name = f"{label}: expected, from each count's σ (median {format_scale(np.median(sig))})"
    else:
        ys = np.zeros_like(xs)
        name = f"{label} density"
    curve = hv.Curve((xs, ys), xdim, ydim, label=name).opts(color="#d62728", line_width=2)
    heights = np.concatenate([dens, ys])
    top = float(heights[np.isfinite(heights)].max()) if heights.size else 0.0
    return hv.Overlay([hist, curve]).opts(
        hv.opts.Overlay(
            title="Noise on released counts (99.5 % shown)",
            legend_position="top_right",
            xlim=(-lim, lim),
            ylim=(0, 1.45 * top if top > 0 else 1.0),
            yformatter="%.2g",
            xformatter=NumeralTickFormatter(format=RECORDS_FORMAT),
            **COMMON,
        )
    )


def _integer_edges(lim: float, bins: int) -> np.ndarray:
    """Edges of about ``bins`` bins of the same odd number of integers each, the middle
    one centred on 0, covering −lim … lim: every integer in exactly one bin."""
    half = max(1, math.ceil(lim))
    width = max(1, round(2 * half / bins))
    width += 1 - width % 2  # odd: the middle bin is symmetric about 0
    j = width // 2
    m = math.ceil((half - j) / width)
    return -j - 0.5 - m * width + width * np.arange(2 * m + 2, dtype=float)


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
        hv.opts.Overlay(
            title="Released vs true counts",
            legend_position="bottom_right",
            xformatter=NumeralTickFormatter(format=RECORDS_FORMAT),
            yformatter=NumeralTickFormatter(format=RECORDS_FORMAT),
            **COMMON,
        )
    )


# ---------------------------------------------------------------------- price of privacy
# each noisy mechanism's words and colour, from its class (``privacy.registry``)
MECHANISM_LABELS = {n: c.label for n, c in REGISTRY.items() if c.uses}
MECHANISM_COLORS = {n: c.color for n, c in REGISTRY.items() if c.uses}
PRIVACY_LIVE = "this run (training)"
PRIVACY_PAUSED = "this run (paused)"  # the live point's legend while the session is paused
PRIVACY_SKYLINE = "skyline (no privacy)"


def _series(run: dict) -> tuple[str, bool]:
    return str(run.get("mechanism") or ""), bool(run.get("noise_aware"))


def _series_label(mech: str, aware: bool) -> str:
    learner = "MRF-N" if aware else "MRF"
    return f"{MECHANISM_LABELS.get(mech, mech)} · {learner}" if mech else learner


def privacy_series(runs: list[dict] | None, dataset: str | None = None) -> tuple[str, ...]:
    """The curves of :func:`privacy_curve_plot`: one per (mechanism, learner) among the
    finished runs of ``dataset``, e.g. ("Laplace · MRF", "Gaussian · MRF"); the figure's
    layer structure (a live plot's key)."""
    order = {m: i for i, m in enumerate(MECHANISM_LABELS)}
    found = {_series(r) for r in _privacy_ok(runs, dataset)}
    return tuple(
        _series_label(*s) for s in sorted(found, key=lambda s: (order.get(s[0], 9), s[0], s[1]))
    )


def _privacy_ok(runs, dataset) -> list[dict]:
    return [
        r
        for r in (runs or [])
        if (dataset is None or r.get("dataset") == dataset)
        and finite(r.get("epsilon")) > 0
        and math.isfinite(finite(r.get("nllh")))
    ]


def privacy_curve_data(
    runs: list[dict] | None,
    live: dict | None = None,
    skyline: float | None = None,
    dataset: str | None = None,
    running: bool = True,
) -> PlotData:
    """Layers of :func:`privacy_curve_plot`: this session's test NLLH against ε.

    ``runs``: the store's ``privacy_runs`` (dicts with epsilon, nllh, mechanism,
    noise_aware, dataset, …), one point each, joined by one line per mechanism and
    learner (:func:`privacy_series`; Laplace and Gaussian runs never share a line), in ε
    order, through the mean of the runs at one ε; ``live``: the run training now
    (``store.privacy_point()``), an open marker named :data:`PRIVACY_LIVE`, or
    :data:`PRIVACY_PAUSED` when not ``running`` (the legend follows); ``skyline``: the logistic fitted on the
    records (no privacy), the reference line.  Runs of another ``dataset`` are left out.
    The y axis never goes below ``NLLH_FLOOR``: a point below it is drawn on the axis as
    a red ▼ with its value, and its line goes down to it.
    """
    ok = _privacy_ok(runs, dataset)
    lv = live or {}
    le, ln = finite(lv.get("epsilon")), finite(lv.get("nllh"))
    has_live = le > 0 and math.isfinite(ln) and lv.get("dataset") in (None, dataset)
    xs = [float(r["epsilon"]) for r in ok] + ([le] if has_live else [])
    ys = [float(r["nllh"]) for r in ok] + ([ln] if has_live else [])
    sky = finite(skyline)
    lo_x, hi_x = min(xs + [1.0]) / 2, max(xs + [1.0]) * 2
    shown = [y for y in ys + [sky] if math.isfinite(y)]
    lo_y = max(min(shown + [0.0]), NLLH_FLOOR)
    hi_y = max(shown + [0.05])
    pad = 0.08 * (hi_y - lo_y or 1.0)
    ylim = (lo_y - pad if lo_y > NLLH_FLOOR else NLLH_FLOOR - pad, hi_y + pad)
    bottom = ylim[0] + 0.03 * (ylim[1] - ylim[0])
    layers: dict = {}
    for label in privacy_series(ok):
        pts = sorted(
            (float(r["epsilon"]), float(r["nllh"]))
            for r in ok
            if _series_label(*_series(r)) == label
        )
        eps = sorted({e for e, _ in pts})
        mean = [float(np.mean([v for e2, v in pts if e2 == e])) for e in eps]
        layers[f"{label} (finished runs)"] = xy(eps, np.maximum(mean, bottom))
        layers[f"{label}: runs"] = xy([e for e, _ in pts], [v for _, v in pts])
    layers[PRIVACY_LIVE if running else PRIVACY_PAUSED] = xy([le], [ln]) if has_live else xy([], [])
    low = [(x, y) for x, y in zip(xs, ys, strict=True) if y < ylim[0]]
    layers[OFF_SCALE] = xy([x for x, _ in low], [bottom] * len(low))
    step = 0.07 * (ylim[1] - ylim[0])  # (values at one ε: stacked, never on top of each other)
    layers["off-scale value"] = {
        "x": xy([x for x, _ in low], [])[0],
        "y": xy(
            [],
            [
                bottom + step * (1 + [x for x, _ in low[:k]].count(x))
                for k, (x, _) in enumerate(low)
            ],
        )[1],
        "text": np.array([f"{y:.3g} ▼".replace("-", "−") for _, y in low], dtype=object),
    }
    layers[PRIVACY_SKYLINE] = xy([lo_x, hi_x], [sky, sky]) if math.isfinite(sky) else xy([], [])
    n = len(ok)
    title = (
        f"The price of privacy: test NLLH vs ε ({n} finished run{'s' if n != 1 else ''})"
        if n
        else "The price of privacy: move ε, each finished run adds a point"
    )
    majors, minors = log_ticks(lo_x, hi_x)
    return PlotData(layers, (lo_x, hi_x), ylim, title, {"xticks": majors, "xminor": minors})


def privacy_curve_plot(
    runs: list[dict] | None,
    live: dict | None = None,
    skyline: float | None = None,
    dataset: str | None = None,
    running: bool = True,
) -> hv.Overlay:
    """Test NLLH against ε (log axis) from this session's runs, one line per mechanism
    and learner (MRF solid, MRF-N dashed), with the live run (its legend says whether it
    is ``running`` or paused), the points below the axis and the skyline (no privacy) as
    the reference."""
    d = privacy_curve_data(runs, live, skyline, dataset, running)
    live_name = PRIVACY_LIVE if running else PRIVACY_PAUSED
    xdim = hv.Dimension("epsilon", label="privacy budget ε (log)")
    ydim = hv.Dimension("nllh", label="final test NLLH")
    layers = []
    series = privacy_series(runs, dataset)
    for label in series:
        mech = next((m for m, t in MECHANISM_LABELS.items() if label.startswith(f"{t} · ")), "")
        color = MECHANISM_COLORS.get(mech, MRF_COLOR)
        dash = "dashed" if label.endswith("MRF-N") else "solid"
        line = d.layers[f"{label} (finished runs)"]
        layers.append(
            hv.Curve(line, xdim, ydim, label=label).opts(
                color=color, line_width=2.5, line_dash=dash
            )
        )
        layers.append(hv.Scatter(d.layers[f"{label}: runs"], xdim, ydim).opts(color=color, size=10))
    layers.append(
        hv.Scatter(d.layers[live_name], xdim, ydim, label=live_name).opts(
            color="white", line_color="black", line_width=2, size=13
        )
    )
    layers += off_scale_layers(d, xdim, ydim, "11pt")
    color, dash = REF_STYLE[REFERENCE_NAMES[0]]
    layers.append(
        hv.Curve(d.layers[PRIVACY_SKYLINE], xdim, ydim, label=PRIVACY_SKYLINE).opts(
            color=color, line_dash=dash, line_width=2
        )
    )
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title,
            logx=True,
            xlim=d.xlim,
            ylim=d.ylim,
            xformatter="%g",
            hooks=[log_x_hook],
            **legend_opts(min(len(series) + 2, 4)),
            **COMMON,
        )
    )
