"""A small script in the served page's head: names for the controls that Bokeh draws
without one, and no third-party deprecation notice in the console.

* Bokeh draws a slider's handle (``role="slider"``) without a name, the ▲/▼ buttons of
  a number input as empty ``<button>``s, and the template puts the sidebar in a
  ``<ul>`` without ``<li>``, and Tabulator's grid holds its rows in a focusable
  ``<div>`` without a role: a screen reader (and axe-core) finds controls it cannot
  name, and a grid without rows.  Every second the script names each such element
  that has no name yet (a slider after its control's label, the buttons "increase" /
  "decrease"), marks the sidebar's list as layout and the grid's body as its rows.
  Panel draws inside shadow roots: the script walks them.  It also names the page's
  regions (main, the controls' sidebar, the header's run controls).
* Bokeh builds Choices.js (the feature and hide pickers) without its ``allowHTML``
  option, and Choices.js then warns once per picker that the default will change.  The
  explorer escapes the labels it gives the pickers itself, so the notice, addressed to
  Bokeh's developers, says nothing to a teacher: that one message is not printed.

:func:`page_script` is the script as a ``data:`` URI for the template's ``js_files``
(nothing fetched: the page works offline).
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["PAGE_JS", "page_script"]

PAGE_JS = r"""
(function () {
  const warn = console.warn.bind(console);
  console.warn = function (...args) {
    const m = args.length ? String(args[0]) : "";
    if (m.startsWith("Deprecation warning: allowHTML will default to false")) return;
    warn(...args);
  };
  function deepText(node) {
    let out = "";
    for (const c of node.childNodes) {
      if (c.nodeType === 3) out += c.textContent;
      else if (c.nodeType === 1 && c.tagName !== "STYLE") out += deepText(c);
    }
    if (node.shadowRoot) out = deepText(node.shadowRoot) + out;
    return out;
  }
  function controlName(el) {
    let node = el;
    for (let i = 0; i < 12 && node; i++) {
      node = node.parentNode || (node.host ? node.host : null);
      if (node && node.host) node = node.host;
      if (node && node.classList && [...node.classList].some(
          c => c.startsWith("aggmrf-control-") || c === "aggmrf-privacy-epsilon")) {
        return deepText(node).split(":")[0].replace(/\s+/g, " ").trim();
      }
    }
    return "";
  }
  function fix(root) {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) fix(el.shadowRoot);
      if (el.hasAttribute("aria-label")) continue;
      const cls = el.classList;
      if (cls.contains("noUi-handle")) {
        const name = controlName(el);
        if (name) el.setAttribute("aria-label", name);
      } else if (cls.contains("bk-spin-btn-up")) {
        el.setAttribute("aria-label", "increase");
      } else if (cls.contains("bk-spin-btn-down")) {
        el.setAttribute("aria-label", "decrease");
      } else if (el.tagName === "UL" && cls.contains("nav") && !el.hasAttribute("role")) {
        el.setAttribute("role", "presentation");
      } else if (cls.contains("tabulator-tableholder") && !el.hasAttribute("role")) {
        el.setAttribute("role", "rowgroup");  // (the grid's scrolling body of rows)
        for (const t of el.querySelectorAll(".tabulator-table")) t.setAttribute("role", "none");
      }
    }
  }
  function landmarks() {
    const roles = {main: "main", sidebar: "complementary", "header-items": "toolbar"};
    for (const [id, role] of Object.entries(roles)) {
      const el = document.getElementById(id);
      if (el && !el.hasAttribute("role")) el.setAttribute("role", role);
    }
    const side = document.getElementById("sidebar");
    if (side && !side.hasAttribute("aria-label")) side.setAttribute("aria-label", "controls");
  }
  setInterval(() => { landmarks(); fix(document); }, 1000);
})();
"""


def page_script() -> str:
    """:data:`PAGE_JS` as a ``data:`` URI (its ``//`` keeps Panel from prefixing a path)."""
    return "data:text/javascript," + quote(PAGE_JS + "\n//", safe="/")
