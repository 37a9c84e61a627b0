"""A class on one server: past the session cap a new page says the class is full (and
loads nothing); the cap comes from ``AGGMRF_MAX_SESSIONS``."""

from __future__ import annotations

import weakref

import panel as pn
import pytest

from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.explorer.server import runtime, serve


class _Open:
    """Stands for an open session's explorer (the runtime tracks them weakly)."""


def _text(page) -> str:
    return " ".join(str(getattr(o, "object", "")) for o in page.main.objects)


def test_a_page_past_the_cap_says_the_class_is_full(monkeypatch):
    opened = [_Open(), _Open()]
    monkeypatch.setattr(runtime.RUNTIME, "sessions", weakref.WeakSet(opened))
    page = serve.build_app(max_sessions=2)
    assert isinstance(page, pn.template.BootstrapTemplate)
    assert "The class is full" in _text(page) and "**2**" in _text(page)
    assert len(runtime.RUNTIME.sessions) == 2  # the refused page is not a session


def test_the_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("AGGMRF_MAX_SESSIONS", "3")
    assert runtime.max_sessions() == 3
    monkeypatch.setenv("AGGMRF_MAX_SESSIONS", "many")  # refused, never silently replaced
    with pytest.raises(AggMRFError, match="^AGGMRF_MAX_SESSIONS='many'"):
        runtime.max_sessions()
    monkeypatch.delenv("AGGMRF_MAX_SESSIONS")
    assert runtime.max_sessions() == runtime.DEFAULT_MAX_SESSIONS
    opened = [_Open() for _ in range(3)]
    monkeypatch.setattr(runtime.RUNTIME, "sessions", weakref.WeakSet(opened))
    monkeypatch.setenv("AGGMRF_MAX_SESSIONS", "3")
    assert "The class is full" in _text(serve.build_app())
