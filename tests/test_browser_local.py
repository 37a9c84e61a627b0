"""Browser test of local privacy in the explorer: choose "Local" (randomized
response) in the Privacy group, see each field's ε share and keep probability, press Play
and watch the test NLLH move.  Uses the server and browser fixtures of ``test_browser.py``."""

from __future__ import annotations

import re

import pytest

from .test_browser import Page, _no_errors, browser, server, shots  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

NLLH_RE = re.compile(r"test NLLH (-?[\d.]+)")


def _nllh(p: Page) -> float | None:
    m = NLLH_RE.search(p.status())
    return float(m.group(1)) if m else None


def test_local_randomized_response_trains(server, browser, shots):  # noqa: F811
    p = Page(browser, server.url + "?dataset=xor&n_samples=2000&n_gibbs=2000&epsilon=4", "XOR")
    try:
        p.control("mechanism").get_by_text("Local", exact=True).click()
        table = p.page.get_by_text(re.compile(r"Local \(randomized response\)")).first
        table.wait_for(timeout=15000)
        assert p.page.get_by_text("keep p").first.is_visible()
        assert "mechanism=local" in p.page.url
        p.play()
        p.wait_status(lambda t: _nllh(p) is not None, timeout=30)
        first = _nllh(p)
        p.wait_status(lambda t: _nllh(p) is not None and _nllh(p) != first, timeout=30)
        assert p.iteration() > 0
        p.page.screenshot(path=str(shots / "explorer_local.png"))
        _no_errors(p)
    finally:
        p.close()
