"""The page URL and the store's settings, kept in step key by key (served pages only).

The link's settings are read with ``url.apply_query``: a bad value costs only its own
setting (its message shows beside its control), the others are kept.  The URL then holds
the settings in effect (bad values leave the address bar) and follows every change.
(Panel's ``Location.sync`` applies all keys at once and drops the whole link on one bad
value, so it is not used.)
"""

from __future__ import annotations

import panel as pn

from ...errors import error_message
from ..store import url
from ..store.store import URL_KEYS
from .messages import Messages

__all__ = ["sync_url"]


class _UrlSync:
    def __init__(self, session, location, messages: Messages):
        self.session = session
        self.location = location
        self.messages = messages
        self.writing = False  # our own change of the address: not read back

    def on_url(self, event) -> None:
        """The address changed in the browser (first report, back button): read it."""
        if self.writing:
            return
        self.messages.guard(lambda: url.apply_query(self.session, event.new or "", URL_KEYS))
        self.write()

    def write(self) -> None:
        loc = self.location
        search = url.with_settings(loc.search or "", self.session, URL_KEYS)
        if search != loc.search:
            self.writing = True
            try:
                loc.search = search
            finally:
                self.writing = False


def sync_url(session, messages: Messages) -> None:
    """Apply the page link's settings to ``session``, then keep the URL following it
    (nothing outside a served page)."""
    loc = pn.state.location
    if loc is None or pn.state.curdoc is None:
        return
    try:
        url.apply_query(session, loc.search or "", URL_KEYS)
    except Exception as exc:  # noqa: BLE001
        messages.show_message(f"could not read the settings in the URL: {error_message(exc)}")
    sync = _UrlSync(session, loc, messages)
    # the page reports its own address once it is shown: read it the same way
    loc.param.watch(sync.on_url, "search")
    session.param.watch(lambda *events: sync.write(), list(URL_KEYS))
    sync.write()
