"""The store's params made from the settings' one declaration (:mod:`aggmrf_explore.settings`),
and the cleaning of a value proposed for one of them.

``param_for("epsilon", softbounds=(0.01, 100))`` is a ``param.Number`` with the setting's
bounds, label, help and default; a surface may add a soft range (what a slider shows) but
never its own bounds or choices.  :data:`SETTING_OF` maps each store param so made to the
setting it declares (the three seeds share one).
"""

from __future__ import annotations

import math

import param

from ...errors import AggMRFError
from ...settings import Setting, setting
from .escape import shorten

__all__ = [
    "param_for",
    "SETTING_OF",
    "declaration",
    "clean_value",
    "rejected_message",
    "parse_number",
    "same_value",
]

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


def clean_value(p: param.Parameter, name: str, value, features: list[str] | None = None):
    """Clean one proposed value for the store param ``p`` (named ``name``) as widgets and
    URLs give it (text, floats for integers…) and run the checks its declaration cannot
    express; returns the cleaned value or raises AggMRFError.  Bounds and choices are
    checked by param when the value is set.  ``features``: the loaded data's features
    (a feature subset must name some of them; None: not loaded yet)."""
    decl = declaration(name)
    if decl is not None:  # one of the declared settings: its one check
        return decl.check(value)
    if isinstance(p, param.Boolean):
        return bool(value)
    if isinstance(p, param.String):
        return str(value)
    if isinstance(p, param.Number):  # (param.Integer too: a whole number)
        return parse_number(p.label, value, whole=isinstance(p, param.Integer))
    if name == "features":
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        value = [str(v) for v in value]
        if features is not None and value:
            unknown = [f for f in value if f not in features]
            if unknown:
                raise AggMRFError(f"unknown features {unknown}.")
        return value
    return value


def parse_number(label: str, value, whole: bool) -> float | int:
    """``value`` (text from a link or a widget, or a number) as a finite number, an ``int``
    when ``whole``; else raises AggMRFError naming ``label`` and quoting the value (text
    cut to 40 characters)."""
    shown = repr(shorten(value, 40)) if isinstance(value, str) else repr(value)
    kind = "a whole number" if whole else "a number"
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AggMRFError(f"{label} must be {kind}; got {shown}.") from None
    if not math.isfinite(x) or (whole and x != int(x)):
        kind = kind if whole else "a finite number"
        raise AggMRFError(f"{label} must be {kind}; got {shown}.")
    return int(x) if whole else x


def rejected_message(p: param.Parameter, name: str, value) -> str:
    """The message for a value that the declaration of param ``p`` (named ``name``) rejects."""
    label = p.label or name
    if isinstance(p, param.Selector):
        opts = ", ".join(map(str, p.objects))
        return f"{label} must be one of {opts}; got {value!r}."
    if isinstance(p, param.Number) and p.bounds is not None:
        lo, hi = p.bounds
        if isinstance(p, param.Integer):
            return f"{label} must be between {lo:,} and {hi:,}; got {int(value):,}."
        lo_in, hi_in = p.inclusive_bounds
        if lo is not None and (value < lo or (value == lo and not lo_in)):
            return f"{label} must be {'≥' if lo_in else '>'} {lo:g}; got {value:g}."
        if hi is not None and (value > hi or (value == hi and not hi_in)):
            return f"{label} must be {'≤' if hi_in else '<'} {hi:g}; got {value:g}."
    return f"invalid {label}: {value!r}."


def same_value(a, b) -> bool:
    """``a == b`` for two setting values, False when they cannot be compared (arrays,
    values whose ``==`` raises)."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False
