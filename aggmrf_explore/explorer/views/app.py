"""The explorer's page: small views composed around one session store (Panel's data-store
pattern), and the training loop that drives them.

``Explorer().template()`` is the served page (``serve.build_app``); ``Explorer()`` displays
inline in Jupyter (``Explorer().to_ipywidget()`` for ipywidgets);
``Explorer(session=s)`` shows a store ``s`` that is loaded already (notebooks).

Where things are:

- the store: ``store.py`` (settings with declared bounds, trainer, run loop; free of Panel),
  its data loads and rollbacks: ``loader.py``;
- the sidebar: ``controls.py`` (run controls, Privacy and Training cards), ``data_card.py``,
  ``share_card.py`` (downloads, lesson links); each control is bound to one store setting
  by ``binding.py``;
- the tabs: ``training_tab.py``, ``privacy_tab.py``, ``small_tabs.py`` (Tables, XOR,
  Suppression), drawn by the pure functions of ``plots.py`` through ``liveplots.py``;
- what the page says: ``messages.py``; the process: ``runtime.py`` (kernel warm-up,
  worker threads, memory).

Training runs in slices of at most ``SLICE_SECONDS`` in the server's pool of training
threads (``runtime.RUNTIME.training``, one per core, shared by every session, fair by
the CPU seconds each session got), never on the event loop: each training session loops
(``scheduler.RunLoop``, a coroutine on the event loop) "queue a slice, wait for it,
refresh the page if due", at most one slice per ``TICK_MS`` period.  Line plots and
the status line refresh every ``FAST_REFRESH`` s, the visible tab's heavier views every
``HEAVY_REFRESH`` s; with more sessions training than cores both stretch, up to
``MAX_FAST_REFRESH`` and ``MAX_HEAVY_REFRESH`` (:func:`refresh_intervals`); the status
line alone still changes every ``STATUS_REFRESH`` s at the latest (when a slice returns).
"""

from __future__ import annotations

import asyncio
import time

import panel as pn

from ...errors import error_message
from ..server import runtime
from ..server.loader import Loader, prefetch_default_data, prefetch_first_screen
from ..server.scheduler import SLICE_SECONDS, TICK_MS, RunLoop
from ..store.store import ExplorerSession
from . import url_sync
from .binding import STRETCH, Binder
from .controls import PrivacyCard, RunControls, TrainingCard
from .data_card import DataCard
from .messages import Messages, training_waits_for
from .page_fixes import page_script
from .privacy_tab import PrivacyTab
from .settle import Settle
from .share_card import ShareCard
from .shortcuts import Shortcuts
from .small_tabs import SuppressionTab, TablesTab, XorTab
from .training_tab import TrainingTab

__all__ = ["Explorer", "TICK_MS", "SLICE_SECONDS", "refresh_intervals"]

FAST_REFRESH = 0.5  # status line and line plots, seconds (one session per core)
HEAVY_REFRESH = 2.0  # the visible tab's heavier views
STATUS_REFRESH = 1.0  # the status line alone, at the latest (with many sessions training)
# the longest they stretch to with many sessions training (the status line still changes
# every STATUS_REFRESH s): with a class, fewer refreshes leave the training threads more
# of the server's GIL (docs/explorer.md)
MAX_FAST_REFRESH = 3.0
MAX_HEAVY_REFRESH = 12.0

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


class Explorer(pn.viewable.Viewer):
    """The explorer for one session: controls, live plots, training loop.

    ``Explorer()`` displays inline in Jupyter; ``Explorer().template()`` is the served page.
    ``sync_url`` mirrors the settings in the page URL (served apps only); ``load_now``
    loads at once when the data are cached (the server's pages).  Its views:
    ``messages``, ``run_controls``, ``data_card``, ``privacy_card``, ``training_card``,
    ``share_card`` (the sidebar) and ``training_tab``, ``tables_tab``, ``privacy_tab``,
    ``xor_tab``, ``suppression_tab``.
    """

    def __init__(
        self,
        session: ExplorerSession | None = None,
        sync_url: bool = True,
        load_now: bool = False,
        **settings,
    ):
        super().__init__()
        s = self.session = session or ExplorerSession(
            lazy=True, chain_build=runtime.chain_build, **settings
        )
        s.set_loader(self._schedule_load)
        self.run_loop = RunLoop(
            s,
            runtime.RUNTIME.training,
            execute=pn.state.execute,
            ready=self._sampler_ready,
            after_slice=self._after_slice,
            stopped=lambda: self.guard(self._refresh_all),  # paused: the last iterations
            report=lambda text: self.messages.show_message(text),
        )
        self._last_fast = self._last_status = 0.0
        self._last_heavy = 0.0
        # the served page starts light (:meth:`template`): its cards come once it is shown,
        # its tabs of plots once they are drawn (``_deferred_tabs``)
        self._deferred_tabs: list | None = None
        self.messages = Messages(s)
        self.guard = self.messages.guard
        self.binder = Binder(s, self.guard)
        self.loader = Loader(s, self._after_new_data, self.messages.show_message, self._refresh_all)
        show = self.messages.show_message
        self.run_controls = RunControls(s, self.binder, self._toggle, self._step, self._reset, show)
        self.data_card = DataCard(s, self.binder, show)
        self.privacy_card = PrivacyCard(s, self.binder)
        self.training_card = TrainingCard(s, self.binder)
        self.share_card = ShareCard(s, self.binder, self.messages)
        self.training_tab = TrainingTab(s, self.guard)
        self.tables_tab = TablesTab(s, self.binder)
        self.privacy_tab = PrivacyTab(s, self.binder)
        # ε has two sliders (sidebar, Privacy tab): both end showing the store's value
        both = [self.binder.slider_of["epsilon"], self.privacy_tab.slider]
        self.settle_eps = Settle(s, "epsilon", both, self.binder.hushed)
        self.xor_tab = XorTab(s, self.binder)
        self.suppression_tab = SuppressionTab(s)
        # what a lesson, a notebook and the tests press and read
        self.play_button, self.step_button, self.reset_button = self.run_controls.buttons
        self.status, self.spinner = self.messages.status, self.messages.spinner
        self.message = self.messages.message
        self._build_layout()
        self._watch_session()
        if sync_url:
            self.share_card.read_lesson()
            url_sync.sync_url(self.session, self.messages)
        if s.bundle is not None and not s.busy:
            # a session its owner loaded already (a notebook): draw it now, nothing to wait for
            self.loader.loaded = True
            self._after_new_data()
        elif not (load_now and self.loader.load_cached()):
            pn.state.onload(self._on_load)
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            doc.on_session_destroyed(self._on_destroyed)
            doc.js_on_event("connection_lost", _connection_lost_banner())
            runtime.RUNTIME.sessions.add(self)
            runtime.RUNTIME.training.use_processes()
            self.run_loop.steps = runtime.steps_for(self)
            runtime.freeze_heap_soon(self)

    def _on_destroyed(self, session_context) -> None:
        """The browser tab closed: stop training and drop the per-session trainer (a
        slice under way ends by itself and is dropped)."""
        self.run_loop.close()
        runtime.RUNTIME.running.discard(self)
        self.session.close()
        runtime.RUNTIME.sessions.discard(self)
        runtime.log(f"session closed ({len(runtime.RUNTIME.sessions)} open)")
        runtime.release_memory_soon()

    # ------------------------------------------------------------------ composition
    def _build_layout(self) -> None:
        cards = {
            "data": self.data_card.card,
            "privacy": self.privacy_card.card,
            "training": self.training_card.card,
            "share": self.share_card.card,
        }
        self.sidebar = pn.Column(self.run_controls.run_box, *cards.values(), **STRETCH)
        self.tabs = pn.Tabs(
            ("Training", self.training_tab.column),
            ("Tables", self.tables_tab.column),
            ("Privacy", self.privacy_tab.column),
            ("XOR", self.xor_tab.column),
            ("Suppression", self.suppression_tab.column),  # the cells a release left out
            dynamic=True,
            **STRETCH,
        )
        # the heavier views of each tab, by the tab's index
        self._heavy = (
            self.training_tab.refresh_heavy,
            self.tables_tab.refresh,
            self.privacy_tab.refresh_curve,
            self.xor_tab.refresh,
            self.suppression_tab.refresh,
        )
        self.tabs.param.watch(self._on_tab, "active")
        # space = play / pause, → = step (not while typing in an input); a lesson link
        # that hides a run control also turns its key off
        self.shortcuts = Shortcuts(width=1, height=1, margin=0, sizing_mode="fixed")
        self.shortcuts.param.watch(lambda e: self._shortcut("play", self._toggle), "play")
        self.shortcuts.param.watch(lambda e: self._shortcut("step", self._step), "step")
        self.main = pn.Column(*self.messages.panes(), self.tabs, self.shortcuts, **STRETCH)
        run = self.run_controls
        hideable = {
            **self.binder.control_boxes,
            **cards,
            "presets": run.preset,
            "play": run.play_button,
            "step": run.step_button,
            "reset": run.reset_button,
        }
        self.share_card.set_hideable(hideable, cards)
        self._show_controls()

    def _watch_session(self) -> None:
        s = self.session
        # multi-parameter watchers get one event per changed parameter (a URL restore
        # changes several at once): they take *events
        s.param.watch(self._show_controls, ["dataset", "mechanism"])
        s.param.watch(self._on_running, "running")
        s.param.watch(lambda e: self.messages.show_status(), "busy")
        s.param.watch(self._on_version, "version")
        s.param.watch(lambda e: self.guard(self._on_table), "table")
        # steps from code (``ex.session.step(k)`` in a notebook) redraw like the Step button
        s.param.watch(lambda e: self.guard(self._refresh_all), "stepped")

    def _show_controls(self, *events) -> None:
        """Only the controls the dataset and mechanism use; what a lesson hides stays hidden."""
        self.data_card.show_dataset()
        self.privacy_card.show_mechanism()
        self.privacy_tab.show_mechanism()
        self.xor_tab.show_dataset()
        self.share_card.apply_hide()

    def _shortcut(self, control: str, action) -> None:
        """A key press (space: play, →: step): off when the lesson link hides its button."""
        if self.share_card.allows(control):
            self.guard(action)

    def __panel__(self):
        return pn.Row(pn.Column(self.sidebar, width=340), self.main, stylesheets=[CSS], **STRETCH)

    def template(self):
        """The served page: a BootstrapTemplate (no external fonts) with the controls in the sidebar."""
        run = self.run_controls
        # the run controls live in the header: visible with the sidebar collapsed
        run.run_box.objects = [run.preset]
        run.run_row.sizing_mode = None
        run.run_row.width = 330
        # "Pin this run" beside the run controls: the scoreboard gets the whole line
        pins = self.training_tab.header_pins()
        # a light first page (header, run controls, status line) that the browser lays out
        # at once; the cards of controls join it as soon as it is shown, the tabs of plots
        # once their first data are drawn (:meth:`_show_tabs`)
        self.messages.filled = False
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
        self.sidebar.objects = [run.run_box, self.data_card.card]
        self.guard(self.messages.show_status)
        pn.state.onload(self._fill_page)
        tmpl = pn.template.BootstrapTemplate(
            title="aggmrf explorer",
            header=[run.run_row, pins],
            sidebar=[self.sidebar],
            main=[self.main],
            sidebar_width=330,
            # a lesson link that hides every control: no empty sidebar beside the plots
            collapsed_sidebar={"presets", "data", "privacy", "training", "share"}
            <= self.share_card.hidden_groups(),
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
        self.messages.filled = True
        if self.loader.loaded:
            self._show_tabs()
        self.guard(self.messages.show_status)

    def _show_tabs(self) -> None:
        """Add the tabs of plots to the served page (once), after their first drawing.

        A figure set on a pane of a shown page makes Panel and Bokeh walk every model of
        the document (≈ 0.1 s a figure); set on a pane not shown yet, it costs nothing.
        """
        tabs, self._deferred_tabs = self._deferred_tabs, None
        if tabs is not None:
            self.main.objects = tabs

    def to_ipywidget(self):
        """The explorer as an ipywidgets.Widget (needs jupyter_bokeh; ``ipywidget.py``)."""
        from ..notebook.ipywidget import explorer_widget

        return explorer_widget(self)

    # ------------------------------------------------------------------ loading
    def _on_load(self) -> None:
        """First render: load the data (async); the sampler may still be compiling."""
        self.session.begin_load()
        pn.state.execute(self._initial_load)

    async def _initial_load(self) -> None:
        """Load the data at once; while the sampler compiles (the warm-up thread) the page
        shows its progress, and every control but training works."""
        if not runtime.kernels_ready():
            runtime.warm_up_in_background(prefetch_default_data, prefetch_first_screen)
            pn.state.execute(self._watch_warm_up)
        try:
            await self.loader.load("")
        finally:
            self._show_tabs()  # (drawn: at once after the drawing; here if the load failed)

    async def _watch_warm_up(self) -> None:
        """The compiler's progress on the status line, once a second; then the first
        screen as it is (a Play pressed meanwhile starts training by itself)."""
        while not runtime.kernels_ready():
            self.guard(self.messages.show_status)
            await asyncio.sleep(1.0)
        self.guard(self._refresh_all)

    def _schedule_load(self, notice: str) -> None:
        """The store's loader: new data settings load asynchronously (``loader.py``)."""
        if not self.loader.loaded:
            return  # the initial load reads the current settings
        self.session.begin_load(notice)  # "…: data are being prepared, training restarts."
        self.messages.show_message("")  # a "preparing" notice and an old error never show together
        notice = notice.replace(
            "data are being prepared, training restarts", "new data loaded, training restarted"
        )

        async def run() -> None:
            await self.loader.load(notice)

        pn.state.execute(run)

    def _after_new_data(self) -> None:
        """New data are in the store: their options in the menus, every view redrawn."""
        bundle = self.session.bundle
        self.tables_tab.show_options(bundle, self.binder)
        self.data_card.show_options(bundle)
        self._show_controls()
        self._on_version()
        self._show_tabs()  # (the served page's first drawing: its plots join the page)
        runtime.freeze_heap_soon(self)  # (a served page's: not a notebook's)

    # ------------------------------------------------------------------ run loop
    @property
    def _looping(self) -> bool:
        return self.run_loop.looping

    @property
    def _closed(self) -> bool:
        return self.run_loop.closed

    async def _train_once(self, priority: int = 1) -> bool:
        """One slice of training in the pool, then the refresh due (``RunLoop.train_once``)."""
        return await self.run_loop.train_once(priority)

    def _after_slice(self, first: bool) -> None:
        """A slice came back (or training still waits): the refresh due (``first``: a
        Play's first slice, shown at once)."""
        if first:
            self._last_fast = 0.0
        self._refresh_due(len(runtime.RUNTIME.running))

    def tick(self) -> list:
        """One slice of training now, in the calling thread, then the refresh due (no
        event loop: a script or a test driving the view); returns its statistics."""
        s = self.session
        stats = []
        try:
            if self._sampler_ready():
                stats = s.tick(SLICE_SECONDS)
        except Exception as exc:  # noqa: BLE001
            s.pause()
            self.messages.show_message(f"training stopped: {error_message(exc)}")
        self._refresh_due(len(runtime.RUNTIME.running))
        return stats

    def _refresh_due(self, training: int) -> None:
        """The fast or the heavy refresh, if one is due (``training`` sessions training)."""
        now = time.monotonic()
        fast_s, heavy_s = refresh_intervals(max(training, 1), runtime.RUNTIME.training.cores)
        # never both at once; the more overdue first, so that when refreshes come slower
        # than FAST_REFRESH (a loaded machine, a notebook's comm) the heavy views still
        # take their turn instead of waiting behind a fast refresh due every time
        fast = (now - self._last_fast) / fast_s
        heavy = (now - self._last_heavy) / heavy_s
        with pn.io.hold():
            if fast >= 1 and fast >= heavy:
                self.guard(self._refresh_fast)
            elif heavy >= 1:
                self.guard(self._refresh_heavy)
            if now - self._last_status >= min(fast_s, STATUS_REFRESH):
                # the status line is one short text: it does not wait for the line plots'
                # turn (with a class, that left it unchanged for more than 3 s)
                self._last_status = now
                self.guard(self.messages.show_status)

    def _sampler_ready(self) -> bool:
        """False while what training needs is not ready: the data (a load under way), the
        kernels this run needs (the sampler, or MRF-N's noise posterior, compiling on a
        first start): training waits, nothing blocks (the status line says for what)."""
        return not training_waits_for(self.session)

    def _on_running(self, event) -> None:
        self.run_controls.show_running(event.new)
        if event.new:
            runtime.RUNTIME.running.add(self)
            self.run_loop.start()
            return
        runtime.RUNTIME.running.discard(self)
        self.run_loop.cancel_queued()
        if not self._looping:  # (else the loop refreshes once its last slice is back)
            self._refresh_all()
        else:
            self.guard(self.messages.show_status)  # "paused" now; the plots follow the slice

    def _toggle(self) -> None:
        """Play / Pause.  Play is an intent: pressed while data load or the sampler
        compiles, the session trains as soon as they are ready (the status line says what
        it waits for)."""
        s = self.session
        s.pause() if s.running else s.play()
        self.guard(self.messages.show_status)

    def _reset(self) -> None:
        """Reset: a fresh trainer (nothing to do while data load: they bring one)."""
        if self.session.busy or self.session.bundle is None:
            return
        self.session.reset()

    def _step(self) -> None:
        """Step: pause if playing, then one iteration (in the training pool, ahead of the
        other sessions' slices, when an event loop runs; else now).  Pressed while data
        load or the sampler compiles, the iteration runs as soon as they are ready."""
        s = self.session
        if s.running:
            s.pause()
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a script driving the view: nothing can become ready
            if self._sampler_ready():
                s.step(1)  # redraws through the session's "stepped" event
            else:
                self._refresh_all()
            return
        self.run_loop.step()
        self.guard(self.messages.show_status)

    # ------------------------------------------------------------------ refresh
    def _on_version(self, event=None) -> None:
        """A new trainer (new data, noise or n'): redraw everything."""
        if self.session.bundle is None:
            return
        with pn.io.hold():
            self._refresh_fast()
            self.guard(self._refresh_heavy)
        # the noise views take about half a second to draw (two new figures): on a served
        # page they come at the next tick, so the click's status and controls show first
        self.binder.later(self._refresh_static)

    def _refresh_all(self) -> None:
        with pn.io.hold():
            self._refresh_fast()
            self.guard(self._refresh_heavy)

    def _on_table(self) -> None:
        if self.tabs.active == 1:
            self.tables_tab.refresh()

    def _on_tab(self, event=None) -> None:
        """A tab became visible: bring its views up to date now."""
        with pn.io.hold():
            self.guard(self._refresh_heavy)

    def _refresh_fast(self) -> None:
        """The status line and, on the Training tab, the scoreboard and line plots."""
        self._last_fast = self._last_status = time.monotonic()
        self.messages.show_status()
        if self.session.trainer is not None and self.tabs.active == 0:
            self.training_tab.refresh_lines()

    def _refresh_heavy(self) -> None:
        """The visible tab's heavier views (predictions, d̂ vs d, table, curve, XOR bars)."""
        self._last_heavy = time.monotonic()
        if self.session.trainer is not None:
            self._heavy[self.tabs.active]()

    def _refresh_static(self) -> None:
        """What changes only with a new release: the noise views and σ."""
        self.privacy_tab.refresh_noise()
        self.privacy_card.refresh_sigma()


def _connection_lost_banner():
    """A "connection lost — reload" banner when the websocket closes (the server stopped,
    the network dropped, or a message was too large for it)."""
    from bokeh.models import CustomJS

    return CustomJS(code=CONNECTION_LOST_JS)
