"""The release.json extensions: several labels, and suppressed tables.

Several labels (backward compatible: a one-label release is unchanged)
---------------------------------------------------------------------
``release.json`` lists ``"labels": ["click", "sale"]``; the first is the primary label (also
``"label"``), whose sums stay in the ``label_sum`` column that every reader knows.  Every
other label L has a column ``label_sum.L`` in each table file, and its intercept sum is
``"intercept": {"count": n, "label_sum": c_click, "label_sums": {"sale": c_sale}}``.  A reader
picks one label (``read_release(path, label="sale")``): :func:`select_label` keeps that
label's column as ``label_sum`` and drops the others, :func:`meta_for_label` rewrites the
manifest so the rest of the reader sees a one-label release.  An old reader, which knows
nothing of ``labels``, reads the primary label (with release.json it ignores the extra
columns of declared tables).

Suppressed tables
-----------------
A table entry may declare ``"suppression": k``: a row of that table is absent from its file
if and only if its true count was ≤ k.  The reader marks those rows
(:class:`~aggmrf_explore.tables.suppression.Suppression`) instead of reading them as zeros.

Folded values (``import-criteo --max-modalities``): ``"source_values": {feature: {modality:
s}}`` says that a modality stands for s > 1 source values, each suppressed on its own, so a
row of a suppressed table sums S_r source cells (the product over its features; 1 where
not declared).  An absent row is then the box 0 ≤ d ≤ k·S_r, and a suppressed table's file
may carry a column ``suppressed_cells``: per listed row, the source cells m_r it misses
(each had true count ≤ k), its box listed ≤ d ≤ listed + k·m_r.  Without the column a
listed row of S_r > 1 source cells gets m_r ≤ S_r − 1 (at least one was listed).
"""

from __future__ import annotations

import copy

import pandas as pd

from ..errors import AggMRFError

__all__ = [
    "LABEL_SUM",
    "label_column",
    "release_labels",
    "select_label",
    "meta_for_label",
    "table_thresholds",
    "table_suppressed_cells",
    "declared_source_values",
    "SUPPRESSED_CELLS",
    "noise_scale",
]

LABEL_SUM = "label_sum"
SUPPRESSED_CELLS = "suppressed_cells"  # table-file column: suppressed source cells of a row
MAX_SOURCE_VALUES = 2 * 10**6  # source values per modality (a triple's product fits int64)
_SEP = "."


def label_column(label: str | None, primary: str | None) -> str:
    """The table-file column holding ``label``'s sums: ``label_sum`` for the primary label
    (or None), ``label_sum.<label>`` for the others."""
    if label is None or label == primary:
        return LABEL_SUM
    return f"{LABEL_SUM}{_SEP}{label}"


def release_labels(meta: dict | None) -> list[str]:
    """The labels a release carries (primary first); [] when it names none."""
    meta = meta or {}
    labels = meta.get("labels")
    if labels is None:
        return [meta["label"]] if meta.get("label") else []
    if not isinstance(labels, list) or not all(isinstance(v, str) and v for v in labels):
        raise AggMRFError("release.json 'labels' must be a list of label names.")
    if len(set(labels)) != len(labels):
        raise AggMRFError(f"release.json 'labels' lists a label twice: {labels}.")
    return list(labels)


def meta_for_label(meta: dict | None, label: str | None) -> tuple[dict | None, str]:
    """(manifest as a one-label release of ``label``, the column to read as ``label_sum``).

    ``label`` None: the primary label, manifest unchanged.  A release without ``labels`` has
    one label, whatever ``label`` says (it may name the test records' column).  A label a
    multi-label release does not list is an error that lists its labels.
    """
    labels = release_labels(meta)
    primary = labels[0] if labels else None
    if label is None or label == primary or not (meta or {}).get("labels"):
        # a one-label release: ``label`` names its only label (e.g. the test records' column)
        return meta, LABEL_SUM
    if label not in labels:
        raise AggMRFError(
            f"the release has no label {label!r}; its labels are {labels or ['(unnamed)']}."
        )
    out = copy.deepcopy(meta)
    out["label"] = label
    out["labels"] = [label] + [v for v in labels if v != label]
    icpt = out.get("intercept")
    if isinstance(icpt, dict):
        sums = icpt.get("label_sums") or {}
        if label in sums:
            icpt["label_sum"] = sums[label]
        else:
            icpt.pop("label_sum", None)  # derived from the tables instead
            icpt.pop("count", None)
    for key in ("positive_label", "classes"):  # they describe the primary label
        out.pop(key, None)
    return out, label_column(label, primary)


def select_label(df: pd.DataFrame, column: str, what: str) -> pd.DataFrame:
    """The table frame with ``column`` as its ``label_sum`` and no other label column.

    Columns named ``label_sum.*`` are label columns, never features.  Error if ``column``
    (a label other than the primary) is missing.
    """
    extra = [c for c in df.columns if str(c).startswith(LABEL_SUM + _SEP)]
    if column == LABEL_SUM:
        return df.drop(columns=extra) if extra else df
    if column not in df.columns:
        raise AggMRFError(
            f"{what} has no column {column!r} (the sums of label {column[len(LABEL_SUM) + 1 :]!r}); "
            f"its columns are {list(df.columns)}."
        )
    out = df.drop(columns=[c for c in [LABEL_SUM, *extra] if c != column and c in df.columns])
    return out.rename(columns={column: LABEL_SUM})


def table_suppressed_cells(meta: dict | None) -> dict[str, int]:
    """{table name: source cells left out} (``"suppressed_cells"``: declared when values were
    folded, so that a listed row may miss up to k per folded cell left out)."""
    out: dict[str, int] = {}
    for i, s in enumerate((meta or {}).get("tables") or []):
        if not isinstance(s, dict) or s.get("suppressed_cells") is None:
            continue
        v = s["suppressed_cells"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise AggMRFError(
                f"release.json: table #{i + 1} 'suppressed_cells' must be an integer ≥ 0; got {v!r}."
            )
        out[str(s.get("name") or " × ".join(s.get("features") or []))] = v
    return out


def declared_source_values(meta: dict | None) -> dict[str, dict[str, int]]:
    """{feature name: {modality label: source values}} of release.json's ``source_values``
    (folded values; {} when not declared).  Each count an integer 1 … 2·10⁶."""
    sv = (meta or {}).get("source_values")
    if sv is None:
        return {}
    if not isinstance(sv, dict):
        raise AggMRFError(
            "release.json 'source_values' must be an object {feature: {modality: count}}."
        )
    out: dict[str, dict[str, int]] = {}
    for f, mods in sv.items():
        if not isinstance(mods, dict):
            raise AggMRFError(
                f"release.json 'source_values' of {str(f)[:40]!r} must be an object "
                "{modality: count}."
            )
        for m, v in mods.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_SOURCE_VALUES:
                raise AggMRFError(
                    f"release.json 'source_values' of {str(f)[:40]!r}, {str(m)[:40]!r}: must be "
                    f"an integer 1 … {MAX_SOURCE_VALUES:,} (source values); got {v!r}."
                )
        out[str(f)] = {str(m): int(v) for m, v in mods.items()}
    return out


def noise_scale(meta: dict | None) -> float:
    """The largest ``"noise_scale"`` of release.json's tables (1 when none is declared).

    A table declares ``"noise_scale": s`` when some of its rows are sums of up to s² noisy
    source rows (values folded into "(other)" by ``import-criteo --max-modalities``), so their
    noise's standard deviation is up to s·σ.  The reader's consistency checks use s·σ.
    """
    out = 1.0
    for i, s in enumerate((meta or {}).get("tables") or []):
        if not isinstance(s, dict) or s.get("noise_scale") is None:
            continue
        v = s["noise_scale"]
        if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 1:
            raise AggMRFError(
                f"release.json: table #{i + 1} 'noise_scale' must be a number ≥ 1; got {v!r}."
            )
        out = max(out, float(v))
    return out


def table_thresholds(meta: dict | None) -> dict[str, float]:
    """{table name: suppression threshold k} declared in release.json's ``tables``."""
    out: dict[str, float] = {}
    for i, s in enumerate((meta or {}).get("tables") or []):
        if not isinstance(s, dict) or s.get("suppression") is None:
            continue
        k = s["suppression"]
        if isinstance(k, bool) or not isinstance(k, int | float) or not k >= 0:
            raise AggMRFError(
                f"release.json: table #{i + 1} 'suppression' must be a number ≥ 0 (the largest "
                f"true count of an absent row); got {k!r}."
            )
        name = s.get("name") or " × ".join(s.get("features") or [])
        out[str(name)] = float(k)
    return out
