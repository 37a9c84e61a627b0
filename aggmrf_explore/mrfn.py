"""MRF-N's records-free prior on the label's interactions, learnt from the release itself.

MRF-N (noise-aware training) replaces each released value by its posterior mean given the
model (``privacy.noise_aware_targets``).  Where the noise dwarfs a cell's label sum (σ = 17
against a dozen positives), that posterior is nearly the model's own value: the cell's
coefficient is then set by its penalty λ_θ, i.e. by the Gaussian prior N(0, 1/(2λ_θ)) the
penalty stands for.  One λ_θ for every table is a poor prior there: in a Criteo-shaped
release a few pair tables carry strong interactions (logit effects of sd ≈ 0.5) and the
others none, and the noise-free rule's λ_θ (prior sd 0.17) shrinks the former four-fold
while leaving the latter free to fit noise.

The release itself says which tables interact, because a table has hundreds of cells.  Per
table t of arity ≥ 2, over its listed rows j that hold one source cell (no folded values,
no missing suppressed cells):

- the label rate without interactions, from the table's released single-feature tables:
  logit p̂_j = Σ_f logit p_f(x_f) − (k − 1)·logit p̄ (p_f the single's rate, smoothed by
  one record at p̄; p̄ the release's rate; k the arity), with the variance of that
  prediction, e_j = Σ_f Var logit p_f (the single's binomial and noise by the delta method:
  (a_f + σ²(1 + p_f²))/a_f², a_f = d_f p_f (1 − p_f); at most 4);
- the residual z_j = c̃_j − p̂_j·d̃_j of the noisy label sum and count.  Under a logit
  effect u_j ~ N(0, τ_t²) of the cell, E[z_j²] ≈ v_j + a_j²·τ_t², with a_j = d_j p̂_j (1 − p̂_j)
  (the logit's slope) and v_j = a_j + σ_j²(1 + p̂_j²) + a_j² e_j (the binomial, the two
  noises and the prediction's error: a rare label's small singles are mostly noise, and
  without e_j their error read as interaction);
- τ_t² by the method of moments with the optimal weights w_j = a_j²/(v_j + a_j²τ²)²
  (iterated), and its standard error from the same weights (Var z² = 2 (E z²)² for a
  Gaussian z).

:func:`interaction_variance` returns (τ̂², se) per table; :func:`table_penalties` turns the
lower bound τ_lo² = τ̂² − 2·se, where it is > 0, into the table's penalty 1/(2τ_lo²) (at
least ``lo``).  MRF-N uses it only to *lower* a table's λ_θ
(``trainer_settings.cell_penalty_weights``): a table whose interactions the noise hides says
nothing about its penalty, and raising λ there to the noise rule's value over-shrank Adult
(docs/noise_rules.md).
Records-free: only the release's values, its declared noise and its suppression are read.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logit

from .tables import AggregatedData
from .tables.suppression import row_noise_sd, source_cells

__all__ = ["interaction_variance", "table_penalties", "TAU_Z"]

TAU_Z = 2.0  # τ_lo² = τ̂² − TAU_Z·se: a table must show its interactions above the noise
_ITERATIONS = 20  # of the weighted moment estimate (converges in a few)
_MAX_LOGIT_VAR = 4.0  # logit variances (a single's, a table's τ²) beyond this say nothing


def _logit(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(p, 1e-9, 1.0 - 1e-9))


def interaction_variance(data: AggregatedData, noise_sd: float) -> dict[int, tuple[float, float]]:
    """{table index: (τ̂², se)} for every released, unhashed table of arity ≥ 2 whose
    single-feature tables are released too (module docstring); τ̂² in logit², may be < 0
    (no interaction seen).  ``noise_sd``: σ of one released value (counts, ≥ 0); a row that
    sums several noisy source rows has its own (``tables.suppression.row_noise_sd``) but is
    left out anyway.  Tables with no usable row are left out of the result."""
    lay = data.layout
    box = data.suppression
    proj = data.projected()
    rel = lay.released
    total = float(proj.d[rel].sum())
    p_bar = float(np.clip(proj.c[rel].sum() / total, 1e-6, 1 - 1e-6)) if total > 0 else 0.5
    usable = np.ones(lay.K, dtype=bool)
    sigma = np.full(lay.K, float(max(noise_sd, 0.0)))
    if box is not None:
        usable &= ~box.rows & (box.slack == 0)
        usable &= source_cells(lay, box.source_values) == 1
        folded_sd = row_noise_sd(lay, box, data.noise)
        if folded_sd is not None:
            usable &= folded_sd == 0
            sigma = np.where(folded_sd > 0, folded_sd, sigma)
    # each single's rate and the variance of its logit (binomial and noise, delta method)
    single: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for t, feats in enumerate(lay.tables):
        if len(feats) == 1 and not lay.hash_sizes[t]:
            rows = slice(lay.offsets[t], lay.offsets[t + 1])
            d_f = np.maximum(proj.d[rows], 1.0)
            p_f = np.clip((proj.c[rows] + p_bar) / (proj.d[rows] + 1.0), 1e-6, 1 - 1e-6)
            slope = d_f * p_f * (1.0 - p_f)
            var = (slope + sigma[rows] ** 2 * (1.0 + p_f**2)) / slope**2
            single[feats[0]] = (p_f, np.minimum(var, _MAX_LOGIT_VAR))
    out: dict[int, tuple[float, float]] = {}
    for t, feats in enumerate(lay.tables):
        if len(feats) < 2 or lay.hash_sizes[t] or any(f not in single for f in feats):
            continue
        rows = np.arange(lay.offsets[t], lay.offsets[t + 1])
        codes = lay.row_codes(t)
        eta = sum(_logit(single[f][0][codes[:, i]]) for i, f in enumerate(feats))
        eta = eta - (len(feats) - 1) * _logit(np.array(p_bar))
        eta_var = sum(single[f][1][codes[:, i]] for i, f in enumerate(feats))
        keep = usable[rows]
        j = rows[keep]
        p = 1.0 / (1.0 + np.exp(-eta[keep]))
        z = data.c[j] - p * data.d[j]
        a = proj.d[j] * p * (1.0 - p)
        # binomial, the two noises, and the prediction's own error (its singles' noise)
        v = a + sigma[j] ** 2 * (1.0 + p**2) + a**2 * eta_var[keep]
        if not np.any(a > 0):
            continue
        tau2 = 0.1
        for _ in range(_ITERATIONS):
            w = a**2 / (v + a**2 * max(tau2, 0.0)) ** 2
            tau2 = float((w * (z**2 - v)).sum() / (w * a**2).sum())
        spread = v + a**2 * max(tau2, 0.0)
        w = a**2 / spread**2
        se = float(np.sqrt((w**2 * 2.0 * spread**2).sum()) / (w * a**2).sum())
        out[t] = (tau2, se)
    return out


def table_penalties(data: AggregatedData, noise_sd: float, lo: float = 1.0) -> dict[int, float]:
    """{table index: λ_t} for the tables whose interactions show above the noise:
    λ_t = max(1/(2 τ_lo²), ``lo``), τ_lo² = τ̂² − ``TAU_Z``·se > 0 (:func:`interaction_variance`):
    the penalty of the table's coefficients as the prior N(0, τ_lo²) on its cells' logit
    effects.  Tables where τ_lo² ≤ 0 are left out (their penalty is not the release's to say:
    a noise that hides every interaction would otherwise set λ_t = ∞), and so are tables
    with τ̂² > 4 (logit effects of sd > 2: the table's rates do not scatter around the
    singles' prediction, e.g. structural zeros; Bank's day_of_week × emp.var.rate read
    120 ± 59 under Laplace ε = 1)."""
    out = {}
    for t, (tau2, se) in interaction_variance(data, noise_sd).items():
        low = tau2 - TAU_Z * se
        if 0.0 < low and tau2 <= _MAX_LOGIT_VAR:
            out[t] = float(max(0.5 / low, lo))
    return out
