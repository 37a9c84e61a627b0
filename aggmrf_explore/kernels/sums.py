"""numpy's sums, bit for bit, in one parallel pass: the trainer's per-iteration errors and norm.

``np.sum`` of a contiguous float64 array adds in a fixed pairwise order (numpy's
``pairwise_sum``: eight running sums over blocks of at most 128 items, halves split at a
multiple of 8 above that).  :func:`pairwise` follows that order exactly, so a sum computed
here has numpy's bits, while it reads its terms where they are (no temporaries) and adds
several sums in the same pass.  Large sums split their top two levels of halves over the
threads: the same tree, so the same bits on any number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: terms from which the sums run compiled and split over the threads (fewer: numpy's own
#: sums, the same bits in under a millisecond, and nothing to compile: their first compile
#: takes seconds, which a first start on the explorer's tables must not wait for)
SMALL = 1 << 18


@njit(cache=True, nogil=True, inline="always")
def _terms(est, tgt, rows, first, j):
    """|est − tgt| and |tgt| at position j's row: rows[j] (first + j when rows is empty)."""
    r = rows[j] if rows.shape[0] > 0 else first + j
    t = tgt[r]
    return abs(est[r] - t), abs(t)


@njit(cache=True, nogil=True, inline="always")
def _tree8(r):
    """numpy's combination of its eight running sums r[0..7]."""
    return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))


@njit(cache=True, nogil=True)
def pairwise_l1(est, tgt, rows, first, lo, n, r):
    """numpy's pairwise sums of |est − tgt| and |tgt| over positions lo … lo+n−1 of the rows
    (:func:`_terms`): each with ``np.sum``'s bits on the gathered terms.  r: float64 (2, 8)
    scratch (the eight running sums of each)."""
    if n < 8:
        a = b = 0.0
        for i in range(lo, lo + n):
            u, v = _terms(est, tgt, rows, first, i)
            a += u
            b += v
        return a, b
    if n <= 128:
        for k in range(8):
            r[0, k], r[1, k] = _terms(est, tgt, rows, first, lo + k)
        m = lo + n - n % 8
        for i in range(lo + 8, m, 8):
            for k in range(8):
                u, v = _terms(est, tgt, rows, first, i + k)
                r[0, k] += u
                r[1, k] += v
        a = _tree8(r[0])
        b = _tree8(r[1])
        for i in range(m, lo + n):
            u, v = _terms(est, tgt, rows, first, i)
            a += u
            b += v
        return a, b
    h = _half(n)
    x = pairwise_l1(est, tgt, rows, first, lo, h, r)
    y = pairwise_l1(est, tgt, rows, first, lo + h, n - h, r)
    return x[0] + y[0], x[1] + y[1]


@njit(cache=True, nogil=True)
def pairwise_squares(x, lo, n, r):
    """numpy's pairwise sum of x[lo:lo+n]²: ``np.sum(x[lo:lo+n] ** 2)``'s bits.  r: float64
    (8,) scratch."""
    if n < 8:
        s = 0.0
        for i in range(lo, lo + n):
            s += x[i] * x[i]
        return s
    if n <= 128:
        for k in range(8):
            r[k] = x[lo + k] * x[lo + k]
        m = n - n % 8
        for i in range(lo + 8, lo + m, 8):
            for k in range(8):
                r[k] += x[i + k] * x[i + k]
        s = _tree8(r)
        for i in range(lo + m, lo + n):
            s += x[i] * x[i]
        return s
    h = _half(n)
    return pairwise_squares(x, lo, h, r) + pairwise_squares(x, lo + h, n - h, r)


@njit(cache=True, nogil=True, inline="always")
def _half(n):
    """Where numpy's pairwise sum splits n > 128 terms."""
    h = n // 2
    return h - h % 8


@njit(cache=True, nogil=True, inline="always")
def _quarters(n):
    """The four leaves of the top two levels of numpy's tree for n > 4·128 terms: starts
    and lengths (int64 (4,) each)."""
    h = _half(n)
    a = _half(h)
    b = _half(n - h)
    return np.array([0, a, h, h + b]), np.array([a, h - a, b, n - h - b])


@njit(cache=True, nogil=True, parallel=True)
def _l1_parallel(est, tgt, rows, first, n):
    starts, lengths = _quarters(n)
    parts = np.empty((4, 2))
    for q in prange(4):
        r = np.empty((2, 8))
        parts[q, 0], parts[q, 1] = pairwise_l1(est, tgt, rows, first, starts[q], lengths[q], r)
    a = (parts[0, 0] + parts[1, 0]) + (parts[2, 0] + parts[3, 0])
    b = (parts[0, 1] + parts[1, 1]) + (parts[2, 1] + parts[3, 1])
    return a, b


@njit(cache=True, nogil=True, parallel=True)
def _squares_parallel(x, lo, n):
    starts, lengths = _quarters(n)
    parts = np.empty(4)
    for q in prange(4):
        parts[q] = pairwise_squares(x, lo + starts[q], lengths[q], np.empty(8))
    return (parts[0] + parts[1]) + (parts[2] + parts[3])


def l1_sums(est_d, tgt_d, est_c, tgt_c, rows) -> tuple[float, float, float, float]:
    """(Σ|d̂ − d|, Σ|d|, Σ|ĉ − c|, Σ|c|) over ``rows``, each with the bits of numpy's
    ``np.sum`` of the gathered terms (e.g. ``np.abs(d̂[rows] − d[rows]).sum()``), in one
    pass without temporaries.  est_*, tgt_*: float64 (K,); rows: int64, increasing
    (``np.flatnonzero`` of a mask; a range of rows is read without the index)."""
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (est_d, tgt_d, est_c, tgt_c)]
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    n = rows.shape[0]
    first = int(rows[0]) if n else 0
    if n and rows[-1] - first == n - 1:  # increasing: a range, position j is row first + j
        rows = rows[:0]
    if n < SMALL:  # numpy's own sums: nothing to compile (a first start)
        full = rows if rows.shape[0] else np.arange(first, first + n)
        e_d, t_d, e_c, t_c = (a[full] for a in arrays)
        with np.errstate(all="ignore"):
            return tuple(
                float(v)
                for v in (np.abs(e_d - t_d).sum(), np.abs(t_d).sum(),
                          np.abs(e_c - t_c).sum(), np.abs(t_c).sum())
            )  # fmt: skip
    nd, dd = _l1_parallel(arrays[0], arrays[1], rows, first, n)
    nc, dc = _l1_parallel(arrays[2], arrays[3], rows, first, n)
    return float(nd), float(dd), float(nc), float(dc)


def relative_l1_pair(est_d, tgt_d, est_c, tgt_c, rows) -> tuple[float, float]:
    """(‖d̂ − d‖₁/‖d‖₁, ‖ĉ − c‖₁/‖c‖₁) over ``rows`` with :func:`.metrics.relative_l1`'s bits
    and conventions (0/0 = 0, x/0 = inf), from :func:`l1_sums`."""
    nd, dd, nc, dc = l1_sums(est_d, tgt_d, est_c, tgt_c, rows)
    return _ratio(nd, dd), _ratio(nc, dc)


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    return num / den


def squares_sum(x, start: int = 0) -> float:
    """``np.sum(x[start:] ** 2)``'s bits (float64 (K,) x), without the squares' array."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0] - int(start)
    if n < SMALL:  # numpy: nothing to compile
        return float(np.sum(x[int(start) :] ** 2))
    return float(_squares_parallel(x, int(start), n))
