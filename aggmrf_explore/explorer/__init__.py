"""The live explorer, in Panel's "data store" pattern.

- ``store.py``: the session store (settings as params with declared bounds, trainer, run loop);
- ``problems.py`` and ``caches.py``: data shared by every session (problems, releases,
  baselines; the LRU cache, the upload registry, the disk cache);
- ``runtime.py``: the process runtime (kernel warm-up, the training pool and its worker
  processes, memory);
- ``plots.py``: pure functions history → HoloViews; ``liveplots.py``: those figures drawn
  once and refreshed in place;
- small views that take the store (Viewers): ``controls.py``, ``data_card.py``,
  ``share_card.py`` (the sidebar), ``training_tab.py``, ``privacy_tab.py``,
  ``small_tabs.py`` (the tabs), ``messages.py``; ``binding.py`` binds a widget to a store
  setting; ``loader.py`` loads data off the event loop;
- ``app.py``: ``Explorer``, which composes the views and runs the training loop;
- ``serve.py``: the served page (``build_app``, for ``panel serve apps/explorer.py``);
- ``one_process.py``: the server is one process (``--num-procs`` other than 1 is refused);
- ``widget.py``: notebook widgets; ``ipywidget.py``: an explorer as an ipywidgets.Widget.

``panel serve apps/explorer.py`` serves it; in Jupyter, ``Explorer()`` displays inline.
Importing this package starts nothing (no training, no data loading).
"""

from .store import ExplorerSession

__all__ = ["ExplorerSession", "Explorer", "build_app", "frozen_document"]


def __getattr__(name):  # lazy: importing the store must not import Panel (nor HoloViews)
    if name == "Explorer":
        from .app import Explorer

        return Explorer
    if name in ("build_app", "frozen_document"):
        from . import serve

        return getattr(serve, name)
    raise AttributeError(name)
