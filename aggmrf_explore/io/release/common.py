"""What reading and writing share: column names, limits, the noise block and the
:class:`Release` that :func:`read_release` returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import privacy
from ...encoding import Schema
from ...errors import AggMRFError
from ...tables import AggregatedData, TableLayout

COUNT = "count"
LABEL_SUM = "label_sum"
TABLE = "table"
MAX_LISTED = 8
MAX_CELL = 1e15  # |count|, |label_sum| of a table row (more is not a count of records)


class ReleaseWarning(UserWarning):
    """A release is readable but something in it looks wrong (the message says what and where)."""


# ====================================================================== noise metadata
def noise_meta(
    mechanism: privacy.Mechanism | None,
    accounting: str | None = None,
    generator: str | None = None,
) -> dict | None:
    """The ``noise`` object of release.json for a privacy mechanism (None: no noise).

    The mechanism's ``to_dict()``, plus ``accounting`` ("both" / "queries" / "replace")
    and the ``neighbouring`` relation it protects when given, and ``generator``: where the
    noise came from ("secure", "insecure-seed" or "simulation", see
    :mod:`aggmrf_explore.privacy.release`).  Never a seed or a generator's state.
    """
    if mechanism is None:
        return None
    out = mechanism.to_dict()
    if accounting is not None:
        out["accounting"] = accounting
        out["neighbouring"] = privacy.NEIGHBOURS.get(accounting, accounting)
    if generator is not None:
        out["generator"] = generator
    return out


def mechanism_from_meta(
    meta: dict | None, layout: TableLayout | None = None
) -> privacy.Mechanism | None:
    """Rebuild the mechanism object from release.json's ``noise`` (None → no noise).

    Accepted (see ``LaplaceMechanism.from_dict`` / ``GaussianMechanism.from_dict``): the
    full description written by :func:`write_release` (ε, δ, sensitivity, calibration),
    ε/δ/accounting (sensitivity from the layout), or just a noise level
    (``{"mechanism": "gaussian", "sigma": 30}`` or ``{"mechanism": "laplace", "scale": 20}``).
    """
    if meta is None or meta == {}:
        return None
    if not isinstance(meta, dict):
        raise AggMRFError("release.json 'noise' must be an object (or null).")
    kind = str(meta.get("mechanism", "none")).lower()
    if kind not in privacy.central_names():
        raise AggMRFError(
            f"release.json 'noise': unknown mechanism {meta.get('mechanism')!r}; "
            f"use one of {', '.join(privacy.central_names())}."
        )
    try:
        return privacy.mechanism_from_dict({**meta, "mechanism": kind}, layout)
    except AggMRFError as e:
        raise AggMRFError(f"release.json 'noise' is invalid: {e}") from None


# ====================================================================== release object
@dataclass
class Release:
    """What :func:`read_release` returns: the aggregates, the schema and what looked wrong."""

    data: AggregatedData
    schema: Schema
    warnings: list[str] = field(default_factory=list)
    source: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def layout(self) -> TableLayout:
        return self.data.layout


@dataclass
class RawTable:
    """One table as read from its file, before it is checked against the schema."""

    name: str
    features: list[str]
    frame: pd.DataFrame  # feature columns (str), count, label_sum (float)
    lines: np.ndarray  # file line of each row
    where: str  # file name, for messages
