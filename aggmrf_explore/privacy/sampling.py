"""Integer noise: the exact probability mass functions and two ways to draw from them.

* :func:`secure_integer_noise` draws for releases handed to others: OpenDP's exact samplers
  of the discrete Gaussian and the discrete Laplace (Canonne, Kamath & Steinke 2020,
  rational arithmetic, no floating point), fed by the operating system's cryptographically
  secure generator.  Nothing the caller passes (no seed) influences the draw.
* :func:`seeded_discrete_laplace` and :func:`seeded_discrete_gaussian` draw the same
  distributions from a numpy Generator, reproducibly for a seed: for simulations and
  classroom demonstrations only (PCG64 is not a cryptographic generator, so whoever knows
  or guesses the seed recomputes the noise).  The discrete Laplace is the difference of
  two geometric variables; the discrete Gaussian is Algorithm 3 of Canonne, Kamath &
  Steinke (rejection from a discrete Laplace of scale ⌊σ⌋ + 1), with the acceptance test in
  floating point.

Both are tested against :func:`discrete_laplace_pmf` and :func:`discrete_gaussian_pmf`.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import AggMRFError
from .checks import opendp, positive_finite

__all__ = [
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "secure_integer_noise",
    "seeded_discrete_laplace",
    "seeded_discrete_gaussian",
    "generator_name",
]

_MAX_DRAWS = 10**9  # one call's number of draws (the release vector of 5·10⁸ table rows)


def discrete_laplace_pmf(x: np.ndarray, scale: float) -> np.ndarray:
    """P(X = x) = tanh(1/(2t))·exp(−|x|/t) of the discrete Laplace with scale t, x integers."""
    t = positive_finite("scale", scale)
    x = np.abs(np.asarray(x, dtype=np.float64))
    return math.tanh(0.5 / t) * np.exp(-x / t)


def discrete_gaussian_pmf(x: np.ndarray, sigma: float) -> np.ndarray:
    """P(X = x) = exp(−x²/(2σ²)) / Σ_y exp(−y²/(2σ²)) of N_Z(0, σ²), x integers.

    The normalising sum runs over |y| ≤ 40σ + 40 (the rest is below 10⁻³⁰⁰ of it).
    """
    s = positive_finite("sigma", sigma)
    half = int(40 * s) + 40
    y = np.arange(-half, half + 1, dtype=np.float64)
    norm = float(np.exp(-(y * y) / (2.0 * s * s)).sum())
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-(x * x) / (2.0 * s * s)) / norm


def generator_name() -> str:
    """What draws secure noise, for release.json (a library and its version, no state)."""
    from importlib.metadata import version

    return f"opendp {version('opendp')} (operating system CSPRNG, exact integer sampler)"


def secure_integer_noise(kind: str, scale: float, size: int) -> np.ndarray:
    """``size`` i.i.d. integer draws (int64) from the OS's secure generator, via OpenDP.

    kind : "discrete_gaussian" (σ = ``scale``) or "discrete_laplace" (t = ``scale``).
    """
    scale = positive_finite("scale", scale)
    size = int(size)
    if not 0 <= size <= _MAX_DRAWS:
        raise AggMRFError(f"secure noise: {size} draws is out of range (0 … {_MAX_DRAWS}).")
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    dp = opendp()
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    if kind == "discrete_gaussian":
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=scale)
    elif kind == "discrete_laplace":
        meas = dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=scale)
    else:
        raise AggMRFError(f"no secure sampler for {kind!r}; use a discrete mechanism.")
    return np.asarray(meas([0] * size), dtype=np.int64)


def seeded_discrete_laplace(
    scale: float, size: int | tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Discrete Laplace draws (int64) from a seeded Generator: G₁ − G₂, G ~ Geometric(1 − e^(−1/t)).

    A simulation's noise: reproducible, hence not private.
    """
    t = positive_finite("scale", scale)
    p = -math.expm1(-1.0 / t)
    return rng.geometric(p, size).astype(np.int64) - rng.geometric(p, size).astype(np.int64)


def seeded_discrete_gaussian(
    sigma: float, size: int | tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """N_Z(0, σ²) draws (int64) from a seeded Generator (CKS Algorithm 3, vectorised).

    Propose Y from the discrete Laplace of scale t = ⌊σ⌋ + 1; accept with probability
    exp(−(|Y| − σ²/t)²/(2σ²)); redraw the rejected.  A simulation's noise, not private.
    """
    s = positive_finite("sigma", sigma)
    t = math.floor(s) + 1.0
    out = np.empty(int(np.prod(size)), dtype=np.int64)
    todo = np.arange(out.size)
    while todo.size:
        y = seeded_discrete_laplace(t, todo.size, rng)
        gap = np.abs(y) - s * s / t
        keep = rng.random(todo.size) < np.exp(-(gap * gap) / (2.0 * s * s))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out.reshape(size)
