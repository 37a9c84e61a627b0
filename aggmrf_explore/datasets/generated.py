"""Generated datasets: the paper's toy Table 1, the XOR counterexample (with its exact
distribution and expected tables), synthetic MRF data and synthetic high-cardinality data
(with :func:`vocabulary_codes`, its codes by the generator's vocabulary, and
:func:`hashed_layout`, a layout hashing every table that holds a high-cardinality feature).

Every generator is seeded: the same arguments give the same records (train and test come
from independent ``SeedSequence(seed).spawn`` streams).  ``true_proba_*`` hold the true
P(Y=1|x) of each record; ``truth`` holds the generating model where there is one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..tables import AggregatedData, TableLayout
from .dataset import Dataset

__all__ = [
    "toy",
    "xor",
    "xor_distribution",
    "xor_states",
    "expected_tables",
    "xor_expected_tables",
    "synthetic",
    "high_cardinality_dataset",
    "HIGH_CARDINALITY_FEATURES",
    "vocabulary_codes",
    "hashed_layout",
    "PAPER_CITATION",
    "MAX_SYNTHETIC_STATES",
]

MAX_SYNTHETIC_STATES = 2**20
PAPER_CITATION = (
    "Gilotte, Ben Yahmed & Rohde, Learning from aggregated data with a maximum entropy model."
)


def _check_n(n) -> int:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise AggMRFError(f"n must be a positive integer number of records; got {n!r}.")
    return int(n)


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


def xor_states() -> np.ndarray:
    """The 8 XOR states (X1, X2, X3) as codes, int32 (8, 3), in the row order of
    :func:`xor_distribution` (the code of a value is the value: modalities "0", "1")."""
    return xor_distribution()[["X1", "X2", "X3"]].to_numpy().astype(np.int32)


def expected_tables(
    layout: TableLayout, states: np.ndarray, p_x: np.ndarray, p_y1: np.ndarray
) -> AggregatedData:
    """The tables of infinite data, divided by n: d = Σ_x p(x) φ(x), c = Σ_x p(x) P(Y=1|x) φ(x).

    ``states``: int codes (S, D) of the layout's features; ``p_x``: P(x) (S,), summing to
    1; ``p_y1``: P(Y=1|x) (S,).  Returns AggregatedData with n = 1 (d, c shape (K,),
    probabilities, not counts).
    """
    states = np.asarray(states)
    p_x = np.asarray(p_x, dtype=np.float64)
    p_y1 = np.asarray(p_y1, dtype=np.float64)
    if states.ndim != 2 or p_x.shape != (states.shape[0],) or p_y1.shape != p_x.shape:
        raise AggMRFError(
            f"states must be (S, D) with p_x and p_y1 of shape (S,); got {states.shape}, "
            f"{p_x.shape} and {p_y1.shape}."
        )
    r = layout.rows(states).ravel()
    T = layout.n_tables
    d = np.bincount(r, weights=np.repeat(p_x, T), minlength=layout.K)
    c = np.bincount(r, weights=np.repeat(p_x * p_y1, T), minlength=layout.K)
    return AggregatedData(layout, d, c, 1)


def xor_expected_tables(layout: TableLayout | None = None) -> AggregatedData:
    """The XOR tables with infinite data (n = 1): :func:`expected_tables` of
    :func:`xor_distribution` over :func:`xor_states`.

    ``layout``: a layout over the three XOR features with 2 modalities each (e.g.
    ``prepare("xor").layout``); default ``TableLayout.all_pairs([2, 2, 2])``.
    """
    if layout is None:
        layout = TableLayout.all_pairs([2, 2, 2])
    dist = xor_distribution()
    return expected_tables(layout, xor_states(), dist["p_x"].to_numpy(), dist["p_y1"].to_numpy())


# ====================================================================== synthetic
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


# ====================================================================== high cardinality
def high_cardinality_dataset(
    n: int = 200_000,
    seed: int = 0,
    n_sites: int = 20_000,
    n_advertisers: int = 3_000,
    site_device_scale: float = 0.0,
) -> Dataset:
    """Synthetic click-like data: two high-cardinality features and four small ones.

    ``site`` (``n_sites`` raw values "s0", "s1", …, Zipf-like popularity) and
    ``advertiser`` (``n_advertisers`` values "a0", …) carry random per-value effects on
    the logit; ``device`` (3), ``hour`` (24), ``region`` (8) and ``os`` (4) carry smaller
    effects and a device × hour interaction.  ``site_device_scale`` > 0 adds a site ×
    device interaction N(0, scale²) (only crossed features can learn it).  n train and
    n // 2 test records; ``true_proba_*`` hold P(Y = 1 | x); ``truth["effects"][k]`` has
    one entry per raw value of k.  Memory O(n + values).
    """
    if not isinstance(n, int | np.integer) or n < 100:
        raise AggMRFError(f"n must be an integer ≥ 100; got {n!r}.")
    for name, v in (("n_sites", n_sites), ("n_advertisers", n_advertisers)):
        if not isinstance(v, int | np.integer) or v < 2:
            raise AggMRFError(f"{name} must be an integer ≥ 2; got {v!r}.")
    if not np.isfinite(site_device_scale) or site_device_scale < 0:
        raise AggMRFError(f"site_device_scale must be ≥ 0; got {site_device_scale!r}.")
    rng = np.random.default_rng(seed)
    sizes = {
        "site": int(n_sites),
        "advertiser": int(n_advertisers),
        "device": 3,
        "hour": 24,
        "region": 8,
        "os": 4,
    }
    pop = {
        "site": 1.0 / (np.arange(sizes["site"]) + 10.0) ** 1.1,
        "advertiser": 1.0 / (np.arange(sizes["advertiser"]) + 5.0) ** 0.9,
    }
    scale = {"site": 0.9, "advertiser": 0.6, "device": 0.3, "hour": 0.2, "region": 0.2, "os": 0.2}
    effects = {k: rng.normal(0.0, scale[k], m) for k, m in sizes.items()}
    inter = rng.normal(0.0, 0.3, (sizes["device"], sizes["hour"]))
    site_device = (
        rng.normal(0.0, site_device_scale, (sizes["site"], sizes["device"]))
        if site_device_scale > 0
        else None
    )

    def sample(m: int, r: np.random.Generator):
        cols = {}
        for k, size in sizes.items():
            p = pop.get(k)
            cols[k] = r.choice(size, size=m, p=None if p is None else p / p.sum())
        logit = -1.6 + sum(effects[k][cols[k]] for k in sizes)
        logit = logit + inter[cols["device"], cols["hour"]]
        if site_device is not None:
            logit = logit + site_device[cols["site"], cols["device"]]
        p1 = 1.0 / (1.0 + np.exp(-logit))
        y = (r.random(m) < p1).astype(np.int64)
        df = pd.DataFrame({k: np.char.add(k[0], cols[k].astype(str)) for k in sizes})
        df["y"] = y
        return df, p1

    s_train, s_test = np.random.SeedSequence(seed).spawn(2)
    train, p_train = sample(int(n), np.random.default_rng(s_train))
    test, p_test = sample(int(n) // 2, np.random.default_rng(s_test))
    return Dataset(
        name="highcard",
        train=train,
        test=test,
        label="y",
        description=(
            f"Synthetic high-cardinality data: {sizes}; {n} train / {n // 2} test records, "
            f"site × device scale {site_device_scale}, seed {seed}."
        ),
        citation="generated",
        true_proba_train=p_train,
        true_proba_test=p_test,
        truth={"effects": effects, "interaction": inter, "site_device": site_device},
        positive="1",
        encoding={"unseen": "other"},
    )


HIGH_CARDINALITY_FEATURES = ("site", "advertiser")


def vocabulary_codes(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
    """Codes of :func:`high_cardinality_dataset` records by index in the generator's vocabulary.

    Raw value ``k[0] + str(i)`` of column k gets code i, so every raw site stays its own
    modality (M_site = n_sites) and test values never seen in training still have a code.
    Returns (X_train (n, D) int32, y_train (n,), X_test, y_test, n_modalities (D,)).
    """
    cols = [c for c in ds.feature_columns]
    sizes = [len(ds.truth["effects"][c]) for c in cols]

    def codes(df: pd.DataFrame) -> np.ndarray:
        out = np.empty((len(df), len(cols)), dtype=np.int32)
        for j, c in enumerate(cols):
            vocab = pd.Index([c[0] + str(i) for i in range(sizes[j])])
            out[:, j] = vocab.get_indexer(df[c].to_numpy())
        return out

    y_tr = ds.train[ds.label].to_numpy(np.int64)
    y_te = ds.test[ds.label].to_numpy(np.int64)
    return codes(ds.train), y_tr, codes(ds.test), y_te, sizes


def hashed_layout(
    n_modalities: Sequence[int],
    feature_names: Sequence[str],
    H: int,
    hashed_features: Sequence[str] = HIGH_CARDINALITY_FEATURES,
    hash_seed: int = 0,
) -> TableLayout:
    """Singles and pairs of every feature; every table holding a ``hashed_features``
    feature is hashed into H rows (so K ≈ H × #hashed tables + the small exact tables)."""
    lay = TableLayout.all_pairs(n_modalities, feature_names)
    hashed = {t: int(H) for t in lay.tables if any(feature_names[f] in hashed_features for f in t)}
    return TableLayout.all_pairs(
        n_modalities, feature_names, hash_sizes=hashed, hash_seed=hash_seed
    )
