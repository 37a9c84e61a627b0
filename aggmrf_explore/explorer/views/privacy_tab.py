"""The Privacy tab: the price of privacy and the noise of the release (a Viewer of the store).

Its ε slider re-releases the tables and retrains; each finished run becomes a point
(ε, final test NLLH) of this session's curve (``store.privacy_runs``), drawn against the
skyline (``plots.privacy_curve_*``).  Below, the noise that was added: a histogram against
the mechanism's density (integer noise: its pmf), and noisy against true counts.
"""

from __future__ import annotations

import panel as pn

from ..store import frames
from . import plots, privacy_plots
from .binding import STRETCH, Binder, log_grid
from .help import explain, tab_note
from .liveplots import LivePlot, static_figure
from .messages import DARK_INFO

__all__ = ["PrivacyTab"]

EPSILON_CSS = "aggmrf-privacy-epsilon"  # the tab's ε control (the sidebar has the other)


class PrivacyTab(pn.viewable.Viewer):
    """The Privacy tab of one store."""

    def __init__(self, session, binder: Binder):
        super().__init__()
        self.session = session
        self.binder = binder
        self.c_eps_tab = binder.log_slider(
            "epsilon", "ε: re-release the tables and retrain", log_grid(-2, 2), css=EPSILON_CSS
        )
        self.slider = binder.slider_of[EPSILON_CSS]
        self.slider.param.watch(lambda e: binder.guard(self._after_tab_epsilon), "value")
        self.p_privacy = LivePlot(
            privacy_plots.privacy_curve_plot, privacy_plots.privacy_curve_data, height=320
        )
        self.runs_md = pn.pane.Markdown(
            "", margin=(0, 10), css_classes=["aggmrf-privacy-runs"], **STRETCH
        )
        # the NLLH-vs-ε view of the session's runs (``store.privacy_runs``) goes in here
        self.curve_box = pn.Column(self.p_privacy.pane, **STRETCH)
        self.noise_note = pn.pane.Alert(
            "No noise: choose a mechanism (Laplace, Gaussian, their discrete twins or Local) "
            "in the Privacy controls.",
            alert_type="info",
            stylesheets=[DARK_INFO],
            **STRETCH,
        )
        self.noise_hist = pn.pane.Bokeh(height=380, css_classes=["aggmrf-noise-hist"], **STRETCH)
        self.noise_scatter = pn.pane.Bokeh(height=380, **STRETCH)
        self._noise_key = None
        self.column = pn.Column(
            tab_note("Privacy"),
            explain("privacy"),
            self.c_eps_tab,
            self.curve_box,
            self.runs_md,
            self.noise_note,
            pn.Row(self.noise_hist, self.noise_scatter, **STRETCH),
            **STRETCH,
        )
        # a finished run redraws the curve (a new figure, ≈ 0.5 s): on a served page at the
        # next tick, so the click that ended the run shows its effect first
        session.param.watch(lambda e: binder.later(self.refresh_runs), "privacy_runs")

    def __panel__(self):
        return self.column

    def _after_tab_epsilon(self) -> None:
        """The tab's ε slider moved: the store re-released the tables and restarted the
        trainer (the finished run joined ``privacy_runs``); train the new one."""
        s = self.session
        if self.binder.syncing or s.trainer is None or s.busy:
            return
        if not s.running:
            s.play()

    def show_mechanism(self) -> None:
        self.c_eps_tab.visible = self.session.mechanism != "none"

    def refresh_curve(self) -> None:
        """The NLLH-vs-ε curve: the session's finished runs and the live one (plots.py)."""
        s = self.session
        if s.bundle is None:
            return
        sky = frames.references(s.baselines).get(plots.REFERENCE_NAMES[0])
        runs, live = list(s.privacy_runs), s.privacy_point()
        key = privacy_plots.privacy_series(runs, s.dataset)  # a new curve: drawn again
        # (the live point's legend says "paused" while paused: its layer's name)
        kw = {"runs": runs, "live": live, "skyline": sky, "dataset": s.dataset}
        kw["running"] = bool(s.running)
        self.p_privacy.update(kw, key=key)

    def refresh_runs(self) -> None:
        """The table of this dataset's finished runs, then the curve."""
        s = self.session
        runs = [r for r in s.privacy_runs if r.get("dataset") == s.dataset]
        if not runs:
            self.runs_md.object = (
                "Move ε: each finished run adds a point (ε, final test NLLH) to this session's "
                "price-of-privacy curve."
            )
        else:
            rows = "\n".join(
                f"| {r['epsilon']:g} | {r['mechanism'].replace('_', ' ')}"
                f"{' (MRF-N)' if r['noise_aware'] else ''} "
                f"| {r['iterations']:,} | {r['nllh']:.4f} |"
                for r in sorted(runs, key=lambda r: r["epsilon"])
            )
            self.runs_md.object = (
                "| ε | mechanism | iterations | final test NLLH |\n|---|---|---|---|\n" + rows
            )
        # the figure after the text (a text changed after a figure was replaced in the
        # same batch makes BokehJS lay out a view that does not exist yet)
        self.binder.guard(self.refresh_curve)

    def refresh_noise(self) -> None:
        """The release's noise: drawn again only for a new release."""
        s = self.session
        nf = frames.noise_frame(s.data, s.mechanism, s.mechanism_obj)
        self.noise_note.visible = nf is None
        self.noise_hist.visible = self.noise_scatter.visible = nf is not None
        key = (s.version, s.mechanism) if nf is not None else None
        if nf is None or key == self._noise_key:
            return
        self._noise_key = key
        std = getattr(s.mechanism_obj, "std", float("nan"))
        pmf = getattr(s.mechanism_obj, "pmf", None)  # integer noise: its pmf
        noise, true, noisy = (nf[c].to_numpy() for c in ("noise", "true", "noisy"))
        sigmas = nf["sigma"].to_numpy() if "sigma" in nf else None  # (local: σ per count)
        figs = (
            lambda: privacy_plots.noise_histogram(
                noise, std, s.mechanism, pmf, sigmas=sigmas, records=int(s.data.n)
            ),
            lambda: privacy_plots.noisy_vs_true(true, noisy),
        )
        for pane, build in zip((self.noise_hist, self.noise_scatter), figs, strict=True):
            pane.object = static_figure(build, height=380)
