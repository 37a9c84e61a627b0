"""Encoders for features with 10^4 .. 10^5 raw values (the paper's section 4.3), whose pair
tables (M² rows) would not fit: target encoding maps the raw values to few buckets; a
hashed cross maps a pair of codes to one of H buckets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import AggMRFError
from .kernels.rng import GOLDEN, M1, M2, mix64

__all__ = ["TargetEncoder", "HashedCross"]


# Encoders for features with 10^4 .. 10^5 raw values (the paper's section 4.3), whose pair
# tables (M² rows) would not fit: target encoding maps the raw values to few buckets (fit on
# held-out records: ``aggmrf_explore.datasets.target_encode`` applies it to a Dataset);
# a hashed cross maps a pair of codes to one of H buckets.  (To hash a table *inside* the
# model, exactly, use ``TableLayout(..., hash_sizes={(a, b): H})`` instead.)


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

    def fit(self, values: Sequence | np.ndarray, y: Sequence | np.ndarray) -> TargetEncoder:
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

    def transform(self, values: Sequence | np.ndarray) -> np.ndarray:
        """Bucket codes, int32 (n,) in 0 .. n_buckets - 1 (unseen → n_buckets - 1)."""
        if self.mapping_ is None:
            raise AggMRFError("fit the TargetEncoder on held-out records before transform.")
        idx = self.mapping_.index.get_indexer(pd.Index(np.asarray(values, dtype=object)))
        codes = np.full(len(idx), self.n_buckets - 1, dtype=np.int32)
        seen = idx >= 0
        codes[seen] = self.mapping_.to_numpy()[idx[seen]]
        return codes


class HashedCross:
    """Feature hashing of a crossed feature: (a, b) → one of H buckets (seeded splitmix64).

    The *derived-feature* variant: the cross becomes a new feature h, which a Gibbs chain
    then treats as a free variable instead of the function hash(a, b) (an approximation,
    kept for comparison).  To hash a table inside the model, exactly, use
    ``TableLayout(..., hash_sizes={(a, b): H})``.
    """

    def __init__(self, H: int, seed: int = 0) -> None:
        if not isinstance(H, int | np.integer) or H < 1:
            raise AggMRFError(f"hash size H must be an integer ≥ 1; got {H!r}.")
        self.H = int(H)
        self.seed = int(seed)

    def transform(self, a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> np.ndarray:
        """Bucket of every pair of non-negative integer codes, int32 (n,) in 0 .. H - 1."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if a.shape != b.shape or np.any(a < 0) or np.any(b < 0):
            raise AggMRFError("a and b must be non-negative integer codes of the same shape.")
        with np.errstate(over="ignore"):
            z = mix64(a.astype(np.uint64) * M1 + np.uint64(self.seed) + GOLDEN)
            z = mix64(z ^ (b.astype(np.uint64) * M2 + GOLDEN))
        return (z % np.uint64(self.H)).astype(np.int32)
