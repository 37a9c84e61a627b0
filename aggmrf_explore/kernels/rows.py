"""The one row computation: the row of a record (or Gibbs sample) in each table.

Row of codes x in table t (see :mod:`aggmrf_explore.tables`)::

    key_t(x) = Σ_j x[feat[t, j]] · stride[t, j]
    row_t(x) = offsets[t] + key_t(x)                       (exact table)
             = offsets[t] + bucket(key_t(x), salt_t, H_t)  (hashed table, H_t > 0 rows)

The tables are described by a :class:`TableArrays` named tuple (built once per layout
by :func:`table_arrays`); :func:`table_row` is the inlined per-sample form the sweeps
use, :func:`table_rows` the computation behind ``TableLayout.rows`` and the chains'
``rows``, :func:`sample_logits` φ(x_i)·θ from rows (both in numpy for small inputs, the
same numbers without a compiler, else parallel kernels).  :func:`bucket` is the numba twin of
:func:`aggmrf_explore.tables.hash_rows` (same bits; both use :func:`.rng.mix`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import GOLDEN, mix, mix64

__all__ = [
    "TableArrays",
    "table_arrays",
    "bucket",
    "bucket_of",
    "table_row",
    "table_rows",
    "table_rows_compiled",
    "sample_logits",
    "sample_logits_compiled",
    "SMALL",
]


class TableArrays(NamedTuple):
    """The tables of a layout as flat arrays (T tables, at most W features each).

    feat       : int64 (T, W) features of each table; padding columns hold ``pad``
    stride     : int64 (T, W) their strides in the table's key (0 in padding columns)
    offsets    : int64 (T,) first row of each table
    hash_sizes : int64 (T,) H_t for hashed tables, 0 for exact ones
    hash_salts : uint64 (T,) salt of each hashed table (0 for exact ones)
    """

    feat: np.ndarray
    stride: np.ndarray
    offsets: np.ndarray
    hash_sizes: np.ndarray
    hash_salts: np.ndarray


def table_arrays(
    tables: Sequence[Sequence[int]],
    strides: np.ndarray,
    offsets: np.ndarray,
    hash_sizes: np.ndarray | None = None,
    hash_salts: np.ndarray | None = None,
    width: int | None = None,
    pad: int = 0,
) -> TableArrays:
    """:class:`TableArrays` of tables (feature tuples) with strides (T, D) and offsets (≥ T,).

    ``width`` (default: the largest arity, at least 1) is W; padding columns hold feature
    ``pad`` with stride 0, so any valid column of the codes works (the dense chain pads
    with its always-zero row D).  Without hash sizes every table is exact.
    """
    T = len(tables)
    W = max(1, max((len(t) for t in tables), default=0)) if width is None else int(width)
    feat = np.full((T, W), int(pad), dtype=np.int64)
    stride = np.zeros((T, W), dtype=np.int64)
    for t, feats in enumerate(tables):
        for j, f in enumerate(feats):
            feat[t, j] = f
            stride[t, j] = strides[t, f]
    sizes = np.zeros(T, np.int64) if hash_sizes is None else np.asarray(hash_sizes, np.int64)
    salts = np.zeros(T, np.uint64) if hash_salts is None else np.asarray(hash_salts, np.uint64)
    return TableArrays(feat, stride, np.asarray(offsets[:T], dtype=np.int64), sizes, salts)


@njit(inline="always")
def bucket(key, salt, H):
    """Bucket of a non-negative int64 key: ((mix((key ^ salt) + golden) >> 32) · H) >> 32."""
    z = mix((np.uint64(key) ^ salt) + GOLDEN)
    return np.int64(((z >> np.uint64(32)) * np.uint64(H)) >> np.uint64(32))


@njit(cache=True, nogil=True)
def bucket_of(keys, salt, H):
    """:func:`bucket` over an int64 array (for tests against tables.hash_rows), int64 (n,)."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        out[i] = bucket(keys[i], salt, H)
    return out


@njit(inline="always")
def table_row(codes, i, t, feat, stride, offsets, hash_sizes, hash_salts):
    """Row of sample i (codes[i, :]) in table t, int64; the arrays are a TableArrays' fields
    (numba's parallel loops do not take tuples of arrays inside their bodies)."""
    key = np.int64(0)
    for j in range(feat.shape[1]):
        key += np.int64(codes[i, feat[t, j]]) * stride[t, j]
    if hash_sizes[t] > 0:
        key = bucket(key, hash_salts[t], hash_sizes[t])
    return offsets[t] + key


SMALL = 1 << 20  # entries (n · T) below which numpy computes the same numbers (in ms)


def table_rows(codes, tabs, out) -> None:
    """out[i, t] = row of sample i in table t of ``tabs`` (a TableArrays), for codes (n, ≥ D)
    and out (n, T) of any integer dtype.

    Below ``SMALL`` entries in numpy (the same integers, and nothing to compile: a first
    start's small data need no compiler), else :func:`table_rows_compiled`."""
    if codes.shape[0] * out.shape[1] >= SMALL:
        table_rows_compiled(codes, tabs, out)
        return
    feat, stride, offsets, hash_sizes, hash_salts = tabs
    for t in range(offsets.shape[0]):
        key = np.zeros(codes.shape[0], dtype=np.int64)
        for j in range(feat.shape[1]):
            key += codes[:, feat[t, j]].astype(np.int64) * stride[t, j]
        if hash_sizes[t] > 0:
            with np.errstate(over="ignore"):
                z = mix64((key.astype(np.uint64) ^ hash_salts[t]) + GOLDEN)
                z = ((z >> np.uint64(32)) * np.uint64(hash_sizes[t])) >> np.uint64(32)
            key = z.astype(np.int64)
        out[:, t] = offsets[t] + key


def sample_logits(rows, theta) -> np.ndarray:
    """φ(x_i)·θ for every row vector, float64 (n,); rows int (n, T).  Summed over t in
    order, as :func:`sample_logits_compiled` does (the same bits); numpy below ``SMALL``."""
    if rows.size >= SMALL:
        return sample_logits_compiled(rows, theta)
    out = np.zeros(rows.shape[0])
    for t in range(rows.shape[1]):
        out += theta[rows[:, t]]
    return out


@njit(cache=True, nogil=True, parallel=True)
def table_rows_compiled(codes, tabs, out):
    """:func:`table_rows` in parallel (numba)."""
    feat, stride, offsets, hash_sizes, hash_salts = tabs
    T = offsets.shape[0]
    for i in prange(codes.shape[0]):
        for t in range(T):
            out[i, t] = table_row(codes, i, t, feat, stride, offsets, hash_sizes, hash_salts)


@njit(cache=True, nogil=True, parallel=True)
def sample_logits_compiled(rows, theta):
    """:func:`sample_logits` in parallel (numba)."""
    n, T = rows.shape
    out = np.empty(n, dtype=np.float64)
    for i in prange(n):
        s = 0.0
        for t in range(T):
            s += theta[rows[i, t]]
        out[i] = s
    return out
