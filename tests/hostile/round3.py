"""Hostile input, third corpus: the challenge importer, the sweep, local privacy, suppression.

Command-line cases in the form of :mod:`hostile.corpus` (a :class:`~hostile.corpus.Case`
each, run by ``tests/test_hostile_round3.py`` like the first corpus), one class per
``kind``:

* ``criteo-number``: challenge-file ids and values read exactly (never through float64),
  within 0 … 2⁶³ − 1;
* ``criteo-columns``: a column named twice, counts out of the release reader's ranges,
  the noise block of an imported release;
* ``local-epsilon``: a local ε too small for a usable randomized-response channel;
* ``output``: where ``sweep --out`` (and the other writers) may write;
* ``suppression``: a threshold contradicted by the rows a release lists;
* ``sweep-report``: the sweep's text and JSON with one noise seed.

The DuckDB path, the explorer store and the explorer page are probed in the test modules
(library and browser cases).  README section "Bad input" lists the guarantees.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hostile.corpus import FAST, Case, _copy_release, _manifest, _write_manifest

D = "{d}"
SINGLES = [  # feature_1_id, feature_1_value, c, click, sale
    ("1", "100", "60", "12", "2"),
    ("1", "200", "40", "8", "1"),
    ("2", "7", "55", "11", "2"),
    ("2", "8", "45", "9", "1"),
    ("3", "5", "50", "10", "1"),
    ("3", "6", "50", "10", "2"),
]
PAIRS = [  # feature_1_id, feature_2_id, feature_1_value, feature_2_value, c, click, sale
    ("1", "2", "100", "7", "35", "7", "1"),
    ("1", "2", "200", "8", "25", "5", "1"),
    ("1", "3", "100", "5", "30", "6", "1"),
    ("2", "3", "7", "6", "28", "5", "1"),
]
S_HEAD = ["feature_1_id", "feature_1_value", "c", "click", "sale"]
P_HEAD = [
    "feature_1_id",
    "feature_2_id",
    *(f"feature_{i}_value" for i in (1, 2)),
    "c",
    "click",
    "sale",
]
IMPORT = ["import-criteo", f"{D}/ch/pairs.csv", f"{D}/ch/singles.csv", "--out", f"{D}/ch_rel"]


def _csv(head: list[str], rows: list[tuple[str, ...]]) -> str:
    """A challenge file as pandas writes it: an unnamed index column first."""
    lines = ["," + ",".join(head)]
    lines += [f"{i}," + ",".join(r) for i, r in enumerate(rows)]
    return "\n".join(lines) + "\n"


def challenge(
    edit: Callable[[list, list], None] | None = None,
    s_extra: tuple[str, str] | None = None,
    p_extra: tuple[str, str] | None = None,
) -> Callable[[Path], None]:
    """A build step: the small valid challenge files in ``{d}/ch`` after ``edit(singles,
    pairs)`` (lists of row tuples, edited in place); ``s_extra`` / ``p_extra``: one more
    column (name, value of every row) at the end of the singles / pairs file."""

    def build(d: Path) -> None:
        singles, pairs = [list(r) for r in SINGLES], [list(r) for r in PAIRS]
        if edit is not None:
            edit(singles, pairs)
        s_head, p_head = list(S_HEAD), list(P_HEAD)
        for head, rows, extra in ((s_head, singles, s_extra), (p_head, pairs, p_extra)):
            if extra is not None:
                head.append(extra[0])
                for r in rows:
                    r.append(extra[1])
        (d / "ch").mkdir(exist_ok=True)
        (d / "ch" / "singles.csv").write_text(_csv(s_head, singles))
        (d / "ch" / "pairs.csv").write_text(_csv(p_head, pairs))
        out = d / "ch_rel"
        if out.exists():
            for f in out.iterdir():
                f.unlink()
            out.rmdir()

    return build


def _replace_value(old: str, new: str) -> Callable[[list, list], None]:
    """Feature 1's value ``old`` becomes ``new`` in both files."""

    def edit(singles: list, pairs: list) -> None:
        for r in singles:
            if r[0] == "1" and r[1] == old:
                r[1] = new
        for r in pairs:
            if r[0] == "1" and r[2] == old:
                r[2] = new

    return edit


def _replace_id(old: str, new: str) -> Callable[[list, list], None]:
    """Feature id ``old`` becomes ``new`` in both files."""

    def edit(singles: list, pairs: list) -> None:
        for r in singles:
            r[0] = new if r[0] == old else r[0]
        for r in pairs:
            r[0] = new if r[0] == old else r[0]
            r[1] = new if r[1] == old else r[1]

    return edit


def _both(*edits: Callable[[list, list], None]) -> Callable[[list, list], None]:
    def edit(singles: list, pairs: list) -> None:
        for e in edits:
            e(singles, pairs)

    return edit


def _singles_col(col: int, value: str, row: int | None = None) -> Callable[[list, list], None]:
    def edit(singles: list, pairs: list) -> None:
        for i, r in enumerate(singles):
            if row is None or i == row:
                r[col] = value

    return edit


def _release_json(d: Path) -> dict:
    return json.loads((d / "ch_rel" / "release.json").read_text(encoding="utf-8"))


def _assert(cond: bool, detail: object = "") -> None:
    if not cond:
        raise AssertionError(detail)


def _exact_values(d: Path, out: str, err: str) -> None:
    feats = {f["name"]: f for f in _release_json(d)["features"]}
    mods = feats["hash_1"]["modalities"]
    _assert(mods == ["9007199254740992", "9007199254740993"], mods)


def _noise_sigma_only(d: Path, out: str, err: str) -> None:
    noise = _release_json(d)["noise"]
    _assert(noise == {"mechanism": "gaussian", "sigma": 17.0}, noise)


# ------------------------------------------------------------------------- suppression
def _suppress_table(pick: Callable[[dict], bool], k: float) -> Callable[[Path], None]:
    """Copy the good release to ``{d}/rel`` and declare threshold ``k`` on the first pair
    table chosen by ``pick`` (a release.json table entry)."""

    def build(d: Path) -> None:
        rel = _copy_release(d)
        m = _manifest(rel)
        entry = next(t for t in m["tables"] if len(t["features"]) == 2 and pick(t))
        entry["suppression"] = k
        _write_manifest(rel, m)

    return build


def _with_age(t: dict) -> bool:
    return "age" in t["features"]


def _color_size(t: dict) -> bool:
    return set(t["features"]) == {"color", "size"}


def _names_rows(d: Path, out: str, err: str) -> None:
    warned = [ln for ln in err.splitlines() if ln.startswith("warning:") and "suppression" in ln]
    _assert(warned and "line " in warned[0], err)


# ------------------------------------------------------------------------- output paths
def _fifo_prefix(d: Path) -> None:
    p = d / "special"
    if not p.exists():
        os.mkfifo(p)


def _copy_csv(name: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        (d / name).write_bytes((d / "good.csv").read_bytes())

    return build


def _symlink_out(d: Path) -> None:
    (d / "elsewhere").mkdir(exist_ok=True)
    target = d / "elsewhere" / "target.csv"
    target.write_text("keep\n")
    link = d / "linked.csv"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


# ------------------------------------------------------------------------- sweep report
def _no_nan_text(d: Path, out: str, err: str) -> None:
    _assert("nan" not in out.lower(), out)
    _assert("one noise seed" in out, out)


def _strict_json(d: Path, out: str, err: str) -> None:
    def refuse(name: str):
        raise AssertionError(f"{name} in the JSON output")

    rep = json.loads(out, parse_constant=refuse)
    _assert(all(r["sd"] is None for r in rep["summary"]), rep["summary"])


SWEEP_FAST = [
    "--iterations",
    "2",
    "--gibbs-samples",
    "200",
    "--epsilons",
    "1",
    "--noise-seeds",
    "1",
]
SWEEP_CSV = ["sweep", "--label", "bought", *SWEEP_FAST]

SWEEP_TOY = ["sweep", "--dataset", "toy"]
M2 = f"{D}/m2.csv"


def local_sweep(privacy: str, epsilons: str, *flags: str) -> list[str]:
    """A quick toy sweep with ``--privacy``, ``--epsilons`` and one noise seed."""
    argv = [*SWEEP_TOY, "--privacy", privacy, *SWEEP_FAST[:4], "--epsilons", epsilons]
    return [*argv, "--noise-seeds", "1", *flags, "--out", f"{D}/sw_local"]


CASES: list[Case] = [
    # --- 1. challenge numbers, exactly
    Case(
        "c1-values-above-2^53",
        "criteo-number",
        IMPORT,
        expect="ok",
        build=challenge(
            _both(
                _replace_value("100", "9007199254740992"), _replace_value("200", "9007199254740993")
            )
        ),
        check=_exact_values,
        notes="float64 made them one value: 'the same row', an error naming neither",
    ),
    Case(
        "c1-feature-id-1e20",
        "criteo-number",
        IMPORT,
        says="feature_1_id",
        build=challenge(_replace_id("3", str(10**20))),
        notes="was accepted as hash_-9223372036854775808",
    ),
    Case(
        "c1-value-1000-digits",
        "criteo-number",
        IMPORT,
        says="feature_1_value",
        build=challenge(_replace_value("100", "9" * 1000)),
        notes="was an OverflowError traceback",
    ),
    Case(
        "c1-id-2^63",
        "criteo-number",
        IMPORT,
        says="2⁶³",
        build=challenge(_replace_id("3", str(2**63))),
        notes="one past int64: wrapped around",
    ),
    # --- 2. challenge columns and ranges
    Case(
        "c2-pairs-two-click-columns",
        "criteo-columns",
        IMPORT,
        says="click",
        build=challenge(p_extra=("click", "1000")),
        notes="pandas renamed the second click.1, the import ignored it",
    ),
    Case(
        "c2-singles-two-c-columns",
        "criteo-columns",
        IMPORT,
        says="'c'",
        build=challenge(s_extra=("c", "1000")),
        notes="the second c (read by nobody) was ignored",
    ),
    Case(
        "c2-singles-count-1e308",
        "criteo-columns",
        IMPORT,
        says="1e+15",
        build=challenge(_singles_col(2, "1e308", 0)),
        notes="was exit 0 and n ≈ 2.5e307 in release.json",
    ),
    Case(
        "c2-singles-n-over-1e12",
        "criteo-columns",
        IMPORT,
        says="records",
        build=challenge(_singles_col(2, "1e13")),
        notes="each cell within ±1e15, but n = 2e13 > 1e12",
    ),
    Case(
        "c2-noise-block-sigma-only",
        "criteo-columns",
        IMPORT,
        expect="ok",
        build=challenge(),
        check=_noise_sigma_only,
        notes="release.json stated ε = 1 and δ = 1e-6, which the challenge never gave",
    ),
    # --- 3. local ε too small for a usable channel
    Case(
        "c3-sweep-local-1e-300",
        "local-epsilon",
        local_sweep("local", "1e-300"),
        says="ε",
        notes="was a ZeroDivisionError traceback",
    ),
    Case(
        "c3-sweep-central-local-1e-7",
        "local-epsilon",
        local_sweep("central,local", "1,1e-7", "--sizes", "1"),
        says="floor",
        notes="overflowing variances: NaN tables",
    ),
    # --- 4. output paths
    Case(
        "c4-sweep-out-dev-null",
        "output",
        [*SWEEP_TOY, *SWEEP_FAST, "--out", "/dev/null"],
        says="device",
        notes="wrote /dev/null.csv and /dev/null.png",
    ),
    Case(
        "c4-sweep-out-fifo",
        "output",
        [*SWEEP_TOY, *SWEEP_FAST, "--out", f"{D}/special"],
        says="device",
        build=_fifo_prefix,
    ),
    Case(
        "c4-sweep-out-input-stem",
        "output",
        [*SWEEP_CSV, "--csv", f"{D}/mine.csv", "--out", f"{D}/mine"],
        says="overwrite",
        build=_copy_csv("mine.csv"),
        notes="overwrote the records with the sweep's rows",
    ),
    Case(
        "c4-sweep-out-symlink-outside",
        "output",
        [*SWEEP_TOY, *SWEEP_FAST, "--out", f"{D}/linked"],
        says="symlink",
        build=_symlink_out,
        notes="wrote through the link into another directory",
    ),
    Case(
        "c4-export-model-over-input",
        "output",
        ["run", "--csv", M2, "--label", "bought", *FAST, "--export-model", M2],
        says="overwrite",
        build=_copy_csv("m2.csv"),
    ),
    Case(
        "c4-predict-out-over-input",
        "output",
        ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/p.csv", "--out", f"{D}/p.csv"],
        says="overwrite",
        build=_copy_csv("p.csv"),
    ),
    # --- 5. suppression contradicted by the listed rows
    Case(
        "c5-threshold-10-small-rows-listed",
        "suppression",
        ["run", "--tables", f"{D}/rel", *FAST],
        says="suppression",
        build=_suppress_table(_with_age, 10),
        notes="trained, exit 0, no warning",
    ),
    Case(
        "c5-threshold-above-every-row",
        "suppression",
        ["run", "--tables", f"{D}/rel", *FAST],
        says="suppression",
        build=_suppress_table(_color_size, 1000),
    ),
    Case(
        "c5-lenient-warns-naming-rows",
        "suppression",
        ["run", "--tables", f"{D}/rel", *FAST, "--lenient"],
        expect="ok",
        warns=True,
        build=_suppress_table(_with_age, 10),
        check=_names_rows,
    ),
    # --- 8. the sweep's report with one noise seed
    Case(
        "c8-sweep-one-seed-text",
        "sweep-report",
        [*SWEEP_TOY, *SWEEP_FAST, "--out", f"{D}/sw1"],
        expect="ok",
        check=_no_nan_text,
        notes="printed 'sd NaN'",
    ),
    Case(
        "c8-sweep-one-seed-json",
        "sweep-report",
        [*SWEEP_TOY, *SWEEP_FAST, "--out", f"{D}/sw1", "--json"],
        expect="ok",
        check=_strict_json,
        notes="printed NaN, which is not JSON",
    ),
]
