"""Seeded train / test splits shared by the loaders (Bank and user CSV files)."""

from __future__ import annotations

import numpy as np

from ..errors import AggMRFError

__all__ = ["check_fraction", "stratified_split"]


def check_fraction(test_fraction: object) -> float:
    """``test_fraction`` as a float strictly between 0 and 1, else AggMRFError."""
    try:
        f = float(test_fraction)
    except (TypeError, ValueError):
        f = float("nan")
    if not 0.0 < f < 1.0:
        raise AggMRFError(
            f"test_fraction must be strictly between 0 and 1 (e.g. 0.3); got {test_fraction!r}."
        )
    return f


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split of labels ``y`` (n,): (train_idx, test_idx), sorted int64.

    Each class is split in the same ratio; the test size is round(test_fraction · n),
    clipped to 1 .. n - 1, allocated to the classes by largest remainder.
    """
    rng = np.random.default_rng(seed)
    n = len(y)
    n_test_total = int(round(test_fraction * n))
    n_test_total = min(max(n_test_total, 1), n - 1)
    test_parts = []
    classes, counts = np.unique(y, return_counts=True)
    # largest-remainder allocation so the total test size is exact
    raw = counts * n_test_total / n
    alloc = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - alloc), kind="stable")[: n_test_total - alloc.sum()]:
        alloc[i] += 1
    for cls, k in zip(classes, alloc, strict=True):
        idx = np.flatnonzero(y == cls)
        test_parts.append(rng.permutation(idx)[:k])
    test_idx = np.sort(np.concatenate(test_parts))
    mask = np.ones(n, dtype=bool)
    mask[test_idx] = False
    return np.flatnonzero(mask), test_idx
