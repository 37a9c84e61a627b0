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
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import param

from ..errors import AggMRFError, error_message
from ..kernels import make_chain
from ..kernels.chain import numpy_samples
from ..settings import check_combination
from . import frames
from .keys import DATA_KEYS, LIVE_KEYS, NOISE_KEYS, RULE_KEYS, TRAINER_KEYS, URL_KEYS
from .params import clean_value, param_for, rejected_message
from .problems import (
    CHEAP_BASELINES,
    DATASETS,
    GENERATED,
    SLOW_BASELINES,
    ProblemBundle,
    get_baselines,
    get_problem,
    get_release,
    peek_baselines,
)
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

# hand-set settings that return to their defaults on a dataset switch (unless keep_settings)
RESET_ON_SWITCH = ("n_gibbs", "train_seed", "data_seed", "noise_seed", "auto_defaults")
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
            self.errors = {**self.errors, **{k: message for k in (*good,) or blame}}
            self.notice = ""

    def use_upload(self, upload_hash: str) -> None:
        """Select a freshly uploaded CSV: dataset "upload", no label column yet (nothing
        loads until the label column is picked)."""
        with self.quiet():
            self.param.update(upload_hash=upload_hash, label_column="")
            if self.dataset != "upload":
                self.dataset = "upload"
        self.errors = {**self.errors, "label_column": "now pick the label column of your CSV."}

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
                if _same(getattr(self, name), clean):
                    raise  # set, then failed elsewhere: report that failure
                raise AggMRFError(rejected_message(self.param[name], name, clean)) from None
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message
            msg = error_message(exc)
            self.errors = {**self.errors, name: msg}
            return msg
        return self.errors.get(name)

    def _settings_changed(self, *events) -> None:
        if self._quiet:
            return
        names = {e.name for e in events if e.old is not e.new and not _same(e.old, e.new)}
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
                self.param.update(_switch_defaults(self, names))
        try:
            for e in events:
                if e.name in names:
                    self.check(e.name, e.new)
            self._apply(names)
        except Exception as exc:  # noqa: BLE001
            self.revert({e.name: e.old for e in events if e.name in names}, error_message(exc))
            return
        if any(n in self.errors for n in names):
            self.errors = {k: v for k, v in self.errors.items() if k not in names}

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
                self.errors = {**self.errors, "label_column": f"now {step}."}
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
        release = "new noisy release, " if what == "noise" else ""
        self._new_trainer(notice=f"{label} changed: {release}training restarted.")

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
        n = self.n_samples if self.dataset in GENERATED else None
        return dict(
            dataset=self.dataset,
            n=n,
            seed=self.data_seed,
            features=tuple(self.features) or None,
            singles=self.singles,
            pairs=self.pairs,
            triples=bool(self.triples and self.dataset == "xor" and not self.features),
            label=self.label_column if self.dataset == "upload" else "",
            upload=self.upload_hash if self.dataset == "upload" else "",
        )

    def fetch(self) -> ProblemBundle:
        """The (cached) problem for the current data settings; may take seconds (thread-safe)."""
        return get_problem(**self.data_key())

    def load(self, bundle: ProblemBundle | None = None, notice: str = "") -> None:
        """Install a problem (computed now if not given) and start a fresh trainer.

        ``busy`` stays set until the new trainer is in place, so the status line never
        shows the previous trainer's iteration and NLLH under the new dataset's name; a
        failure puts the previous problem and trainer back.
        """
        # (``running`` is left as it is: a Play pressed before or during the load is an
        # intent the new trainer keeps; ``busy`` holds the slices back meanwhile)
        previous = (self.bundle, self.data, self.mechanism_obj, self.trainer, self.baselines)
        try:
            self.busy = True
            bundle = bundle if bundle is not None else self.fetch()
            self.bundle = bundle
            try:
                self._release_or_revert()
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
        from ..trainer_settings import default_settings, release_noise_sd

        sd = 0.0 if self.data is None else release_noise_sd(self.data)
        aware = bool(self.noise_aware and sd > 0)
        d = default_settings(self.bundle.layout, self.bundle.aggregated.n, sd, noise_aware=aware)
        with self.quiet():
            self.param.update({k: getattr(d, k) for k in RULE_KEYS})

    def _release(self, values: dict | None = None) -> None:
        """The release of the current privacy settings (or of ``values`` for them)."""
        v = {k: getattr(self, k) for k in NOISE_KEYS} | (values or {})
        self.data, self.mechanism_obj = get_release(self.bundle, *(v[k] for k in NOISE_KEYS))
        self._good_noise = v

    def _release_or_revert(self) -> None:
        """:meth:`_release`; if the privacy settings cannot make one (e.g. a local ε too
        small for a usable channel, from a link), the noise settings that changed since the
        last good release go back to it (:meth:`revert`), one at a time (ε first), else
        all of them; other failures raise."""
        try:
            return self._release()
        except AggMRFError as exc:
            changed = [k for k in NOISE_KEYS if not _same(getattr(self, k), self._good_noise[k])]
            if not changed:
                raise
            msg = error_message(exc)
        for group in [[k] for k in sorted(changed, key=lambda k: k != "epsilon")] + [changed]:
            good = {k: self._good_noise[k] for k in group}
            try:
                self._release(good)
            except AggMRFError:
                continue
            return self.revert(good, msg)
        raise AggMRFError(msg)

    def _new_trainer(self, notice: str = "") -> None:
        from ..mrf import PCDTrainer, expected_floor

        check_combination({"mechanism": self.mechanism, "noise_aware": self.noise_aware})
        settings = _trainer_settings(self)
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


def _switch_defaults(s: ExplorerSession, names: set[str]) -> dict:
    """A dataset switch: the hand-set λ, α, n' and seeds that go back to their defaults (the
    rule, at the next load), except settings changed together with the dataset (a preset
    or a link); the triplet table goes off."""
    values = {k: s.param[k].default for k in RESET_ON_SWITCH if k not in names}
    if "triples" not in names:
        values["triples"] = False
    return values


def _trainer_settings(s: ExplorerSession):
    """The trainer's settings from the store's (``TrainerSettings``, validated).

    The test NLLH is evaluated every iteration on small problems, every 2–10 on large
    ones (scoring 16 000 Adult test records with 106 tables costs about a fifth of an
    iteration: every 6th keeps it near 3 % of the training time, and the NLLH curve, at
    ~100 it/s, still gets more points per second than the plot has refreshes).
    """
    from ..mrf import TrainerSettings

    work = len(s.bundle.encoded.y_test) * s.bundle.layout.n_tables
    return TrainerSettings(
        n_gibbs=s.n_gibbs,
        lambda_mu=s.lambda_mu,
        lambda_theta=s.lambda_theta,
        step_mu=s.step_mu,
        step_theta=s.step_theta,
        gradient=s.gradient,
        precondition=s.precondition,
        noise_aware=s.noise_aware,
        seed=s.train_seed,
        eval_every=int(min(10, max(1, work // 250_000))),
    ).validate()


def baseline_names(bundle: ProblemBundle, which: tuple[str, ...]) -> tuple[str, ...]:
    """The baselines of ``which`` that apply to a problem: the best pair needs two features
    (a one-feature subset, half-built by clicking, trains without it)."""
    if bundle.layout.n_features < 2:
        return tuple(w for w in which if w != "best_pair")
    return tuple(which)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False
