"""The argparse ``type=`` functions of the command line: every number is checked while parsing.

Each turns the text of one flag into its value or raises ``argparse.ArgumentTypeError`` with
what the value must be; argparse then names the flag, and :func:`aggmrf_explore.cli.main`
prints the one ``error:`` line.  So a bad number stops the command before any work starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = [
    "SEED_MAX",
    "integer",
    "any_integer",
    "number",
    "seed",
    "fraction",
    "probability",
    "lambda_theta",
    "of",
]

SEED_MAX = 2**63 - 1


def _int(text: str) -> int:
    t = text.strip().replace("_", "")
    if not t or not (t.isdigit() or (t[0] in "+-" and t[1:].isdigit())):
        raise argparse.ArgumentTypeError(f"expected an integer; got {text[:40]!r}")
    return int(t)


def integer(lo: int, hi: int) -> Callable[[str], int]:
    """An integer in [lo, hi] (decimal digits only: no 1e9, no 0x10)."""

    def parse(text: str) -> int:
        try:
            v = _int(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {lo:,} to {hi:,}; got {text[:40]!r}"
            ) from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer from {lo:,} to {hi:,}; got {v:,}")
        return v

    parse.__name__ = "integer"
    return parse


def any_integer(text: str) -> int:
    """Any integer (decimal digits, a sign): for a flag whose command checks the value itself
    (``serve --num-procs``, where every value but 1 gets its own explanation)."""
    try:
        return _int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be an integer; got {text[:40]!r}") from None


def seed(text: str) -> int:
    """``--seed``: an integer in [0, 2⁶³ − 1]."""
    try:
        v = _int(text)
    except argparse.ArgumentTypeError:
        v = None
    if v is None or not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError(
            f"the seed must be an integer from 0 to 2^63-1; got {text[:40]!r}"
        )
    return v


def number(lo: float, hi: float = math.inf, *, lo_open: bool = False) -> Callable[[str], float]:
    """A finite float in [lo, hi] (or (lo, hi] with ``lo_open``)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        ok = math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
        if not ok:
            rng = (
                ("> " if lo_open else "≥ ")
                + f"{lo:g}"
                + (f" and ≤ {hi:g}" if hi < math.inf else "")
            )
            raise argparse.ArgumentTypeError(f"must be a finite number {rng}; got {text[:40]!r}")
        return v

    parse.__name__ = "number"
    return parse


def fraction(text: str) -> float:
    """A number strictly between 0 and 1 (``--test-fraction``, ``--delta``)."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(
            f"must be a number strictly between 0 and 1; got {text[:40]!r}"
        )
    return v


probability = fraction


def of(name: str, only: tuple[str, ...] | None = None) -> Callable[[str], object]:
    """The ``type=`` of a flag declared in :data:`aggmrf_explore.settings.SETTINGS`: the
    setting's own check, its message without the setting's name (argparse adds the flag);
    ``only``: the choices a command takes of a "choice" setting's domain."""
    from ..settings import SettingError, setting

    decl = setting(name)
    domain = decl.domain() if only is None else "one of " + ", ".join(only)

    def parse(text: str):
        try:
            value = decl.check(text)
        except SettingError:
            value = None
        if value is None or (only is not None and value not in only):
            raise argparse.ArgumentTypeError(f"must be {domain}; got {text[:40]!r}") from None
        return value

    parse.__name__ = decl.kind
    return parse


def lambda_theta(text: str) -> float | str:
    """``--lambda-theta``: a finite number ≥ 0, or "auto" (chosen from the tables alone)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return of("lambda_theta")(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected 'auto' or a finite number ≥ 0 and ≤ 1e+06; got {text[:40]!r}"
        ) from None
