"""A Criteo-shaped synthetic release (the AdKDD'21 challenge format) with a known truth.

The files (:func:`write_criteo_release`, written by pandas through files.create_file)
-------------------------------------------------------------------------------------
``aggregated_pairs.csv``    unnamed index, ``feature_1_id, feature_2_id, feature_1_value,
                            feature_2_value, c, click, sale``: the 171 pairs f < g of the 19
                            features; a row per (value, value) cell whose TRUE count is > 10
                            (cells with c ≤ 10 are dropped, so are empty cells); Gaussian
                            noise σ = 17 added to c, click and sale (float64).
``aggregated_singles.csv``  unnamed index, ``feature_1_id, feature_1_value, c, click, sale``:
                            every value with a true count ≥ 1 (nothing suppressed), same noise.
``granular_sample.csv``     a labelled granular sample (default 100 000 records): columns
                            ``hash_0 … hash_18, click, sale`` (an independent stream).
``test.csv``                a labelled test set, same columns (another independent stream; the
                            real competition's test set is unlabelled, ours is labelled so the
                            truth is known).
``truth.json``              every parameter below, and the release's shape.

Feature ids are 0..18 (feature ``hash_i``); a feature value is its integer code 0..M_f − 1.

The truth (exactly what is sampled; :class:`CriteoTruth` holds the numbers)
---------------------------------------------------------------------------
- Cardinalities: M at popularity rank r = 1..19 is max(10, round(2000 · r^-1.6)) (2000, 660,
  344, …, 18: Zipf-like, tens to thousands), assigned to the features in a seeded random order.
- Values within a feature: z_f(v) ∝ (v + 1)^-1.1, v = 0..M_f − 1 (Zipf).
- Features form a tree: feature 0 is the root, the parent p(f) of f ≥ 1 is uniform among
  0..f − 1 (seeded).  x_0 ~ z_0 and, for f ≥ 1,

      P(x_f = v | x_p(f) = u) = (1 − ρ) z_f(v) + ρ z_f((v − a_f u) mod M_f),   ρ = 0.6,

  a_f an odd integer (seeded): a mixture of the Zipf marginal and a shifted copy keyed by
  the parent.  Features are sampled exactly in the order 0..18 (ancestral sampling).
- click | x ~ Bernoulli(σ(ℓ_c(x))),

      ℓ_c(x) = b_c + Σ_f w_f[x_f] + Σ_{(f, g) ∈ C} u_fg[h(x_f, x_g)],

  b_c = −2.5, w_f[v] ~ N(0, 0.4²), C: 8 seeded feature pairs (the pair crosses), u_fg a table
  of 256 N(0, 0.8²) weights and h(a, b) = ((a · 1 000 003 + b) · 2 654 435 761 mod 2^32) >> 24
  (a fixed hash of the pair of values to 0..255).
- sale | x, click ~ Bernoulli(σ(ℓ_s(x) + 2 · click)),  ℓ_s(x) = b_s + 0.5 Σ_f w_f[x_f] +
  Σ_f s_f[x_f], b_s = −4.5, s_f[v] ~ N(0, 0.3²): sale is correlated with click through
  click itself and the shared w.  P(sale = 1 | x) = p_c σ(ℓ_s + 2) + (1 − p_c) σ(ℓ_s),
  p_c = σ(ℓ_c(x)) (:func:`true_probabilities`).

Both logits are sums of single and pair terms, so the truth lies in the MRF's model class
with all 171 pair tables (the MRF fits P(y | x) ∝ exp(Σ_t θ[row_t(x)])).

Records are generated in chunks (default 1 000 000) from ``SeedSequence([seed, stream,
chunk])``: memory is bounded by the chunk and the K ≈ 5.8 · 10⁶ pair cells' int64
counters, whatever the number of records.  :func:`iter_records` yields the chunks,
:func:`write_records` writes them to Parquet or CSV (``hash_0 … hash_18, click, sale``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..files import create_file, write_text

__all__ = [
    "CriteoTruth",
    "N_FEATURES",
    "SUPPRESSION",
    "NOISE_SIGMA",
    "make_truth",
    "criteo_cardinalities",
    "sample_records",
    "true_probabilities",
    "iter_records",
    "write_records",
    "write_criteo_release",
    "feature_columns",
    "SMALL_CARDINALITIES",
    "small_dataset",
]

N_FEATURES = 19
SUPPRESSION = 10  # pair rows with true count ≤ this are dropped
NOISE_SIGMA = 17.0  # Gaussian noise on c, click and sale
_RHO = 0.6
_ZIPF_S = 1.1
_N_CROSSES = 8
_CROSS_BUCKETS = 256
_STREAM_AGG, _STREAM_SAMPLE, _STREAM_TEST, _STREAM_NOISE = 1, 2, 3, 4


def feature_columns(n_features: int = N_FEATURES) -> list[str]:
    """The record columns ``hash_0 … hash_{D-1}``."""
    return [f"hash_{i}" for i in range(n_features)]


def criteo_cardinalities(
    n_features: int = N_FEATURES, largest: int = 2000, exponent: float = 1.6, smallest: int = 10
) -> np.ndarray:
    """int64 (n_features,) M at popularity rank r: max(smallest, round(largest · r^-exponent))."""
    r = np.arange(1, n_features + 1, dtype=np.float64)
    return np.maximum(smallest, np.round(largest * r**-exponent)).astype(np.int64)


@dataclass
class CriteoTruth:
    """The generating model (see the module docstring); arrays are numpy.

    cardinalities : int64 (D,) M_f;  parents : int64 (D,) p(f) (−1 for the root)
    shifts : int64 (D,) a_f;  rho, zipf_s : floats
    w : list of float64 (M_f,) click value weights;  s : list of float64 (M_f,) sale weights
    crosses : int64 (|C|, 2) the crossed pairs;  cross_w : float64 (|C|, 256)
    b_click, b_sale, sale_click : floats (sale's logit adds sale_click · click)
    """

    cardinalities: np.ndarray
    parents: np.ndarray
    shifts: np.ndarray
    rho: float
    zipf_s: float
    w: list
    s: list
    crosses: np.ndarray
    cross_w: np.ndarray
    b_click: float = -2.5
    b_sale: float = -4.5
    sale_click: float = 2.0

    @property
    def n_features(self) -> int:
        return int(self.cardinalities.size)

    def zipf_cdfs(self) -> list[np.ndarray]:
        """float64 (M_f,) CDF of z_f for each feature."""
        out = []
        for m in self.cardinalities:
            p = (np.arange(1, int(m) + 1, dtype=np.float64)) ** -self.zipf_s
            c = np.cumsum(p / p.sum())
            c[-1] = 1.0
            out.append(c)
        return out

    def to_dict(self) -> dict:
        """JSON-serialisable parameters."""
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, np.ndarray):
                d[k] = v.tolist()
            elif isinstance(v, list):
                d[k] = [np.asarray(a).tolist() for a in v]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> CriteoTruth:
        return cls(
            cardinalities=np.asarray(d["cardinalities"], np.int64),
            parents=np.asarray(d["parents"], np.int64),
            shifts=np.asarray(d["shifts"], np.int64),
            rho=float(d["rho"]),
            zipf_s=float(d["zipf_s"]),
            w=[np.asarray(a, np.float64) for a in d["w"]],
            s=[np.asarray(a, np.float64) for a in d["s"]],
            crosses=np.asarray(d["crosses"], np.int64).reshape(-1, 2),
            cross_w=np.asarray(d["cross_w"], np.float64).reshape(-1, _CROSS_BUCKETS),
            b_click=float(d["b_click"]),
            b_sale=float(d["b_sale"]),
            sale_click=float(d["sale_click"]),
        )


def make_truth(seed: int = 0, cardinalities: np.ndarray | None = None) -> CriteoTruth:
    """The seeded generating model; ``cardinalities`` (D ≥ 2 ints ≥ 2) default to
    :func:`criteo_cardinalities` in a seeded random order."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0]))
    if cardinalities is None:
        m = rng.permutation(criteo_cardinalities())
    else:
        m = np.asarray(cardinalities, dtype=np.int64)
        if m.ndim != 1 or m.size < 2 or np.any(m < 2):
            raise AggMRFError("cardinalities must be at least 2 integers ≥ 2.")
    D = int(m.size)
    parents = np.array([-1] + [int(rng.integers(0, f)) for f in range(1, D)], dtype=np.int64)
    shifts = 2 * rng.integers(1, 10_000, size=D) + 1
    w = [rng.normal(0.0, 0.4, int(k)) for k in m]
    s = [rng.normal(0.0, 0.3, int(k)) for k in m]
    pairs = list(combinations(range(D), 2))
    pick = rng.choice(len(pairs), size=min(_N_CROSSES, len(pairs)), replace=False)
    crosses = np.array([pairs[i] for i in sorted(pick)], dtype=np.int64)
    cross_w = rng.normal(0.0, 0.8, (crosses.shape[0], _CROSS_BUCKETS))
    return CriteoTruth(m, parents, shifts, _RHO, _ZIPF_S, w, s, crosses, cross_w)


def _cross_bucket(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = (a.astype(np.uint64) * np.uint64(1_000_003) + b.astype(np.uint64)) * np.uint64(2654435761)
    return ((h & np.uint64(0xFFFFFFFF)) >> np.uint64(24)).astype(np.int64)


def true_probabilities(truth: CriteoTruth, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(click = 1 | x) and P(sale = 1 | x), float64 (n,) each, for codes X int (n, D)."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != truth.n_features:
        raise AggMRFError(f"X must have shape (n, {truth.n_features}); got {X.shape}.")
    lc = np.full(X.shape[0], truth.b_click)
    ls = np.full(X.shape[0], truth.b_sale)
    for f in range(truth.n_features):
        lc += truth.w[f][X[:, f]]
        ls += 0.5 * truth.w[f][X[:, f]] + truth.s[f][X[:, f]]
    for k, (f, g) in enumerate(truth.crosses):
        lc += truth.cross_w[k][_cross_bucket(X[:, f], X[:, g])]
    pc = 1.0 / (1.0 + np.exp(-lc))
    s1 = 1.0 / (1.0 + np.exp(-(ls + truth.sale_click)))
    s0 = 1.0 / (1.0 + np.exp(-ls))
    return pc, pc * s1 + (1.0 - pc) * s0


def sample_records(
    truth: CriteoTruth, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n exact draws: codes int32 (n, D), click int8 (n,), sale int8 (n,)."""
    n = int(n)
    D = truth.n_features
    cdfs = truth.zipf_cdfs()
    X = np.empty((n, D), dtype=np.int32)
    for f in range(D):
        v = np.searchsorted(cdfs[f], rng.random(n), side="right")
        v = np.minimum(v, truth.cardinalities[f] - 1)
        if f > 0:
            shifted = rng.random(n) < truth.rho
            u = X[:, truth.parents[f]].astype(np.int64)
            v = np.where(shifted, (v + truth.shifts[f] * u) % truth.cardinalities[f], v)
        X[:, f] = v
    pc = true_probabilities(truth, X)[0]
    click = (rng.random(n) < pc).astype(np.int8)
    ls = np.full(n, truth.b_sale) + truth.sale_click * click
    for f in range(D):
        ls += 0.5 * truth.w[f][X[:, f]] + truth.s[f][X[:, f]]
    sale = (rng.random(n) < 1.0 / (1.0 + np.exp(-ls))).astype(np.int8)
    return X, click, sale


def iter_records(
    truth: CriteoTruth, n: int, seed: int = 0, chunk: int = 1_000_000, stream: int = _STREAM_AGG
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The n records of ``stream`` as chunks (X, click, sale) of ≤ ``chunk`` records; chunk
    k comes from ``SeedSequence([seed, stream, k])`` (same records for the same chunk size)."""
    if int(n) < 1 or int(chunk) < 1:
        raise AggMRFError("n and chunk must be positive integers.")
    done, k = 0, 0
    while done < n:
        m = min(int(chunk), int(n) - done)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(stream), k]))
        yield sample_records(truth, m, rng)
        done += m
        k += 1


def _frame(X: np.ndarray, click: np.ndarray, sale: np.ndarray) -> pd.DataFrame:
    df = pd.DataFrame(X, columns=feature_columns(X.shape[1]))
    df["click"] = click
    df["sale"] = sale
    return df


def write_records(
    path: str | os.PathLike,
    n: int,
    seed: int = 0,
    chunk: int = 1_000_000,
    truth: CriteoTruth | None = None,
) -> Path:
    """Write n records (columns ``hash_0 … hash_18, click, sale``) to ``path``: Parquet if it
    ends with .parquet (one row group per chunk), CSV otherwise.  Memory: one chunk."""
    path = Path(path)
    truth = truth or make_truth(seed)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = None
        with create_file(path, "records file", binary=True) as fh:
            try:
                for X, c, s in iter_records(truth, n, seed, chunk):
                    table = pa.Table.from_pandas(_frame(X, c, s), preserve_index=False)
                    if writer is None:
                        writer = pq.ParquetWriter(fh, table.schema)
                    writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()
    else:
        with create_file(path, "records file", newline="") as fh:
            for k, (X, c, s) in enumerate(iter_records(truth, n, seed, chunk)):
                _frame(X, c, s).to_csv(fh, header=k == 0, index=False)
    return path


def write_criteo_release(
    out_dir: str | os.PathLike,
    n: int = 10_000_000,
    seed: int = 0,
    n_sample: int = 100_000,
    n_test: int = 200_000,
    chunk: int = 1_000_000,
    cardinalities: np.ndarray | None = None,
) -> dict:
    """Generate n records in chunks and write the release files of the module docstring
    into ``out_dir``; returns a summary dict (also in truth.json under "release").

    Memory: one chunk plus int64 counters for every single and pair cell (K ≈ 5.8 · 10⁶
    cells with the default cardinalities, ≈ 140 MB).
    """
    if int(n) < 1:
        raise AggMRFError(f"n must be a positive number of records; got {n!r}.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    truth = make_truth(seed, cardinalities)
    m = truth.cardinalities
    D = truth.n_features
    pairs = list(combinations(range(D), 2))
    sizes = np.array([m[f] * m[g] for f, g in pairs], dtype=np.int64)
    p_off = np.concatenate([[0], np.cumsum(sizes)])
    s_off = np.concatenate([[0], np.cumsum(m)])
    # one bincount per table on key · 4 + click · 2 + sale: counts of the 4 label pairs
    pair_acc = np.zeros((int(p_off[-1]), 4), dtype=np.int64)
    single_acc = np.zeros((int(s_off[-1]), 4), dtype=np.int64)
    for X, click, sale in iter_records(truth, n, seed, chunk):
        XT = np.ascontiguousarray(X.T, dtype=np.int64)  # (D, n)
        lab = 2 * click.astype(np.int64) + sale
        for f in range(D):
            single_acc[s_off[f] : s_off[f + 1]] += np.bincount(
                4 * XT[f] + lab, minlength=4 * int(m[f])
            ).reshape(-1, 4)
        for p, (f, g) in enumerate(pairs):
            key = (XT[f] * m[g] + XT[g]) * 4 + lab
            pair_acc[p_off[p] : p_off[p + 1]] += np.bincount(
                key, minlength=4 * int(sizes[p])
            ).reshape(-1, 4)
    # (K, 4) label-pair counts → rows c, click, sale
    pair_acc = np.stack([pair_acc.sum(1), pair_acc[:, 2:].sum(1), pair_acc[:, 1::2].sum(1)])
    single_acc = np.stack([single_acc.sum(1), single_acc[:, 2:].sum(1), single_acc[:, 1::2].sum(1)])
    noise = np.random.default_rng(np.random.SeedSequence([int(seed), _STREAM_NOISE]))
    # pairs: keep cells with true count > SUPPRESSION, then add the noise
    keep = np.flatnonzero(pair_acc[0] > SUPPRESSION)
    p_idx = np.searchsorted(p_off, keep, side="right") - 1
    local = keep - p_off[p_idx]
    pf = np.array([f for f, _ in pairs], dtype=np.int64)[p_idx]
    pg = np.array([g for _, g in pairs], dtype=np.int64)[p_idx]
    mg = m[pg]
    pairs_df = pd.DataFrame(
        {
            "feature_1_id": pf,
            "feature_2_id": pg,
            "feature_1_value": local // mg,
            "feature_2_value": local % mg,
        }
    )
    for j, name in enumerate(("c", "click", "sale")):
        pairs_df[name] = pair_acc[j, keep] + noise.normal(0.0, NOISE_SIGMA, keep.size)
    with create_file(out / "aggregated_pairs.csv", "pairs file", newline="") as fh:
        pairs_df.to_csv(fh)
    keep_s = np.flatnonzero(single_acc[0] > 0)
    s_idx = np.searchsorted(s_off, keep_s, side="right") - 1
    singles_df = pd.DataFrame({"feature_1_id": s_idx, "feature_1_value": keep_s - s_off[s_idx]})
    for j, name in enumerate(("c", "click", "sale")):
        singles_df[name] = single_acc[j, keep_s] + noise.normal(0.0, NOISE_SIGMA, keep_s.size)
    with create_file(out / "aggregated_singles.csv", "singles file", newline="") as fh:
        singles_df.to_csv(fh)
    for fname, count, stream in (
        ("granular_sample.csv", n_sample, _STREAM_SAMPLE),
        ("test.csv", n_test, _STREAM_TEST),
    ):
        with create_file(out / fname, "records file", newline="") as fh:
            for k, (X, c, s) in enumerate(iter_records(truth, count, seed, chunk, stream)):
                _frame(X, c, s).to_csv(fh, header=k == 0, index=False)
    summary = {
        "n_records": int(n),
        "seed": int(seed),
        "n_features": D,
        "n_pairs": len(pairs),
        "pair_cells": int(p_off[-1]),
        "pair_rows_released": int(keep.size),
        "pair_rows_suppressed": int(
            np.count_nonzero((pair_acc[0] > 0) & (pair_acc[0] <= SUPPRESSION))
        ),
        "suppression": SUPPRESSION,
        "noise_sigma": NOISE_SIGMA,
        "n_sample": int(n_sample),
        "n_test": int(n_test),
        "click_rate": float(single_acc[1, : m[0]].sum() / n),
        "sale_rate": float(single_acc[2, : m[0]].sum() / n),
    }
    write_text(out / "truth.json", json.dumps({"release": summary, "truth": truth.to_dict()}))
    return summary


# the explorer's "Criteo-shaped (small, suppressed)" problem: 6 Zipf features, 15 pair tables
SMALL_CARDINALITIES = (30, 20, 12, 8, 6, 5)


def small_dataset(n: int = 20_000, seed: int = 0, label: str = "click"):
    """A small labelled Criteo-shaped dataset for teaching (the explorer's suppressed problem).

    The same generator as the challenge files (:func:`make_truth` with
    :data:`SMALL_CARDINALITIES`, ``seed``), n train and n test records (streams of
    :func:`iter_records`), columns ``hash_0 … hash_5`` (pandas Categoricals "0" … "M_f − 1",
    so encoding keeps every value) and the 0/1 label ``label`` ("click" or "sale").  Its
    pair cells are sparse (Zipf values), so suppressing counts ≤ :data:`SUPPRESSION` drops
    many of them; the suppression itself is applied to the release, not here.
    """
    from .dataset import Dataset

    if label not in ("click", "sale"):
        raise AggMRFError(f"label must be 'click' or 'sale'; got {label!r}.")
    n = int(n)
    if n < 1:
        raise AggMRFError(f"n must be a positive number of records; got {n!r}.")
    truth = make_truth(seed, np.asarray(SMALL_CARDINALITIES))
    names = feature_columns(truth.n_features)
    cats = [[str(v) for v in range(int(m))] for m in truth.cardinalities]

    def split(stream: int) -> tuple[pd.DataFrame, np.ndarray]:
        X, click, sale = next(iter_records(truth, n, seed, chunk=n, stream=stream))
        df = pd.DataFrame(
            {
                nm: pd.Categorical.from_codes(X[:, f], categories=cats[f])
                for f, nm in enumerate(names)
            }
        )
        df[label] = (click if label == "click" else sale).astype(np.int64)
        p = true_probabilities(truth, X)[0 if label == "click" else 1]
        return df, p

    train, p_train = split(_STREAM_AGG)
    test, p_test = split(_STREAM_TEST)
    return Dataset(
        name="Criteo-shaped (small, suppressed)",
        train=train,
        test=test,
        label=label,
        description=(
            f"{n} + {n} records of a Criteo-shaped generator (6 hashed features, Zipf values, "
            f"cardinalities {list(SMALL_CARDINALITIES)}); pair cells with count ≤ {SUPPRESSION} "
            "are suppressed in its release"
        ),
        true_proba_train=p_train,
        true_proba_test=p_test,
        positive="1",
    )
