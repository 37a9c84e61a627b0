"""The Tables, XOR and Suppression tabs (Viewers of the store); each has ``refresh()``.

- Tables: one released table beside the model's d̂ and ĉ (``table_view.TableBrowser``).
- XOR: the counterexample's four states, true vs MRF vs logistic (``liveplots.XorPlot``),
  and the switch that releases the triplet table.
- Suppression: the model's d̂ on the rows a release left out (``suppression_view``).
"""

from __future__ import annotations

import panel as pn

from ...tables.suppression import suppressed_cells, suppression_check
from ..store import frames
from . import suppression_view
from .binding import STRETCH, Binder
from .checkbox import LabeledCheckbox
from .help import explain, tab_note
from .liveplots import XorPlot
from .messages import DARK_INFO
from .table_view import TableBrowser

__all__ = ["TablesTab", "XorTab", "SuppressionTab"]


class TablesTab(pn.viewable.Viewer):
    """A table menu (bound to the store's ``table``) and the table browser."""

    def __init__(self, session, binder: Binder):
        super().__init__()
        self.session = session
        self.table_select = pn.widgets.Select(label="Table", options=[], width=320)
        self.tables = TableBrowser(session, binder.bind("table", self.table_select))
        self.column = pn.Column(tab_note("Tables"), explain("tables"), self.tables, **STRETCH)

    def __panel__(self):
        return self.column

    def show_options(self, bundle, binder: Binder) -> None:
        """The tables of newly loaded data in the menu."""
        with binder.hushed():
            self.table_select.options = list(bundle.layout.table_names)
            self.table_select.value = self.session.table

    def refresh(self) -> None:
        self.tables.refresh()


class XorTab(pn.viewable.Viewer):
    """The XOR comparison (on the XOR dataset; a note elsewhere)."""

    def __init__(self, session, binder: Binder):
        super().__init__()
        self.session = session
        self.p_xor = XorPlot(height=420)
        self.w_triples = LabeledCheckbox(
            label="Release the triplet table (X1, X2, X3)", margin=(4, 10), **STRETCH
        )
        self.c_triples = binder.bind("triples", self.w_triples)
        self.triples_row = pn.Column(
            self.c_triples,
            pn.pane.Markdown(
                "With it, max-ent can represent the truth, and the MRF moves from "
                "0.9 / 0.1 to 0.75 / 0.25.",
                margin=(0, 10),
            ),
            css_classes=["aggmrf-triples"],
            **STRETCH,
        )
        self.note = pn.pane.Alert(
            "Choose the **XOR counterexample** dataset (or the XOR preset) to see this comparison.",
            alert_type="info",
            stylesheets=[DARK_INFO],
            **STRETCH,
        )
        self.column = pn.Column(
            tab_note("XOR"), self.triples_row, self.note, self.p_xor.pane, explain("xor"), **STRETCH
        )

    def __panel__(self):
        return self.column

    def show_dataset(self) -> None:
        s = self.session
        self.triples_row.visible = s.dataset == "xor" and not s.features

    def refresh(self) -> None:
        s = self.session
        xf = frames.xor_frame(s.bundle, s.trainer, s.baselines)
        self.note.visible = xf is None
        self.p_xor.pane.visible = xf is not None
        if xf is not None:
            self.p_xor.update({"frame": xf}, key=tuple(xf["state"]))


class SuppressionTab(pn.viewable.Viewer):
    """Suppressed rows per table and the model's d̂ on them."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.summary = pn.pane.Markdown("", margin=(0, 10), **STRETCH)
        self.figure = suppression_view.SuppressionFigure(height=380)
        self.column = pn.Column(
            tab_note("Suppression"),
            self.figure.pane,
            self.summary,
            pn.pane.Markdown(
                suppression_view.EXPLAIN, css_classes=["aggmrf-explain"], margin=(0, 10), **STRETCH
            ),
            **STRETCH,
        )

    def __panel__(self):
        return self.column

    def refresh(self) -> None:
        """The trainer's current d̂ on the suppressed rows (``tables.suppression`` computes)."""
        s = self.session
        cells = suppressed_cells(s.data, s.trainer.d_hat)
        self.summary.object = suppression_view.summary_markdown(
            suppression_check(s.data, s.trainer.d_hat)
        )
        self.figure.pane.visible = len(cells) > 0
        if len(cells):
            self.figure.update(cells, s.iteration)
