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
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

import pandas as pd
import param

from ..errors import AggMRFError, error_message
from ..kernels import make_chain
from ..kernels.chain import numpy_samples
from ..settings import check_combination
from .keys import DATA_KEYS, LIVE_KEYS, NOISE_KEYS, RULE_KEYS, TRAINER_KEYS, URL_KEYS
from .params import declaration, param_for
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
from .session_training import TrainingControl
from .session_views import SessionViews

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


class ExplorerSession(SessionViews, TrainingControl, param.Parameterized):
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
        self._chain_build = chain_build or (lambda: "parallel")  # (first start: "numpy")
        self._loader: Callable[[str], None] | None = None  # view hook: asynchronous (re)load
        super().__init__(**params)
        self.bundle: ProblemBundle | None = None
        self.data = None  # AggregatedData the trainer sees (maybe noisy)
        self.mechanism_obj = None
        self.trainer = None
        self.baselines: dict = {}
        self.floor: float = float("nan")
        self._rate: deque = deque(maxlen=64)
        self._history_cache: tuple = (None, pd.DataFrame())
        self._test_rows: tuple = (None, None)  # (trainer, rows of the test records)
        self._notice_at: tuple[float, int] = (0.0, 0)  # (time, iteration) the notice appeared
        self._last_live: tuple | None = None  # (name, old, new, iteration): last λ/α change
        self._run_info: dict | None = None  # dataset and privacy settings of the live run
        # held while a slice trains (maybe in a worker thread): a live setting that changes
        # meanwhile waits for its end (``_live_pending``) instead of changing the trainer
        self._train_lock = threading.Lock()
        self._live_pending = False
        self.steps_wanted = 0  # Steps pressed, waiting for data or sampler (want_step)
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

    def restore(self, values: dict) -> None:
        """Put settings back to values known to be good (after a failed load), quietly."""
        with self.quiet():
            self.param.update(values)

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
        params' declarations cannot express; returns the cleaned value or raises
        AggMRFError.  Bounds and choices are checked by param when the value is set."""
        if name not in (*URL_KEYS, "upload_hash"):
            raise AggMRFError(f"unknown setting {name!r}.")
        decl = declaration(name)
        if decl is not None:  # one of the declared settings: its one check
            return decl.check(value)
        p = self.param[name]
        if isinstance(p, param.Boolean):
            return bool(value)
        if isinstance(p, param.String):
            return str(value)
        if isinstance(p, param.Integer):
            try:
                x = float(value)
            except (TypeError, ValueError):
                raise AggMRFError(f"{p.label} must be a whole number; got {value!r}.") from None
            if not math.isfinite(x) or x != int(x):
                raise AggMRFError(f"{p.label} must be a whole number; got {value!r}.")
            return int(x)
        if isinstance(p, param.Number):
            try:
                x = float(value)
            except (TypeError, ValueError):
                raise AggMRFError(f"{p.label} must be a number; got {value!r}.") from None
            if not math.isfinite(x):
                raise AggMRFError(f"{p.label} must be a finite number; got {value!r}.")
            return x
        if name == "features":
            if isinstance(value, str):
                value = [v for v in value.split(",") if v]
            value = [str(v) for v in value]
            if self.bundle is not None and value:
                unknown = [f for f in value if f not in self.bundle.all_features]
                if unknown:
                    raise AggMRFError(f"unknown features {unknown}.")
            return value
        return value

    def _rejected(self, name: str, value) -> str:
        """The message for a value that the param's declaration rejects."""
        p = self.param[name]
        label = p.label or name
        if isinstance(p, param.Selector):
            opts = ", ".join(map(str, p.objects))
            return f"{label} must be one of {opts}; got {value!r}."
        if isinstance(p, param.Number) and p.bounds is not None:
            lo, hi = p.bounds
            if isinstance(p, param.Integer):
                return f"{label} must be between {lo:,} and {hi:,}; got {int(value):,}."
            lo_in, hi_in = p.inclusive_bounds
            if lo is not None and (value < lo or (value == lo and not lo_in)):
                return f"{label} must be {'≥' if lo_in else '>'} {lo:g}; got {value:g}."
            if hi is not None and (value > hi or (value == hi and not hi_in)):
                return f"{label} must be {'≤' if hi_in else '<'} {hi:g}; got {value:g}."
        return f"invalid {label}: {value!r}."

    def propose(self, name: str, value) -> str | None:
        """Apply a setting if valid; else record and return a message (state unchanged)."""
        try:
            clean = self.check(name, value)
            try:
                self.param.update({name: clean})
            except ValueError:
                if _same(getattr(self, name), clean):
                    raise  # set, then failed elsewhere: report that failure
                raise AggMRFError(self._rejected(name, clean)) from None  # param refused it
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
                self._last_live = (e.name, e.old, e.new, self.iteration)
        if "dataset" in names and self.bundle is not None and not self.keep_settings:
            self._defaults_for_new_dataset(names)
        try:
            for e in events:
                if e.name in names:
                    self.check(e.name, e.new)
            self._apply(names)
        except Exception as exc:  # noqa: BLE001
            msg = error_message(exc)
            self.restore({e.name: e.old for e in events if e.name in names})
            self.errors = {**self.errors, **{n: msg for n in names}}
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

    def _defaults_for_new_dataset(self, names: set[str]) -> None:
        """A dataset switch: hand-set λ, α, n' and seeds go back to their defaults (the
        rule, at the next load), except settings changed together with the dataset (a
        preset or a link) and unless ``keep_settings`` pins them."""
        values = {k: self.param[k].default for k in RESET_ON_SWITCH if k not in names}
        if "triples" not in names:
            values["triples"] = False
        with self.quiet():
            self.param.update(values)

    def _apply_live(self) -> None:
        if self.trainer is not None:
            if self._train_lock.acquire(blocking=False):
                try:
                    self.trainer.update(**{k: getattr(self, k) for k in LIVE_KEYS})
                finally:
                    self._train_lock.release()
            else:  # a slice is training: its end applies them (finish_slice)
                self._live_pending = True
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

    def _release(self) -> None:
        b = self.bundle
        self.data, self.mechanism_obj = get_release(
            b,
            self.mechanism,
            self.epsilon,
            self.delta,
            self.accounting,
            self.calibration,
            self.noise_seed,
        )
        self._good_noise = {k: getattr(self, k) for k in NOISE_KEYS}

    def _release_or_revert(self) -> None:
        """:meth:`_release`; if the privacy settings cannot make one (e.g. a local ε too
        small for a usable channel, from a link), the noise settings that changed since the
        last good release go back to it, one at a time (ε first), and the message stays
        beside the reverted control (``errors``); other failures raise."""
        try:
            self._release()
            return
        except AggMRFError as exc:
            changed = [k for k in NOISE_KEYS if not _same(getattr(self, k), self._good_noise[k])]
            if not changed:
                raise
            msg = error_message(exc)
        for group in [[k] for k in sorted(changed, key=lambda k: k != "epsilon")] + [changed]:
            bad = {k: getattr(self, k) for k in group}
            self.restore({k: self._good_noise[k] for k in group})
            try:
                self._release()
            except AggMRFError:
                self.restore(bad)
                continue
            self.errors = {**self.errors, **{k: msg for k in group}}
            return
        raise AggMRFError(msg)

    def _new_trainer(self, notice: str = "") -> None:
        from ..mrf import PCDTrainer, TrainerSettings, expected_floor

        check_combination({"mechanism": self.mechanism, "noise_aware": self.noise_aware})
        settings = TrainerSettings(
            n_gibbs=self.n_gibbs,
            lambda_mu=self.lambda_mu,
            lambda_theta=self.lambda_theta,
            step_mu=self.step_mu,
            step_theta=self.step_theta,
            gradient=self.gradient,
            precondition=self.precondition,
            noise_aware=self.noise_aware,
            seed=self.train_seed,
            eval_every=self._eval_every(),
        ).validate()
        enc = self.bundle.encoded
        # (nothing ready yet: the build the first slice can run soonest)
        build = self._usable_build() or ("numpy" if numpy_samples(self.data.layout) else "parallel")
        chains = functools.partial(make_chain, build=build)
        trainer = PCDTrainer(self.data, settings, enc.X_test, enc.y_test, chain_factory=chains)
        self._record_privacy_run()
        self.trainer = trainer
        self._run_info = {
            "dataset": self.dataset,
            "mechanism": self.mechanism,
            "epsilon": float(self.epsilon),
            "noise_aware": bool(self.noise_aware),
        }
        self.floor = expected_floor(self.data, self.n_gibbs)
        self._rate.clear()
        self._last_live = None
        self.warning = ""
        self.set_notice(notice)
        self.version += 1
        self.update_status()

    def _record_privacy_run(self) -> None:
        """The run being replaced becomes a point of the privacy curve (``privacy_runs``)
        if it trained under a mechanism for at least ``MIN_PRIVACY_RUN`` iterations."""
        info = self._run_info
        tr = self.trainer
        if info is None or tr is None or info["mechanism"] == "none":
            return
        nl = tr.last_nllh
        if tr.iteration < MIN_PRIVACY_RUN or nl is None or not math.isfinite(nl):
            return
        run = {**info, "nllh": float(nl), "iterations": int(tr.iteration)}
        self.privacy_runs = [*self.privacy_runs, run]

    def privacy_point(self) -> dict | None:
        """The live run as a (not yet finished) point of the privacy curve, or None."""
        info = self._run_info
        tr = self.trainer
        if info is None or tr is None or info["mechanism"] == "none" or tr.last_nllh is None:
            return None
        return {**info, "nllh": float(tr.last_nllh), "iterations": int(tr.iteration)}

    def _eval_every(self) -> int:
        """Evaluate the test NLLH every iteration on small problems, every 2–10 on large ones.

        (Scoring 16 000 Adult test records with 106 tables costs about a fifth of an
        iteration: every 6th keeps it near 3 % of the training time, and the NLLH curve,
        at ~100 it/s, still gets more points per second than the plot has refreshes.)
        """
        enc = self.bundle.encoded
        work = len(enc.y_test) * self.bundle.layout.n_tables
        return int(min(10, max(1, work // 250_000)))


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
