"""Suppressed cells: rows a release leaves out because their true count was small.

A release may declare a *suppression threshold* k per table: a row of that table is absent
from the files if and only if its true count was ≤ k (the AdKDD'21 challenge drops every
pair cell with count ≤ 10; census tables with k-anonymity thresholds do the same).  An
absent row is not a zero: it says 0 ≤ d ≤ k, and, since a label sum counts a subset of the
row's records, 0 ≤ c ≤ d.

Maximum entropy with these inequality constraints (instead of d = 0) gives, per suppressed
row r, a multiplier μ_r ≤ 0 that is active only when the model puts more than k records in
the row (complementary slackness), and no constraint on θ_r beyond E[C_r] ≤ k (implied by
E[D_r] ≤ k, so θ_r = 0 at the unpenalised optimum).  The PCD trainer does the same with
moving targets (:func:`box_targets`): on a suppressed row the count target is clip(d̂, 0, k)
— no gradient while the model's expectation is inside the box, a push to the nearest bound
outside — and the label-sum target is clip(ĉ_model, 0, d_target), where ĉ_model is the
label sum the θ-gradient compares (ĉ for the true gradient, (d_target / d̂)·ĉ for the
rescaled one).  ``exact.fit_exact(..., box=True)`` is the exact counterpart for small state spaces
(L-BFGS-B on the dual, bounds μ_r ≤ 0 and θ_r ≤ 0 on the suppressed rows).

:class:`Suppression` is what :class:`~aggmrf_explore.tables.AggregatedData` carries
(``data.suppression``; None when nothing is suppressed); :func:`apply_suppression` makes a
suppressed release from exact (or noisy) aggregates, as a data owner would.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..errors import AggMRFError

__all__ = [
    "Suppression",
    "apply_suppression",
    "suppress_pair_tables",
    "box_targets",
    "suppressed_per_table",
    "suppressed_cells",
    "suppression_check",
    "model_counts",
    "split_suppression",
    "sub_suppression",
    "without_suppression",
    "suppression_from_presence",
]


@dataclass(frozen=True)
class Suppression:
    """Which rows of a release are suppressed, and the bound on their true counts.

    rows : bool (K,), True on rows absent from the release (never on the intercept row).
    bound : float64 (K,), the table's threshold k on suppressed rows (0 elsewhere): the true
        count of a suppressed row lies in [0, k].
    thresholds : {table index: k} as declared by the release (tables without a threshold
        are complete: an absent row of such a table is a true zero).
    cells : {table index: source cells left out}, when the source had finer cells than the
        release's rows (values folded into "(other)": a folded row holds the listed cells'
        sum and misses up to k per folded cell left out); default: the absent rows.
    """

    rows: np.ndarray
    bound: np.ndarray
    thresholds: dict[int, float] = field(default_factory=dict)
    cells: dict[int, int] = field(default_factory=dict)

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
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "bound", np.where(rows, bound, 0.0))

    @property
    def n_rows(self) -> int:
        """Number of suppressed rows."""
        return int(self.rows.sum())


def apply_suppression(data, thresholds: Mapping) -> object:
    """A release of ``data`` (an AggregatedData) that leaves out small rows.

    ``thresholds``: {table (index, or tuple of feature indices / names): k}.  A row of a
    listed table is suppressed iff its *true* count is ≤ k (``data.true_d`` for a noisy
    release, else ``data.d``); its released count and label sum become 0 and it is marked
    in the result's ``suppression``.  Returns a new AggregatedData (``data`` is unchanged).
    """
    lay = data.layout
    truth = data.true_d if data.true_d is not None else data.d
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
        hit = truth[sl] <= k
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


def box_targets(
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    d: np.ndarray,
    c: np.ndarray,
    box: Suppression,
    ratio: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The PCD targets (d_t, c_t), each (K,), with suppressed rows as box constraints.

    d_hat, c_hat: the model's scaled statistics d̂, ĉ; d, c: the targets of released rows
    (returned unchanged there); box: the suppression.  On suppressed rows
    d_t = clip(d̂, 0, k) and c_t = clip(ĉ_model, 0, d_t), where ĉ_model = ratio(d_t)·ĉ
    (``ratio``: the rescaled gradient's coordinate-wise ratio as a function of the count
    target, e.g. ``lambda t: mrf.rescaling_ratio(d_hat, t, pen_mu, gradient)``) or ĉ when
    ``ratio`` is None (the true gradient).  Pure: new arrays, inputs untouched.
    """
    r = box.rows
    d_t = np.array(d, dtype=np.float64, copy=True)
    c_t = np.array(c, dtype=np.float64, copy=True)
    d_t[r] = np.clip(d_hat[r], 0.0, box.bound[r])
    c_model = c_hat if ratio is None else ratio(d_t) * c_hat
    c_t[r] = np.clip(c_model[r], 0.0, d_t[r])
    return d_t, c_t


def suppression_from_presence(
    layout,
    present: np.ndarray,
    thresholds: Mapping[int, float],
    cells: Mapping[int, int] | None = None,
) -> Suppression | None:
    """The suppression a release declares: the rows of each table ti of ``thresholds``
    ({table index: k}) that its file does not list (``present``: bool (K,), False there);
    ``cells``: {table index: source cells left out} where declared (see :class:`Suppression`).
    None when no table declares a threshold."""
    if not thresholds:
        return None
    rows = np.zeros(layout.K, dtype=bool)
    bound = np.zeros(layout.K)
    for ti, k in thresholds.items():
        sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
        rows[sl] = ~np.asarray(present[sl], dtype=bool)
        bound[sl] = float(k)
    return Suppression(
        rows,
        bound,
        {int(t): float(k) for t, k in thresholds.items()},
        {int(t): int(v) for t, v in (cells or {}).items()},
    )


def suppress_pair_tables(data, k: float) -> object:
    """:func:`apply_suppression` with threshold ``k`` on every pair table of ``data`` (the
    AdKDD'21 rule: pair cells with true count ≤ k are dropped, singles are complete).
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
    whose λθ is being chosen.  Thresholds scale the same way; None stays None.
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
    return Suppression(box.rows[rows], box.bound[rows], thresholds, cells)
