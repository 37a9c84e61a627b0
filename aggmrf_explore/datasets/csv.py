"""Your own records: :func:`read_csv_file` (a CSV file as a DataFrame, checked) and
:func:`load_csv` (a CSV file as a :class:`~aggmrf_explore.datasets.dataset.Dataset`)."""

from __future__ import annotations

import csv as _csv
import gzip
import io
import zlib
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..errors import AggMRFError
from ..files import MAX_CSV_BYTES, decode_text, mib, read_bytes
from ..values import check_no_missing, encode_label
from .dataset import Dataset, other_class, select_features
from .splits import check_fraction, stratified_split

__all__ = ["read_csv_file", "load_csv", "MIN_CSV_ROWS"]

MIN_CSV_ROWS = 10
_NA_VALUES = ["", "NA", "N/A", "NaN", "nan", "null", "NULL"]


def _shown(path: Path, name: str | None) -> str:
    """How messages name the file: ``name`` (e.g. an upload's own name) or the path."""
    return repr(name) if name is not None else repr(str(path))


def _header(text: str, sep: str) -> list[str]:
    """The header line's column names, read by the csv module (quotes honoured)."""
    try:
        return [c.strip() for c in next(_csv.reader(io.StringIO(text), delimiter=sep))]
    except (StopIteration, _csv.Error):
        return []


def read_csv_file(
    path: str | Path, *, name: str | None = None, max_bytes: int = MAX_CSV_BYTES
) -> pd.DataFrame:
    """The records of a CSV file (',', ';' or tab separated, header line; may be gzip).

    The separator is the most frequent of the three in the header line; UTF-8 (with or
    without BOM), UTF-16 / UTF-32 with a BOM, else Latin-1.  Column names and string cells
    are stripped; empty and "NA"-like cells become NaN.  Refused with an AggMRFError saying
    what to do: a missing path, a directory / FIFO / device, a file over ``max_bytes``
    (default :data:`~aggmrf_explore.files.MAX_CSV_BYTES`), an empty, binary or unparsable
    file, duplicate column names.  ``name`` is how messages call the file (default: its
    path; e.g. an upload's own name instead of a server's temporary path).  Returns the
    DataFrame (n records, header columns).
    """
    p = Path(path)
    shown = _shown(p, name)
    raw = read_bytes(p, "CSV file", max_bytes, shown)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(max_bytes + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise AggMRFError(f"{shown} looks gzip-compressed but cannot be read: {e}.") from None
        if len(raw) > max_bytes:
            raise AggMRFError(f"{shown} decompresses to more than {mib(max_bytes)}; too large.")
    if not raw.strip():
        raise AggMRFError(f"{shown} is empty; a CSV needs a header line and records.")
    try:
        text = decode_text(raw, f"CSV file {shown}")
    except AggMRFError as e:
        raise AggMRFError(f"{e} (e.g. in a spreadsheet: Save as → CSV UTF-8)") from None
    if "\x00" in text[:65536]:
        raise AggMRFError(
            f"{shown} looks like a binary file, not a CSV text file (it has NUL bytes); "
            "export your data as CSV (comma or semicolon separated, header line first)."
        )
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text[:65536])
    if printable < 0.95 * min(len(text), 65536):
        raise AggMRFError(
            f"{shown} does not look like a CSV text file (too many non-printable characters); "
            "export your data as CSV."
        )
    first = text.lstrip().splitlines()[0]
    counts = {sep: first.count(sep) for sep in (",", ";", "\t")}
    sep = max(counts, key=lambda s: counts[s])
    if counts[sep] == 0:
        raise AggMRFError(
            f"{shown}: no ',' or ';' separator in the header line {first[:80]!r}; "
            "a CSV needs at least a feature column and a label column."
        )
    header = _header(text.lstrip(), sep)
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        shown_dup = ", ".join(repr(c[:40]) for c in dup[:5])
        raise AggMRFError(
            f"{shown} has duplicate column names ({shown_dup}); each column needs its own "
            "name: rename or remove the duplicates."
        )
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=_NA_VALUES,
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise AggMRFError(
            f"could not parse {shown} as a {sep!r}-separated CSV: {msg}. Check that every line "
            "has the same number of fields and that quotes are balanced."
        ) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(set(df.columns)) != len(df.columns):
        dup = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
        raise AggMRFError(
            f"{shown} has duplicate column names {dup[:5]}; rename or remove the duplicates."
        )
    return _strip_strings_keep_na(df)


def _strip_strings_keep_na(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        s = df[c]
        if not pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            df[c] = s.where(s.isna(), s.astype(str).str.strip())
    return df


def _check_split(n: int, frac: float, y) -> None:
    """The split keeps ≥ MIN_CSV_ROWS training records, both classes among them, and a test
    record (the sizes of :func:`stratified_split`)."""
    n_test = min(max(int(round(frac * n)), 1), n - 1)
    n_train = n - n_test
    classes = len(set(y.tolist()))
    if n_train < MIN_CSV_ROWS or n_train < 2 * classes:
        raise AggMRFError(
            f"the split (--test-fraction / test_fraction {frac:g}) keeps only {n_train} of {n} "
            f"records for training, too few to learn from (at least {MIN_CSV_ROWS}); lower "
            "--test-fraction (e.g. 0.3) or give a separate --test-csv."
        )


def load_csv(
    path: str | Path,
    label: str,
    *,
    test_csv: str | Path | None = None,
    test_fraction: float = 0.3,
    features: Sequence[str] | None = None,
    drop_features: Sequence[str] | None = None,
    seed: int = 0,
    positive: object | None = None,
    unseen: str = "error",
    min_count: int = 1,
    name: str | None = None,
) -> Dataset:
    """Load your own CSV (',' or ';' separated, header line) with a binary ``label`` column.

    Without ``test_csv``, a seeded stratified split keeps ``test_fraction`` of the rows for
    test.  The positive class follows :func:`~aggmrf_explore.encoding.encode_label` unless
    ``positive`` is given.  Cells of used columns must not be empty / NaN.  ``unseen``:
    what a test value never seen in training becomes — "error" (default: it would silently
    borrow the other tables' evidence) or "other" (an extra "(other)" modality).
    ``min_count``: categories seen fewer times are merged into "(other)" (1: off).
    ``name``: how messages call the file (default: its path).
    """
    frac = check_fraction(test_fraction) if test_csv is None else None
    df = read_csv_file(path, name=name)
    if label not in df.columns:
        close = [c for c in df.columns if c.lower() == str(label).lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AggMRFError(
            f"label column {label!r} not found in {str(path)!r}{hint}; columns are {list(df.columns)}."
        )
    test_df = None
    if test_csv is not None:
        test_df = read_csv_file(test_csv)
        missing = [c for c in df.columns if c not in test_df.columns]
        if missing:
            raise AggMRFError(
                f"test file {str(test_csv)!r} lacks the columns {missing} of {str(path)!r}; "
                f"its columns are {list(test_df.columns)}."
            )
        test_df = test_df[list(df.columns)]
    ds = Dataset(
        name=Path(path).name.split(".")[0] or "csv",
        train=df,
        test=test_df if test_df is not None else df.iloc[:0],
        label=label,
        citation="user data",
        encoding={"unseen": unseen, **({"min_count": int(min_count)} if min_count != 1 else {})},
    )
    ds = select_features(ds, features, drop_features)
    if len(ds.feature_columns) == 0:
        raise AggMRFError(
            f"{str(path)!r} has no feature column besides the label {label!r}; columns: "
            f"{list(df.columns)}."
        )
    full = ds.train
    check_no_missing(full, what=f" of {str(path)!r}", line_offset=2)
    if test_df is not None:
        check_no_missing(ds.test, what=f" of {str(test_csv)!r}", line_offset=2)
    if len(full) < MIN_CSV_ROWS:
        raise AggMRFError(
            f"{str(path)!r} has only {len(full)} record(s); at least {MIN_CSV_ROWS} are needed "
            "to fit and evaluate a model."
        )
    y, pos = encode_label(full[label], positive=positive)
    if test_df is not None:
        if len(ds.test) == 0:
            raise AggMRFError(f"test file {str(test_csv)!r} has no records.")
        encode_label(ds.test[label], positive=pos, classes=[other_class(full[label], pos), pos])
        train, test = full.reset_index(drop=True), ds.test.reset_index(drop=True)
        split = f"test file {test_csv}"
    else:
        _check_split(len(full), frac, y)
        tr, te = stratified_split(y, frac, seed)
        train = full.iloc[tr].reset_index(drop=True)
        test = full.iloc[te].reset_index(drop=True)
        split = f"seeded stratified split {1 - frac:.0%} / {frac:.0%} (seed {seed})"
    ds.train, ds.test = train, test
    ds.positive = pos
    ds.description = (
        f"CSV {path}: {len(train)} train / {len(test)} test records, "
        f"{len(ds.feature_columns)} features, label {label!r} (positive {pos!r}); {split}."
    )
    return ds
