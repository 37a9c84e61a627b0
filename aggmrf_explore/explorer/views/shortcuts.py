"""Keyboard shortcuts of the explorer page: space = play / pause, → = one step.

A tiny invisible :class:`~panel.custom.JSComponent`: its script listens to the page's key
presses and counts them in two params (``play``, ``step``) that the app watches.  Keys
typed into an input, a text area, a select, a slider or a button (which handle their own
keys) are left alone, so a teacher can still type a lesson text or move a slider with →.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["Shortcuts"]


class Shortcuts(JSComponent):
    """Counts the page's shortcut key presses: ``play`` (space) and ``step`` (→)."""

    play = param.Integer(default=0, doc="Space presses outside inputs")
    step = param.Integer(default=0, doc="→ presses outside inputs")

    _esm = """
    function typing(e) {
      const el = e.composedPath ? e.composedPath()[0] : e.target;
      if (!el || !el.tagName) return false;
      const tag = el.tagName.toLowerCase();
      if (["input", "textarea", "select", "button", "option"].includes(tag)) return true;
      if (el.isContentEditable) return true;
      const role = el.getAttribute && el.getAttribute("role");
      if (role === "slider" || role === "textbox" || role === "combobox") return true;
      return !!(el.closest && el.closest(".noUi-target, .choices"));
    }
    export function render({ model }) {
      const handler = (e) => {
        if (e.ctrlKey || e.altKey || e.metaKey || typing(e)) return;
        if (e.key === " " || e.code === "Space") {
          e.preventDefault();
          model.play = model.play + 1;
        } else if (e.key === "ArrowRight") {
          e.preventDefault();
          model.step = model.step + 1;
        }
      };
      document.addEventListener("keydown", handler);
      model.on("remove", () => document.removeEventListener("keydown", handler));
      const span = document.createElement("span");
      span.className = "aggmrf-shortcuts";
      return span;
    }
    """
