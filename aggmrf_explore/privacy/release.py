"""Noisy releases of exact aggregates: simulations, and releases handed to others.

:func:`release` is the simulation: any mechanism, reproducible for a seed (the explorer,
the notebooks, ``sweep`` and ``run --mechanism``).  :func:`publish` is what a release
given to someone else goes through (``aggregate``): a discrete mechanism only (integer
noise, no floating-point leak), drawn from the operating system's secure generator; a
seed is accepted only as ``insecure_seed`` and is then recorded as such.

:func:`composed_epsilon` adds up the privacy loss of several releases of the same records.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import AggMRFError
from ..tables import AggregatedData
from . import sampling
from .calibration import zcdp_epsilon
from .checks import delta_value
from .mechanisms import DiscreteGaussianMechanism, Mechanism, check_mechanism

__all__ = ["release", "publish", "composed_epsilon", "SIMULATION", "SECURE", "INSECURE_SEED"]

SIMULATION = "simulation"  # numpy, seeded: reproducible, not private against the seed's holder
SECURE = "secure"  # OpenDP, the OS's CSPRNG, integer noise
INSECURE_SEED = "insecure-seed"  # integer noise from a seeded numpy Generator (tests, demos)


def release(
    agg: AggregatedData, mechanism: Mechanism | None, seed: int | None = None
) -> AggregatedData:
    """Noisy release of exact aggregates: a new AggregatedData (the input is not modified).

    Every row of the released tables (``layout.released``) gets i.i.d. noise on its count
    and on its label sum.  The intercept row (row 0 when ``layout.intercept``) is derived
    by post-processing: its d (c) is the mean over released tables of the table's total
    noisy count (label sum).  ``n`` becomes that derived total, rounded (≥ 1), since the
    exact n is not released; the exact values stay in ``true_d``, ``true_c`` and
    ``meta["true_n"]``.  ``mechanism=None`` returns an exact copy.  Deterministic for a seed:
    a simulation (``meta["generator"]`` is "simulation", or "insecure-seed" for a discrete
    mechanism), never a release to hand out (:func:`publish`).
    """
    if not isinstance(agg, AggregatedData):
        raise AggMRFError(
            f"release needs an AggregatedData (from aggregate()); got {type(agg).__name__}."
        )
    if agg.is_noisy:
        raise AggMRFError(
            "this AggregatedData is already a noisy release; release the exact aggregates."
        )
    if mechanism is None:
        return replace(agg, d=agg.d.copy(), c=agg.c.copy(), meta=dict(agg.meta))
    return _noisy(agg, check_mechanism(mechanism), seed, secure=False)


def _noisy(agg: AggregatedData, mech: Mechanism, seed: int | None, secure: bool) -> AggregatedData:
    """``agg`` with ``mech``'s noise on every released count and label sum (see release)."""
    lay = agg.layout
    mask = lay.released
    if secure:
        noise = mech.sample((2, int(mask.sum())), None)
        source = SECURE
    else:
        noise = mech.sample((2, int(mask.sum())), np.random.default_rng(seed))
        source = INSECURE_SEED if mech.discrete else SIMULATION
    d = agg.d.copy()
    c = agg.c.copy()
    d[mask] += noise[0]
    c[mask] += noise[1]
    starts = lay.offsets[int(lay.intercept) : -1]
    n_tab = lay.n_released_tables
    d_tot = float(np.add.reduceat(d, starts).sum()) / n_tab
    c_tot = float(np.add.reduceat(c, starts).sum()) / n_tab
    if mech.discrete:
        d_tot, c_tot = float(round(d_tot)), float(round(c_tot))
    if lay.intercept:
        d[0] = d_tot
        c[0] = c_tot
    meta = dict(agg.meta)
    meta.update(privacy=mech.describe(), seed=seed, true_n=agg.n, generator=source)
    if secure:
        meta["generator_name"] = sampling.generator_name()
    return AggregatedData(
        lay,
        d,
        c,
        max(1, int(round(d_tot))),
        true_d=agg.d.copy(),
        true_c=agg.c.copy(),
        noise=mech,
        meta=meta,
    )


def publish(
    agg: AggregatedData, mechanism: Mechanism, *, insecure_seed: int | None = None
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
    out = _noisy(agg, mech, insecure_seed, secure=insecure_seed is None)
    out.meta.pop("seed", None)
    return out


def composed_epsilon(mechanisms: list[Mechanism], delta: float) -> float:
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
