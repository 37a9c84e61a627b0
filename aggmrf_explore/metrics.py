"""Metrics: the paper's normalised log-likelihood (NLLH) and friends."""

from __future__ import annotations

import numpy as np

from .errors import AggMRFError

__all__ = ["nllh", "log_loss", "relative_l1"]

_EPS = 1e-12


def _check(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64).ravel()
    p = np.asarray(p, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 2:
        p = p[:, 1]
    p = p.ravel()
    if y.shape != p.shape:
        raise AggMRFError(f"labels and predictions differ in length: {y.shape[0]} vs {p.shape[0]}.")
    if y.size == 0:
        raise AggMRFError("no records to evaluate on.")
    if not np.all((y == 0) | (y == 1)):
        raise AggMRFError("labels must be 0 or 1.")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise AggMRFError("predictions must be finite probabilities in [0, 1].")
    return y, p


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    """Mean negative log-likelihood (nats) of labels y under P(Y=1) = p, both shape (n,)."""
    y, p = _check(y, p)
    p = np.clip(p, _EPS, 1 - _EPS)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def nllh(y: np.ndarray, p: np.ndarray) -> float:
    """Normalised log-likelihood: 1 − logloss(p) / logloss(base rate of y).

    0 for the constant base-rate model, 1 for perfect predictions; higher is better.
    The base rate is the mean of the evaluated labels (the paper's Entropy(Y)).
    """
    y, p = _check(y, p)
    rate = y.mean()
    if rate in (0.0, 1.0):
        raise AggMRFError("NLLH needs both classes among the evaluated labels.")
    entropy = -(rate * np.log(rate) + (1 - rate) * np.log1p(-rate))
    return float(1.0 - log_loss(y, p) / entropy)


def relative_l1(estimate: np.ndarray, target: np.ndarray) -> float:
    """‖estimate − target‖₁ / ‖target‖₁ (0 when both are zero)."""
    estimate = np.asarray(estimate, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    denom = np.abs(target).sum()
    num = np.abs(estimate - target).sum()
    if denom == 0:
        return 0.0 if num == 0 else float("inf")
    return float(num / denom)
