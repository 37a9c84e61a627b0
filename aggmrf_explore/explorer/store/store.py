"""The explorer's session store: settings with declared bounds, the problem, the trainer, the run loop.

One :class:`ExplorerSession` per browser session (or notebook), following Panel's "data
store" pattern: a ``param.Parameterized`` holding the settings (params that *declare*
their bounds and choices, so param itself rejects bad values) and the data derived from
them (problem, release, trainer, history); the views (``app.py``) take the store, read it
and call its public methods.  It holds *valid* settings only: :meth:`propose` applies a
value or records a message in ``errors`` (keyed by setting) while the previous valid
state keeps running.

Nothing here does maths: it calls the package (``problems.py`` for the shared, cached
data → mrf.PCDTrainer) and keeps the results.  Importing it does not import Panel.

State machine::

    empty ──load()──▶ ready ──play()──▶ running ──pause()──▶ paused
                        ▲  step() runs k iterations when not running │
                        └──────────── reset() / invalidating change ─┘

``tick(budget)`` runs iterations until ``budget`` seconds are used (time-boxed), only
while running.  Changes of λ, step sizes, gradient, preconditioning apply at the next
iteration; changes of data, features, tables, noise or n' rebuild the trainer and set
``notice`` to say so.

The store is assembled from members, not base classes: its run control is ``session.run``
(:class:`~.run_control.RunControl`: slices, Steps waiting, the rate, the status line),
and the frames the views show are pure functions (:mod:`.frames`;
:meth:`ExplorerSession.history` and :meth:`ExplorerSession.predictions` keep what is
worth keeping between refreshes).  A change that fails goes back through one method,
:meth:`ExplorerSession.revert` (the settings' last good values, the message beside
their controls).

The store is the only writer of its params: the views and the loader call its methods
(:meth:`~ExplorerSession.propose`, ``begin_load`` / ``load`` / ``fail_load`` /
``end_load``, ``report_errors`` / ``clear_errors``, ``play`` / ``pause``…) and never
assign them.  The default rule's values, the settings a dataset switch puts back and the
trainer's settings come from :mod:`.defaults`; the noisy release from :mod:`.releases`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd
import param

from ...errors import AggMRFError, error_message
from ...kernels import make_chain
from ...kernels.chain import numpy_samples
from ...settings import check_combination
from . import frames
from .defaults import rule_values, switch_defaults, trainer_settings
from .keys import DATA_KEYS, LIVE_KEYS, NOISE_KEYS, RULE_KEYS, TRAINER_KEYS, URL_KEYS
from .params import clean_value, param_for, rejected_message, same_value
from .problems import (
    CHEAP_BASELINES,
    DATASETS,
    SLOW_BASELINES,
    ProblemBundle,
    get_baselines,
    get_problem,
    peek_baselines,
    problem_arguments,
)
from .releases import release, release_or_fallback
from .run_control import RunControl, TrainingSlice

__all__ = [
    "ExplorerSession",
    "DATA_KEYS",
    "NOISE_KEYS",
    "TRAINER_KEYS",
    "LIVE_KEYS",
    "RULE_KEYS",
    "URL_KEYS",
    "baseline_names",
]

NOTICE_SECONDS = 8.0  # a routine notice disappears after this long of training / next action
MIN_PRIVACY_RUN = 20  # iterations a run needs to count as a point of the privacy curve


class ExplorerSession(param.Parameterized):
    """The state of one explorer session (settings, data, trainer, run loop).

    Settings are params with declared bounds (``param.Number(bounds=...)``,
    ``param.Integer``, ``param.Selector(objects=...)``): assigning a bad value raises
    ``ValueError``, :meth:`propose` turns it into a message.  Derived data (not params):
    ``bundle`` (the shared problem), ``data`` (what the trainer sees, maybe noisy),
    ``mechanism_obj``, ``trainer``, ``baselines`` ({name: result}), ``floor``.
    """

    # --- data
    # the first screen: XOR converges within a second, d̂ reaches its Monte-Carlo floor
    dataset = param.Selector(default="xor", objects=list(DATASETS), label="dataset")
    n_samples = param.Integer(
        default=20_000,
        bounds=(50, 1_000_000),
        softbounds=(100, 100_000),
        label="sample size n",
        doc="Records per split (generated data)",
    )
    data_seed = param_for("seed", doc="Seed of the generated data / split")
    features = param.List(default=[], item_type=str, doc="Feature subset (empty: all)")
    singles = param.Boolean(default=True, doc="Release single-feature tables")
    pairs = param.Boolean(default=True, doc="Release pair tables")
    triples = param.Boolean(
        default=False, doc="XOR only: also release the (X1, X2, X3) triplet table"
    )
    label_column = param.String(default="", doc="Label column of an uploaded CSV")
    upload_hash = param.String(default="", doc="Content hash of the uploaded CSV")
    # --- privacy
    mechanism = param_for("mechanism")
    epsilon = param_for("epsilon", softbounds=(0.01, 100))
    delta = param_for("delta", softbounds=(1e-12, 1e-2))
    accounting = param_for("accounting")
    calibration = param_for("calibration")
    noise_seed = param_for("seed", doc="Seed of the noise draw (a simulation)")
    noise_aware = param_for("noise_aware")
    # --- training (a rule's default: its value on the first screen, XOR with T = 6 tables)
    n_gibbs = param_for("n_gibbs", 10_000, softbounds=(100, 50_000))
    train_seed = param_for("seed", doc="Seed of the Gibbs sampler")
    auto_defaults = param.Boolean(default=True, doc="Use the default rule for λ and α")
    keep_settings = param.Boolean(
        default=False,
        doc="Keep hand-set λ, α, n' and seeds on a dataset switch (else: back to the defaults)",
    )
    lambda_mu = param_for("lambda_mu", softbounds=(0.0, 1e3))
    lambda_theta = param_for("lambda_theta", 3.0, softbounds=(0.0, 1e4))
    step_mu = param_for("step_mu", 1 / 3, softbounds=(1e-4, 1.0))
    step_theta = param_for("step_theta", 1 / 6, softbounds=(1e-4, 1.0))
    gradient = param_for("gradient")
    precondition = param_for("precondition")
    iters_per_tick = param.Integer(
        default=50,
        bounds=(1, 1000),
        softbounds=(1, 200),
        label="iterations per tick",
        doc="Most iterations in one tick",
    )
    table = param.String(default="", doc="Table shown in the table browser")
    # --- run state (not settings)
    running = param.Boolean(default=False)
    busy = param.Boolean(default=False)
    status = param.String(default="no data loaded")
    stepped = param.Event(doc="Fired after step(k) (Step button or code): views redraw")
    notice = param.String(default="")
    warning = param.String(default="", doc="Divergence, with its likely cause")
    privacy_runs = param.List(
        default=[],
        item_type=dict,
        doc="Finished runs of this session under a privacy mechanism: one dict "
        "{epsilon, nllh, iterations, mechanism} per run (the NLLH-vs-ε curve)",
    )
    errors = param.Dict(default={})
    version = param.Integer(default=0, doc="Bumped whenever the trainer is rebuilt")

    def __init__(
        self, lazy: bool = False, chain_build: Callable[[], str | None] | None = None, **params
    ) -> None:
        self._quiet = 0  # > 0: setting changes get no reaction (see quiet())
        self.run = RunControl(self, chain_build)  # (first start: chain_build() is "numpy")
        self._loader: Callable[[str], None] | None = None  # view hook: asynchronous (re)load
        super().__init__(**params)
        self.bundle: ProblemBundle | None = None
        self.data = None  # AggregatedData the trainer sees (maybe noisy)
        self.mechanism_obj = None
        self.trainer = None
        self.baselines: dict = {}
        self.floor: float = float("nan")
        self._history_cache: tuple = (None, None)  # (trainer, its history frame so far)
        self._test_rows: tuple = (None, None)  # (trainer, rows of the test records)
        self._notice_at: tuple[float, int] = (0.0, 0)  # (time, iteration) the notice appeared
        self._run_info: dict | None = None  # dataset and privacy settings of the live run
        self._good_noise = {k: self.param[k].default for k in NOISE_KEYS}  # last release made
        self.param.watch(self._settings_changed, list(URL_KEYS) + ["upload_hash"])
        if not lazy:
            self.load()

    # ------------------------------------------------------------------ public hooks for views
    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Within the block, setting changes are stored without any reaction (no check,
        no reload, no retraining): for values that are already known to be in effect."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def set_loader(self, loader: Callable[[str], None] | None) -> None:
        """Let a view load new data asynchronously: on a data change the store calls
        ``loader(notice)`` instead of loading in the calling thread (None: load here)."""
        self._loader = loader

    def revert(self, good: dict, message: str = "", blame: tuple[str, ...] = ()) -> None:
        """The one rollback: put settings back to ``good`` (their last values known to
        work), without any reaction, and show ``message`` (if any) beside each reverted
        control in ``errors`` (beside those of ``blame`` when none is reverted)."""
        with self.quiet():
            self.param.update(good)
        if message:  # (and a routine notice about the change no longer holds)
            self.report_errors({k: message for k in (*good,) or blame})
            self.notice = ""

    def report_errors(self, messages: Mapping[str, str]) -> None:
        """Show each message of ``messages`` ({setting: text}) beside its control in
        ``errors``; the other controls keep theirs."""
        if messages:
            self.errors = {**self.errors, **messages}

    def clear_errors(self, names: Iterable[str]) -> None:
        """Take away the messages beside the controls ``names`` (their values are good now)."""
        names = set(names)
        if names & set(self.errors):
            self.errors = {k: v for k, v in self.errors.items() if k not in names}

    def use_upload(self, upload_hash: str) -> None:
        """Select a freshly uploaded CSV: dataset "upload", no label column yet (nothing
        loads until the label column is picked)."""
        with self.quiet():
            self.param.update(upload_hash=upload_hash, label_column="")
            if self.dataset != "upload":
                self.dataset = "upload"
        self.report_errors({"label_column": "now pick the label column of your CSV."})

    def close(self) -> None:
        """Stop and drop the per-session data (the browser tab closed)."""
        with self.quiet():
            self.running = False
        self.trainer = None
        self.bundle = self.data = self.mechanism_obj = None
        self._history_cache = (None, None)
        self._test_rows = (None, None)

    # ------------------------------------------------------------------ settings
    def settings(self) -> dict:
        """The current settings as a JSON-friendly dict (what the URL and the download hold)."""
        return {k: getattr(self, k) for k in URL_KEYS}

    def settings_json(self) -> str:
        return json.dumps(self.settings(), indent=2)

    def check(self, name: str, value):
        """Clean one proposed setting (types from widgets and URLs) and run the checks the
        params' declarations cannot express (:func:`.params.clean_value`); returns the
        cleaned value or raises AggMRFError.  Bounds and choices are checked by param
        when the value is set."""
        if name not in (*URL_KEYS, "upload_hash"):
            raise AggMRFError(f"unknown setting {name!r}.")
        features = None if self.bundle is None else self.bundle.all_features
        return clean_value(self.param[name], name, value, features)

    def propose(self, name: str, value) -> str | None:
        """Apply a setting if valid; else record and return a message (state unchanged)."""
        try:
            clean = self.check(name, value)
            try:
                self.param.update({name: clean})
            except ValueError:
                if same_value(getattr(self, name), clean):
                    raise  # set, then failed elsewhere: report that failure
                raise AggMRFError(rejected_message(self.param[name], name, clean)) from None
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message
            msg = error_message(exc)
            self.report_errors({name: msg})
            return msg
        return self.errors.get(name)

    def _settings_changed(self, *events) -> None:
        if self._quiet:
            return
        names = {e.name for e in events if e.old is not e.new and not same_value(e.old, e.new)}
        if not names:
            return
        if names & set(RULE_KEYS):
            with self.quiet():
                self.auto_defaults = False if "auto_defaults" not in names else self.auto_defaults
        for e in events:
            if e.name in names and e.name in LIVE_KEYS:
                self.run.live_changed(e.name, e.old, e.new)
        if "dataset" in names and self.bundle is not None and not self.keep_settings:
            with self.quiet():  # hand-set λ, α, n' and seeds back to their defaults
                self.param.update(switch_defaults(self, names))
        try:
            for e in events:
                if e.name in names:
                    self.check(e.name, e.new)
            self._apply(names)
        except Exception as exc:  # noqa: BLE001
            self.revert({e.name: e.old for e in events if e.name in names}, error_message(exc))
            return
        self.clear_errors(names)

    def _apply(self, names: set[str]) -> None:
        if self.bundle is None:
            return  # nothing loaded yet: the first load reads the current settings
        if names & (set(DATA_KEYS) | {"upload_hash"}):
            if self.dataset == "upload" and not (self.upload_hash and self.label_column):
                # "Upload a CSV…" chosen: the current problem keeps running until a file
                # is uploaded and its label column picked
                step = (
                    "pick the label column of your CSV"
                    if self.upload_hash
                    else ("choose a CSV file, then pick its label column")
                )
                self.report_errors({"label_column": f"now {step}."})
                return
            self._invalidate("data", names)
        elif names & set(NOISE_KEYS):
            self._invalidate("noise", names)
        elif names & set(TRAINER_KEYS):
            self._invalidate("trainer", names)
        elif names & {"auto_defaults"} and self.auto_defaults and self.bundle is not None:
            self._set_defaults()
            self._apply_live()
        elif names & set(LIVE_KEYS):
            self._apply_live()

    def _apply_live(self) -> None:
        self.run.apply_live()  # (now, or at the end of the slice under way: finish_slice)
        self.warning = ""
        self.notice = ""  # the user's next action: a routine notice has been read

    def set_notice(self, text: str) -> None:
        """Show a routine notice; it goes away after ``NOTICE_SECONDS`` of training."""
        self._notice_at = (time.perf_counter(), self.iteration)
        self.notice = text

    def _expire_notice(self) -> None:
        t, it = self._notice_at
        if self.notice and self.iteration > it and time.perf_counter() - t > NOTICE_SECONDS:
            self.notice = ""

    def _invalidate(self, what: str, names: set[str]) -> None:
        label = ", ".join(sorted(names))
        if what == "data" and self._loader is not None:
            self._loader(f"{label} changed: data are being prepared, training restarts.")
            return
        if what == "data":
            return self.load(notice=f"{label} changed: data reloaded, training restarted.")
        if what == "noise":
            self._release()
        if self.auto_defaults and names & {*NOISE_KEYS, "noise_aware"}:
            self._set_defaults()  # (the rule's λ follows the noise, and MRF-N's targets)
        released = "new noisy release, " if what == "noise" else ""
        self._new_trainer(notice=f"{label} changed: {released}training restarted.")

    # ------------------------------------------------------------------ run (``run_control``)
    @property
    def iteration(self) -> int:
        return 0 if self.trainer is None else self.trainer.iteration

    @property
    def diverged(self) -> bool:
        """The last step diverged and nothing that could help has changed since (the
        trainer holds the last good state; ``warning`` says why)."""
        return bool(self.warning) and self.trainer is not None

    def play(self) -> None:
        """Record that the session wants to train (``running``): it trains as soon as its
        data and sampler are ready (while data load, ``running`` is already set: the
        load keeps it, and the status line says what training waits for)."""
        if self.diverged:  # the same step would only be rejected again
            raise AggMRFError(
                "training diverged: lower a step size α or raise λ, or press "
                "“Continue from last good state” (halves α), or Reset."
            )
        self.running = True
        self.run.rate.clear()
        self.update_status()

    def pause(self) -> None:
        self.running = False
        self.update_status()

    def resume(self, shrink: float = 0.5) -> None:
        """Continue training from the last good state after a divergence: the step sizes
        α_μ, α_θ are multiplied by ``shrink`` unless the user changed a setting since (the
        trainer rejected the diverging step, so μ, θ and the history are those of the last
        good iteration), then training plays."""
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        if self.diverged:
            it = self.trainer.iteration
            with self.quiet():
                self.auto_defaults = False
            self.param.update(step_mu=self.step_mu * shrink, step_theta=self.step_theta * shrink)
            self.warning = ""
            self.set_notice(
                f"continuing from iteration {it:,}, the last good state, with the step sizes "
                f"multiplied by {shrink:g}: α_μ = {self.step_mu:.3g}, α_θ = {self.step_theta:.3g}."
            )
        self.play()

    def reset(self) -> None:
        """Fresh trainer on the same data and settings (keeps running if it was)."""
        if self.bundle is None:
            return self.load()
        self._new_trainer(notice="reset: training restarted from iteration 0.")

    def step(self, k: int = 1) -> list:
        """Run k iterations now (the Step button); returns their statistics."""
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        stats = self.finish_slice(self.run.train_slice(None, int(k)))
        self.param.trigger("stepped")
        return stats

    def tick(self, budget: float = 0.06) -> list:
        """One time-boxed slice of training while running: iterations until ``budget`` s
        are used (at most ``iters_per_tick``); returns their statistics."""
        if not self.running or self.trainer is None or self.busy:
            return []
        return self.finish_slice(self.run.train_slice(budget, self.iters_per_tick))

    def finish_slice(self, done: TrainingSlice) -> list:
        """Apply a slice's outcome (``run.train_slice``, maybe trained in a worker thread)
        on the thread of the views: the live settings changed meanwhile, a divergence
        (pauses training with a warning), the rate and the status line.  Returns the
        slice's statistics ([] if the trainer was replaced meanwhile)."""
        self.run.apply_pending()
        if done.trainer is not self.trainer or self.trainer is None:
            return []  # a reset or new data replaced it: its iterations are gone
        if done.error is not None:
            self.running = False
            self.notice = ""
            self.warning = f"{done.error} Training paused. {self.run.divergence_cause()}"
        if done.stats:
            self.run.record(self.trainer.iteration)
            self._expire_notice()
        self.update_status()
        return done.stats

    def update_status(self) -> None:
        """Recompute the one-line ``status`` (state, iteration, speed, test NLLH, dataset)."""
        self.status = self.run.status()

    # ------------------------------------------------------------------ frames (``frames``)
    def history(self) -> pd.DataFrame:
        """The training history (one row per iteration; :func:`.frames.history_frame`),
        built incrementally: a refresh converts only the iterations since the last one."""
        owner, frame = self._history_cache
        hist = [] if self.trainer is None else self.trainer.history
        frame = frames.history_frame(hist, frame if owner is self.trainer else None)
        self._history_cache = (self.trainer, frame)
        return frame

    def predictions(self) -> pd.DataFrame:
        """Test-set P(Y=1|x) of the live MRF and of the skyline logistic (if ready), with
        labels; the test records' table rows are computed once per trainer (a refresh
        then costs one gather of θ, not the row kernel)."""
        enc = self.bundle.encoded
        owner, rows = self._test_rows
        if owner is not self.trainer:
            rows = self.bundle.layout.rows(enc.X_test).astype(np.int32)
            self._test_rows = (self.trainer, rows)
        return frames.predictions(self.trainer.model, rows, self.baselines, enc.y_test)

    # ------------------------------------------------------------------ data
    def data_key(self) -> dict:
        """The arguments of ``get_problem`` for the current data settings
        (:func:`.problems.problem_arguments`)."""
        return problem_arguments({k: getattr(self, k) for k in (*DATA_KEYS, "upload_hash")})

    def fetch(self) -> ProblemBundle:
        """The (cached) problem for the current data settings; may take seconds (thread-safe)."""
        return get_problem(**self.data_key())

    # a load prepared off the event loop (``loader.Loader``): begin_load(), then load(bundle)
    # or fail_load(good, message); end_load() once it is over, either way
    def begin_load(self, notice: str = "") -> None:
        """New data are being prepared: ``busy`` holds the slices back (a Play waits) and
        the status line says so; ``notice``, if given, says what changed."""
        self.busy = True
        if notice:
            self.set_notice(notice)

    def fail_load(self, good: dict, message: str) -> None:
        """The data could not be prepared: :meth:`revert` the data settings to ``good``
        (``message`` beside the dataset when it is empty); slices are held back no more."""
        self.revert(good, message, blame=("dataset",))
        self.busy = False

    def end_load(self) -> None:
        """The load under way is over (installed, failed or outdated): training goes on with
        the data in place (none in place: slices stay held back until a load succeeds)."""
        if self.bundle is not None:
            self.busy = False

    def load(self, bundle: ProblemBundle | None = None, notice: str = "") -> None:
        """Install a problem (computed now if not given) and start a fresh trainer.

        ``busy`` stays set until the new trainer is in place, so the status line never
        shows the previous trainer's iteration and NLLH under the new dataset's name; a
        failure puts the previous problem and trainer back and raises.
        """
        # (``running`` is left as it is: a Play pressed before or during the load is an
        # intent the new trainer keeps; ``busy`` holds the slices back meanwhile)
        previous = (self.bundle, self.data, self.mechanism_obj, self.trainer, self.baselines)
        try:
            self.busy = True
            bundle = bundle if bundle is not None else self.fetch()
            self.bundle = bundle
            try:
                self._release(fall_back=True)
                if self.table not in bundle.layout.table_names:
                    with self.quiet():
                        self.table = bundle.layout.table_names[min(1, bundle.layout.n_tables - 1)]
                cheap = baseline_names(bundle, CHEAP_BASELINES)
                self.baselines = dict(peek_baselines(bundle, cheap) or {})
                self.baselines.update(peek_baselines(bundle, SLOW_BASELINES) or {})
                if not self.baselines or self._loader is None:
                    self.baselines.update(get_baselines(bundle, cheap))
                if self.auto_defaults:
                    self._set_defaults()
                self._new_trainer(notice=notice)
            except Exception:
                self.bundle, self.data, self.mechanism_obj, self.trainer, self.baselines = previous
                raise
        finally:
            self.busy = False
        if self.running and self.trainer is None:
            self.running = False
        self.update_status()

    def add_baselines(self, results: dict) -> None:
        self.baselines = {**self.baselines, **results}

    def _set_defaults(self) -> None:
        """The default rule's λ and α, at the release's declared noise (λ grows with it)."""
        with self.quiet():
            self.param.update(rule_values(self.bundle, self.data, self.noise_aware))

    def _release(self, fall_back: bool = False) -> None:
        """Install the release of the current privacy settings.  ``fall_back``: if they
        cannot make one, those that changed since the last release made go back
        (:func:`.releases.release_or_fallback`, then :meth:`revert`); else that raises."""
        wanted = {k: getattr(self, k) for k in NOISE_KEYS}
        if fall_back:
            made = release_or_fallback(self.bundle, wanted, self._good_noise)
        else:
            made = release(self.bundle, wanted)
        self.data, self.mechanism_obj, self._good_noise = made.data, made.mechanism, made.settings
        if made.reverted:
            self.revert(made.reverted, made.message)

    def _new_trainer(self, notice: str = "") -> None:
        from ...mrf import PCDTrainer, expected_floor

        check_combination({"mechanism": self.mechanism, "noise_aware": self.noise_aware})
        settings = trainer_settings(self)
        enc = self.bundle.encoded
        # (nothing ready yet: the build the first slice can run soonest)
        build = self.run.usable_build() or (
            "numpy" if numpy_samples(self.data.layout) else "parallel"
        )
        chains = functools.partial(make_chain, build=build)
        trainer = PCDTrainer(self.data, settings, enc.X_test, enc.y_test, chain_factory=chains)
        finished = frames.privacy_point(self._run_info, self.trainer, least=MIN_PRIVACY_RUN)
        if finished is not None:  # the run replaced: a point of the privacy curve
            self.privacy_runs = [*self.privacy_runs, finished]
        self.trainer = trainer
        self._run_info = {
            "dataset": self.dataset,
            "mechanism": self.mechanism,
            "epsilon": float(self.epsilon),
            "noise_aware": bool(self.noise_aware),
        }
        self.floor = expected_floor(self.data, self.n_gibbs)
        self.run.new_trainer()
        self.warning = ""
        self.set_notice(notice)
        self.version += 1
        self.update_status()

    def privacy_point(self) -> dict | None:
        """The live run as a (not yet finished) point of the privacy curve, or None."""
        return frames.privacy_point(self._run_info, self.trainer)


def baseline_names(bundle: ProblemBundle, which: tuple[str, ...]) -> tuple[str, ...]:
    """The baselines of ``which`` that apply to a problem: the best pair needs two features
    (a one-feature subset, half-built by clicking, trains without it)."""
    if bundle.layout.n_features < 2:
        return tuple(w for w in which if w != "best_pair")
    return tuple(which)
