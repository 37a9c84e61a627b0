"""What the page says: the status line and spinner, the notices, the divergence warning
and its "Continue" button, the lesson banner, and the red message box (a Viewer of the
store).

:meth:`Messages.guard` runs a callback and turns any exception into the red message,
never a traceback; every text that may hold a user's string is shown escaped.
"""

from __future__ import annotations

import time

import panel as pn

from ...errors import error_message
from ..server import runtime
from ..store.escape import escape_markdown

__all__ = ["Messages", "COMPACT_ALERT", "DARK_INFO", "READABLE", "training_waits_for"]

COMPACT_ALERT = ":host { padding: 4px 12px !important; margin-bottom: 4px; } p { margin: 0; }"
DARK_INFO = "p, div { color: #055160; }"  # an info alert's text at 8:1 contrast, not 4.3:1
READABLE = ":host, p { font-size: 16px; } p { margin: 2px 0; }"  # read on a projector


def training_waits_for(session) -> str:
    """What training still waits for, in words ("" once the session can train): the data
    (a load under way), the sampler (compiling on a first start), the compiled sampler
    (data too large for the numpy one), MRF-N's noise posterior (compiling)."""
    if session.busy or session.trainer is None:
        return "the data are ready"
    if not runtime.kernels_ready():
        return "the sampler is ready"
    if not session.run.can_train():
        return "the compiled sampler is ready (this data is too large for the numpy one)"
    if session.noise_aware and not runtime.extras_ready():
        return "MRF-N's sampler is compiled (first start only)"
    return ""


def wait_text(session, waiting: str, busy_since: float | None) -> str:
    """How long a pressed Play or Step has waited and, for a compiler, roughly how long it
    takes (``waiting``: the compiler's progress line; ``busy_since``: when the load began)."""
    if session.busy or session.trainer is None:
        so_far = f" ({time.monotonic() - busy_since:.0f} s so far)" if busy_since else ""
        return f"preparing data{so_far}…"
    if waiting:
        return f"{waiting} (about {runtime.COMPILE_ESTIMATE} on a first start)"
    return runtime.warm_up_message() or "compiling…"


class Messages(pn.viewable.Viewer):
    """The page's messages for one store ``session``.

    ``filled`` is False while the served page shows its first, light version (the status
    line then says the page is loading).
    """

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.filled = True
        self._busy_since: float | None = None  # when the load under way began
        sw = dict(sizing_mode="stretch_width")
        compact = dict(stylesheets=[COMPACT_ALERT], margin=(0, 10))
        waiting = runtime.warm_up_message()  # first start: "compiling the sampler…"
        self.status = pn.pane.Markdown(
            waiting or "loading…",
            css_classes=["aggmrf-status"],
            stylesheets=[READABLE],
            margin=(5, 10),
            **sw,
        )
        loading = session.bundle is None or session.busy
        self.spinner = pn.indicators.LoadingSpinner(
            value=loading,
            visible=loading,
            size=28,
            label=(waiting or "preparing data…") if loading else "",
            margin=(5, 10),
            css_classes=["aggmrf-spinner"],
        )
        self.notice = pn.pane.Alert(
            "",
            alert_type="info",
            visible=False,
            css_classes=["aggmrf-notice"],
            stylesheets=[COMPACT_ALERT, DARK_INFO],
            margin=(0, 10),
            **sw,
        )
        self.warning = pn.pane.Alert(
            "", alert_type="warning", visible=False, css_classes=["aggmrf-warning"], **compact, **sw
        )
        # after a divergence: continue from the last good state (the trainer rejected the
        # diverging step) with smaller steps, instead of Reset to iteration 0
        self.continue_button = pn.widgets.Button(
            label="Continue from last good state",
            color="warning",
            width=280,
            visible=False,
            css_classes=["aggmrf-continue"],
            margin=(0, 10, 8, 10),
        )
        self.continue_button.on_click(lambda e: self.guard(session.resume))
        self.lesson_banner = pn.pane.Alert(
            "",
            alert_type="primary",
            visible=False,
            css_classes=["aggmrf-lesson"],
            stylesheets=[COMPACT_ALERT, READABLE],
            margin=(0, 10),
            **sw,
        )
        self.message = pn.pane.Alert("", alert_type="danger", visible=False, **sw)
        self.status_bar = pn.Row(self.spinner, self.status, **sw)
        session.param.watch(self._on_warning, "warning")
        session.param.watch(self._on_notice, "notice")

    def panes(self) -> list:
        """The messages from top to bottom (the page puts them above its tabs)."""
        return [
            self.lesson_banner,
            self.status_bar,
            self.notice,
            self.warning,
            self.continue_button,
            self.message,
        ]

    def __panel__(self):
        return pn.Column(*self.panes(), sizing_mode="stretch_width")

    def guard(self, fn):
        """Run a callback; any exception becomes a visible message, never a traceback."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            self.show_message(error_message(exc))
            return None

    def show_message(self, text: str) -> None:
        """The red message box ("" hides it); ``text`` may hold user-supplied strings."""
        self.message.object = escape_markdown(text, limit=800)
        self.message.visible = bool(text)
        # a red error and a blue "preparing…" notice never show together
        self.notice.visible = bool(self.notice.object) and not text

    def show_lesson(self, text: str) -> None:
        """The lesson banner at the top (markdown, escaped by the caller)."""
        self.lesson_banner.object = text
        self.lesson_banner.visible = bool(text)

    def _on_notice(self, event) -> None:
        self.notice.object = event.new
        self.notice.visible = bool(event.new) and not self.message.visible

    def _on_warning(self, event) -> None:
        """Divergence: a yellow warning with its likely cause (not a routine notice)."""
        self.warning.object = f"⚠ **Training diverged.** {escape_markdown(event.new, limit=600)}"
        self.warning.visible = bool(event.new)
        self.continue_button.visible = bool(event.new)

    def show_status(self) -> None:
        """The status line and the spinner; while the sampler compiles (a first start)
        they say so, and that everything but training works meanwhile."""
        s = self.session
        s.update_status()
        waiting = runtime.warm_up_message()
        loading = s.busy or bool(waiting)
        self.spinner.value = loading
        self.spinner.visible = loading
        label = (waiting or "preparing data…") if loading else ""
        if not s.busy:
            self._busy_since = None
        elif self._busy_since is None:
            self._busy_since = time.monotonic()
        pressed = "Play" if s.running else "Step" if s.run.steps_wanted else ""
        blocker = training_waits_for(s) if pressed else ""
        if blocker:
            # a pressed Play or Step is an intent: say what it waits for, and how long
            how_long = wait_text(s, waiting, self._busy_since)
            self.status.object = f"{pressed} pressed: training starts once {blocker} · {how_long}"
        elif not self.filled:  # (the served page's first, light version)
            self.status.object = waiting or "loading the page…"
        elif not waiting:
            self.status.object = s.status
        elif s.busy or s.trainer is None:
            self.status.object = waiting
        else:
            name = s.status.rsplit(" · ", 1)[-1]
            then = "Play pressed: training starts" if s.running else "Play trains"
            self.status.object = (
                f"{waiting} · {name} loaded: everything but training works now; {then} "
                "once it is ready"
            )
        # the spinner's label, unless the status line beside it says the same
        self.spinner.label = "" if label in str(self.status.object) else label
