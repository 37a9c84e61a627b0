"""A checkbox whose text is its ``<label>``: clicking the text toggles it, and the text is
its accessible name (screen readers, axe-core).

Bokeh's own checkbox draws its text in a ``<div>`` beside the input: clicking the text
does nothing and the input has no name.  :class:`LabeledCheckbox` is a small
:class:`~panel.custom.JSComponent` drawing ``<label><input type=checkbox> text</label>``,
with the same ``value`` param as ``pn.widgets.Checkbox`` (so the views bind it alike) and a
``description`` shown as the label's tooltip and read as the input's description.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["LabeledCheckbox"]


class LabeledCheckbox(JSComponent):
    """``value``: checked; ``label``: the text (its clickable label); ``description``: help."""

    value = param.Boolean(default=False, doc="Checked")
    label = param.String(default="", doc="The text beside the box, its accessible name")
    description = param.String(default="", doc="Help: the tooltip and the input's description")
    disabled = param.Boolean(default=False)

    _esm = """
    export function render({ model }) {
      const label = document.createElement("label");
      label.className = "aggmrf-check";
      const box = document.createElement("input");
      box.type = "checkbox";
      const text = document.createElement("span");
      const help = document.createElement("span");
      help.className = "aggmrf-check-help";
      help.id = "aggmrf-help-" + Math.random().toString(36).slice(2);
      box.setAttribute("aria-describedby", help.id);
      label.append(box, text);
      const wrap = document.createElement("div");
      wrap.append(label, help);  // (the help outside the label: not part of the name)
      const show = () => {
        box.checked = model.value;
        box.disabled = model.disabled;
        text.textContent = model.label;
        help.textContent = model.description;
        label.title = model.description;
      };
      show();
      box.addEventListener("change", () => { model.value = box.checked; });
      model.on(["value", "label", "description", "disabled"], show);
      return wrap;
    }
    """
    _stylesheets = [
        """
        .aggmrf-check { display: flex; align-items: flex-start; gap: 6px; cursor: pointer;
          font-size: 14px; line-height: 1.35; padding: 2px 0; }
        .aggmrf-check input { margin-top: 3px; flex: none; cursor: pointer; }
        .aggmrf-check-help { position: absolute; width: 1px; height: 1px; overflow: hidden;
          clip: rect(0 0 0 0); white-space: nowrap; }
        """
    ]
