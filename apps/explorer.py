"""The live explorer: ``panel serve apps/explorer.py`` (nothing trains until you press Play)."""

from aggmrf_explore.explorer import build_app

build_app().servable()
