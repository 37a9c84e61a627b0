"""The Tables tab: one released table beside the model's d̂ and ĉ (a Viewer of the store).

A table's rows change every refresh; its columns change with the table, the dataset or
the mechanism.  Tabulator cannot take new columns while it is still building itself in
the browser (a tab shown for the first time, a dataset switched meanwhile: "Table Not
Initialized", then an empty table), so :class:`TableBrowser` draws a new Tabulator,
columns and rows together, whenever the columns change, and only sends new rows to the
one shown otherwise.  Every column fits the tab's width (headers wrap), sidebar open or
not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import panel as pn

from ..store import frames
from ..store.escape import escape_html

__all__ = ["TableBrowser", "table_display", "TABLE_COLUMNS"]

HEIGHT = 470
# columns share the tab's width and their titles wrap: the last one is never cut off
CONFIG = {"columnDefaults": {"headerWordWrap": True}}

TABLE_COLUMNS = {
    "count": "count d",
    "d_hat": "model d̂",
    "label_sum": "label sum c",
    "c_hat": "model ĉ",
    "true_count": "true count",
    "true_label_sum": "true label sum",
}


def table_display(frame: pd.DataFrame, noisy: bool | None = None) -> pd.DataFrame:
    """One table as the Tables tab shows it: the modality columns, then the released
    count d beside the model's d̂, the label sum c beside ĉ, then the true values (if
    noisy); words instead of code names ("model d̂", not ``d_hat``), whole numbers
    without ".0" and the rest to 1 decimal.

    ``frame``: ``AggregatedData.table_frame(t, extra={"d_hat": …, "c_hat": …})``;
    ``noisy`` (default: a true_count column is present) names d and c "noisy".
    """
    noisy = "true_count" in frame if noisy is None else noisy
    names = dict(TABLE_COLUMNS)
    if noisy:
        names.update(count="noisy count d", label_sum="noisy label sum c")
    keys = [c for c in frame.columns if c not in TABLE_COLUMNS]
    keys += [c for c in TABLE_COLUMNS if c in frame.columns]
    out = pd.DataFrame(index=frame.index)
    for c in keys:
        col = frame[c]
        if c in TABLE_COLUMNS:
            v = pd.to_numeric(col, errors="coerce").astype(float)
            whole = np.isfinite(v).all() and np.all(np.round(v) == v)
            col = v.round().astype("int64") if whole else v.round(1)
        out[names.get(c, c)] = col
    return out


class TableBrowser(pn.viewable.Viewer):
    """The chosen table (``session.table``) of ``session``; :meth:`refresh` shows it."""

    def __init__(self, session, select, **params):
        super().__init__(**params)
        self.session = session
        self.select = select
        self.view = self._new_view()
        self._columns: tuple = ()
        self.box = pn.Column(self.select, self.view, sizing_mode="stretch_width")

    def __panel__(self):
        return self.box

    @staticmethod
    def _new_view() -> pn.widgets.Tabulator:
        return pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            pagination=None,  # (a grid of rows that scrolls: no page buttons inside it)
            sizing_mode="stretch_width",
            height=HEIGHT,
            layout="fit_columns",
            configuration=CONFIG,
            css_classes=["aggmrf-table"],
        )

    def refresh(self) -> None:
        """Show the session's current table (nothing before a trainer exists).

        Tabulator renders titles as HTML: column names (user-supplied) are escaped; text
        cells (modalities of an uploaded CSV) go through the "plaintext" formatter.
        (Bokeh's DataFrame conversion calls ``reset_index(inplace=True)``, which pandas
        flags as deprecated: not ours to fix.)
        """
        s = self.session
        if s.trainer is None:
            return
        frame = table_display(frames.table_frame(s.data, s.trainer, s.table))
        columns = tuple(frame.columns)
        titles = {c: escape_html(c) for c in columns}
        text = {c: {"type": "plaintext"} for c in columns if frame[c].dtype == object}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*inplace keyword in DataFrame.reset_index")
            if columns != self._columns:
                view = self._new_view()
                view.param.update(titles=titles, formatters=text, value=frame)
                self.view, self._columns = view, columns
                self.box.objects = [self.select, view]
            else:
                self.view.value = frame
