"""Type and range checks of the fields of the JSON files we read (release.json, model files).

Each checker takes the value, the field's name as the message shows it (e.g.
``release.json 'n'``) and returns the value in the type the readers use, or raises
:class:`~aggmrf_explore.errors.AggMRFError` saying what the field must be.  JSON numbers
come out of :func:`aggmrf_explore.files.loads_json` finite (NaN / Infinity are refused
there); booleans are never numbers here.  Values are never echoed at length (≤ 40
characters), so a hostile file cannot fill a message.

:func:`check_schema_dict` checks the ``features`` / label part shared by release.json and
model files (:meth:`aggmrf_explore.encoding.Schema.to_dict`) before the Schema is built.
"""

from __future__ import annotations

import math

from ..errors import AggMRFError

__all__ = [
    "short",
    "check_object",
    "check_list",
    "check_str",
    "check_int",
    "check_number",
    "check_choice",
    "check_scalar",
    "check_version",
    "check_schema_dict",
]


def short(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters (values in messages never run long)."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 1] + "…"


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number" if _is_number(value) else "a value"
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_object(value: object, what: str) -> dict:
    """A JSON object."""
    if not isinstance(value, dict):
        raise AggMRFError(f"{what} must be a JSON object; got {_type(value)}.")
    return value


def check_list(value: object, what: str, *, min_len: int = 0, max_len: int | None = None) -> list:
    """A JSON list of ``min_len`` .. ``max_len`` items."""
    if not isinstance(value, list):
        raise AggMRFError(f"{what} must be a list; got {_type(value)}.")
    if len(value) < min_len or (max_len is not None and len(value) > max_len):
        size = f"{min_len} to {max_len}" if max_len is not None else f"at least {min_len}"
        raise AggMRFError(f"{what} must have {size} item(s); it has {len(value)}.")
    return value


def check_str(value: object, what: str, *, allow_empty: bool = False) -> str:
    """A string (non-empty unless ``allow_empty``)."""
    if not isinstance(value, str):
        raise AggMRFError(f"{what} must be a string; got {_type(value)} {short(value)}.")
    if not value and not allow_empty:
        raise AggMRFError(f"{what} must not be empty.")
    return value


def check_number(value: object, what: str, *, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A finite number in [lo, hi]."""
    if not _is_number(value) or not math.isfinite(float(value)):
        raise AggMRFError(f"{what} must be a finite number; got {_type(value)} {short(value)}.")
    v = float(value)
    if not lo <= v <= hi:
        if hi == math.inf:
            raise AggMRFError(f"{what} must be ≥ {lo:g}; got {v:g}.")
        raise AggMRFError(f"{what} must be between {lo:g} and {hi:g}; got {v:g}.")
    return v


def check_int(value: object, what: str, *, lo: int, hi: int) -> int:
    """An integer in [lo, hi] (an integral JSON float such as 3.0 is accepted)."""
    if _is_number(value) and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise AggMRFError(f"{what} must be an integer; got {_type(value)} {short(value)}.")
    if not lo <= value <= hi:
        raise AggMRFError(f"{what} must be between {lo:,} and {hi:,}; got {value:,}.")
    return value


def check_choice(value: object, what: str, choices: tuple[str, ...]) -> str:
    """One of the strings ``choices``."""
    if value not in choices:
        raise AggMRFError(f"{what} must be one of {list(choices)}; got {short(value)}.")
    return value  # type: ignore[return-value]


def check_scalar(value: object, what: str) -> str | int | float:
    """A string or a finite number (a label, a modality, a raw value)."""
    if isinstance(value, str) or (_is_number(value) and math.isfinite(float(value))):
        return value  # type: ignore[return-value]
    raise AggMRFError(f"{what} must be a string or a number; got {_type(value)} {short(value)}.")


def check_version(value: object, what: str, supported: int) -> int:
    """The file format version: the integer ``supported`` (a newer file needs a newer
    aggmrf-explore)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise AggMRFError(
            f"{what} must be the integer {supported}; got {_type(value)} {short(value)}."
        )
    if value != supported:
        hint = " (written by a newer aggmrf-explore? upgrade it)" if value > supported else ""
        raise AggMRFError(
            f"{what} {value} is not supported; this aggmrf-explore reads version {supported}{hint}."
        )
    return value


def _scalars(value: object, what: str, *, min_len: int = 0) -> list:
    items = check_list(value, what, min_len=min_len)
    for i, v in enumerate(items):
        check_scalar(v, f"{what} item {i + 1}")
    return items


def check_schema_dict(d: dict, where: str) -> dict:
    """The schema part of a release.json / model file (``features``, ``label``,
    ``positive_label``, ``classes``), every field type- and range-checked; returns ``d``.

    Each feature: ``name`` (non-empty string, unique), ``modalities`` (non-empty list of
    strings / numbers), optional ``kind`` ("categorical" / "numeric"), ``edges`` (numbers),
    ``known`` (strings / numbers), ``codes`` (integers), ``values`` ("string" / "number"),
    ``unseen`` ("error" / "other").
    """
    feats = check_list(d.get("features"), f"{where} 'features'", min_len=1)
    names: set[str] = set()
    for i, f in enumerate(feats):
        at = f"{where} feature #{i + 1}"
        check_object(f, at)
        name = check_str(f.get("name"), f"{at} 'name'")
        if name in names:
            raise AggMRFError(f"{where}: two features are named {short(name)}; names must differ.")
        names.add(name)
        at = f"{where} feature {short(name)}"
        _scalars(f.get("modalities"), f"{at} 'modalities'", min_len=1)
        if "kind" in f:
            check_choice(f["kind"], f"{at} 'kind'", ("categorical", "numeric"))
        if f.get("edges") is not None:
            for j, e in enumerate(check_list(f["edges"], f"{at} 'edges'")):
                check_number(e, f"{at} 'edges' item {j + 1}")
        if f.get("known") is not None:
            _scalars(f["known"], f"{at} 'known'")
        if f.get("codes") is not None:
            for j, c in enumerate(check_list(f["codes"], f"{at} 'codes'")):
                check_int(c, f"{at} 'codes' item {j + 1}", lo=0, hi=2**62)
        if "values" in f:
            check_choice(f["values"], f"{at} 'values'", ("string", "number"))
        if "unseen" in f:
            check_choice(f["unseen"], f"{at} 'unseen'", ("error", "other"))
    if d.get("label") is not None:
        check_str(d["label"], f"{where} 'label'")
    if d.get("positive_label") is not None:
        check_scalar(d["positive_label"], f"{where} 'positive_label'")
    if d.get("classes") is not None:
        _scalars(d["classes"], f"{where} 'classes'", min_len=2)
        check_list(d["classes"], f"{where} 'classes'", max_len=2)
    return d
