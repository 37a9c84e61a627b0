"""Central noise: i.i.d. draws added to every released count and label sum of exact tables.

:func:`add_noise` is the one place a central mechanism's noise meets the tables, for the
seeded simulations (every central mechanism's ``release``) and for the releases handed to
others (``release.publish``).  ``meta["generator"]`` says where the noise came from:
:data:`SIMULATION`, :data:`INSECURE_SEED` or :data:`SECURE`.
"""

from __future__ import annotations

import numpy as np

from ..errors import AggMRFError
from ..tables import AggregatedData
from . import sampling

__all__ = ["add_noise", "check_exact", "SIMULATION", "SECURE", "INSECURE_SEED"]

SIMULATION = "simulation"  # numpy, seeded: reproducible, not private against the seed's holder
SECURE = "secure"  # OpenDP, the OS's CSPRNG, integer noise
INSECURE_SEED = "insecure-seed"  # integer noise from a seeded numpy Generator (tests, demos)


def check_exact(agg: object) -> AggregatedData:
    """``agg`` if it is an AggregatedData of exact (not yet noisy) aggregates, else an error."""
    if not isinstance(agg, AggregatedData):
        raise AggMRFError(
            f"release needs an AggregatedData (from aggregate()); got {type(agg).__name__}."
        )
    if agg.is_noisy:
        raise AggMRFError(
            "this AggregatedData is already a noisy release; release the exact aggregates."
        )
    return agg


def add_noise(agg: AggregatedData, mech, seed: int | None, *, secure: bool) -> AggregatedData:
    """``agg`` with ``mech``'s noise on every released count and label sum: a new
    AggregatedData (``agg`` is not modified).

    ``mech``: a central mechanism (``sample``, ``describe``, ``discrete``).  The noise, shape
    (2, released rows) in counts, comes from OpenDP and the operating system's secure
    generator when ``secure`` (``seed`` unused), else from ``np.random.default_rng(seed)``.
    The intercept row (row 0 when ``layout.intercept``) is derived by post-processing: its d
    (c) is the mean over released tables of the table's total noisy count (label sum),
    rounded for a discrete mechanism.  ``n`` becomes that derived total, rounded (≥ 1), since
    the exact n is not released; the exact values stay in ``true_d``, ``true_c`` and
    ``meta["true_n"]``.
    """
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
