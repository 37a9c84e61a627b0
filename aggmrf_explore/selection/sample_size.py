"""Records needed for the same test NLLH: how many records local privacy needs to match central.

The sweep (``aggmrf-explore sweep --privacy central,local --sizes …``) trains every model on
nested random subsamples of the training records.  For each ε, model pair (central MRF ↔ local
MRF, central MRF-N ↔ local MRF-N) and central size n_c, :func:`records_needed` reads off the
number of records n_l at which the local curve, test NLLH against log n, reaches the central
model's mean NLLH at n_c.

Rule (stated in the CSV's ``status`` column):

* ``interpolated``: the local curve (mean over the noise seeds at each size) crosses the
  target between two measured sizes; linear interpolation in log n; the smallest such n.
* ``extrapolated``: every measured local mean is below the target; the line through the two
  largest sizes (in log n) reaches it within ``max_factor`` × the largest size (default 10).
  A curve that flattens (NLLH = L∞ − a/n) makes this an *under*-estimate.
* ``beyond``: not reached within ``max_factor`` × the largest size (or the top of the local
  curve is flat or falling): ``records_needed`` is then that lower bound, a "more than".
* ``below``: the smallest size already reaches the target: ``records_needed`` is that size,
  an "at most".

The theoretical reference is ``privacy.local.records_needed_theory``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import AggMRFError

__all__ = [
    "MIN_RECORDS",
    "STATUSES",
    "parse_sizes",
    "resolve_sizes",
    "nested_subsample",
    "records_needed",
    "records_table",
    "PAIRS",
]

MIN_RECORDS = 10  # a subsample smaller than this trains nothing meaningful
STATUSES = ("interpolated", "extrapolated", "beyond", "below")


def parse_sizes(text: str) -> list[float]:
    """``--sizes``: comma-separated positive finite numbers, either all fractions in (0, 1]
    of the training records or all whole record counts > 1 (syntax only; the counts are
    checked against n by :func:`resolve_sizes`)."""
    tokens = [t.strip() for t in str(text).split(",")]
    if not tokens or any(not t for t in tokens):
        raise AggMRFError(
            f"--sizes must be comma-separated fractions (e.g. 0.25,0.5,1) or record counts "
            f"(e.g. 1000,10000); got {str(text)[:60]!r}."
        )
    vals = []
    for t in tokens:
        try:
            v = float(t.replace("_", ""))
        except ValueError:
            raise AggMRFError(
                f"--sizes: {t[:30]!r} is not a number; give fractions such as 0.25,0.5,1 or "
                "record counts such as 1000,10000."
            ) from None
        if not (math.isfinite(v) and v > 0):
            raise AggMRFError(f"--sizes must be finite numbers > 0; got {t[:30]!r}.")
        vals.append(v)
    fractions = [v <= 1.0 for v in vals]
    if any(fractions) and not all(fractions):
        raise AggMRFError(
            f"--sizes mixes fractions (≤ 1) and record counts (> 1); use one kind: {text!r}."
        )
    if not all(fractions) and any(v != int(v) for v in vals):
        raise AggMRFError(f"--sizes record counts must be whole numbers; got {text!r}.")
    return vals


def resolve_sizes(sizes: Sequence[float], n: int) -> list[int]:
    """Record counts (ascending, distinct) for ``n`` training records: fractions f → round(f·n),
    counts as they are.  Each must lie in [MIN_RECORDS, n] (n itself alone is always
    valid: a sweep of a tiny dataset without subsamples)."""
    if not sizes:
        raise AggMRFError("--sizes needs at least one size.")
    fractions = all(v <= 1.0 for v in sizes)
    out = sorted({int(round(v * n)) if fractions else int(v) for v in sizes})
    if out[-1] > n:
        raise AggMRFError(
            f"--sizes {out[-1]:,} is more than the {n:,} training records; give at most {n:,} "
            "(or fractions ≤ 1)."
        )
    if out[0] < MIN_RECORDS and out != [n]:  # all the records are always a valid size
        what = f"{min(sizes):g} × {n:,}" if fractions else f"{out[0]:,}"
        raise AggMRFError(
            f"--sizes {what} gives {out[0]} records; each subsample needs at least "
            f"{MIN_RECORDS} records."
        )
    return out


def nested_subsample(n: int, size: int, seed: int) -> np.ndarray | None:
    """Indices of ``size`` of ``n`` records: the first ``size`` of a permutation seeded by
    ``seed``, so the subsamples of one seed are nested.  None when ``size == n`` (all records,
    in their order)."""
    if not 1 <= size <= n:
        raise AggMRFError(f"subsample size must be in 1..{n}; got {size}.")
    if size == n:
        return None
    return np.sort(np.random.default_rng(seed).permutation(n)[:size])


def records_needed(
    sizes: Sequence[float], nllh: Sequence[float], target: float, max_factor: float = 10.0
) -> tuple[float, str]:
    """(records, status): where the curve ``nllh`` against log ``sizes`` first reaches
    ``target``; status and meaning as in the module docstring.

    sizes : ascending record counts (m ≥ 2) (non-finite ``nllh`` points are dropped first);
    nllh : test NLLH at each size (higher is better);  target : the NLLH to reach.
    The result is always finite.
    """
    s = np.asarray(sizes, dtype=np.float64)
    y = np.asarray(nllh, dtype=np.float64)
    if s.ndim != 1 or s.shape != y.shape:
        raise AggMRFError("sizes and nllh must be 1-d arrays of the same length.")
    if not (math.isfinite(target) and math.isfinite(max_factor) and max_factor >= 1.0):
        raise AggMRFError("target must be finite and max_factor ≥ 1.")
    keep = np.isfinite(y) & np.isfinite(s) & (s > 0)
    s, y = s[keep], y[keep]
    if s.size < 2 or np.any(np.diff(s) <= 0):
        raise AggMRFError("records_needed needs ≥ 2 distinct ascending sizes with finite NLLH.")
    x = np.log(s)
    if y[0] >= target:
        return float(s[0]), "below"
    for i in range(s.size - 1):
        if y[i] < target <= y[i + 1]:
            t = (target - y[i]) / (y[i + 1] - y[i])
            return float(np.exp(x[i] + t * (x[i + 1] - x[i]))), "interpolated"
    cap = float(s[-1] * max_factor)
    slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
    if slope <= 0.0:
        return cap, "beyond"
    x_star = x[-1] + (target - y[-1]) / slope
    if x_star > math.log(cap):
        return cap, "beyond"
    return float(math.exp(x_star)), "extrapolated"


#: the model pairs compared: label → (central model, local model) in the sweep's CSV
PAIRS = {"MRF-N": ("central MRF-N", "local MRF-N"), "MRF": ("central MRF", "local MRF")}


def records_table(summary, theory: dict | None = None, max_factor: float = 10.0):
    """Records needed, one row per ε, model pair and central size (a pandas DataFrame).

    ``summary``: the sweep's per-(ε, model, n_records) means, columns ``epsilon``, ``model``,
    ``n_records``, ``mean`` (test NLLH; NaN means every run diverged and the point is
    dropped); ``theory``: {ε: callable n_central (array) → theoretical records} or None.
    Columns: epsilon, pair, n_central, nllh_central, records_needed, status, ratio
    (= records_needed / n_central), theory_records, theory_ratio (0 when no theory), and
    n_available (the largest measured size).  Every value is finite.
    """
    import pandas as pd

    rows = []
    n_avail = int(summary["n_records"].max())
    for eps, by_eps in summary.groupby("epsilon", sort=True):
        for pair, (cm, lm) in PAIRS.items():
            cen = by_eps[by_eps["model"] == cm].sort_values("n_records")
            loc = by_eps[by_eps["model"] == lm].sort_values("n_records")
            loc = loc[np.isfinite(loc["mean"])]
            if cen.empty or len(loc) < 2:
                continue
            for n_c, target in zip(cen["n_records"], cen["mean"], strict=True):
                if not np.isfinite(target):
                    continue
                need, status = records_needed(
                    loc["n_records"].to_numpy(float),
                    loc["mean"].to_numpy(float),
                    float(target),
                    max_factor,
                )
                th = float(theory[eps](np.array([float(n_c)]))[0]) if theory else 0.0
                rows.append(
                    {
                        "epsilon": float(eps),
                        "pair": pair,
                        "n_central": int(n_c),
                        "nllh_central": float(target),
                        "records_needed": need,
                        "status": status,
                        "ratio": need / float(n_c),
                        "theory_records": th,
                        "theory_ratio": th / float(n_c),
                        "n_available": n_avail,
                    }
                )
    cols = [
        "epsilon",
        "pair",
        "n_central",
        "nllh_central",
        "records_needed",
        "status",
        "ratio",
        "theory_records",
        "theory_ratio",
        "n_available",
    ]
    return pd.DataFrame(rows, columns=cols)
