"""What the privacy modules share: argument checks (one ``AggMRFError`` sentence each) and
the OpenDP handle."""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from ..errors import AggMRFError

__all__ = ["positive_finite", "delta_value", "choice", "generator", "opendp"]


def positive_finite(name: str, value: object) -> float:
    """``value`` as a float, if it is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    return v


def delta_value(value: object) -> float:
    """``value`` as a float, if it is a real number with 0 < δ < 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"delta must be a number with 0 < delta < 1; got {value!r}.")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise AggMRFError(f"delta must satisfy 0 < delta < 1; got {value!r}.")
    return v


def choice(name: str, value: object, valid: tuple[str, ...]) -> str:
    """``value`` lower-cased, if it is one of ``valid``."""
    v = value.lower() if isinstance(value, str) else value
    if v not in valid:
        raise AggMRFError(f"unknown {name} {value!r}; choose one of {', '.join(valid)}.")
    return v  # type: ignore[return-value]


def generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy Generator: ``rng`` itself, or one seeded with it (simulations only)."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


@functools.lru_cache(maxsize=1)
def opendp():
    """``opendp.prelude`` with its "contrib" features enabled (imported on first use)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp
