"""An explorer as an ipywidgets.Widget, its render bundle kept current (jupyter_bokeh)."""

from __future__ import annotations

__all__ = ["explorer_widget"]


def explorer_widget(explorer):
    """``explorer`` (an :class:`~.app.Explorer`) as an ipywidgets.Widget (needs jupyter_bokeh).

    jupyter_bokeh sends later changes as patches to the views already drawn, and a view
    draws itself from the widget's ``render_bundle``, a snapshot taken when the widget
    was made.  A view that finishes drawing after a step from code (the README's
    ``display(w); w.explorer.session.step(5)``; a second ``display(w)``; a reloaded
    page) would show the state of the snapshot.  A change of the bundle makes every
    view redraw from scratch, and a view still drawing then fails inside BokehJS
    ("configuration is missing"), so the bundle is re-taken only when a view reports
    that it has finished drawing (Bokeh's ``DocumentReady``) and the session has moved
    on since the snapshot: that view redraws once, with the current state.
    """
    from bokeh.document import Document
    from bokeh.events import DocumentReady
    from jupyter_bokeh.widgets import BokehModel

    # what pn.ipywidget does, keeping the root model in hand
    root = explorer.__panel__().get_root(doc=Document())
    w = BokehModel(root, combine_events=True)
    s = explorer.session
    taken = [(s.iteration, s.version)]  # the state the bundle shows

    def on_ready(event) -> None:
        now = (s.iteration, s.version)
        if now != taken[0]:
            taken[0] = now
            w.update_from_model(root)

    root.document.on_event(DocumentReady, on_ready)
    return w
