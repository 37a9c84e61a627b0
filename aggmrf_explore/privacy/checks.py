"""What the privacy modules share: argument checks (one ``AggMRFError`` sentence each) and
the OpenDP handle."""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from ..errors import AggMRFError

__all__ = [
    "EPSILON_RANGE",
    "DELTA_RANGE",
    "positive_finite",
    "epsilon_value",
    "delta_value",
    "choice",
    "generator",
    "opendp",
]

# The domains of ε and δ, declared once (``settings.py`` declares its ε and δ with them):
# ε from 1e-9 to 1e4 (beyond, the noise is either far above any count or below a
# float's resolution of one), δ from 1e-50 up to, not including, 1.
EPSILON_RANGE = (1e-9, 1e4)
DELTA_RANGE = (1e-50, 1.0)


def positive_finite(name: str, value: object) -> float:
    """``value`` as a float, if it is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    return v


def epsilon_value(value: object) -> float:
    """``value`` as a float, if it is a real number in :data:`EPSILON_RANGE`."""
    lo, hi = EPSILON_RANGE
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"epsilon must be a number ≥ {lo:g} and ≤ {hi:g}; got {value!r}.")
    v = float(value)
    if not (lo <= v <= hi):
        raise AggMRFError(f"epsilon must be ≥ {lo:g} and ≤ {hi:g}; got {value!r}.")
    return v


def delta_value(value: object) -> float:
    """``value`` as a float, if it is a real number in :data:`DELTA_RANGE` (1 excluded)."""
    lo, hi = DELTA_RANGE
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"delta must be a number with 0 < delta < 1; got {value!r}.")
    v = float(value)
    if not (lo <= v < hi):
        raise AggMRFError(f"delta must satisfy {lo:g} ≤ delta < 1; got {value!r}.")
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
