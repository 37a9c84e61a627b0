"""The Privacy card's summary of the noise a release adds (markdown, from the store).

:func:`noise_summary` reads the store (``session``: mechanism, ε, its data's layout and
noise numbers) and never raises: a setting the mechanism refuses becomes a "⚠" line.
User-supplied names (an uploaded CSV's columns) are escaped.
"""

from __future__ import annotations

from ..errors import error_message
from .escape import escape_markdown

__all__ = ["noise_summary"]


def noise_summary(session) -> str:
    """T, the sensitivities and the noise scale of the session's mechanism (for the
    discrete Gaussian, its σ beside the continuous one's); for local privacy, each
    field's ε share and keep probability."""
    s = session
    if s.bundle is None or s.mechanism == "none":
        return "No noise: the learner sees the exact tables."
    if s.mechanism == "local":
        return _local_fields(s)
    try:
        nums = s.noise_numbers()
    except Exception as exc:  # noqa: BLE001
        return f"⚠ {error_message(exc)}"
    lines = [
        f"T = {nums['T']} released tables · sensitivity Δ₁ = {nums['l1_sensitivity']:g}, "
        f"Δ₂ = {nums['l2_sensitivity']:.3g} (how much one person can change all the "
        "released numbers together, summed: Δ₁, or as a length: Δ₂; the noise grows with it)"
    ]
    if s.mechanism == "laplace":
        lines.append(
            f"**Laplace** scale b = {nums['laplace_scale']:.3g}, "
            f"noise std = **{nums['laplace_std']:.3g}** records"
        )
    elif s.mechanism == "discrete_laplace":
        lines.append(
            f"**discrete Laplace** (integer noise) scale t = {nums['discrete_laplace_scale']:.3g}, "
            f"noise std = **{nums['discrete_laplace_std']:.3g}** records"
        )
    elif s.mechanism == "discrete_gaussian":
        lines.append(
            f"**discrete Gaussian σ** (integer noise; its budget in zero-concentrated DP, "
            f"ρ = {nums['rho']:.3g}, the same guarantee as ε, δ in another unit): "
            f"**{nums['sigma_discrete']:.3g}** records · the continuous one's analytic σ: "
            f"{nums['sigma_analytic']:.3g}"
        )
    else:
        classic = nums["sigma_classic"]
        note = "" if nums["classic_valid"] else " (not valid for ε > 1)"
        lines.append(
            f"**Gaussian σ**: analytic **{nums['sigma_analytic']:.3g}** · classic "
            f"{classic:.3g}{note} · AdKDD'21 {nums['sigma_adkdd21']:.3g} records"
        )
    return "  \n".join(lines)


def _local_fields(s) -> str:
    """Local privacy: each field's ε share and keep probability (markdown table)."""
    from ..privacy.local import make_local_mechanism

    try:
        mech = make_local_mechanism(s.epsilon, s.bundle.layout)
    except Exception as exc:  # noqa: BLE001
        return f"⚠ {error_message(exc)}"
    names = list(getattr(s.bundle.encoded, "feature_names", [])) or None
    lines = [
        f"**Local (randomized response)**: each record is randomized before aggregation; "
        f"ε = {s.epsilon:g} per person, split equally over the fields (δ = 0).",
        "",
        "| field | values | ε share | keep p |",
        "|---|---:|---:|---:|",
    ]
    for r in mech.fields(names).itertuples(index=False):
        field = escape_markdown(str(r.field), limit=60)
        lines.append(f"| {field} | {r.values} | {r.epsilon:.3g} | {r.keep:.3f} |")
    return "\n".join(lines)
