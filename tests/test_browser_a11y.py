"""Accessibility checked by axe-core: no serious or critical violation on the explorer's
page (every tab shown once) and on a lesson link's view (hidden controls, a lesson text).

axe-core comes with the ``axe-playwright-python`` package (its bundled ``axe.min.js``,
injected into the page: no network).  Each run prints its violations by impact, and the
rules behind the serious and critical ones, so a failure names what to fix.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import quote

import pytest

from .test_browser import browser, server  # noqa: F401 - pytest fixtures
from .test_browser_app import AppPage

pytestmark = pytest.mark.browser

BLOCKING = ("serious", "critical")
TABS = ("Training", "Tables", "Privacy", "XOR", "Suppression")


def axe_violations(page) -> list[dict]:
    """The axe-core violations of the page as it is now (the page's open shadow roots
    included: axe walks them)."""
    from axe_playwright_python.sync_playwright import Axe

    return Axe().run(page).response["violations"]


def by_impact(violations: list[dict]) -> dict[str, int]:
    """Violations (rules) and the elements they hit, by impact: {"serious": (rules, nodes)}."""
    rules = Counter(v["impact"] for v in violations)
    nodes = Counter()
    for v in violations:
        nodes[v["impact"]] += len(v["nodes"])
    return {k: (rules[k], nodes[k]) for k in ("critical", "serious", "moderate", "minor")}


def _target(node: dict) -> str:
    """The element's selector (the last, innermost, of a shadow-DOM path) and its HTML."""
    last = node["target"][-1] if node["target"] else "?"
    last = last[-1] if isinstance(last, list) else last
    return f"{last} {node['html'][:120]}"


def _check(p: AppPage, where: str) -> None:
    seen: dict[str, dict] = {}
    for title in TABS:
        p.tab(title)
        p.page.wait_for_timeout(2500)  # (drawn, faded in, named by the page's script)
        for v in axe_violations(p.page):
            seen.setdefault(v["id"], v)
    found = list(seen.values())
    print(f"axe-core on {where}: {by_impact(found)} (rules, elements)")
    blocking = [
        f"{v['id']} ({v['impact']}): {v['help']} — " + "; ".join(_target(n) for n in v["nodes"][:6])
        for v in found
        if v["impact"] in BLOCKING
    ]
    assert not blocking, "\n".join(blocking)


def test_explorer_page_has_no_serious_accessibility_violation(server, browser):  # noqa: F811
    p = AppPage(browser, server.url + "?dataset=xor&mechanism=laplace", ready="XOR")
    try:
        p.page.wait_for_timeout(1500)  # (the cards of controls join the page once shown)
        _check(p, "the explorer page")
    finally:
        p.close()


def test_lesson_link_view_has_no_serious_accessibility_violation(server, browser):  # noqa: F811
    query = "?dataset=xor&gradient=true&hide=play,step,reset,lambda_mu,presets&lesson=" + quote(
        "Watch the XOR bars: why does max-ent fail here?"
    )
    p = AppPage(browser, server.url + query, ready="XOR")
    try:
        p.page.wait_for_timeout(1500)
        _check(p, "a lesson link's view")
    finally:
        p.close()
