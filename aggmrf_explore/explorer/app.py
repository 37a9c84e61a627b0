"""The explorer's view: controls and layout, composed around one session store.

``Explorer().template()`` is the served page (``serve.build_app``); ``Explorer()`` displays
inline in Jupyter (``Explorer().to_ipywidget()`` for ipywidgets);
``Explorer(session=s)`` shows a store ``s`` that is loaded already (notebooks).

The parts it composes: the session store (``store.py``: settings with declared bounds,
trainer, run loop), the shared data (``problems.py``, ``caches.py``), the process runtime
(``runtime.py``: kernel warm-up, worker threads, memory), and the live figures
(``liveplots.py``, drawn by the pure functions of ``plots.py``).  The view only reads
the store and calls its public methods.

Training runs in slices of at most ``SLICE_SECONDS`` in the server's pool of training
threads (``runtime.TRAINING``, one per core, shared by every session), never on the event
loop: each training session loops (a coroutine on the event loop) "queue a slice, wait
for it, refresh the page if due", at most one slice per ``TICK_MS`` period.  Line plots and
the status line refresh every ``FAST_REFRESH`` s, the plots of the visible tab's heavier
views (predictions, d̂ vs d, table browser, XOR bars) every ``HEAVY_REFRESH`` s; with more
sessions training than cores both stretch, up to ``MAX_FAST_REFRESH`` and
``MAX_HEAVY_REFRESH`` (:func:`refresh_intervals`).  Data preparation and the slow baselines run in worker threads
while a busy indicator shows; the numba kernels are compiled (or loaded from numba's
cache) once per process, in a background thread started when the first page is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from concurrent.futures import CancelledError

import numpy as np
import panel as pn

from ..tables.suppression import suppressed_cells, suppression_check
from . import plots, runtime, suppression_view, url
from .caches import UPLOAD_MAX_BYTES, format_bytes
from .checkbox import LabeledCheckbox
from .escape import escape_html, escape_markdown
from .help import EXPLAIN, help_for, tab_note, with_help
from .lesson import hidden_groups, lesson_link, parse_lesson
from .liveplots import LivePlot, XorPlot, static_figure
from .noise_text import noise_summary
from .page_fixes import page_script
from .problems import (
    CHEAP_BASELINES,
    SLOW_BASELINES,
    get_baselines,
    get_problem,
    peek_baselines,
    peek_problem,
    register_upload,
    upload_columns,
    upload_name,
)
from .settle import Settle
from .shortcuts import Shortcuts
from .store import DATA_KEYS, URL_KEYS, ExplorerSession, baseline_names, error_message
from .table_view import TableBrowser
from .upload_widget import UploadPicker

__all__ = ["Explorer", "TICK_MS", "SLICE_SECONDS", "refresh_intervals"]

TICK_MS = 100  # a training session queues at most one slice per period
SLICE_SECONDS = 0.1  # the most one slice trains (then the page may refresh)
FAST_REFRESH = 0.5  # status line and line plots, seconds (one session per core)
HEAVY_REFRESH = 2.0  # the visible tab's heavier views
MAX_FAST_REFRESH = 1.5  # the longest they stretch to with many sessions training
MAX_HEAVY_REFRESH = 6.0
SMALL_DATASETS = ("toy", "xor", "synthetic")  # all baselines fitted with the data (< 3 s)
BASELINE_GROUPS = (CHEAP_BASELINES, SLOW_BASELINES)
WARM_WAIT = 0.0  # seconds the server's first page waits for the kernels and default data
COMPACT_ALERT = ":host { padding: 4px 12px !important; margin-bottom: 4px; } p { margin: 0; }"
DARK_INFO = "p, div { color: #055160; }"  # an info alert's text at 8:1 contrast, not 4.3:1
READABLE = ":host, p { font-size: 16px; } p { margin: 2px 0; }"  # status line and lesson: read on a projector
PLOT_HEIGHT = 236  # pixels per training plot (two rows fit 1280×720 with the header)


DATASET_LABELS = {
    "Toy — the paper's Table 1": "toy",
    "XOR counterexample": "xor",
    "Synthetic (random MRF)": "synthetic",
    "Criteo-shaped (small, suppressed)": "criteo",
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


# the banner shown when the websocket closes (the page can no longer talk to the server)
CONNECTION_LOST_JS = """
if (!document.getElementById('aggmrf-connection-lost')) {
  const b = document.createElement('div');
  b.id = 'aggmrf-connection-lost';
  b.setAttribute('role', 'alert');
  b.style.cssText = 'position:fixed;top:0;left:0;right:0;z-index:100000;padding:12px;' +
    'background:#b00020;color:#fff;font:600 16px sans-serif;text-align:center;';
  b.textContent = 'Connection to the server lost \u2014 reload the page to continue. ';
  const a = document.createElement('button');
  a.textContent = 'Reload';
  a.style.cssText = 'margin-left:12px;font:600 14px sans-serif;';
  a.onclick = () => window.location.reload();
  b.appendChild(a);
  document.body.appendChild(b);
}
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


def refresh_intervals(training: int, cores: int) -> tuple[float, float]:
    """Seconds between a session's fast and heavy refreshes when ``training`` sessions
    train on ``cores`` cores: ``FAST_REFRESH`` and ``HEAVY_REFRESH`` up to one session per
    core, stretched in proportion beyond (the refreshes of a class share the event loop),
    at most ``MAX_FAST_REFRESH`` and ``MAX_HEAVY_REFRESH``."""
    share = max(1.0, training / max(cores, 1))
    return (
        min(FAST_REFRESH * share, MAX_FAST_REFRESH),
        min(HEAVY_REFRESH * share, MAX_HEAVY_REFRESH),
    )


def prefetch_first_screen() -> None:
    """The first screen's data, quick baselines and trainer (a first start: before the
    compiler, which compiles one function at a time, holds the kernels they need)."""
    s = ExplorerSession(lazy=True, chain_build=runtime.chain_build)
    bundle = get_problem(**s.data_key())
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    s.load(bundle)  # (the rows and logits of the test records are kernels too)
    s.close()
    runtime.log("first screen's data prefetched")


def prefetch_default_data() -> None:
    """Cache the first screen's data and baselines (run by the warm-up thread)."""
    bundle = get_problem(**ExplorerSession(lazy=True).data_key())
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
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
        self.session = session or ExplorerSession(
            lazy=True, chain_build=runtime.chain_build, **settings
        )
        self.session.set_loader(self._schedule_load)
        self._syncing = False
        self._looping = False  # the training loop (a coroutine) is under way
        self._closed = False  # the server destroyed the session
        self._slice_lock = asyncio.Lock()  # one slice of this session at a time (Play, Step)
        self._slice_future = None  # the slice queued or under way in the training pool
        self._last_fast = 0.0
        self._last_heavy = 0.0
        self._good_data = {k: getattr(self.session, k) for k in DATA_KEYS}
        self._loaded = False
        # the served page starts light (:meth:`template`): its cards come once it is shown
        # (``_filled``), its tabs of plots once they are drawn (``_deferred_tabs``)
        self._filled = True
        self._deferred_tabs: list | None = None
        self._build_widgets()
        self._build_plots()
        self._build_layout()
        if sync_url:
            self._read_lesson()
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
            self._watch_connection(doc)
            runtime.SESSIONS.add(self)

    def _on_destroyed(self, session_context) -> None:
        """The browser tab closed: stop training and drop the per-session trainer (a
        slice under way ends by itself and is dropped)."""
        self._closed = True
        runtime.RUNNING.discard(self)
        self.session.close()
        runtime.SESSIONS.discard(self)
        runtime.log(f"session closed ({len(runtime.SESSIONS)} open)")
        runtime.release_memory_soon()

    # ------------------------------------------------------------------ widgets
    @contextlib.contextmanager
    def _hushed(self):
        """Widget changes made within are not proposed to the session (display only)."""
        self._syncing, was = True, self._syncing
        try:
            yield
        finally:
            self._syncing = was

    def _bind(self, name: str, widget, to_w=None, from_w=None, prop: str = "value", css=None):
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
        shown = with_help(widget, help_for(name))
        err = pn.pane.Markdown("", css_classes=["aggmrf-error"], visible=False, margin=(0, 10))
        # a setting may have two controls (ε: sidebar and Privacy tab): "name@k" keys
        key = name if name not in self._error_panes else f"{name}@{len(self._error_panes)}"
        self._error_panes[key] = err
        box = pn.Column(
            shown,
            err,
            margin=0,
            sizing_mode="stretch_width",
            # stable hooks for the browser tests
            css_classes=[css or f"aggmrf-control-{name}"],
        )
        self._control_boxes.setdefault(name, box)
        return box

    def _log_slider(self, name: str, label: str, grid: list[float], css=None):
        opts = {_fmt(v): v for v in grid}
        w = pn.widgets.DiscreteSlider(label=label, options=opts, sizing_mode="stretch_width")

        def to_w(v):
            if v not in w.values:
                opts2 = dict(sorted({**w.options, _fmt(v): v}.items(), key=lambda kv: kv[1]))
                w.options = opts2
            return v

        self._slider_of[css or name] = w
        return self._bind(name, w, to_w=to_w, css=css)

    def _build_widgets(self) -> None:
        s = self.session
        self._error_panes: dict[str, pn.pane.Markdown] = {}
        self._control_boxes: dict[str, pn.Column] = {}  # setting → its (first) control
        self._slider_of: dict[str, pn.widgets.DiscreteSlider] = {}  # log sliders by box
        sw = dict(sizing_mode="stretch_width")
        box = dict(margin=(4, 10), **sw)  # a checkbox: its text is its clickable label
        # run controls
        self.play_button = pn.widgets.Button(label="▶ Play", color="success", **sw)
        self.step_button = pn.widgets.Button(label="Step", color="primary", **sw)
        self.reset_button = pn.widgets.Button(label="Reset", color="warning", **sw)
        self.play_button.on_click(lambda e: self._guard(self._toggle))
        self.step_button.on_click(lambda e: self._guard(self._step))
        self.reset_button.on_click(lambda e: self._guard(self._reset))
        # after a divergence: continue from the last good state (the trainer rejected the
        # diverging step) with smaller steps, instead of Reset to iteration 0; shown under
        # the divergence warning (the header's run controls have no room left)
        self.continue_button = pn.widgets.Button(
            label="Continue from last good state", color="warning", width=280,
            visible=False, css_classes=["aggmrf-continue"], margin=(0, 10, 8, 10),
        )  # fmt: skip
        self.continue_button.on_click(lambda e: self._guard(self.session.resume))
        s.param.watch(lambda e: setattr(self.continue_button, "visible", bool(e.new)), "warning")
        self.status = pn.pane.Markdown(
            runtime.warm_up_message() or "loading…",  # first start: "compiling the sampler…"
            css_classes=["aggmrf-status"],
            stylesheets=[READABLE],
            sizing_mode="stretch_width",
            margin=(5, 10),
        )
        loading = s.bundle is None or s.busy
        self.spinner = pn.indicators.LoadingSpinner(
            value=loading,
            visible=loading,
            size=28,
            label=(runtime.warm_up_message() or "preparing data…") if loading else "",
            margin=(5, 10),
            css_classes=["aggmrf-spinner"],
        )
        compact = dict(stylesheets=[COMPACT_ALERT], margin=(0, 10))
        self.notice = pn.pane.Alert(
            "",
            alert_type="info",
            visible=False,
            css_classes=["aggmrf-notice"],
            stylesheets=[COMPACT_ALERT, DARK_INFO],
            margin=(0, 10),
            **sw,
        )
        self.warning = pn.pane.Alert(
            "", alert_type="warning", visible=False, css_classes=["aggmrf-warning"], **compact, **sw
        )
        self.lesson_banner = pn.pane.Alert(
            "",
            alert_type="primary",
            visible=False,
            css_classes=["aggmrf-lesson"],
            stylesheets=[COMPACT_ALERT, READABLE],
            margin=(0, 10),
            **sw,
        )
        # space = play / pause, → = step (not while typing in an input)
        self.shortcuts = Shortcuts(width=1, height=1, margin=0, sizing_mode="fixed")
        # (a lesson link that hides a run control also turns its key off)
        self.shortcuts.param.watch(lambda e: self._shortcut("play", self._toggle), "play")
        self.shortcuts.param.watch(lambda e: self._shortcut("step", self._step), "step")
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
        self.w_upload = UploadPicker(layout="compact", height=90, **sw)
        self.w_upload.param.watch(lambda e: self._guard(lambda: self._on_upload(e.new)), "value")
        self.w_upload.param.watch(lambda e: self._show_upload_refusal(e.new), "refused")
        self.upload_info = pn.pane.Markdown(
            f"CSV with a header line, up to **{format_bytes(UPLOAD_MAX_BYTES)}**; "
            "larger files are refused before sending.",
            css_classes=["aggmrf-upload-info"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )
        self.w_label = pn.widgets.Select(label="Label column", options=[""], **sw)
        self.w_features = pn.widgets.MultiChoice(
            label="Features (empty = all)", options=[], placeholder="choose features…", **sw
        )
        self.w_singles = LabeledCheckbox(label="single-feature tables", **box)
        self.w_pairs = LabeledCheckbox(label="pair tables", **box)
        del labels
        # privacy
        self.w_mech = pn.widgets.RadioButtonGroup(
            label="Mechanism",
            options={
                "none": "none",
                "Laplace": "laplace",
                "Gaussian": "gaussian",
                "Local": "local",  # (randomized response; a longer label widens the sidebar)
            },
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
        self.w_aware = LabeledCheckbox(label="noise-aware training (MRF-N)", **box)
        # training
        self.w_gibbs = pn.widgets.IntInput(label="Gibbs samples n'", step=1000, **sw)
        self.w_auto = LabeledCheckbox(
            label="default rule for λ and α (α = 1/T, λ_θ = min(T/2, 50))", **box
        )
        self.w_step_mu = pn.widgets.FloatInput(label="step α_μ", step=0.01, format="0.0000", **sw)
        self.w_step_theta = pn.widgets.FloatInput(
            label="step α_θ", step=0.01, format="0.0000", **sw
        )
        self.w_grad = pn.widgets.RadioButtonGroup(
            label="Gradient",
            options={"rescaled": "rescaled", "rescaled (paper)": "rescaled-paper", "true": "true"},
        )
        self.w_precond = LabeledCheckbox(label="preconditioning (diagonal Hessian)", **box)
        self.w_ipt = pn.widgets.IntSlider(label="Max iterations per tick", start=1, end=200, **sw)
        self.w_keep = LabeledCheckbox(label="keep my λ, α, n' and seeds on a dataset switch", **box)
        self.w_triples = LabeledCheckbox(label="Release the triplet table (X1, X2, X3)", **box)
        # lesson links (Save & share)
        self.w_lesson_text = pn.widgets.TextAreaInput(
            name="Lesson text (shown at the top)", height=70, max_length=1000, **sw
        )
        self.w_lesson_hide = pn.widgets.MultiChoice(
            name="Controls to hide", options=[], placeholder="choose controls…", **sw
        )
        self.lesson_url = pn.widgets.TextInput(
            name="Lesson link", disabled=False, css_classes=["aggmrf-lesson-link"], **sw
        )
        self.copy_lesson = pn.widgets.Button(
            label="Copy lesson link", color="primary", css_classes=["aggmrf-copy"], **sw
        )
        self.copy_lesson.js_on_click(
            args={"link": self.lesson_url},
            code="if (navigator.clipboard) { navigator.clipboard.writeText(link.value) }",
        )
        self.w_lesson_text.param.watch(lambda e: self._refresh_lesson_link(), "value")
        self.w_lesson_hide.param.watch(lambda e: self._refresh_lesson_link(), "value")
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
        self.c_keep = b("keep_settings", self.w_keep)
        self.c_triples = b("triples", self.w_triples)
        self.c_eps_tab = self._log_slider(
            "epsilon",
            "ε: re-release the tables and retrain",
            _log_grid(-2, 2),
            css="aggmrf-privacy-epsilon",
        )
        eps_tab = self._slider_of["aggmrf-privacy-epsilon"]
        eps_tab.param.watch(lambda e: self._guard(self._after_tab_epsilon), "value")
        eps_sliders = [self._slider_of["epsilon"], eps_tab]
        self.settle_eps = Settle(s, "epsilon", eps_sliders, self._hushed)
        s.param.watch(self._on_warning, "warning")
        s.param.watch(lambda *e: self._refresh_lesson_link(), list(URL_KEYS))
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
        # steps from code (``ex.session.step(k)`` in a notebook) redraw like the Step button
        s.param.watch(lambda e: self._guard(self._refresh_all), "stepped")

    # ------------------------------------------------------------------ plots
    def _build_plots(self) -> None:
        h = PLOT_HEIGHT  # two rows of plots fit a 1280×720 projector under the header
        self.p_nllh = LivePlot(plots.nllh_plot, plots.nllh_data, height=h)
        self.p_conv = LivePlot(plots.convergence_plot, plots.convergence_data, height=h)
        self.p_pred = LivePlot(plots.predictions_plot, plots.predictions_data, height=h)
        self.p_dhat = LivePlot(plots.dhat_scatter, plots.dhat_data, height=h)
        # the big "scoreboard" line and "Pin this run" (ghost curves, plots.PinnedRun)
        self.pins: list = []
        self.scoreboard = pn.pane.Markdown(
            "",
            css_classes=["aggmrf-scoreboard"],
            sizing_mode="stretch_width",
            margin=(0, 10),
            stylesheets=["p { font-size: 17px; margin: 6px 0 2px 0; }"],
        )
        self.pins_md = pn.pane.Markdown(
            "",
            css_classes=["aggmrf-pins"],
            sizing_mode="stretch_width",
            margin=(0, 10),
            visible=False,
        )
        self.pin_button = pn.widgets.Button(
            label="Pin this run", width=115, margin=(2, 5), css_classes=["aggmrf-pin"]
        )
        self.unpin_button = pn.widgets.Button(
            label="Clear pins", width=95, margin=(2, 5), css_classes=["aggmrf-unpin"]
        )
        self.pin_button.on_click(lambda e: self._guard(self._pin))
        self.unpin_button.on_click(lambda e: self._guard(self._unpin))
        self.p_privacy = LivePlot(plots.privacy_curve_plot, plots.privacy_curve_data, height=320)
        self.p_xor = XorPlot(height=420)
        self.noise_hist = pn.pane.Bokeh(sizing_mode="stretch_width", height=380)
        self.noise_scatter = pn.pane.Bokeh(sizing_mode="stretch_width", height=380)
        self._noise_key = None
        self.table_select = pn.widgets.Select(label="Table", options=[], width=320)
        self.tables = TableBrowser(self.session, self._bind("table", self.table_select))
        self.session.param.watch(lambda e: self._guard(self._on_table), "table")

    def _explain(self, key: str):
        return pn.pane.Markdown(
            EXPLAIN[key],
            css_classes=["aggmrf-explain"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )

    def _build_layout(self) -> None:
        s = self.session
        self.run_row = pn.Row(
            self.play_button,
            self.step_button,
            self.reset_button,
            sizing_mode="stretch_width",
            css_classes=["aggmrf-run"],
        )
        self.run_box = pn.Column(self.run_row, self.preset, sizing_mode="stretch_width")
        self.data_card = pn.Card(
            self.c_dataset,
            self.w_upload,
            self.upload_info,
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
            pn.pane.Markdown("**Noise mechanism**", margin=(0, 10)),
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
            pn.pane.Markdown("**Gradient**", margin=(0, 10)),
            self.c_grad,
            self.c_precond,
            self.c_ipt,
            self.c_keep,
            title="Training",
            sizing_mode="stretch_width",
        )
        self.dl_card = pn.Card(
            self.dl_settings,
            self.dl_history,
            pn.pane.Markdown(
                "The page URL holds every setting: copy it to share this configuration. "
                "A **lesson link** also hides controls and shows a text at the top:",
                margin=(0, 10),
            ),
            self.w_lesson_text,
            self.w_lesson_hide,
            self.lesson_url,
            self.copy_lesson,
            title="Save & share",
            sizing_mode="stretch_width",
            collapsed=True,
        )
        self.sidebar = pn.Column(
            self.run_box, self.data_card, self.privacy_card, self.train_card, self.dl_card,
            sizing_mode="stretch_width",
        )  # fmt: skip
        self.status_bar = pn.Row(self.spinner, self.status, sizing_mode="stretch_width")
        # a projector (1280×720) shows the four plots and the run controls at once: the
        # explanations fold away below them
        grid = pn.GridBox(
            self.p_nllh.pane,
            self.p_pred.pane,
            self.p_conv.pane,
            self.p_dhat.pane,
            ncols=2,
            sizing_mode="stretch_width",
            css_classes=["aggmrf-plots"],
        )
        explain = pn.Card(
            tab_note("Training"),
            *(self._explain(k) for k in ("nllh", "predictions", "convergence", "dhat")),
            title="What to look for, and what these plots show",
            collapsed=True,
            sizing_mode="stretch_width",
        )
        # the pin buttons sit beside the scoreboard; the served page moves them to the header
        self.pin_row = pn.Row(self.pin_button, self.unpin_button, css_classes=["aggmrf-pins-row"])
        self.score_row = pn.Row(self.scoreboard, self.pin_row, sizing_mode="stretch_width")
        # (the pins' caption under the plots: at 720 px, pins never push a plot off screen)
        grid = pn.Column(self.score_row, grid, self.pins_md, explain, sizing_mode="stretch_width")
        self.privacy_runs_md = pn.pane.Markdown(
            "", sizing_mode="stretch_width", margin=(0, 10), css_classes=["aggmrf-privacy-runs"]
        )
        # the NLLH-vs-ε view of the session's runs (``store.privacy_runs``) goes in here
        self.privacy_curve_box = pn.Column(self.p_privacy.pane, sizing_mode="stretch_width")
        s.param.watch(lambda e: self._guard(self._refresh_privacy_runs), "privacy_runs")
        self.xor_note = pn.pane.Alert(
            "Choose the **XOR counterexample** dataset (or the XOR preset) to see this comparison.",
            alert_type="info",
            stylesheets=[DARK_INFO],
            sizing_mode="stretch_width",
        )
        self.noise_note = pn.pane.Alert(
            "No noise: choose the Laplace or Gaussian mechanism in the Privacy controls.",
            alert_type="info",
            stylesheets=[DARK_INFO],
            sizing_mode="stretch_width",
        )
        self.triples_row = pn.Column(
            self.c_triples,
            pn.pane.Markdown(
                "With it, max-ent can represent the truth, and the MRF moves from "
                "0.9 / 0.1 to 0.75 / 0.25.",
                margin=(0, 10),
            ),
            sizing_mode="stretch_width",
            css_classes=["aggmrf-triples"],
        )
        self.tabs = pn.Tabs(
            ("Training", grid),
            (
                "Tables",
                pn.Column(
                    tab_note("Tables"),
                    self._explain("tables"),
                    self.tables,
                    sizing_mode="stretch_width",
                ),
            ),
            (
                "Privacy",
                pn.Column(
                    tab_note("Privacy"),
                    self._explain("privacy"),
                    self.c_eps_tab,
                    self.privacy_curve_box,
                    self.privacy_runs_md,
                    self.noise_note,
                    pn.Row(self.noise_hist, self.noise_scatter, sizing_mode="stretch_width"),
                    sizing_mode="stretch_width",
                ),
            ),
            (
                "XOR",
                pn.Column(
                    tab_note("XOR"),
                    self.triples_row,
                    self.xor_note,
                    self.p_xor.pane,
                    self._explain("xor"),
                    sizing_mode="stretch_width",
                ),
            ),
            ("Suppression", self._build_suppression()),  # the cells a release left out
            dynamic=True,
            sizing_mode="stretch_width",
        )
        self.tabs.param.watch(self._on_tab, "active")
        self.w_lesson_hide.options = sorted(self._hideable())
        self.main = pn.Column(
            self.lesson_banner,
            self.status_bar,
            self.notice,
            self.warning,
            self.continue_button,
            self.message,
            self.tabs,
            self.shortcuts,
            sizing_mode="stretch_width",
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
        # the run controls live in the header: visible with the sidebar collapsed
        self.run_box.objects = [self.preset]
        self.run_row.sizing_mode = None
        self.run_row.width = 330
        # "Pin this run" beside the run controls: the scoreboard gets the whole line
        self.score_row.objects = [self.scoreboard]
        # a light first page (header, run controls, status line) that the browser lays out
        # at once; the cards of controls join it as soon as it is shown, the tabs of plots
        # once their first data are drawn (:meth:`_show_tabs`)
        self._filled = False
        self._deferred_cards = list(self.sidebar.objects)
        self._deferred_tabs = list(self.main.objects)
        waiting = pn.pane.Markdown(
            "*The plots appear here as soon as the first screen's data are ready.*",
            css_classes=["aggmrf-plots-pending"],
            margin=(10, 10),
        )
        self.main.objects = [waiting if o is self.tabs else o for o in self.main.objects]
        # (the cards: ~40 % of the page's models; the Data card's Choices.js shows no
        # value that arrives with its options in a later model, so it comes now)
        self.sidebar.objects = [self.run_box, self.data_card]
        self._guard(self._show_status)
        pn.state.onload(self._fill_page)
        tmpl = pn.template.BootstrapTemplate(
            title="aggmrf explorer",
            header=[self.run_row, self.pin_row],
            sidebar=[self.sidebar],
            main=[self.main],
            sidebar_width=330,
            # a lesson link that hides every control: no empty sidebar beside the plots
            collapsed_sidebar={"presets", "data", "privacy", "training", "share"}
            <= self._hidden_groups(),
            raw_css=[CSS],
            header_background="#1f4e79",
            # no process-wide busy indicator: Panel would push every change of its busy
            # state to every open page (work growing with the square of the class); the
            # page has its own spinner
            busy_indicator=None,
        )
        # (the Bootstrap template leaves its own js_files out: the page's resources)
        pn.config.js_files = {**pn.config.js_files, "aggmrf_page_fixes": page_script()}
        return tmpl

    def _fill_page(self) -> None:
        """The served page is shown: add its cards of controls (see :meth:`template`),
        and its tabs of plots if their data are drawn already."""
        self.sidebar.objects = self._deferred_cards
        self._filled = True
        if self._loaded:
            self._show_tabs()
        self._guard(self._show_status)

    def _show_tabs(self) -> None:
        """Add the tabs of plots to the served page (once), after their first drawing.

        A figure set on a pane of a shown page makes Panel and Bokeh walk every model of
        the document (≈ 0.1 s a figure); set on a pane not shown yet, it costs nothing.
        """
        tabs, self._deferred_tabs = self._deferred_tabs, None
        if tabs is not None:
            self.main.objects = tabs

    def to_ipywidget(self):
        """The explorer as an ipywidgets.Widget (needs jupyter_bokeh).

        jupyter_bokeh sends later changes as patches to the views already drawn, and a view
        draws itself from the widget's ``render_bundle``, a snapshot taken when the widget
        was made.  A view that finishes drawing after a step from code (the README's
        ``display(w); w.explorer.session.step(5)``; a second ``display(w)``; a reloaded
        page) would show the state of the snapshot.  A change of the bundle makes every
        view redraw from scratch, and a view still drawing then fails inside BokehJS
        ("configuration is missing"), so the bundle is re-taken only when a view reports
        that it has finished drawing (Bokeh's ``DocumentReady``) and the session has moved
        on since the snapshot: that view redraws once, with the current state.
        """
        from bokeh.document import Document
        from bokeh.events import DocumentReady
        from jupyter_bokeh.widgets import BokehModel

        # what pn.ipywidget does, keeping the root model in hand
        root = self.__panel__().get_root(doc=Document())
        w = BokehModel(root, combine_events=True)
        s = self.session
        taken = [(s.iteration, s.version)]  # the state the bundle shows

        def on_ready(event) -> None:
            now = (s.iteration, s.version)
            if now != taken[0]:
                taken[0] = now
                w.update_from_model(root)

        root.document.on_event(DocumentReady, on_ready)
        return w

    # ------------------------------------------------------------------ URL
    def _sync_url(self) -> None:
        """Keep the settings and the page URL in step, key by key.

        The link's settings are read with ``url.apply_query``: a bad value costs only its
        own setting (its message shows beside its control), the others are kept.  The URL
        then holds the settings in effect (bad values leave the address bar) and follows
        every change.  (Panel's ``Location.sync`` applies all keys at once and drops the
        whole link on one bad value, so it is not used.)
        """
        loc = pn.state.location
        if loc is None or pn.state.curdoc is None:
            return
        self._writing_url = False
        self._location = loc
        try:
            url.apply_query(self.session, loc.search or "", URL_KEYS)
        except Exception as exc:  # noqa: BLE001
            self._show_message(f"could not read the settings in the URL: {error_message(exc)}")
        # the page reports its own address once it is shown: read it the same way
        loc.param.watch(self._on_url, "search")
        self.session.param.watch(lambda *events: self._write_url(), list(URL_KEYS))
        self._write_url()

    def _on_url(self, event) -> None:
        """The address changed in the browser (first report, back button): read it."""
        if self._writing_url:
            return
        self._guard(lambda: url.apply_query(self.session, event.new or "", URL_KEYS))
        self._write_url()

    def _write_url(self) -> None:
        loc = getattr(self, "_location", None)
        if loc is None:
            return
        search = url.with_settings(loc.search or "", self.session, URL_KEYS)
        if search != loc.search:
            self._writing_url = True
            try:
                loc.search = search
            finally:
                self._writing_url = False

    def _watch_connection(self, doc) -> None:
        """A "connection lost — reload" banner when the websocket closes (the server
        stopped, the network dropped, or a message was too large for it)."""
        from bokeh.models import CustomJS

        doc.js_on_event("connection_lost", CustomJS(code=CONNECTION_LOST_JS))

    # ------------------------------------------------------------------ event helpers
    def _guard(self, fn):
        """Run a callback; any exception becomes a visible message, never a traceback."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            self._show_message(error_message(exc))
            return None

    def _show_message(self, text: str) -> None:
        """The red message box; ``text`` may hold user-supplied strings: shown escaped."""
        self.message.object = escape_markdown(text, limit=800)
        self.message.visible = bool(text)
        # a red error and a blue "preparing…" notice never show together
        self.notice.visible = bool(self.notice.object) and not text

    def _show_errors(self, event=None) -> None:
        errs = self.session.errors
        for name, pane in self._error_panes.items():
            msg = errs.get(name.split("@")[0], "")
            pane.object = f"⚠ {escape_markdown(msg, limit=600)}" if msg else ""
            pane.visible = bool(msg)

    def _on_notice(self, event) -> None:
        self.notice.object = event.new
        self.notice.visible = bool(event.new) and not self.message.visible

    def _on_warning(self, event) -> None:
        """Divergence: a yellow warning with its likely cause (not a routine notice)."""
        self.warning.object = f"⚠ **Training diverged.** {escape_markdown(event.new, limit=600)}"
        self.warning.visible = bool(event.new)

    def _on_busy(self, event) -> None:
        busy = bool(event.new)
        for btn in (self.play_button, self.step_button, self.reset_button):
            btn.disabled = busy
        self._show_status()

    def _show_status(self) -> None:
        """The status line and the spinner; while the sampler compiles (a first start)
        they say so, and that everything but training works meanwhile."""
        s = self.session
        s.update_status()
        waiting = runtime.warm_up_message()
        loading = s.busy or bool(waiting)
        self.spinner.value = loading
        self.spinner.visible = loading
        label = (waiting or "preparing data…") if loading else ""
        if not self._filled:  # (the served page's first, light version)
            self.status.object = waiting or "loading the page…"
        elif not waiting:
            self.status.object = s.status
        elif s.busy or s.trainer is None:
            self.status.object = waiting
        else:
            name = s.status.rsplit(" · ", 1)[-1]
            then = "Play pressed: training starts" if s.running else "Play trains"
            self.status.object = (
                f"{waiting} · {name} loaded: everything but training works now; {then} "
                "once it is ready"
            )
        # the spinner's label, unless the status line beside it says the same
        self.spinner.label = "" if str(self.status.object).startswith(label) else label

    # ------------------------------------------------------------------ lessons
    def _hideable(self) -> dict[str, object]:
        """Every control a lesson link can hide: {name: its container}."""
        out: dict[str, object] = dict(self._control_boxes)
        out.update(
            data=self.data_card,
            privacy=self.privacy_card,
            training=self.train_card,
            presets=self.preset,
            share=self.dl_card,
            play=self.play_button,
            step=self.step_button,
            reset=self.reset_button,
        )
        return out

    def _read_lesson(self) -> None:
        """``hide=…`` and ``lesson=…`` of the page's link (see ``lesson.py``)."""
        loc = pn.state.location
        if loc is None or pn.state.curdoc is None:
            return
        les = parse_lesson(url.readable_query(loc.search or ""), self._hideable())
        self._hidden = les.hide
        too_long = url.link_too_long(loc.search or "")  # said where it stays: the banner
        if les.text or too_long:
            self.lesson_banner.object = (
                f"**Lesson.** {escape_markdown(les.text, limit=1000)}" if les.text else too_long
            )
            self.lesson_banner.visible = True
        self._syncing = True
        try:
            self.w_lesson_text.value = les.text
            self.w_lesson_hide.value = [h for h in les.hide if h in self.w_lesson_hide.options]
        finally:
            self._syncing = False
        if les.unknown:
            self._show_message(f"the lesson link names unknown controls: {', '.join(les.unknown)}")
        self._apply_hide()

    def _apply_hide(self) -> None:
        boxes = self._hideable()
        for name in [*getattr(self, "_hidden", []), *self._hidden_groups()]:
            box = boxes.get(name)
            if box is not None:
                box.visible = False

    def _hidden_groups(self) -> set[str]:
        """The cards (and the preset menu) that the lesson link hides, wholly or control
        by control."""
        cards = dict(
            data=self.data_card,
            privacy=self.privacy_card,
            training=self.train_card,
            share=self.dl_card,
        )
        members = {
            g: [n for n, box in self._control_boxes.items() if box in card.objects]
            for g, card in cards.items()
        }
        return hidden_groups(getattr(self, "_hidden", []), members)

    def _shortcut(self, control: str, action) -> None:
        """A key press (space: play, →: step): off when the lesson link hides its button."""
        if control not in getattr(self, "_hidden", []):
            self._guard(action)

    def _refresh_lesson_link(self) -> None:
        """The lesson link of the current settings, hidden controls and text."""
        if self._syncing and not self.w_lesson_hide.options:
            return
        s = self.session
        loc = pn.state.location
        base = "http://localhost:5006/explorer"
        if loc is not None and loc.href:
            base = loc.href.split("?", 1)[0].split("#", 1)[0]
        defaults = {k: s.param[k].default for k in URL_KEYS}
        if s.auto_defaults:  # the rule sets λ and α: the link need not carry them
            for k in ("lambda_mu", "lambda_theta", "step_mu", "step_theta"):
                defaults[k] = getattr(s, k)
        self.lesson_url.value = lesson_link(
            base, s.settings(), defaults, self.w_lesson_hide.value, self.w_lesson_text.value
        )

    # ------------------------------------------------------------------ privacy curve
    def _after_tab_epsilon(self) -> None:
        """The Privacy tab's ε slider moved: the store re-released the tables and restarted
        the trainer (the finished run joined ``privacy_runs``); train the new one."""
        s = self.session
        if self._syncing or s.trainer is None or s.busy:
            return
        if not s.running:
            s.play()

    def _refresh_privacy_curve(self) -> None:
        """The NLLH-vs-ε curve: the session's finished runs and the live one (plots.py)."""
        s = self.session
        if s.bundle is None:
            return
        sky = s.references().get(plots.REFERENCE_NAMES[0])
        runs, live = list(s.privacy_runs), s.privacy_point()
        key = plots.privacy_series(runs, s.dataset)  # a new curve: the figure is drawn again
        kw = {"runs": runs, "live": live, "skyline": sky, "dataset": s.dataset}
        self.p_privacy.update(kw, key=key)

    def _pin(self) -> None:
        """Keep the live run's curves as a ghost on the training plots (the last MAX_PINS)."""
        s = self.session
        if s.trainer is None or s.iteration == 0:
            return
        label = plots.run_label(s.settings(), s.iteration)
        self.pins = [*self.pins, plots.pin_run(s.history(), label)][-plots.MAX_PINS :]
        self._refresh_fast()

    def _unpin(self) -> None:
        self.pins = []
        self._refresh_fast()

    def _refresh_privacy_runs(self) -> None:
        s = self.session
        runs = [r for r in s.privacy_runs if r.get("dataset") == s.dataset]
        if not runs:
            self.privacy_runs_md.object = (
                "Move ε: each finished run adds a point (ε, final test NLLH) to this session's "
                "price-of-privacy curve."
            )
        else:
            rows = "\n".join(
                f"| {r['epsilon']:g} | {r['mechanism']}{' (MRF-N)' if r['noise_aware'] else ''} "
                f"| {r['iterations']:,} | {r['nllh']:.4f} |"
                for r in sorted(runs, key=lambda r: r["epsilon"])
            )
            self.privacy_runs_md.object = (
                "| ε | mechanism | iterations | final test NLLH |\n|---|---|---|---|\n" + rows
            )
        # the figure after the text (a text changed after a figure was replaced in the
        # same batch makes BokehJS lay out a view that does not exist yet)
        self._guard(self._refresh_privacy_curve)

    def _on_running(self, event) -> None:
        self.play_button.label = "❚❚ Pause" if event.new else "▶ Play"
        self.play_button.color = "danger" if event.new else "success"
        if event.new:
            runtime.RUNNING.add(self)
            self._start_training()
            return
        runtime.RUNNING.discard(self)
        future = self._slice_future
        if future is not None:
            future.cancel()  # (only if it still waits for a thread)
        if not self._looping:  # (else the loop refreshes once its last slice is back)
            self._refresh_all()
        else:
            self._guard(self._show_status)  # "paused" now; the plots follow the slice

    def _on_dataset_visibility(self, *events) -> None:
        s = self.session
        ds = s.dataset
        self.w_upload.visible = self.c_label.visible = ds == "upload"
        self.upload_info.visible = ds == "upload"
        self.c_n.visible = ds in ("xor", "synthetic", "criteo")
        self.c_seed.visible = ds in ("xor", "synthetic", "criteo", "adult", "bank", "upload")
        self.regenerate.visible = ds in ("xor", "synthetic", "criteo")
        noisy = s.mechanism != "none"
        self.c_eps.visible = self.c_aware.visible = noisy
        self.c_acc.visible = noisy and s.mechanism != "local"
        self.c_eps_tab.visible = noisy
        self.c_delta.visible = self.c_cal.visible = s.mechanism == "gaussian"
        self.triples_row.visible = ds == "xor" and not s.features
        self._refresh_sigma()
        self._apply_hide()

    def _refresh_sigma(self) -> None:
        self.sigma.object = noise_summary(self.session)

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
        # (a first start compiles for a minute: send the page now, with a progress line)
        runtime.wait_for_warm_up(0.0 if runtime.first_start() else WARM_WAIT)
        if not runtime.kernels_ready() or s.bundle is not None:
            return False
        bundle = peek_problem(**s.data_key())
        if bundle is None or any(
            peek_baselines(bundle, baseline_names(bundle, w)) is None for w in BASELINE_GROUPS
        ):
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
        """First render: load the data (async); the sampler may still be compiling."""
        self.session.busy = True
        pn.state.execute(self._initial_load)

    async def _initial_load(self) -> None:
        """Load the data at once; while the sampler compiles (the warm-up thread) the page
        shows its progress, and every control but training works."""
        if not runtime.kernels_ready():
            runtime.warm_up_in_background(prefetch_default_data, prefetch_first_screen)
            pn.state.execute(self._watch_warm_up)
        try:
            await self._load_async("")
        finally:
            self._show_tabs()  # (drawn: at once after the drawing; here if the load failed)

    async def _watch_warm_up(self) -> None:
        """The compiler's progress on the status line, once a second; then the first
        screen as it is (a Play pressed meanwhile starts training by itself)."""
        while not runtime.kernels_ready():
            self._guard(self._show_status)
            await asyncio.sleep(1.0)
        self._guard(self._refresh_all)

    def _schedule_load(self, notice: str) -> None:
        if not self._loaded:
            return  # the initial load reads the current settings
        self.session.busy = True
        self._show_message("")  # a "preparing" notice and an old error never show together
        self.session.set_notice(notice)  # "…: data are being prepared, training restarts."
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
            get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
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
            previous, self._good_data = self._good_data, wanted
            self._loaded = True
            self._show_message("")
            # the settings that changed now are valid; the messages of values refused
            # earlier (a link's bad value, a reverted setting) stay beside their controls
            names = [k for k in DATA_KEYS if k in s.errors and wanted[k] != previous.get(k)]
            if names:
                s.errors = {k: v for k, v in s.errors.items() if k not in names}
        except Exception as exc:  # noqa: BLE001
            msg = error_message(exc)
            changed = [k for k in DATA_KEYS if getattr(s, k) != self._good_data.get(k)]
            # a failure caused by one setting (e.g. unknown features in a link) reverts
            # that one only; the other changed settings load again without it
            culprit = getattr(exc, "setting", None)
            rest = [k for k in changed if k != culprit] if culprit in changed else []
            if culprit in changed:
                changed = [culprit]
            s.restore({k: self._good_data[k] for k in changed})
            s.notice = ""  # "…: data are being prepared" no longer holds
            s.errors = {**s.errors, **{k: msg for k in changed or ["dataset"]}}
            self._show_message(msg)
            self._loaded = True
            s.busy = False
            if (s.bundle is None and changed) or rest:
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
            # Choices.js renders option labels as HTML: labels escaped, values raw
            self.w_features.options = {escape_html(f): f for f in b.all_features}
            # the value a link set before the options existed never reached the browser's
            # Choices.js widget: send it again now that its options are there
            self.w_features.value = []
            self.w_features.value = list(s.features)
            if s.dataset == "upload" and s.upload_hash:
                self.w_label.options = [""] + upload_columns(s.upload_hash)
                self.w_label.value = s.label_column
        finally:
            self._syncing = False
        self._on_dataset_visibility()
        self._on_version()
        self._show_tabs()  # (the served page's first drawing: its plots join the page)

    # ------------------------------------------------------------------ run loop
    def _start_training(self) -> None:
        """Start the training loop (once: a Play during a Pause's last slice reuses it)."""
        if self._looping or self._closed:
            return
        self._looping = True
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a script driving the view): tick() by hand
            self._looping = False
            return
        pn.state.execute(self._train_loop)

    async def _train_loop(self) -> None:
        """While the session plays: a slice in the training pool, then the refresh due;
        at most one slice per ``TICK_MS`` (``iters_per_tick`` is per period)."""
        first = True  # a Play's first slice goes ahead of the queue, as a Step does
        try:
            while self.session.running and not self._closed:
                t0 = time.monotonic()
                await self._train_once(priority=0 if first else 1)
                first = False
                await asyncio.sleep(max(TICK_MS / 1000 - (time.monotonic() - t0), 0.0))
        finally:
            self._looping = False
            if not self._closed:
                self._guard(self._refresh_all)  # paused: the last iterations on the page

    async def _train_once(self, priority: int = 1) -> None:
        """One slice of training in the pool (the sampler ready), then the refresh due."""
        s = self.session
        if not self._sampler_ready():
            self._refresh_due(len(runtime.RUNNING))
            await asyncio.sleep(0.25)
            return
        async with self._slice_lock:
            if not s.running or s.busy or s.trainer is None or self._closed:
                return
            # (a Pause cancels the slice while it waits in the pool's queue; one under way
            # ends after its current iteration)
            future = runtime.TRAINING.submit(
                s.train_slice, SLICE_SECONDS, s.iters_per_tick, True, priority=priority
            )
            self._slice_future = future
            try:
                done = await asyncio.wrap_future(future)
                if not self._closed:
                    s.finish_slice(done)
            except (asyncio.CancelledError, CancelledError):
                pass  # paused before it started
            except Exception as exc:  # noqa: BLE001
                s.running = False
                self._show_message(f"training stopped: {error_message(exc)}")
            finally:
                self._slice_future = None
        if not self._closed:
            if priority == 0:
                self._last_fast = 0.0  # (a Play's first slice: shown at once)
            self._refresh_due(len(runtime.RUNNING))

    def tick(self) -> list:
        """One slice of training now, in the calling thread, then the refresh due (no
        event loop: a script or a test driving the view); returns its statistics."""
        s = self.session
        stats = []
        try:
            if self._sampler_ready():
                stats = s.tick(SLICE_SECONDS)
        except Exception as exc:  # noqa: BLE001
            s.running = False
            self._show_message(f"training stopped: {error_message(exc)}")
        self._refresh_due(len(runtime.RUNNING))
        return stats

    def _refresh_due(self, training: int) -> None:
        """The fast or the heavy refresh, if one is due (``training`` sessions training)."""
        now = time.monotonic()
        fast_s, heavy_s = refresh_intervals(max(training, 1), runtime.TRAINING.cores)
        # never both at once; the more overdue first, so that when refreshes come slower
        # than FAST_REFRESH (a loaded machine, a notebook's comm) the heavy views still
        # take their turn instead of waiting behind a fast refresh due every time
        fast = (now - self._last_fast) / fast_s
        heavy = (now - self._last_heavy) / heavy_s
        with pn.io.hold():
            if fast >= 1 and fast >= heavy:
                self._guard(self._refresh_fast)
            elif heavy >= 1:
                self._guard(self._refresh_heavy)

    def _sampler_ready(self) -> bool:
        """False while the kernels this run needs still compile in the background (the
        sampler, or MRF-N's noise posterior, on a first start): training waits, nothing
        blocks (the status line says so)."""
        if not runtime.kernels_ready() or not self.session.can_train():
            return False
        if not self.session.noise_aware or runtime.extras_ready():
            return True
        self.session.set_notice("MRF-N's sampler is still compiling (first start only)…")
        return False

    def _toggle(self) -> None:
        if self.session.busy or self.session.trainer is None:
            return  # (a shortcut key while data load)
        self.session.toggle()

    def _step(self) -> None:
        """Step: pause if playing, then one iteration (in the training pool, ahead of the
        other sessions' slices, when an event loop runs; else now)."""
        s = self.session
        if s.busy or s.trainer is None:
            return
        if s.running:
            s.pause()
        if not self._sampler_ready():
            self._refresh_all()
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            s.step(1)  # redraws through the session's "stepped" event
            return
        pn.state.execute(self._step_async)

    async def _step_async(self) -> None:
        s = self.session
        async with self._slice_lock:  # after this session's slice under way, if any
            if s.trainer is None or s.busy or self._closed:
                return
            try:
                done = await runtime.TRAINING.run(s.train_slice, None, 1, priority=0)
                s.finish_slice(done)
            except Exception as exc:  # noqa: BLE001
                self._show_message(error_message(exc))
                return
            s.param.trigger("stepped")  # the views redraw

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

    def _on_upload(self, files: dict | None) -> None:
        """A file arrived ({its own name: content}): register it, offer its columns.
        The messages of an earlier upload go away."""
        if not files:
            return
        name, data = next(reversed(files.items()))
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self._show_message("")
        s = self.session
        s.errors = {
            k: v for k, v in s.errors.items() if k not in ("dataset", "label_column", "features")
        }
        try:
            h = register_upload(data, name)
        except Exception as exc:  # noqa: BLE001 - over the size limit
            self._show_upload_refusal(error_message(exc))
            return
        cols = upload_columns(h)
        self.w_label.options = [""] + cols
        self.upload_info.object = (
            f"Uploaded **{escape_markdown(upload_name(h))}** ({format_bytes(len(data))}, "
            f"{len(cols)} columns); files up to {format_bytes(UPLOAD_MAX_BYTES)}."
        )
        was_upload = s.dataset == "upload"
        s.use_upload(h)
        if not was_upload:
            self._on_dataset_visibility()

    def _show_upload_refusal(self, text: str) -> None:
        if text:
            self._show_message(f"upload refused: {text}")
            self.upload_info.object = f"⚠ {escape_markdown(text)}"

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
        if self.tabs.active == 1:
            self.tables.refresh()

    def _on_tab(self, event=None) -> None:
        """A tab became visible: bring its views up to date now."""
        with pn.io.hold():
            self._guard(self._refresh_heavy)

    def _refresh_fast(self) -> None:
        """Status line and the two line plots (cheap: new arrays into existing sources)."""
        self._last_fast = time.monotonic()
        s = self.session
        self._show_status()
        if s.trainer is None:
            return
        if self.tabs.active == 0:
            h = s.history()
            refs = s.references()
            pins, n = self.pins, len(self.pins)
            # text first: a text that changes after a figure was replaced in the same
            # batch makes BokehJS lay out the figure's view before it exists (page error)
            self.scoreboard.object = plots.scoreboard(s.trainer.last_nllh, refs)
            self.pins_md.object = plots.pins_caption(pins)
            self.pins_md.visible = bool(pins)
            self.p_nllh.update({"history": h, "references": refs, "pinned": pins}, key=n)
            self.p_conv.update({"history": h, "floor": s.floor, "pinned": pins}, key=n)

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
            self.tables.refresh()
        elif tab == 2:
            self._refresh_privacy_curve()
        elif tab == 4:
            self._refresh_suppression()
        elif tab == 3:
            xf = s.xor_frame()
            self.xor_note.visible = xf is None
            self.p_xor.pane.visible = xf is not None
            if xf is not None:
                self.p_xor.update({"frame": xf}, key=tuple(xf["state"]))

    def _build_suppression(self):
        """The Suppression tab: suppressed rows per table and the model's d̂ on them."""
        self.sup_md = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.sup_fig = suppression_view.SuppressionFigure(height=380)
        explain = pn.pane.Markdown(
            suppression_view.EXPLAIN, css_classes=["aggmrf-explain"], margin=(0, 10),
            sizing_mode="stretch_width",
        )  # fmt: skip
        return pn.Column(
            tab_note("Suppression"),
            self.sup_fig.pane,
            self.sup_md,
            explain,
            sizing_mode="stretch_width",
        )

    def _refresh_suppression(self) -> None:
        """Suppressed rows and the trainer's current d̂ on them (suppression.py computes)."""
        s = self.session
        cells = suppressed_cells(s.data, s.trainer.d_hat)
        self.sup_md.object = suppression_view.summary_markdown(
            suppression_check(s.data, s.trainer.d_hat)
        )
        self.sup_fig.pane.visible = len(cells) > 0
        if len(cells):
            self.sup_fig.update(cells, s.iteration)

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
            noise, true, noisy = (nf[c].to_numpy() for c in ("noise", "true", "noisy"))
            figs = (
                lambda: plots.noise_histogram(noise, std, s.mechanism),
                lambda: plots.noisy_vs_true(true, noisy),
            )
            for pane, build in zip((self.noise_hist, self.noise_scatter), figs, strict=True):
                pane.object = static_figure(build, height=380)
        self._refresh_sigma()
