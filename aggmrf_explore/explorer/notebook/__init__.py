"""The explorer in Jupyter: ``widget.py`` (the explorer inline, a small training widget,
the convergence figure, offline resources) and ``ipywidget.py`` (an explorer as an
``ipywidgets.Widget``).  Their public names are importable from ``aggmrf_explore.explorer``.
"""
