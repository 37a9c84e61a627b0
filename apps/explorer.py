"""The live explorer: ``panel serve apps/explorer.py`` (nothing trains until you press Play)."""

from aggmrf_explore.explorer.serve import build_app, frozen_document

with frozen_document():  # the page's ~400 Bokeh models are indexed once, not a dozen times
    build_app().servable()
