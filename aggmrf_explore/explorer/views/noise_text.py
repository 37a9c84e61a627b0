"""The Privacy card's summary of the noise a release adds (markdown, from the store).

:func:`noise_text` reads the store (``session``: mechanism, ε, δ, accounting, its data's
layout) and never raises: a setting the mechanism refuses becomes a "⚠" line.  The words
about each mechanism's noise are its own (``summary`` of its class, ``privacy.registry``).
User-supplied names (an uploaded CSV's columns) are escaped.
"""

from __future__ import annotations

from ...errors import error_message
from ...privacy import make_mechanism, mechanism_class, sensitivity
from ...settings import applies
from ..store.escape import escape_markdown

__all__ = ["noise_text"]


def noise_text(session) -> str:
    """For a central mechanism: T and the sensitivities, then the mechanism's own summary
    (its scale in records); for local privacy, each field's ε share and keep probability;
    without noise, that the learner sees the exact tables."""
    s = session
    cls = mechanism_class(s.mechanism)
    if s.bundle is None or not cls.uses:
        return "  \n".join(mechanism_class("none").summary())
    layout = s.bundle.layout
    values = {k: getattr(s, k) for k in ("mechanism", "epsilon", "delta", "accounting")}
    values["calibration"] = s.calibration
    used = {k: (v if applies(k, values) else None) for k, v in values.items() if k != "mechanism"}
    try:
        mech = make_mechanism(s.mechanism, layout=layout, **used)
    except Exception as exc:  # noqa: BLE001
        return f"⚠ {error_message(exc)}"
    if mech.privacy != "central":
        names = list(getattr(s.bundle.encoded, "feature_names", [])) or None
        names = None if names is None else [escape_markdown(str(n), limit=60) for n in names]
        return "\n".join(mech.summary(names))
    l1, l2 = sensitivity(layout, used["accounting"] or "both")
    lines = [
        f"T = {layout.n_released_tables} released tables · sensitivity Δ₁ = {l1:g}, "
        f"Δ₂ = {l2:.3g} (how much one person can change all the "
        "released numbers together, summed: Δ₁, or as a length: Δ₂; the noise grows with it)",
        *mech.summary(),
    ]
    return "  \n".join(lines)
