"""Two-way binding between the store's settings and the widgets that show them.

A widget change is *proposed* to the store (``ExplorerSession.propose``), which checks it
against the setting's declared domain; a refused value leaves its message under the
control (``session.errors``), the store keeps its value and the widget shows it again.
A store change (a URL, a preset, a rollback) is shown on the widget without being proposed
back.  Every control is wrapped in a box with a stable CSS class
(``aggmrf-control-<setting>``) and its help text (``help.py``), which lesson links hide and
the browser tests find.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import panel as pn

from ..store.escape import escape_markdown
from .help import help_for, with_help

__all__ = ["Binder", "log_grid", "format_value", "STRETCH"]

STRETCH = {"sizing_mode": "stretch_width"}  # a widget or card that fills its column's width


def log_grid(lo_exp: int, hi_exp: int, mantissas=(1, 2, 5), zero: bool = False) -> list[float]:
    """The values m·10^e of a log slider, from 10^lo_exp to 10^hi_exp (0 first if ``zero``)."""
    vals = [0.0] if zero else []
    for e in range(lo_exp, hi_exp + 1):
        vals += [m * 10.0**e for m in mantissas if m * 10.0**e <= 10.0**hi_exp]
    return vals


def format_value(v: float) -> str:
    """A slider label: "0", "0.05", "200", "1e-7", "1e4"."""
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
    return f"{v:.4g}"


class Binder:
    """Binds widgets to one store's settings.

    ``guard(fn)`` runs a callback and shows its exception as a message (``messages.py``).
    After binding: ``control_boxes`` {setting: its (first) control's box},
    ``slider_of`` {box class or setting: the log slider}, ``error_panes`` {setting or
    "setting@k" for a second control: the pane under it}.
    """

    def __init__(self, session, guard: Callable):
        self.session = session
        self.guard = guard
        self.syncing = False  # a change made from the store: not proposed back
        self.error_panes: dict[str, pn.pane.Markdown] = {}
        self.control_boxes: dict[str, pn.Column] = {}
        self.slider_of: dict[str, pn.widgets.DiscreteSlider] = {}
        session.param.watch(self.show_errors, "errors")

    @contextlib.contextmanager
    def hushed(self):
        """Widget changes made within are not proposed to the session (display only)."""
        self.syncing, was = True, self.syncing
        try:
            yield
        finally:
            self.syncing = was

    def bind(self, name: str, widget, to_w=None, from_w=None, prop: str = "value", css=None):
        """Bind ``widget.<prop>`` to setting ``name`` both ways (``to_w``/``from_w``
        convert); returns the control's box (widget, help, error pane)."""
        to_w = to_w or (lambda v: v)
        from_w = from_w or (lambda v: v)

        def on_widget(event):
            if self.syncing:
                return
            self.guard(lambda: self.session.propose(name, from_w(event.new)))

        def on_session(event):
            with self.hushed():
                try:
                    setattr(widget, prop, to_w(event.new))
                except Exception:  # noqa: BLE001 - a display mismatch must never break the page
                    pass

        widget.param.watch(on_widget, prop)
        self.session.param.watch(on_session, name)
        with self.hushed():
            setattr(widget, prop, to_w(getattr(self.session, name)))
        shown = with_help(widget, help_for(name))
        err = pn.pane.Markdown("", css_classes=["aggmrf-error"], visible=False, margin=(0, 10))
        # a setting may have two controls (ε: sidebar and Privacy tab): "name@k" keys
        key = name if name not in self.error_panes else f"{name}@{len(self.error_panes)}"
        self.error_panes[key] = err
        box = pn.Column(
            shown,
            err,
            margin=0,
            **STRETCH,
            # stable hooks for the browser tests
            css_classes=[css or f"aggmrf-control-{name}"],
        )
        self.control_boxes.setdefault(name, box)
        return box

    def later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the event loop's next turn, guarded (an exception becomes the red
        message): on a served page, after the changes made now have been sent, so a click
        shows its effect before a slower redraw (a new figure, a slider's new stop)."""
        pn.state.execute(lambda: self.guard(fn), schedule=True)

    def log_slider(self, name: str, label: str, grid: list[float], css=None):
        """A discrete log slider over ``grid`` bound to ``name``; a value off the grid (a
        link, a preset, the default rule's λ at a release's noise) is added to its options,
        replacing the previous one added.

        New options rebuild the slider (new Bokeh models, about 0.3 s on the served page:
        the document's references are recomputed), so on a served page that comes at the
        next tick: the click that changed the value shows its other effects first."""
        opts = {format_value(v): v for v in grid}
        w = pn.widgets.DiscreteSlider(label=label, options=opts, **STRETCH)

        def show(v):
            with self.hushed():
                both = {**opts, format_value(v): v}
                w.options = dict(sorted(both.items(), key=lambda kv: kv[1]))
                w.value = v

        def to_w(v):
            if v in w.values:
                return v
            self.later(lambda: show(getattr(self.session, name)))
            return w.value

        self.slider_of[css or name] = w
        return self.bind(name, w, to_w=to_w, css=css)

    def show_errors(self, event=None) -> None:
        """Each control's message from ``session.errors`` (escaped), or none."""
        errs = self.session.errors
        for name, pane in self.error_panes.items():
            msg = errs.get(name.split("@")[0], "")
            pane.object = f"⚠ {escape_markdown(msg, limit=600)}" if msg else ""
            pane.visible = bool(msg)
