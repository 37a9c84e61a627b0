"""Lesson links: a teacher's link that hides controls and shows an exercise text.

A lesson link is an ordinary explorer link (the settings, key by key) with two extra keys:

- ``hide=lambda_mu,step_mu,…``: the controls (named after their settings, plus the groups
  of :data:`GROUPS`) that the page does not show;
- ``lesson=…``: a text shown at the top of the page (user-supplied: the page escapes it).

Pure functions (no Panel): :func:`parse_lesson` reads the two keys from a query string,
:func:`lesson_link` builds a link from settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode

__all__ = [
    "GROUPS",
    "MAX_LESSON_CHARS",
    "Lesson",
    "parse_lesson",
    "lesson_link",
    "hidden_groups",
]

MAX_LESSON_CHARS = 1000
# names that hide a whole group of controls (besides every setting's own name)
GROUPS = {
    "data": "the Data card",
    "privacy": "the Privacy card",
    "training": "the Training card",
    "presets": "the preset menu",
    "share": "the Save & share card",
}


class Lesson:
    """The lesson of a link: controls to hide (in link order) and the text (may be empty)."""

    def __init__(self, hide: Iterable[str] = (), text: str = "", unknown: Iterable[str] = ()):
        self.hide = list(dict.fromkeys(hide))
        self.text = text
        self.unknown = list(unknown)  # names in ``hide`` that no control has

    def __repr__(self) -> str:
        return f"Lesson(hide={self.hide!r}, text={self.text!r}, unknown={self.unknown!r})"


def parse_lesson(search: str, hideable: Iterable[str]) -> Lesson:
    """Read ``hide`` (comma-separated names, or repeated keys) and ``lesson`` from a query
    string; names that are not in ``hideable`` are collected in ``unknown``."""
    allowed = set(hideable) | set(GROUPS)
    hide: list[str] = []
    unknown: list[str] = []
    text = ""
    for key, value in parse_qsl(search.lstrip("?"), keep_blank_values=True):
        if key == "hide":
            for name in (v.strip() for v in value.replace(";", ",").split(",")):
                if name:
                    (hide if name in allowed else unknown).append(name)
        elif key == "lesson":
            text = value.strip()[:MAX_LESSON_CHARS]
    return Lesson(hide, text, unknown)


def hidden_groups(hide: Iterable[str], members: Mapping[str, Iterable[str]]) -> set[str]:
    """The groups of :data:`GROUPS` that ``hide`` hides: named in it, or every control of
    which (``members[group]``, the names of its controls) is in it.  When all of them are
    hidden the page has no control left beside the plots (its sidebar folds away)."""
    hide = set(hide)
    out = {g for g in GROUPS if g in hide}
    for group, names in members.items():
        names = list(names)
        if names and all(n in hide for n in names):
            out.add(group)
    return out


def lesson_link(
    base: str,
    settings: Mapping[str, object],
    defaults: Mapping[str, object],
    hide: Iterable[str] = (),
    text: str = "",
) -> str:
    """A link to ``base`` that restores ``settings`` (only those that differ from
    ``defaults``, so the link stays short), hides ``hide`` and shows ``text``."""
    pairs: list[tuple[str, str]] = []
    for key, value in settings.items():
        if key in defaults and _same(defaults[key], value):
            continue
        pairs.append((key, _text(value)))
    hide = [h for h in dict.fromkeys(hide) if h]
    if hide:
        pairs.append(("hide", ",".join(hide)))
    if text.strip():
        pairs.append(("lesson", text.strip()[:MAX_LESSON_CHARS]))
    query = urlencode(pairs)
    return f"{base}?{query}" if query else base


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False
