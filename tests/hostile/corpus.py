"""The hostile-input corpus: malformed, huge, wrong-typed and malicious inputs for every reader.

Each :class:`Case` names the class of input it probes, builds its files in a scratch
directory (``build(d)``, from the valid fixtures made in ``d`` by :func:`make_fixtures`),
and gives the command line to run.  The expectation is one of

* ``"error"``: exit status 2 and exactly one non-empty stderr line, starting with
  ``error:`` (optionally containing ``says``), never a traceback;
* ``"ok"``: documented acceptance: exit status 0, and ``check(d, out, err)`` verifies the
  numbers (``warns`` additionally requires a ``warning:`` line on stderr).

``hang=True`` cases run in a subprocess with a time limit (a FIFO or a device must not
block the reader).  README section "Bad input" lists the guarantees these cases test.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

FAST = ["--iterations", "2", "--gibbs-samples", "200", "--no-baselines"]


@dataclass
class Case:
    id: str
    kind: str  # cli-number | csv | release | model | output | url
    argv: list[str]  # "{d}" is replaced by the scratch directory
    expect: str = "error"  # "error" or "ok"
    says: str | None = None  # a substring the error line must contain (case-insensitive)
    build: Callable[[Path], None] | None = None
    check: Callable[[Path, str, str], None] | None = None
    warns: bool = False
    hang: bool = False
    notes: str = ""
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------------- fixtures
def small_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    color = rng.choice(["red", "green", "blue"], n)
    size = rng.choice(["S", "M", "L"], n)
    age = rng.integers(18, 70, n)
    p = 0.2 + 0.4 * (color == "red") + 0.004 * (age - 18)
    return pd.DataFrame(
        {"color": color, "size": size, "age": age, "bought": (rng.random(n) < p).astype(int)}
    )


def make_fixtures(d: Path) -> None:
    """Valid inputs every case starts from: a CSV, a test CSV, a release, models."""
    from aggmrf_explore.cli import main

    small_frame(300, 0).to_csv(d / "good.csv", index=False)
    small_frame(120, 1).to_csv(d / "test.csv", index=False)
    good, release = str(d / "good.csv"), str(d / "release")
    assert main(["aggregate", "--csv", good, "--label", "bought", "--out", release]) == 0
    for model in ("model.json", "model.csv"):
        argv = ["run", "--tables", release, "--export-model", str(d / model), *FAST, "--json"]
        assert main(argv) == 0


def _copy_release(d: Path, name: str = "rel") -> Path:
    out = d / name
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(d / "release", out)
    return out


def _manifest(rel: Path) -> dict:
    return json.loads((rel / "release.json").read_text(encoding="utf-8"))


def _write_manifest(rel: Path, m: dict) -> None:
    (rel / "release.json").write_text(json.dumps(m, indent=1), encoding="utf-8")


def release_with(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """A build step: copy the good release to ``{d}/rel`` and edit its manifest."""

    def build(d: Path) -> None:
        rel = _copy_release(d)
        m = _manifest(rel)
        edit(m)
        _write_manifest(rel, m)

    return build


def raw_manifest(text: bytes) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        rel = _copy_release(d)
        (rel / "release.json").write_bytes(text)

    return build


def first_table_file(m: dict) -> dict:
    """The manifest entry of the first table (a dict holding its ``file``)."""
    return m["tables"][0]


def table_file_to(target: str | int) -> Callable[[Path], None]:
    return release_with(lambda m: first_table_file(m).__setitem__("file", target))


def edit_table_csv(edit: Callable[[pd.DataFrame], pd.DataFrame], which: int = 3):
    """Copy the release and rewrite table ``which``'s CSV through ``edit``."""

    def build(d: Path) -> None:
        rel = _copy_release(d)
        m = _manifest(rel)
        path = rel / m["tables"][which]["file"]
        edit(pd.read_csv(path, dtype=str, keep_default_na=False)).to_csv(path, index=False)

    return build


def model_with(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        m = json.loads((d / "model.json").read_text(encoding="utf-8"))
        edit(m)
        (d / "bad_model.json").write_text(json.dumps(m), encoding="utf-8")

    return build


def model_raw(text: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        (d / "bad_model.json").write_text(text, encoding="utf-8")

    return build


def csv_text(text: str | bytes, name: str = "bad.csv") -> Callable[[Path], None]:
    def build(d: Path) -> None:
        p = d / name
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")

    return build


def csv_frame(make: Callable[[], pd.DataFrame], name: str = "bad.csv") -> Callable[[Path], None]:
    def build(d: Path) -> None:
        make().to_csv(d / name, index=False)

    return build


def two_id_columns() -> pd.DataFrame:
    """≈ 430 KB: two 20 000-value ID columns, whose pair table would have 4·10⁸ rows."""
    n = 20_000
    rng = np.random.default_rng(2)
    return pd.DataFrame(
        {
            "user": [f"u{i:06d}" for i in rng.permutation(n)],
            "item": [f"i{i:06d}" for i in rng.permutation(n)],
            "y": rng.integers(0, 2, n),
        }
    )


def one_wide_column() -> pd.DataFrame:
    n = 100_000
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "id": [f"v{i}" for i in range(n)],
            "color": rng.choice(["a", "b"], n),
            "y": rng.integers(0, 2, n),
        }
    )


def _hostile_names() -> pd.DataFrame:
    f = small_frame(200, 4)
    return f.rename(
        columns={"color": "<img src=x onerror=alert(1)>", "size": "=cmd|' /C calc'!A0"}
    ).assign(**{"@SUM(1+1)": np.where(f["size"] == "S", "-2+3", "+x")})


def _formula_release_roundtrip(d: Path, out: str, err: str) -> None:
    """Written cells that start with = + - @ are neutralised, and read back as the originals."""
    rel = d / "frel"
    written = [p.read_text(encoding="utf-8") for p in sorted(rel.glob("*.csv"))]
    for text in written:
        for line in text.splitlines():
            for cell in line.split(","):
                cell = cell.strip('"')
                assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r") or _is_number(cell), cell
    from aggmrf_explore.cli import main

    argv = ["run", "--tables", str(rel), *FAST, "--json", "--export-model", str(d / "fmodel.csv")]
    assert main(argv) == 0
    m = json.loads((rel / "release.json").read_text(encoding="utf-8"))
    names = [f["name"] for f in m["features"]]
    assert "=cmd|' /C calc'!A0" in names and "<img src=x onerror=alert(1)>" in names
    for line in (d / "fmodel.csv").read_text(encoding="utf-8").splitlines():
        for cell in line.split(","):
            cell = cell.strip('"')
            assert cell[:1] not in ("=", "+", "@") or _is_number(cell), cell


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _assert(cond: bool, detail: object = "") -> None:
    assert cond, detail


def _json_out(check: Callable[[dict], None]) -> Callable[[Path, str, str], None]:
    def run(d: Path, out: str, err: str) -> None:
        check(json.loads(out))

    return run


def _finite_probabilities(d: Path, out: str, err: str) -> None:
    p = pd.read_csv(d / "p.csv")["probability"].to_numpy()
    assert len(p) == 120 and np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))


def _fifo(d: Path) -> None:
    rel = _copy_release(d)
    os.mkfifo(rel / "fifo.csv")
    m = _manifest(rel)
    first_table_file(m)["file"] = "fifo.csv"
    _write_manifest(rel, m)


def _symlink_out(d: Path) -> None:
    rel = _copy_release(d)
    os.symlink("/etc/passwd", rel / "link.csv")
    m = _manifest(rel)
    first_table_file(m)["file"] = "link.csv"
    _write_manifest(rel, m)


def _huge_table_file(d: Path) -> None:
    rel = _copy_release(d)
    m = _manifest(rel)
    path = rel / first_table_file(m)["file"]
    os.truncate(path, path.stat().st_size + 300 * 2**20)  # 300 MB appended (sparse: fast)


def _wide_release(m: dict) -> None:
    mods = [f"v{i}" for i in range(30_000)]
    for f in m["features"][:2]:
        f["modalities"] = mods
        f["known"] = mods
        f["codes"] = list(range(len(mods)))


def _set(path: list, value) -> Callable[[dict], None]:
    def edit(m: dict) -> None:
        node = m
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return edit


def _theta(value) -> Callable[[dict], None]:
    """Set θ of every row of the model's second table to ``value``."""

    def edit(m: dict) -> None:
        for row in m["tables"][1]["rows"]:
            row["theta"] = value

    return edit


def _theta_len(m: dict) -> None:
    """Drop one row of the model's second table."""
    m["tables"][1]["rows"] = m["tables"][1]["rows"][:-1]


def _fifo_csv(d: Path) -> None:
    p = d / "fifo_records.csv"
    if not p.exists():
        os.mkfifo(p)


def _symlink_inside(d: Path) -> None:
    """A table file that is a symlink to another file inside the release directory."""
    rel = _copy_release(d)
    m = _manifest(rel)
    name = first_table_file(m)["file"]
    os.rename(rel / name, rel / ("real_" + name))
    os.symlink("real_" + name, rel / name)


def _nested_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _table_header(header: str) -> Callable[[Path], None]:
    """Replace the header line of table 4's CSV."""

    def build(d: Path) -> None:
        rel = _copy_release(d)
        m = _manifest(rel)
        path = rel / m["tables"][3]["file"]
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_text("\n".join([header, *lines[1:]]) + "\n", encoding="utf-8")

    return build


def _table_bytes(data: bytes) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        rel = _copy_release(d)
        m = _manifest(rel)
        (rel / m["tables"][0]["file"]).write_bytes(data)

    return build


def _feature(i: int, key: str, value) -> Callable[[dict], None]:
    return lambda m: m["features"][i].__setitem__(key, value)


def _table_entry(i: int, key: str, value) -> Callable[[dict], None]:
    return lambda m: m["tables"][i].__setitem__(key, value)


def _model_schema_wide(m: dict) -> None:
    mods = [f"v{i}" for i in range(30_000)]
    for f in m["schema"]["features"][:2]:
        f["modalities"] = mods
        f["known"] = mods
        f["codes"] = list(range(len(mods)))


def _model_csv_cell(old: str, new: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        text = (d / "model.csv").read_text(encoding="utf-8")
        (d / "bad_model.csv").write_text(text.replace(old, new, 1), encoding="utf-8")
        shutil.copy(d / "model.schema.json", d / "bad_model.schema.json")

    return build


def _model_csv_theta(value: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        df = pd.read_csv(d / "model.csv", dtype=str, keep_default_na=False)
        df.loc[3, "theta"] = value
        df.to_csv(d / "bad_model.csv", index=False)
        shutil.copy(d / "model.schema.json", d / "bad_model.schema.json")

    return build


def _saturating_probabilities(d: Path, out: str, err: str) -> None:
    p = pd.read_csv(d / "p.csv")["probability"].to_numpy()
    assert len(p) == 120 and np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.mean((p < 1e-9) | (p > 1 - 1e-9)) > 0.5


def _release_reads_back(d: Path, out: str, err: str) -> None:
    """The aggregated release reads back with the records' counts."""
    r = json.loads(out)
    assert r["n_train"] == 300, r


def _is_ok_release(name: str, n: int) -> Callable[[Path, str, str], None]:
    def check(d: Path, out: str, err: str) -> None:
        from aggmrf_explore.io import read_release

        rel = read_release(d / name)
        assert rel.data.n == n and abs(rel.data.d[0] - n) < 1e-9, rel.data.n

    return check


def _latin1_frame() -> bytes:
    f = small_frame(200, 5)
    f["color"] = f["color"].map({"red": "rouge", "green": "vert", "blue": "bleu clair é"})
    return f.to_csv(index=False).encode("latin-1")


D = "{d}"
RUN_CSV = ["run", "--csv", f"{D}/bad.csv", "--label", "y", *FAST]
RUN_TOY = ["run", "--dataset", "toy", *FAST]
RUN_REL = ["run", "--tables", f"{D}/rel", *FAST]
PREDICT = ["predict", "--model", f"{D}/bad_model.json", "--csv", f"{D}/test.csv"]
# common prefixes of the cases' command lines (after RUN_GOOD: the case's flags, then *FAST)
GAUSSIAN = [*RUN_TOY, "--mechanism", "gaussian"]
LAPLACE = [*RUN_TOY, "--mechanism", "laplace"]
RUN_GOOD = ["run", "--csv", f"{D}/good.csv", "--label", "bought"]
RUN_RELEASE = ["run", "--tables", f"{D}/release", *FAST]
AGG_GOOD = ["aggregate", "--csv", f"{D}/good.csv", "--label", "bought"]
AGG_BAD = ["aggregate", "--csv", f"{D}/bad.csv", "--label", "y"]
PREDICT_GOOD = ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/test.csv"]
PREDICT_CSV = ["predict", "--model", f"{D}/bad_model.csv", "--csv", f"{D}/test.csv"]
SWEEP_TOY = ["sweep", "--dataset", "toy"]
SW = f"{D}/sw"


def release_case(id: str, edit: Callable[[dict], None], **kw) -> Case:
    """``run --tables`` on a copy of the good release whose manifest ``edit`` changed."""
    return Case(id, "release", RUN_REL, build=release_with(edit), **kw)


def table_case(id: str, edit: Callable[[pd.DataFrame], pd.DataFrame], **kw) -> Case:
    """``run --tables`` on a copy of the good release whose fourth table ``edit`` rewrote."""
    return Case(id, "release", RUN_REL, build=edit_table_csv(edit), **kw)


def model_case(id: str, edit: Callable[[dict], None], **kw) -> Case:
    """``predict`` with a copy of the good model.json that ``edit`` changed."""
    return Case(id, "model", PREDICT, build=model_with(edit), **kw)


CASES: list[Case] = [
    # ------------------------------------------------------------- CLI numbers
    Case("seed-negative", "cli-number", [*RUN_TOY, "--seed", "-1"], says="seed"),
    Case("seed-1e23", "cli-number", [*RUN_TOY, "--seed", "1e23"], says="seed"),
    Case("seed-2^63", "cli-number", [*RUN_TOY, "--seed", str(2**63)], says="seed"),
    Case("seed-text", "cli-number", [*RUN_TOY, "--seed", "abc"], says="seed"),
    Case("gibbs-1e9", "cli-number", [*RUN_TOY, "--gibbs-samples", "1e9"], says="gibbs"),
    Case("gibbs-zero", "cli-number", [*RUN_TOY, "--gibbs-samples", "0"], says="gibbs"),
    Case("gibbs-huge-int", "cli-number", [*RUN_TOY, "--gibbs-samples", "1000000000"]),
    Case("iterations-zero", "cli-number", [*RUN_TOY, "--iterations", "0"], says="iterations"),
    Case("iterations-nan", "cli-number", [*RUN_TOY, "--iterations", "nan"], says="iterations"),
    Case("lambda-theta-nan", "cli-number", [*RUN_TOY, "--lambda-theta", "nan"], says="lambda"),
    Case("lambda-theta-neg", "cli-number", [*RUN_TOY, "--lambda-theta", "-1"], says="lambda"),
    Case("lambda-mu-inf", "cli-number", [*RUN_TOY, "--lambda-mu", "inf"], says="lambda"),
    Case("step-mu-zero", "cli-number", [*RUN_TOY, "--step-mu", "0"], says="step"),
    Case("step-theta-neg", "cli-number", [*RUN_TOY, "--step-theta", "-0.1"], says="step"),
    Case("epsilon-zero", "cli-number", [*GAUSSIAN, "--epsilon", "0"], says="epsilon"),
    Case("epsilon-neg", "cli-number", [*LAPLACE, "--epsilon", "-1"], says="epsilon"),
    Case("epsilon-nan", "cli-number", [*LAPLACE, "--epsilon", "nan"], says="epsilon"),
    Case("delta-2", "cli-number", [*GAUSSIAN, "--epsilon", "1", "--delta", "2"], says="delta"),
    Case("delta-zero", "cli-number", [*GAUSSIAN, "--epsilon", "1", "--delta", "0"], says="delta"),
    Case(
        "delta-with-laplace",
        "cli-number",
        [*LAPLACE, "--epsilon", "1", "--delta", "1e-7"],
        says="delta",
    ),
    Case("epsilon-without-mechanism", "cli-number", [*RUN_TOY, "--epsilon", "1"], says="mechanism"),
    Case(
        "epsilon-tiny-warns",
        "cli-number",
        [*GAUSSIAN, "--epsilon", "1e-9", "--json"],
        expect="ok",
        warns=True,
        check=_json_out(lambda r: r["noise"]["sigma"] > 1e6 and True),
    ),
    Case(
        "test-fraction-0.999",
        "cli-number",
        [*RUN_GOOD, "--test-fraction", "0.999", *FAST],
        says="test-fraction",
    ),
    Case(
        "test-fraction-1.5",
        "cli-number",
        [*RUN_GOOD, "--test-fraction", "1.5", *FAST],
        says="test-fraction",
    ),
    Case(
        "test-fraction-zero",
        "cli-number",
        [*RUN_GOOD, "--test-fraction", "0", *FAST],
        says="test-fraction",
    ),
    Case("n-negative", "cli-number", ["run", "--dataset", "xor", "--n", "-3", *FAST], says="n"),
    Case("bins-zero", "cli-number", [*RUN_GOOD, "--bins", "0", *FAST], says="bins"),
    Case("unknown-dataset", "cli-number", ["run", "--dataset", "nope", *FAST], says="dataset"),
    Case("unknown-flag", "cli-number", [*RUN_TOY, "--frobnicate"]),
    Case("unknown-feature", "cli-number", [*RUN_TOY, "--features", "nope"], says="nope"),
    Case(
        "sweep-bad-epsilons",
        "cli-number",
        [*SWEEP_TOY, "--epsilons", "1,abc", "--out", SW],
        says="epsilon",
    ),
    # ------------------------------------------------------------- CSV inputs
    Case("csv-missing", "csv", [*RUN_CSV], says="bad.csv"),
    Case("csv-directory", "csv", ["run", "--csv", D, "--label", "y", *FAST]),
    Case("csv-empty", "csv", RUN_CSV, build=csv_text("")),
    Case("csv-header-only", "csv", RUN_CSV, build=csv_text("a,b,y\n")),
    Case("csv-no-label-column", "csv", RUN_CSV, says="y", build=csv_frame(lambda: small_frame())),
    Case(
        "csv-label-three-values",
        "csv",
        RUN_CSV,
        says="label",
        build=csv_frame(lambda: small_frame().assign(y=np.arange(300) % 3)),
    ),
    Case(
        "csv-label-one-class",
        "csv",
        RUN_CSV,
        says="label",
        build=csv_frame(lambda: small_frame().assign(y=1)),
    ),
    Case("csv-label-nan", "csv", RUN_CSV, build=csv_text("a,y\nx,1\ny,\nx,0\n" * 50)),
    Case(
        "csv-utf16",
        "csv",
        ["run", "--csv", f"{D}/bad.csv", "--label", "bought", *FAST, "--json"],
        expect="ok",
        build=csv_text(small_frame().to_csv(index=False).encode("utf-16")),
        check=_json_out(lambda r: _assert(r["n_train"] + r["n_test"] == 300, r)),
        notes="UTF-16 with a BOM is read (documented acceptance), all 300 records",
    ),
    Case(
        "csv-binary-garbage", "csv", RUN_CSV, build=csv_text(np.random.default_rng(0).bytes(5000))
    ),
    Case(
        "csv-duplicate-columns",
        "csv",
        RUN_CSV,
        says="color",
        build=csv_text("color,color,y\n" + "a,b,1\nb,a,0\n" * 100),
    ),
    Case("csv-ragged", "csv", RUN_CSV, build=csv_text("a,b,y\nx,1,0\ny\nx,2,1,5,6\n")),
    Case("csv-only-label", "csv", RUN_CSV, build=csv_text("y\n1\n0\n" * 50)),
    Case("csv-huge-line", "csv", RUN_CSV, build=csv_text("a,y\n" + "x" * 30_000_000 + ",1\n")),
    Case(
        "csv-two-id-columns",
        "csv",
        RUN_CSV,
        says="features",
        build=csv_frame(two_id_columns),
        notes="size budget: refused before allocation",
    ),
    Case(
        "aggregate-two-id-columns",
        "csv",
        [*AGG_BAD, "--out", f"{D}/r_ids"],
        says="features",
        build=csv_frame(two_id_columns),
    ),
    Case(
        "csv-wide-column-unseen-other",
        "csv",
        [*RUN_CSV, "--unseen", "other"],
        build=csv_frame(one_wide_column),
        notes="size budget",
    ),
    Case(
        "test-csv-other-columns",
        "csv",
        [*RUN_GOOD, "--test-csv", f"{D}/bad.csv", *FAST],
        says="color",
        build=csv_text("x,bought\n1,0\n2,1\n"),
    ),
    Case(
        "csv-hostile-names-aggregate",
        "csv",
        ["aggregate", "--csv", f"{D}/bad.csv", "--label", "bought", "--out", f"{D}/frel"],
        expect="ok",
        build=csv_frame(_hostile_names),
        check=_formula_release_roundtrip,
        notes="formula neutralisation: OWASP's rule; read back gives the originals",
    ),
    # ------------------------------------------------------------- releases
    Case("release-no-manifest", "release", ["run", "--tables", D, *FAST]),
    Case(
        "release-not-json",
        "release",
        RUN_REL,
        says="release.json",
        build=raw_manifest(b"{not json"),
    ),
    Case(
        "release-not-utf8",
        "release",
        RUN_REL,
        says="release.json",
        build=raw_manifest(b'{"format": "\xff\xfe"}'),
    ),
    Case("release-array", "release", RUN_REL, build=raw_manifest(b"[1, 2, 3]")),
    Case("release-empty-file", "release", RUN_REL, build=raw_manifest(b"")),
    release_case("release-n-string", _set(["n"], "many"), says="n"),
    Case(
        "release-n-infinity",
        "release",
        RUN_REL,
        says="n",
        build=raw_manifest(b'{"format": "aggmrf-release", "version": 1, "n": Infinity}'),
    ),
    release_case("release-n-1e18", _set(["n"], 1e18), says="n"),
    release_case("release-n-negative", _set(["n"], -5), says="n"),
    release_case("release-n-zero", _set(["n"], 0), says="n"),
    release_case("release-n-float", _set(["n"], 300.5), says="n"),
    release_case("release-version-99", _set(["version"], 99), says="version"),
    release_case("release-version-string", _set(["version"], "1"), says="version"),
    release_case("release-format-wrong", _set(["format"], "something-else"), says="format"),
    release_case(
        "release-modalities-int",
        lambda m: m["features"][0].__setitem__("modalities", 5),
        says="modalities",
    ),
    release_case(
        "release-modalities-30k-squared",
        _wide_release,
        notes="size budget: 9·10⁸ rows refused before allocation",
    ),
    release_case("release-noise-string", _set(["noise"], "gaussian"), says="noise"),
    release_case("release-features-empty", _set(["features"], [])),
    release_case(
        "release-features-duplicate", lambda m: m["features"].__setitem__(1, dict(m["features"][0]))
    ),
    release_case("release-label-not-string", _set(["label"], {"a": 1})),
    release_case("release-tables-not-list", _set(["tables"], 3)),
    Case("release-file-traversal", "release", RUN_REL, build=table_file_to("../../etc/passwd")),
    Case("release-file-absolute", "release", RUN_REL, build=table_file_to("/etc/passwd")),
    Case("release-file-symlink", "release", RUN_REL, build=_symlink_out),
    Case("release-file-dev-zero", "release", RUN_REL, build=table_file_to("/dev/zero"), hang=True),
    Case("release-file-fifo", "release", RUN_REL, build=_fifo, hang=True),
    Case("release-file-int", "release", RUN_REL, build=table_file_to(5)),
    Case("release-file-dot", "release", RUN_REL, build=table_file_to(".")),
    Case("release-file-missing", "release", RUN_REL, build=table_file_to("nope.csv")),
    Case("release-file-huge", "release", RUN_REL, build=_huge_table_file, hang=True),
    table_case("table-count-nan", lambda t: t.assign(count="nan")),
    table_case("table-count-inf", lambda t: t.assign(count="inf")),
    table_case("table-count-text", lambda t: t.assign(count="many")),
    table_case("table-count-negative-exact", lambda t: t.assign(count="-4")),
    table_case(
        "table-labelsum-above-count",
        lambda t: t.assign(label_sum=(t["count"].astype(float) + 5).astype(str)),
    ),
    table_case(
        "table-unknown-modality",
        lambda t: pd.concat([t, t.iloc[:1].assign(**{t.columns[0]: "zzz"})]),
    ),
    table_case("table-row-missing", lambda t: t.iloc[1:]),
    table_case("table-row-duplicated", lambda t: pd.concat([t, t.iloc[:1]])),
    table_case("table-column-missing", lambda t: t.drop(columns=["label_sum"])),
    table_case("table-empty-file", lambda t: t.iloc[:0]),
    release_case(
        "release-intercept-negative",
        _set(["intercept"], {"count": 300, "label_sum": -50}),
        says="intercept",
    ),
    Case(
        "release-n-inconsistent-refused",
        "release",
        [*RUN_REL, "--json"],
        says="'n' = 3,000",
        build=release_with(_set(["n"], 3000)),
        notes="n disagrees with the table totals: refused, it sets the scale of training",
    ),
    Case(
        "release-n-inconsistent-lenient-warns",
        "release",
        [*RUN_REL, "--json", "--lenient"],
        expect="ok",
        warns=True,
        build=release_with(_set(["n"], 3000)),
        check=_json_out(lambda r: None),
        notes="--lenient: the same contradiction is a warning",
    ),
    Case(
        "run-tables-no-json-no-nan",
        "release",
        RUN_RELEASE,
        expect="ok",
        check=lambda d, out, err: (
            None if "nan" not in out.lower() else (_ for _ in ()).throw(AssertionError(out))
        ),
    ),
    # ------------------------------------------------------------- models
    Case("model-missing", "model", PREDICT, says="bad_model.json"),
    Case("model-directory", "model", ["predict", "--model", D, "--csv", f"{D}/test.csv"]),
    Case("model-not-json", "model", PREDICT, build=model_raw("{nope")),
    Case("model-empty", "model", PREDICT, build=model_raw("")),
    Case("model-array", "model", PREDICT, build=model_raw("[]")),
    model_case("model-theta-infinity", _theta(float("inf")), says="theta"),
    model_case("model-theta-1e308", _theta(1e308), says="theta"),
    model_case("model-theta-nan", _theta(float("nan")), says="theta"),
    model_case("model-theta-string", _theta("x"), says="theta"),
    model_case("model-theta-short", _theta_len),
    model_case("model-version-2", _set(["version"], 2), says="version"),
    model_case("model-version-banana", _set(["version"], "banana"), says="version"),
    model_case("model-format-wrong", _set(["format"], "other"), says="format"),
    Case(
        "predict-unseen-value",
        "model",
        ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/bad.csv"],
        expect="ok",
        warns=True,
        check=lambda d, out, err: _assert("'purple'" in err, err),
        build=csv_frame(lambda: small_frame(50).assign(color="purple")),
    ),
    Case(
        "predict-missing-column",
        "model",
        ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/bad.csv"],
        says="color",
        build=csv_frame(lambda: small_frame(50).drop(columns=["color"])),
    ),
    Case(
        "predict-good",
        "model",
        [*PREDICT_GOOD, "--out", f"{D}/p.csv"],
        expect="ok",
        check=_finite_probabilities,
    ),
    Case(
        "predict-csv-model",
        "model",
        ["predict", "--model", f"{D}/model.csv", "--csv", f"{D}/test.csv", "--out", f"{D}/p.csv"],
        expect="ok",
        check=_finite_probabilities,
    ),
    # ------------------------------------------------------------- outputs
    Case(
        "predict-out-missing-dir",
        "output",
        [*PREDICT_GOOD, "--out", f"{D}/nodir/p.csv"],
        says="nodir",
    ),
    Case("predict-out-is-dir", "output", [*PREDICT_GOOD, "--out", D]),
    Case(
        "export-model-bad-extension",
        "output",
        [*RUN_RELEASE, "--export-model", f"{D}/m.txt"],
        says=".json",
    ),
    Case(
        "export-model-missing-dir",
        "output",
        [*RUN_RELEASE, "--export-model", f"{D}/nodir/m.json"],
        says="nodir",
    ),
    Case("aggregate-out-is-file", "output", [*AGG_GOOD, "--out", f"{D}/good.csv"]),
    # ------------------------------------------------------------- more CLI numbers
    Case("seed-hex", "cli-number", [*RUN_TOY, "--seed", "0x10"], says="seed"),
    Case(
        "seed-max-ok",
        "cli-number",
        [*RUN_TOY, "--seed", str(2**63 - 1), "--json"],
        expect="ok",
        check=_json_out(lambda r: _assert(r["settings"]["seed"] == 2**63 - 1, r)),
    ),
    Case("gibbs-negative", "cli-number", [*RUN_TOY, "--gibbs-samples", "-5"], says="gibbs"),
    Case(
        "iterations-huge",
        "cli-number",
        [*RUN_TOY, "--iterations", "10000000000"],
        says="iterations",
    ),
    Case("epsilon-inf", "cli-number", [*GAUSSIAN, "--epsilon", "inf"], says="epsilon"),
    Case("delta-nan", "cli-number", [*GAUSSIAN, "--epsilon", "1", "--delta", "nan"], says="delta"),
    Case("mechanism-without-epsilon", "cli-number", LAPLACE, says="epsilon"),
    Case("delta-without-mechanism", "cli-number", [*RUN_TOY, "--delta", "1e-6"], says="delta"),
    Case(
        "sweep-delta-laplace",
        "cli-number",
        [*SWEEP_TOY, "--mechanism", "laplace", "--delta", "1e-6", "--epsilons", "1", "--out", SW],
        says="delta",
    ),
    Case(
        "test-fraction-nan",
        "cli-number",
        [*RUN_GOOD, "--test-fraction", "nan", *FAST],
        says="test-fraction",
    ),
    Case("bins-huge", "cli-number", [*RUN_GOOD, "--bins", "10000000", *FAST], says="bins"),
    Case("n-zero", "cli-number", ["run", "--dataset", "xor", "--n", "0", *FAST], says="n"),
    Case("xor-n-negative", "cli-number", ["xor", "--n", "-5"], says="n"),
    Case("xor-seed-negative", "cli-number", ["xor", "--seed", "-1"], says="seed"),
    Case("max-rows-zero", "cli-number", [*RUN_TOY, "--max-rows", "0"], says="max-rows"),
    Case("min-count-zero", "cli-number", [*RUN_GOOD, "--min-count", "0", *FAST], says="min-count"),
    Case("features-empty-list", "cli-number", [*RUN_TOY, "--features", ","]),
    Case(
        "sweep-epsilons-zero",
        "cli-number",
        [*SWEEP_TOY, "--epsilons", "0", "--out", SW],
        says="epsilon",
    ),
    Case("no-command", "cli-number", []),
    Case("unknown-command", "cli-number", ["frobnicate"]),
    Case(
        "tables-with-epsilon",
        "cli-number",
        ["run", "--tables", f"{D}/release", "--mechanism", "gaussian", "--epsilon", "1", *FAST],
        says="release",
    ),
    # ------------------------------------------------------------- more CSV inputs
    Case(
        "csv-fifo",
        "csv",
        ["run", "--csv", f"{D}/fifo_records.csv", "--label", "y", *FAST],
        build=_fifo_csv,
        hang=True,
        says="FIFO",
    ),
    Case(
        "csv-dev-zero",
        "csv",
        ["run", "--csv", "/dev/zero", "--label", "y", *FAST],
        hang=True,
        says="device",
    ),
    Case(
        "csv-duplicate-after-strip",
        "csv",
        RUN_CSV,
        says="duplicate",
        build=csv_text("a, a ,y\n" + "x,z,1\nz,x,0\n" * 50),
    ),
    Case(
        "csv-id-column",
        "csv",
        RUN_CSV,
        says="drop-features",
        build=csv_frame(one_wide_column),
        notes="an identifier column is refused",
    ),
    Case(
        "aggregate-two-ids-min-count",
        "csv",
        [*AGG_BAD, "--min-count", "2", "--out", f"{D}/r_ids_ok"],
        expect="ok",
        build=csv_frame(two_id_columns),
        check=_is_ok_release("r_ids_ok", 20_000),
        notes="--min-count merges the one-off IDs into '(other)': the budget fix works",
    ),
    Case(
        "aggregate-max-rows-tiny",
        "csv",
        [*AGG_GOOD, "--max-rows", "10", "--out", f"{D}/r_small"],
        says="max-rows",
    ),
    Case(
        "csv-latin1",
        "csv",
        ["aggregate", "--csv", f"{D}/bad.csv", "--label", "bought", "--out", f"{D}/r_latin1"],
        expect="ok",
        build=csv_text(_latin1_frame()),
        check=_is_ok_release("r_latin1", 200),
        notes="Latin-1 text is read (documented acceptance)",
    ),
    Case(
        "csv-gzip-garbage",
        "csv",
        RUN_CSV,
        says="gzip",
        build=csv_text(b"\x1f\x8b" + b"not really gzip" * 10),
    ),
    Case("csv-label-is-feature-name", "csv", [*RUN_GOOD, "--features", "bought", *FAST]),
    # ------------------------------------------------------------- more releases
    Case(
        "release-file-subdir",
        "release",
        RUN_REL,
        build=table_file_to("sub/x.csv"),
        says="plain file name",
    ),
    Case(
        "release-file-backslash",
        "release",
        RUN_REL,
        build=table_file_to("..\\x.csv"),
        says="plain file name",
    ),
    Case("release-file-empty-name", "release", RUN_REL, build=table_file_to("")),
    Case("release-file-dotdot", "release", RUN_REL, build=table_file_to("..")),
    Case("release-file-list", "release", RUN_REL, build=table_file_to(["a.csv"])),  # type: ignore[arg-type]
    Case(
        "release-file-symlink-inside",
        "release",
        [*RUN_REL, "--json"],
        expect="ok",
        build=_symlink_inside,
        check=_release_reads_back,
        notes="a symlink to a file inside the release directory is followed",
    ),
    Case(
        "release-json-duplicate-key",
        "release",
        RUN_REL,
        says="twice",
        build=raw_manifest(b'{"n": 300, "n": 3000}'),
    ),
    Case("release-json-deep", "release", RUN_REL, build=raw_manifest(_nested_json(100_000))),
    Case(
        "release-json-utf16",
        "release",
        RUN_REL,
        says="must be",
        build=raw_manifest('{"n": "many"}'.encode("utf-16")),
    ),
    release_case("release-feature-name-int", _feature(0, "name", 5), says="name"),
    release_case(
        "release-modality-object", _feature(0, "modalities", [{"a": 1}, "b"]), says="modalities"
    ),
    release_case("release-modalities-empty", _feature(0, "modalities", []), says="modalities"),
    release_case("release-codes-out-of-range", _feature(0, "codes", [0, 1, 99]), says="code"),
    release_case("release-kind-unknown", _feature(0, "kind", "ordinal"), says="kind"),
    release_case("release-edges-strings", _feature(2, "edges", ["a", "b"]), says="edges"),
    release_case(
        "release-table-four-features",
        _table_entry(3, "features", ["a", "b", "c", "d"]),
        says="features",
    ),
    release_case("release-table-unknown-feature", _table_entry(3, "features", ["zzz"]), says="zzz"),
    release_case(
        "release-noise-epsilon-negative",
        _set(["noise"], {"mechanism": "gaussian", "epsilon": -1}),
        says="epsilon",
    ),
    release_case(
        "release-noise-delta-2",
        _set(["noise"], {"mechanism": "gaussian", "epsilon": 1, "delta": 2}),
        says="delta",
    ),
    release_case(
        "release-noise-mechanism-unknown",
        _set(["noise"], {"mechanism": "uniform", "sigma": 3}),
        says="mechanism",
    ),
    release_case(
        "release-noise-sigma-string",
        _set(["noise"], {"mechanism": "gaussian", "sigma": "3"}),
        says="sigma",
    ),
    release_case("release-intercept-string", _set(["intercept"], "300"), says="intercept"),
    release_case(
        "release-intercept-count-text",
        _set(["intercept"], {"count": "300", "label_sum": 3}),
        says="count",
    ),
    release_case(
        "release-positive-label-list", _set(["positive_label"], [1]), says="positive_label"
    ),
    release_case("release-classes-three", _set(["classes"], ["a", "b", "c"]), says="classes"),
    release_case("release-version-bool", _set(["version"], True), says="version"),
    Case(
        "table-duplicate-header",
        "release",
        RUN_REL,
        says="count",
        build=_table_header("color,size,count,count"),
    ),
    Case(
        "table-utf16",
        "release",
        RUN_REL,
        says="UTF-16",
        build=_table_bytes("color,count,label_sum\nred,1,0\n".encode("utf-16")),
    ),
    Case(
        "table-nul-bytes",
        "release",
        RUN_REL,
        says="NUL",
        build=_table_bytes(b"color,count,label_sum\n\x00\x00\x00\n"),
    ),
    Case(
        "table-not-a-table",
        "release",
        RUN_REL,
        says="none named",
        build=_table_bytes(b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1\n"),
    ),
    Case(
        "release-max-rows",
        "release",
        [*RUN_REL, "--max-rows", "20"],
        says="max-rows",
        build=_copy_release,
    ),
    # ------------------------------------------------------------- more models
    Case(
        "model-fifo",
        "model",
        ["predict", "--model", f"{D}/fifo_model.json", "--csv", f"{D}/test.csv"],
        hang=True,
        says="FIFO",
        build=lambda d: (
            None if (d / "fifo_model.json").exists() else os.mkfifo(d / "fifo_model.json")
        ),
    ),
    Case(
        "model-dev-zero",
        "model",
        ["predict", "--model", "/dev/zero", "--csv", f"{D}/test.csv"],
        hang=True,
        says="device",
    ),
    model_case("model-intercept-string", _set(["intercept", "theta"], "big"), says="intercept"),
    Case(
        "model-mu-nan",
        "model",
        PREDICT,
        says="mu",
        build=model_raw(
            '{"format": "aggmrf-model", "version": 1, "intercept": {"theta": 0, "mu": NaN}}'
        ),
    ),
    model_case(
        "model-values-short",
        lambda m: m["tables"][1]["rows"][0].__setitem__("values", []),
        says="values",
    ),
    model_case(
        "model-features-four",
        lambda m: m["tables"][0].__setitem__("features", ["a", "b", "c", "d"]),
        says="features",
    ),
    model_case("model-schema-missing", lambda m: m.pop("schema"), says="schema"),
    model_case("model-tables-object", _set(["tables"], {"a": 1}), says="tables"),
    Case(
        "model-duplicate-key",
        "model",
        PREDICT,
        says="twice",
        build=model_raw('{"format": "aggmrf-model", "format": "x"}'),
    ),
    Case(
        "model-not-utf8",
        "model",
        PREDICT,
        says="UTF-8",
        build=lambda d: (d / "bad_model.json").write_bytes(b'{"format": "\xff"}'),
    ),
    model_case("model-over-budget", _model_schema_wide, says="rows"),
    Case(
        "model-theta-saturates-warns",
        "model",
        [*PREDICT, "--out", f"{D}/p.csv"],
        expect="ok",
        warns=True,
        build=model_with(_set(["intercept", "theta"], 5000.0)),
        check=_saturating_probabilities,
    ),
    Case("model-csv-theta-text", "model", PREDICT_CSV, says="theta", build=_model_csv_theta("abc")),
    Case("model-csv-theta-inf", "model", PREDICT_CSV, says="theta", build=_model_csv_theta("inf")),
    Case(
        "model-csv-duplicate-header",
        "model",
        PREDICT_CSV,
        says="same name",
        build=_model_csv_cell("theta,mu", "theta,theta"),
    ),
    # ------------------------------------------------------------- more outputs
    Case(
        "aggregate-out-missing-parent",
        "output",
        [*AGG_GOOD, "--out", f"{D}/nodir/rel"],
        says="nodir",
    ),
    Case(
        "aggregate-long-out-missing-dir",
        "output",
        [*AGG_GOOD, "--format", "long", "--out", f"{D}/nodir/rel.csv"],
        says="nodir",
    ),
    Case("export-model-is-dir", "output", [*RUN_RELEASE, "--export-model", D]),
    Case(
        "sweep-out-is-dir",
        "output",
        [*SWEEP_TOY, "--epsilons", "1", "--iterations", "2", "--out", D],
    ),
    Case(
        "sweep-out-missing-dir",
        "output",
        [*SWEEP_TOY, "--epsilons", "1", "--iterations", "2", "--out", f"{D}/nodir/deeper/sw"],
        says="nodir",
    ),
]
