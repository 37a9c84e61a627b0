"""The Save & share card and lesson links (a Viewer of the store).

Downloads of the settings (JSON) and the history (CSV); a *lesson link*: the page URL with
the current settings, plus ``hide=…`` (controls or whole cards a teacher hides) and
``lesson=…`` (a text shown at the top).  ``lesson.py`` parses and writes such links; this
card reads the page's own link, hides what it names, and builds the link of the current
page.
"""

from __future__ import annotations

import io

import panel as pn

from ..store import url
from ..store.escape import escape_markdown
from ..store.lesson import hidden_groups, lesson_link, parse_lesson
from ..store.store import RULE_KEYS, URL_KEYS
from .binding import STRETCH, Binder
from .messages import Messages

__all__ = ["ShareCard"]

DEFAULT_BASE = "http://localhost:5006/explorer"


class ShareCard(pn.viewable.Viewer):
    """Downloads and the lesson link of one store.

    After the page is built the app calls :meth:`set_hideable` with every control a link
    may hide ({name: its container}) and the sidebar's cards ({group: card}).
    """

    def __init__(self, session, binder: Binder, messages: Messages):
        super().__init__()
        self.session = session
        self.binder = binder
        self.messages = messages
        self.hidden: list[str] = []  # what the page's lesson link hides
        self._hideable: dict[str, object] = {}
        self._cards: dict[str, pn.Card] = {}
        self.dl_settings = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(session.settings_json()),
            filename="aggmrf_settings.json",
            label="Download settings (JSON)",
            **STRETCH,
        )
        self.dl_history = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(session.history().to_csv(index=False)),
            filename="aggmrf_history.csv",
            label="Download history (CSV)",
            **STRETCH,
        )
        self.w_lesson_text = pn.widgets.TextAreaInput(
            label="Lesson text (shown at the top)", height=70, max_length=1000, **STRETCH
        )
        self.w_lesson_hide = pn.widgets.MultiChoice(
            label="Controls to hide", options=[], placeholder="choose controls…", **STRETCH
        )
        self.lesson_url = pn.widgets.TextInput(
            label="Lesson link", disabled=False, css_classes=["aggmrf-lesson-link"], **STRETCH
        )
        self.copy_lesson = pn.widgets.Button(
            label="Copy lesson link", color="primary", css_classes=["aggmrf-copy"], **STRETCH
        )
        self.copy_lesson.js_on_click(
            args={"link": self.lesson_url},
            code="if (navigator.clipboard) { navigator.clipboard.writeText(link.value) }",
        )
        self.w_lesson_text.param.watch(lambda e: self.refresh_link(), "value")
        self.w_lesson_hide.param.watch(lambda e: self.refresh_link(), "value")
        session.param.watch(lambda *e: self.refresh_link(), list(URL_KEYS))
        self.card = pn.Card(
            self.dl_settings,
            self.dl_history,
            pn.pane.Markdown(
                "The page URL holds every setting: copy it to share this configuration. "
                "A **lesson link** also hides controls and shows a text at the top:",
                margin=(0, 10),
            ),
            self.w_lesson_text,
            self.w_lesson_hide,
            self.lesson_url,
            self.copy_lesson,
            title="Save & share",
            collapsed=True,
            **STRETCH,
        )

    def __panel__(self):
        return self.card

    def set_hideable(self, hideable: dict[str, object], cards: dict[str, pn.Card]) -> None:
        self._hideable = dict(hideable)
        self._cards = dict(cards)
        self.w_lesson_hide.options = sorted(self._hideable)

    def read_lesson(self) -> None:
        """``hide=…`` and ``lesson=…`` of the page's link (see ``lesson.py``)."""
        loc = pn.state.location
        if loc is None or pn.state.curdoc is None:
            return
        les = parse_lesson(url.readable_query(loc.search or ""), self._hideable)
        self.hidden = list(les.hide)
        too_long = url.link_too_long(loc.search or "")  # said where it stays: the banner
        if les.text or too_long:
            self.messages.show_lesson(
                f"**Lesson.** {escape_markdown(les.text, limit=1000)}" if les.text else too_long
            )
        with self.binder.hushed():
            self.w_lesson_text.value = les.text
            self.w_lesson_hide.value = [h for h in les.hide if h in self.w_lesson_hide.options]
        if les.unknown:
            names = ", ".join(les.unknown)
            self.messages.show_message(f"the lesson link names unknown controls: {names}")
        self.apply_hide()

    def apply_hide(self) -> None:
        """Hide what the link hides (again, after a view showed a control)."""
        for name in [*self.hidden, *self.hidden_groups()]:
            box = self._hideable.get(name)
            if box is not None:
                box.visible = False

    def hidden_groups(self) -> set[str]:
        """The cards (and the preset menu) that the lesson link hides, wholly or control
        by control."""
        boxes = self.binder.control_boxes
        members = {
            g: [n for n, box in boxes.items() if box in card.objects]
            for g, card in self._cards.items()
        }
        return hidden_groups(self.hidden, members)

    def allows(self, control: str) -> bool:
        """False for a run control the link hides (its key is off too)."""
        return control not in self.hidden

    def refresh_link(self) -> None:
        """The lesson link of the current settings, hidden controls and text."""
        if self.binder.syncing and not self.w_lesson_hide.options:
            return
        s = self.session
        loc = pn.state.location
        base = DEFAULT_BASE
        if loc is not None and loc.href:
            base = loc.href.split("?", 1)[0].split("#", 1)[0]
        defaults = {k: s.param[k].default for k in URL_KEYS}
        if s.auto_defaults:  # the rule sets λ and α: the link need not carry them
            for k in RULE_KEYS:
                defaults[k] = getattr(s, k)
        self.lesson_url.value = lesson_link(
            base, s.settings(), defaults, self.w_lesson_hide.value, self.w_lesson_text.value
        )
