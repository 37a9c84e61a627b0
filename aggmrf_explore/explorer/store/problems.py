"""Shared read-only data of the explorer: prepared problems, noisy releases, baselines.

Each is computed once per process and shared by every session with the same settings
(:class:`~aggmrf_explore.explorer.store.caches.LockedCache`); baselines are also kept on disk,
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

from ...datasets.catalog import DATASETS as CATALOG
from ...errors import AggMRFError
from ...settings import SettingError
from ...tables.budget import check_records
from .caches import UPLOADS, LockedCache, cache_dir, read_json, write_json

__all__ = [
    "DATASETS",
    "DATASET_NAMES",
    "DATASET_MENU",
    "GENERATED",
    "SEEDED",
    "suppression_of",
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
    "problem_arguments",
    "get_problem",
    "peek_problem",
    "get_baselines",
    "peek_baselines",
    "get_release",
]

# The explorer's datasets: the catalog's (``datasets.catalog.DATASETS``, one spec each), in
# its order, then a CSV the user uploads.
UPLOAD = "upload"
DATASETS = (*CATALOG, UPLOAD)
DATASET_NAMES = {**{k: s.label for k, s in CATALOG.items()}, UPLOAD: "uploaded CSV"}
DATASET_MENU = {**{s.menu: k for k, s in CATALOG.items()}, "Upload a CSV…": UPLOAD}
GENERATED = tuple(k for k, s in CATALOG.items() if s.source == "generated" and s.seeded)
# the seed splits or draws the records (an upload: its train/test split)
SEEDED = (*(k for k, s in CATALOG.items() if s.seeded), UPLOAD)
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
    from ... import datasets

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
    if not CATALOG[dataset].seeded:
        return datasets.load_dataset(dataset, features=features)
    return datasets.load_dataset(dataset, n=n, seed=seed, features=features)


def _problem_key(
    dataset, n, seed, features, singles, pairs, label="", upload="", triples=False
) -> tuple:
    key = (dataset, n, seed, tuple(features) if features else None, singles, pairs, label, upload)
    return key + ("triples",) if triples else key


def problem_arguments(settings: dict) -> dict:
    """The arguments of :func:`get_problem` for a store's data settings (``settings``: the
    store's ``DATA_KEYS`` and ``upload_hash``, {name: value}): the sample size only for
    generated data, the triplet table only for XOR with every feature, the label column
    and the file's hash only for an upload."""
    d = settings["dataset"]
    return dict(
        dataset=d,
        n=settings["n_samples"] if d in GENERATED else None,
        seed=settings["data_seed"],
        features=tuple(settings["features"]) or None,
        singles=settings["singles"],
        pairs=settings["pairs"],
        triples=bool(settings["triples"] and d == "xor" and not settings["features"]),
        label=settings["label_column"] if d == "upload" else "",
        upload=settings["upload_hash"] if d == "upload" else "",
    )


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
        from ... import experiment

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
        if suppression_of(dataset) is not None:  # the release leaves out small pair cells
            prob = dataclasses.replace(prob, aggregated=_suppressed(dataset, prob.aggregated))
        bundle = ProblemBundle(key, prob, all_features)
        if dataset == "xor" and not features:
            bundle.xor, bundle.exact_model = _xor_states(prob)
        return bundle

    return _PROBLEMS.get(key, compute)


def suppression_of(dataset: str) -> float | None:
    """k when ``dataset``'s release leaves out its pair cells of count ≤ k (its spec's
    ``suppression``: the AdKDD'21 rule; the trainer treats them as 0 ≤ d ≤ k), else None."""
    spec = CATALOG.get(dataset)
    return None if spec is None else spec.suppression


def _suppressed(dataset: str, data):
    """``data`` as the release of ``dataset`` shows it: pair cells with released count ≤ k
    left out (:func:`suppression_of`; on a noisy release the noisy count decides, so which
    cells are left out is covered by the noise); other datasets unchanged."""
    k = suppression_of(dataset)
    if k is None:
        return data
    from ...tables.suppression import suppress_pair_tables

    return suppress_pair_tables(data, k)


def _xor_states(prob) -> tuple[pd.DataFrame, object]:
    """Per-state truth and exact max-ent P(Y=1|x) for the XOR counterexample."""
    from ... import datasets
    from ...exact import fit_exact

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
    from ... import __version__

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
        from ... import baselines

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
    "local": every training record through randomized response at ε (``privacy.local``),
    the channel inverted.  The settings the mechanism does not use (``settings.applies``)
    are left out."""
    from ...privacy.registry import mechanism_class as privacy_class
    from ...settings import applies

    values = dict(mechanism=mechanism, epsilon=epsilon, delta=delta)
    values.update(accounting=accounting, calibration=calibration)
    used = {k: (v if applies(k, values) else None) for k, v in values.items() if k != "mechanism"}
    if not privacy_class(mechanism).uses:  # no noise
        return bundle.aggregated, None
    key = (bundle.key, mechanism, *used.values(), seed)

    def compute():
        from ... import privacy

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = privacy.make_mechanism(mechanism, layout=bundle.layout, **used)
        enc = bundle.encoded
        exact = bundle.aggregated
        if exact.suppression is not None:  # noise goes on every cell; suppression after it
            from ...tables import aggregate

            exact = aggregate(enc.X_train, enc.y_train, bundle.layout)
        data = privacy.release(exact, mech, seed, records=(enc.X_train, enc.y_train))
        return (_suppressed(bundle.key[0], data) if mech.privacy == "central" else data), mech

    return _RELEASES.get(key, compute)
