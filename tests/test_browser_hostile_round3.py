"""Browser tests of the third hostile-input round: a link with a local ε too small for a
usable channel, and a link too long to be read.  They serve ``apps/explorer.py`` and drive
Debian's chromium with the fixtures of tests/test_browser.py; they never skip."""

# ruff: noqa: F811  (the fixtures of tests/test_browser.py are imported, then requested by name)
from __future__ import annotations

import re

import pytest

from tests.test_browser import browser, server  # noqa: F401 - fixtures
from tests.test_browser_hostile import _error_texts, _open

pytestmark = pytest.mark.browser


def test_link_with_tiny_local_epsilon_loads_and_says_why(server, browser):
    p = _open(browser, server.url, "?dataset=xor&mechanism=local&epsilon=1e-300")
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=90)
        assert p.control("mechanism").locator(".bk-active").all_inner_texts() == ["Local"]
        p.control("epsilon").locator(".aggmrf-error p").first.wait_for(timeout=20000)
        (text,) = _error_texts(p, "epsilon")
        assert "ε ≥" in text and "Error" not in text, text
        assert p.page.get_by_text(re.compile(r"Local \(randomized response\)")).count() >= 1
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() >= 1, timeout=30)
        assert "1e-300" not in p.page.url and "mechanism=local" in p.page.url, p.page.url
    finally:
        p.close()


def test_too_long_link_opens_the_defaults_with_a_clear_message(server, browser):
    p = _open(browser, server.url, "?dataset=toy&lesson=" + "x" * 20_000)
    try:
        msg = p.page.get_by_text(re.compile("characters long")).first
        msg.wait_for(timeout=60000)
        assert "none of its settings" in msg.inner_text()
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=90)
        assert p.page.locator(".aggmrf-lesson").first.is_visible() is False
        assert len(p.page.url) < 16_000 and "lesson=" not in p.page.url, len(p.page.url)
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() >= 1, timeout=30)
    finally:
        p.close()
