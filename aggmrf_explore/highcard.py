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
- **Feature hashing of crossed features**, inside the model: ``TableLayout(...,
  hash_sizes={("site", "advertiser"): H})`` makes a table of H rows whose row is
  ``offset + hash(code_site·stride + code_adv·stride)`` — the paper's φ_H = 𝓗 φ for that
  table, O(H) rows whatever M_a M_b.  ``aggregate`` fills it, and the PCD trainer samples
  it *exactly* with :class:`~aggmrf_explore.kernels.hashed.HashedGibbsChain` (a site
  update gathers μ[offset + hash(v·stride + rest)] per candidate v; no Π M_f block).
  :func:`hashed_layout` builds such a layout and :func:`hashed_compare` runs the
  demonstration below.  (:class:`HashedCross` is the older *derived-feature* variant: it
  hashes a cross into a new feature h, which the chain then treats as a free variable
  instead of the function hash(a, b) — an approximation, kept for comparison.)

Memory is O(number of raw modalities) for the encoders and O(K) for the model and the
Gibbs chain (K = table rows after encoding/hashing), never O(Π M_f).

Demonstration (hashing)::

    python benchmarks/hashing.py                       # H = 2^10, 2^12, 2^14, JSON lines
    python -m aggmrf_explore.highcard --H 4096         # one run, one JSON object
    python -m aggmrf_explore.highcard --exact          # exact tables: K and memory only

:func:`hashed_compare` draws the synthetic data with a site × device interaction, codes
every raw value by its index in the generator's vocabulary (sites and advertisers stay
high-cardinality variables of the MRF), hashes every table that holds ``site`` or
``advertiser`` into H rows, trains the MRF on the aggregates, and fits a scikit-learn
logistic regression on the same hashed φ_H(x) (λ chosen on a validation split).  It
reports both test NLLHs, K, Π M_f (the rows exact tables would need) and the peak memory.

Limitations: a site update costs O(M_f × tables holding f) gathers, so a sweep is
O(n' Σ_f M_f T_f) — hashing bounds the memory, not the time spent on a 20 000-value
feature.  Hashed tables cannot be written as CSV releases nor exported as model files
(both raise AggMRFError: their rows are buckets, not modality combinations).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .datasets import Dataset
from .errors import AggMRFError
from .tables import _GOLDEN, _M1, _M2, TableLayout, _mix64

__all__ = [
    "TargetEncoder",
    "target_encode",
    "HashedCross",
    "high_cardinality_dataset",
    "compare",
    "vocabulary_codes",
    "hashed_layout",
    "hashed_compare",
    "exact_memory",
]


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
    """Feature hashing of a crossed feature: (a, b) → one of H buckets (seeded splitmix64).

    The *derived-feature* variant (see the module docstring); to hash a table inside the
    model, exactly, use ``TableLayout(..., hash_sizes={(a, b): H})``.
    """

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
    sizes = {"site": int(n_sites), "advertiser": int(n_advertisers), "device": 3, "hour": 24,
             "region": 8, "os": 4}  # fmt: skip
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


# ====================================================================== hashed tables
HIGH = ("site", "advertiser")


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
    hashed_features: Sequence[str] = HIGH,
    hash_seed: int = 0,
) -> TableLayout:
    """Singles and pairs of every feature; every table holding a ``hashed_features``
    feature is hashed into H rows (so K ≈ H × #hashed tables + the small exact tables)."""
    lay = TableLayout.all_pairs(n_modalities, feature_names)
    hashed = {t: int(H) for t in lay.tables if any(feature_names[f] in hashed_features for f in t)}
    return TableLayout.all_pairs(
        n_modalities, feature_names, hash_sizes=hashed, hash_seed=hash_seed
    )


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def hashed_compare(
    n: int = 100_000,
    seed: int = 0,
    H: int = 2**12,
    n_sites: int = 5_000,
    n_advertisers: int = 1_000,
    site_device_scale: float = 0.6,
    n_gibbs: int = 1_000,
    iterations: int = 200,
    lambdas: Sequence[float] = (1.0, 4.0, 16.0, 64.0),
) -> dict:
    """MRF on hashed tables vs logistic regression on the same hashed features.

    See the module docstring.  Returns a JSON-able dict: the test NLLH of the MRF, of the
    logistic on φ_H (λ on a 20 % validation split of the training records, then refit)
    and of the true P(Y=1|x); K, Π M_f summed over the tables (``dense_rows``), the
    chain's and the parameters' bytes, the peak RSS (MiB) after the data were built and
    at the end, and the seconds of each fit.
    """
    import time

    from .baselines import _fit_lr, _split
    from .metrics import nllh
    from .mrf import PCDTrainer, default_settings
    from .tables import aggregate

    raw = high_cardinality_dataset(n, seed, n_sites, n_advertisers, site_device_scale)
    X, y, Xt, yt, sizes = vocabulary_codes(raw)
    names = list(raw.feature_columns)
    lay = hashed_layout(sizes, names, H)
    rss_data = _peak_rss_mb()

    t0 = time.perf_counter()
    agg = aggregate(X, y, lay)
    settings = default_settings(lay, agg.n, n_gibbs=n_gibbs, eval_every=iterations, seed=seed)
    trainer = PCDTrainer(agg, settings, Xt, yt)
    trainer.fit(iterations)
    p_mrf = trainer.predict_proba(Xt)[:, 1]
    mrf_seconds = time.perf_counter() - t0
    rss_mrf = _peak_rss_mb()

    t0 = time.perf_counter()
    Phi, Phi_t = lay.phi(X), lay.phi(Xt)
    tr, va = _split(X.shape[0], 0.2, seed)
    scores = {
        float(lam): nllh(y[va], _fit_lr(Phi[tr], y[tr], lam, 200).predict_proba(Phi[va])[:, 1])
        for lam in lambdas
    }
    best = max(scores, key=scores.get)
    p_lr = _fit_lr(Phi, y, best, 200).predict_proba(Phi_t)[:, 1]
    lr_seconds = time.perf_counter() - t0

    return {
        "n_train": int(X.shape[0]),
        "n_test": int(Xt.shape[0]),
        "H": int(H),
        "n_modalities": dict(zip(names, map(int, sizes), strict=True)),
        "K": int(lay.K),
        "dense_rows": int(lay.dense_sizes.sum()),
        "hashed_tables": int(np.count_nonzero(lay.hash_sizes)),
        "tables": int(lay.n_tables),
        "n_gibbs": int(n_gibbs),
        "iterations": int(iterations),
        "nllh_test": {
            "mrf_hashed": float(nllh(yt, p_mrf)),
            "logistic_hashed": float(nllh(yt, p_lr)),
            "truth": float(nllh(yt, raw.true_proba_test)),
        },
        "logistic_lambda": best,
        "logistic_validation_nllh": scores,
        "final_d_error": float(trainer.history[-1].d_error),
        "chain_mb": trainer.chain.memory_bytes / 2**20,
        "parameters_mb": 2 * lay.K * 8 / 2**20,
        "peak_rss_mb_after_data": rss_data,
        "peak_rss_mb_after_mrf": rss_mrf,
        "peak_rss_mb_end": _peak_rss_mb(),
        "mrf_seconds": mrf_seconds,
        "logistic_seconds": lr_seconds,
    }


def exact_memory(
    n: int = 100_000,
    seed: int = 0,
    n_sites: int = 5_000,
    n_advertisers: int = 1_000,
    site_device_scale: float = 0.6,
    n_gibbs: int = 1_000,
) -> dict:
    """The same data with *exact* (unhashed) single and pair tables: K, memory, no hashing.

    Builds the layout, the aggregates and a PCD trainer (whose chain is the fast
    ``gibbs.py`` kernel with its dense Π M_f parameter blocks) and runs one iteration;
    returns K, the chain's bytes and the peak RSS (MiB) after the data and at the end.
    Memory grows with Π M_f here: keep n_sites × n_advertisers moderate.
    """
    from .mrf import PCDTrainer, default_settings
    from .tables import aggregate

    raw = high_cardinality_dataset(n, seed, n_sites, n_advertisers, site_device_scale)
    X, y, _, _, sizes = vocabulary_codes(raw)
    lay = TableLayout.all_pairs(sizes, list(raw.feature_columns))
    rss_data = _peak_rss_mb()
    agg = aggregate(X, y, lay)
    trainer = PCDTrainer(agg, default_settings(lay, agg.n, n_gibbs=n_gibbs, seed=seed))
    trainer.step(1)
    return {
        "layout": "exact",
        "n_modalities": dict(zip(raw.feature_columns, map(int, sizes), strict=True)),
        "K": int(lay.K),
        "chain_mb": trainer.chain.memory_bytes / 2**20,
        "parameters_mb": 2 * lay.K * 8 / 2**20,
        "peak_rss_mb_after_data": rss_data,
        "peak_rss_mb_end": _peak_rss_mb(),
    }


def _main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import json

    ap = argparse.ArgumentParser(
        prog="python -m aggmrf_explore.highcard",
        description="MRF on hashed pair tables vs logistic on the same hashed features.",
    )
    ap.add_argument("--H", type=int, default=2**12, help="hash size of each hashed table")
    ap.add_argument("--n", type=int, default=100_000, help="training records")
    ap.add_argument("--sites", type=int, default=5_000)
    ap.add_argument("--advertisers", type=int, default=1_000)
    ap.add_argument("--n-gibbs", type=int, default=1_000)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--exact", action="store_true", help="exact (unhashed) tables instead: K and memory only"
    )
    a = ap.parse_args(argv)
    if a.exact:
        out = exact_memory(a.n, a.seed, a.sites, a.advertisers, n_gibbs=a.n_gibbs)
        print(json.dumps(out))
        return
    out = hashed_compare(a.n, a.seed, a.H, a.sites, a.advertisers, n_gibbs=a.n_gibbs,
                         iterations=a.iterations)  # fmt: skip
    print(json.dumps(out))


if __name__ == "__main__":
    _main()
