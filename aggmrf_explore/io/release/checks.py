"""Reading a release, step 5: the raw tables checked against the schema and each other
(modalities, values, suppression, totals, marginals), then assembled into
:class:`~aggmrf_explore.tables.AggregatedData` (:func:`assemble`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import privacy
from ...encoding import Schema
from ...errors import AggMRFError
from ...privacy.tails import FALSE_ALARM, noise_tail
from ...tables import AggregatedData, TableLayout
from ...tables.budget import Budget, check_size
from ...tables.suppression import Suppression, source_cells, suppression_from_presence
from ..extensions import (
    SUPPRESSED_CELLS,
    declared_source_values,
    noise_scale,
    table_suppressed_cells,
    table_thresholds,
)
from ..manifest import (
    RELEASE_FILE,
)
from .common import (
    COUNT,
    LABEL_SUM,
    MAX_LISTED,
    RawTable,
    Release,
    ReleaseWarning,
    mechanism_from_meta,
)


# ====================================================================== reading: assembly
@dataclass
class _Grid:
    """The release's values on its layout (K rows), and where each row came from.

    ``d`` / ``c``: counts and label sums (K,), 0 where no file row; ``present``: a file
    row gave the value; ``line_of``: its file line; ``tables[ti]``: the raw table of
    layout table ti; ``mechanism``: the declared noise (None without).
    """

    layout: TableLayout
    d: np.ndarray
    c: np.ndarray
    present: np.ndarray
    line_of: np.ndarray
    tables: dict[int, RawTable]
    mechanism: privacy.Mechanism | None
    suppression: Suppression | None = None  # rows absent from tables with a declared threshold
    noise_scale: float = 1.0  # rows that sum several noisy source rows (.extensions.noise_scale)
    file_rows: dict[int, np.ndarray] = field(default_factory=dict)  # layout row of each file row

    @property
    def noisy(self) -> bool:
        return self.mechanism is not None

    def tail(self, m: float, checks: int) -> float:
        """How far the declared noise can move a sum of ``m`` released values (counts), in
        one of ``checks`` comparisons: the tail bound at probability FALSE_ALARM / checks
        (:func:`~aggmrf_explore.privacy.tails.noise_tail`), rows that sum several noisy
        source rows (a declared ``noise_scale`` s: s² of them) counted as such; 0 without
        noise.  An honest release fails a family of checks with probability ≤ FALSE_ALARM."""
        if not self.noisy:
            return 0.0
        q = FALSE_ALARM / max(int(checks), 1)
        return noise_tail(self.mechanism, q, float(m) * self.noise_scale**2)

    def suppressed_in(self, ti: int) -> float:
        """Table ti's declared suppression threshold k, or 0 when it has none."""
        return float(self.suppression.thresholds.get(ti, 0.0)) if self.suppression else 0.0

    def missing_mask(self) -> np.ndarray:
        """float (K,): 1 on rows no file lists, 0 elsewhere."""
        return (~self.present).astype(np.float64)

    def shortfall(self, ti: int) -> float:
        """k × the source cells table ti left out beyond its absent rows (folded values)."""
        if not self.suppression or ti not in self.suppression.cells:
            return 0.0
        extra = self.suppression.cells[ti] - int(self.missing(ti).sum())
        return self.suppressed_in(ti) * max(extra, 0)

    def shortfall_total(self) -> float:
        """The most a suppressed table's total may fall short of the records' (k per absent
        row and per missing source cell), over the release's tables; 0 without suppression."""
        if self.suppression is None:
            return 0.0
        return max(
            (
                self.suppressed_in(ti) * float(self.missing(ti).sum()) + self.shortfall(ti)
                for ti in self.suppression.thresholds
            ),
            default=0.0,
        )

    def missing(self, ti: int) -> np.ndarray:
        """bool (table_sizes[ti],): the table's rows its file does not list."""
        sl = slice(self.layout.offsets[ti], self.layout.offsets[ti + 1])
        return ~self.present[sl]

    def row_desc(self, ti: int, r: int) -> str:
        """Where row r (of layout table ti) comes from, for messages."""
        lay, t = self.layout, self.tables[ti]
        code = lay.row_codes(ti)[r - lay.offsets[ti]]
        vals = ", ".join(
            f"{lay.feature_names[f]}={lay.modality_labels[f][k]!r}"
            for f, k in zip(lay.tables[ti], code, strict=True)
        )
        line = f"line {self.line_of[r]}" if self.present[r] else "missing row"
        return f"table {t.name!r} ({t.where}), {line} ({vals})"


@dataclass
class _Totals:
    """Per released table (T,): total count and label sum; the reference totals."""

    d: np.ndarray
    c: np.ndarray
    ref_d: float
    ref_c: float


def _flag(msgs: list[str], header: str, to: list[str]) -> None:
    """Append one problem line (header + the first few messages) to ``to`` if any."""
    if msgs:
        more = f" (and {len(msgs) - MAX_LISTED} more)" if len(msgs) > MAX_LISTED else ""
        to.append(header + "; ".join(msgs[:MAX_LISTED]) + more)


def _release_schema(raw: list[RawTable], meta: dict | None) -> tuple[Schema, bool]:
    """(schema, declared): release.json's ``features``, else inferred from the tables.

    Inferred modalities are the labels in order of first appearance.
    """
    if meta is not None and meta.get("features"):
        return Schema.from_dict(meta), True
    names: list[str] = []
    mods: dict[str, list[str]] = {}
    for t in raw:
        for f in t.features:
            if f not in mods:
                names.append(f)
                mods[f] = []
            seen = set(mods[f])
            for v in pd.unique(t.frame[f].to_numpy(dtype=object)):
                if v not in seen:
                    mods[f].append(str(v))
                    seen.add(v)
    schema = Schema(names, [mods[f] for f in names])
    if meta is not None:
        schema.label = meta.get("label")
        schema.positive_label = meta.get("positive_label")
        schema.classes = meta.get("classes")
    return schema, False


def _table_codes(
    raw: list[RawTable], schema: Schema, declared: bool
) -> list[tuple[RawTable, list[int], np.ndarray]]:
    """Check each table against the schema; (table, feature indices, codes (n_rows, k)).

    Errors: a feature the schema does not declare, two tables over the same features, a
    label that is not a modality of its feature.
    """
    fidx = {f: i for i, f in enumerate(schema.feature_names)}
    lab_idx = [{m: k for k, m in enumerate(mods)} for mods in schema.modality_labels]
    seen_tables: dict[tuple[int, ...], str] = {}
    specs = []
    for t in raw:
        unknown = [f for f in t.features if f not in fidx]
        if unknown:
            raise AggMRFError(
                f"table {t.name!r} ({t.where}) has the feature column(s) {unknown}, which "
                f"{RELEASE_FILE} does not declare; declared features: {schema.feature_names}."
            )
        feats = [fidx[f] for f in t.features]
        key = tuple(sorted(feats))
        if key in seen_tables:
            raise AggMRFError(
                f"table {t.name!r} ({t.where}) is over the same features as table "
                f"{seen_tables[key]!r}; each table may appear once."
            )
        seen_tables[key] = t.name
        codes = np.empty((len(t.frame), len(feats)), dtype=np.int64)
        for j, f in enumerate(feats):
            col = t.frame[t.features[j]].to_numpy(dtype=object)
            idx = np.asarray([lab_idx[f].get(v, -1) for v in col], dtype=np.int64)
            if np.any(idx < 0):
                i = int(np.flatnonzero(idx < 0)[0])
                mods = schema.modality_labels[f]
                raise AggMRFError(
                    f"table {t.name!r} ({t.where}), line {t.lines[i]}: {t.features[j]!r} = "
                    f"{col[i]!r} is not a modality of {t.features[j]!r}"
                    + (f" declared in {RELEASE_FILE}" if declared else "")
                    + f"; its modalities are {mods[:20]}{' …' if len(mods) > 20 else ''}."
                )
            codes[:, j] = idx
        specs.append((t, feats, codes))
    return specs


def _fill(
    layout: TableLayout,
    specs: list[tuple[RawTable, list[int], np.ndarray]],
    mechanism: privacy.Mechanism | None,
) -> _Grid:
    """Place each table's rows on the layout (rows absent from the files stay 0)."""
    K = layout.K
    grid = _Grid(
        layout,
        np.zeros(K),
        np.zeros(K),
        np.zeros(K, dtype=bool),
        np.zeros(K, dtype=np.int64),
        {},
        mechanism,
    )
    for ti, (t, feats, codes) in enumerate(specs, start=1):
        # layout sorts a table's features; compute rows with the layout's strides
        strides = layout.strides[ti]
        rows = layout.offsets[ti] + codes @ strides[np.asarray(feats)]
        grid.d[rows] = t.frame[COUNT].to_numpy()
        grid.c[rows] = t.frame[LABEL_SUM].to_numpy()
        grid.present[rows] = True
        grid.line_of[rows] = t.lines
        grid.tables[ti] = t
        grid.file_rows[ti] = rows
    return grid


def _declared_suppression(
    grid: _Grid,
    thresholds: dict[str, float],
    cells: dict[str, int] | None = None,
    source_values: dict[str, dict[str, int]] | None = None,
) -> Suppression | None:
    """Rows absent from tables that declare ``suppression`` in release.json (by table name);
    with folded values (``source_values``, the files' ``suppressed_cells`` columns:
    :mod:`..extensions`) the boxes of absent rows k·S_r and the slack of listed rows k·m_r."""
    lay = grid.layout
    by_name = {t.name: ti for ti, t in grid.tables.items()}
    unknown = sorted(set(thresholds) - set(by_name))
    if unknown:
        raise AggMRFError(
            f"{RELEASE_FILE} declares a suppression threshold for {unknown[0]!r}, which is not "
            f"one of the release's tables."
        )
    values = _source_values(lay, source_values or {})
    by_index = {by_name[name]: k for name, k in thresholds.items()}
    with_column = [ti for ti, t in grid.tables.items() if SUPPRESSED_CELLS in t.frame.columns]
    missing = None
    if values or with_column:
        src = source_cells(lay, values)
        missing = np.where(grid.present, src - 1, 0)  # m_r ≤ S_r − 1 where undeclared
        for ti in with_column:
            t = grid.tables[ti]
            rows = grid.file_rows[ti]
            m = t.frame[SUPPRESSED_CELLS].to_numpy(dtype=np.int64)
            over = np.flatnonzero((m > src[rows] - 1) | ((m > 0) & (ti not in by_index)))
            if over.size:
                i = int(over[0])
                why = (
                    "the table declares no suppression threshold"
                    if ti not in by_index
                    else f"the row sums {src[rows[i]]} source cell(s) ({RELEASE_FILE} "
                    "'source_values'), at least one of them listed"
                )
                raise AggMRFError(
                    f"table {t.name!r} ({t.where}), line {t.lines[i]}: {SUPPRESSED_CELLS} = "
                    f"{m[i]} is impossible: {why}."
                )
            missing[rows] = m
    return suppression_from_presence(
        lay,
        grid.present,
        by_index,
        {by_name[name]: v for name, v in (cells or {}).items() if name in by_name},
        missing,
        values,
    )


def _source_values(layout: TableLayout, declared: dict[str, dict[str, int]]) -> dict:
    """release.json's ``source_values`` as {feature index: int64 (M_f,)} (1 where not
    declared); a feature or modality the release does not have is an error."""
    out = {}
    for name, mods in declared.items():
        if name not in layout.feature_names:
            raise AggMRFError(
                f"{RELEASE_FILE} 'source_values' names the feature {name[:40]!r}, which the "
                "release does not have."
            )
        f = layout.feature_names.index(name)
        labels = {m: k for k, m in enumerate(layout.modality_labels[f])}
        v = np.ones(int(layout.n_modalities[f]), dtype=np.int64)
        for m, count in mods.items():
            if m not in labels:
                raise AggMRFError(
                    f"{RELEASE_FILE} 'source_values' of {name[:40]!r} names the modality "
                    f"{m[:40]!r}, which the feature does not have."
                )
            v[labels[m]] = count
        if v.max() > 1:
            out[f] = v
    return out


def _check_same_modalities(grid: _Grid) -> None:
    """A modality with a (significant) count in one table must have rows in every other."""
    lay, noisy = grid.layout, grid.noisy
    checks = int(lay.K)
    for f in range(lay.n_features):
        holding = [ti for ti in range(1, lay.n_tables) if f in lay.tables[ti]]
        per_table = {}
        for ti in holding:
            block = _block(lay, grid.present.astype(float), ti, f)
            cnt = _block(lay, grid.d, ti, f)
            per_table[ti] = (block > 0, cnt)
        for a in holding:
            for b in holding:
                if a == b or grid.suppressed_in(b):  # a suppressed table may lack rows
                    continue
                has_a, cnt_a = per_table[a]
                has_b, _ = per_table[b]
                gap = has_a & ~has_b
                limit = grid.tail(max(lay.table_sizes[a], 1), checks) if noisy else 0
                bad = gap & (np.abs(cnt_a) > limit)
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    ta, tb = grid.tables[a], grid.tables[b]
                    raise AggMRFError(
                        f"feature {lay.feature_names[f]!r} has the modality "
                        f"{lay.modality_labels[f][k]!r} (count {cnt_a[k]:g}) in table "
                        f"{ta.name!r} ({ta.where}) but not in table {tb.name!r} ({tb.where}); "
                        "the same feature must have the same modalities in every table."
                    )


def _check_missing_rows(grid: _Grid) -> list[str]:
    """Notes: rows absent from the files of a noisy release (filled with 0)."""
    absent = ~grid.present & grid.layout.released
    if grid.suppression is not None:
        absent &= ~grid.suppression.rows  # suppressed, not missing
    missing_rows = int(absent.sum())
    if missing_rows and grid.noisy:
        return [
            f"{missing_rows} row(s) absent from the tables were filled with count 0 and label sum 0."
        ]
    return []


def _check_values(grid: _Grid, problems: list[str], notes: list[str]) -> None:
    """Row values: signs and label sum ≤ count (exact), or within the declared noise."""
    lay, d, c = grid.layout, grid.d, grid.c
    row_table = lay.row_table()
    rel = lay.released
    if not grid.noisy:
        for arr, what in ((d, COUNT), (c, LABEL_SUM)):
            neg = np.flatnonzero(rel & (arr < 0))
            _flag(
                [f"{grid.row_desc(row_table[r], r)}: {what} = {arr[r]:g}" for r in neg],
                f"negative {what}s in a release without noise (declare the noise in "
                f"{RELEASE_FILE} if the release is noisy): ",
                problems,
            )
        over = np.flatnonzero(rel & (c > d + 1e-9 * np.maximum(1.0, np.abs(d))))
        _flag(
            [
                f"{grid.row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}"
                for r in over
            ],
            f"{LABEL_SUM} larger than {COUNT} (a label sum counts the positive records of the row, "
            "so it cannot exceed the count): ",
            problems,
        )
        frac = np.flatnonzero(rel & grid.present & ((d != np.round(d)) | (c != np.round(c))))
        if frac.size:
            notes.append(
                f"{frac.size} row(s) have non-integer counts or label sums without declared noise, "
                f"first: {grid.row_desc(row_table[frac[0]], frac[0])}."
            )
    else:
        limit = grid.tail(2, int(rel.sum()))  # c − d: two independent noises
        over = np.flatnonzero(rel & (c - d > limit))
        _flag(
            [
                f"{grid.row_desc(row_table[r], r)}: {LABEL_SUM} {c[r]:g} > {COUNT} {d[r]:g}"
                for r in over
            ],
            f"{LABEL_SUM} exceeds {COUNT} by more than the declared noise explains "
            f"(by {limit:.3g}: the noise's tail at probability {FALSE_ALARM:g} over all rows): ",
            problems,
        )


def _check_suppression(grid: _Grid, problems: list[str]) -> None:
    """A table declaring ``suppression`` k leaves out exactly its rows of true count ≤ k, so
    every row it lists counts more than k: a listed count ≤ k (without noise), or below
    k − t under the declared noise (t: the noise's tail bound, ``_Grid.tail``) contradicts
    the threshold.  (A release whose suppression is decided on the noisy counts lists only
    rows whose released count is > k.)"""
    if grid.suppression is None:
        return
    lay = grid.layout
    msgs = []
    for ti, k in sorted(grid.suppression.thresholds.items()):
        start = lay.offsets[ti]
        d = grid.d[start : lay.offsets[ti + 1]]
        listed = grid.present[start : lay.offsets[ti + 1]]
        limit = k - grid.tail(1, int(lay.K)) if grid.noisy else k
        bad = np.flatnonzero(listed & ((d < limit) if grid.noisy else (d <= limit)))
        msgs += [f"{grid.row_desc(ti, start + r)}: {COUNT} {d[r]:g}, k = {k:g}" for r in bad]
    _flag(
        msgs,
        f"rows listed although their {COUNT} is within their table's suppression threshold "
        f"(release.json declares that a row is left out exactly when its count is ≤ k"
        + (", up to the noise's tail" if grid.noisy else "")
        + "; fix the threshold or the rows): ",
        problems,
    )


def _declared_number(meta: dict, path: str, value: object) -> float:
    """A number that release.json declares at ``path``, if finite (else one error naming it)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise AggMRFError(f"{RELEASE_FILE} '{path}' must be a finite number; got {value!r}.")
    return float(value)


def _check_declared(grid: _Grid, totals: _Totals, meta: dict | None, problems: list[str]) -> None:
    """release.json's own numbers against each other and the tables: ``intercept`` (count
    ≥ 0, 0 ≤ label sum ≤ count, and equal to the tables' totals) and ``n`` (a whole number
    ≥ 1 equal to the intercept's count, or the tables' total), each within what the
    declared noise explains (its tail bound; 0.5 for the rounding of an integer release).
    The intercept and n set the scale of training, so a forged one is a problem, not a note."""
    meta = meta or {}
    icpt = meta.get("intercept")
    msgs: list[str] = []
    n_tab = max(grid.layout.n_released_tables, 1)
    # the reference totals are means of the tables' totals; the intercept was derived from them
    ref_tail = grid.tail(float(grid.layout.table_sizes[1:].sum()), 8) / n_tab + 0.5
    if grid.noisy:
        slack = ref_tail
    else:
        slack = 1e-6 * max(abs(totals.ref_d), 1.0)
    count = None
    if icpt is not None:
        if not isinstance(icpt, dict) or "count" not in icpt or "label_sum" not in icpt:
            raise AggMRFError(
                f"{RELEASE_FILE} 'intercept' must be an object with 'count' and 'label_sum'; "
                f"got {icpt!r:.80}."
            )
        count = _declared_number(meta, "intercept.count", icpt["count"])
        label_sum = _declared_number(meta, "intercept.label_sum", icpt["label_sum"])
        if count < -slack:
            msgs.append(f"'intercept' count {count:g} is negative")
        if label_sum < -slack:
            msgs.append(f"'intercept' label_sum {label_sum:g} is negative")
        if label_sum > count + slack:
            msgs.append(f"'intercept' label_sum {label_sum:g} > its count {count:g}")
        ref_d = totals.ref_d if grid.noisy else float(np.median(totals.d))
        ref_c = totals.ref_c if grid.noisy else float(np.median(totals.c))
        if abs(count - ref_d) > slack + grid.shortfall_total():
            msgs.append(f"'intercept' count {count:g}, the tables count {ref_d:,.6g}")
        if abs(label_sum - ref_c) > slack + grid.shortfall_total():
            msgs.append(f"'intercept' label_sum {label_sum:g}, the tables' sum is {ref_c:,.6g}")
    n = meta.get("n")
    if n is not None:
        n_val = _declared_number(meta, "n", n)
        if n_val < 1 or n_val != round(n_val):
            msgs.append(f"'n' = {n!r} is not a whole number of records ≥ 1")
        else:
            ref = (
                count
                if count is not None
                else (totals.ref_d if grid.noisy else float(np.median(totals.d)))
            )
            if abs(n_val - max(ref, 1.0)) > slack + 0.5 + grid.shortfall_total():
                msgs.append(f"'n' = {int(n_val):,}, the tables count {ref:,.6g}")
    _flag(
        msgs,
        f"{RELEASE_FILE} declares numbers its tables contradict"
        + (" beyond what the declared noise explains" if grid.noisy else "")
        + " (they set the scale of training; fix or remove them): ",
        problems,
    )


def _totals(grid: _Grid) -> _Totals:
    """Each released table's totals and the reference: their mean (noisy) or median."""
    lay = grid.layout
    starts = lay.offsets[1:-1]
    tot_d = np.add.reduceat(grid.d, starts)
    tot_c = np.add.reduceat(grid.c, starts)
    # suppressed tables miss their small rows' records: the reference comes from the others
    full = np.asarray([not grid.suppressed_in(ti) for ti in range(1, lay.n_tables)])
    if not full.any():
        full[:] = True
    if grid.noisy:
        n_tab = int(full.sum())
        return _Totals(
            tot_d, tot_c, float(tot_d[full].sum() / n_tab), float(tot_c[full].sum() / n_tab)
        )
    return _Totals(tot_d, tot_c, float(np.median(tot_d[full])), float(np.median(tot_c[full])))


def _check_totals(grid: _Grid, totals: _Totals, tol: float | None, problems: list[str]) -> None:
    """Every table's total count and label sum agree with the reference (within the noise)."""
    lay = grid.layout
    n_tab = lay.n_released_tables
    names = [grid.tables[ti].name for ti in range(1, lay.n_tables)]
    sizes = lay.table_sizes[1:].astype(float)
    if grid.noisy and tol is None:
        # a table's total (a sum of its rows' noises) against the mean of all tables' totals
        checks = 4 * n_tab
        ref_tail = grid.tail(float(sizes.sum()), checks) / n_tab
        allowed = np.asarray([grid.tail(s, checks) + ref_tail for s in sizes])
    elif grid.noisy:
        allowed = np.full(n_tab, float(tol))
    else:
        allowed = np.full(n_tab, 1e-6 * max(abs(totals.ref_d), 1.0) if tol is None else float(tol))
    # a suppressed table may fall short by up to k per absent row
    short = np.asarray(
        [
            grid.suppressed_in(ti) * grid.missing(ti).sum() + grid.shortfall(ti)
            for ti in range(1, lay.n_tables)
        ]
    )
    for tot, ref, what in (
        (totals.d, totals.ref_d, "total count"),
        (totals.c, totals.ref_c, "total label sum"),
    ):
        bad = np.flatnonzero((tot - ref > allowed) | (ref - tot > allowed + short))
        _flag(
            [
                f"table {names[i]!r} ({grid.tables[i + 1].where}): {tot[i]:g} vs {ref:g}"
                for i in bad
            ],
            f"tables whose {what} disagrees with the others"
            + (" beyond what the declared noise explains" if grid.noisy else "")
            + ": ",
            problems,
        )


def _check_marginals(grid: _Grid, tol: float | None, problems: list[str]) -> None:
    """Tables sharing a feature agree on its per-modality counts (within the noise)."""
    lay, d = grid.layout, grid.d
    missing = grid.missing_mask()
    checks = int(lay.n_modalities.sum()) * max(lay.n_tables - 1, 1)
    for f in range(lay.n_features):
        holding = [ti for ti in range(1, lay.n_tables) if f in lay.tables[ti]]
        if len(holding) < 2:
            continue
        complete = [ti for ti in holding if not grid.suppressed_in(ti)] or holding
        ref_t = min(complete, key=lambda ti: lay.table_sizes[ti])
        ref = _block(lay, d, ref_t, f)
        ref_cells = lay.table_sizes[ref_t] / lay.n_modalities[f]
        msgs = []
        for ti in holding:
            if ti == ref_t:
                continue
            m = _block(lay, d, ti, f)
            cells = lay.table_sizes[ti] / lay.n_modalities[f]
            lim = grid.tail(cells + ref_cells, checks) if grid.noisy else 1e-6 * max(ref.sum(), 1.0)
            if tol is not None:
                lim = float(tol)
            # a suppressed table may fall short by up to k per absent row of the modality
            short = grid.suppressed_in(ti) * _block(lay, missing, ti, f) + grid.shortfall(ti)
            bad = np.flatnonzero((m - ref > lim) | (ref - m > lim + short))
            for k in bad[:2]:
                msgs.append(
                    f"table {grid.tables[ti].name!r} ({grid.tables[ti].where}) counts "
                    f"{m[k]:g} records with {lay.feature_names[f]}="
                    f"{lay.modality_labels[f][k]!r}, table {grid.tables[ref_t].name!r} "
                    f"counts {ref[k]:g}"
                )
        _flag(
            msgs,
            f"tables disagree on the counts of feature {lay.feature_names[f]!r}: ",
            problems,
        )


def _report(problems: list[str], notes: list[str], strict: bool, source: str) -> list[str]:
    """Raise on consistency problems when strict; else warn.  Returns all the messages."""
    if problems and strict:
        raise AggMRFError(
            "inconsistent release"
            + (f" {source!r}" if source else "")
            + ":\n  - "
            + "\n  - ".join(problems)
            + "\n(read_release(..., strict=False) / --lenient turns these into warnings)"
        )
    msgs = problems + notes
    for m in msgs:
        # attributed to the caller of read_release / release_from_frames
        warnings.warn(m, ReleaseWarning, stacklevel=4)
    return msgs


def _aggregated(grid: _Grid, totals: _Totals, meta: dict | None, source: str) -> AggregatedData:
    """The AggregatedData: intercept row (declared, else derived from the totals) and n."""
    meta = meta or {}
    icpt = meta.get("intercept")
    if grid.noisy:
        d0, c0 = totals.ref_d, totals.ref_c
    else:
        d0, c0 = float(totals.d[0]), float(totals.c[0])
    if isinstance(icpt, dict) and "count" in icpt and "label_sum" in icpt:
        d0, c0 = float(icpt["count"]), float(icpt["label_sum"])
    n = meta.get("n")
    n = int(n) if n is not None else max(1, int(round(d0)))
    grid.d[0], grid.c[0] = d0, c0
    info = {"source": source, "release": {k: v for k, v in meta.items() if k != "features"}}
    if grid.noisy:
        info["privacy"] = grid.mechanism.describe()
    if grid.suppression is not None:
        info["suppression"] = {
            grid.tables[ti].name: {"threshold": k, "suppressed": int(grid.missing(ti).sum())}
            for ti, k in sorted(grid.suppression.thresholds.items())
        }
    return AggregatedData(
        grid.layout,
        grid.d,
        grid.c,
        n,
        noise=grid.mechanism,
        meta=info,
        suppression=grid.suppression,
    )


def assemble(
    raw: list[RawTable],
    meta: dict | None,
    strict: bool,
    tol: float | None,
    source: str,
    budget: Budget | None = None,
) -> Release:
    """Step 5: raw tables + release.json → :class:`Release`, through the checks in order.

    Malformed-release errors always raise; consistency problems raise when ``strict``,
    else become warnings (:func:`_report`).
    """
    if not raw:
        raise AggMRFError("a release needs at least one table.")
    schema, declared = _release_schema(raw, meta)
    specs = _table_codes(raw, schema, declared)
    check_size(
        schema.n_modalities.tolist(),
        [feats for _, feats, _ in specs],
        schema.feature_names,
        budget=budget,
        what="the release's tables",
    )
    layout = TableLayout(
        schema.n_modalities,
        [tuple(feats) for _, feats, _ in specs],
        schema.feature_names,
        intercept=True,
        modality_labels=schema.modality_labels,
    )
    grid = _fill(layout, specs, mechanism_from_meta((meta or {}).get("noise"), layout))
    grid.noise_scale = noise_scale(meta)
    grid.suppression = _declared_suppression(
        grid, table_thresholds(meta), table_suppressed_cells(meta), declared_source_values(meta)
    )
    _check_same_modalities(grid)
    problems: list[str] = []  # consistency problems (errors when strict)
    notes = _check_missing_rows(grid)  # always warnings
    _check_values(grid, problems, notes)
    _check_suppression(grid, problems)
    totals = _totals(grid)
    _check_totals(grid, totals, tol, problems)
    if not problems:
        _check_marginals(grid, tol, problems)
    _check_declared(grid, totals, meta, problems)
    msgs = _report(problems, notes, strict, source)
    return Release(_aggregated(grid, totals, meta, source), schema, msgs, source, meta or {})


def _block(layout: TableLayout, values: np.ndarray, ti: int, f: int) -> np.ndarray:
    """Sum of ``values`` over table ti's rows, per modality of feature f, shape (M_f,)."""
    t = layout.tables[ti]
    block = values[layout.offsets[ti] : layout.offsets[ti + 1]].reshape(
        [int(layout.n_modalities[g]) for g in t]
    )
    axes = tuple(j for j, g in enumerate(t) if g != f)
    return block.sum(axis=axes) if axes else block.copy()
