"""The live explorer: session state (state.py), pure plot functions (plots.py), Panel app (app.py).

``panel serve apps/explorer.py`` serves it; in Jupyter, ``Explorer()`` displays inline.
Importing this package starts nothing (no training, no data loading).
"""

from .state import ExplorerSession

__all__ = ["ExplorerSession", "Explorer", "build_app", "frozen_document"]


def __getattr__(name):  # lazy: importing the state must not import Panel
    if name in ("Explorer", "build_app", "frozen_document"):
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
