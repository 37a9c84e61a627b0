"""The Criteo AdKDD'21 challenge format, read and written.

The challenge files (written by pandas, an unnamed index column first)::

    aggregated_pairs.csv    feature_1_id, feature_2_id, feature_1_value, feature_2_value, c, click, sale
    aggregated_singles.csv  feature_1_id, feature_1_value, c, click, sale

Feature ids are integers (feature id i is named ``hash_i``), values are integer hashes.  Every
pair row whose true count was ≤ 10 is dropped (the pair tables' suppression threshold);
nothing is suppressed in the singles.  Gaussian noise (σ = 17) was added to c, click and
sale.  Two labels, click and sale, share the counts c.

:func:`read_criteo` turns the two files into a :class:`CriteoRelease`: an AggregatedData for
the click label (with the declared noise and the pairs' suppression), the sale sums, the
:class:`~aggmrf_explore.encoding.Schema` (features ``hash_i``, modalities the values as
strings) and a report.  :func:`import_criteo` writes it as one of our releases (two labels,
:mod:`.extensions`), which ``run --tables DIR --label click|sale`` trains on.
:func:`write_criteo` writes the challenge files from a release (the round trip).

Policies (all reported in ``CriteoRelease.report``):

- **Modalities**: the values listed in the singles file, in increasing integer order.  With
  ``max_modalities=M`` a feature keeps its M − 1 most frequent values (by the singles' noisy
  count; ties: the smaller value) and folds the others into one modality ``"(other)"``
  (last): its single row and its pair cells are the sums of the folded rows.  A folded
  pair row is listed if at least one of its source cells was; its sum then misses the
  suppressed source cells folded into it, so it is a box, not an exact target: listed ≤
  d ≤ listed + k·m_r (label sums likewise, at most d), with m_r the row's suppressed
  source cells (``Suppression.slack`` = k·m_r).  m_r is counted **exactly** from the
  files: the (value_1, value_2) combinations of the row's source values (both listed in
  the singles file, which suppresses nothing) that the pairs file does not list — each
  had a true count ≤ k, 0 included (the challenge lists no pair cell ≤ 10, observed or
  not).  A folded row none of whose S_r source cells was listed is absent, the box
  0 ≤ d ≤ k·S_r.  The release declares the source values per modality (release.json
  ``source_values``) and m_r per listed row (the table files' ``suppressed_cells``
  column), and the reader rebuilds the boxes from them.  The box is on the noisy listed
  sum (its noise is that of the summed source rows, sd √s·σ; it is not added to the box).
- **Intercept**: n and the intercept's label sums are the means of the 19 singles tables'
  totals (each single table counts every record once, plus noise).
- **Caps** (hostile or wrong files must not exhaust memory), checked on the raw bytes
  before pandas parses anything (:func:`scan_csv`): at most ``max_bytes`` per file
  (default 4 GiB), ``max_line_bytes`` per line (4 096; a challenge row has < 150 bytes)
  and ``max_lines`` rows per file (3·10⁷, about 2 GB once parsed); a NUL byte means a
  binary file.  Each refusal is one error saying how to raise the cap
  (``import-criteo --max-file-mib / --max-line-bytes / --max-lines``).
- **Numbers**: ids and values are read exactly from their digits (never through
  float64): each must be an integer in 0 … 2⁶³ − 1 (``ID_MAX``), written as digits (a
  trailing ``.0`` is accepted).  Counts and label sums are finite numbers within
  ±10¹⁵ (the release reader's ``MAX_CELL``); n, the mean of the singles' totals, must lie
  in 1 … 10¹² (the release reader's ``MAX_N``).  So an import never writes a release the
  release reader would refuse.
- **Malformed files** are errors naming the file and line: a missing column, a column
  named twice (pandas would rename the second ``click.1`` and ignore it), a number out of
  range or not a number, a pair of a feature with itself, a feature id the singles do
  not list, a pair value the singles do not list, a row listed twice, and a negative noisy
  count that σ = 17 noise does not explain: below −zσ, with z such that genuine noise on
  every value of the file crosses it with probability 10⁻⁹ (``negative_z``: −7.6σ = −130
  for 10⁵ values; mildly negative values are what the noise does to small counts and are
  kept: the trainer projects them).
- **Noise**: the challenge declares σ only, so release.json's ``noise`` block states the
  mechanism and σ (``{"mechanism": "gaussian", "sigma": σ}``), never an ε or δ.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..encoding import Schema
from ..errors import AggMRFError
from ..files import check_output_dir, check_regular_file, create_file, mib, write_text
from ..privacy import GaussianMechanism
from ..tables import AggregatedData, TableLayout
from ..tables.suppression import source_cells, suppression_from_presence
from .manifest import MAX_N
from .release import MAX_CELL, mechanism_from_meta, write_release

__all__ = [
    "PAIR_COLUMNS",
    "SINGLE_COLUMNS",
    "CRITEO_SUPPRESSION",
    "CRITEO_SIGMA",
    "OTHER",
    "CriteoRelease",
    "CsvCaps",
    "DEFAULT_CAPS",
    "ID_MAX",
    "scan_csv",
    "read_criteo",
    "import_criteo",
    "write_criteo",
]

PAIR_COLUMNS = [
    "feature_1_id",
    "feature_2_id",
    "feature_1_value",
    "feature_2_value",
    "c",
    "click",
    "sale",
]
SINGLE_COLUMNS = ["feature_1_id", "feature_1_value", "c", "click", "sale"]
CRITEO_SUPPRESSION = 10.0
CRITEO_SIGMA = 17.0
OTHER = "(other)"
LABELS = ("click", "sale")
FALSE_ALARM = 1e-9  # chance that genuine σ = 17 noise on a whole file trips the negative check
ID_MAX = 2**63 - 1  # feature ids and values: integers 0 … ID_MAX, parsed from their digits


@dataclass(frozen=True)
class CsvCaps:
    """What one challenge file may hold: bytes, bytes per line, lines (header excluded)."""

    max_bytes: int = 4 * 2**30
    max_line_bytes: int = 4096
    max_lines: int = 30_000_000

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_line_bytes", "max_lines"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise AggMRFError(f"{name} must be an integer ≥ 1; got {v!r}.")


DEFAULT_CAPS = CsvCaps()
_SCAN_BLOCK = 1 << 22  # 4 MiB per read while scanning


def _too_many_rows(what: str, shown: str, caps: CsvCaps) -> str:
    return (
        f"{what} file {shown} has more than the {caps.max_lines:,} rows allowed; if it is the "
        "right file, raise the cap with --max-lines (memory: about 100 bytes per row parsed)."
    )


def scan_csv(path: str | Path, what: str, caps: CsvCaps = DEFAULT_CAPS) -> int:
    """Check a challenge file's raw bytes against ``caps`` before parsing; returns its number
    of data lines (lines after the header, a last line without newline included).

    Refused (AggMRFError, one line with the fix): not a regular file (a directory, FIFO or
    device; nothing is opened), more than ``caps.max_bytes`` bytes (from its size, before
    reading), a line longer than ``caps.max_line_bytes`` (found while reading 4 MiB
    blocks; memory stays one block whatever the file), more than ``caps.max_lines`` lines,
    a NUL byte (binary data).  Memory: one block.
    """
    path = Path(path)
    shown = repr(path.name)
    st = check_regular_file(path, f"{what} file", shown)
    if st.st_size > caps.max_bytes:
        raise AggMRFError(
            f"{what} file {shown} is {mib(st.st_size)}, more than the {mib(caps.max_bytes)} "
            "allowed; if it is the right file, raise the cap with --max-file-mib "
            f"{-(-st.st_size // 2**20)} (read_criteo(..., caps=CsvCaps(max_bytes=...)))."
        )
    lines = 0  # newlines seen
    current = 0  # bytes of the line being read
    offset = 0
    last = b"\n"
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_SCAN_BLOCK)
            if not block:
                break
            if offset + len(block) > caps.max_bytes:  # grew since the stat
                raise AggMRFError(
                    f"{what} file {shown} is larger than the {mib(caps.max_bytes)} allowed; "
                    "raise the cap with --max-file-mib if it is the right file."
                )
            arr = np.frombuffer(block, dtype=np.uint8)
            nul = np.flatnonzero(arr == 0)
            if nul.size:
                raise AggMRFError(
                    f"{what} file {shown} holds binary data (a NUL byte at byte "
                    f"{offset + int(nul[0])}); the challenge files are CSV text."
                )
            nl = np.flatnonzero(arr == 10)
            # line lengths without the newline; the first continues the previous block's
            lengths = np.diff(np.concatenate([[-1], nl])) - 1
            if nl.size:
                lengths[0] += current
                current = len(block) - 1 - int(nl[-1])
            else:
                current += len(block)
            over = np.flatnonzero(lengths > caps.max_line_bytes)
            if over.size or current > caps.max_line_bytes:
                at = lines + 1 + (int(over[0]) if over.size else int(nl.size))
                raise AggMRFError(
                    f"{what} file {shown}, line {at}: longer than {caps.max_line_bytes} bytes "
                    "(a challenge row has < 150); is this the right file? If so, raise the "
                    "cap with --max-line-bytes."
                )
            lines += int(nl.size)
            if lines > caps.max_lines + 1:
                raise AggMRFError(_too_many_rows(what, shown, caps))
            offset += len(block)
            last = block[-1:]
    data_lines = lines + (0 if last == b"\n" else 1) - 1  # the header is not a row
    if data_lines > caps.max_lines:
        raise AggMRFError(_too_many_rows(what, shown, caps))
    return max(data_lines, 0)


@dataclass
class CriteoRelease:
    """What :func:`read_criteo` returns.

    data: the click label's AggregatedData (noise: Gaussian σ; suppression: the pair rows not
    listed, bound ``suppression``); sale: the sale label sums, float64 (K,); schema: features
    ``hash_i`` with the values as modality labels; report: the policies' numbers.
    """

    data: AggregatedData
    sale: np.ndarray
    schema: Schema
    report: dict = field(default_factory=dict)

    def label_sums(self, label: str) -> np.ndarray:
        """The label sums (K,) of "click" or "sale"."""
        if label not in LABELS:
            raise AggMRFError(f"the challenge's labels are {list(LABELS)}; got {label!r}.")
        return self.data.c if label == "click" else self.sale


# ---------------------------------------------------------------------- reading
def _header(path: Path, what: str) -> list[str]:
    """The header line's column names (stripped), read by the csv module; a name given
    twice is an error (pandas would rename the second one and the import would ignore it)."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        first = fh.readline()  # at most max_line_bytes: scan_csv checked every line
    names = [c.strip() for c in next(csv.reader([first]), [])]
    seen: set[str] = set()
    for c in names:
        if c and c in seen:
            raise AggMRFError(
                f"{what} ({path.name}) has two columns named {c[:40]!r}; each column needs its "
                "own name (remove or rename the second one)."
            )
        seen.add(c)
    return names


def _integers(
    df: pd.DataFrame, c: str, what: str, path: Path, lines: np.ndarray, position: int, rows: int
) -> np.ndarray:
    """Column ``c`` as exact int64: every cell an integer in 0 … ``ID_MAX``, else an error
    naming the first bad line.  pandas' own int64 parse is exact; a column it could not
    read as int64 (a float, a huge or non-numeric cell) is read again as text (column
    ``position`` of the file) and each cell parsed from its digits (an optional "+" and a
    trailing ".0" allowed), never through float64."""
    x = df[c]
    if pd.api.types.is_signed_integer_dtype(x.dtype):
        v = x.to_numpy(dtype=np.int64)
        ok = np.array(v >= 0)
        if ok.all():
            return v
        cells = x.astype(str)
    else:
        cells = pd.read_csv(
            path, usecols=[position], nrows=rows + 1, dtype=str, keep_default_na=False
        ).iloc[:, 0]
        cells = cells.astype(str).str.strip()
        digits = cells.str.replace(r"\.0*$", "", regex=True).str.replace(r"^\+", "", regex=True)
        ok = np.array(digits.str.fullmatch(r"[0-9]+").fillna(False), dtype=bool)
        digits = digits.str.lstrip("0").replace("", "0")
        width = np.where(ok, digits.str.len().to_numpy(), 0)
        ok &= width <= len(str(ID_MAX))
        for i in np.flatnonzero(width == len(str(ID_MAX))):  # 19 digits: compare exactly
            ok[i] = int(digits.iloc[i]) <= ID_MAX
        if ok.all():
            return np.asarray([int(v) for v in digits], dtype=np.int64)
    i = int(np.flatnonzero(~ok)[0])
    raise AggMRFError(
        f"{what} ({path.name}), line {lines[i]}: {c} is {_shown(str(cells.iloc[i]))}, not a "
        f"non-negative integer (0 … 2⁶³ − 1; {int((~ok).sum())} such row(s)): ids and values are "
        "integers."
    )


def _shown(text: str, limit: int = 30) -> str:
    """A cell for an error message: quoted, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _read(
    path: str | Path, columns: list[str], what: str, caps: CsvCaps = DEFAULT_CAPS
) -> pd.DataFrame:
    """A challenge CSV: its bytes checked against ``caps`` (:func:`scan_csv`), its header
    checked (no column named twice), then parsed; the unnamed index dropped, the columns
    checked, ids and values exact integers (:func:`_integers`), counts and label sums
    finite numbers within ±``MAX_CELL``."""
    path = Path(path)
    rows = scan_csv(path, what, caps)
    _header(path, what)
    try:
        df = pd.read_csv(path, nrows=rows + 1, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AggMRFError(f"{what} ({path.name}) cannot be parsed as CSV: {msg}.") from None
    df.columns = [str(c).strip() for c in df.columns]
    position = {c: i for i, c in enumerate(df.columns)}
    unnamed = [c for c in df.columns if c == "" or c.startswith("Unnamed:")]
    df = df.drop(columns=unnamed)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        found = [c for c in columns if c in df.columns]
        raise AggMRFError(
            f"{what} ({path.name}) has no column {missing[0]!r}; the challenge format needs "
            f"{columns} (after an unnamed index column)"
            + (f"; it has {found}." if found else "; it has none of them: is this the right file?")
        )
    if df.empty:
        raise AggMRFError(f"{what} ({path.name}) has no rows.")
    lines = np.arange(len(df)) + 2
    for c in columns:
        if c.endswith(("_id", "_value")):
            df[c] = _integers(df, c, what, path, lines, position[c], rows)
            continue
        x = df[c]
        if not pd.api.types.is_numeric_dtype(x.dtype):
            x = pd.to_numeric(x.astype(str).str.strip(), errors="coerce")
        x = x.to_numpy(dtype=np.float64)
        bad = ~(np.abs(x) <= MAX_CELL)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise AggMRFError(
                f"{what} ({path.name}), line {lines[i]}: {c} is {_shown(str(df[c].iloc[i]))}, "
                f"not a finite number within ±{MAX_CELL:g} ({int(bad.sum())} such row(s)); "
                "counts and label sums are numbers of records."
            )
        df[c] = x
    z = negative_z(3 * len(df))
    floor = -z * CRITEO_SIGMA
    for c in ("c", "click", "sale"):
        neg = np.flatnonzero(df[c].to_numpy() < floor)
        if neg.size:
            i = int(neg[0])
            raise AggMRFError(
                f"{what} ({path.name}), line {lines[i]}: {c} = {df[c].iloc[i]:g} is below "
                f"−{z:.3g}σ = {floor:.4g}: Gaussian noise of σ = {CRITEO_SIGMA:g} on a count "
                f"≥ 0 does not explain it ({neg.size} such row(s)); is this a challenge file?"
            )
    df["_line"] = lines
    return df


def negative_z(n_values: int) -> float:
    """How many σ below 0 a noisy count may lie before it is refused: the z whose one-sided
    tail, over ``n_values`` genuine draws, is crossed with probability ``FALSE_ALARM``
    (6.0 for one value, 7.6 for 10⁵, 8.2 for 10⁷)."""
    from scipy.special import ndtri

    return float(-ndtri(FALSE_ALARM / max(int(n_values), 1)))


def _duplicates(df: pd.DataFrame, keys: list[str], what: str, name: str) -> None:
    dup = df.duplicated(keys, keep=False).to_numpy()
    if dup.any():
        rows = df[dup]
        first = rows.iloc[0]
        same = rows[(rows[keys] == first[keys]).all(axis=1)]["_line"].tolist()
        vals = ", ".join(f"{k}={int(first[k])}" for k in keys)
        raise AggMRFError(
            f"{what} ({name}): lines {same[0]} and {same[1]} are the same row ({vals}); each "
            "cell must be listed once."
        )


def _modalities(
    singles: pd.DataFrame, ids: list[int], max_modalities: int | None
) -> tuple[list[list[str]], list[dict[int, int]], dict]:
    """Per feature: modality labels, value → code, and the folding report."""
    labels, maps = [], []
    folded_values, folded_share = {}, {}
    for fid in ids:
        sub = singles[singles["feature_1_id"] == fid]
        values = np.sort(sub["feature_1_value"].to_numpy())
        if max_modalities is not None and values.size > max_modalities:
            order = sub.sort_values(["c", "feature_1_value"], ascending=[False, True])
            keep = np.sort(order["feature_1_value"].to_numpy()[: max_modalities - 1])
            code = {int(v): k for k, v in enumerate(keep)}
            other = len(keep)
            for v in values:
                code.setdefault(int(v), other)
            labels.append([str(int(v)) for v in keep] + [OTHER])
            folded = sub[~sub["feature_1_value"].isin(keep)]
            folded_values[f"hash_{fid}"] = int(len(folded))
            folded_share[f"hash_{fid}"] = float(
                max(folded["c"].sum(), 0.0) / max(sub["c"].clip(lower=0).sum(), 1e-300)
            )
        else:
            code = {int(v): k for k, v in enumerate(values)}
            labels.append([str(int(v)) for v in values])
        maps.append(code)
    report = {"folded_values": folded_values, "folded_count_share": folded_share}
    return labels, maps, report


def read_criteo(
    pairs_csv: str | Path,
    singles_csv: str | Path,
    *,
    max_modalities: int | None = None,
    suppression: float = CRITEO_SUPPRESSION,
    sigma: float = CRITEO_SIGMA,
    caps: CsvCaps = DEFAULT_CAPS,
) -> CriteoRelease:
    """Read the challenge's two files (see the module docstring) into a :class:`CriteoRelease`.

    max_modalities: keep at most this many modalities per feature (≥ 2; rare values →
    ``"(other)"``); suppression: the pairs' threshold k (10); sigma: the declared noise (17);
    caps: what each file may hold (:class:`CsvCaps`; checked before parsing).
    """
    if max_modalities is not None and (int(max_modalities) != max_modalities or max_modalities < 2):
        raise AggMRFError(f"max_modalities must be an integer ≥ 2; got {max_modalities!r}.")
    if not (np.isfinite(suppression) and suppression >= 0):
        raise AggMRFError(f"suppression must be a number ≥ 0; got {suppression!r}.")
    if not (np.isfinite(sigma) and sigma > 0):
        raise AggMRFError(f"sigma must be a number > 0; got {sigma!r}.")
    if not isinstance(caps, CsvCaps):
        raise AggMRFError(f"caps must be a CsvCaps; got {type(caps).__name__}.")
    singles = _read(singles_csv, SINGLE_COLUMNS, "singles", caps)
    pairs = _read(pairs_csv, PAIR_COLUMNS, "pairs", caps)
    s_name, p_name = Path(singles_csv).name, Path(pairs_csv).name
    _duplicates(singles, ["feature_1_id", "feature_1_value"], "singles", s_name)
    ids = sorted(int(v) for v in singles["feature_1_id"].unique())
    known = set(ids)
    for col in ("feature_1_id", "feature_2_id"):
        bad = ~pairs[col].isin(known).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise AggMRFError(
                f"pairs ({p_name}), line {pairs['_line'].iloc[i]}: {col} = "
                f"{int(pairs[col].iloc[i])} is not a feature id of the singles file "
                f"(its ids: {ids[:20]}{' …' if len(ids) > 20 else ''})."
            )
    same = (pairs["feature_1_id"] == pairs["feature_2_id"]).to_numpy()
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise AggMRFError(
            f"pairs ({p_name}), line {pairs['_line'].iloc[i]}: feature_1_id and feature_2_id "
            "are the same feature; a pair crosses two features."
        )
    # one orientation per pair: the smaller id first
    swap = (pairs["feature_1_id"] > pairs["feature_2_id"]).to_numpy()
    if swap.any():
        a = pairs.loc[swap, ["feature_1_id", "feature_1_value"]].to_numpy()
        pairs.loc[swap, ["feature_1_id", "feature_1_value"]] = pairs.loc[
            swap, ["feature_2_id", "feature_2_value"]
        ].to_numpy()
        pairs.loc[swap, ["feature_2_id", "feature_2_value"]] = a
    _duplicates(
        pairs,
        ["feature_1_id", "feature_2_id", "feature_1_value", "feature_2_value"],
        "pairs",
        p_name,
    )
    labels, maps, fold_report = _modalities(singles, ids, max_modalities)
    fpos = {fid: j for j, fid in enumerate(ids)}
    names = [f"hash_{fid}" for fid in ids]
    layout = TableLayout.all_pairs(
        [len(m) for m in labels], names, intercept=True, modality_labels=labels
    )
    K = layout.K
    d, c, sale = np.zeros(K), np.zeros(K), np.zeros(K)
    present = np.zeros(K, dtype=bool)

    def codes(df: pd.DataFrame, id_col: str, val_col: str, what: str) -> np.ndarray:
        out = np.empty(len(df), dtype=np.int64)
        for fid, idx in df.groupby(id_col).indices.items():
            m = maps[fpos[int(fid)]]
            vals = df[val_col].to_numpy()[idx]
            got = np.fromiter((m.get(int(v), -1) for v in vals), np.int64, len(vals))
            if np.any(got < 0):
                i = idx[int(np.flatnonzero(got < 0)[0])]
                raise AggMRFError(
                    f"{what}, line {df['_line'].iloc[i]}: {val_col} = {int(df[val_col].iloc[i])} "
                    f"is not a value of hash_{int(fid)} in the singles file."
                )
            out[idx] = got
        return out

    summed = np.zeros(K, dtype=np.int64)  # source rows summed into each row

    def place(rows: np.ndarray, df: pd.DataFrame) -> None:
        for arr, col in ((d, "c"), (c, "click"), (sale, "sale")):
            np.add.at(arr, rows, df[col].to_numpy())
        np.add.at(summed, rows, 1)
        present[rows] = True

    f1 = np.asarray([fpos[int(v)] for v in singles["feature_1_id"]], dtype=np.int64)
    v1 = codes(singles, "feature_1_id", "feature_1_value", f"singles ({s_name})")
    t_single = np.asarray([layout.table_index((int(f),)) for f in range(len(ids))])
    place(layout.offsets[t_single[f1]] + v1, singles)
    if len(pairs):
        pf = np.asarray([fpos[int(v)] for v in pairs["feature_1_id"]], dtype=np.int64)
        pg = np.asarray([fpos[int(v)] for v in pairs["feature_2_id"]], dtype=np.int64)
        pv = codes(pairs, "feature_1_id", "feature_1_value", f"pairs ({p_name})")
        pw = codes(pairs, "feature_2_id", "feature_2_value", f"pairs ({p_name})")
        tix = {t: i for i, t in enumerate(layout.tables)}
        ti = np.asarray([tix[(int(a), int(b))] for a, b in zip(pf, pg, strict=True)])
        rows = layout.offsets[ti] + pv * layout.strides[ti, pf] + pw * layout.strides[ti, pg]
        place(rows, pairs)
    pair_tables = {i: float(suppression) for i, t in enumerate(layout.tables) if len(t) == 2}
    # folded values: the source values behind each modality, the source cells behind each
    # row (S_r), and per listed row the source cells the pairs file does not list (m_r)
    per_modality = [
        np.bincount(np.fromiter(m.values(), np.int64, len(m)), minlength=len(lab))
        for m, lab in zip(maps, labels, strict=True)
    ]
    source_values = {f: v for f, v in enumerate(per_modality) if v.max() > 1}
    missing = np.where(present, source_cells(layout, source_values) - summed, 0)
    # the intercept: the mean of the single tables' totals
    starts = [layout.offsets[i] for i in t_single]
    ends = [layout.offsets[i + 1] for i in t_single]
    tot = {
        name: float(np.mean([arr[a:b].sum() for a, b in zip(starts, ends, strict=True)]))
        for name, arr in (("c", d), ("click", c), ("sale", sale))
    }
    if not 1 <= tot["c"] <= MAX_N:
        raise AggMRFError(
            f"singles ({s_name}): the tables count n ≈ {tot['c']:.4g} records (the mean of the "
            f"feature totals); a release needs 1 … {MAX_N:.0e} records, so these counts "
            "cannot be a challenge file's: check the file."
        )
    n = int(round(tot["c"]))
    d[0], c[0], sale[0] = tot["c"], tot["click"], tot["sale"]
    noise_meta = {"mechanism": "gaussian", "sigma": float(sigma)}
    mech = mechanism_from_meta(noise_meta, layout)
    assert isinstance(mech, GaussianMechanism)
    # source cells left out per pair table (more than the absent rows when values were folded)
    raw_m = {fpos[fid]: int(singles["feature_1_id"].eq(fid).sum()) for fid in ids}
    listed = {}
    if len(pairs):
        for t_i, cnt in zip(*np.unique(ti, return_counts=True), strict=True):
            listed[int(t_i)] = int(cnt)
    cells = {
        i: raw_m[layout.tables[i][0]] * raw_m[layout.tables[i][1]] - listed.get(i, 0)
        for i in pair_tables
    }
    box = suppression_from_presence(
        layout, present, pair_tables, cells if max_modalities else {}, missing, source_values
    )
    rows_s = box.rows
    report = {
        "n_features": len(ids),
        "feature_ids": ids,
        "cardinalities": {f"hash_{fid}": int(singles["feature_1_id"].eq(fid).sum()) for fid in ids},
        "modalities": {nm: len(lab) for nm, lab in zip(names, labels, strict=True)},
        "max_modalities": max_modalities,
        **fold_report,
        "pair_rows_listed": int(len(pairs)),
        "single_rows_listed": int(len(singles)),
        "pair_cells": int(sum(layout.table_sizes[i] for i in pair_tables)),
        "pair_cells_suppressed": int(rows_s.sum()),
        "source_pair_cells_left_out": int(sum(cells.values())),
        "pair_rows_missing_cells": box.n_folded,
        "pair_cells_missing_from_listed_rows": int(missing[~box.rows & (box.slack > 0)].sum()),
        "suppression": float(suppression),
        "noise_sigma": float(sigma),
        "n": n,
        "click_rate": tot["click"] / max(tot["c"], 1e-300),
        "sale_rate": tot["sale"] / max(tot["c"], 1e-300),
    }
    # rows summing s source rows carry noise of sd √s·σ: each table's largest, for the reader
    scale = {
        i: float(np.sqrt(summed[layout.offsets[i] : layout.offsets[i + 1]].max()))
        for i in range(1, layout.n_tables)
    }
    meta = {
        "source": f"{pairs_csv} + {singles_csv}",
        "criteo": report,
        "noise_scale": {i: v for i, v in scale.items() if v > 1},
    }
    data = AggregatedData(layout, d, c, n, noise=mech, meta=meta, suppression=box)
    schema = Schema(
        names,
        labels,
        known=[sorted(m) for m in maps],
        codes=[[m[v] for v in sorted(m)] for m in maps],
        values=["number"] * len(names),
        unseen=["other" if OTHER in lab else "error" for lab in labels],
    )
    schema.label, schema.positive_label, schema.classes = "click", "1", ["0", "1"]
    return CriteoRelease(data, sale, schema, report)


def import_criteo(
    pairs_csv: str | Path,
    singles_csv: str | Path,
    out: str | Path,
    *,
    max_modalities: int | None = None,
    suppression: float = CRITEO_SUPPRESSION,
    sigma: float = CRITEO_SIGMA,
    caps: CsvCaps = DEFAULT_CAPS,
) -> tuple[Path, CriteoRelease]:
    """Read the challenge files and write our release (directory ``out``: a CSV per table with
    ``label_sum`` = click and ``label_sum.sale``, release.json declaring the Gaussian σ (no ε
    or δ: the challenge does not state them) and the pairs' suppression).  ``out`` is
    checked before the files are read (:func:`~aggmrf_explore.files.check_output_dir`).
    Returns (release.json path, the CriteoRelease)."""
    check_output_dir(out, "release directory", inputs=(pairs_csv, singles_csv))
    rel = read_criteo(
        pairs_csv,
        singles_csv,
        max_modalities=max_modalities,
        suppression=suppression,
        sigma=sigma,
        caps=caps,
    )
    path = write_release(
        rel.data,
        out,
        rel.schema,
        label="click",
        positive_label="1",
        classes=["0", "1"],
        labels={"sale": rel.sale},
    )
    _declare_sigma_only(path, sigma)
    return path, rel


def _declare_sigma_only(path: Path, sigma: float) -> None:
    """release.json's ``noise`` block as the challenge declares it: the Gaussian σ, no ε
    or δ (the challenge does not publish them)."""
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["noise"] = {"mechanism": "gaussian", "sigma": float(sigma)}
    write_text(path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n", "release metadata")


# ---------------------------------------------------------------------- writing
def write_criteo(
    data: AggregatedData,
    sale: np.ndarray,
    pairs_csv: str | Path,
    singles_csv: str | Path,
) -> tuple[Path, Path]:
    """Write ``data`` (click sums in ``data.c``) and ``sale`` (K,) in the challenge format.

    Features must be named ``hash_<id>`` with integer modality labels; tables: every single
    and pair table.  Pair rows that ``data.suppression`` marks are left out (and pair rows
    of tables without a threshold are all written); every single row is written.
    """
    lay = data.layout
    ids = []
    for nm in lay.feature_names:
        if not (nm.startswith("hash_") and nm[5:].isdigit()):
            raise AggMRFError(f"the challenge format names features hash_<id>; got {nm!r}.")
        ids.append(int(nm[5:]))
    for f, labs in enumerate(lay.modality_labels):
        if not all(v.isdigit() for v in labs):
            raise AggMRFError(
                f"the challenge format's values are integers; {lay.feature_names[f]!r} has "
                f"modalities {labs[:5]} …"
            )
    sale = np.asarray(sale, dtype=np.float64)
    if sale.shape != (lay.K,):
        raise AggMRFError(f"sale must have shape ({lay.K},); got {sale.shape}.")
    box = data.suppression
    singles, pairs = [], []
    for ti, t in enumerate(lay.tables):
        if len(t) not in (1, 2):
            continue
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        keep = np.ones(lay.table_sizes[ti], dtype=bool) if box is None else ~box.rows[sl]
        codes = lay.row_codes(ti)[keep]
        vals = [
            np.asarray([int(v) for v in lay.modality_labels[f]], dtype=np.int64)[codes[:, j]]
            for j, f in enumerate(t)
        ]
        cols = {"c": data.d[sl][keep], "click": data.c[sl][keep], "sale": sale[sl][keep]}
        if len(t) == 1:
            frame = {"feature_1_id": np.full(len(vals[0]), ids[t[0]]), "feature_1_value": vals[0]}
            singles.append(pd.DataFrame({**frame, **cols}))
        else:
            frame = {
                "feature_1_id": np.full(len(vals[0]), ids[t[0]]),
                "feature_2_id": np.full(len(vals[0]), ids[t[1]]),
                "feature_1_value": vals[0],
                "feature_2_value": vals[1],
            }
            pairs.append(pd.DataFrame({**frame, **cols}))
    p, s = Path(pairs_csv), Path(singles_csv)
    p.parent.mkdir(parents=True, exist_ok=True)
    s.parent.mkdir(parents=True, exist_ok=True)
    empty_p = pd.DataFrame(columns=PAIR_COLUMNS)
    with create_file(p, "pairs file", newline="") as fh:
        (pd.concat(pairs, ignore_index=True) if pairs else empty_p).to_csv(fh)
    with create_file(s, "singles file", newline="") as fh:
        pd.concat(singles, ignore_index=True).to_csv(fh)
    return p, s
