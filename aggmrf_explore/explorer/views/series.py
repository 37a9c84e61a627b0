"""Downsampling one plotted series: buckets of consecutive points → one point each, with a band.

A training history has one row per iteration, but its series are measured at different
rates (the d̂ / ĉ errors every iteration, the held-out NLLH every ``eval_every``-th), and
a plot needs no more points than it has pixels.  Each series is therefore downsampled on
its *own* measured (finite) points: taking every k-th history row and then dropping the
rows without a value would alias with the measurement period (k a multiple of 3 and NLLH
every 3rd iteration leaves nothing, or a straight line between two points), and with a
periodic series (MRF-N refreshes its targets every 3rd iteration, where the error drops
below the Monte-Carlo floor) it would draw one phase of the period as a flat line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Series", "downsample", "HOW"]

HOW = ("last", "mean")


@dataclass(frozen=True)
class Series:
    """One downsampled series, all arrays of shape (m,).

    x: the last x of each bucket (iterations); y: the bucket's last value (``how="last"``)
    or its mean (``how="mean"``); lo / hi: the bucket's smallest and largest value (the
    envelope; equal to y where a bucket holds one point).  The first point of the input
    is kept as a bucket of its own, so a curve starts where the data start.
    """

    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return int(self.x.size)

    def band(self) -> tuple[np.ndarray, np.ndarray]:
        """The envelope as one closed polygon (x, y): along hi forwards, lo backwards."""
        return np.r_[self.x, self.x[::-1]], np.r_[self.hi, self.lo[::-1]]

    @staticmethod
    def empty() -> Series:
        z = np.zeros(0)
        return Series(z, z, z, z)


def downsample(
    x, y, max_points: int = 600, how: str = "last", per_decade: int | None = None
) -> Series:
    """At most ~``max_points`` + 1 points of the finite (x, y) pairs, in buckets of k consecutive ones.

    With ``per_decade`` (for a log x axis; x ≥ 1) the buckets are instead fixed intervals
    of log10(x), ``per_decade`` of them per decade: every early iteration keeps a point of
    its own and a long run still draws a few hundred, evenly spread on the axis.

    x, y: array-likes of shape (n,) (NaN / ±inf / None in y mark "not measured" and are
    dropped first).  k = ⌈n / max_points⌉; buckets start at the first measured point, so
    a bucket's content does not change as points are appended (only the last, partial
    bucket does) and the curve does not jitter while training.  ``how``: "last" keeps the
    bucket's last value (a smooth series such as the test NLLH: the curve ends exactly at
    the current value), "mean" its mean (a noisy or periodic series, drawn with its
    min–max band: a last value would alias with the period).
    """
    if how not in HOW:
        raise ValueError(f"how must be one of {HOW}; got {how!r}.")
    if max_points < 1:
        raise ValueError(f"max_points must be ≥ 1; got {max_points}.")
    xs = np.asarray(x, dtype=float).ravel()
    ys = np.asarray(y, dtype=float).ravel()
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same shape; got {xs.shape} and {ys.shape}.")
    ok = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[ok], ys[ok]
    n = xs.size
    if n == 0:
        return Series.empty()
    if per_decade is not None:
        # (fixed edges: a bucket's content does not change as points are appended)
        bucket = np.floor(np.log10(np.maximum(xs, 1.0)) * per_decade)
        starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        if starts.size == n:
            return Series(xs, ys, ys.copy(), ys.copy())
    elif n <= max_points:
        return Series(xs, ys, ys.copy(), ys.copy())
    else:
        starts = np.arange(0, n, math.ceil(n / max_points))
    ends = np.r_[starts[1:], n]
    lo = np.minimum.reduceat(ys, starts)
    hi = np.maximum.reduceat(ys, starts)
    if how == "last":
        yy = ys[ends - 1]
    else:
        yy = np.add.reduceat(ys, starts) / (ends - starts)
    first = ys[:1]
    return Series(np.r_[xs[:1], xs[ends - 1]], np.r_[first, yy], np.r_[first, lo], np.r_[first, hi])
