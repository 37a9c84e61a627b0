"""Browser tests of the third hostile-input round: a link with a local ε too small for a
usable channel, and links too long for the page (16 000 characters) or for Tornado's
default 64 KiB of request headers.  They serve ``apps/explorer.py`` and drive
Debian's chromium with the fixtures of tests/test_browser.py; they never skip."""

# ruff: noqa: F811  (the fixtures of tests/test_browser.py are imported, then requested by name)
from __future__ import annotations

import re

import pytest

from tests.test_browser import browser, server  # noqa: F401 - fixtures
from tests.test_browser_hostile import _error_texts, _open

pytestmark = pytest.mark.browser


def test_link_with_tiny_local_epsilon_loads_and_says_why(server, browser):
    p = _open(browser, server.url, "?dataset=xor&mechanism=local&epsilon=1e-7")
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=90)
        assert p.control("mechanism").locator(".bk-active").all_inner_texts() == ["Local"]
        p.control("epsilon").locator(".aggmrf-error p").first.wait_for(timeout=20000)
        (text,) = _error_texts(p, "epsilon")
        assert "ε ≥" in text and "Error" not in text, text
        assert p.page.get_by_text(re.compile(r"Local \(randomized response\)")).count() >= 1
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() >= 1, timeout=30)
        assert "epsilon=1e-" not in p.page.url and "mechanism=local" in p.page.url, p.page.url
    finally:
        p.close()


def test_too_long_link_keeps_its_settings_and_says_why(server, browser):
    p = _open(browser, server.url, "?dataset=xor&n_gibbs=2000&lesson=" + "x" * 20_000)
    try:
        p.wait_status(lambda t: t.endswith("XOR") and "iteration 0" in t, timeout=90)
        banner = p.page.locator(".aggmrf-lesson").first  # stays, unlike a routine message
        text = banner.get_by_text(re.compile("characters long")).first
        text.wait_for(timeout=30000)
        assert "lesson and hidden controls" in text.inner_text(), text.inner_text()
        assert "xxx" not in text.inner_text()
        assert len(p.page.url) < 16_000 and "lesson=" not in p.page.url, len(p.page.url)
        assert "n_gibbs=2000" in p.page.url  # the settings were read
        p.button("Step").click()
        p.wait_status(lambda t: p.iteration() >= 1, timeout=30)
    finally:
        p.close()


def test_link_over_64kib_gets_a_clear_page_from_aggmrf_explore_serve(browser, tmp_path):
    """Tornado refuses more than 64 KiB of request headers with an empty response; the
    package's own server reads up to 1 MiB, so such a link reaches the page, which says
    it is too long and opens with its defaults."""
    import subprocess
    import sys

    from aggmrf_explore.kernels import warm_up
    from tests.test_browser import Page, free_port
    from tests.test_browser_proxy import start_serve

    warm_up()
    port = free_port()
    proc, url = start_serve(
        [
            sys.executable,
            "-m",
            "aggmrf_explore.cli",
            "serve",
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
            "--allow-websocket-origin",
            f"127.0.0.1:{port}",
        ],
        cwd=tmp_path,
    )
    try:
        p = Page(browser, url + "?dataset=xor&lesson=" + "x" * 100_000, ready="XOR", timeout=180)
        try:
            banner = p.page.locator(".aggmrf-lesson").first
            text = banner.get_by_text(re.compile("characters long")).first
            text.wait_for(timeout=60000)
            assert "100,0" in text.inner_text(), text.inner_text()
            assert len(p.page.url) < 16_000, len(p.page.url)
        finally:
            p.close()
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
