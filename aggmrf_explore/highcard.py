"""Data sizes past Adult: high-cardinality features (the paper's section 4.3).

A pair table over two features with M modalities has M² rows, so raw high-cardinality
features (M ~ 10^4 .. 10^5) do not fit.  Two remedies, both here:

- **Target encoding** (:class:`TargetEncoder`, :func:`target_encode`): on a *held-out*
  part of the records — never on the rows that are aggregated — count the occurrences
  and the positive rate of every raw modality, and map each modality to one of M'
  buckets by discretising the two together (count bin × rate bin, plus one bucket for
  modalities not seen in the held-out part).  The aggregated tables then have at most
  M'² rows per pair.  Fitting on held-out rows is what keeps the released aggregates and
  the encoding from leaking each other's noise (Win-Vector's "split training" of
  impact codes); the held-out rows are simply not aggregated.
- **Feature hashing of crossed features** (:class:`HashedCross`): the cross (a, b) of two
  raw features is mapped to one of H buckets by a seeded hash, i.e. the paper's
  φ_H = 𝓗 φ for that table; its aggregate is the table of the derived feature
  h = hash(a, b) mod H, O(H) rows whatever M_a M_b.

Memory is O(number of raw modalities) for the encoders and O(K) for the model and the
Gibbs chain (K = table rows after encoding/hashing), never O(Π M_f).

Limitation (hashing): the Gibbs kernel samples features, and TableLayout rows are
``offset + Σ code·stride``.  A hashed cross is therefore carried as a *derived feature*
h with its own single table (and pairs with the other encoded features if wanted): the
predictor σ(φ_H(x)·θ) has exactly the hashing-trick form, but the chain treats h as a
free variable instead of the function hash(a, b), so the MRF's joint model of (a, b, h)
is an approximation.  Exact support needs hashed tables in TableLayout (rows =
``offset + hash(Σ code·stride) mod H``) and, in the kernel, a gather of
μ[offset + hash(v·stride + rest) mod H] per candidate v (no transposed block, since
that would be Π M_f) — see the report of issue 6.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .datasets import Dataset
from .errors import AggMRFError

__all__ = [
    "TargetEncoder",
    "target_encode",
    "HashedCross",
    "high_cardinality_dataset",
    "compare",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix64(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


# ====================================================================== target encoding
class TargetEncoder:
    """Map the raw modalities of one feature to ``n_buckets`` buckets from held-out records.

    Each raw modality seen in the held-out records gets a count bin (quantiles of log
    count, per record) and a rate bin (quantiles of its smoothed positive rate
    (pos + s·p̄)/(count + s), per record); bucket = count_bin · n_rate_bins + rate_bin.
    Modalities never seen in the held-out part go to the last bucket, ``"unseen"``.
    """

    def __init__(self, n_count_bins: int = 4, n_rate_bins: int = 8, smoothing: float = 20.0):
        for name, v in (("n_count_bins", n_count_bins), ("n_rate_bins", n_rate_bins)):
            if not isinstance(v, int | np.integer) or v < 1:
                raise AggMRFError(f"{name} must be an integer ≥ 1; got {v!r}.")
        if not np.isfinite(smoothing) or smoothing < 0:
            raise AggMRFError(f"smoothing must be a finite number ≥ 0; got {smoothing!r}.")
        self.n_count_bins = int(n_count_bins)
        self.n_rate_bins = int(n_rate_bins)
        self.smoothing = float(smoothing)
        self.mapping_: pd.Series | None = None

    @property
    def n_buckets(self) -> int:
        return self.n_count_bins * self.n_rate_bins + 1

    @property
    def labels(self) -> list[str]:
        return [f"n{i}/r{j}" for i in range(self.n_count_bins) for j in range(self.n_rate_bins)] + [
            "unseen"
        ]

    def fit(self, values, y) -> TargetEncoder:
        """Fit on held-out records: raw values (n,) and labels in {0, 1} (n,)."""
        values = pd.Series(np.asarray(values, dtype=object))
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (len(values),):
            raise AggMRFError(f"y must have one label per value; got {y.shape} for {len(values)}.")
        if len(values) == 0:
            raise AggMRFError("cannot fit a target encoder on zero held-out records.")
        if not np.all((y == 0) | (y == 1)):
            raise AggMRFError("labels must be 0 or 1.")
        stats = (
            pd.DataFrame({"v": values, "y": y}).groupby("v", sort=True)["y"].agg(["size", "sum"])
        )
        count = stats["size"].to_numpy(np.float64)
        prior = float(y.mean())
        rate = (stats["sum"].to_numpy() + self.smoothing * prior) / (count + self.smoothing)
        logc = np.log(count)
        # edges from per-record quantiles (each modality weighted by its count)
        q_c = np.linspace(0, 1, self.n_count_bins + 1)[1:-1]
        q_r = np.linspace(0, 1, self.n_rate_bins + 1)[1:-1]
        c_edges = np.unique(np.quantile(np.repeat(logc, count.astype(np.int64)), q_c))
        r_edges = np.unique(np.quantile(np.repeat(rate, count.astype(np.int64)), q_r))
        cb = np.searchsorted(c_edges, logc, side="right")
        rb = np.searchsorted(r_edges, rate, side="right")
        self.mapping_ = pd.Series((cb * self.n_rate_bins + rb).astype(np.int32), index=stats.index)
        return self

    def transform(self, values) -> np.ndarray:
        """Bucket codes, int32 (n,) in 0 .. n_buckets - 1 (unseen → n_buckets - 1)."""
        if self.mapping_ is None:
            raise AggMRFError("fit the TargetEncoder on held-out records before transform.")
        idx = self.mapping_.index.get_indexer(pd.Index(np.asarray(values, dtype=object)))
        codes = np.full(len(idx), self.n_buckets - 1, dtype=np.int32)
        seen = idx >= 0
        codes[seen] = self.mapping_.to_numpy()[idx[seen]]
        return codes


def target_encode(
    ds: Dataset,
    columns: Sequence[str],
    holdout_fraction: float = 0.3,
    seed: int = 0,
    **encoder_kwargs,
) -> tuple[Dataset, dict[str, TargetEncoder]]:
    """Target-encode ``columns`` of ``ds`` with encoders fitted on a held-out part of ds.train.

    Returns (dataset, encoders): the dataset's train split holds only the rows that were
    *not* held out (the rows that get aggregated), its test split is transformed with the
    same encoders; the encoded columns hold bucket labels.
    """
    if not 0 < holdout_fraction < 1:
        raise AggMRFError(f"holdout_fraction must be in (0, 1); got {holdout_fraction!r}.")
    missing = [c for c in columns if c not in ds.feature_columns]
    if missing:
        raise AggMRFError(f"unknown columns {missing}; feature columns: {ds.feature_columns}.")
    from .encoding import encode_label

    rng = np.random.default_rng(seed)
    n = len(ds.train)
    held = np.zeros(n, dtype=bool)
    held[rng.permutation(n)[: int(round(holdout_fraction * n))]] = True
    y_all, _ = encode_label(ds.train[ds.label], positive=ds.positive)
    train = ds.train.loc[~held].reset_index(drop=True).copy()
    test = ds.test.copy()
    encoders = {}
    for col in columns:
        enc = TargetEncoder(**encoder_kwargs).fit(ds.train[col].to_numpy()[held], y_all[held])
        labels = np.asarray(enc.labels, dtype=object)
        cats = pd.CategoricalDtype(enc.labels)
        train[col] = pd.Categorical(labels[enc.transform(train[col].to_numpy())], dtype=cats)
        test[col] = pd.Categorical(labels[enc.transform(test[col].to_numpy())], dtype=cats)
        encoders[col] = enc
    out = Dataset(
        name=f"{ds.name}-target-encoded",
        train=train,
        test=test,
        label=ds.label,
        description=f"{ds.description} Target-encoded {list(columns)} on {held.sum()} held-out rows.",
        citation=ds.citation,
        true_proba_train=None if ds.true_proba_train is None else ds.true_proba_train[~held],
        true_proba_test=ds.true_proba_test,
        truth=ds.truth,
        positive=ds.positive,
        encoding={"unseen": "other"},
    )
    return out, encoders


# ====================================================================== hashing
class HashedCross:
    """Feature hashing of a crossed feature: (a, b) → one of H buckets (seeded splitmix64)."""

    def __init__(self, H: int, seed: int = 0) -> None:
        if not isinstance(H, int | np.integer) or H < 1:
            raise AggMRFError(f"hash size H must be an integer ≥ 1; got {H!r}.")
        self.H = int(H)
        self.seed = int(seed)

    def transform(self, a, b) -> np.ndarray:
        """Bucket of every pair of non-negative integer codes, int32 (n,) in 0 .. H - 1."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if a.shape != b.shape or np.any(a < 0) or np.any(b < 0):
            raise AggMRFError("a and b must be non-negative integer codes of the same shape.")
        with np.errstate(over="ignore"):
            z = _mix64(a.astype(np.uint64) * _M1 + np.uint64(self.seed) + _GOLDEN)
            z = _mix64(z ^ (b.astype(np.uint64) * _M2 + _GOLDEN))
        return (z % np.uint64(self.H)).astype(np.int32)


# ====================================================================== synthetic data
def high_cardinality_dataset(n: int = 200_000, seed: int = 0) -> Dataset:
    """Synthetic click-like data: two high-cardinality features and four small ones.

    ``site`` (20 000 raw values, Zipf-like popularity) and ``advertiser`` (3 000 values)
    carry random per-value effects on the logit; ``device`` (3), ``hour`` (24), ``region``
    (8) and ``os`` (4) carry smaller effects and a device × hour interaction.  n train
    and n // 2 test records; ``true_proba_*`` hold P(Y = 1 | x).  Memory O(n + values).
    """
    if not isinstance(n, int | np.integer) or n < 100:
        raise AggMRFError(f"n must be an integer ≥ 100; got {n!r}.")
    rng = np.random.default_rng(seed)
    sizes = {"site": 20_000, "advertiser": 3_000, "device": 3, "hour": 24, "region": 8, "os": 4}
    pop = {
        "site": 1.0 / (np.arange(sizes["site"]) + 10.0) ** 1.1,
        "advertiser": 1.0 / (np.arange(sizes["advertiser"]) + 5.0) ** 0.9,
    }
    scale = {"site": 0.9, "advertiser": 0.6, "device": 0.3, "hour": 0.2, "region": 0.2, "os": 0.2}
    effects = {k: rng.normal(0.0, scale[k], m) for k, m in sizes.items()}
    inter = rng.normal(0.0, 0.3, (sizes["device"], sizes["hour"]))

    def sample(m: int, r: np.random.Generator):
        cols = {}
        for k, size in sizes.items():
            p = pop.get(k)
            cols[k] = r.choice(size, size=m, p=None if p is None else p / p.sum())
        logit = -1.6 + sum(effects[k][cols[k]] for k in sizes)
        logit = logit + inter[cols["device"], cols["hour"]]
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
            f"seed {seed}."
        ),
        citation="generated",
        true_proba_train=p_train,
        true_proba_test=p_test,
        truth={"effects": effects, "interaction": inter},
        positive="1",
        encoding={"unseen": "other"},
    )


def compare(n: int = 200_000, seed: int = 0, iterations: int = 600) -> dict:
    """MRF vs logistic on the same target encoding of the synthetic high-cardinality data.

    Returns the test NLLH of the MRF (default settings, exact aggregates of the
    non-held-out rows) and of the logistic on the same φ (singles + pairs), the raw and
    encoded numbers of modalities, K, and the peak memory of the chain.
    """
    from .baselines import fit_baselines
    from .experiment import prepare, train_mrf

    raw = high_cardinality_dataset(n, seed)
    ds, encoders = target_encode(raw, ["site", "advertiser"], holdout_fraction=0.3, seed=seed)
    problem = prepare(ds)
    run = train_mrf(problem, iterations=iterations, eval_every=iterations + 1)
    base = fit_baselines(problem, seed=seed, which=("logistic_pairs", "logistic"))
    return {
        "n_aggregated": problem.n_train,
        "raw_modalities": {c: int(raw.train[c].nunique()) for c in ("site", "advertiser")},
        "encoded_modalities": problem.layout.n_modalities.tolist(),
        "K": problem.layout.K,
        "chain_memory_mb": run.trainer.chain.memory_bytes / 2**20,
        "nllh_test": {
            "mrf": run.nllh_test,
            "logistic_pairs": base["logistic_pairs"].nllh_test,
            "logistic": base["logistic"].nllh_test,
        },
        "mrf_minus_logistic_pairs": run.nllh_test - base["logistic_pairs"].nllh_test,
        "mrf_seconds": run.seconds,
    }
