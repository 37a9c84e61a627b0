"""The environment variables the explorer's server reads, each declared once and parsed
with the same checks as a flag: a bad value is one message naming the variable, never a
traceback and never silently replaced by a default.

``aggmrf-explore serve`` checks them before it listens (:func:`check_environment`: one
``error:`` line); under ``panel serve apps/explorer.py`` every page shows the refusal
instead of the explorer (:func:`environment_problem`, used by ``serve.explorer_document``).
The values are read where they are used (:func:`env_int`, :func:`env_flag`), after that
check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

from ...errors import AggMRFError

__all__ = [
    "Variable",
    "VARIABLES",
    "env_int",
    "env_flag",
    "check_environment",
    "environment_problem",
]

FLAG_WORDS = {
    **{"1": True, "true": True, "yes": True, "on": True},
    **{"0": False, "false": False, "no": False, "off": False, "": False},
}


class Variable(NamedTuple):
    """One variable: ``kind`` "int" (a whole number within ``lo``..``hi``) or "flag" (1/0,
    true/false, yes/no, on/off); ``meaning``: what it sets, in the message."""

    name: str
    kind: str
    lo: int
    hi: int
    meaning: str


VARIABLES = {
    v.name: v
    for v in (
        Variable("AGGMRF_MAX_SESSIONS", "int", 1, 10_000, "the most open pages of one server"),
        Variable("AGGMRF_TRAIN_THREADS", "int", 1, 256, "the training threads"),
        Variable("AGGMRF_TRAIN_PROCESSES", "flag", 0, 1, "training in worker processes"),
        Variable("AGGMRF_EXPLORER_LOG", "flag", 0, 1, "the server's timing log"),
    )
}


def _parse(var: Variable, raw: str):
    text = raw.strip()
    if var.kind == "flag":
        if text.lower() in FLAG_WORDS:
            return FLAG_WORDS[text.lower()]
        raise AggMRFError(
            f"{var.name}={raw!r} is not 1 or 0 ({var.meaning}) — set it to 1 or 0, or unset "
            f"it (env -u {var.name})."
        )
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not var.lo <= value <= var.hi:
        raise AggMRFError(
            f"{var.name}={raw!r} is not a whole number from {var.lo:,} to {var.hi:,} "
            f"({var.meaning}) — set one, or unset it (env -u {var.name})."
        )
    return value


def env_int(name: str, default: int | None, environ: Mapping[str, str] | None = None):
    """The whole number ``name`` holds (its declared range checked), or ``default`` if it
    is unset or empty; :class:`AggMRFError` naming the variable for a bad value."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return default
    return _parse(VARIABLES[name], raw)


def env_flag(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the flag ``name`` is on (``default`` if unset); AggMRFError if it holds a
    word other than 1/0, true/false, yes/no, on/off."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None:
        return default
    return _parse(VARIABLES[name], raw)


def environment_problem(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The first variable with a bad value, as (``NAME=value``, its message), else None."""
    environ = os.environ if environ is None else environ
    for name, var in VARIABLES.items():
        raw = environ.get(name)
        if raw is None or (var.kind == "int" and not raw.strip()):
            continue  # (unset, or an empty whole number: the default)
        try:
            _parse(var, raw)
        except AggMRFError as exc:
            return f"{name}={raw}", str(exc)
    return None


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`AggMRFError` (one line naming the variable) for the first bad value."""
    problem = environment_problem(environ)
    if problem is not None:
        raise AggMRFError(problem[1])
