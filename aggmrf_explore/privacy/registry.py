"""The mechanism registry: every privacy mechanism the house offers, by name.

One line per mechanism.  Each class describes itself (``privacy.Mechanism``): its ``label``
and ``color`` (buttons, legends, plots), the settings it ``uses`` (which controls show,
which flags are accepted: ``settings.check_combination``), ``from_settings`` (how it is
built from ε, δ, the accounting and the calibration), ``summary`` (its noise in words) and,
for a central one, ``density`` and ``discrete`` (the noise histogram's curve and bins).
The settings' ``mechanism`` choices, the command line's ``--mechanism``, the explorer's
buttons, the URL decoder and the release reader all read this table
(``privacy.make_mechanism`` builds from it).

To add a mechanism: write its class (a central one subclasses ``mechanisms.LaplaceFamily``
or ``GaussFamily`` and, for integer noise, ``IntegerNoise``), import it here and add its
line to :data:`REGISTRY`.
"""

from __future__ import annotations

from typing import ClassVar

from ..errors import AggMRFError
from .local import RandomizedResponse
from .mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)

__all__ = [
    "NoMechanism",
    "REGISTRY",
    "mechanism_class",
    "users_of",
    "central_names",
    "release_names",
    "release_name",
]


class NoMechanism:
    """No noise: the learner sees the exact tables.  The "none" entry of every menu; it
    builds nothing (the data of an exact release carry ``noise=None``)."""

    name: ClassVar[str] = "none"
    privacy: ClassVar[str] = "none"
    discrete: ClassVar[bool] = False
    label: ClassVar[str] = "none"
    color: ClassVar[str] = "#7f7f7f"
    uses: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_settings(
        cls, epsilon=None, layout=None, delta=None, accounting=None, calibration=None
    ):
        """None: no mechanism (the factory refuses any noise setting given with it)."""
        return None

    @staticmethod
    def summary(names: list[str] | None = None) -> list[str]:
        return ["No noise: the learner sees the exact tables."]


REGISTRY: dict[str, type] = {
    "none": NoMechanism,
    "laplace": LaplaceMechanism,
    "gaussian": GaussianMechanism,
    "discrete_laplace": DiscreteLaplaceMechanism,
    "discrete_gaussian": DiscreteGaussianMechanism,
    "local": RandomizedResponse,
}


def mechanism_class(name: str) -> type:
    """The class registered as ``name`` (any case, "-" for "_"), or an error listing the
    registered names."""
    key = name.strip().lower().replace("-", "_") if isinstance(name, str) else name
    if key not in REGISTRY:
        raise AggMRFError(f"mechanism must be one of {', '.join(REGISTRY)}; got {name!r:.60}.")
    return REGISTRY[key]


def users_of(setting_name: str) -> tuple[str, ...]:
    """The registered mechanisms that use ``setting_name``, e.g. users_of("delta") →
    ("gaussian", "discrete_gaussian")."""
    return tuple(n for n, c in REGISTRY.items() if setting_name in c.uses)


def central_names(discrete: bool | None = None) -> tuple[str, ...]:
    """ "none" and the central mechanisms' names (``discrete``: only the integer ones, or
    only the float ones; None: both): what a release file may declare."""
    keep = [
        n
        for n, c in REGISTRY.items()
        if c.privacy == "central" and (discrete is None or c.discrete == discrete)
    ]
    return ("none", *keep)


def release_names() -> tuple[str, ...]:
    """The names ``aggregate --mechanism`` takes: "none" and, for each integer-noise
    mechanism, the name of its continuous ``twin`` (a release for others gets integer
    noise: "laplace" means discrete Laplace), or its own name when it has none."""
    discrete = [c for c in REGISTRY.values() if c.privacy == "central" and c.discrete]
    return ("none", *(getattr(c, "twin", c.name) for c in discrete))


def release_name(name: str) -> str:
    """The registered mechanism a name of :func:`release_names` stands for."""
    for c in REGISTRY.values():
        if c.privacy == "central" and c.discrete and getattr(c, "twin", c.name) == name:
            return c.name
    return name
