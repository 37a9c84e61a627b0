"""The store's noisy release: the one its privacy settings make or, when they cannot make
one, the one made with the last good values of the settings that changed.

Functions of the values they are given: the store (:class:`~.store.ExplorerSession`)
installs the :class:`Release` returned and puts back (``revert``) the settings it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ...errors import AggMRFError, error_message
from .keys import NOISE_KEYS
from .params import same_value
from .problems import ProblemBundle, get_release

__all__ = ["Release", "release", "release_or_fallback"]


class Release(NamedTuple):
    """A release made for the store: ``data`` (the ``AggregatedData`` the trainer sees,
    noisy under a mechanism), ``mechanism`` (its object; None without noise),
    ``settings`` (the privacy settings that made it, {name: value} for each of
    ``NOISE_KEYS``), ``reverted`` (those put back to their last good values; empty: none)
    and ``message`` (why they were put back; "" if none)."""

    data: object
    mechanism: object
    settings: dict
    reverted: dict
    message: str


def release(bundle: ProblemBundle, settings: Mapping) -> Release:
    """The (cached) release of ``bundle``'s tables under the privacy ``settings``; raises
    AggMRFError when they cannot make one."""
    data, mechanism = get_release(bundle, *(settings[k] for k in NOISE_KEYS))
    return Release(data, mechanism, {k: settings[k] for k in NOISE_KEYS}, {}, "")


def release_or_fallback(bundle: ProblemBundle, wanted: Mapping, good: Mapping) -> Release:
    """The release of the privacy settings ``wanted``; if they cannot make one (an
    AggMRFError: e.g. a local ε too small for a usable channel, from a link), the settings
    that differ from ``good`` (those of the last release made) go back to their good
    values one at a time (ε first), else all together, and the first release that works
    is returned with them as ``reverted`` and the refusal as ``message``.  Raises when
    nothing changed, when nothing works, and on any other failure."""
    try:
        return release(bundle, wanted)
    except AggMRFError as exc:
        changed = [k for k in NOISE_KEYS if not same_value(wanted[k], good[k])]
        if not changed:
            raise
        message = error_message(exc)
    for group in [[k] for k in sorted(changed, key=lambda k: k != "epsilon")] + [changed]:
        back = {k: good[k] for k in group}
        try:
            made = release(bundle, {**wanted, **back})
        except AggMRFError:
            continue
        return Release(made.data, made.mechanism, made.settings, back, message)
    raise AggMRFError(message)
