"""The live explorer, in Panel's "data store" pattern; its subpackages are its roles:

- ``store/``: the model side, free of Panel: one session's store (``ExplorerSession``,
  the only writer of its state) and what it derives (defaults, release, run control,
  frames), the data every session shares (problems, caches) and links (url, lesson);
- ``views/``: the page: ``Explorer`` (``views/app.py``) composing small views of one
  store, and the pure plot functions they draw;
- ``server/``: the served page, what the process shares between sessions (the runtime,
  the training pool and who trains next), loading a store's data off the event loop,
  the environment it reads;
- ``notebook/``: the explorer and small training widgets in Jupyter.

The store imports none of the others; the server loads and trains stores; the views show
a store and propose changes to it.  ``panel serve apps/explorer.py`` serves it; in
Jupyter, ``Explorer()`` displays inline.  Importing this package starts nothing (no
training, no data loading) and does not import Panel.
"""

from .store.store import ExplorerSession

__all__ = [
    "ExplorerSession",
    "Explorer",
    "build_app",
    "frozen_document",
    "notebook_explorer",
    "explorer_widget",
    "TrainingWidget",
    "convergence_figure",
    "load_offline",
]

NOTEBOOK_NAMES = (
    "notebook_explorer",
    "explorer_widget",
    "TrainingWidget",
    "convergence_figure",
    "load_offline",
)


def __getattr__(name):  # lazy: importing the store must not import Panel (nor HoloViews)
    if name == "Explorer":
        from .views.app import Explorer

        return Explorer
    if name in ("build_app", "frozen_document"):
        from .server import serve

        return getattr(serve, name)
    if name in NOTEBOOK_NAMES:
        from .notebook import widget

        return getattr(widget, name)
    raise AttributeError(name)
