"""Live figures: each drawn once by a pure HoloViews function, then refreshed in place.

A figure of :mod:`plots` is rendered to Bokeh once per layer structure and process
(~0.4 s); later figures of the same structure are copies of its serialized form under
new model ids (~0.08 s), kept in memory and on disk (the figure cache); the first
screens' structures ship with the package (``data/figures.json.gz``), so a first start
draws nothing with HoloViews when the versions match.  A refresh only
pushes new arrays into the figure's ColumnDataSources and moves its ranges, which costs
milliseconds, where replacing a HoloViews object re-indexes the whole Bokeh document
(~0.3 s).

In a notebook (Panel's comm, the README's method 1) Panel keeps the cell's document on
hold and sends only what its own components push; Bokeh models changed directly, as a
refresh does, stay queued, and the next message from the browser releases the queue
without sending it.  So every refresh ends with :func:`panel.io.push_notebook` on its
pane (a no-op on a server and in an ipywidget, where Bokeh sends each change itself).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import holoviews as hv
import numpy as np
import panel as pn
from bokeh.util.serialization import make_id

from ..store.caches import cache_dir, read_json, write_json
from . import plots, privacy_plots

__all__ = [
    "LivePlot",
    "XorPlot",
    "clear_figure_cache",
    "figure_cache_files",
    "render",
    "shipped_figures",
    "static_figure",
    "SHIPPED_FIGURES",
]

# a memo (like functools.cache): (plot, layer key, height) → serialized Bokeh figure, each
# entry written once and shared read-only
_FIGURES: dict = {}


def _fresh_ids(rep, ids: dict):
    """A copy of a serialized Bokeh model graph with every model id replaced by a new one."""
    if isinstance(rep, dict):
        return {
            k: ids.setdefault(v, make_id()) if k == "id" else _fresh_ids(v, ids)
            for k, v in rep.items()
        }
    if isinstance(rep, list):
        return [_fresh_ids(v, ids) for v in rep]
    return rep


def _figure(name: str, key, height: int, render):
    """A new Bokeh figure for plot ``name`` with layer structure ``key``.

    HoloViews draws a structure once per process (``render()``, ~0.4 s); later figures
    of the same structure are copies of its serialized form under new model ids (~0.08 s),
    whose data, ranges and title the caller then sets in place.  Returns (figure, copied).
    """
    from bokeh.core.serialization import Deserializer, Serialized, Serializer

    cache_key = (name, key, height)
    content = _FIGURES.get(cache_key)
    path = _figure_path(cache_key)
    if content is None:
        content = read_json(path)
        if content is None:  # a first start: the structures shipped for these versions
            content = shipped_figures().get(path.stem)
        if content is not None:
            _FIGURES[cache_key] = content
    if content is None:
        fig = render()
        fig.sizing_mode = "stretch_width"
        fig.height = height
        # HoloViews asks for WebGL; headless / software-GL browsers then paint no glyphs
        fig.output_backend = "canvas"
        rep = Serializer(deferred=False).serialize(fig)
        if not rep.buffers:
            _FIGURES[cache_key] = rep.content
            write_json(path, rep.content)
        return fig, False
    return Deserializer().deserialize(Serialized(_fresh_ids(content, {}), [])), True


SHIPPED_FIGURES = Path(__file__).resolve().parents[2] / "data" / "figures.json.gz"


@functools.cache
def shipped_figures() -> dict:
    """{cache file stem: serialized figure} shipped with the package for the first screens
    (``notebooks/tools/ship_figures.py``).  Their names hold the digest of
    :func:`_figure_path` (the package, Bokeh and HoloViews versions and the plot modules):
    with other versions or other plot code none matches and the figures are drawn as usual."""
    try:
        with gzip.open(SHIPPED_FIGURES, "rt", encoding="utf-8") as f:
            content = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(content, dict):
        return {}
    return {k: v for k, v in content.items() if k != SOURCES_KEY}


def figure_cache_files() -> list[Path]:
    """The figure structures in the disk cache (what ``ship_figures.py`` collects)."""
    return sorted((cache_dir() / "figures").glob("*.json"))


def _figure_path(cache_key: tuple) -> Path:
    """Where a figure structure is cached on disk: keyed by the versions and the plot
    modules themselves (``plots.py``, ``privacy_plots.py``)."""
    digest = hashlib.sha256(repr((_plots_digest(), cache_key)).encode()).hexdigest()[:24]
    return cache_dir() / "figures" / f"{digest}.json"


#: the key under which ``ship_figures.py`` records :func:`plot_sources_digest` in the file
SOURCES_KEY = "plot_sources"


@functools.cache
def _plot_sources() -> bytes:
    """The plot modules' source (read once per process)."""
    return b"".join(Path(m.__file__).read_bytes() for m in (plots, privacy_plots))


def plot_sources_digest() -> str:
    """The plot modules' source alone, hashed: what the shipped file was drawn from (a
    test compares it with today's, so that a change to the plots without a new file fails)."""
    return hashlib.sha256(_plot_sources()).hexdigest()[:16]


@functools.cache
def _plots_digest() -> str:
    """The versions and the plot modules' source, hashed (once per process)."""
    import bokeh

    from ... import __version__

    versions = repr((__version__, bokeh.__version__, hv.__version__)).encode()
    return hashlib.sha256(versions + _plot_sources()).hexdigest()[:16]


@functools.cache
def _bokeh_current() -> None:
    """Make HoloViews' Bokeh backend current (once per process; a second call from
    another thread meanwhile does the same again, harmlessly)."""
    hv.Store.set_current_backend("bokeh")


def _column(spec) -> str:
    """The data column of a glyph property (a name, or a ``field(name)`` in a copied figure)."""
    return spec if isinstance(spec, str) else spec.field


class LivePlot:
    """A Bokeh figure drawn once by a pure HoloViews function, refreshed in place.

    ``build(**kw)`` returns the HoloViews element (plots.py), ``data(**kw)`` the matching
    :class:`plots.PlotData`; the glyph renderers of the rendered figure are in layer
    order, so a refresh assigns each layer's arrays to its renderer's ColumnDataSource
    and sets the ranges and title.  ``key`` names the layer structure: when it changes
    (rare: new kind of tables, logistic ready, binned instead of scatter) the figure is
    drawn again.
    """

    def __init__(self, build, data, height: int = 320) -> None:
        self.build = build
        self.data = data
        self.height = height
        self.key = object()  # nothing drawn yet: the first update draws (lazily, with data)
        self.fig = None
        self.pane = pn.pane.Bokeh(sizing_mode="stretch_width", height=height, margin=(5, 5))

    def _draw(self, kwargs: dict, key) -> None:
        from bokeh.models import GlyphRenderer

        fig, copied = _figure(
            self.build.__name__,
            key,
            self.height,
            lambda: render(lambda: self.build(**kwargs)),
        )
        self.fig = fig
        self.renderers = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
        self.key = key
        if copied:
            self.update(kwargs, key)  # a copy holds the data it was drawn with: set ours
        self.pane.object = fig

    def update(self, kwargs: dict, key=None) -> None:
        if key != self.key:
            self._draw(kwargs, key)
            return
        d = self.data(**kwargs)
        layers = iter(d.layers.items())
        labels: dict = {}  # renderer → its layer's name (legend labels follow the data)
        for r in self.renderers:
            glyph = r.glyph
            if type(glyph).__name__ == "Image":
                img = d.extra.get("image")
                if img is not None:
                    r.data_source.data = {**r.data_source.data, "image": [img]}
                continue
            name, layer = next(layers)
            labels[r.id] = name
            r.data_source.data = _columns(glyph, layer)
        self.fig.x_range.update(start=d.xlim[0], end=d.xlim[1])
        self.fig.y_range.update(start=d.ylim[0], end=d.ylim[1])
        if self.fig.title.text != d.title:
            self.fig.title.text = d.title
        _set_ticks(self.fig, d.extra)
        _set_legend(self.fig, labels)
        pn.io.push_notebook(self.pane)


def _columns(glyph, layer) -> dict:
    """A layer's arrays under the column names the glyph reads (x, y and, for text, text)."""
    if isinstance(layer, dict):
        cols = {_column(glyph.x): layer["x"], _column(glyph.y): layer["y"]}
        if "text" in layer and hasattr(glyph, "text"):
            cols[_column(glyph.text)] = layer["text"]
        return cols
    x, y = layer
    return {_column(glyph.x): x, _column(glyph.y): y}


def _set_ticks(fig, extra: dict) -> None:
    """Labelled and minor ticks of a log axis (``extra["yticks"]`` / ``["yminor"]``, and
    the same for x)."""
    from bokeh.models import FixedTicker

    for axis in ("x", "y"):
        ticks = extra.get(f"{axis}ticks")
        if not ticks:
            continue
        minor = list(extra.get(f"{axis}minor", []))
        ax = (fig.xaxis if axis == "x" else fig.yaxis)[0]
        ticker = ax.ticker
        if isinstance(ticker, FixedTicker):
            if list(ticker.ticks) != list(ticks):
                ticker.ticks = list(ticks)
            if list(ticker.minor_ticks) != minor:
                ticker.minor_ticks = minor
        else:
            ax.ticker = FixedTicker(ticks=list(ticks), minor_ticks=minor)


def _set_legend(fig, labels: dict) -> None:
    """Legend entries named after their layers (a pinned run's label is data, not structure)."""
    for legend in fig.legend:
        for item in legend.items:
            names = {labels.get(r.id) for r in item.renderers} - {None}
            if len(names) != 1:
                continue
            name = names.pop()
            label = item.label
            current = (
                label.get("value") if isinstance(label, dict) else getattr(label, "value", label)
            )
            if current != name:
                item.label = {"value": name}


class XorPlot(LivePlot):
    """The XOR bars: new heights go into the bars' data source, matched by (state, model)."""

    def __init__(self, height: int = 400) -> None:
        super().__init__(plots.xor_plot, None, height=height)

    def update(self, kwargs: dict, key=None) -> None:
        if key != self.key:
            self._draw(kwargs, key)
            return
        values = plots.xor_values(kwargs["frame"])
        lookup = {(a, b): p for a, b, p in values[["state", "model", "p"]].itertuples(index=False)}
        r = self.renderers[0]
        src = r.data_source
        field = _column(r.glyph.top)
        src.data = {
            **src.data,
            field: np.asarray([lookup.get(tuple(k), 0.0) for k in src.data["xoffsets"]], float),
        }
        title = plots.xor_title(kwargs["frame"])
        if self.fig.title.text != title:
            self.fig.title.text = title
        pn.io.push_notebook(self.pane)


def clear_figure_cache() -> None:
    """Forget the figure structures held in memory (the disk copies stay; tests)."""
    _FIGURES.clear()


def render(build: Callable[[], object]):
    """The Bokeh figure of the HoloViews object that ``build()`` returns.

    HoloViews builds an element's options (``hv.opts``) for its current backend, so the
    Bokeh backend is made current first (once per process, with its switch hooks, as
    ``hv.extension("bokeh")`` does; without them some options are built for no backend and
    the page's layout breaks).  A server's first page does not import HoloViews' plotting
    (≈ 0.45 s with the matplotlib it pulls in): ``runtime.import_in_background`` does once
    that page is sent, and the import here waits for it if it is under way.
    """
    import holoviews.plotting.bokeh  # noqa: F401 - registers the backend

    _bokeh_current()
    return hv.render(build(), backend="bokeh")


def static_figure(build: Callable[[], object], height: int):
    """A Bokeh figure of the HoloViews object ``build()`` returns, drawn afresh (figures
    shown once per release)."""
    fig = render(build)
    fig.sizing_mode = "stretch_width"
    fig.height = height
    fig.output_backend = "canvas"  # as in _figure: headless browsers paint no WebGL glyphs
    return fig
