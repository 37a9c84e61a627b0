"""``make_mechanism``: a registered mechanism built from the settings, checked once.

The settings are checked against their one declaration (``settings.py``) and the rules
between them (``settings.check_combination``) here, for every caller: the command line,
the explorer, the lessons and the API refuse the same combinations with the same words.
"""

from __future__ import annotations

from ..errors import AggMRFError
from ..tables import TableLayout
from .mechanisms import Mechanism, NoiseMechanism
from .registry import REGISTRY, central_names

__all__ = ["make_mechanism", "mechanism_from_dict"]


def make_mechanism(
    name: str,
    epsilon: float | None = None,
    delta: float | None = None,
    layout: TableLayout | int | None = None,
    accounting: str | None = None,
    calibration: str | None = None,
) -> Mechanism | None:
    """The mechanism registered as ``name`` at these settings: "none" → None (no noise);
    a central one for ``layout``'s released tables (or T), its sensitivity from
    ``sensitivity(layout, accounting)``; "local": randomized response on each record at ε
    per person, split equally over the fields (``layout`` a TableLayout;
    ``privacy.local.make_local_mechanism`` gives the other splits).

    A setting the mechanism does not use (δ for Laplace, the calibration for any but the
    continuous Gaussian) must be None (a ``settings.SettingError`` naming it otherwise); one
    it uses but not given takes its declared default (δ = 1e-7, accounting "both",
    calibration "analytic"); ε must be given."""
    from ..settings import SettingError, check_combination, setting

    name = setting("mechanism").check(name)
    cls = REGISTRY[name]
    given = {"epsilon": epsilon, "delta": delta, "accounting": accounting}
    given["calibration"] = calibration
    checked = {k: (None if v is None else setting(k).check(v)) for k, v in given.items()}
    check_combination({"mechanism": name, **checked})
    for k in cls.uses:  # a setting it uses, not given: its declared default
        if k != "epsilon" and checked.get(k) is None:
            checked[k] = setting(k).default
    if cls.uses and layout is None:
        raise SettingError("layout", f"mechanism {name!r} needs the layout (or T).")
    return cls.from_settings(layout=layout, **checked)


def mechanism_from_dict(d: dict, layout: TableLayout | int | None = None) -> NoiseMechanism | None:
    """The central mechanism a ``noise`` object describes (``{"mechanism": "none"}`` → None)."""
    kind = str(d.get("mechanism", "none")).strip().lower().replace("-", "_")
    if kind not in central_names():
        raise AggMRFError(
            f"noise mechanism {kind!r} is not one a release can declare; "
            f"use one of {', '.join(central_names())}."
        )
    return None if kind == "none" else REGISTRY[kind].from_dict(d, layout)
