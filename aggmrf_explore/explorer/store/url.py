"""Settings from a shared link, read key by key.

A link such as ``?dataset=xor&lambda_theta=nan&mechanism=gaussian&epsilon=2`` holds one
setting per key.  :func:`parse_query` decodes each value to the type its setting declares
(Boolean, whole number, number, choice, list of features, text) and collects a message for
each value it cannot decode; :func:`apply_query` then hands the decoded values one by one
to the session store (``ExplorerSession.propose``, which checks the declared bounds and
choices), so one bad value costs only its own setting: the valid ones are kept, and each
error is recorded beside its own control (``session.errors[name]``).

The app writes the URL back from the settings in effect afterwards, so a bad value never
stays in the address bar.

A whole link is capped too, at ``MAX_LINK_CHARS`` characters (as sent, percent-encoded),
far below the 64 KiB of request headers that Tornado (Panel's web server) accepts by
default (a longer link is refused by the server itself, before the page can answer).  The
links the page writes stay under the cap (:func:`with_settings`); of a longer link the
settings are still read key by key (a value over ``MAX_VALUE_CHARS`` is refused beside
its control), its other keys (lesson, hidden controls) are not read
(:func:`readable_query`), the address written back drops them, and the page says why
(:func:`link_too_long`).  Keys that are not settings (``hide``, ``lesson``, …) are left
to whoever reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode

import param

from ...errors import AggMRFError
from ...settings import SettingError
from .escape import shorten
from .params import declaration, parse_number

__all__ = [
    "MAX_VALUE_CHARS",
    "URLValueError",
    "parse_query",
    "query_pairs",
    "decode_value",
    "apply_query",
    "without_keys",
    "encode_settings",
    "with_settings",
    "MAX_LINK_CHARS",
    "readable_query",
    "link_too_long",
]

MAX_VALUE_CHARS = 2000  # a longer URL value is refused unread (a link is not a data channel)
MAX_LINK_CHARS = 16_000  # links written stay shorter; longer ones lose lesson and hide
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


class URLValueError(ValueError):
    """A URL value that cannot be decoded to its setting's type (the message says why)."""


def query_pairs(search: str) -> list[tuple[str, str]]:
    """The (key, raw value) pairs of a query string (``"?a=1&b=2"`` or ``"a=1&b=2"``), in order."""
    return parse_qsl(search.lstrip("?"), keep_blank_values=True)


def _label(p: param.Parameter, name: str) -> str:
    return p.label or name


def decode_value(p: param.Parameter, name: str, raw: str):
    """Decode one URL value ``raw`` for the setting ``p`` (its declared type), or raise
    :class:`URLValueError` with a message fit for the page.  A setting declared in
    :mod:`aggmrf_explore.settings` is checked by its declaration (domain included); for the
    store's own params bounds and choices are checked when the value is proposed."""
    label = _label(p, name)
    if len(raw) > MAX_VALUE_CHARS:
        raise URLValueError(
            f"{label}: the value in the link is too long ({len(raw):,} characters)."
        )
    text = raw.strip()
    decl = declaration(name)
    if decl is not None:  # one of the declared settings: its one check
        try:
            return decl.check(text)
        except SettingError as exc:
            raise URLValueError(str(exc)) from None
    if isinstance(p, param.Boolean):
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise URLValueError(f"{label} must be true or false; got {shorten(text, 40)!r}.")
    if isinstance(p, param.Number):  # (param.Integer too: a whole number)
        try:
            return parse_number(label, text, whole=isinstance(p, param.Integer))
        except AggMRFError as exc:
            raise URLValueError(str(exc)) from None
    if isinstance(p, param.List):
        return _decode_list(label, text)
    if isinstance(p, param.Selector):
        # the app writes choices as plain text; a JSON-quoted or capitalised Boolean-like
        # choice ("True" for "true", '"xor"') is read as the choice it names
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = text[1:-1]
        objects = [str(o) for o in p.objects]
        if text not in objects and text.lower() in objects:
            text = text.lower()
        return text
    return raw  # text settings keep their spaces


def _decode_list(label: str, text: str) -> list[str]:
    if not text:
        return []
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            raise URLValueError(f"{label}: not a readable list: {shorten(text, 40)!r}.") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise URLValueError(f"{label} must be a list of names; got {shorten(text, 40)!r}.")
        return value
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_query(
    pairs: Iterable[tuple[str, str]], params: Mapping[str, param.Parameter]
) -> tuple[dict, dict[str, str]]:
    """Decode the pairs whose key is a setting in ``params`` ({name: declared param}).

    Returns ``(values, errors)``: the decoded values {name: value} in the order of
    ``params`` and a message for each value that could not be decoded {name: message}.
    Other keys are ignored; of a repeated key, the last value counts.
    """
    raw = {k: v for k, v in pairs if k in params}
    values: dict = {}
    errors: dict[str, str] = {}
    for name, p in params.items():
        if name not in raw:
            continue
        try:
            values[name] = decode_value(p, name, raw[name])
        except URLValueError as exc:
            errors[name] = str(exc)
    return values, errors


def readable_query(search: str) -> str:
    """``search`` if it is at most ``MAX_LINK_CHARS`` characters long, else ``""``: what
    the page reads a lesson and hidden controls from."""
    return search if len(search or "") <= MAX_LINK_CHARS else ""


def link_too_long(search: str) -> str | None:
    """The page's message for a query string longer than ``MAX_LINK_CHARS`` (None if not)."""
    if readable_query(search) or not search:
        return None
    return (
        f"This link is {len(search):,} characters long, more than the {MAX_LINK_CHARS:,} the "
        "explorer accepts: its lesson and hidden controls were not read, only its settings "
        "— share a shorter link (the Save & share card makes one)."
    )


def apply_query(session, search: str, keys: Iterable[str]) -> dict[str, str]:
    """Apply the settings of a query string to ``session`` key by key.

    Each decoded value goes through ``session.propose`` (bounds and choices checked there),
    in the order of ``keys``; a value that fails keeps the previous setting and its message
    shows beside its control (``session.report_errors``).  Returns {name: message} of the
    refused values.
    """
    params = {k: session.param[k] for k in keys}
    values, errors = parse_query(query_pairs(search), params)
    for name, value in values.items():
        msg = session.propose(name, value)
        if msg:
            errors[name] = msg
    session.report_errors(errors)
    return errors


def without_keys(search: str, keys: Iterable[str]) -> str:
    """The query string ``search`` without the pairs whose key is in ``keys`` (order kept),
    as ``"?a=1&…"`` (or ``""`` when nothing is left)."""
    drop = set(keys)
    rest = [(k, v) for k, v in query_pairs(search) if k not in drop]
    return "?" + urlencode(rest) if rest else ""


def encode_settings(session, keys: Iterable[str]) -> list[tuple[str, str]]:
    """The (key, text) pairs of a link holding ``session``'s settings ``keys``: text as
    written (choices, numbers), lists and Booleans as JSON (``["a", "b"]``, ``true``)."""
    out = []
    for k in keys:
        v = getattr(session, k)
        if v is None:
            continue
        v = session.param[k].serialize(v)
        out.append((k, v if isinstance(v, str) else json.dumps(v)))
    return out


def with_settings(search: str, session, keys: Iterable[str]) -> str:
    """``search`` with the settings ``keys`` replaced by those in effect in ``session``
    (other keys, e.g. ``lesson`` or ``hide``, kept in front, in their order; none of
    them from a link over ``MAX_LINK_CHARS``, none whose value is over ``MAX_VALUE_CHARS``,
    and none when they would make the link longer than ``MAX_LINK_CHARS``)."""
    keys = list(keys)
    rest = [
        (k, v)
        for k, v in query_pairs(readable_query(search))
        if k not in set(keys) and len(v) <= MAX_VALUE_CHARS
    ]
    out = "?" + urlencode(rest + encode_settings(session, keys))
    if len(out) > MAX_LINK_CHARS:  # the settings alone: the link stays readable
        out = "?" + urlencode(encode_settings(session, keys))
    return out
