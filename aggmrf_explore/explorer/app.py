"""The explorer's view: controls and layout, composed around one session store.

``build_app()`` returns the servable template (``panel serve apps/explorer.py``);
``Explorer()`` displays inline in Jupyter (``Explorer().to_ipywidget()`` for ipywidgets);
``Explorer(session=s)`` shows a store ``s`` that is loaded already (notebooks).

The parts it composes: the session store (``store.py``: settings with declared bounds,
trainer, run loop), the shared data (``problems.py``, ``caches.py``), the process runtime
(``runtime.py``: kernel warm-up, worker threads, memory), and the live figures
(``liveplots.py``, drawn by the pure functions of ``plots.py``).  The view only reads
the store and calls its public methods.

Training runs in time-boxed ticks of a per-session periodic callback (period
``TICK_MS``; a tick trains for at most ``TICK_BUDGET`` of it), so the page never
freezes.  Line plots and the status line refresh every ``FAST_REFRESH`` s; the plots of
the visible tab's heavier views (predictions, d̂ vs d, table browser, XOR bars) every
``HEAVY_REFRESH`` s.  Data preparation and the slow baselines run in worker threads
while a busy indicator shows; the numba kernels are compiled (or loaded from numba's
cache) once per process, in a background thread started when the first page is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
import warnings

import holoviews as hv
import numpy as np
import panel as pn

from . import plots, runtime
from .liveplots import LivePlot, XorPlot, static_figure
from .problems import (
    CHEAP_BASELINES,
    SLOW_BASELINES,
    get_baselines,
    get_problem,
    peek_baselines,
    peek_problem,
    register_upload,
    upload_columns,
)
from .store import DATA_KEYS, URL_KEYS, ExplorerSession, error_message

__all__ = ["Explorer", "build_app", "frozen_document", "TICK_MS", "TICK_BUDGET"]

TICK_MS = 100
TICK_BUDGET = 0.08  # seconds of training per tick (80 % of the period)
FAST_REFRESH = 0.5
HEAVY_REFRESH = 2.0
SMALL_DATASETS = ("toy", "xor", "synthetic")  # all baselines fitted with the data (< 3 s)
BASELINE_GROUPS = (CHEAP_BASELINES, SLOW_BASELINES)
WARM_WAIT = 10.0  # seconds the server's first page waits for the kernels and default data


DATASET_LABELS = {
    "Toy — the paper's Table 1": "toy",
    "XOR counterexample": "xor",
    "Synthetic (random MRF)": "synthetic",
    "Adult (census income)": "adult",
    "Bank marketing": "bank",
    "Upload a CSV…": "upload",
}
PRESETS = {
    "— choose a preset —": None,
    "XOR counterexample (max-ent fails)": {"dataset": "xor", "mechanism": "none"},
    "Adult, paper settings (n' = 10 000)": {
        "dataset": "adult",
        "mechanism": "none",
        "n_gibbs": 10_000,
        "auto_defaults": True,
    },
    "Adult, Gaussian noise ε = 1, δ = 1e-7": {
        "dataset": "adult",
        "mechanism": "gaussian",
        "epsilon": 1.0,
        "delta": 1e-7,
    },
    "Toy Table 1, exact-size sampler": {"dataset": "toy", "mechanism": "none", "n_gibbs": 1000},
    "True gradient instead of rescaled": {"gradient": "true"},
}

CSS = """
.aggmrf-error { color: #b00020; font-size: 12px; margin-top: -6px; }
.aggmrf-status { font-size: 15px; font-weight: 600; }
.aggmrf-explain { font-size: 12.5px; color: #444; }
"""


def _log_grid(lo_exp: int, hi_exp: int, mantissas=(1, 2, 5), zero: bool = False) -> list[float]:
    vals = [0.0] if zero else []
    for e in range(lo_exp, hi_exp + 1):
        vals += [m * 10.0**e for m in mantissas if m * 10.0**e <= 10.0**hi_exp]
    return vals


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
    return f"{v:.4g}"


def prefetch_default_data() -> None:
    """Cache the first screen's data and baselines (run by the warm-up thread)."""
    bundle = get_problem("toy", None, 0, None, True, True)
    get_baselines(bundle, CHEAP_BASELINES)
    get_baselines(bundle, SLOW_BASELINES)
    runtime.log("default data prefetched")


def _slow_baselines(bundle):
    runtime.lower_priority()
    return get_baselines(bundle, SLOW_BASELINES)


class Explorer(pn.viewable.Viewer):
    """The explorer for one session: controls, live plots, training loop.

    ``Explorer()`` displays inline in Jupyter; ``Explorer().template()`` is the served page.
    ``sync_url`` mirrors the settings in the page URL (served apps only).
    """

    def __init__(
        self,
        session: ExplorerSession | None = None,
        sync_url: bool = True,
        load_now: bool = False,
        **settings,
    ):
        super().__init__()
        self.session = session or ExplorerSession(lazy=True, **settings)
        self.session.set_loader(self._schedule_load)
        self._syncing = False
        self._callback = None
        self._last_fast = 0.0
        self._last_heavy = 0.0
        self._good_data = {k: getattr(self.session, k) for k in DATA_KEYS}
        self._loaded = False
        self._build_widgets()
        self._build_plots()
        self._build_layout()
        if sync_url:
            self._sync_url()
        if self.session.bundle is not None and not self.session.busy:
            # a session its owner loaded already (a notebook): draw it now, nothing to wait for
            self._loaded = True
            self._after_new_data()
        elif not (load_now and self._load_now()):
            pn.state.onload(self._on_load)
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            doc.on_session_destroyed(self._on_destroyed)
            runtime.SESSIONS.add(self)

    def _on_destroyed(self, session_context) -> None:
        """The browser tab closed: stop training and drop the per-session trainer."""
        runtime.RUNNING.discard(self)
        cb, self._callback = self._callback, None
        if cb is not None:
            try:
                cb.stop()
            except Exception:  # noqa: BLE001 - the document may already be gone
                pass
        self.session.close()
        runtime.SESSIONS.discard(self)
        runtime.log(f"session closed ({len(runtime.SESSIONS)} open)")
        runtime.release_memory_soon()

    # ------------------------------------------------------------------ widgets
    def _bind(self, name: str, widget, to_w=None, from_w=None, prop: str = "value"):
        to_w = to_w or (lambda v: v)
        from_w = from_w or (lambda v: v)

        def on_widget(event):
            if self._syncing:
                return
            self._guard(lambda: self.session.propose(name, from_w(event.new)))

        def on_session(event):
            self._syncing = True
            try:
                setattr(widget, prop, to_w(event.new))
            except Exception:  # noqa: BLE001 - a display mismatch must never break the page
                pass
            finally:
                self._syncing = False

        widget.param.watch(on_widget, prop)
        self.session.param.watch(on_session, name)
        self._syncing = True
        try:
            setattr(widget, prop, to_w(getattr(self.session, name)))
        finally:
            self._syncing = False
        err = pn.pane.Markdown("", css_classes=["aggmrf-error"], visible=False, margin=(0, 10))
        self._error_panes[name] = err
        return pn.Column(
            widget,
            err,
            margin=0,
            sizing_mode="stretch_width",
            css_classes=[f"aggmrf-control-{name}"],  # stable hooks for the browser tests
        )

    def _log_slider(self, name: str, label: str, grid: list[float]):
        opts = {_fmt(v): v for v in grid}
        w = pn.widgets.DiscreteSlider(label=label, options=opts, sizing_mode="stretch_width")

        def to_w(v):
            if v not in w.values:
                opts2 = dict(sorted({**w.options, _fmt(v): v}.items(), key=lambda kv: kv[1]))
                w.options = opts2
            return v

        return self._bind(name, w, to_w=to_w)

    def _build_widgets(self) -> None:
        s = self.session
        self._error_panes: dict[str, pn.pane.Markdown] = {}
        sw = dict(sizing_mode="stretch_width")
        # run controls
        self.play_button = pn.widgets.Button(label="▶ Play", color="success", **sw)
        self.step_button = pn.widgets.Button(label="Step", color="primary", **sw)
        self.reset_button = pn.widgets.Button(label="Reset", color="warning", **sw)
        self.play_button.on_click(lambda e: self._guard(self._toggle))
        self.step_button.on_click(lambda e: self._guard(self._step))
        self.reset_button.on_click(lambda e: self._guard(self._reset))
        self.status = pn.pane.Markdown(
            "loading…", css_classes=["aggmrf-status"], sizing_mode="stretch_width", margin=(5, 10)
        )
        loading = s.bundle is None or s.busy
        self.spinner = pn.indicators.LoadingSpinner(
            value=loading,
            visible=loading,
            size=28,
            label="preparing data…" if loading else "",
            margin=(5, 10),
            css_classes=["aggmrf-spinner"],
        )
        self.notice = pn.pane.Alert("", alert_type="info", visible=False, **sw)
        self.message = pn.pane.Alert("", alert_type="danger", visible=False, **sw)
        self.preset = pn.widgets.Select(label="Preset", options=list(PRESETS), **sw)
        self.preset.param.watch(lambda e: self._guard(lambda: self._apply_preset(e.new)), "value")
        # data
        labels = {v: k for k, v in DATASET_LABELS.items()}
        self.w_dataset = pn.widgets.Select(label="Dataset", options=DATASET_LABELS, **sw)
        self.w_n = pn.widgets.IntInput(label="Sample size n (per split)", value=s.n_samples, **sw)
        self.w_seed = pn.widgets.IntInput(label="Seed", value=s.data_seed, **sw)
        self.regenerate = pn.widgets.Button(label="Regenerate data", **sw)
        self.regenerate.on_click(lambda e: self._guard(self._regenerate))
        self.w_upload = pn.widgets.FileInput(accept=".csv", **sw)
        self.w_upload.param.watch(lambda e: self._guard(lambda: self._on_upload(e.new)), "value")
        self.w_label = pn.widgets.Select(label="Label column", options=[""], **sw)
        self.w_features = pn.widgets.MultiChoice(
            label="Features (empty = all)", options=[], placeholder="all features", **sw
        )
        self.w_singles = pn.widgets.Checkbox(label="single-feature tables")
        self.w_pairs = pn.widgets.Checkbox(label="pair tables")
        del labels
        # privacy
        self.w_mech = pn.widgets.RadioButtonGroup(
            label="Mechanism",
            options={"none": "none", "Laplace": "laplace", "Gaussian": "gaussian"},
        )
        self.w_acc = pn.widgets.Select(
            label="Accounting",
            options={"counts and label sums (2T)": "both", "T queries (paper)": "queries"},
            **sw,
        )
        self.w_cal = pn.widgets.Select(
            label="Gaussian calibration",
            options={
                "analytic (Balle & Wang)": "analytic",
                "classic": "classic",
                "AdKDD'21": "adkdd21",
            },
            **sw,
        )
        self.sigma = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.w_aware = pn.widgets.Checkbox(label="noise-aware training (MRF-N)")
        # training
        self.w_gibbs = pn.widgets.IntInput(label="Gibbs samples n'", step=1000, **sw)
        self.w_auto = pn.widgets.Checkbox(label="default rule for λ and α (α = 1/T, λ_θ = T/2)")
        self.w_step_mu = pn.widgets.FloatInput(label="step α_μ", step=0.01, format="0.0000", **sw)
        self.w_step_theta = pn.widgets.FloatInput(
            label="step α_θ", step=0.01, format="0.0000", **sw
        )
        self.w_grad = pn.widgets.RadioButtonGroup(
            label="Gradient", options={"rescaled (paper)": "rescaled", "true": "true"}
        )
        self.w_precond = pn.widgets.Checkbox(label="preconditioning (diagonal Hessian)")
        self.w_ipt = pn.widgets.IntSlider(label="Max iterations per tick", start=1, end=200, **sw)
        # downloads
        self.dl_settings = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(self.session.settings_json()),
            filename="aggmrf_settings.json",
            label="Download settings (JSON)",
            **sw,
        )
        self.dl_history = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(self.session.history_csv()),
            filename="aggmrf_history.csv",
            label="Download history (CSV)",
            **sw,
        )
        b = self._bind
        self.c_dataset = b("dataset", self.w_dataset)
        self.c_n = b("n_samples", self.w_n)
        self.c_seed = b("data_seed", self.w_seed)
        self.c_label = b("label_column", self.w_label)
        self.c_features = b("features", self.w_features)
        self.c_singles = b("singles", self.w_singles)
        self.c_pairs = b("pairs", self.w_pairs)
        self.c_mech = b("mechanism", self.w_mech)
        self.c_eps = self._log_slider("epsilon", "privacy budget ε (log scale)", _log_grid(-2, 2))
        self.c_delta = self._log_slider("delta", "δ (log scale)", _log_grid(-12, -2, (1,)))
        self.c_acc = b("accounting", self.w_acc)
        self.c_cal = b("calibration", self.w_cal)
        self.c_aware = b("noise_aware", self.w_aware)
        self.c_gibbs = b("n_gibbs", self.w_gibbs)
        self.c_auto = b("auto_defaults", self.w_auto)
        self.c_lmu = self._log_slider(
            "lambda_mu", "λ_μ (L2 on μ, log scale)", _log_grid(-2, 3, zero=True)
        )
        self.c_ltheta = self._log_slider(
            "lambda_theta", "λ_θ (L2 on θ, log scale)", _log_grid(-2, 4, zero=True)
        )
        self.c_step_mu = b("step_mu", self.w_step_mu)
        self.c_step_theta = b("step_theta", self.w_step_theta)
        self.c_grad = b("gradient", self.w_grad)
        self.c_precond = b("precondition", self.w_precond)
        self.c_ipt = b("iters_per_tick", self.w_ipt)
        s.param.watch(self._show_errors, "errors")
        # multi-parameter watchers get one event per changed parameter (a URL restore
        # changes several at once): they take *events
        s.param.watch(self._on_dataset_visibility, ["dataset", "mechanism"])
        s.param.watch(
            lambda *events: self._refresh_sigma(), ["epsilon", "delta", "accounting", "mechanism"]
        )
        s.param.watch(self._on_notice, "notice")
        s.param.watch(self._on_busy, "busy")
        s.param.watch(self._on_version, "version")
        s.param.watch(self._on_running, "running")

    # ------------------------------------------------------------------ plots
    def _build_plots(self) -> None:
        self.p_nllh = LivePlot(plots.nllh_plot, plots.nllh_data)
        self.p_conv = LivePlot(plots.convergence_plot, plots.convergence_data)
        self.p_pred = LivePlot(plots.predictions_plot, plots.predictions_data)
        self.p_dhat = LivePlot(plots.dhat_scatter, plots.dhat_data)
        self.p_xor = XorPlot(height=420)
        self.noise_hist = pn.pane.Bokeh(sizing_mode="stretch_width", height=380)
        self.noise_scatter = pn.pane.Bokeh(sizing_mode="stretch_width", height=380)
        self._noise_key = None
        self.table_select = pn.widgets.Select(label="Table", options=[], width=320)
        self.table_view = pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            pagination="local",
            page_size=15,
            sizing_mode="stretch_width",
            height=470,
            layout="fit_data_stretch",
        )
        self._bind("table", self.table_select)
        self.session.param.watch(lambda e: self._guard(self._on_table), "table")

    def _explain(self, key: str):
        return pn.pane.Markdown(
            plots.EXPLAIN[key],
            css_classes=["aggmrf-explain"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )

    def _build_layout(self) -> None:
        s = self.session
        self.run_box = pn.Column(
            pn.Row(
                self.play_button, self.step_button, self.reset_button, sizing_mode="stretch_width"
            ),
            self.preset,
            sizing_mode="stretch_width",
        )
        self.data_card = pn.Card(
            self.c_dataset,
            self.w_upload,
            self.c_label,
            self.c_n,
            self.c_seed,
            self.regenerate,
            self.c_features,
            pn.pane.Markdown("**Released tables**", margin=(0, 10)),
            self.c_singles,
            self.c_pairs,
            title="Data",
            sizing_mode="stretch_width",
        )
        self.privacy_card = pn.Card(
            self.c_mech,
            self.c_eps,
            self.c_delta,
            self.c_acc,
            self.c_cal,
            self.sigma,
            self.c_aware,
            title="Privacy",
            sizing_mode="stretch_width",
            collapsed=False,
        )
        self.train_card = pn.Card(
            self.c_gibbs,
            self.c_auto,
            self.c_lmu,
            self.c_ltheta,
            self.c_step_mu,
            self.c_step_theta,
            self.c_grad,
            self.c_precond,
            self.c_ipt,
            title="Training",
            sizing_mode="stretch_width",
        )
        self.dl_card = pn.Card(
            self.dl_settings,
            self.dl_history,
            pn.pane.Markdown(
                "The page URL holds every setting: copy it to share this configuration.",
                margin=(0, 10),
            ),
            title="Save & share",
            sizing_mode="stretch_width",
            collapsed=True,
        )
        self.sidebar = pn.Column(
            self.run_box, self.data_card, self.privacy_card, self.train_card, self.dl_card,
            sizing_mode="stretch_width",
        )  # fmt: skip
        self.status_bar = pn.Row(self.spinner, self.status, sizing_mode="stretch_width")
        grid = pn.GridBox(
            pn.Column(self.p_nllh.pane, self._explain("nllh"), sizing_mode="stretch_width"),
            pn.Column(self.p_pred.pane, self._explain("predictions"), sizing_mode="stretch_width"),
            pn.Column(self.p_conv.pane, self._explain("convergence"), sizing_mode="stretch_width"),
            pn.Column(self.p_dhat.pane, self._explain("dhat"), sizing_mode="stretch_width"),
            ncols=2,
            sizing_mode="stretch_width",
        )
        self.xor_note = pn.pane.Alert(
            "Choose the **XOR counterexample** dataset (or the XOR preset) to see this comparison.",
            alert_type="secondary",
            sizing_mode="stretch_width",
        )
        self.noise_note = pn.pane.Alert(
            "No noise: choose the Laplace or Gaussian mechanism in the Privacy controls.",
            alert_type="secondary",
            sizing_mode="stretch_width",
        )
        self.tabs = pn.Tabs(
            ("Training", grid),
            (
                "Tables",
                pn.Column(
                    self._explain("tables"),
                    self.table_select,
                    self.table_view,
                    sizing_mode="stretch_width",
                ),
            ),
            (
                "Privacy",
                pn.Column(
                    self._explain("privacy"),
                    self.noise_note,
                    pn.Row(self.noise_hist, self.noise_scatter, sizing_mode="stretch_width"),
                    sizing_mode="stretch_width",
                ),
            ),
            (
                "XOR",
                pn.Column(
                    self.xor_note,
                    self.p_xor.pane,
                    self._explain("xor"),
                    sizing_mode="stretch_width",
                ),
            ),
            dynamic=True,
            sizing_mode="stretch_width",
        )
        self.tabs.param.watch(self._on_tab, "active")
        self.main = pn.Column(
            self.status_bar, self.notice, self.message, self.tabs, sizing_mode="stretch_width"
        )
        self._on_dataset_visibility()
        del s

    def __panel__(self):
        return pn.Row(
            pn.Column(self.sidebar, width=340),
            self.main,
            sizing_mode="stretch_width",
            stylesheets=[CSS],
        )

    def template(self):
        """The served page: a BootstrapTemplate (no external fonts) with the controls in the sidebar."""
        tmpl = pn.template.BootstrapTemplate(
            title="aggmrf explorer — learning a logistic model from aggregated tables",
            sidebar=[self.sidebar],
            main=[self.main],
            sidebar_width=350,
            raw_css=[CSS],
            header_background="#1f4e79",
        )
        return tmpl

    def to_ipywidget(self):
        """The explorer as an ipywidgets.Widget (needs jupyter_bokeh)."""
        return pn.ipywidget(self.__panel__())

    # ------------------------------------------------------------------ URL
    def _sync_url(self) -> None:
        loc = pn.state.location
        if loc is None or pn.state.curdoc is None:
            return
        try:
            loc.sync(self.session, {k: k for k in URL_KEYS}, on_error=self._url_error)
        except Exception as exc:  # noqa: BLE001
            self._show_message(f"could not read the settings in the URL: {error_message(exc)}")

    def _url_error(self, values) -> None:
        self._show_message(f"ignored invalid settings in the URL: {values}")

    # ------------------------------------------------------------------ event helpers
    def _guard(self, fn):
        """Run a callback; any exception becomes a visible message, never a traceback."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            self._show_message(error_message(exc))
            return None

    def _show_message(self, text: str) -> None:
        self.message.object = text
        self.message.visible = bool(text)

    def _show_errors(self, event=None) -> None:
        errs = self.session.errors
        for name, pane in self._error_panes.items():
            msg = errs.get(name, "")
            pane.object = f"⚠ {msg}" if msg else ""
            pane.visible = bool(msg)

    def _on_notice(self, event) -> None:
        self.notice.object = event.new
        self.notice.visible = bool(event.new)

    def _on_busy(self, event) -> None:
        self.spinner.value = bool(event.new)
        self.spinner.visible = bool(event.new)
        self.spinner.label = "preparing data…" if event.new else ""
        for btn in (self.play_button, self.step_button, self.reset_button):
            btn.disabled = bool(event.new)
        self.session.update_status()
        self.status.object = self.session.status

    def _on_running(self, event) -> None:
        self.play_button.label = "❚❚ Pause" if event.new else "▶ Play"
        self.play_button.color = "danger" if event.new else "success"
        if event.new:
            runtime.RUNNING.add(self)
            self._ensure_callback()
            return
        runtime.RUNNING.discard(self)
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
            self._refresh_all()

    def _on_dataset_visibility(self, *events) -> None:
        s = self.session
        ds = s.dataset
        self.w_upload.visible = self.c_label.visible = ds == "upload"
        self.c_n.visible = ds in ("xor", "synthetic")
        self.c_seed.visible = ds in ("xor", "synthetic", "adult", "bank", "upload")
        self.regenerate.visible = ds in ("xor", "synthetic")
        noisy = s.mechanism != "none"
        self.c_eps.visible = self.c_acc.visible = self.c_aware.visible = noisy
        self.c_delta.visible = self.c_cal.visible = s.mechanism == "gaussian"
        self._refresh_sigma()

    def _refresh_sigma(self) -> None:
        s = self.session
        if s.bundle is None or s.mechanism == "none":
            self.sigma.object = "No noise: the learner sees the exact tables."
            return
        try:
            nums = s.noise_numbers()
        except Exception as exc:  # noqa: BLE001
            self.sigma.object = f"⚠ {error_message(exc)}"
            return
        lines = [
            f"T = {nums['T']} released tables · Δ₁ = {nums['l1_sensitivity']:g}, "
            f"Δ₂ = {nums['l2_sensitivity']:.3g}"
        ]
        if s.mechanism == "laplace":
            lines.append(
                f"**Laplace** scale b = {nums['laplace_scale']:.3g}, noise std = **{nums['laplace_std']:.3g}** records"
            )
        else:
            classic = nums["sigma_classic"]
            note = "" if nums["classic_valid"] else " (not valid for ε > 1)"
            lines.append(
                f"**Gaussian σ**: analytic **{nums['sigma_analytic']:.3g}** · classic "
                f"{classic:.3g}{note} · AdKDD'21 {nums['sigma_adkdd21']:.3g} records"
            )
        self.sigma.object = "  \n".join(lines)

    # ------------------------------------------------------------------ loading
    def _load_now(self) -> bool:
        """Load and draw now if the kernels are ready and the data and every baseline cached.

        Then the first page already shows the plots and "iteration 0": no second round of
        drawing after the page has rendered.  Otherwise (returns False) the data load
        asynchronously once the page is shown, behind the busy indicator.
        """
        s = self.session
        # the server's first page: nothing can train before the kernels are loaded,
        # so wait (briefly) for them and the default data, and send the page drawn
        runtime.wait_for_warm_up(WARM_WAIT)
        if not runtime.kernels_ready() or s.bundle is not None:
            return False
        bundle = peek_problem(**s.data_key())
        if bundle is None or any(peek_baselines(bundle, w) is None for w in BASELINE_GROUPS):
            return False
        try:
            s.load(bundle)
        except Exception:  # noqa: BLE001 - the asynchronous load reports it on the page
            return False
        self._good_data = {k: getattr(s, k) for k in DATA_KEYS}
        self._loaded = True
        self._after_new_data()
        runtime.log(f"{s.dataset} loaded from the caches and drawn with the page")
        return True

    def _on_load(self) -> None:
        """First render: wait for the kernels (warm-up thread), then load the data (async)."""
        self.session.busy = True
        pn.state.execute(self._initial_load)

    async def _initial_load(self) -> None:
        if not runtime.kernels_ready():
            runtime.warm_up_in_background(prefetch_default_data)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(runtime.DATA_EXECUTOR, self._guard, runtime.warm_up_once)
        await self._load_async("")

    def _schedule_load(self, notice: str) -> None:
        if not self._loaded:
            return  # the initial load reads the current settings
        self.session.busy = True
        self.session.notice = notice  # "…: data are being prepared, training restarts."
        notice = notice.replace(
            "data are being prepared, training restarts", "new data loaded, training restarted"
        )

        async def run() -> None:
            await self._load_async(notice)

        pn.state.execute(run)

    async def _load_async(self, notice: str) -> None:
        s = self.session
        loop = asyncio.get_running_loop()
        s.busy = True
        wanted = {k: getattr(s, k) for k in DATA_KEYS}
        small = s.dataset in SMALL_DATASETS

        def work():
            bundle = s.fetch()
            get_baselines(bundle, CHEAP_BASELINES)
            if small:  # a few seconds at most, cached on disk: have the skyline at once
                get_baselines(bundle, SLOW_BASELINES)
            return bundle

        t0 = time.perf_counter()
        try:
            bundle = await loop.run_in_executor(runtime.DATA_EXECUTOR, work)
            runtime.log(f"{s.dataset} data ready in {time.perf_counter() - t0:.2f} s")
            if {k: getattr(s, k) for k in DATA_KEYS} != wanted:
                return  # settings changed meanwhile; a newer load is under way
            s.load(bundle, notice=notice)
            self._good_data = wanted
            self._loaded = True
            self._show_message("")
            names = [k for k in DATA_KEYS if k in s.errors]
            if names:
                s.errors = {k: v for k, v in s.errors.items() if k not in names}
        except Exception as exc:  # noqa: BLE001
            msg = error_message(exc)
            changed = [k for k in DATA_KEYS if getattr(s, k) != self._good_data.get(k)]
            s.restore({k: self._good_data[k] for k in changed})
            s.errors = {**s.errors, **{k: msg for k in changed or ["dataset"]}}
            self._show_message(msg)
            self._loaded = True
            s.busy = False
            if s.bundle is None and changed:
                await self._load_async("")
            return
        finally:
            if s.bundle is not None:
                s.busy = False
        self._after_new_data()
        runtime.log(f"{s.dataset} loaded and drawn in {time.perf_counter() - t0:.2f} s")
        if not all(k in s.baselines for k in SLOW_BASELINES):
            # large data: the skyline logistic fits in a niced worker thread (cached on disk)
            try:
                res = await loop.run_in_executor(runtime.SLOW_EXECUTOR, _slow_baselines, bundle)
            except Exception as exc:  # noqa: BLE001
                self._show_message(f"the logistic baselines failed: {error_message(exc)}")
                return
            if s.bundle is bundle:
                s.add_baselines(res)
                self._refresh_all()

    def _after_new_data(self) -> None:
        s = self.session
        b = s.bundle
        self._syncing = True
        try:
            self.table_select.options = list(b.layout.table_names)
            self.table_select.value = s.table
            self.w_features.options = list(b.all_features)
            self.w_features.value = list(s.features)
            if s.dataset == "upload" and s.upload_hash:
                self.w_label.options = [""] + upload_columns(s.upload_hash)
                self.w_label.value = s.label_column
        finally:
            self._syncing = False
        self._on_dataset_visibility()
        self._on_version()

    # ------------------------------------------------------------------ run loop
    def _ensure_callback(self) -> None:
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self._tick, period=TICK_MS)

    def _tick(self) -> None:
        """One slice: train ≤ TICK_BUDGET / (sessions training), then maybe refresh.

        The sessions of a server share its event loop, so the budget and the refresh
        rate are divided among the sessions training now: the loop stays ~20 % idle
        (clicks and slider moves are handled within a tick) however many there are.
        """
        s = self.session
        n = max(len(runtime.RUNNING), 1)
        try:
            s.tick(TICK_BUDGET / n)
        except Exception as exc:  # noqa: BLE001
            s.running = False
            self._show_message(f"training stopped: {error_message(exc)}")
        now = time.monotonic()
        with pn.io.hold():
            if now - self._last_fast >= FAST_REFRESH * n:
                self._guard(self._refresh_fast)
            elif now - self._last_heavy >= HEAVY_REFRESH * n:
                self._guard(self._refresh_heavy)  # never both in one tick

    def _toggle(self) -> None:
        self.session.toggle()

    def _step(self) -> None:
        s = self.session
        if s.running:
            s.pause()
        s.step(1)
        self._refresh_all()

    def _reset(self) -> None:
        self.session.reset()

    def _regenerate(self) -> None:
        s = self.session
        n, seed = self.w_n.value, self.w_seed.value
        if n == s.n_samples and seed == s.data_seed:
            seed = int(seed or 0) + 1
        err = s.propose("n_samples", n)
        if err is None:
            s.propose("data_seed", seed)

    def _apply_preset(self, name: str) -> None:
        values = PRESETS.get(name)
        if not values:
            return
        s = self.session
        for k, v in values.items():
            msg = s.propose(k, v)
            if msg:
                self._show_message(f"preset {name!r}: {msg}")
                break
        self._syncing = True
        try:
            self.preset.value = next(iter(PRESETS))
        finally:
            self._syncing = False

    def _on_upload(self, data: bytes | None) -> None:
        if not data:
            return
        h = register_upload(data)
        cols = upload_columns(h)
        self.w_label.options = [""] + cols
        was_upload = self.session.dataset == "upload"
        self.session.use_upload(h)
        if not was_upload:
            self._on_dataset_visibility()

    # ------------------------------------------------------------------ refresh
    def _on_version(self, event=None) -> None:
        """A new trainer (new data, noise or n'): redraw everything."""
        if self.session.bundle is None:
            return
        with pn.io.hold():
            self._refresh_fast()
            self._guard(self._refresh_heavy)
            self._guard(self._refresh_static)

    def _refresh_all(self) -> None:
        with pn.io.hold():
            self._refresh_fast()
            self._guard(self._refresh_heavy)

    def _on_table(self) -> None:
        if self.session.trainer is not None and self.tabs.active == 1:
            self._show_table()

    def _show_table(self) -> None:
        """The chosen table into the Tabulator (Bokeh's DataFrame conversion still calls
        ``reset_index(inplace=True)``, which pandas flags as deprecated: not ours to fix)."""
        frame = self.session.table_view().round(2)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*inplace keyword in DataFrame.reset_index")
            self.table_view.value = frame

    def _on_tab(self, event=None) -> None:
        """A tab became visible: bring its views up to date now."""
        with pn.io.hold():
            self._guard(self._refresh_heavy)

    def _refresh_fast(self) -> None:
        """Status line and the two line plots (cheap: new arrays into existing sources)."""
        self._last_fast = time.monotonic()
        s = self.session
        s.update_status()
        self.status.object = s.status
        if s.trainer is None:
            return
        if self.tabs.active == 0:
            h = s.history()
            self.p_nllh.update({"history": h, "references": s.references()})
            self.p_conv.update({"history": h, "floor": s.floor})

    def _refresh_heavy(self) -> None:
        """The visible tab's heavier views (predictions, d̂ vs d, table, XOR bars)."""
        self._last_heavy = time.monotonic()
        s = self.session
        if s.trainer is None:
            return
        tab = self.tabs.active
        if tab == 0:
            pred = s.predictions()
            has_log = bool(np.isfinite(pred["logistic"].to_numpy(float)).any())
            mode = plots.predictions_mode(len(pred), has_log)
            self.p_pred.update({"frame": pred, "mode": mode}, key=mode)
            dh = s.dhat_frame()
            self.p_dhat.update({"frame": dh, "iteration": s.iteration}, key=plots.dhat_kinds(dh))
        elif tab == 1:
            self._show_table()
        elif tab == 3:
            xf = s.xor_frame()
            self.xor_note.visible = xf is None
            self.p_xor.pane.visible = xf is not None
            if xf is not None:
                self.p_xor.update({"frame": xf}, key=tuple(xf["state"]))

    def _refresh_static(self) -> None:
        """What changes only with a new release: the privacy views and σ."""
        s = self.session
        nf = s.noise_frame()
        self.noise_note.visible = nf is None
        self.noise_hist.visible = self.noise_scatter.visible = nf is not None
        key = (s.version, s.mechanism) if nf is not None else None
        if nf is not None and key != self._noise_key:
            self._noise_key = key
            std = getattr(s.mechanism_obj, "std", float("nan"))
            figs = (
                plots.noise_histogram(nf["noise"].to_numpy(), std, s.mechanism),
                plots.noisy_vs_true(nf["true"].to_numpy(), nf["noisy"].to_numpy()),
            )
            for pane, obj in zip((self.noise_hist, self.noise_scatter), figs, strict=True):
                pane.object = static_figure(obj, height=380)
        self._refresh_sigma()


@contextlib.contextmanager
def frozen_document():
    """Defer the session document's model bookkeeping to the end of the block.

    Bokeh re-walks every model of a document each time one is added or gets a JS
    callback (~0.15 s for the explorer's ~400 models, a dozen times while the page is
    built); inside this block it does so once, at the end.
    """
    doc = pn.state.curdoc
    with doc.models.freeze() if doc is not None else contextlib.nullcontext():
        yield


def build_app() -> pn.viewable.Viewable:
    """The served explorer page (one Explorer per browser session)."""
    t0 = time.perf_counter()
    # first page: loads the kernels (and caches the default data) while the page is built
    runtime.warm_up_in_background(prefetch_default_data)
    pn.extension("tabulator", notifications=False)
    hv.extension("bokeh", logo=False)
    page = Explorer(load_now=True).template()
    runtime.log(f"session page built in {time.perf_counter() - t0:.2f} s")
    return page
