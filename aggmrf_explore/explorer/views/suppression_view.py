"""The explorer's suppression view: the model's d̂ on the cells a release left out.

A release that drops every pair cell with true count ≤ k says of each absent cell only
0 ≤ d ≤ k; the trainer keeps the model's d̂ inside that box (``aggmrf_explore.tables.suppression``).
This view shows, per suppressed cell, the model's current d̂ (the chain's count, the one the
box targets compare with k), sorted, over the shaded band 0 ≤ d ≤ k, with the cells outside
the box in red and counted in the title, and a table of suppressed rows per table.

Pure functions of the per-cell frame (``suppression.suppressed_cells``) and summary
(``suppression.suppression_check``): :func:`suppression_data` (the arrays),
:func:`suppression_plot` (the HoloViews figure), :func:`summary_markdown`.
:class:`SuppressionFigure` draws the figure once per structure (unit and k) and afterwards
only pushes new arrays into its Bokeh data sources.
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from ..store.escape import escape_markdown
from .liveplots import render
from .plots import PlotData

__all__ = [
    "INSIDE",
    "OUTSIDE",
    "THRESHOLD",
    "RENDERER_PREFIX",
    "EXPLAIN",
    "suppression_key",
    "suppression_data",
    "suppression_plot",
    "summary_markdown",
    "SuppressionFigure",
]

INSIDE = "0 ≤ d̂ ≤ k"
OUTSIDE = "d̂ outside [0, k]"
THRESHOLD = "threshold k"
RENDERER_PREFIX = "suppression:"  # Bokeh renderer names: "suppression:" + layer
BAND_COLOR = "#2ca02c"
EXPLAIN = (
    "**Suppressed cells.** This release leaves out every pair cell whose true count was "
    "≤ k (the AdKDD'21 challenge drops counts ≤ 10; census tables with k-anonymity "
    "thresholds do the same). An absent cell is *not* a zero: it only says 0 ≤ d ≤ k. "
    "The trainer therefore gives no gradient while the model's count d̂ of such a cell "
    "lies in the green band and pushes it back to k when it goes above. Each dot is one "
    "suppressed cell (sorted by d̂); red dots are outside the box at this iteration "
    "(the chain's d̂ carries Monte-Carlo noise, so a few cells near k flicker in and out). "
    "Reading the same release with absent = 0 would pull every dot down to 0."
)
_OPTS = dict(
    responsive=True,
    min_height=250,
    framewise=True,
    fontsize={"title": 12, "labels": 11, "xticks": 10, "yticks": 10, "legend": 10},
    toolbar=None,
    default_tools=["save"],
)


def suppression_key(frame: pd.DataFrame | None) -> tuple:
    """The figure's structure: ("records", k) when every suppressed cell has the same
    threshold k (d̂ drawn in records), else ("ratio", 1.0) (d̂/k drawn)."""
    if frame is None or not len(frame):
        return ("records", 0.0)
    ks = np.unique(frame["k"].to_numpy(float))
    return ("records", float(ks[0])) if ks.size == 1 else ("ratio", 1.0)


def suppression_data(
    frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 20_000
) -> PlotData:
    """Layers, ranges and title of :func:`suppression_plot`.

    frame: ``suppression.suppressed_cells`` (columns k, d_hat, ratio, outside; one row per
    suppressed cell).  x: the cell's rank when sorted by d̂/k (1 … N); y: d̂ in records (one
    threshold) or d̂/k (several).  Layers INSIDE and OUTSIDE (x, y) and THRESHOLD (the line
    y = k, or 1).  More than ``max_points`` cells are thinned evenly by rank (the title
    keeps the full counts).  Every value is finite.
    """
    unit, k = suppression_key(frame)
    if frame is None or not len(frame):
        empty = (np.zeros(0), np.zeros(0))
        layers = {INSIDE: empty, OUTSIDE: empty, THRESHOLD: (np.array([0.0, 1.0]), np.full(2, k))}
        return PlotData(layers, (0.0, 1.0), (0.0, max(1.0, 1.6 * k)), "no suppressed cells")
    y_all = frame["d_hat"].to_numpy(float) if unit == "records" else frame["ratio"].to_numpy(float)
    y_all = np.nan_to_num(y_all, nan=0.0, posinf=0.0, neginf=0.0)
    out_all = frame["outside"].to_numpy(bool)
    order = np.argsort(frame["ratio"].to_numpy(float), kind="stable")
    n = order.size
    rank = np.arange(1, n + 1, dtype=float)
    keep = np.arange(n)
    if n > max_points:
        keep = np.unique(np.linspace(0, n - 1, max_points).astype(int))
    y = y_all[order][keep]
    out = out_all[order][keep]
    x = rank[keep]
    line = k if unit == "records" else 1.0
    layers = {
        INSIDE: (x[~out], y[~out]),
        OUTSIDE: (x[out], y[out]),
        THRESHOLD: (np.array([0.0, n + 1.0]), np.full(2, line)),
    }
    hi = max(1.6 * line, 1.1 * float(y.max()) if y.size else 0.0, 1.0)
    lo = min(0.0, 1.1 * float(y.min()) if y.size else 0.0)
    what = f"k = {k:g}" if unit == "records" else "d̂/k"
    title = (
        f"d̂ on {n:,} suppressed cells ({what}) at iteration {int(iteration):,}: "
        f"{int(out_all.sum()):,} outside 0 ≤ d ≤ k"
    )
    return PlotData(layers, (0.0, n + 1.0), (lo, hi), title, {"unit": unit, "k": k})


def suppression_plot(frame: pd.DataFrame | None, iteration: int = 0, max_points: int = 20_000):
    """The model's d̂ per suppressed cell (sorted) over the shaded box 0 ≤ d ≤ k: green dots
    inside, red dots outside, the threshold as a dashed line (:func:`suppression_data`)."""
    d = suppression_data(frame, iteration, max_points)
    records = d.extra.get("unit", "records") == "records"
    line = d.layers[THRESHOLD][1][0]
    xdim = hv.Dimension("rank", label="suppressed cells, sorted by d̂")
    ydim = hv.Dimension(
        "d_hat", label="model count d̂ (records)" if records else "d̂ / k (each table's k)"
    )
    band = hv.HSpan(0.0, float(line)).opts(color=BAND_COLOR, alpha=0.15, line_alpha=0)
    layers = [
        band,
        hv.Scatter(d.layers[INSIDE], xdim, ydim, label=INSIDE).opts(
            color=BAND_COLOR, size=5, alpha=0.7
        ),
        hv.Scatter(d.layers[OUTSIDE], xdim, ydim, label=OUTSIDE).opts(
            color="#d62728", size=6, alpha=0.9
        ),
        hv.Curve(d.layers[THRESHOLD], xdim, ydim, label=THRESHOLD).opts(
            color="black", line_dash="dashed", line_width=1.5
        ),
    ]
    return hv.Overlay(layers).opts(
        hv.opts.Overlay(
            title=d.title,
            xlabel=xdim.label,
            ylabel=ydim.label,
            xlim=d.xlim,
            ylim=d.ylim,
            legend_position="top",
            legend_cols=3,
            **_OPTS,
        )
    )


def summary_markdown(check: dict | None, max_tables: int = 15) -> str:
    """Markdown: suppressed rows per table (threshold, rows absent, rows, d̂ outside the box)
    from ``suppression.suppression_check`` (None: the release suppresses nothing)."""
    if not check:
        return (
            "This release has **no suppressed cells**: every row of its tables is listed. "
            "Choose the dataset **Criteo-shaped (suppressed)** to see a release that leaves "
            "out its small pair cells."
        )
    tables = check["tables"]
    lines = [
        f"**{check['suppressed_rows']:,} of {check['rows']:,} rows suppressed** in "
        f"{len(tables)} table(s) with a threshold; the model's d̂ is outside [0, k] on "
        f"**{check['outside']:,}** of them (largest d̂/k = {check['max_ratio']:.2f}).",
        "",
        "| table | k | suppressed | rows | d̂ > k |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, v in list(tables.items())[:max_tables]:
        lines.append(
            f"| {escape_markdown(name)} | {v['threshold']:g} | {v['suppressed']:,} | {v['rows']:,} | "
            f"{v.get('outside', 0):,} |"
        )
    if len(tables) > max_tables:
        lines.append(f"| … {len(tables) - max_tables} more | | | | |")
    return "\n".join(lines)


def _column(spec) -> str:
    """The data column of a glyph property (a name, or a ``field(name)``)."""
    return spec if isinstance(spec, str) else spec.field


class SuppressionFigure:
    """The suppression plot as a Bokeh pane, drawn once per :func:`suppression_key` and then
    refreshed in place (new arrays into the renderers' data sources, ranges, title).

    Each glyph renderer is named ``RENDERER_PREFIX + layer`` so that a page (or a test) can
    find the data it shows.
    """

    def __init__(self, height: int = 380) -> None:
        import panel as pn

        self.height = height
        self.key: tuple | None = None
        self.fig = None
        self.renderers: list = []
        self.pane = pn.pane.Bokeh(sizing_mode="stretch_width", height=height, margin=(5, 5))

    def update(self, frame: pd.DataFrame | None, iteration: int) -> None:
        """Show ``frame`` (``suppression.suppressed_cells``) at ``iteration``."""
        key = suppression_key(frame)
        if key != self.key:
            self._draw(frame, iteration, key)
            return
        d = suppression_data(frame, iteration)
        for r, (name, (x, y)) in zip(self.renderers, d.layers.items(), strict=True):
            cols = (_column(r.glyph.x), _column(r.glyph.y))
            r.data_source.data = {cols[0]: np.asarray(x, float), cols[1]: np.asarray(y, float)}
            r.name = RENDERER_PREFIX + name
        self.fig.x_range.update(start=d.xlim[0], end=d.xlim[1])
        self.fig.y_range.update(start=d.ylim[0], end=d.ylim[1])
        if self.fig.title.text != d.title:
            self.fig.title.text = d.title

    def _draw(self, frame, iteration: int, key: tuple) -> None:
        from bokeh.models import GlyphRenderer

        fig = render(lambda: suppression_plot(frame, iteration))
        fig.sizing_mode = "stretch_width"
        fig.height = self.height
        fig.output_backend = "canvas"  # headless / software-GL browsers paint no WebGL glyphs
        self.renderers = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
        names = (INSIDE, OUTSIDE, THRESHOLD)
        for r, name in zip(self.renderers, names, strict=True):
            r.name = RENDERER_PREFIX + name
        self.fig, self.key = fig, key
        self.pane.object = fig
