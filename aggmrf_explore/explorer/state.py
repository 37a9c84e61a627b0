"""The explorer's session state: settings, the current problem, the trainer, the run loop.

One :class:`ExplorerSession` per browser session (or notebook).  It holds *valid* settings
only: :meth:`ExplorerSession.propose` checks a value and either applies it or records a
message in ``errors`` (keyed by setting) while the previous valid state keeps running.

Nothing here does maths: it calls the package (datasets → experiment.prepare → privacy
→ mrf.PCDTrainer → baselines / exact) and keeps the results.  Read-only data (prepared
problems, noisy releases, baselines, exact fits) are cached at module level and shared
by every session; baselines are also cached on disk, since the skyline logistic on Adult
takes about a minute.

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

import hashlib
import io
import json
import math
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import param

from ..errors import AggMRFError, DivergenceError

__all__ = [
    "ExplorerSession",
    "ProblemBundle",
    "DATA_KEYS",
    "NOISE_KEYS",
    "TRAINER_KEYS",
    "LIVE_KEYS",
    "URL_KEYS",
    "get_problem",
    "get_baselines",
    "clear_caches",
]

DATASETS = ("toy", "xor", "synthetic", "adult", "bank", "upload")
DATASET_NAMES = {
    "toy": "toy (Table 1)",
    "xor": "XOR",
    "synthetic": "synthetic",
    "adult": "Adult",
    "bank": "Bank marketing",
    "upload": "uploaded CSV",
}
GENERATED = ("xor", "synthetic")  # sample size n and seed apply
SUBSAMPLED = ("adult", "bank")  # n (optional subsample of the train split) and seed apply

# which settings invalidate what
DATA_KEYS = ("dataset", "n_samples", "data_seed", "features", "singles", "pairs", "label_column")
NOISE_KEYS = ("mechanism", "epsilon", "delta", "accounting", "calibration", "noise_seed")
TRAINER_KEYS = ("n_gibbs", "noise_aware", "train_seed")
LIVE_KEYS = ("lambda_mu", "lambda_theta", "step_mu", "step_theta", "gradient", "precondition")
URL_KEYS = (
    DATA_KEYS + NOISE_KEYS + TRAINER_KEYS + LIVE_KEYS + ("auto_defaults", "iters_per_tick", "table")
)
CHEAP_BASELINES = ("naive_bayes", "best_pair")
SLOW_BASELINES = ("logistic_pairs", "logistic")
BASELINE_LABELS = {
    "logistic_pairs": "logistic skyline (pairs, full data)",
    "logistic": "logistic (one-hot, full data)",
    "naive_bayes": "naive Bayes (single tables)",
    "best_pair": "best pair table",
}


# ====================================================================== shared caches
class _LockedCache:
    """A small LRU cache whose values are computed once even under concurrent requests."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict = {}

    def get(self, key, compute: Callable):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            klock = self._key_locks.setdefault(key, threading.Lock())
        with klock:
            with self._lock:
                if key in self._data:
                    return self._data[key]
            value = compute()
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                while len(self._data) > self.maxsize:
                    self._data.popitem(last=False)
                self._key_locks.pop(key, None)
            return value

    def peek(self, key):
        with self._lock:
            return self._data.get(key)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_PROBLEMS = _LockedCache(8)
_RELEASES = _LockedCache(16)
_BASELINES = _LockedCache(16)
_UPLOADS: OrderedDict[str, bytes] = OrderedDict()
_UPLOAD_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget every shared problem, release and baseline (tests)."""
    for c in (_PROBLEMS, _RELEASES, _BASELINES):
        c.clear()


def register_upload(data: bytes) -> str:
    """Keep uploaded CSV bytes (shared, read-only) and return their content hash."""
    h = hashlib.sha256(data).hexdigest()[:16]
    with _UPLOAD_LOCK:
        _UPLOADS[h] = data
        _UPLOADS.move_to_end(h)
        while len(_UPLOADS) > 8:
            _UPLOADS.popitem(last=False)
    return h


def upload_columns(upload_hash: str) -> list[str]:
    """Column names of an uploaded CSV (header line, ',' or ';' separated)."""
    with _UPLOAD_LOCK:
        data = _UPLOADS.get(upload_hash)
    if data is None:
        raise AggMRFError("the uploaded file is gone from the server's memory; upload it again.")
    head = data.decode("utf-8", errors="replace").splitlines()[:1]
    if not head:
        raise AggMRFError("the uploaded file is empty; upload a CSV with a header line.")
    sep = ";" if head[0].count(";") > head[0].count(",") else ","
    return [c.strip().strip('"') for c in head[0].split(sep)]


@dataclass
class ProblemBundle:
    """Everything read-only about one data configuration (shared between sessions)."""

    key: tuple
    problem: object  # experiment.Problem
    all_features: list[str]
    xor: pd.DataFrame | None = None  # per-state truth and exact max-ent, XOR only
    exact_model: object | None = None
    info: dict = field(default_factory=dict)

    @property
    def layout(self):
        return self.problem.layout

    @property
    def aggregated(self):
        return self.problem.aggregated

    @property
    def encoded(self):
        return self.problem.encoded


def _load_dataset(dataset: str, n: int | None, seed: int, features, label: str, upload: str):
    from .. import datasets

    if dataset == "upload":
        with _UPLOAD_LOCK:
            data = _UPLOADS.get(upload)
        if data is None:
            raise AggMRFError("no CSV uploaded yet: choose a file, then pick its label column.")
        if not label:
            raise AggMRFError("pick the label column of the uploaded CSV.")
        import tempfile

        with tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False) as fh:
            fh.write(data)
            path = fh.name
        try:
            return datasets.load_csv(path, label, features=features, seed=seed)
        finally:
            os.unlink(path)
    kwargs: dict = {"features": features}
    if dataset != "toy":
        kwargs["seed"] = seed
        if dataset in GENERATED or (n is not None and dataset in SUBSAMPLED):
            kwargs["n"] = n
    return datasets.load_dataset(dataset, **kwargs)


def _problem_key(dataset, n, seed, features, singles, pairs, label="", upload="") -> tuple:
    return (dataset, n, seed, tuple(features) if features else None, singles, pairs, label, upload)


def peek_problem(**data_key) -> ProblemBundle | None:
    """The prepared problem if it is cached already (``ExplorerSession.data_key()``), else None."""
    return _PROBLEMS.peek(_problem_key(**data_key))


def get_problem(
    dataset: str,
    n: int | None,
    seed: int,
    features: tuple[str, ...] | None,
    singles: bool,
    pairs: bool,
    label: str = "",
    upload: str = "",
) -> ProblemBundle:
    """The prepared problem (encoded, layout, exact aggregates), cached across sessions."""
    key = _problem_key(dataset, n, seed, features, singles, pairs, label, upload)

    def compute() -> ProblemBundle:
        from .. import experiment

        full = _load_dataset(dataset, n, seed, None, label, upload)
        all_features = list(full.feature_columns)
        ds = full
        if features:
            unknown = [f for f in features if f not in all_features]
            if unknown:
                raise AggMRFError(f"unknown features {unknown}; this dataset has {all_features}.")
            ds = _load_dataset(dataset, n, seed, list(features), label, upload)
        if not singles and not pairs:
            raise AggMRFError("release at least one kind of table: singles or pairs.")
        if pairs and len(ds.feature_columns) < 2 and not singles:
            raise AggMRFError("pair tables need at least two features; add a feature.")
        prob = experiment.prepare(ds, singles=singles, pairs=pairs or len(ds.feature_columns) < 2)
        bundle = ProblemBundle(key, prob, all_features)
        if dataset == "xor" and not features:
            bundle.xor, bundle.exact_model = _xor_states(prob)
        return bundle

    return _PROBLEMS.get(key, compute)


def _xor_states(prob) -> tuple[pd.DataFrame, object]:
    """Per-state truth and exact max-ent P(Y=1|x) for the XOR counterexample."""
    from .. import datasets
    from ..exact import fit_exact

    lay = prob.layout
    model = fit_exact(prob.aggregated)
    dist = datasets.xor_distribution()
    dist = dist[dist["p_x"] > 0].reset_index(drop=True)
    labels = prob.encoded.modality_labels
    codes = np.column_stack(
        [
            np.array([labels[f].index(str(v)) for v in dist[name]], dtype=np.int32)
            for f, name in enumerate(lay.feature_names)
        ]
    )
    frame = pd.DataFrame(
        {
            "state": [
                "x = ({}, {}, {})".format(*(int(v) for v in row))
                for row in dist[["X1", "X2", "X3"]].to_numpy()
            ],
            "truth": dist["p_y1"].to_numpy(float),
        }
    )
    frame["exact max-ent"] = model.predict_proba(codes)[:, 1]
    frame.attrs["codes"] = codes
    return frame, model


def _cache_dir() -> Path:
    base = os.environ.get("AGGMRF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "aggmrf_explore"
    )
    return Path(base) / "baselines"


@dataclass(frozen=True)
class StoredBaseline:
    """A baseline read back from the disk cache: the fields of ``baselines.BaselineResult``
    the explorer shows (reading them needs no scikit-learn import, ~1 s)."""

    name: str
    proba_test: np.ndarray
    nllh_test: float
    seconds: float


def get_baselines(bundle: ProblemBundle, which: tuple[str, ...]) -> dict:
    """Baselines of a problem ({name: BaselineResult or StoredBaseline}), cached in memory
    and on disk."""
    from .. import __version__

    key = (bundle.key, tuple(which))

    def compute():
        path = None
        if bundle.key[0] != "upload" or bundle.key[-1]:
            digest = hashlib.sha256(repr((__version__,) + key).encode()).hexdigest()[:24]
            path = _cache_dir() / f"{digest}.json"
            try:
                raw = json.loads(path.read_text())
                return {
                    k: StoredBaseline(
                        k, np.asarray(v["proba_test"], float), float(v["nllh_test"]), v["seconds"]
                    )
                    for k, v in raw.items()
                }
            except (OSError, ValueError, KeyError, TypeError):
                pass
        from .. import baselines

        out = baselines.fit_baselines(bundle.problem, which=which)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(
                    json.dumps(
                        {
                            k: {
                                "proba_test": np.round(r.proba_test, 7).tolist(),
                                "nllh_test": r.nllh_test,
                                "seconds": r.seconds,
                            }
                            for k, r in out.items()
                        }
                    )
                )
                tmp.replace(path)
            except OSError:
                pass
        return out

    return _BASELINES.get(key, compute)


def peek_baselines(bundle: ProblemBundle, which: tuple[str, ...]) -> dict | None:
    return _BASELINES.peek((bundle.key, tuple(which)))


def get_release(
    bundle: ProblemBundle, mechanism: str, epsilon, delta, accounting, calibration, seed
):
    """(noisy AggregatedData, mechanism) for a problem, cached; mechanism "none" → exact data."""
    if mechanism == "none":
        return bundle.aggregated, None
    key = (bundle.key, mechanism, epsilon, delta, accounting, calibration, seed)

    def compute():
        import warnings

        from .. import privacy

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = privacy.make_mechanism(
                mechanism, epsilon, delta, bundle.layout, accounting, calibration
            )
        return privacy.release(bundle.aggregated, mech, seed), mech

    return _RELEASES.get(key, compute)


def noise_summary(layout, epsilon: float, delta: float, accounting: str) -> dict:
    """Calibrated noise levels (numbers for display): Laplace scale/std, Gaussian σ per calibration."""
    import warnings

    from .. import privacy

    l1, l2 = privacy.sensitivity(layout, accounting)
    out = {"l1_sensitivity": l1, "l2_sensitivity": l2, "T": layout.n_released_tables}
    out["laplace_scale"] = privacy.LaplaceMechanism(epsilon, l1).scale
    out["laplace_std"] = privacy.LaplaceMechanism(epsilon, l1).std
    for cal in ("analytic", "classic", "adkdd21"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out[f"sigma_{cal}"] = privacy.GaussianMechanism(epsilon, delta, l2, cal).sigma
            except AggMRFError:
                out[f"sigma_{cal}"] = float("nan")
    out["classic_valid"] = epsilon <= 1.0
    return out


# ====================================================================== checks
def _finite(name: str, v, lo: float | None = None, lo_open=False, hi: float | None = None) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise AggMRFError(f"{name} must be a number; got {v!r}.") from None
    if not math.isfinite(x):
        raise AggMRFError(f"{name} must be a finite number; got {v!r}.")
    if lo is not None and (x < lo or (lo_open and x == lo)):
        raise AggMRFError(f"{name} must be {'>' if lo_open else '≥'} {lo:g}; got {x:g}.")
    if hi is not None and x > hi:
        raise AggMRFError(f"{name} must be ≤ {hi:g}; got {x:g}.")
    return x


def _integer(name: str, v, lo: int, hi: int) -> int:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise AggMRFError(f"{name} must be a whole number; got {v!r}.") from None
    if not math.isfinite(x) or x != int(x):
        raise AggMRFError(f"{name} must be a whole number; got {v!r}.")
    if not lo <= x <= hi:
        raise AggMRFError(f"{name} must be between {lo:,} and {hi:,}; got {int(x):,}.")
    return int(x)


def _choice(name: str, v, options) -> str:
    if v not in options:
        raise AggMRFError(f"{name} must be one of {', '.join(map(str, options))}; got {v!r}.")
    return v


# ====================================================================== the session
class ExplorerSession(param.Parameterized):
    """The state of one explorer session (settings, data, trainer, run loop)."""

    # --- data
    dataset = param.Selector(default="toy", objects=list(DATASETS), doc="Dataset")
    n_samples = param.Integer(default=20_000, doc="Records per split (generated data)")
    data_seed = param.Integer(default=0, doc="Seed of the generated data / split")
    features = param.List(default=[], item_type=str, doc="Feature subset (empty: all)")
    singles = param.Boolean(default=True, doc="Release single-feature tables")
    pairs = param.Boolean(default=True, doc="Release pair tables")
    label_column = param.String(default="", doc="Label column of an uploaded CSV")
    upload_hash = param.String(default="", doc="Content hash of the uploaded CSV")
    # --- privacy
    mechanism = param.Selector(default="none", objects=["none", "laplace", "gaussian"])
    epsilon = param.Number(default=1.0)
    delta = param.Number(default=1e-7)
    accounting = param.Selector(default="both", objects=["both", "queries"])
    calibration = param.Selector(default="analytic", objects=["analytic", "classic", "adkdd21"])
    noise_seed = param.Integer(default=0)
    noise_aware = param.Boolean(default=False)
    # --- training
    n_gibbs = param.Integer(default=10_000, doc="Gibbs samples n'")
    train_seed = param.Integer(default=0)
    auto_defaults = param.Boolean(default=True, doc="Use the default rule for λ and α")
    lambda_mu = param.Number(default=1.0)
    lambda_theta = param.Number(default=3.0)
    step_mu = param.Number(default=1 / 3)
    step_theta = param.Number(default=1 / 6)
    gradient = param.Selector(default="rescaled", objects=["rescaled", "true"])
    precondition = param.Boolean(default=True)
    iters_per_tick = param.Integer(default=50, doc="Most iterations in one tick")
    table = param.String(default="", doc="Table shown in the table browser")
    # --- run state (not settings)
    running = param.Boolean(default=False)
    busy = param.Boolean(default=False)
    status = param.String(default="no data loaded")
    notice = param.String(default="")
    errors = param.Dict(default={})
    version = param.Integer(default=0, doc="Bumped whenever the trainer is rebuilt")

    def __init__(self, lazy: bool = False, **params) -> None:
        self._reverting = False
        self._loader: Callable | None = None  # app hook: asynchronous (re)load
        super().__init__(**params)
        self.bundle: ProblemBundle | None = None
        self.data = None  # AggregatedData the trainer sees (maybe noisy)
        self.mechanism_obj = None
        self.trainer = None
        self.baselines: dict = {}
        self.floor: float = float("nan")
        self._rate: deque = deque(maxlen=64)
        self._history_cache: tuple = (None, pd.DataFrame())
        self.param.watch(self._settings_changed, list(URL_KEYS) + ["upload_hash"])
        if not lazy:
            self.load()

    # ------------------------------------------------------------------ settings
    def settings(self) -> dict:
        """The current settings as a JSON-friendly dict (what the URL and the download hold)."""
        return {k: getattr(self, k) for k in URL_KEYS}

    def settings_json(self) -> str:
        return json.dumps(self.settings(), indent=2)

    def check(self, name: str, value):
        """Validate one proposed setting; returns the cleaned value or raises AggMRFError."""
        if name == "dataset":
            return _choice("dataset", value, DATASETS)
        if name == "n_samples":
            return _integer("sample size n", value, 50, 1_000_000)
        if name in ("data_seed", "noise_seed", "train_seed"):
            return _integer("seed", value, 0, 2**31 - 1)
        if name == "features":
            if isinstance(value, str):
                value = [v for v in value.split(",") if v]
            value = [str(v) for v in value]
            if self.bundle is not None and value:
                unknown = [f for f in value if f not in self.bundle.all_features]
                if unknown:
                    raise AggMRFError(f"unknown features {unknown}.")
            return value
        if name in ("singles", "pairs", "noise_aware", "precondition", "auto_defaults"):
            return bool(value)
        if name == "mechanism":
            return _choice("mechanism", value, ("none", "laplace", "gaussian"))
        if name == "epsilon":
            return _finite("ε", value, 0.0, lo_open=True, hi=1e4)
        if name == "delta":
            x = _finite("δ", value, 0.0, lo_open=True)
            if x >= 1:
                raise AggMRFError(f"δ must be < 1 (e.g. 1e-7); got {x:g}.")
            return x
        if name == "accounting":
            return _choice("accounting", value, ("both", "queries"))
        if name == "calibration":
            return _choice("calibration", value, ("analytic", "classic", "adkdd21"))
        if name == "n_gibbs":
            return _integer("Gibbs samples n'", value, 10, 200_000)
        if name in ("lambda_mu", "lambda_theta"):
            return _finite("λ_μ" if name == "lambda_mu" else "λ_θ", value, 0.0, hi=1e6)
        if name in ("step_mu", "step_theta"):
            return _finite("α_μ" if name == "step_mu" else "α_θ", value, 0.0, lo_open=True, hi=10)
        if name == "gradient":
            return _choice("gradient", value, ("rescaled", "true"))
        if name == "iters_per_tick":
            return _integer("iterations per tick", value, 1, 1000)
        if name in ("label_column", "table", "upload_hash"):
            return str(value)
        raise AggMRFError(f"unknown setting {name!r}.")

    def propose(self, name: str, value) -> str | None:
        """Apply a setting if valid; else record and return a message (state unchanged)."""
        try:
            clean = self.check(name, value)
            self.param.update({name: clean})
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message
            msg = _message(exc)
            self.errors = {**self.errors, name: msg}
            return msg
        err = self.errors.get(name)
        return err

    def _settings_changed(self, *events) -> None:
        if self._reverting:
            return
        names = {e.name for e in events if e.old is not e.new and not _same(e.old, e.new)}
        if not names:
            return
        if names & {"lambda_mu", "lambda_theta", "step_mu", "step_theta"}:
            self._reverting = True
            try:
                self.auto_defaults = False if "auto_defaults" not in names else self.auto_defaults
            finally:
                self._reverting = False
        try:
            for e in events:
                if e.name in names:
                    self.check(e.name, e.new)
            self._apply(names)
        except Exception as exc:  # noqa: BLE001
            msg = _message(exc)
            self._reverting = True
            try:
                self.param.update({e.name: e.old for e in events if e.name in names})
            finally:
                self._reverting = False
            self.errors = {**self.errors, **{n: msg for n in names}}
            return
        if any(n in self.errors for n in names):
            self.errors = {k: v for k, v in self.errors.items() if k not in names}

    def _apply(self, names: set[str]) -> None:
        if self.bundle is None:
            return  # nothing loaded yet: the first load reads the current settings
        if names & (set(DATA_KEYS) | {"upload_hash"}):
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
        if self.trainer is not None:
            self.trainer.update(**{k: getattr(self, k) for k in LIVE_KEYS})

    def _invalidate(self, what: str, names: set[str]) -> None:
        label = ", ".join(sorted(names))
        if what == "data" and self._loader is not None:
            self._loader(f"{label} changed: data are being prepared, training restarts.")
            return
        if what == "data":
            self.load(notice=f"{label} changed: data reloaded, training restarted.")
        elif what == "noise":
            self._release()
            self._new_trainer(notice=f"{label} changed: new noisy release, training restarted.")
        else:
            self._new_trainer(notice=f"{label} changed: training restarted.")

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
            label=self.label_column if self.dataset == "upload" else "",
            upload=self.upload_hash if self.dataset == "upload" else "",
        )

    def fetch(self) -> ProblemBundle:
        """The (cached) problem for the current data settings; may take seconds (thread-safe)."""
        return get_problem(**self.data_key())

    def load(self, bundle: ProblemBundle | None = None, notice: str = "") -> None:
        """Install a problem (computed now if not given) and start a fresh trainer."""
        was_running = self.running
        self.running = False
        try:
            self.busy = True
            bundle = bundle if bundle is not None else self.fetch()
            previous = (self.bundle, self.data, self.mechanism_obj)
            self.bundle = bundle
            try:
                self._release()
            except Exception:
                self.bundle, self.data, self.mechanism_obj = previous
                raise
        finally:
            self.busy = False
        if self.table not in self.bundle.layout.table_names:
            self._reverting = True
            try:
                self.table = self.bundle.layout.table_names[min(1, self.bundle.layout.n_tables - 1)]
            finally:
                self._reverting = False
        self.baselines = dict(peek_baselines(bundle, CHEAP_BASELINES) or {})
        self.baselines.update(peek_baselines(bundle, SLOW_BASELINES) or {})
        if not self.baselines or self._loader is None:
            self.baselines.update(get_baselines(bundle, CHEAP_BASELINES))
        if self.auto_defaults:
            self._set_defaults()
        self._new_trainer(notice=notice)
        self.running = was_running and self.trainer is not None

    def add_baselines(self, results: dict) -> None:
        self.baselines = {**self.baselines, **results}

    def _set_defaults(self) -> None:
        from ..mrf import default_settings

        d = default_settings(self.bundle.layout, self.bundle.aggregated.n)
        self._reverting = True
        try:
            self.param.update(
                lambda_mu=d.lambda_mu,
                lambda_theta=d.lambda_theta,
                step_mu=d.step_mu,
                step_theta=d.step_theta,
            )
        finally:
            self._reverting = False

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

    def _new_trainer(self, notice: str = "") -> None:
        from ..mrf import PCDTrainer, TrainerSettings, expected_floor

        if self.noise_aware and self.mechanism == "none":
            raise AggMRFError(
                "noise-aware training needs a privacy mechanism (Laplace or Gaussian)."
            )
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
        self.trainer = PCDTrainer(self.data, settings, enc.X_test, enc.y_test)
        self.floor = expected_floor(self.data, self.n_gibbs)
        self._rate.clear()
        self.notice = notice
        self.version += 1
        self._update_status()

    def _eval_every(self) -> int:
        """Evaluate the test NLLH every iteration on small problems, every 2–5 on large ones.

        (Scoring 16 000 Adult test records with 106 tables costs about a fifth of an
        iteration; the NLLH curve needs no more than a point every few iterations.)
        """
        enc = self.bundle.encoded
        work = len(enc.y_test) * self.bundle.layout.n_tables
        return int(min(5, max(1, work // 500_000)))

    # ------------------------------------------------------------------ run control
    def play(self) -> None:
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        self.running = True
        self._rate.clear()
        self._update_status()

    def pause(self) -> None:
        self.running = False
        self._update_status()

    def toggle(self) -> None:
        self.pause() if self.running else self.play()

    def reset(self) -> None:
        """Fresh trainer on the same data and settings (keeps running if it was)."""
        if self.bundle is None:
            self.load()
            return
        self._new_trainer(notice="reset: training restarted from iteration 0.")

    def step(self, k: int = 1) -> list:
        """Run k iterations now (the Step button); returns their statistics."""
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        return self._run(budget=None, max_iters=int(k))

    def tick(self, budget: float = 0.06) -> list:
        """One time-boxed slice of training while running: iterations until ``budget`` s are used."""
        if not self.running or self.trainer is None or self.busy:
            return []
        return self._run(budget=budget, max_iters=self.iters_per_tick)

    def _run(self, budget: float | None, max_iters: int) -> list:
        out: list = []
        t0 = time.perf_counter()
        while len(out) < max_iters:
            try:
                out.extend(self.trainer.step(1))
            except DivergenceError as exc:
                self.running = False
                self.notice = f"{exc} (training paused)"
                break
            if budget is not None:
                elapsed = time.perf_counter() - t0
                if elapsed + elapsed / len(out) > budget:
                    break
        now = time.perf_counter()
        if out:
            self._rate.append((now, self.trainer.iteration))
        self._update_status()
        return out

    @property
    def iteration(self) -> int:
        return 0 if self.trainer is None else self.trainer.iteration

    def iterations_per_second(self) -> float:
        """Iterations per second over the last ~3 s of running (0 when paused)."""
        if len(self._rate) < 2 or not self.running:
            return 0.0
        now = self._rate[-1][0]
        pts = [p for p in self._rate if now - p[0] <= 3.0]
        if len(pts) < 2:
            pts = list(self._rate)[-2:]
        dt = pts[-1][0] - pts[0][0]
        return (pts[-1][1] - pts[0][1]) / dt if dt > 0 else 0.0

    def _update_status(self) -> None:
        if self.busy or self.trainer is None:
            self.status = "preparing data…" if self.busy else "no data loaded"
            return
        nl = self.trainer.last_nllh
        nl_s = "–" if nl is None or not math.isfinite(nl) else f"{nl:.4f}"
        state = "training" if self.running else "paused"
        name = DATASET_NAMES.get(self.bundle.key[0], self.bundle.key[0]) if self.bundle else ""
        self.status = (
            f"{state} · iteration {self.trainer.iteration:,} · "
            f"{self.iterations_per_second():.1f} it/s · test NLLH {nl_s} · {name}"
        )

    # ------------------------------------------------------------------ views of the state
    def history(self) -> pd.DataFrame:
        """The training history (one row per iteration), empty frame before the first one.

        Built incrementally (only the iterations since the last call are converted), so
        a refresh costs the same after 10 iterations as after 10 000.
        """
        cols = ["iteration", "d_error", "c_error", "nllh_eval", "seconds", "theta_norm"]
        if self.trainer is None or not self.trainer.history:
            return pd.DataFrame({c: np.zeros(0) for c in cols})
        hist = self.trainer.history
        owner, frame = self._history_cache
        if owner is not self.trainer or len(frame) > len(hist):
            frame = pd.DataFrame({c: np.zeros(0) for c in cols})
        if len(frame) < len(hist):
            new = pd.DataFrame({c: [getattr(h, c) for h in hist[len(frame) :]] for c in cols})
            frame = new if frame.empty else pd.concat([frame, new], ignore_index=True)
            for c in cols[1:]:
                frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
        self._history_cache = (self.trainer, frame)
        return frame

    def history_csv(self) -> str:
        buf = io.StringIO()
        self.history().to_csv(buf, index=False)
        return buf.getvalue()

    def references(self) -> dict[str, float]:
        """Test NLLH of each available baseline, keyed by display label."""
        return {
            BASELINE_LABELS[k]: float(self.baselines[k].nllh_test)
            for k in ("logistic_pairs", "naive_bayes", "best_pair")
            if k in self.baselines and math.isfinite(self.baselines[k].nllh_test)
        }

    def predictions(self) -> pd.DataFrame:
        """Test-set P(Y=1|x) of the live MRF and of the skyline logistic (if ready), with labels."""
        enc = self.bundle.encoded
        p_mrf = self.trainer.predict_proba(enc.X_test)[:, 1]
        base = self.baselines.get("logistic_pairs") or self.baselines.get("logistic")
        p_log = base.proba_test if base is not None else np.full(p_mrf.shape, np.nan)
        return pd.DataFrame({"mrf": p_mrf, "logistic": p_log, "label": np.asarray(enc.y_test)})

    def table_view(self, table: str | None = None) -> pd.DataFrame:
        """Rows of one table: modalities, count, label sum, (noisy/true values), d̂ and ĉ."""
        lay = self.bundle.layout
        name = table or self.table
        ti = lay.table_names.index(name) if name in lay.table_names else 0
        extra = {"d_hat": self.trainer.d_hat, "c_hat": self.trainer.c_hat}
        return self.data.table_frame(int(ti), extra=extra)

    def dhat_frame(self) -> pd.DataFrame:
        """Target d vs current d̂ for every released row, with the table of each row."""
        lay = self.bundle.layout
        rel = lay.released
        rt = lay.row_table()[rel]
        names = np.asarray(lay.table_names, dtype=object)
        arity = np.asarray([len(t) for t in lay.tables])[rt]
        kind = np.where(arity == 1, "single", np.where(arity == 2, "pair", "triple"))
        return pd.DataFrame(
            {
                "d": np.maximum(self.data.d[rel], 0.0),
                "d_hat": self.trainer.d_hat[rel],
                "table": names[rt],
                "kind": kind,
            }
        )

    def noise_frame(self) -> pd.DataFrame | None:
        """True vs released counts of every released row (None without noise)."""
        if self.mechanism_obj is None or self.data.true_d is None:
            return None
        rel = self.bundle.layout.released
        return pd.DataFrame(
            {
                "true": self.data.true_d[rel],
                "noisy": self.data.d[rel],
                "noise": self.data.d[rel] - self.data.true_d[rel],
            }
        )

    def noise_numbers(self) -> dict:
        return noise_summary(self.bundle.layout, self.epsilon, self.delta, self.accounting)

    def xor_frame(self) -> pd.DataFrame | None:
        """XOR only: per-state P(Y=1|x) for truth, exact max-ent, live MRF and logistic."""
        if self.bundle is None or self.bundle.xor is None:
            return None
        frame = self.bundle.xor.copy()
        codes = self.bundle.xor.attrs["codes"]
        frame["live MRF"] = self.trainer.predict_proba(codes)[:, 1]
        base = self.baselines.get("logistic_pairs")
        if base is not None:
            X = self.bundle.encoded.X_test
            frame["logistic"] = [
                float(np.mean(base.proba_test[np.all(X == c, axis=1)]))
                if np.any(np.all(X == c, axis=1))
                else np.nan
                for c in codes
            ]
        else:
            frame["logistic"] = np.nan
        return frame


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _message(exc: BaseException) -> str:
    """A one-line message for the page (never a traceback)."""
    if isinstance(exc, AggMRFError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
