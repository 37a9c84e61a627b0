"""The store's params made from the settings' one declaration (:mod:`aggmrf_explore.settings`).

``param_for("epsilon", softbounds=(0.01, 100))`` is a ``param.Number`` with the setting's
bounds, label, help and default; a surface may add a soft range (what a slider shows) but
never its own bounds or choices.  :data:`SETTING_OF` maps each store param so made to the
setting it declares (the three seeds share one).
"""

from __future__ import annotations

import param

from ..settings import Setting, setting

__all__ = ["param_for", "SETTING_OF", "declaration"]

SETTING_OF = {
    "n_gibbs": "n_gibbs",
    "lambda_mu": "lambda_mu",
    "lambda_theta": "lambda_theta",
    "step_mu": "step_mu",
    "step_theta": "step_theta",
    "gradient": "gradient",
    "precondition": "precondition",
    "noise_aware": "noise_aware",
    "mechanism": "mechanism",
    "epsilon": "epsilon",
    "delta": "delta",
    "accounting": "accounting",
    "calibration": "calibration",
    "data_seed": "seed",
    "noise_seed": "seed",
    "train_seed": "seed",
}


def declaration(store_name: str) -> Setting | None:
    """The setting a store param declares (None for the store's own params)."""
    name = SETTING_OF.get(store_name)
    return None if name is None else setting(name)


def param_for(name: str, default=None, **extra) -> param.Parameter:
    """A param for setting ``name``: bounds or choices, label, doc and default from its
    declaration (``default``: only for a setting whose declared default is a rule, "rule: …",
    the rule's value on the first screen); ``extra`` (``softbounds``, ``doc``, …) adds to or
    overrides the label and doc only."""
    decl = setting(name)
    if default is None:
        default = decl.default
        if isinstance(default, str) and default.startswith("rule:"):
            raise ValueError(f"{name}'s default is a rule ({default}): give its first value.")
    kw = {"default": default, "label": decl.label, "doc": decl.help, **extra}
    if decl.kind == "choice":
        return param.Selector(objects=list(decl.choices), **kw)
    if decl.kind == "bool":
        return param.Boolean(**kw)
    if decl.kind == "int":
        return param.Integer(bounds=(int(decl.lo), int(decl.hi)), **kw)
    return param.Number(
        bounds=(decl.lo, decl.hi), inclusive_bounds=(not decl.lo_open, not decl.hi_open), **kw
    )
