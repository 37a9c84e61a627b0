"""Reading a release, steps 1–4 (see the package docstring): find and check
release.json, resolve and read the table files into raw tables; step 5 is
:func:`.checks.assemble`."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ... import privacy
from ...encoding import Schema
from ...errors import AggMRFError
from ...files import read_bytes
from ...tables.budget import Budget
from ..extensions import (
    SUPPRESSED_CELLS,
    meta_for_label,
    select_label,
)
from ..fields import short
from ..formula import restore_cell, restore_frame
from ..manifest import (
    RELEASE_FILE,
    UNDECLARED_TABLE_FILE_BYTES,
    check_manifest,
    check_release_size,
    read_manifest,
    table_file,
    table_file_cap,
)
from .checks import assemble
from .common import (
    COUNT,
    LABEL_SUM,
    MAX_CELL,
    TABLE,
    RawTable,
    Release,
    mechanism_from_meta,
)


# ====================================================================== reading: files
@dataclass
class _TableFile:
    """A file to read tables from (step 3's answer).

    ``kind``: "table" (one declared table: ``name`` / ``features`` from release.json),
    "long" (a long CSV; ``meta`` declares the features of its tables, if given) or "any"
    (a CSV found in the directory: a long CSV if it has a ``table`` column, else one table).
    """

    path: Path
    kind: str
    name: str | None = None
    features: list[str] | None = None
    meta: dict | None = None
    max_bytes: int = UNDECLARED_TABLE_FILE_BYTES  # byte cap (:func:`.manifest.table_file_cap`)


def _release_path(path: str | Path) -> Path:
    """The release a path names: release.json → its directory, FILE.json → FILE.csv."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        path = path.parent if path.name == RELEASE_FILE else path.with_suffix(".csv")
    return path


def _find_manifest(path: Path) -> Path | None:
    """Step 1a: the release.json of a release (None if there is none).

    A directory: its ``release.json``; a long CSV: ``FILE.json``, else ``release.json``
    beside it.
    """
    if not path.exists():
        raise AggMRFError(
            f"release not found: {str(path)!r} (a directory of CSVs or one CSV file)."
        )
    if path.is_dir():
        cands = [path / RELEASE_FILE]
    else:
        cands = [path.with_suffix(".json"), path.parent / RELEASE_FILE]
    return next((c for c in cands if c.exists()), None)


def _load_manifest(path: Path) -> dict:
    """Steps 1 and 2 for one release.json file: strict JSON, every field checked
    (:func:`.manifest.read_manifest`, :func:`.manifest.check_manifest`)."""
    return check_manifest(read_manifest(path), path)


def _resolve_table_files(path: Path, meta: dict | None) -> list[_TableFile]:
    """Step 3: which files hold the tables of the release at ``path``.

    A directory whose release.json lists tables: their ``file`` entries (all in one file:
    a long CSV); a directory without: its ``.csv`` files, sorted; a file: the long CSV.
    """
    if not path.is_dir():
        cap = table_file_cap(meta, (meta or {}).get("tables") or [{}])
        return [_TableFile(path, "long", meta=meta, max_bytes=cap)]
    if meta is not None and meta.get("tables"):
        specs = meta["tables"]
        for i, s in enumerate(specs):
            if "file" not in s:
                raise AggMRFError(f"{RELEASE_FILE}: table #{i + 1} needs a 'file'.")
            table_file(path, s["file"], i)  # confined: a plain name inside the directory
        files = sorted({s["file"] for s in specs})
        if len(files) == 1 and len(specs) > 1:
            cap = table_file_cap(meta, specs)
            return [_TableFile(path / files[0], "long", meta=meta, max_bytes=cap)]
        out = []
        for i, s in enumerate(specs):
            f = table_file(path, s["file"], i)
            name = s.get("name") or " × ".join(s.get("features") or [f.stem])
            cap = table_file_cap(meta, [s])
            out.append(_TableFile(f, "table", name=name, features=s.get("features"), max_bytes=cap))
        return out
    files = sorted(
        table_file(path, p.name, i)
        for i, p in enumerate(sorted(path.iterdir()))
        if p.suffix.lower() == ".csv"
    )
    if not files:
        raise AggMRFError(f"{str(path)!r} holds no .csv table file.")
    return [_TableFile(f, "any") for f in files]


def _read_table_files(sources: list[_TableFile], label_column: str = LABEL_SUM) -> list[RawTable]:
    """Step 4: read each file into raw tables (a long CSV gives several); ``label_column``
    is read as ``label_sum`` (a release with several labels, :func:`.extensions.select_label`)."""
    out: list[RawTable] = []
    for src in sources:
        f = src.path
        if src.kind == "long":
            out.extend(
                _long_tables(f, src.meta, label_column=label_column, max_bytes=src.max_bytes)
            )
            continue
        what = f"table {src.name!r}" if src.kind == "table" else f"table file {f.name!r}"
        df = select_label(_read_text_csv(f, what, src.max_bytes), label_column, what)
        lines = np.arange(len(df)) + 2
        if src.kind == "table":
            out.append(_split_table(df, src.name, f.name, lines, src.features))
        elif TABLE in df.columns:
            out.extend(_long_tables(f, None, df))
        else:
            feats = [c for c in df.columns if c not in (COUNT, LABEL_SUM, SUPPRESSED_CELLS)]
            # a file without a count column is not a table: never name it by its header
            name = " × ".join(feats) if COUNT in df.columns and feats else f.stem
            out.append(_split_table(df, name, f.name, lines, None))
    return out


def _columns(df: pd.DataFrame) -> str:
    """The header of a table file, for messages: listed (each name cut to 40 characters)
    only when the file has the ``count`` column of a table, else just counted, so that a
    file which is not a table is never echoed."""
    if COUNT not in df.columns:
        return f"its header line has {len(df.columns)} field(s), none named {COUNT!r}"
    return "its columns are " + ", ".join(short(str(c)) for c in list(df.columns)[:12])


def _read_text_csv(
    path: Path, what: str, max_bytes: int = UNDECLARED_TABLE_FILE_BYTES
) -> pd.DataFrame:
    """A CSV table file as strings (stripped, formula prefixes restored), separator sniffed
    from the header line; at most ``max_bytes`` bytes of a regular file are read."""
    text = read_bytes(path, what, max_bytes, shown=repr(path.name))
    if not text.strip():
        raise AggMRFError(f"{what} ({path.name}) is empty; a table needs a header line and rows.")
    if text[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise AggMRFError(
            f"{what} ({path.name}) is UTF-16 text; save the table file as UTF-8 (CSV UTF-8)."
        )
    if b"\x00" in text[:65536]:
        raise AggMRFError(f"{what} ({path.name}) is not a CSV text file (it has NUL bytes).")
    try:
        s = text.decode("utf-8-sig")
    except UnicodeDecodeError:
        s = text.decode("latin-1")
    first = s.lstrip().splitlines()[0]
    sep = max((",", ";", "\t"), key=first.count)
    header = [str(restore_cell(c.strip())) for c in next(csv.reader([first], delimiter=sep), [])]
    if len(set(header)) != len(header):
        dup = sorted({c for c in header if header.count(c) > 1})
        raise AggMRFError(
            f"{what} ({path.name}) has two columns named {short(dup[0])}; each column needs "
            "its own name."
        )
    try:
        df = pd.read_csv(
            io.StringIO(s), sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise AggMRFError(f"{what} ({path.name}) cannot be parsed as CSV: {msg}.") from None
    df.columns = [str(c).strip() for c in df.columns]
    for c in df.columns:
        df[c] = df[c].astype(str).str.strip()
    return restore_frame(df)


def _numbers(df: pd.DataFrame, col: str, table: str, lines: np.ndarray, where: str) -> np.ndarray:
    """Column ``col`` as float64 (n,), exactly as written; an error on a non-finite cell."""
    s = df[col]
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.abs(x) <= MAX_CELL)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AggMRFError(
            f"table {short(table)} ({where}), line {lines[i]}: {col} is {short(s.iloc[i])}, not a "
            f"finite number within ±{MAX_CELL:g} ({int(bad.sum())} such row(s)); every row needs "
            f"a numeric {COUNT} and {LABEL_SUM}."
        )
    # exact round trip of written floats
    return np.asarray([float(v) for v in s], dtype=np.float64)


def _split_table(
    df: pd.DataFrame, name: str, where: str, lines: np.ndarray, features: list[str] | None
) -> RawTable:
    """One table's frame → :class:`RawTable`, after the malformed-file checks.

    Checks: ``count`` / ``label_sum`` columns present; 1 to 3 feature columns, all present;
    no empty feature cell; finite counts and label sums; no duplicate row.
    """
    missing = [c for c in (COUNT, LABEL_SUM) if c not in df.columns]
    if missing:
        raise AggMRFError(
            f"table {name!r} ({where}) has no column {missing[0]!r}; {_columns(df)}. A table "
            f"needs its feature columns, {COUNT!r} and {LABEL_SUM!r}."
        )
    if features is None:
        features = [c for c in df.columns if c not in (COUNT, LABEL_SUM, TABLE, SUPPRESSED_CELLS)]
    if not features:
        raise AggMRFError(
            f"table {name!r} ({where}) has no feature column besides {COUNT!r} and {LABEL_SUM!r}."
        )
    if len(features) > 3:
        raise AggMRFError(
            f"table {name!r} ({where}) has {len(features)} feature columns {features}; tables "
            "have 1 to 3 features."
        )
    absent = [f for f in features if f not in df.columns]
    if absent:
        raise AggMRFError(
            f"table {name!r} ({where}) lacks the feature column(s) {absent} declared for it; "
            f"{_columns(df)}."
        )
    for f in features:
        empty = (df[f] == "").to_numpy()
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise AggMRFError(
                f"table {name!r} ({where}), line {lines[i]}: feature {f!r} is empty; every row "
                "needs a modality label for each of the table's features."
            )
    d = _numbers(df, COUNT, name, lines, where)
    c = _numbers(df, LABEL_SUM, name, lines, where)
    frame = pd.DataFrame({f: df[f].to_numpy(dtype=object) for f in features})
    key = frame.astype(str).agg("\x1f".join, axis=1) if len(features) > 1 else frame[features[0]]
    dup = key.duplicated(keep=False).to_numpy()
    if dup.any():
        i = np.flatnonzero(dup)
        first = key.iloc[i[0]]
        same = [int(lines[k]) for k in i if key.iloc[k] == first]
        vals = ", ".join(f"{f}={v!r}" for f, v in zip(features, first.split("\x1f"), strict=True))
        raise AggMRFError(
            f"table {name!r} ({where}): lines {same[0]} and {same[1]} are the same row ({vals}); "
            "each combination of modalities must appear once."
        )
    frame[COUNT] = d
    frame[LABEL_SUM] = c
    if SUPPRESSED_CELLS in df.columns and (df[SUPPRESSED_CELLS].astype(str) != "").any():
        frame[SUPPRESSED_CELLS] = _cell_counts(df, name, lines, where)
    return RawTable(name, list(features), frame, np.asarray(lines), where)


def _cell_counts(df: pd.DataFrame, name: str, lines: np.ndarray, where: str) -> np.ndarray:
    """The ``suppressed_cells`` column as int64: each cell an integer 0 … 10¹⁵ (suppressed
    source cells of the row, :mod:`..extensions`), else an error naming the line."""
    s = df[SUPPRESSED_CELLS].astype(str)
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~((x >= 0) & (x <= MAX_CELL) & (x == np.round(x)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AggMRFError(
            f"table {short(name)} ({where}), line {lines[i]}: {SUPPRESSED_CELLS} is "
            f"{short(s.iloc[i])}, not an integer ≥ 0 (the suppressed source cells of the row; "
            f"{int(bad.sum())} such row(s))."
        )
    return x.astype(np.int64)


def _long_tables(
    path: Path,
    meta: dict | None,
    df: pd.DataFrame | None = None,
    label_column: str = LABEL_SUM,
    max_bytes: int = UNDECLARED_TABLE_FILE_BYTES,
) -> list[RawTable]:
    """The tables of a long CSV (rows grouped by their ``table`` cell)."""
    if df is None:
        df = _read_text_csv(path, "release file", max_bytes)
        df = select_label(df, label_column, path.name)
    if TABLE not in df.columns:
        raise AggMRFError(
            f"{path.name}: a one-file release needs a {TABLE!r} column naming each row's table "
            f"(or give a directory of per-table CSVs); {_columns(df)}."
        )
    declared = {}
    if meta is not None:
        for s in meta.get("tables") or []:
            if isinstance(s, dict) and "name" in s:
                declared[str(s["name"])] = s.get("features")
    feat_cols = [c for c in df.columns if c not in (TABLE, COUNT, LABEL_SUM, SUPPRESSED_CELLS)]
    lines_all = np.arange(len(df)) + 2
    out = []
    names = pd.unique(df[TABLE].to_numpy(dtype=object))
    for name in names:
        if name == "":
            i = int(np.flatnonzero((df[TABLE] == "").to_numpy())[0])
            raise AggMRFError(f"{path.name}, line {lines_all[i]}: the {TABLE!r} cell is empty.")
        mask = (df[TABLE] == name).to_numpy()
        sub = df[mask]
        lines = lines_all[mask]
        feats = declared.get(str(name))
        if feats is None:
            feats = [c for c in feat_cols if (sub[c] != "").any()]
        for c in feat_cols:
            if c not in feats:
                bad = (sub[c] != "").to_numpy()
                if bad.any():
                    raise AggMRFError(
                        f"table {name!r} ({path.name}), line {lines[int(np.flatnonzero(bad)[0])]}: "
                        f"feature {c!r} has a value but is not one of the table's features {feats}."
                    )
        out.append(_split_table(sub.reset_index(drop=True), str(name), path.name, lines, feats))
    return out


def read_release(
    path: str | Path,
    *,
    strict: bool = True,
    count_tolerance: float | None = None,
    label: str | None = None,
    budget: Budget | None = None,
) -> Release:
    """Read a release (directory or long CSV) into a :class:`Release`.

    ``strict=False`` turns consistency errors (totals, marginals, label sums) into warnings.
    ``count_tolerance`` overrides the allowed discrepancy between table totals (default:
    1e-6 relative without noise, with declared noise the noise's tail bound at probability
    1e-9 per family of checks, :mod:`aggmrf_explore.privacy.tails`).  ``label``: which label
    of a release with several (``labels`` in release.json, :mod:`.extensions`); default the
    primary one.  ``budget``: the size limits (:class:`~aggmrf_explore.tables.budget.Budget`,
    default 2·10⁶ rows), checked from release.json before any table file is read.

    Hostile input is refused with an AggMRFError (see :mod:`.manifest`): release.json is
    parsed strictly and every field checked; table files are plain names inside the
    release directory, regular files, read up to a cap proportional to their rows.
    """
    path = _release_path(path)
    manifest = _find_manifest(path)
    meta = None if manifest is None else _load_manifest(manifest)
    if meta is not None:
        check_release_size(meta, budget)
    meta, column = meta_for_label(meta, label)
    tables = _read_table_files(_resolve_table_files(path, meta), column)
    rel = assemble(tables, meta, strict, count_tolerance, str(path), budget)
    generator = ((meta or {}).get("noise") or {}).get("generator")
    if (meta or {}).get("simulation") is True:
        rel.warnings.append(
            "this file is marked as a simulation (continuous noise, written with "
            "simulation=True): its low bits leak the counts, so it is not a private release."
        )
    elif generator in (privacy.INSECURE_SEED, privacy.SIMULATION):
        rel.warnings.append(
            f"this release's noise was drawn from a seed ({generator}): whoever knows or "
            "guesses the seed can recover the exact counts, so it is not private; it is "
            "fine for training and teaching, not as a release of real people's data."
        )
    return rel


def read_release_noise(path: str | Path) -> privacy.Mechanism | None:
    """The noise mechanism a release declares (its release.json, strictly checked), without
    reading its tables; None when it declares none."""
    path = _release_path(path)
    manifest = _find_manifest(path)
    if manifest is None:
        raise AggMRFError(f"{str(path)!r} has no release.json, so it declares no noise.")
    return mechanism_from_meta(_load_manifest(manifest).get("noise"))


def read_schema(path: str | Path) -> Schema:
    """The schema of a release: its ``release.json`` (or FILE.json), or inferred from its tables."""
    path = Path(path)
    cand = path / RELEASE_FILE if path.is_dir() else path
    if cand.suffix.lower() == ".csv":
        cand = cand.with_suffix(".json")
    if cand.exists() and cand.suffix.lower() == ".json":
        meta = _load_manifest(cand)
        if meta.get("features"):
            return Schema.from_dict(meta)
    return read_release(path).schema


def release_from_frames(
    tables: list,
    meta: dict | None = None,
    *,
    strict: bool = True,
    count_tolerance: float | None = None,
    source: str = "",
) -> Release:
    """Build a :class:`Release` from tables given as DataFrames (the API behind read_release).

    ``tables``: a list of tidy DataFrames (feature columns, ``count``, ``label_sum``), or of
    (name, DataFrame) pairs; ``meta``: the release.json dictionary (optional).
    """
    raw: list[RawTable] = []
    for i, item in enumerate(tables):
        if isinstance(item, RawTable):
            raw.append(item)
            continue
        name, df = item if isinstance(item, tuple) else (None, item)
        if not isinstance(df, pd.DataFrame):
            raise AggMRFError(f"table #{i + 1} must be a pandas DataFrame.")
        df = df.copy()
        df.columns = [str(c) for c in df.columns]
        for c in df.columns:
            df[c] = df[c].astype(str).str.strip() if c not in (COUNT, LABEL_SUM) else df[c]
        feats = [c for c in df.columns if c not in (COUNT, LABEL_SUM, TABLE, SUPPRESSED_CELLS)]
        name = name or " × ".join(feats)
        df = df.astype({c: str for c in (COUNT, LABEL_SUM) if c in df.columns})
        raw.append(_split_table(df, name, f"table #{i + 1}", np.arange(len(df)) + 1, None))
    if meta is not None:
        meta = check_manifest(meta, Path(RELEASE_FILE))
    return assemble(raw, meta, strict, count_tolerance, source)
