"""Shared read-only data of the explorer: prepared problems, noisy releases, baselines.

Each is computed once per process and shared by every session with the same settings
(:class:`~aggmrf_explore.explorer.caches.LockedCache`); baselines are also kept on disk,
since the skyline logistic on Adult takes about a minute.  Nothing here does maths: it
calls the package (datasets → experiment.prepare → privacy → baselines / exact).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..tables.budget import check_records
from .caches import UPLOADS, LockedCache, cache_dir, read_json, write_json

__all__ = [
    "DATASETS",
    "DATASET_NAMES",
    "GENERATED",
    "SUBSAMPLED",
    "SUPPRESSED",
    "CHEAP_BASELINES",
    "SLOW_BASELINES",
    "BASELINE_LABELS",
    "ProblemBundle",
    "SettingError",
    "StoredBaseline",
    "upload_name",
    "clear_caches",
    "register_upload",
    "upload_columns",
    "get_problem",
    "peek_problem",
    "get_baselines",
    "peek_baselines",
    "get_release",
    "noise_summary",
]

DATASETS = ("toy", "xor", "synthetic", "criteo", "adult", "bank", "upload")
DATASET_NAMES = {
    "toy": "toy (Table 1)",
    "xor": "XOR",
    "synthetic": "synthetic",
    "criteo": "Criteo-shaped (suppressed)",
    "adult": "Adult",
    "bank": "Bank marketing",
    "upload": "uploaded CSV",
}
GENERATED = ("xor", "synthetic", "criteo")  # sample size n and seed apply
# releases that leave out small cells: {dataset: k}, pair cells with true count ≤ k absent
# (the AdKDD'21 rule); the trainer treats them as 0 ≤ d ≤ k
SUPPRESSED = {"criteo": 10.0}
SUBSAMPLED = ("adult", "bank")  # n (optional subsample of the train split) and seed apply
CHEAP_BASELINES = ("naive_bayes", "best_pair")
SLOW_BASELINES = ("logistic_pairs", "logistic")
BASELINE_LABELS = {
    "logistic_pairs": "logistic skyline (pairs, full data)",
    "logistic": "logistic (one-hot, full data)",
    "naive_bayes": "naive Bayes (single tables)",
    "best_pair": "best pair table",
}

_PROBLEMS = LockedCache(8)
_RELEASES = LockedCache(16)
_BASELINES = LockedCache(16)


def clear_caches() -> None:
    """Forget every shared problem, release and baseline (tests)."""
    for c in (_PROBLEMS, _RELEASES, _BASELINES):
        c.clear()


def register_upload(data: bytes, name: str = "upload.csv") -> str:
    """Keep uploaded CSV bytes (shared, read-only; ``name``: the user's file name) and
    return their content hash; AggMRFError over the upload size limit."""
    return UPLOADS.register(data, name)


def upload_name(upload_hash: str) -> str:
    """The user's own name of an uploaded file ("" if unknown)."""
    return UPLOADS.name(upload_hash)


def upload_columns(upload_hash: str) -> list[str]:
    """Column names of an uploaded CSV (header line, ',' or ';' separated)."""
    return UPLOADS.columns(upload_hash)


class SettingError(AggMRFError):
    """A failure caused by one setting (``setting``): the view reverts that one only."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


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
        data = UPLOADS.get(upload)
        if data is None:
            raise AggMRFError("no CSV uploaded yet: choose a file, then pick its label column.")
        if not label:
            raise AggMRFError("pick the label column of the uploaded CSV.")
        name = UPLOADS.name(upload) or "the uploaded file"
        with tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False) as fh:
            fh.write(data)
            path = fh.name
        try:
            return datasets.load_csv(path, label, features=features, seed=seed, name=name)
        except Exception as exc:  # noqa: BLE001 - never show the server's temporary path
            text = str(exc) if isinstance(exc, AggMRFError) else f"{type(exc).__name__}: {exc}"
            text = text.replace(path, name).replace(os.path.basename(path), name)
            raise AggMRFError(text.strip().splitlines()[0] if text.strip() else name) from None
        finally:
            os.unlink(path)
    if dataset == "criteo":
        from ..datasets.criteo import small_dataset
        from ..datasets.dataset import select_features

        return select_features(small_dataset(n or 20_000, seed), features, None)
    kwargs: dict = {"features": features}
    if dataset != "toy":
        kwargs["seed"] = seed
        if dataset in GENERATED or (n is not None and dataset in SUBSAMPLED):
            kwargs["n"] = n
    return datasets.load_dataset(dataset, **kwargs)


def _problem_key(
    dataset, n, seed, features, singles, pairs, label="", upload="", triples=False
) -> tuple:
    key = (dataset, n, seed, tuple(features) if features else None, singles, pairs, label, upload)
    return key + ("triples",) if triples else key


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
    triples: bool = False,
) -> ProblemBundle:
    """The prepared problem (encoded, layout, exact aggregates), cached across sessions
    (``triples``: also release every three-feature table; the explorer offers it for XOR)."""
    key = _problem_key(dataset, n, seed, features, singles, pairs, label, upload, triples)

    def compute() -> ProblemBundle:
        from .. import experiment

        full = _load_dataset(dataset, n, seed, None, label, upload)
        all_features = list(full.feature_columns)
        ds = full
        if features:
            unknown = [f for f in features if f not in all_features]
            if unknown:
                raise SettingError(
                    "features", f"unknown features {unknown}; this dataset has {all_features}."
                )
            ds = _load_dataset(dataset, n, seed, list(features), label, upload)
        if not singles and not pairs:
            raise AggMRFError("release at least one kind of table: singles or pairs.")
        if pairs and len(ds.feature_columns) < 2 and not singles:
            raise AggMRFError("pair tables need at least two features; add a feature.")
        with_pairs = pairs or len(ds.feature_columns) < 2
        if dataset == "upload":  # before anything is allocated: K from the modality counts
            enc = {k: v for k, v in ds.encoding.items() if k in ("unseen", "min_count")}
            check_records(ds.train[ds.feature_columns], singles=singles, pairs=with_pairs, **enc)
        prob = experiment.prepare(ds, singles=singles, pairs=with_pairs, triples=triples)
        if dataset in SUPPRESSED:  # the release leaves out its small pair cells
            prob = dataclasses.replace(prob, aggregated=_suppressed(dataset, prob.aggregated))
        bundle = ProblemBundle(key, prob, all_features)
        if dataset == "xor" and not features:
            bundle.xor, bundle.exact_model = _xor_states(prob)
        return bundle

    return _PROBLEMS.get(key, compute)


def _suppressed(dataset: str, data):
    """``data`` as the release of ``dataset`` shows it: pair cells with released count ≤ k
    left out (:data:`SUPPRESSED`; on a noisy release the noisy count decides, so which cells
    are left out is covered by the noise); other datasets unchanged."""
    if dataset not in SUPPRESSED:
        return data
    from ..tables.suppression import suppress_pair_tables

    return suppress_pair_tables(data, SUPPRESSED[dataset])


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


@dataclass(frozen=True)
class StoredBaseline:
    """A baseline read back from the disk cache: the fields of ``baselines.BaselineResult``
    the explorer shows (reading them needs no scikit-learn import, ~1 s)."""

    name: str
    proba_test: np.ndarray
    nllh_test: float
    seconds: float


def _read_baselines(raw) -> dict | None:
    try:
        return {
            k: StoredBaseline(
                k, np.asarray(v["proba_test"], float), float(v["nllh_test"]), v["seconds"]
            )
            for k, v in raw.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def get_baselines(bundle: ProblemBundle, which: tuple[str, ...]) -> dict:
    """Baselines of a problem ({name: BaselineResult or StoredBaseline}), cached in memory
    and on disk."""
    from .. import __version__

    key = (bundle.key, tuple(which))

    def compute():
        path = None
        if bundle.key[0] != "upload" or bundle.key[-1]:
            digest = hashlib.sha256(repr((__version__,) + key).encode()).hexdigest()[:24]
            path = cache_dir() / "baselines" / f"{digest}.json"
            raw = read_json(path)
            stored = _read_baselines(raw) if raw is not None else None
            if stored is not None:
                return stored
        from .. import baselines

        out = baselines.fit_baselines(bundle.problem, which=which)
        if path is not None:
            write_json(
                path,
                {
                    k: {
                        "proba_test": np.round(r.proba_test, 7).tolist(),
                        "nllh_test": r.nllh_test,
                        "seconds": r.seconds,
                    }
                    for k, r in out.items()
                },
            )
        return out

    return _BASELINES.get(key, compute)


def peek_baselines(bundle: ProblemBundle, which: tuple[str, ...]) -> dict | None:
    """The baselines if cached in memory already, else None (computes nothing)."""
    return _BASELINES.peek((bundle.key, tuple(which)))


def get_release(
    bundle: ProblemBundle, mechanism: str, epsilon, delta, accounting, calibration, seed
):
    """(noisy AggregatedData, mechanism) for a problem, cached; mechanism "none" → exact data;
    "local": every training record through randomized response at ε (``privacy.local``;
    δ, accounting and calibration do not apply), the channel inverted."""
    if mechanism == "none":
        return bundle.aggregated, None
    key = (bundle.key, mechanism, epsilon, delta, accounting, calibration, seed)

    def compute():
        from .. import privacy

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = privacy.make_mechanism(
                mechanism, epsilon, delta, bundle.layout, accounting, calibration
            )
        enc = bundle.encoded
        exact = bundle.aggregated
        if exact.suppression is not None:  # noise goes on every cell; suppression after it
            from ..tables import aggregate

            exact = aggregate(enc.X_train, enc.y_train, bundle.layout)
        data = privacy.release(exact, mech, seed, records=(enc.X_train, enc.y_train))
        return (_suppressed(bundle.key[0], data) if mech.privacy == "central" else data), mech

    return _RELEASES.get(key, compute)


def noise_summary(layout, epsilon: float, delta: float, accounting: str) -> dict:
    """Calibrated noise levels (numbers for display): Laplace scale/std, Gaussian σ per
    calibration; the discrete Laplace's scale t and std, the discrete Gaussian's σ (zCDP)
    and its ρ."""
    from .. import privacy

    l1, l2 = privacy.sensitivity(layout, accounting)
    out = {"l1_sensitivity": l1, "l2_sensitivity": l2, "T": layout.n_released_tables}
    out["laplace_scale"] = privacy.LaplaceMechanism(epsilon, l1).scale
    out["laplace_std"] = privacy.LaplaceMechanism(epsilon, l1).std
    dl = privacy.DiscreteLaplaceMechanism(epsilon, l1)
    out["discrete_laplace_scale"], out["discrete_laplace_std"] = dl.scale, dl.std
    try:
        dg = privacy.DiscreteGaussianMechanism(epsilon, delta, l2)
        out["sigma_discrete"], out["rho"] = dg.sigma, dg.rho
    except AggMRFError:
        out["sigma_discrete"] = out["rho"] = float("nan")
    for cal in ("analytic", "classic", "adkdd21"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out[f"sigma_{cal}"] = privacy.GaussianMechanism(epsilon, delta, l2, cal).sigma
            except AggMRFError:
                out[f"sigma_{cal}"] = float("nan")
    out["classic_valid"] = epsilon <= 1.0
    return out
