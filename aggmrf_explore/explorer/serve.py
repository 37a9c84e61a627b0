"""The served page: ``panel serve apps/explorer.py`` builds one per browser session.

This module imports Panel but not HoloViews: a server's first request pays every import
the page needs, and Panel's ``pn.extension`` imports HoloViews' Bokeh plotting whenever
``holoviews`` is imported already (≈ 0.2 s, with matplotlib, whose ``matplotlib.figure``
Panel's pane detection then imports for each slider, ≈ 0.25 s more).  So
:func:`build_app` calls ``pn.extension`` before it imports the view (which imports
HoloViews), and the plotting imports run in a background thread once the first page is
built, while the browser loads its scripts (:func:`runtime.import_in_background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator

import panel as pn

from . import runtime

__all__ = ["build_app", "frozen_document", "PAGE_EXTENSIONS", "PLOTTING_MODULES"]

PAGE_EXTENSIONS = ("tabulator", "filedropper")  # Panel's extras the page uses
PLOTTING_MODULES = ("holoviews.plotting.bokeh", "matplotlib.figure")  # imported afterwards


@contextlib.contextmanager
def frozen_document() -> Iterator[None]:
    """Defer the session document's model bookkeeping to the end of the block.

    Bokeh re-walks every model of a document each time one is added or gets a JS
    callback (~0.15 s for the explorer's ~400 models, a dozen times while the page is
    built); inside this block it does so once, at the end.
    """
    doc = pn.state.curdoc
    with doc.models.freeze() if doc is not None else contextlib.nullcontext():
        yield


def after_response(callback: Callable[[], None]) -> None:
    """Run ``callback`` on the server's event loop once the request under way has been
    answered (at once outside a server): a thread started earlier would slow the
    rendering of the page down, as Python runs one thread at a time."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        callback()
        return
    loop.call_soon(callback)


def build_app() -> pn.viewable.Viewable:
    """The served explorer page (one :class:`~.app.Explorer` per browser session)."""
    t0 = time.perf_counter()
    # a first start: the child compiling the parallel sampler starts now; the warm-up
    # thread (the serial sampler, or loading numba's cache, and the default data) starts
    # once this first page is shown (``Explorer._initial_load``): it would slow its building
    if runtime.first_start():
        runtime.start_parallel_compile()
    pn.extension(*PAGE_EXTENSIONS, notifications=False)  # first: before HoloViews (above)
    from .app import Explorer

    page = Explorer(load_now=True).template()
    after_response(lambda: runtime.import_in_background(PLOTTING_MODULES))
    runtime.log(f"session page built in {time.perf_counter() - t0:.2f} s")
    return page
