"""Jupyter widgets: a small training widget, and the explorer as an ipywidget.

Three ways to watch the MRF train in a notebook:

1. the **explorer inline** (Panel's Jupyter support): ``notebook_explorer(**settings)``
   returns an :class:`~aggmrf_explore.explorer.views.app.Explorer` whose data are loaded and
   whose trainer is built before it returns; leave it as the last expression of a cell
   (after ``pn.extension()``) and it displays;
2. the **explorer as an ipywidget**, to compose with other ipywidgets layouts:
   ``explorer_widget(**settings)`` returns an ``ipywidgets.Widget`` (a jupyter_bokeh
   ``BokehModel``; its Explorer is at ``.explorer``);
3. the **training widget** :class:`TrainingWidget`: a progress bar, a one-line status and a
   live convergence plot around any ``trainer.step(k)``.

Nothing here starts a thread or a periodic callback: :meth:`TrainingWidget.run` trains in
the calling cell and redraws between chunks of iterations; the explorer's Play button
starts the explorer's own periodic callback only when a user presses it.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
import math
import sys
import time
import warnings
import weakref
from collections.abc import Mapping

import numpy as np

from ...errors import AggMRFError, DivergenceError

__all__ = [
    "TrainingWidget",
    "convergence_figure",
    "load_offline",
    "notebook_explorer",
    "explorer_widget",
]


# ====================================================================== the plot
def convergence_figure(
    history,
    floor: float | None = None,
    references: Mapping[str, float] | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (9.0, 3.4),
):
    """Convergence of a PCD run as a matplotlib Figure (not registered with pyplot).

    Left: relative errors ‖d̂ − d‖₁/‖d‖₁ and ‖ĉ − c‖₁/‖c‖₁ against the iteration (log
    scale), with the Monte-Carlo floor of the d̂ error when ``floor`` is given.  Right:
    held-out NLLH against the iteration, with horizontal reference lines
    (``references``: {label: NLLH}, e.g. the logistic skyline).  ``history`` is a
    DataFrame with the columns of :class:`~aggmrf_explore.mrf.IterationStats`, a list of
    IterationStats, or None / empty (an empty plot with its axes and titles).
    """
    import pandas as pd
    from matplotlib.figure import Figure

    if history is None:
        frame = pd.DataFrame(columns=["iteration", "d_error", "c_error", "nllh_eval"])
    elif isinstance(history, pd.DataFrame):
        frame = history
    else:
        from dataclasses import asdict

        frame = pd.DataFrame([asdict(h) for h in history])
        if frame.empty:
            frame = pd.DataFrame(columns=["iteration", "d_error", "c_error", "nllh_eval"])
    missing = {"iteration", "d_error", "c_error", "nllh_eval"} - set(frame.columns)
    if missing:
        raise AggMRFError(
            f"history lacks the columns {sorted(missing)}; pass trainer.history_frame()."
        )
    fig = Figure(figsize=figsize, layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    it = frame["iteration"].to_numpy(dtype=float)
    if len(frame):
        ax1.plot(it, frame["d_error"].to_numpy(dtype=float), label="counts: ‖d̂ − d‖₁ / ‖d‖₁")
        ax1.plot(it, frame["c_error"].to_numpy(dtype=float), label="label sums: ‖ĉ − c‖₁ / ‖c‖₁")
    if floor is not None and np.isfinite(floor) and floor > 0:
        ax1.axhline(floor, color="0.4", ls=":", lw=1.2, label="Monte-Carlo floor of d̂ (n′ samples)")
    ax1.set_yscale("log")
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("relative L1 error (log scale)")
    ax1.set_title("Sufficient statistics: model vs data")
    ax1.grid(True, which="both", alpha=0.3)
    if ax1.get_legend_handles_labels()[0]:
        ax1.legend(fontsize=8, loc="upper right")
    nl = pd.to_numeric(frame["nllh_eval"], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(nl)
    if ok.any():
        ax2.plot(it[ok], nl[ok], marker="." if ok.sum() < 30 else None, label="MRF (held-out)")
    for i, (name, value) in enumerate((references or {}).items()):
        if value is not None and np.isfinite(value):
            ax2.axhline(value, ls="--", lw=1.1, color=f"C{i + 2}", label=f"{name}: {value:.3f}")
    ax2.set_xlabel("iteration")
    ax2.set_ylabel("held-out NLLH (higher is better)")
    ax2.set_title("Prediction quality")
    ax2.grid(True, alpha=0.3)
    if ax2.get_legend_handles_labels()[0]:
        ax2.legend(fontsize=8, loc="lower right")
    if len(frame):
        ax1.set_xlim(0, max(1.0, float(it.max())))
        ax2.set_xlim(0, max(1.0, float(it.max())))
    if title:
        fig.suptitle(title)
    return fig


def _png(fig, dpi: int = 90) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


# ====================================================================== training widget
class TrainingWidget:
    """A progress bar, a status line and a live convergence plot around ``trainer.step(k)``.

    Parameters
    ----------
    trainer : a :class:`~aggmrf_explore.mrf.PCDTrainer` (anything with ``step(k)``,
        ``iteration`` and ``history``).
    plot_every : redraw the status and the plot every this many iterations (≥ 1).
    references : {label: held-out NLLH} drawn as horizontal lines (e.g. baselines).
    floor : Monte-Carlo floor of the d̂ error; default ``mrf.expected_floor`` of the
        trainer's data and n′.
    title : optional title above the plot.
    frame_seconds : each redraw stays on screen at least this long (seconds; 0 = as fast
        as training goes).  A small problem trains 100 iterations in well under a second,
        which a student would see as a blink; 0.15 s per frame lets the curves grow.

    Display the widget (last expression of a cell, or ``display(w)``), then call
    :meth:`run`: it trains in the calling cell, in chunks of ``plot_every`` iterations,
    and redraws between chunks.  No thread, no periodic callback.  :meth:`figure` returns
    the same plot as a static matplotlib Figure (for exported notebooks).
    """

    def __init__(
        self,
        trainer,
        plot_every: int = 10,
        references: Mapping[str, float] | None = None,
        floor: float | None = None,
        title: str | None = None,
        frame_seconds: float = 0.15,
    ) -> None:
        import ipywidgets as W

        for attr in ("step", "iteration", "history"):
            if not hasattr(trainer, attr):
                raise AggMRFError(
                    f"TrainingWidget needs a trainer with step(k), iteration and history "
                    f"(a mrf.PCDTrainer); got {type(trainer).__name__}, which has no {attr!r}."
                )
        if isinstance(plot_every, bool) or not isinstance(plot_every, int | np.integer):
            raise AggMRFError(f"plot_every must be an integer ≥ 1; got {plot_every!r}.")
        if plot_every < 1:
            raise AggMRFError(f"plot_every must be an integer ≥ 1; got {plot_every}.")
        if not (isinstance(frame_seconds, int | float) and 0 <= frame_seconds <= 5):
            raise AggMRFError(f"frame_seconds must be a number in [0, 5]; got {frame_seconds!r}.")
        self.trainer = trainer
        self.plot_every = int(plot_every)
        self.frame_seconds = float(frame_seconds)
        self.references = dict(references or {})
        if floor is None and hasattr(trainer, "data") and hasattr(trainer, "settings"):
            from ...mrf import expected_floor

            floor = expected_floor(trainer.data, trainer.settings.n_gibbs)
        self.floor = floor
        self.title = title
        self.status = "ready"
        self.frames = 0  # redraws during the last run()
        self.progress = W.IntProgress(
            value=0,
            min=0,
            max=1,
            description="training",
            bar_style="info",
            layout=W.Layout(width="60%"),
        )
        self.label = W.HTML(value=self._status_html())
        self.image = W.Image(format="png", value=self._render(), layout=W.Layout(width="820px"))
        self.widget = W.VBox([W.HBox([self.progress, self.label]), self.image])

    # ---------------------------------------------------------------- display
    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _status_html(self, rate: float | None = None) -> str:
        tr = self.trainer
        parts = [f"iteration <b>{tr.iteration}</b>"]
        if tr.history:
            last = tr.history[-1]
            parts.append(f"d̂ error {last.d_error:.4f}")
        nl = getattr(tr, "last_nllh", None)
        if nl is not None and math.isfinite(nl):
            parts.append(f"held-out NLLH {nl:.4f}")
        if rate:
            parts.append(f"{rate:.0f} it/s")
        if self.status not in ("ready", "done", "training"):
            parts.append(f"<span style='color:#b00020'>{html.escape(self.status)}</span>")
        return " · ".join(parts)

    def _render(self) -> bytes:
        return _png(self.figure())

    def figure(self):
        """The convergence plot of everything trained so far (matplotlib Figure)."""
        return convergence_figure(
            list(self.trainer.history), self.floor, self.references, self.title
        )

    def refresh(self, rate: float | None = None) -> None:
        """Redraw the status line and the plot now."""
        self.label.value = self._status_html(rate)
        self.image.value = self._render()

    # ---------------------------------------------------------------- training
    def run(self, k: int, raise_on_divergence: bool = False) -> list:
        """Train k more iterations, redrawing every ``plot_every``; returns their statistics.

        If training diverges, the widget shows the message and stops (the statistics of the
        iterations done are returned); ``raise_on_divergence=True`` re-raises instead.
        """
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise AggMRFError(f"run(k) needs an integer k ≥ 1; got {k!r}.")
        k = int(k)
        self.progress.max = k
        self.progress.value = 0
        self.frames = 0
        self.progress.bar_style = "info"
        self.status = "training"
        out: list = []
        trained = 0.0  # seconds spent training, for an honest it/s while frames are paced
        try:
            while len(out) < k:
                t_frame = time.perf_counter()
                out.extend(self.trainer.step(min(self.plot_every, k - len(out))))
                trained += time.perf_counter() - t_frame
                self.progress.value = len(out)
                self.refresh(len(out) / trained if trained > 0 else None)
                self.frames += 1
                rest = self.frame_seconds - (time.perf_counter() - t_frame)
                if rest > 0 and len(out) < k:
                    time.sleep(rest)
        except DivergenceError as exc:
            self.status = f"diverged: {exc}"
            self.progress.bar_style = "danger"
            self.refresh()
            if raise_on_divergence:
                raise
            return out
        self.status = "done"
        self.progress.bar_style = "success"
        return out


# ====================================================================== the explorer
def load_offline() -> None:
    """Load BokehJS, Panel and HoloViews' Bokeh renderer into this notebook INLINE.

    Classrooms and exam rooms are often offline: Panel's default notebook loader fetches
    BokehJS and panel.min.js from a CDN, and the explorer then shows a red JavaScript error
    box.  This publishes the libraries inside the cell's output instead (≈ 4 MB per call,
    i.e. per cell that builds an explorer).  It publishes them on every call, not once per
    kernel: a reloaded browser tab, or the same notebook opened in Notebook 7 after
    JupyterLab, runs its cells on a kernel that has loaded them before, into a page that has
    not (a once-per-kernel guard left that page with "Bokeh or Panel library is missing").

    Whatever ``pn.extension(...)`` call came before, the libraries are published in full:
    Panel and HoloViews publish them only at the first extension call of a cell and send a
    short "already loaded" stub at later ones, so a ``pn.extension("tabulator")`` earlier in
    the same cell (which published the CDN loader, useless offline) used to leave the cell
    with no BokehJS at all.  Such a call still sends the browser to the CDN for its own
    loader; :func:`load_offline` warns about it once (leave the call out, or pass
    ``inline=True``).  :func:`notebook_explorer` and :func:`explorer_widget` call this; call
    it yourself before displaying any other Panel or HoloViews object in the same notebook.
    """
    import holoviews as hv
    import panel as pn
    import pyviz_comms
    from panel.config import panel_extension

    if panel_extension._loaded and not pn.config.inline:
        _warn_about_cdn()
    pn.config.inline = True
    # forget any extension call made earlier in the caller's cell, so that the next call
    # publishes the libraries in full rather than an "already loaded" stub
    pyviz_comms.extension._last_execution_count = None
    hv.extension("bokeh", logo=False, inline=True)
    pn.extension("tabulator", "filedropper", inline=True)
    _local_stylesheets()


@functools.cache
def _warn_about_cdn() -> None:
    """load_offline's warning about a CDN ``pn.extension()`` call, once per kernel."""
    warnings.warn(
        "pn.extension() was called without inline=True: the browser fetched Panel's "
        "libraries from a CDN, which fails offline. The explorer loads them inline "
        "itself — leave pn.extension() out, or call pn.extension(inline=True).",
        stacklevel=4,
    )


class _LocalSheets(dict):
    """One document's stylesheet cache ({URL: ImportedStyleSheet}) that answers every
    Panel CDN stylesheet with the same CSS from Panel's own package, as a ``data:`` URL."""

    def __bool__(self) -> bool:  # Panel's theme code reads an empty cache as "no cache"
        return True

    def _local(self, url) -> str | None:
        from panel.io.resources import CDN_DIST, DIST_DIR, LOCAL_DIST

        url = str(url).split("?")[0]
        for prefix in (CDN_DIST, LOCAL_DIST):
            if prefix in url and url.endswith(".css"):
                path = DIST_DIR / url.split(prefix, 1)[1]
                return _css_data_url(str(path)) if path.is_file() else None
        return None

    def __contains__(self, url) -> bool:
        return super().__contains__(url) or self._local(url) is not None

    def __getitem__(self, url):
        if not super().__contains__(url):
            data = self._local(url)
            if data is None:
                raise KeyError(url)
            from bokeh.models import ImportedStyleSheet

            super().__setitem__(url, ImportedStyleSheet(url=data))
        return super().__getitem__(url)

    def get(self, url, default=None):
        return self[url] if url in self else default


class _LocalSheetCaches(weakref.WeakKeyDictionary):
    """Panel's per-document stylesheet caches, each a :class:`_LocalSheets`."""

    def __contains__(self, doc) -> bool:
        return True

    def __getitem__(self, doc):
        try:
            return super().__getitem__(doc)
        except KeyError:
            cache = _LocalSheets()
            super().__setitem__(doc, cache)
            return cache

    def get(self, doc, default=None):
        return default if doc is None else self[doc]

    def __setitem__(self, doc, cache) -> None:
        local = cache if isinstance(cache, _LocalSheets) else _LocalSheets(cache)
        super().__setitem__(doc, local)


@functools.lru_cache(maxsize=64)
def _css_data_url(path: str) -> str:
    import base64

    with open(path, "rb") as f:
        return "data:text/css;base64," + base64.b64encode(f.read()).decode("ascii")


def _local_stylesheets() -> None:
    """Serve Panel's late stylesheets from the kernel, not from its CDN.

    With ``pn.config.inline`` Panel 1.9 inlines every stylesheet when a cell first
    renders, but a component that updates later (a Markdown pane's new text, a theme
    hook) sends its stylesheets again as ``ImportedStyleSheet(url=CDN_DIST + …)``:
    ``css/loading.css``, ``css/markdown.css``, ``bundled/theme/default.css`` and
    ``native.css``, which an offline browser cannot fetch (holoviz/panel#5167, #8750).
    Those URLs are looked up in ``pn.state``'s per-document stylesheet cache first; this
    cache answers each with the same file from Panel's installed ``dist/`` as a ``data:``
    URL, so nothing leaves the machine.  Idempotent.
    """
    import panel as pn

    current = pn.state._stylesheets
    if isinstance(current, _LocalSheetCaches):
        return
    caches = _LocalSheetCaches()
    for doc, cache in list(current.items()):
        caches[doc] = cache
    pn.state._stylesheets = caches


def notebook_explorer(**settings):
    """An :class:`~aggmrf_explore.explorer.views.app.Explorer` ready in a notebook.

    ``settings`` are explorer settings (``dataset="xor"``, ``n_samples=20000``,
    ``n_gibbs=2000``, ``mechanism="gaussian"``, ``epsilon=1.0`` …; see
    ``explorer.store.ExplorerSession``).  Unlike ``Explorer()``, whose data load asynchronously after
    the page (or cell) renders, here the data are prepared and the trainer is built
    before this returns, in the calling thread: no worker thread is started, and the
    explorer can be stepped at once (``ex.session.step(k)`` or its Step button).
    Display it as the last expression of a cell; no ``pn.extension()`` is needed (the
    libraries are loaded inline by :func:`load_offline`, whatever extension call came
    before).
    """
    from ..server import runtime
    from ..store.problems import CHEAP_BASELINES, SLOW_BASELINES, get_baselines
    from ..store.store import ExplorerSession, baseline_names
    from ..views import app

    load_offline()  # BokehJS + Panel inline: the explorer renders without internet
    # its "sampler loaded: training is ready" line is news, not an error: stdout, so a
    # notebook does not show it in the red stderr box
    with contextlib.redirect_stderr(sys.stdout):
        runtime.warm_up_once()
    session = ExplorerSession(lazy=False, **settings)  # loads data and builds the trainer now
    # the baselines too (the served app fits the slow ones in a worker thread and pushes them
    # later; a notebook has no server loop to push them, so the skyline would never appear)
    bundle = session.bundle
    for names in (baseline_names(bundle, CHEAP_BASELINES), SLOW_BASELINES):
        if not all(k in session.baselines for k in names):
            session.add_baselines(get_baselines(bundle, tuple(names)))
    # an Explorer given a loaded session draws it at once; later data changes made in the
    # widget reload as usual
    ex = app.Explorer(session=session, sync_url=False)
    # every tab rendered once, then only shown or hidden.  A dynamic Tabs re-sends a tab's
    # figures each time it is shown again; BokehJS then sends their scalar line colours
    # back as {"type": "value", ...}, which Bokeh's Python side refuses ("failed to
    # validate Line.line_color … got Value(value='#1f77b4')"), losing that whole message.
    ex.tabs.dynamic = False
    return ex


def explorer_widget(**settings):
    """The explorer as an ``ipywidgets.Widget`` (a jupyter_bokeh BokehModel).

    Same settings and synchronous loading as :func:`notebook_explorer`; the Explorer
    behind the widget is attached as ``widget.explorer`` (step it with
    ``widget.explorer.session.step(k)``).
    """
    ex = notebook_explorer(**settings)
    w = ex.to_ipywidget()
    w.explorer = ex
    return w
