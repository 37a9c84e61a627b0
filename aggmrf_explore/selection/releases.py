"""Sub-releases of one release, for validation without records.

* :func:`sub_release`: the release restricted to some of its tables (the others held out);
* :func:`split_release`: two halves, as if the records had been split at random (thinning),
  with the noise split so the halves stay independent where it can be (Gaussian fission).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import AggMRFError
from ..privacy import GaussianMechanism, scaled_noise
from ..tables import AggregatedData
from ..tables.suppression import split_suppression, sub_suppression

__all__ = ["split_release", "sub_release"]


def sub_release(agg: AggregatedData, keep: Sequence[int]) -> AggregatedData:
    """The release restricted to the tables ``keep`` (indices into ``agg.layout.tables``).

    The intercept is kept; the noise mechanism (per-cell noise level) is carried over.
    """
    lay = agg.layout
    keep = sorted({int(t) for t in keep if lay.tables[int(t)]})
    if not keep:
        raise AggMRFError("a sub-release needs at least one released table.")
    sub = lay.with_tables([lay.tables[t] for t in keep])  # keeps hash sizes
    parts = ([np.arange(1)] if lay.intercept else []) + [
        np.arange(lay.offsets[t], lay.offsets[t + 1]) for t in keep
    ]
    rows = np.concatenate(parts)
    box = sub_suppression(agg.suppression, lay, keep)  # suppressed rows stay 0 ≤ d ≤ k
    return AggregatedData(
        sub, agg.d[rows], agg.c[rows], agg.n, noise=agg.noise, meta=dict(agg.meta), suppression=box
    )


def split_release(
    agg: AggregatedData, fraction: float = 0.5, seed: int = 0, fission: bool = True
) -> tuple[AggregatedData, AggregatedData]:
    """Split a release into two as if its records had been split at random (thinning).

    Each row's records are split independently per table: d_A ~ Binomial(d, fraction),
    c_A ~ Hypergeometric(c positives among d, d_A drawn); B = the rest.  Within a table
    this is exactly a random split of the table's records; across tables the splits are
    independent, so A's tables agree with each other only up to sampling noise (the
    trainer tolerates that, as it tolerates privacy noise).

    Noisy releases b = A + L (noise sd σ) are projected (d⁺, c⁺) and rounded first, then
    thinned the same way: with f = ``fraction``, half A's value is ≈ A_A + f·L (a random
    f-share A_A of the true records plus f·L) and half B's ≈ A_B + (1 − f)·L: the same L,
    so the two halves' noises are perfectly correlated.  Hence:

    * Gaussian noise, ``fission=True`` (default; Gaussian data fission): add W to every
      released value of A and subtract it from B, W ~ N(0, f(1 − f)σ²) i.i.d. (its own
      random stream).  The halves' noises f·L + W and (1 − f)·L − W are then independent,
      with sd σ√f and σ√(1 − f): σ/√2 each for f = ½.  Each half carries that mechanism.
    * Laplace noise (no such split exists) or ``fission=False``: each half carries the
      mechanism scaled by its share, f·σ and (1 − f)·σ (σ/2, Laplace scale b/2, for f = ½),
      and the two noises are the same f·L, (1 − f)·L, correlated.

    In both cases the mechanism is ``privacy.scaled_noise`` of the release's (what MRF-N on
    a half must assume); thinning the noise itself adds a binomial variance ≈ f(1 − f)|L|,
    negligible once σ ≳ 2.

    Suppressed rows (``agg.suppression``) stay suppressed in both halves, with the bound
    scaled to f·k and (1 − f)·k (``suppression.split_suppression`` says why), and their d, c
    stay 0; the halves' n (the intercept) comes from the tables without a threshold.
    """
    if not 0 < fraction < 1:
        raise AggMRFError(f"fraction must be in (0, 1); got {fraction!r}.")
    lay = agg.layout
    rel = lay.released
    d = np.round(np.maximum(agg.d, 0.0))
    c = np.minimum(np.round(np.clip(agg.c, 0.0, None)), d)
    rng = np.random.default_rng(seed)
    dA = d.copy()
    cA = c.copy()
    dA[rel] = rng.binomial(d[rel].astype(np.int64), fraction)
    cA[rel] = rng.hypergeometric(
        c[rel].astype(np.int64), (d[rel] - c[rel]).astype(np.int64), dA[rel].astype(np.int64)
    )
    parts = [
        (dA.astype(np.float64), cA.astype(np.float64), fraction),
        ((d - dA).astype(np.float64), (c - cA).astype(np.float64), 1.0 - fraction),
    ]
    split_noise = fission and isinstance(agg.noise, GaussianMechanism)
    if split_noise:
        tau = agg.noise.sigma * np.sqrt(fraction * (1.0 - fraction))
        w = np.random.default_rng([seed, 1]).normal(0.0, tau, (2, int(rel.sum())))
        for (dd, cc, _), sign in zip(parts, (1.0, -1.0), strict=True):
            dd[rel] += sign * w[0]
            cc[rel] += sign * w[1]
    halves = []
    starts = lay.offsets[int(lay.intercept) : -1]
    for dd, cc, share in parts:
        box = split_suppression(agg.suppression, share)  # same rows, bound share·k
        if box is not None:  # absent rows stay absent (no fission noise on them)
            dd[box.rows] = 0.0
            cc[box.rows] = 0.0
        noise = None
        if agg.noise is not None:
            noise = scaled_noise(agg.noise, np.sqrt(share) if split_noise else share)
        if lay.intercept:
            # n from the complete tables: a table with suppressed rows misses their records
            full = [t for t in range(1, lay.n_tables) if box is None or t not in box.thresholds]
            full = np.asarray(full or range(1, lay.n_tables)) - 1
            dd[0] = float(np.add.reduceat(dd, starts)[full].mean())
            cc[0] = float(np.add.reduceat(cc, starts)[full].mean())
        n = max(1, int(round(dd[0] if lay.intercept else dd[rel].sum() / lay.n_released_tables)))
        halves.append(
            AggregatedData(lay, dd, cc, n, noise=noise, meta=dict(agg.meta), suppression=box)
        )
    return halves[0], halves[1]
