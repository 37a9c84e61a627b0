"""Suppressed cells: rows a release leaves out because their true count was small, and rows
that miss some of their source cells for the same reason.

A release may declare a *suppression threshold* k per table: a row of that table is absent
from the files if and only if its count was ≤ k (the AdKDD'21 challenge drops every
pair cell with count ≤ 10; census tables with k-anonymity thresholds do the same).  This
package decides on the released count, the noisy one of a noisy release
(:func:`apply_suppression`: post-processing, covered by the noise's guarantee); releases
received from others may have decided on true counts.  An absent row is not a zero: it
says 0 ≤ d ≤ k, and, since a label sum counts a subset of the row's records, 0 ≤ c ≤ d.

**Per-row boxes.**  When the release's rows are coarser than the source's cells (values
folded into one "(other)" modality by ``import-criteo --max-modalities``), a row r is the
sum of S_r source cells, each suppressed at k on its own.  Then

- an *absent* row (none of its source cells listed) is the box 0 ≤ d ≤ k·S_r
  (``Suppression.bound``; k when nothing is folded, S_r = 1);
- a *listed* row that misses m_r > 0 suppressed source cells (``Suppression.slack`` =
  k·m_r) is the box  listed ≤ d ≤ listed + k·m_r, and its label sum
  listed c ≤ c ≤ min(listed c + k·m_r, d): each missing cell holds at most k records, at
  most all of them positive.

:meth:`Suppression.limits` gives every row's (lower, upper) bounds on d for given listed
values (0 and ``bound`` on absent rows, listed and listed + ``slack`` on the others; an exact
row is the box [listed, listed]).

**Noise.**  A listed value b of a noisy release is a sum of s_r noisy source rows
(:func:`summed_cells`: s_r = S_r − m_r), so its noise has sd σ_r = σ·√s_r (σ: the
mechanism's sd; the sum of s_r independent noises, Gaussian or nearly so).  A folded row's
box is around b widened by ``NOISE_Z`` = 2 of those sds on each side, clamped at 0
(:func:`folded_bounds`):  max(b − 2σ_r, 0) ≤ d ≤ b + 2σ_r + k·m_r, and the same for the
label sum (capped at the count's upper end).  The box edges are hard constraints, and the
noise of a folded row is large (hundreds of source rows: σ_r ≈ 17·√400 = 340 on the
challenge); a box on the noisy sum itself forces the model's label sum up to a noisy value
that can be several times the true one (on the challenge-shaped benchmark that put
sale's test NLLH at −0.56).  The widened box holds the true value with probability
≥ 97.7 % per side.  Without noise σ_r = 0: the box on the listed sum (projected to ≥ 0 as
every target, or as released with ``targets="raw"``).  Noise-aware training
(``privacy.noise_aware_targets``) gives the *exact* listed rows that sum several source
rows the posterior with their own σ_r (:func:`row_noise_sd`); a folded row's box keeps
the listed sum, never the posterior mean, whose prior, the model's d̂, counts the missing
cells too.

Maximum entropy with these inequality constraints (instead of d = 0, or d = the listed sum)
gives, per boxed row r, a multiplier μ_r that is ≤ 0 when the upper bound is active, ≥ 0 when
the lower one is, and 0 (with λ_μ > 0) while the model's expectation lies inside the box
(complementary slackness); likewise θ_r for the label sum.  On an absent row the lower bound
0 is never active (θ_r = 0 at the unpenalised optimum, E[C_r] ≤ E[D_r] ≤ k).  The PCD trainer
does the same with moving targets (:func:`box_targets`): the count target is d̂ clipped into
the row's box — no gradient while the model's expectation is inside, a push to the nearest
bound outside — and the label-sum target is ĉ_model clipped into the label sum's box (its
upper end at most the count target), where ĉ_model is the label sum the θ-gradient
compares (ĉ for the true gradient, (d_target / d̂)·ĉ for the rescaled one).
``exact.fit_exact(..., box=True)`` is the exact counterpart for small state spaces
(L-BFGS-B on the dual: bounds μ_r ≤ 0 and θ_r ≤ 0 on absent rows; on a folded row μ_r and θ_r
are split into a part ≥ 0 with the lower bound as target and a part ≤ 0 with the upper).

:class:`Suppression` is what :class:`~aggmrf_explore.tables.AggregatedData` carries
(``data.suppression``; None when nothing is suppressed); :func:`apply_suppression` makes a
suppressed release from exact or noisy aggregates, deciding on the released (noisy) counts;
:func:`suppression_from_presence` builds a release's from the rows its files list (and,
for folded values, the source cells per modality and the missing ones per listed row).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..errors import AggMRFError

NOISE_Z = 2.0  # a folded row's box is widened by this many sds of its listed sum's noise

__all__ = [
    "Suppression",
    "apply_suppression",
    "suppress_pair_tables",
    "box_targets",
    "DualStep",
    "FoldedBounds",
    "folded_bounds",
    "summed_cells",
    "row_noise_sd",
    "NOISE_Z",
    "suppressed_per_table",
    "suppressed_cells",
    "suppression_check",
    "model_counts",
    "split_suppression",
    "sub_suppression",
    "without_suppression",
    "suppression_from_presence",
    "source_cells",
]


@dataclass(frozen=True)
class Suppression:
    """Which rows of a release are boxes instead of exact values, and their bounds.

    rows : bool (K,), True on rows absent from the release (never on the intercept row).
    bound : float64 (K,), on absent rows the largest true count: the table's threshold k
        (k·S_r when the row sums S_r source cells of folded values); 0 elsewhere.  The true
        count of an absent row lies in [0, bound].
    thresholds : {table index: k} as declared by the release (tables without a threshold
        are complete: an absent row of such a table is a true zero).
    cells : {table index: source cells left out}, when the source had finer cells than the
        release's rows (values folded into "(other)"); default: the absent rows.
    slack : float64 (K,) or None (zeros), on *listed* rows the most records their listed
        value may miss: k × the suppressed source cells folded into the row (its true count
        lies in [listed, listed + slack]); 0 on absent and exact rows.
    source_values : {feature index: int64 (M_f,)}, how many source values each modality of
        a folded feature stands for (only features with one > 1): what S_r is made of.
    """

    rows: np.ndarray
    bound: np.ndarray
    thresholds: dict[int, float] = field(default_factory=dict)
    cells: dict[int, int] = field(default_factory=dict)
    slack: np.ndarray | None = None
    source_values: dict[int, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rows = np.asarray(self.rows, dtype=bool)
        bound = np.asarray(self.bound, dtype=np.float64)
        if rows.ndim != 1 or bound.shape != rows.shape:
            raise AggMRFError(
                f"suppression rows and bound must have the same shape (K,); got {rows.shape} "
                f"and {bound.shape}."
            )
        if np.any(~np.isfinite(bound)) or np.any(bound < 0):
            raise AggMRFError("suppression bounds must be finite numbers ≥ 0.")
        slack = np.zeros(rows.shape) if self.slack is None else self.slack
        slack = np.asarray(slack, dtype=np.float64)
        if slack.shape != rows.shape:
            raise AggMRFError(
                f"suppression slack must have the shape of rows {rows.shape}; got {slack.shape}."
            )
        if np.any(~np.isfinite(slack)) or np.any(slack < 0):
            raise AggMRFError("suppression slack must be finite numbers ≥ 0.")
        values = {}
        for f, v in self.source_values.items():
            v = np.asarray(v, dtype=np.int64)
            if v.ndim != 1 or np.any(v < 1):
                raise AggMRFError(
                    f"source_values of feature {f} must be integers ≥ 1, one per modality."
                )
            values[int(f)] = v
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "bound", np.where(rows, bound, 0.0))
        object.__setattr__(self, "slack", np.where(rows, 0.0, slack))
        object.__setattr__(self, "source_values", values)

    @property
    def n_rows(self) -> int:
        """Number of suppressed (absent) rows."""
        return int(self.rows.sum())

    @property
    def folded(self) -> np.ndarray:
        """bool (K,): listed rows that miss suppressed source cells (slack > 0)."""
        return self.slack > 0

    @property
    def n_folded(self) -> int:
        """Number of listed rows with slack > 0."""
        return int(np.count_nonzero(self.slack))

    @property
    def boxed(self) -> np.ndarray:
        """bool (K,): rows whose true count is a box, not the listed value (absent or folded)."""
        return self.rows | self.folded

    def limits(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row (lower, upper) bounds on the true counts, each (K,), for the listed values
        ``d`` (K,): [0, bound] on absent rows, [d, d + slack] elsewhere (d itself on exact
        rows).  The same with label sums c for the lower end gives their box (cap the upper
        end at the count's)."""
        d = np.asarray(d, dtype=np.float64)
        return np.where(self.rows, 0.0, d), np.where(self.rows, self.bound, d + self.slack)


def apply_suppression(data, thresholds: Mapping) -> object:
    """A release of ``data`` (an AggregatedData) that leaves out small rows.

    ``thresholds``: {table (index, or tuple of feature indices / names): k}.  A row of a
    listed table is suppressed iff its *released* count is ≤ k: ``data.d``, the noisy count
    of a noisy release (never its true count, ``data.true_d``: deciding on the truth would
    make a row's presence depend on one record, deterministically, outside the noise's
    guarantee; deciding on the noisy value is post-processing, covered by it).  A
    suppressed row's released count and label sum become 0 and it is marked in the
    result's ``suppression``.  Returns a new AggregatedData (``data`` is unchanged).

    On a noisy release the true count of an absent row is ≤ k plus that row's noise; the
    trainer's box keeps [0, k] (the box of the released value), an approximation of the
    order of the noise's sd on those rows.
    """
    lay = data.layout
    released = data.d
    rows = np.zeros(lay.K, dtype=bool)
    bound = np.zeros(lay.K)
    declared: dict[int, float] = {}
    for key, k in thresholds.items():
        ti = int(key) if isinstance(key, int | np.integer) else lay.table_index(tuple(key))
        if not 1 <= ti < lay.n_tables or not lay.tables[ti]:
            raise AggMRFError(f"table index {ti} is not a released table.")
        if not np.isfinite(k) or k < 0:
            raise AggMRFError(f"suppression threshold must be a number ≥ 0; got {k!r}.")
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        hit = released[sl] <= k
        rows[sl] = hit
        bound[sl] = np.where(hit, float(k), 0.0)
        declared[ti] = float(k)
    d, c = data.d.copy(), data.c.copy()
    d[rows] = 0.0
    c[rows] = 0.0
    return replace(
        data, d=d, c=c, meta=dict(data.meta), suppression=Suppression(rows, bound, declared)
    )


def without_suppression(data) -> object:
    """The same release read naively: absent rows are true zeros ("absent = 0")."""
    return replace(data, meta=dict(data.meta), suppression=None)


def suppressed_per_table(data) -> dict[str, dict]:
    """{table name: {"threshold": k, "suppressed": rows absent, "rows": table rows}} for each
    table with a declared threshold (empty without suppression)."""
    box = getattr(data, "suppression", None)
    if box is None:
        return {}
    lay = data.layout
    out = {}
    for ti, k in sorted(box.thresholds.items()):
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        out[lay.table_name(lay.tables[ti])] = {
            "threshold": float(k),
            "suppressed": int(box.rows[sl].sum()),
            "rows": int(lay.table_sizes[ti]),
        }
    return out


class DualStep(NamedTuple):
    """The PCD step that :func:`box_targets` makes proximal on folded rows.

    mu, theta: the current parameters (K,); lam_mu, lam_theta: 2λ_μ, 2λ_θ per coordinate
    (0 where unpenalised), (K,); step_mu, step_theta: α_μ, α_θ; floor: s, the
    preconditioners' floor; h_plain: the common preconditioner (≥ s) without
    preconditioning, None with it (h_μ = max(d̂ + 2λ_μ, s), h_θ = max(ĉ_model + 2λ_θ, s), as
    in ``pcd.pcd_update``).
    """

    mu: np.ndarray
    theta: np.ndarray
    lam_mu: np.ndarray
    lam_theta: np.ndarray
    step_mu: float
    step_theta: float
    floor: float
    h_plain: float | None = None

    def shifted(self, x: np.ndarray, rows: np.ndarray, theta: bool) -> np.ndarray:
        """x + 2λw − w·h/α on ``rows`` (w = μ or θ): the value that, as target, makes the
        step land on w = 0 exactly (x: d̂ or ĉ_model on those rows)."""
        w = (self.theta if theta else self.mu)[rows]
        lam = (self.lam_theta if theta else self.lam_mu)[rows]
        alpha = self.step_theta if theta else self.step_mu
        h = np.maximum(x + lam, self.floor) if self.h_plain is None else self.h_plain
        return x + lam * w - w * h / alpha


class FoldedBounds(NamedTuple):
    """The boxes of the folded rows (listed rows with slack), each array (F,) over ``rows``.

    rows: int64, the folded rows (``np.flatnonzero(box.slack)``); d_lo ≤ d ≤ d_hi and
    c_lo ≤ c ≤ c_hi (c_hi ≤ d_hi, c_lo ≤ c_hi): :func:`folded_bounds`.
    """

    rows: np.ndarray
    d_lo: np.ndarray
    d_hi: np.ndarray
    c_lo: np.ndarray
    c_hi: np.ndarray


def folded_bounds(
    box: Suppression,
    d: np.ndarray,
    c: np.ndarray,
    sd: np.ndarray | None = None,
    z: float = NOISE_Z,
) -> FoldedBounds:
    """The folded rows' boxes around their listed values ``d``, ``c`` (K,): with w = z·sd
    (0 without ``sd``, the per-row noise sd (K,) of :func:`row_noise_sd`) and s the slack,
    d_lo = max(d − w, 0), d_hi = d + w + s, c_hi = min(c + w + s, d_hi),
    c_lo = min(max(c − w, 0), c_hi).  See the module docstring ("Noise")."""
    f = np.flatnonzero(box.slack)
    b_d = np.asarray(d, dtype=np.float64)[f]
    b_c = np.asarray(c, dtype=np.float64)[f]
    w = 0.0 if sd is None else float(z) * np.asarray(sd, dtype=np.float64)[f]
    s = box.slack[f]
    d_lo = np.maximum(b_d - w, 0.0)
    d_hi = b_d + w + s
    c_hi = np.minimum(b_c + w + s, d_hi)
    c_lo = np.minimum(np.maximum(b_c - w, 0.0), c_hi)
    return FoldedBounds(f, d_lo, d_hi, c_lo, c_hi)


def box_targets(
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    d: np.ndarray,
    c: np.ndarray,
    box: Suppression,
    ratio: Callable[[np.ndarray], np.ndarray] | None = None,
    bounds: FoldedBounds | None = None,
    step: DualStep | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The PCD targets (d_t, c_t), each (K,), with boxed rows as box constraints.

    d_hat, c_hat: the model's scaled statistics d̂, ĉ; d, c: the targets of released rows
    (returned unchanged on exact rows); box: the suppression.  ĉ_model = ratio(d_t)·ĉ
    (``ratio``: the rescaled gradient's coordinate-wise ratio as a function of the count
    target, e.g. ``lambda t: mrf.rescaling_ratio(d_hat, t, pen_mu, gradient)``) or ĉ when
    ``ratio`` is None (the true gradient).

    - absent rows: d_t = clip(d̂, 0, bound) and c_t = clip(ĉ_model, 0, d_t);
    - folded rows (listed, ``box.slack`` > 0), in their boxes ``bounds`` (default
      ``folded_bounds(box, d, c)``: around the targets themselves, no noise):
      d_t = clip(x, d_lo, d_hi) and c_t = clip(y, min(c_lo, u), u) with u = min(c_hi, d_t),
      where x = d̂ and y = ĉ_model without ``step``, and with it the proximal form
      x = d̂ + 2λ_μ μ − μ·h_μ/α_μ, y = ĉ_model + 2λ_θ θ − θ·h_θ/α_θ (:class:`DualStep`):
      the step is then the proximal gradient step of the box's dual term (piecewise linear
      in μ with its kink at 0), landing on μ = 0 when that is inside the box and using the
      bound itself as target otherwise.  Clipping d̂ alone is biased under Monte-Carlo
      noise: near an active bound E[(d̂ − bound)⁺] > 0 pushes μ past the optimum (a folded
      row's bound is often within the noise of d̂: one missing cell is k records); the
      proximal form's target is the bound once μ ≠ 0, so the gradient stays unbiased.

    Without folded rows the result is bit for bit that of the absent rows alone.  Pure: new
    arrays, inputs untouched.
    """
    r = box.rows
    d_t = np.array(d, dtype=np.float64, copy=True)
    c_t = np.array(c, dtype=np.float64, copy=True)
    d_t[r] = np.clip(d_hat[r], 0.0, box.bound[r])
    fb = None
    if bounds is not None or box.slack.any():
        fb = folded_bounds(box, d, c) if bounds is None else bounds
        f = fb.rows
        x = d_hat[f] if step is None else step.shifted(d_hat[f], f, theta=False)
        d_t[f] = np.clip(x, fb.d_lo, fb.d_hi)
    c_model = c_hat if ratio is None else ratio(d_t) * c_hat
    c_t[r] = np.clip(c_model[r], 0.0, d_t[r])
    if fb is not None:
        up = np.minimum(fb.c_hi, d_t[f])
        y = c_model[f] if step is None else step.shifted(c_model[f], f, theta=True)
        c_t[f] = np.clip(y, np.minimum(fb.c_lo, up), up)
    return d_t, c_t


def summed_cells(layout, box: Suppression | None) -> np.ndarray:
    """float64 (K,): the noisy source rows each listed row sums, s_r = S_r − m_r (S_r:
    :func:`source_cells`; m_r = slack / k in a table with threshold k), 0 on absent rows;
    all 1 on listed rows without folded values (and without ``box``)."""
    if box is None:
        return np.ones(layout.K)
    s = source_cells(layout, box.source_values).astype(np.float64)
    for ti, k in box.thresholds.items():
        if k > 0:
            sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
            s[sl] -= np.rint(box.slack[sl] / float(k))
    return np.where(box.rows, 0.0, s)


def row_noise_sd(layout, box: Suppression | None, noise) -> np.ndarray | None:
    """float64 (K,): σ·√s_r on the listed rows that sum s_r > 1 noisy source rows (σ: the
    ``noise`` mechanism's sd; :func:`summed_cells`), 0 elsewhere; None without noise or
    without such rows (then nothing differs from a release of single source rows)."""
    if noise is None or box is None or not box.source_values:
        return None
    s = summed_cells(layout, box)
    many = s > 1
    if not many.any():
        return None
    return np.where(many, float(noise.std) * np.sqrt(np.maximum(s, 1.0)), 0.0)


def source_cells(layout, source_values: Mapping[int, np.ndarray]) -> np.ndarray:
    """int64 (K,): how many source cells each row of ``layout`` sums, the product over its
    features of the source values of its modality (``source_values``: {feature index:
    int (M_f,)}, features not listed count 1 per modality); 1 on the intercept."""
    out = np.ones(layout.K, dtype=np.int64)
    if not source_values:
        return out
    for ti, t in enumerate(layout.tables):
        hit = [j for j, f in enumerate(t) if f in source_values]
        if not hit:
            continue
        codes = layout.row_codes(ti)
        prod = np.ones(len(codes), dtype=np.int64)
        for j in hit:
            prod *= np.asarray(source_values[t[j]], dtype=np.int64)[codes[:, j]]
        out[layout.offsets[ti] : layout.offsets[ti + 1]] = prod
    return out


def suppression_from_presence(
    layout,
    present: np.ndarray,
    thresholds: Mapping[int, float],
    cells: Mapping[int, int] | None = None,
    missing: np.ndarray | None = None,
    source_values: Mapping[int, np.ndarray] | None = None,
) -> Suppression | None:
    """The suppression a release declares: the rows of each table ti of ``thresholds``
    ({table index: k}) that its file does not list (``present``: bool (K,), False there);
    ``cells``: {table index: source cells left out} where declared (see :class:`Suppression`).
    None when no table declares a threshold.

    Folded values: ``source_values`` ({feature index: int (M_f,)}, the source values behind
    each modality) makes an absent row's bound k·S_r (S_r: :func:`source_cells`);
    ``missing`` (int (K,)) gives each listed row's suppressed source cells m_r, its slack
    k·m_r.  Without ``missing`` a listed row of S_r > 1 source cells gets the upper bound
    m_r ≤ S_r − 1 (one of its cells at least was listed).  Neither: the boxes of absent
    rows only, [0, k]."""
    if not thresholds:
        return None
    rows = np.zeros(layout.K, dtype=bool)
    bound = np.zeros(layout.K)
    slack = np.zeros(layout.K)
    src = source_cells(layout, source_values or {})
    if missing is not None:
        missing = np.asarray(missing, dtype=np.int64)
        if missing.shape != (layout.K,) or np.any(missing < 0):
            raise AggMRFError(f"missing must be integers ≥ 0 of shape ({layout.K},).")
    for ti, k in thresholds.items():
        sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
        rows[sl] = ~np.asarray(present[sl], dtype=bool)
        bound[sl] = float(k) * src[sl] if source_values else float(k)
        m = src[sl] - 1 if missing is None else missing[sl]
        slack[sl] = float(k) * m
    return Suppression(
        rows,
        bound,
        {int(t): float(k) for t, k in thresholds.items()},
        {int(t): int(v) for t, v in (cells or {}).items()},
        slack,
        {int(f): np.asarray(v, dtype=np.int64) for f, v in (source_values or {}).items()},
    )


def suppress_pair_tables(data, k: float) -> object:
    """:func:`apply_suppression` with threshold ``k`` on every pair table of ``data`` (the
    AdKDD'21 rule: pair cells with count ≤ k are dropped, singles are complete; decided
    on the released counts, noisy ones included).
    ``data`` unchanged (the same object) when its layout has no pair table."""
    lay = data.layout
    pairs = {ti: float(k) for ti, t in enumerate(lay.tables) if len(t) == 2}
    return apply_suppression(data, pairs) if pairs else data


def _check_d_hat(data, d_hat) -> np.ndarray:
    d_hat = np.asarray(d_hat, dtype=np.float64)
    if d_hat.shape != (data.layout.K,):
        raise AggMRFError(f"d_hat must have shape ({data.layout.K},); got {d_hat.shape}.")
    if not np.all(np.isfinite(d_hat)):
        raise AggMRFError("d_hat has non-finite values; the model's counts must be finite.")
    return d_hat


def suppressed_cells(data, d_hat: np.ndarray) -> pd.DataFrame:
    """One row per suppressed row of ``data``: the model's d̂ against its box 0 ≤ d ≤ k.

    d_hat: float64 (K,), the model's expected counts (records; e.g. ``PCDTrainer.d_hat``,
    the chain's n/n'-scaled count, which the box targets compare with k, or
    :func:`model_counts`).  Columns: table (name), row (index into the layout's K rows),
    k (the table's threshold, records), d_hat (records), ratio = d̂/k (0 where k = 0),
    outside (d̂ > k or d̂ < 0: the box constraint is active and pushes back).  Ordered by
    table, then row.  Empty (same columns) without suppression.
    """
    cols = {"table": [], "row": [], "k": [], "d_hat": [], "ratio": [], "outside": []}
    box = getattr(data, "suppression", None)
    if box is None or not box.rows.any():
        return pd.DataFrame(cols).astype(
            {"row": np.int64, "k": float, "d_hat": float, "ratio": float, "outside": bool}
        )
    d_hat = _check_d_hat(data, d_hat)
    lay = data.layout
    rows = np.flatnonzero(box.rows)
    table_of = lay.row_table()[rows]
    names = np.asarray(lay.table_names, dtype=object)
    k = box.bound[rows]
    dh = d_hat[rows]
    ratio = np.divide(dh, k, out=np.zeros_like(dh), where=k > 0)
    return pd.DataFrame(
        {
            "table": names[table_of],
            "row": rows.astype(np.int64),
            "k": k,
            "d_hat": dh,
            "ratio": ratio,
            "outside": (dh > k) | (dh < 0),
        }
    )


def suppression_check(data, d_hat: np.ndarray) -> dict | None:
    """The model's d̂ on the suppressed rows, per table with a declared threshold and in total.

    Returns None without suppression, else {"suppressed_rows", "rows", "outside",
    "max_ratio", "tables": {name: {"threshold", "suppressed", "rows", "outside",
    "max_d_hat", "mean_d_hat"}}} where outside counts suppressed rows with d̂ outside
    [0, k] and max_ratio is the largest d̂/k (records / records).  d_hat: float64 (K,).
    """
    per = suppressed_per_table(data)
    if not per:
        return None
    cells = suppressed_cells(data, d_hat)
    by = cells.groupby("table", sort=False)
    out_tables = {}
    for name, v in per.items():
        one = dict(v)
        if name in by.groups:
            g = by.get_group(name)
            one.update(
                outside=int(g["outside"].sum()),
                max_d_hat=float(g["d_hat"].max()),
                mean_d_hat=float(g["d_hat"].mean()),
            )
        else:
            one.update(outside=0, max_d_hat=0.0, mean_d_hat=0.0)
        out_tables[name] = one
    return {
        "suppressed_rows": int(len(cells)),
        "rows": int(sum(v["rows"] for v in per.values())),
        "outside": int(cells["outside"].sum()),
        "max_ratio": float(cells["ratio"].max()) if len(cells) else 0.0,
        "tables": out_tables,
    }


def model_counts(
    chain, mu: np.ndarray, theta: np.ndarray, n: int, sweeps: int = 20, burn_in: int = 0
) -> np.ndarray:
    """The model's expected counts d̂ (K,) in records: the mean over ``sweeps`` sweeps at
    (μ, θ) (each (K,)) of n/n' · (the chain's row counts), after ``burn_in`` sweeps, on a
    copy of ``chain`` (any :class:`~aggmrf_explore.kernels.Chain` with n' samples; the
    caller's chain is untouched).  Start from a chain already near the model (e.g.
    ``PCDTrainer.chain``), or burn it in."""
    if int(sweeps) < 1 or int(burn_in) < 0:
        raise AggMRFError(f"sweeps must be ≥ 1 and burn_in ≥ 0; got {sweeps!r}, {burn_in!r}.")
    ch = copy.deepcopy(chain)
    for _ in range(int(burn_in)):
        ch.sweep(mu, theta, statistics=False)
    total = None
    for _ in range(int(sweeps)):
        ch.sweep(mu, theta)
        d_raw, _ = ch.statistics(theta)
        total = d_raw.astype(np.float64) if total is None else total + d_raw
    return total * (float(n) / ch.n_samples / int(sweeps))


def split_suppression(box: Suppression | None, fraction: float) -> Suppression | None:
    """The suppression of one part of a release thinned at ``fraction`` (each record kept
    with probability f; ``selection.releases.split_release``).

    The suppressed rows are the same: a row absent from the full release had true count
    D ≤ k, and its part holds D_A ≤ D ≤ k records.  The bound becomes f·k: the part's model
    fits expectations, E[D_A | D] = f·D ≤ f·k, and n_A·p ≤ f·k ⇔ n·p ≤ k, so the part's box
    constrains the model's cell probability p exactly as the full release's box does (as
    its released rows carry ≈ f·d).  The sure bound k would allow the part's model twice
    the full release's mass in suppressed cells (f = ½), a looser problem than the one
    whose λθ is being chosen.  Thresholds and the folded rows' slack scale the same way;
    None stays None.
    """
    if box is None:
        return None
    if not 0 < fraction <= 1:
        raise AggMRFError(f"fraction must be in (0, 1]; got {fraction!r}.")
    f = float(fraction)
    return Suppression(
        box.rows.copy(),
        box.bound * f,
        {t: k * f for t, k in box.thresholds.items()},
        dict(box.cells),
        box.slack * f,
        dict(box.source_values),
    )


def sub_suppression(box: Suppression | None, layout, keep: Sequence[int]) -> Suppression | None:
    """The suppression of the sub-release of ``layout``'s tables ``keep`` (sorted table
    indices; the intercept row first when the layout has one), as ``selection.releases
    .sub_release`` builds it: rows and bounds restricted, thresholds renumbered.  None when
    no kept table declares a threshold."""
    if box is None:
        return None
    parts = [np.arange(1)] if layout.intercept else []
    thresholds, cells = {}, {}
    first = 1 if layout.intercept else 0
    for j, t in enumerate(keep):
        parts.append(np.arange(layout.offsets[t], layout.offsets[t + 1]))
        if t in box.thresholds:
            thresholds[first + j] = box.thresholds[t]
            if t in box.cells:
                cells[first + j] = box.cells[t]
    if not thresholds:
        return None
    rows = np.concatenate(parts)
    return Suppression(
        box.rows[rows],
        box.bound[rows],
        thresholds,
        cells,
        box.slack[rows],
        dict(box.source_values),
    )
