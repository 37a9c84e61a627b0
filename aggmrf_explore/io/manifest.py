"""release.json, read as hostile input: parsed strictly, every field checked, table files confined.

The release reader (:mod:`aggmrf_explore.io.release`) calls, in order:

1. :func:`read_manifest` — at most ``MAX_JSON_BYTES`` of a regular file, strict JSON (no
   NaN / Infinity, no duplicate keys), UTF-8;
2. :func:`check_manifest` — the type and range of every field it uses: ``format``,
   ``version`` (the integer 1), ``n`` (an integer in 1 .. ``MAX_N``), the schema
   (:func:`.fields.check_schema_dict`), ``tables`` (name, 1–3 declared features, a file
   name), ``intercept`` (finite; without noise 0 ≤ label_sum ≤ count), ``noise`` (an object
   whose numbers are finite), ``labels`` / ``suppression``;
3. :func:`check_release_size` — the size budget (:mod:`aggmrf_explore.tables.budget`) from the
   declared modality counts and tables, before any table file is read;
4. :func:`table_file` — a table's ``file`` entry is a plain file name inside the release
   directory (no absolute path, no ``..``, no separator, no symlink leaving the
   directory), and :func:`table_file_cap` the most bytes its file may hold: 1 MiB plus
   ``ROW_BYTES`` and twice its labels' length per row the layout gives it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..errors import AggMRFError
from ..files import MAX_JSON_BYTES, read_json
from ..privacy import central_names
from ..tables.budget import Budget, SizeEstimate, check_size
from .fields import (
    check_choice,
    check_int,
    check_list,
    check_number,
    check_object,
    check_schema_dict,
    check_str,
    check_version,
    short,
)

__all__ = [
    "RELEASE_FILE",
    "FORMAT",
    "VERSION",
    "MAX_N",
    "TABLE_FILE_BASE_BYTES",
    "ROW_BYTES",
    "UNDECLARED_TABLE_FILE_BYTES",
    "read_manifest",
    "check_manifest",
    "check_release_size",
    "table_file",
    "table_file_cap",
]

RELEASE_FILE = "release.json"
FORMAT = "aggmrf-release"
VERSION = 1
MAX_N = 10**12  # 'n': records, an integer in 1 .. MAX_N
TABLE_FILE_BASE_BYTES = 2**20
ROW_BYTES = 128
UNDECLARED_TABLE_FILE_BYTES = 512 * 2**20  # a table file that release.json does not size


def read_manifest(path: Path) -> object:
    """Step 1: the JSON value of a release.json (any value; :func:`check_manifest` checks it)."""
    return read_json(path, "release metadata", MAX_JSON_BYTES)


def _check_tables(tables: object, names: list[str] | None, where: str) -> None:
    check_list(tables, f"{where} 'tables'")
    known = set(names) if names is not None else None
    for i, t in enumerate(tables):  # type: ignore[arg-type]
        at = f"{where} table #{i + 1}"
        check_object(t, at)
        if t.get("name") is not None:
            check_str(t["name"], f"{at} 'name'")
        if "file" in t:
            check_str(t["file"], f"{at} 'file'")
        if t.get("features") is not None:
            feats = check_list(t["features"], f"{at} 'features'", min_len=1, max_len=3)
            for j, f in enumerate(feats):
                check_str(f, f"{at} 'features' item {j + 1}")
                if known is not None and f not in known:
                    raise AggMRFError(
                        f"{at} names the feature {short(f)}, which the 'features' list does "
                        "not declare."
                    )
            if len(set(feats)) != len(feats):
                raise AggMRFError(f"{at} lists a feature twice.")
        if t.get("suppression") is not None:
            check_number(t["suppression"], f"{at} 'suppression'", lo=0)


def _check_noise(noise: object, where: str) -> None:
    if noise is None:
        return
    check_object(noise, f"{where} 'noise'")
    if "mechanism" in noise:
        check_choice(
            str(noise["mechanism"]).lower() if isinstance(noise["mechanism"], str) else None,
            f"{where} 'noise' 'mechanism'",
            central_names(),
        )
    keys = ("epsilon", "delta", "sigma", "scale", "l1_sensitivity", "l2_sensitivity", "std", "rho")
    for key in (*keys, "sigma_continuous"):
        if noise.get(key) is not None:
            v = check_number(noise[key], f"{where} 'noise' {key!r}", lo=0.0)
            if key == "delta" and not v < 1:
                raise AggMRFError(f"{where} 'noise' 'delta' must be below 1; got {v:g}.")
            if key != "delta" and not v > 0:
                raise AggMRFError(f"{where} 'noise' {key!r} must be > 0; got {v:g}.")
    for key in ("calibration", "accounting", "neighbouring", "generator"):
        if noise.get(key) is not None:
            check_str(noise[key], f"{where} 'noise' {key!r}")


def _check_intercept(icpt: object, noisy: bool, where: str) -> None:
    if icpt is None:
        return
    check_object(icpt, f"{where} 'intercept'")
    d = c = None
    if "count" in icpt:
        d = check_number(icpt["count"], f"{where} 'intercept' 'count'", lo=-1e15, hi=1e15)
    if "label_sum" in icpt:
        c = check_number(icpt["label_sum"], f"{where} 'intercept' 'label_sum'", lo=-1e15, hi=1e15)
    if icpt.get("label_sums") is not None:
        for k, v in check_object(icpt["label_sums"], f"{where} 'intercept' 'label_sums'").items():
            check_number(v, f"{where} 'intercept' 'label_sums' {short(k)}")
    if not noisy and d is not None and c is not None:
        if d < 0 or c < 0 or c > d * (1 + 1e-9) + 1e-9:
            raise AggMRFError(
                f"{where} 'intercept': count {d:g} and label_sum {c:g} are impossible in a "
                "release without noise (0 ≤ label_sum ≤ count); fix them, or declare the "
                "release's 'noise'."
            )


def check_manifest(meta: object, path: Path) -> dict:
    """Step 2: a release.json value → the manifest dict, every field checked (see the module
    docstring); raises AggMRFError naming the field and what it must be."""
    where = f"release metadata {path.name!r}"
    meta = check_object(meta, where)
    if "format" in meta and meta["format"] != FORMAT:
        raise AggMRFError(
            f"{where} is not an aggmrf release (its 'format' is {short(meta['format'])}, "
            f"not {FORMAT!r})."
        )
    if "version" in meta:
        check_version(meta["version"], f"{where} 'version'", VERSION)
    if meta.get("n") is not None:
        meta["n"] = check_int(meta["n"], f"{where} 'n' (records)", lo=1, hi=MAX_N)
    names = None
    if "features" in meta:
        check_schema_dict(meta, where)
        names = [f["name"] for f in meta["features"]]
    else:
        for key in ("label", "positive_label"):
            if meta.get(key) is not None and not isinstance(meta[key], str | int | float):
                raise AggMRFError(f"{where} {key!r} must be a string; got {short(meta[key])}.")
    if meta.get("labels") is not None:
        for j, v in enumerate(check_list(meta["labels"], f"{where} 'labels'", min_len=1)):
            check_str(v, f"{where} 'labels' item {j + 1}")
    if "tables" in meta:
        _check_tables(meta["tables"], names, where)
    _check_noise(meta.get("noise"), where)
    noisy = (
        isinstance(meta.get("noise"), dict)
        and str(meta["noise"].get("mechanism", "none")).lower() != "none"
    )
    _check_intercept(meta.get("intercept"), noisy, where)
    return meta


def check_release_size(meta: dict, budget: Budget | None = None) -> SizeEstimate | None:
    """Step 3: the size budget of the tables release.json declares (None when it declares no
    schema or no tables); raises before any table file is read."""
    feats = meta.get("features")
    tables = meta.get("tables")
    if not feats or not tables:
        return None
    names = [f["name"] for f in feats]
    index = {n: i for i, n in enumerate(names)}
    layout = [
        tuple(index[f] for f in t["features"]) for t in tables if t.get("features") is not None
    ]
    mods = [len(f["modalities"]) for f in feats]
    return check_size(mods, layout, names, budget=budget, what="the release's tables")


def table_file(directory: Path, name: object, index: int) -> Path:
    """Step 4: the path of table #``index``'s ``file`` entry, confined to ``directory``.

    ``name`` must be a plain file name (a string without path separators, not ``.`` or
    ``..``, not absolute); a symlink must resolve to a file inside ``directory``.  The file
    itself (regular, size) is checked when it is read.
    """
    at = f"{RELEASE_FILE} table #{index + 1} 'file'"
    if not isinstance(name, str):
        raise AggMRFError(f"{at} must be a file name (a string); got {short(name)}.")
    bad = (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or os.path.isabs(name)
        or Path(name).name != name
    )
    if bad:
        raise AggMRFError(
            f"{at} is {short(name)}: a table file must be a plain file name inside the release "
            "directory (no path, no '..'); move the file into the release directory."
        )
    path = directory / name
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise AggMRFError(f"{at} {short(name)} is a broken symlink.") from None
        if target.parent != directory.resolve():
            raise AggMRFError(
                f"{at} {short(name)} is a symlink to a file outside the release directory; "
                "copy the table file into the release directory instead."
            )
    return path


def _label_bytes(feature: dict) -> int:
    mods = feature.get("modalities") or []
    return max((len(str(m).encode("utf-8")) for m in mods), default=0)


def table_file_cap(meta: dict | None, entries: list[dict]) -> int:
    """Step 4: the most bytes a table file holding the tables ``entries`` (release.json
    ``tables`` items) may have: ``TABLE_FILE_BASE_BYTES`` plus, per row of each table,
    ``ROW_BYTES`` plus twice the longest label of every feature (and of the table name);
    ``UNDECLARED_TABLE_FILE_BYTES`` when release.json does not give the modalities."""
    feats = (meta or {}).get("features")
    if not feats or any(e.get("features") is None for e in entries):
        return UNDECLARED_TABLE_FILE_BYTES
    by_name = {f["name"]: f for f in feats}
    label_bytes = sum(2 * _label_bytes(f) + 4 for f in feats)
    total = TABLE_FILE_BASE_BYTES
    for e in entries:
        rows = math.prod(len(by_name[f]["modalities"]) for f in e["features"])
        name = len(str(e.get("name") or "").encode("utf-8"))
        total += rows * (ROW_BYTES + label_bytes + 2 * name)
    return total
