"""The Training tab: the scoreboard, four live plots and pinned runs (a Viewer of the store).

The plots are the pure ``*_data``/``*_plot`` pairs of ``plots.py`` drawn by
``liveplots.LivePlot``: NLLH and convergence refresh often (:meth:`TrainingTab.refresh_lines`,
cheap), predictions and d̂ vs d less often (:meth:`TrainingTab.refresh_heavy`).
"Pin this run" keeps the live run's curves as a ghost (``plots.pin_run``, the last
``plots.MAX_PINS``).
"""

from __future__ import annotations

import numpy as np
import panel as pn

from ..store import frames
from . import plots
from .binding import STRETCH
from .help import explain, tab_note
from .liveplots import LivePlot

__all__ = ["TrainingTab", "PLOT_HEIGHT"]

PLOT_HEIGHT = 236  # pixels per training plot (two rows fit 1280×720 with the header)


class TrainingTab(pn.viewable.Viewer):
    """The Training tab of one store; ``guard`` runs the pin buttons' actions."""

    def __init__(self, session, guard):
        super().__init__()
        self.session = session
        h = PLOT_HEIGHT
        self.p_nllh = LivePlot(plots.nllh_plot, plots.nllh_data, height=h)
        self.p_conv = LivePlot(plots.convergence_plot, plots.convergence_data, height=h)
        self.p_pred = LivePlot(plots.predictions_plot, plots.predictions_data, height=h)
        self.p_dhat = LivePlot(plots.dhat_scatter, plots.dhat_data, height=h)
        self.pins: list = []  # plots.PinnedRun, oldest first
        self.scoreboard = pn.pane.Markdown(
            "",
            css_classes=["aggmrf-scoreboard"],
            margin=(0, 10),
            stylesheets=["p { font-size: 17px; margin: 6px 0 2px 0; }"],
            **STRETCH,
        )
        self.pins_md = pn.pane.Markdown(
            "", css_classes=["aggmrf-pins"], margin=(0, 10), visible=False, **STRETCH
        )
        self.pin_button = pn.widgets.Button(
            label="Pin this run", width=115, margin=(2, 5), css_classes=["aggmrf-pin"]
        )
        self.unpin_button = pn.widgets.Button(
            label="Clear pins", width=95, margin=(2, 5), css_classes=["aggmrf-unpin"]
        )
        self.pin_button.on_click(lambda e: guard(self.pin))
        self.unpin_button.on_click(lambda e: guard(self.unpin))
        # the pin buttons sit beside the scoreboard; the served page moves them to the header
        self.pin_row = pn.Row(self.pin_button, self.unpin_button, css_classes=["aggmrf-pins-row"])
        self.score_row = pn.Row(self.scoreboard, self.pin_row, **STRETCH)
        # a projector (1280×720) shows the four plots and the run controls at once: the
        # explanations fold away below them
        grid = pn.GridBox(
            self.p_nllh.pane,
            self.p_pred.pane,
            self.p_conv.pane,
            self.p_dhat.pane,
            ncols=2,
            css_classes=["aggmrf-plots"],
            **STRETCH,
        )
        notes = pn.Card(
            tab_note("Training"),
            *(explain(k) for k in ("nllh", "predictions", "convergence", "dhat")),
            title="What to look for, and what these plots show",
            collapsed=True,
            **STRETCH,
        )
        # (the pins' caption under the plots: at 720 px, pins never push a plot off screen)
        self.column = pn.Column(self.score_row, grid, self.pins_md, notes, **STRETCH)

    def __panel__(self):
        return self.column

    def header_pins(self) -> pn.Row:
        """The pin buttons, for the served page's header (the scoreboard gets the line)."""
        self.score_row.objects = [self.scoreboard]
        return self.pin_row

    def pin(self) -> None:
        """Keep the live run's curves as a ghost on the training plots (the last MAX_PINS)."""
        s = self.session
        if s.trainer is None or s.iteration == 0:
            return
        label = plots.run_label(s.settings(), s.iteration)
        self.pins = [*self.pins, plots.pin_run(s.history(), label)][-plots.MAX_PINS :]
        self.refresh_lines()

    def unpin(self) -> None:
        self.pins = []
        self.refresh_lines()

    def refresh_lines(self) -> None:
        """The scoreboard and the two line plots (new arrays into existing sources)."""
        s = self.session
        if s.trainer is None:
            return
        h = s.history()
        refs = frames.references(s.baselines)
        pins, n = self.pins, len(self.pins)
        # text first: a text that changes after a figure was replaced in the same
        # batch makes BokehJS lay out the figure's view before it exists (page error)
        self.scoreboard.object = plots.scoreboard(s.trainer.last_nllh, refs)
        self.pins_md.object = plots.pins_caption(pins)
        self.pins_md.visible = bool(pins)
        self.p_nllh.update({"history": h, "references": refs, "pinned": pins}, key=n)
        self.p_conv.update({"history": h, "floor": s.floor, "pinned": pins}, key=n)

    def refresh_heavy(self) -> None:
        """Predictions (MRF vs logistic) and d̂ vs d."""
        s = self.session
        pred = s.predictions()
        has_log = bool(np.isfinite(pred["logistic"].to_numpy(float)).any())
        mode = plots.predictions_mode(len(pred), has_log)
        self.p_pred.update({"frame": pred, "mode": mode}, key=mode)
        dh = frames.dhat_frame(s.data, s.trainer)
        self.p_dhat.update({"frame": dh, "iteration": s.iteration}, key=plots.dhat_kinds(dh))
