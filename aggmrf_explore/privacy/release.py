"""Noisy releases of exact aggregates: simulations, and releases handed to others.

:func:`release` is the simulation: any mechanism, central or local, reproducible for a seed
(the explorer, the notebooks, ``sweep`` and ``run --mechanism``).  :func:`publish` is what a release
given to someone else goes through (``aggregate``): a discrete mechanism only (integer
noise, no floating-point leak), drawn from the operating system's secure generator; a
seed is accepted only as ``insecure_seed`` and is then recorded as such.

:func:`composed_epsilon` adds up the privacy loss of several releases of the same records.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import AggMRFError
from ..tables import AggregatedData
from .additive import INSECURE_SEED, SECURE, SIMULATION, add_noise, check_exact
from .calibration import discrete_gaussian_epsilon, zcdp_epsilon
from .checks import delta_value
from .mechanisms import (
    DiscreteGaussianMechanism,
    Mechanism,
    NoiseMechanism,
    Records,
    check_mechanism,
)

__all__ = [
    "release",
    "publish",
    "composed_epsilon",
    "release_guarantee",
    "SIMULATION",
    "SECURE",
    "INSECURE_SEED",
]


def release(
    agg: AggregatedData,
    mechanism: Mechanism | None,
    seed: int | None = None,
    *,
    records: Records | None = None,
) -> AggregatedData:
    """The tables training sees under ``mechanism``: one call for every mechanism, central or
    local.  A new AggregatedData (the input is not modified); a simulation, deterministic for
    a seed, never a release to hand out (:func:`publish`).

    ``agg``: the exact aggregates;  ``records``: the records they aggregate, (X (n, D) int
    codes, y (n,) labels in {0, 1}), needed by a local mechanism (randomized response
    randomizes each record), unused by a central one;  ``mechanism=None``: an exact copy.
    The release is ``mechanism.release(agg, records, seed)``: for a central mechanism i.i.d.
    noise on every released count and label sum (:func:`.additive.add_noise`:
    ``meta["generator"]`` is "simulation", or "insecure-seed" for a discrete mechanism), for
    the local one the channel-inverted tables of the randomized records.
    """
    agg = check_exact(agg)
    if mechanism is None:
        return replace(agg, d=agg.d.copy(), c=agg.c.copy(), meta=dict(agg.meta))
    if not isinstance(mechanism, Mechanism):
        raise AggMRFError(f"expected a privacy mechanism (see make_mechanism); got {mechanism!r}.")
    return mechanism.release(agg, records, seed)


def publish(
    agg: AggregatedData, mechanism: NoiseMechanism, *, insecure_seed: int | None = None
) -> AggregatedData:
    """A release for someone else: integer noise from a discrete mechanism.

    ``mechanism`` must be discrete (``discrete_gaussian`` or ``discrete_laplace``).  The
    noise comes from OpenDP's exact samplers and the OS's secure generator; no argument
    influences it.  ``insecure_seed`` (tests, classroom demonstrations) draws it from a
    seeded numpy Generator instead: whoever knows the seed recovers every count, and the
    release says so (``meta["generator"] == "insecure-seed"``; the seed itself is not kept).
    Released counts and label sums are integers; the intercept row, derived from them by
    post-processing, is rounded.
    """
    mech = check_mechanism(mechanism)
    if not mech.discrete:
        raise AggMRFError(
            f"a release for others needs integer noise; {mech.name!r} adds floats, whose low "
            f"bits leak the counts — use discrete_{mech.name}."
        )
    out = add_noise(agg, mech, insecure_seed, secure=insecure_seed is None)
    out.meta.pop("seed", None)
    return out


def composed_epsilon(mechanisms: list[NoiseMechanism], delta: float) -> float:
    """The total ε of releasing the same records once per mechanism, at total δ.

    Pure ε-DP mechanisms are ε²/2-zCDP; Gaussian ones ρ = Δ2²/(2σ²)-zCDP; ρ adds up over
    releases and is converted at ``delta`` (OpenDP).  With only pure ε-DP mechanisms the
    plain sum Σε (δ = 0) is returned when it is smaller.
    """
    if not mechanisms:
        raise AggMRFError("composed_epsilon needs at least one mechanism.")
    dl = delta_value(delta)
    rho = 0.0
    pure = True
    for m in mechanisms:
        m = check_mechanism(m)
        if not getattr(m, "budget_known", True):
            raise AggMRFError(
                "a release that declares only its noise level (no ε, δ and sensitivity) "
                "cannot be added up — declare its epsilon and sensitivity."
            )
        if m.delta == 0.0:
            rho += m.epsilon**2 / 2.0
        else:
            pure = False
            sigma = m.sigma if isinstance(m, DiscreteGaussianMechanism) else m.std
            rho += m.l2_sensitivity**2 / (2.0 * sigma**2)
    eps = zcdp_epsilon(rho, dl)
    if pure:
        eps = min(eps, float(sum(m.epsilon for m in mechanisms)))
    return eps


def release_guarantee(mechanism: NoiseMechanism, accounting: str) -> tuple[float, float]:
    """(ε, δ) that a release of counts *and* label sums with ``mechanism``'s noise satisfies.

    "both" and "replace": the mechanism's own (ε, δ), calibrated for both columns (under
    add/remove-one and replace-one neighbours).  "queries" calibrated for one column per
    table (Δ1 = T, Δ2 = √T), but both columns are released: one record moves 2T entries,
    so the true guarantee under add/remove-one is ε × 2 for the Laplace mechanisms, and for
    the Gaussian ones the ε at the same δ of ρ × 2 (zCDP, Δ2 = √(2T); a valid bound for the
    continuous Gaussian too).
    """
    mech = check_mechanism(mechanism)
    if accounting != "queries":
        return float(mech.epsilon), float(mech.delta)
    if mech.delta == 0.0:  # Laplace: ε = Δ1 / b, Δ1 doubles
        return 2.0 * float(mech.epsilon), 0.0
    sigma = mech.sigma if isinstance(mech, DiscreteGaussianMechanism) else mech.std
    l2 = math.sqrt(2.0) * mech.l2_sensitivity
    return float(discrete_gaussian_epsilon(sigma, mech.delta, l2)), float(mech.delta)
