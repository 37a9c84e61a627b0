"""Datasets: the paper's toy Table 1, the XOR counterexample, synthetic MRF data, Adult, Bank.

``load_dataset(name, ...)`` returns a :class:`Dataset` (raw train / test DataFrames with the
label column); ``Dataset.encode()`` fits an :class:`~aggmrf_explore.encoding.Encoder` on
the TRAIN split only and returns :class:`EncodedData` (int32 codes, int8 labels, and a
``layout()`` helper building the :class:`~aggmrf_explore.tables.TableLayout`).

Adult and Bank are read only from the gzip copies bundled in ``aggmrf_explore/data``
(never from the network); the md5 of the decompressed bytes and the record counts are
checked against ``data/checksums.json`` on first load, and the parsed frames are cached
in-process (callers get shallow copies, safe under pandas copy-on-write).

Rare / unseen categories on Adult and Bank: their default encoding is
``unseen="other", min_count=5``: every categorical feature gets an extra ``"(other)"``
modality, holding the categories seen fewer than 5 times in the training split and any
value that only occurs in the test split.  Override with ``Dataset.encode(unseen=...,
min_count=...)``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .encoding import Encoder, check_no_missing, encode_label
from .errors import AggMRFError
from .tables import TableLayout

__all__ = [
    "Dataset",
    "EncodedData",
    "DATASET_NAMES",
    "load_dataset",
    "load_csv",
    "toy",
    "xor",
    "xor_distribution",
    "synthetic",
    "adult",
    "bank",
    "clear_cache",
]

DATASET_NAMES = ("toy", "xor", "synthetic", "adult", "bank")
MAX_SYNTHETIC_STATES = 2**20
MIN_CSV_ROWS = 10

ADULT_CITATION = (
    "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20 (CC BY 4.0)"
)
BANK_CITATION = (
    "Moro, S., Rita, P. & Cortez, P. (2014). Bank Marketing [Dataset]. UCI Machine Learning "
    "Repository. https://doi.org/10.24432/C5K306 ; S. Moro, P. Cortez and P. Rita. A Data-Driven "
    "Approach to Predict the Success of Bank Telemarketing. Decision Support Systems, 2014. "
    "(CC BY 4.0)"
)
PAPER_CITATION = (
    "Gilotte, Ben Yahmed & Rohde, Learning from aggregated data with a maximum entropy model."
)

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]


# ====================================================================== containers
@dataclass
class EncodedData:
    """A dataset as codes: X int32 (n, D) with feature f in 0..M_f-1, y int8 (n,) in {0, 1}."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    encoder: Encoder
    feature_names: list[str]
    n_modalities: np.ndarray
    modality_labels: list[list[str]]
    positive_label: str
    true_proba_test: np.ndarray | None = None
    true_proba_train: np.ndarray | None = None
    name: str = ""

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    def layout(
        self,
        singles: bool = True,
        pairs: bool = True,
        triples: bool = False,
        intercept: bool = True,
    ) -> TableLayout:
        """``TableLayout.all_pairs`` over these features (names and modality labels attached)."""
        return TableLayout.all_pairs(
            self.n_modalities,
            self.feature_names,
            singles=singles,
            pairs=pairs,
            triples=triples,
            intercept=intercept,
            modality_labels=self.modality_labels,
        )


@dataclass
class Dataset:
    """Raw records: ``train`` / ``test`` DataFrames holding the feature columns and ``label``.

    ``true_proba_*`` (shape (n,)) hold the true P(Y=1|x) for generated data; ``truth``
    holds the generating model (synthetic data).  ``encoding`` holds the default
    keyword arguments of :meth:`encode` (e.g. ``{"unseen": "other", "min_count": 5}``).
    """

    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    label: str
    description: str = ""
    citation: str = ""
    true_proba_train: np.ndarray | None = None
    true_proba_test: np.ndarray | None = None
    truth: dict[str, Any] | None = None
    positive: str | None = None
    encoding: dict[str, Any] = field(default_factory=dict)

    @property
    def feature_columns(self) -> list[str]:
        return [c for c in self.train.columns if c != self.label]

    @property
    def n_train(self) -> int:
        return len(self.train)

    @property
    def n_test(self) -> int:
        return len(self.test)

    def encode(
        self,
        n_bins: int = 10,
        unseen: str | None = None,
        *,
        min_count: int | None = None,
        max_modalities: int | None = None,
    ) -> EncodedData:
        """Fit the encoder on the train split, encode both splits.

        ``unseen`` / ``min_count`` default to the dataset's ``encoding`` settings
        ("error" / 1 unless the loader says otherwise).
        """
        opts = {"unseen": "error", "min_count": 1, **self.encoding}
        if unseen is not None:
            opts["unseen"] = unseen
        if min_count is not None:
            opts["min_count"] = min_count
        feats = self.feature_columns
        if not feats:
            raise AggMRFError(f"dataset {self.name!r} has no feature columns left to encode.")
        enc = Encoder(n_bins=n_bins, max_modalities=max_modalities, **opts)
        X_train = enc.fit_transform(self.train[feats])
        X_test = enc.transform(self.test[feats])
        y_train, pos = encode_label(self.train[self.label], positive=self.positive)
        neg = _other_class(self.train[self.label], pos)
        y_test, _ = encode_label(self.test[self.label], positive=pos, classes=[neg, pos])
        return EncodedData(
            X_train=X_train,
            y_train=y_train,
            X_test=X_test,
            y_test=y_test,
            encoder=enc,
            feature_names=list(enc.feature_names),
            n_modalities=enc.n_modalities.copy(),
            modality_labels=[list(lab) for lab in enc.modality_labels],
            positive_label=pos,
            true_proba_test=self.true_proba_test,
            true_proba_train=self.true_proba_train,
            name=self.name,
        )

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train={self.train.shape}, test={self.test.shape}, "
            f"label={self.label!r})"
        )


def _other_class(series: pd.Series, pos: str) -> str:
    from .encoding import _label_strings

    vals = set(_label_strings(series).astype(str).tolist())
    vals.discard(pos)
    return vals.pop()


# ====================================================================== helpers
def _select(ds: Dataset, features, drop_features) -> Dataset:
    if features is None and drop_features is None:
        return ds
    available = ds.feature_columns

    def _check(cols, what):
        if isinstance(cols, str):
            cols = [cols]
        cols = list(cols)
        unknown = [c for c in cols if c not in available]
        if unknown:
            hint = " (that is the label column)" if ds.label in unknown else ""
            raise AggMRFError(
                f"unknown {what} {unknown}{hint}; available feature columns of "
                f"{ds.name!r}: {available}."
            )
        return cols

    keep = available if features is None else _check(features, "features")
    if drop_features is not None:
        drop = set(_check(drop_features, "drop_features"))
        keep = [c for c in keep if c not in drop]
    if not keep:
        raise AggMRFError(f"no feature left after selection; available columns: {available}.")
    cols = [*keep, ds.label]
    ds.train = ds.train[cols]
    ds.test = ds.test[cols]
    return ds


def _split_indices(y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split: (train_idx, test_idx), each class split in the same ratio."""
    rng = np.random.default_rng(seed)
    n = len(y)
    n_test_total = int(round(test_fraction * n))
    n_test_total = min(max(n_test_total, 1), n - 1)
    test_parts = []
    classes, counts = np.unique(y, return_counts=True)
    # largest-remainder allocation so the total test size is exact
    raw = counts * n_test_total / n
    alloc = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - alloc), kind="stable")[: n_test_total - alloc.sum()]:
        alloc[i] += 1
    for cls, k in zip(classes, alloc, strict=True):
        idx = np.flatnonzero(y == cls)
        test_parts.append(rng.permutation(idx)[:k])
    test_idx = np.sort(np.concatenate(test_parts))
    mask = np.ones(n, dtype=bool)
    mask[test_idx] = False
    return np.flatnonzero(mask), test_idx


def _subsample(df: pd.DataFrame, n: int | None, seed: int, what: str) -> pd.DataFrame:
    if n is None:
        return df
    if not isinstance(n, int | np.integer) or n < 1:
        raise AggMRFError(f"n must be a positive integer; got {n!r}.")
    if n > len(df):
        raise AggMRFError(f"n={n} is larger than the {what} ({len(df)} rows).")
    idx = np.sort(np.random.default_rng(seed).choice(len(df), size=n, replace=False))
    return df.iloc[idx].reset_index(drop=True)


# ====================================================================== toy
def toy() -> Dataset:
    """The paper's Table 1: 5 records, 3 categorical features, train = test."""
    rows = [
        ("1", "B", "a", 1),
        ("2", "A", "b", 1),
        ("1", "B", "b", 0),
        ("2", "B", "a", 1),
        ("1", "A", "b", 0),
    ]
    df = pd.DataFrame(rows, columns=["Feature 1", "Feature 2", "Feature 3", "label"])
    return Dataset(
        name="toy",
        train=df,
        test=df.copy(),
        label="label",
        description=(
            "The paper's Table 1: 5 records, Feature 1 in {1, 2}, Feature 2 in {A, B}, "
            "Feature 3 in {a, b}, binary label. The test split is the same 5 records as train."
        ),
        citation=PAPER_CITATION,
        positive="1",
    )


# ====================================================================== xor
def _xor_sample(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    x1 = rng.integers(0, 2, size=n)
    x2 = rng.integers(0, 2, size=n)
    x3 = x1 ^ x2
    p = 0.25 + 0.5 * x3
    y = (rng.random(n) < p).astype(np.int64)
    cat = pd.CategoricalDtype([0, 1])
    df = pd.DataFrame(
        {
            "X1": pd.Series(x1, dtype=cat),
            "X2": pd.Series(x2, dtype=cat),
            "X3": pd.Series(x3, dtype=cat),
            "y": y,
        }
    )
    return df, p.astype(np.float64)


def xor(n: int = 20000, seed: int = 0) -> Dataset:
    """The XOR counterexample: X1, X2 ~ Bernoulli(1/2), X3 = X1 xor X2, P(Y=1|x) = 0.25 + 0.5 x3.

    Train and test have n records each, from two independent streams of ``seed``.
    """
    n = _check_n(n)
    ss_train, ss_test = np.random.SeedSequence(seed).spawn(2)
    train, p_train = _xor_sample(n, np.random.default_rng(ss_train))
    test, p_test = _xor_sample(n, np.random.default_rng(ss_test))
    return Dataset(
        name="xor",
        train=train,
        test=test,
        label="y",
        description=(
            "XOR counterexample: X1, X2 ~ Bernoulli(1/2) iid, X3 = X1 xor X2, "
            "P(Y=1|x) = 0.25 + 0.5*x3. With all three pair tables the max-ent model predicts "
            "0.9 / 0.1 where the truth is 0.75 / 0.25."
        ),
        citation=PAPER_CITATION,
        true_proba_train=p_train,
        true_proba_test=p_test,
        positive="1",
    )


def xor_distribution() -> pd.DataFrame:
    """Exact joint of the XOR example: 8 rows (X1, X2, X3, p_x, p_y1), p_y1 = P(Y=1|x).

    The 4 states with X3 != X1 xor X2 have p_x = 0 (p_y1 still 0.25 + 0.5 x3).
    """
    g = np.indices((2, 2, 2)).reshape(3, -1).T
    x1, x2, x3 = g[:, 0], g[:, 1], g[:, 2]
    p_x = np.where(x3 == (x1 ^ x2), 0.25, 0.0)
    return pd.DataFrame({"X1": x1, "X2": x2, "X3": x3, "p_x": p_x, "p_y1": 0.25 + 0.5 * x3})


# ====================================================================== synthetic
def _check_n(n) -> int:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise AggMRFError(f"n must be a positive integer number of records; got {n!r}.")
    return int(n)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def synthetic(
    n: int = 20000,
    n_features: int = 4,
    n_modalities: int | list[int] = 3,
    coupling: float = 1.0,
    seed: int = 0,
    p_range: tuple[float, float] = (0.25, 0.75),
) -> Dataset:
    """Records sampled exactly from a known pairwise MRF π(x, y) ∝ exp(φ(x)·(μ + yθ)).

    φ is ``TableLayout.all_pairs`` (singles + pairs + intercept); μ_k, θ_k ~ N(0, s²) with
    s = coupling / sqrt(number of tables), so φ(x)·θ has standard deviation ≈ coupling.
    The intercept θ_0 is then shifted so that P(Y=1) lies in ``p_range``.  All Π M_f states
    are enumerated (at most 2^20).  Feature f is named ``x{f+1}`` with values
    "a0", "a1", ... ("b0", ... for the next feature), so encoding gives the generating codes.
    ``truth`` holds mu, theta (shape (K,)), layout, states (S, D), p_x (S,), p_y1 (S,).
    """
    n = _check_n(n)
    if not isinstance(n_features, int | np.integer) or not 1 <= n_features <= 26:
        raise AggMRFError(f"n_features must be an integer in 1..26; got {n_features!r}.")
    M = np.broadcast_to(np.asarray(n_modalities, dtype=np.int64), (n_features,)).copy()
    if np.any(M < 2):
        raise AggMRFError(f"every feature needs at least 2 modalities; got {M.tolist()}.")
    S = int(np.prod(M.astype(float)))
    if S > MAX_SYNTHETIC_STATES:
        raise AggMRFError(
            f"{S:.3g} states (product of n_modalities {M.tolist()}) is more than 2^20 = "
            f"{MAX_SYNTHETIC_STATES}; use fewer features or modalities."
        )
    if not np.isfinite(coupling) or coupling < 0:
        raise AggMRFError(f"coupling must be a finite number >= 0; got {coupling!r}.")
    names = [f"x{f + 1}" for f in range(n_features)]
    letters = [chr(ord("a") + f) for f in range(n_features)]
    labels = [[f"{letters[f]}{k}" for k in range(M[f])] for f in range(n_features)]
    layout = TableLayout.all_pairs(
        M, names, singles=True, pairs=n_features > 1, intercept=True, modality_labels=labels
    )
    ss_model, ss_train, ss_test = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(ss_model)
    scale = float(coupling) / np.sqrt(layout.n_tables)
    mu = rng.normal(0.0, scale, size=layout.K)
    theta = rng.normal(0.0, scale, size=layout.K)
    states = np.indices(M).reshape(n_features, -1).T.astype(np.int32)  # (S, D), row-major
    rows = layout.rows(states)  # (S, T)
    a = mu[rows].sum(axis=1)  # φ(x)·μ
    b0 = theta[rows].sum(axis=1)  # φ(x)·θ

    def p_y1_marginal(shift: float) -> float:
        b = b0 + shift
        lw = a + np.logaddexp(0.0, b)
        w = np.exp(lw - lw.max())
        return float(np.sum(w * _sigmoid(b)) / w.sum())

    lo, hi = p_range
    p0 = p_y1_marginal(0.0)
    if not lo <= p0 <= hi:
        from scipy.optimize import brentq

        target = min(max(p0, lo), hi)
        shift = brentq(lambda s: p_y1_marginal(s) - target, -50.0, 50.0, xtol=1e-10)
        theta[0] += shift  # the intercept row
        b0 = theta[rows].sum(axis=1)
    logw = a + np.logaddexp(0.0, b0)
    p_x = np.exp(logw - logw.max())
    p_x /= p_x.sum()
    p_y1 = _sigmoid(b0)

    def sample(ss) -> tuple[pd.DataFrame, np.ndarray]:
        r = np.random.default_rng(ss)
        s_idx = r.choice(S, size=n, p=p_x)
        X = states[s_idx]
        p = p_y1[s_idx]
        y = (r.random(n) < p).astype(np.int64)
        cols = {
            names[f]: pd.Categorical.from_codes(X[:, f], categories=labels[f])
            for f in range(n_features)
        }
        df = pd.DataFrame(cols)
        df["y"] = y
        return df, p

    train, p_train = sample(ss_train)
    test, p_test = sample(ss_test)
    return Dataset(
        name="synthetic",
        train=train,
        test=test,
        label="y",
        description=(
            f"Synthetic pairwise MRF: {n_features} features with {M.tolist()} modalities, "
            f"coupling {coupling}, seed {seed}; {n} train and {n} test records sampled exactly "
            f"(P(Y=1) = {float(np.dot(p_x, p_y1)):.3f})."
        ),
        citation="generated",
        true_proba_train=p_train,
        true_proba_test=p_test,
        truth={
            "mu": mu,
            "theta": theta,
            "layout": layout,
            "states": states,
            "p_x": p_x,
            "p_y1": p_y1,
        },
        positive="1",
    )


# ====================================================================== bundled files
def _data_file(name: str):
    """The bundled file ``name`` (a Traversable / Path); tests monkeypatch this."""
    return resources.files("aggmrf_explore") / "data" / name


@functools.lru_cache(maxsize=1)
def _manifest() -> dict:
    return json.loads(_data_file("checksums.json").read_text(encoding="utf-8"))


def _read_verified(name: str) -> bytes:
    """Decompressed bytes of bundled ``name`` (e.g. "adult.data.gz"), md5-checked."""
    expected = _manifest()[name]
    f = _data_file(name)
    reinstall = "reinstall the package (pip install --force-reinstall aggmrf-explore)."
    try:
        raw = f.read_bytes()
    except (FileNotFoundError, OSError) as e:
        raise AggMRFError(f"bundled data file {name} is missing ({e}); {reinstall}") from None
    try:
        data = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise AggMRFError(
            f"bundled data file {name} is not a valid gzip file ({e}); {reinstall}"
        ) from None
    md5 = hashlib.md5(data).hexdigest()
    if md5 != expected["md5"]:
        raise AggMRFError(
            f"bundled data file {name} is corrupted: md5 checksum of its content is {md5}, "
            f"expected {expected['md5']}; {reinstall}"
        )
    return data


def _check_rows(name: str, df: pd.DataFrame) -> None:
    want = _manifest()[name]["rows"]
    if len(df) != want:
        raise AggMRFError(
            f"bundled data file {name} parsed to {len(df)} rows, expected {want}; "
            "reinstall the package."
        )


def _strip_strings(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c].dtype):
            df[c] = df[c].astype(str).str.strip()
    return df


@functools.cache
def _adult_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    out = []
    for fname, skip in (("adult.data.gz", 0), ("adult.test.gz", 1)):
        df = pd.read_csv(
            io.BytesIO(_read_verified(fname)),
            header=None,
            names=ADULT_COLUMNS,
            skiprows=skip,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=[],
        )
        df = _strip_strings(df)
        df["income"] = df["income"].str.rstrip(".")
        _check_rows(fname, df)
        out.append(df)
    return out[0], out[1]


@functools.cache
def _bank_frame() -> pd.DataFrame:
    fname = "bank-additional-full.csv.gz"
    df = pd.read_csv(
        io.BytesIO(_read_verified(fname)), sep=";", keep_default_na=False, na_values=[]
    )
    df = _strip_strings(df)
    _check_rows(fname, df)
    return df


def clear_cache() -> None:
    """Forget the parsed bundled files (the next load re-reads and re-verifies them)."""
    _manifest.cache_clear()
    _adult_frames.cache_clear()
    _bank_frame.cache_clear()


_REAL_ENCODING = {"unseen": "other", "min_count": 5}


def adult(n: int | None = None, seed: int = 0) -> Dataset:
    """UCI Adult, official split: 32,561 train / 16,281 test, 14 features, label ``income``.

    ``n`` takes a seeded random subsample of n training records (the test split is kept).
    """
    train, test = _adult_frames()
    train = _subsample(train.copy(deep=False), n, seed, "Adult train split")
    return Dataset(
        name="adult",
        train=train,
        test=test.copy(deep=False),
        label="income",
        description=(
            "UCI Adult (census income), official split: 32,561 train / 16,281 test records, "
            "14 features, label income (positive '>50K'). '?' (unknown) is kept as a category."
        ),
        citation=ADULT_CITATION,
        positive=">50K",
        encoding=dict(_REAL_ENCODING),
    )


def bank(n: int | None = None, seed: int = 0, test_fraction: float = 0.3) -> Dataset:
    """UCI Bank marketing (bank-additional-full, 41,188 records, 20 features, label ``y``).

    Seeded stratified split, 70 % train / 30 % test.  ``n`` subsamples the train split.
    Note: ``duration`` is only known after the call (it leaks the outcome); drop it with
    ``drop_features=["duration"]`` for a realistic model.
    """
    _check_fraction(test_fraction)
    df = _bank_frame()
    y = (df["y"] == "yes").to_numpy()
    tr, te = _split_indices(y, test_fraction, seed)
    train = _subsample(df.iloc[tr].reset_index(drop=True), n, seed, "Bank train split")
    return Dataset(
        name="bank",
        train=train,
        test=df.iloc[te].reset_index(drop=True),
        label="y",
        description=(
            f"UCI Bank marketing (bank-additional-full): 41,188 records, 20 features, label y "
            f"(positive 'yes'); seeded stratified split {1 - test_fraction:.0%} / "
            f"{test_fraction:.0%} (seed {seed})."
        ),
        citation=BANK_CITATION,
        positive="yes",
        encoding=dict(_REAL_ENCODING),
    )


# ====================================================================== dispatch
def load_dataset(
    name: str,
    *,
    n: int | None = None,
    seed: int = 0,
    features: list[str] | None = None,
    drop_features: list[str] | None = None,
    **kw: Any,
) -> Dataset:
    """Load a named dataset: "toy", "xor", "synthetic", "adult" or "bank".

    ``n``: number of records (xor / synthetic: each split; adult / bank: a seeded subsample
    of the train split; not accepted by toy).  ``features`` / ``drop_features`` select
    feature columns (``truth`` of synthetic data still describes the full generating model).
    Other keywords go to the generator (e.g. ``n_features``, ``coupling``, bank's
    ``test_fraction``); unknown ones raise AggMRFError listing the accepted ones.
    """
    key = str(name).strip().lower()
    if key not in DATASET_NAMES:
        raise AggMRFError(
            f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)} "
            "(or load_csv(path, label) for your own file)."
        )
    args: dict[str, Any] = dict(kw)
    if key == "toy":
        if n is not None:
            raise AggMRFError("the toy dataset has exactly 5 records; do not pass n.")
        fn = toy
    else:
        fn = {"xor": xor, "synthetic": synthetic, "adult": adult, "bank": bank}[key]
        args["seed"] = seed
        if n is not None:
            args["n"] = n
    import inspect

    params = inspect.signature(fn).parameters
    bad = [k for k in args if k not in params]
    if bad:
        ok = [p for p in params if p not in ("n", "seed")]
        raise AggMRFError(
            f"dataset {key!r} does not accept {bad}; its options are {ok or 'none'} "
            "(plus n, seed, features, drop_features)."
        )
    ds = fn(**args)
    return _select(ds, features, drop_features)


# ====================================================================== CSV
def _check_fraction(test_fraction) -> float:
    try:
        f = float(test_fraction)
    except (TypeError, ValueError):
        f = float("nan")
    if not 0.0 < f < 1.0:
        raise AggMRFError(
            f"test_fraction must be strictly between 0 and 1 (e.g. 0.3); got {test_fraction!r}."
        )
    return f


def _read_csv_file(path: str | Path) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise AggMRFError(
            f"file not found: {str(p)!r} (working directory {Path.cwd()}); check the path."
        )
    if p.is_dir():
        raise AggMRFError(f"{str(p)!r} is a directory; give the path of a CSV file.")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise AggMRFError(
                f"{str(p)!r} looks gzip-compressed but cannot be read: {e}."
            ) from None
    if not raw.strip():
        raise AggMRFError(f"{str(p)!r} is empty; a CSV needs a header line and records.")
    head = raw[:65536]
    if b"\x00" in head:
        raise AggMRFError(
            f"{str(p)!r} looks like a binary file, not a CSV text file (it has NUL bytes); "
            "export your data as CSV (comma or semicolon separated, header line first)."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text[:65536])
    if printable < 0.95 * min(len(text), 65536):
        raise AggMRFError(
            f"{str(p)!r} does not look like a CSV text file (too many non-printable characters); "
            "export your data as CSV."
        )
    first = text.lstrip().splitlines()[0]
    counts = {sep: first.count(sep) for sep in (",", ";", "\t")}
    sep = max(counts, key=lambda s: counts[s])
    if counts[sep] == 0:
        raise AggMRFError(
            f"{str(p)!r}: no ',' or ';' separator in the header line {first[:80]!r}; "
            "a CSV needs at least a feature column and a label column."
        )
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=["", "NA", "N/A", "NaN", "nan", "null", "NULL"],
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AggMRFError(
            f"could not parse {str(p)!r} as a {sep!r}-separated CSV: {msg}. Check that every line "
            "has the same number of fields and that quotes are balanced."
        ) from None
    df.columns = [str(c).strip() for c in df.columns]
    return _strip_strings_keep_na(df)


def _strip_strings_keep_na(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        s = df[c]
        if not pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            df[c] = s.where(s.isna(), s.astype(str).str.strip())
    return df


def load_csv(
    path: str | Path,
    label: str,
    *,
    test_csv: str | Path | None = None,
    test_fraction: float = 0.3,
    features: list[str] | None = None,
    drop_features: list[str] | None = None,
    seed: int = 0,
    positive: object | None = None,
    unseen: str = "error",
) -> Dataset:
    """Load your own CSV (',' or ';' separated, header line) with a binary ``label`` column.

    Without ``test_csv``, a seeded stratified split keeps ``test_fraction`` of the rows for
    test.  The positive class follows :func:`~aggmrf_explore.encoding.encode_label` unless
    ``positive`` is given.  Cells of used columns must not be empty / NaN.  ``unseen``:
    what a test value never seen in training becomes — "error" (default: it would silently
    borrow the other tables' evidence) or "other" (an extra "(other)" modality).
    """
    frac = _check_fraction(test_fraction) if test_csv is None else None
    df = _read_csv_file(path)
    if label not in df.columns:
        close = [c for c in df.columns if c.lower() == str(label).lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AggMRFError(
            f"label column {label!r} not found in {str(path)!r}{hint}; columns are {list(df.columns)}."
        )
    test_df = None
    if test_csv is not None:
        test_df = _read_csv_file(test_csv)
        missing = [c for c in df.columns if c not in test_df.columns]
        if missing:
            raise AggMRFError(
                f"test file {str(test_csv)!r} lacks the columns {missing} of {str(path)!r}; "
                f"its columns are {list(test_df.columns)}."
            )
        test_df = test_df[list(df.columns)]
    ds = Dataset(
        name=Path(path).name.split(".")[0] or "csv",
        train=df,
        test=test_df if test_df is not None else df.iloc[:0],
        label=label,
        citation="user data",
        encoding={"unseen": unseen},
    )
    ds = _select(ds, features, drop_features)
    if len(ds.feature_columns) == 0:
        raise AggMRFError(
            f"{str(path)!r} has no feature column besides the label {label!r}; columns: "
            f"{list(df.columns)}."
        )
    full = ds.train
    check_no_missing(full, what=f" of {str(path)!r}", line_offset=2)
    if test_df is not None:
        check_no_missing(ds.test, what=f" of {str(test_csv)!r}", line_offset=2)
    if len(full) < MIN_CSV_ROWS:
        raise AggMRFError(
            f"{str(path)!r} has only {len(full)} record(s); at least {MIN_CSV_ROWS} are needed "
            "to fit and evaluate a model."
        )
    y, pos = encode_label(full[label], positive=positive)
    if test_df is not None:
        if len(ds.test) == 0:
            raise AggMRFError(f"test file {str(test_csv)!r} has no records.")
        encode_label(ds.test[label], positive=pos, classes=[_other_class(full[label], pos), pos])
        train, test = full.reset_index(drop=True), ds.test.reset_index(drop=True)
        split = f"test file {test_csv}"
    else:
        tr, te = _split_indices(y, frac, seed)
        train = full.iloc[tr].reset_index(drop=True)
        test = full.iloc[te].reset_index(drop=True)
        split = f"seeded stratified split {1 - frac:.0%} / {frac:.0%} (seed {seed})"
    ds.train, ds.test = train, test
    ds.positive = pos
    ds.description = (
        f"CSV {path}: {len(train)} train / {len(test)} test records, "
        f"{len(ds.feature_columns)} features, label {label!r} (positive {pos!r}); {split}."
    )
    return ds
