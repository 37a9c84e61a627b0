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
    assert main(["aggregate", "--csv", str(d / "good.csv"), "--label", "bought",
                 "--out", str(d / "release")]) == 0  # fmt: skip
    assert main(["run", "--tables", str(d / "release"), "--export-model", str(d / "model.json"),
                 *FAST, "--json"]) == 0  # fmt: skip
    assert main(["run", "--tables", str(d / "release"), "--export-model", str(d / "model.csv"),
                 *FAST, "--json"]) == 0  # fmt: skip


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
                assert not cell[:1] in ("=", "+", "-", "@", "\t", "\r") or _is_number(cell), cell
    from aggmrf_explore.cli import main

    assert main(["run", "--tables", str(rel), *FAST, "--json",
                 "--export-model", str(d / "fmodel.csv")]) == 0  # fmt: skip
    m = json.loads((rel / "release.json").read_text(encoding="utf-8"))
    names = [f["name"] for f in m["features"]]
    assert "=cmd|' /C calc'!A0" in names and "<img src=x onerror=alert(1)>" in names
    for line in (d / "fmodel.csv").read_text(encoding="utf-8").splitlines():
        for cell in line.split(","):
            cell = cell.strip('"')
            assert not cell[:1] in ("=", "+", "@") or _is_number(cell), cell


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


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
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(("x" * 1_000_000 + "\n") * 300)  # 300 MB of junk appended


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


D = "{d}"
RUN_CSV = ["run", "--csv", f"{D}/bad.csv", "--label", "y", *FAST]
RUN_TOY = ["run", "--dataset", "toy", *FAST]
RUN_REL = ["run", "--tables", f"{D}/rel", *FAST]
PREDICT = ["predict", "--model", f"{D}/bad_model.json", "--csv", f"{D}/test.csv"]

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
    Case("epsilon-zero", "cli-number", [*RUN_TOY, "--mechanism", "gaussian", "--epsilon", "0"],
         says="epsilon"),  # fmt: skip
    Case("epsilon-neg", "cli-number", [*RUN_TOY, "--mechanism", "laplace", "--epsilon", "-1"],
         says="epsilon"),  # fmt: skip
    Case("epsilon-nan", "cli-number", [*RUN_TOY, "--mechanism", "laplace", "--epsilon", "nan"],
         says="epsilon"),  # fmt: skip
    Case("delta-2", "cli-number", [*RUN_TOY, "--mechanism", "gaussian", "--epsilon", "1",
                                    "--delta", "2"], says="delta"),  # fmt: skip
    Case("delta-zero", "cli-number", [*RUN_TOY, "--mechanism", "gaussian", "--epsilon", "1",
                                       "--delta", "0"], says="delta"),  # fmt: skip
    Case("delta-with-laplace", "cli-number", [*RUN_TOY, "--mechanism", "laplace", "--epsilon",
                                               "1", "--delta", "1e-7"], says="delta"),  # fmt: skip
    Case("epsilon-without-mechanism", "cli-number", [*RUN_TOY, "--epsilon", "1"],
         says="mechanism"),  # fmt: skip
    Case("epsilon-tiny-warns", "cli-number", [*RUN_TOY, "--mechanism", "gaussian", "--epsilon",
                                               "1e-9", "--json"], expect="ok", warns=True,
         check=_json_out(lambda r: r["noise"]["sigma"] > 1e6 and True)),  # fmt: skip
    Case("test-fraction-0.999", "cli-number",
         ["run", "--csv", f"{D}/good.csv", "--label", "bought", "--test-fraction", "0.999", *FAST],
         says="test-fraction"),  # fmt: skip
    Case("test-fraction-1.5", "cli-number",
         ["run", "--csv", f"{D}/good.csv", "--label", "bought", "--test-fraction", "1.5", *FAST],
         says="test-fraction"),  # fmt: skip
    Case("test-fraction-zero", "cli-number",
         ["run", "--csv", f"{D}/good.csv", "--label", "bought", "--test-fraction", "0", *FAST],
         says="test-fraction"),  # fmt: skip
    Case("n-negative", "cli-number", ["run", "--dataset", "xor", "--n", "-3", *FAST], says="n"),
    Case("bins-zero", "cli-number",
         ["run", "--csv", f"{D}/good.csv", "--label", "bought", "--bins", "0", *FAST],
         says="bins"),  # fmt: skip
    Case("unknown-dataset", "cli-number", ["run", "--dataset", "nope", *FAST], says="dataset"),
    Case("unknown-flag", "cli-number", [*RUN_TOY, "--frobnicate"]),
    Case("unknown-feature", "cli-number", [*RUN_TOY, "--features", "nope"], says="nope"),
    Case("sweep-bad-epsilons", "cli-number",
         ["sweep", "--dataset", "toy", "--epsilons", "1,abc", "--out", f"{D}/sw"],
         says="epsilon"),  # fmt: skip
    # ------------------------------------------------------------- CSV inputs
    Case("csv-missing", "csv", [*RUN_CSV], says="bad.csv"),
    Case("csv-directory", "csv", ["run", "--csv", D, "--label", "y", *FAST]),
    Case("csv-empty", "csv", RUN_CSV, build=csv_text("")),
    Case("csv-header-only", "csv", RUN_CSV, build=csv_text("a,b,y\n")),
    Case("csv-no-label-column", "csv", RUN_CSV, says="y",
         build=csv_frame(lambda: small_frame())),  # fmt: skip
    Case("csv-label-three-values", "csv", RUN_CSV, says="label",
         build=csv_frame(lambda: small_frame().assign(y=np.arange(300) % 3))),  # fmt: skip
    Case("csv-label-one-class", "csv", RUN_CSV, says="label",
         build=csv_frame(lambda: small_frame().assign(y=1))),  # fmt: skip
    Case("csv-label-nan", "csv", RUN_CSV,
         build=csv_text("a,y\nx,1\ny,\nx,0\n" * 50)),  # fmt: skip
    Case("csv-utf16", "csv", ["run", "--csv", f"{D}/bad.csv", "--label", "bought", *FAST],
         says="UTF-16", build=csv_text(small_frame().to_csv(index=False).encode("utf-16"))),  # fmt: skip
    Case("csv-binary-garbage", "csv", RUN_CSV,
         build=csv_text(np.random.default_rng(0).bytes(5000))),  # fmt: skip
    Case("csv-duplicate-columns", "csv", RUN_CSV, says="color",
         build=csv_text("color,color,y\n" + "a,b,1\nb,a,0\n" * 100)),  # fmt: skip
    Case("csv-ragged", "csv", RUN_CSV, build=csv_text("a,b,y\nx,1,0\ny\nx,2,1,5,6\n")),
    Case("csv-only-label", "csv", RUN_CSV, build=csv_text("y\n1\n0\n" * 50)),
    Case("csv-huge-line", "csv", RUN_CSV,
         build=csv_text("a,y\n" + "x" * 30_000_000 + ",1\n")),  # fmt: skip
    Case("csv-two-id-columns", "csv", RUN_CSV, says="features", build=csv_frame(two_id_columns),
         notes="size budget: refused before allocation"),  # fmt: skip
    Case("aggregate-two-id-columns", "csv",
         ["aggregate", "--csv", f"{D}/bad.csv", "--label", "y", "--out", f"{D}/r_ids"],
         says="features", build=csv_frame(two_id_columns)),  # fmt: skip
    Case("csv-wide-column-unseen-other", "csv", [*RUN_CSV, "--unseen", "other"],
         build=csv_frame(one_wide_column), notes="size budget"),  # fmt: skip
    Case("test-csv-other-columns", "csv",
         ["run", "--csv", f"{D}/good.csv", "--label", "bought", "--test-csv", f"{D}/bad.csv",
          *FAST], says="color", build=csv_text("x,bought\n1,0\n2,1\n")),  # fmt: skip
    Case("csv-hostile-names-aggregate", "csv",
         ["aggregate", "--csv", f"{D}/bad.csv", "--label", "bought", "--out", f"{D}/frel"],
         expect="ok", build=csv_frame(_hostile_names), check=_formula_release_roundtrip,
         notes="formula neutralisation: OWASP's rule; read back gives the originals"),  # fmt: skip
    # ------------------------------------------------------------- releases
    Case("release-no-manifest", "release", ["run", "--tables", D, *FAST]),
    Case("release-not-json", "release", RUN_REL, says="release.json",
         build=raw_manifest(b"{not json")),  # fmt: skip
    Case("release-not-utf8", "release", RUN_REL, says="release.json",
         build=raw_manifest(b'{"format": "\xff\xfe"}')),  # fmt: skip
    Case("release-array", "release", RUN_REL, build=raw_manifest(b"[1, 2, 3]")),
    Case("release-empty-file", "release", RUN_REL, build=raw_manifest(b"")),
    Case("release-n-string", "release", RUN_REL, says="n", build=release_with(_set(["n"], "many"))),
    Case("release-n-infinity", "release", RUN_REL, says="n",
         build=raw_manifest(b'{"format": "aggmrf-release", "version": 1, "n": Infinity}')),  # fmt: skip
    Case("release-n-1e18", "release", RUN_REL, says="n", build=release_with(_set(["n"], 1e18))),
    Case("release-n-negative", "release", RUN_REL, says="n", build=release_with(_set(["n"], -5))),
    Case("release-n-zero", "release", RUN_REL, says="n", build=release_with(_set(["n"], 0))),
    Case("release-n-float", "release", RUN_REL, says="n", build=release_with(_set(["n"], 300.5))),
    Case("release-version-99", "release", RUN_REL, says="version",
         build=release_with(_set(["version"], 99))),  # fmt: skip
    Case("release-version-string", "release", RUN_REL, says="version",
         build=release_with(_set(["version"], "1"))),  # fmt: skip
    Case("release-format-wrong", "release", RUN_REL, says="format",
         build=release_with(_set(["format"], "something-else"))),  # fmt: skip
    Case("release-modalities-int", "release", RUN_REL, says="modalities",
         build=release_with(lambda m: m["features"][0].__setitem__("modalities", 5))),  # fmt: skip
    Case("release-modalities-30k-squared", "release", RUN_REL, build=release_with(_wide_release),
         notes="size budget: 9·10⁸ rows refused before allocation"),  # fmt: skip
    Case("release-noise-string", "release", RUN_REL, says="noise",
         build=release_with(_set(["noise"], "gaussian"))),  # fmt: skip
    Case("release-features-empty", "release", RUN_REL, build=release_with(_set(["features"], []))),
    Case("release-features-duplicate", "release", RUN_REL,
         build=release_with(lambda m: m["features"].__setitem__(1, dict(m["features"][0])))),  # fmt: skip
    Case("release-label-not-string", "release", RUN_REL,
         build=release_with(_set(["label"], {"a": 1}))),  # fmt: skip
    Case("release-tables-not-list", "release", RUN_REL, build=release_with(_set(["tables"], 3))),
    Case("release-file-traversal", "release", RUN_REL, build=table_file_to("../../etc/passwd")),
    Case("release-file-absolute", "release", RUN_REL, build=table_file_to("/etc/passwd")),
    Case("release-file-symlink", "release", RUN_REL, build=_symlink_out),
    Case("release-file-dev-zero", "release", RUN_REL, build=table_file_to("/dev/zero"), hang=True),
    Case("release-file-fifo", "release", RUN_REL, build=_fifo, hang=True),
    Case("release-file-int", "release", RUN_REL, build=table_file_to(5)),
    Case("release-file-dot", "release", RUN_REL, build=table_file_to(".")),
    Case("release-file-missing", "release", RUN_REL, build=table_file_to("nope.csv")),
    Case("release-file-huge", "release", RUN_REL, build=_huge_table_file, hang=True),
    Case("table-count-nan", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.assign(count="nan"))),  # fmt: skip
    Case("table-count-inf", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.assign(count="inf"))),  # fmt: skip
    Case("table-count-text", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.assign(count="many"))),  # fmt: skip
    Case("table-count-negative-exact", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.assign(count="-4"))),  # fmt: skip
    Case("table-labelsum-above-count", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.assign(label_sum=(t["count"].astype(float) + 5).astype(str)))),  # fmt: skip
    Case("table-unknown-modality", "release", RUN_REL,
         build=edit_table_csv(lambda t: pd.concat([t, t.iloc[:1].assign(**{t.columns[0]: "zzz"})]))),  # fmt: skip
    Case("table-row-missing", "release", RUN_REL, build=edit_table_csv(lambda t: t.iloc[1:])),
    Case("table-row-duplicated", "release", RUN_REL,
         build=edit_table_csv(lambda t: pd.concat([t, t.iloc[:1]]))),  # fmt: skip
    Case("table-column-missing", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.drop(columns=["label_sum"]))),  # fmt: skip
    Case("table-empty-file", "release", RUN_REL,
         build=edit_table_csv(lambda t: t.iloc[:0])),  # fmt: skip
    Case("release-intercept-negative", "release", RUN_REL, says="intercept",
         build=release_with(_set(["intercept"], {"count": 300, "label_sum": -50}))),  # fmt: skip
    Case("release-n-inconsistent-warns", "release", [*RUN_REL, "--json"], expect="ok", warns=True,
         build=release_with(_set(["n"], 3000)),
         check=_json_out(lambda r: None), notes="n disagrees with the table totals"),  # fmt: skip
    Case("run-tables-no-json-no-nan", "release", ["run", "--tables", f"{D}/release", *FAST],
         expect="ok", check=lambda d, out, err: None if "nan" not in out.lower() else
         (_ for _ in ()).throw(AssertionError(out))),  # fmt: skip
    # ------------------------------------------------------------- models
    Case("model-missing", "model", PREDICT, says="bad_model.json"),
    Case("model-directory", "model", ["predict", "--model", D, "--csv", f"{D}/test.csv"]),
    Case("model-not-json", "model", PREDICT, build=model_raw("{nope")),
    Case("model-empty", "model", PREDICT, build=model_raw("")),
    Case("model-array", "model", PREDICT, build=model_raw("[]")),
    Case("model-theta-infinity", "model", PREDICT, says="theta",
         build=model_with(_theta(float("inf")))),  # fmt: skip
    Case("model-theta-1e308", "model", PREDICT, says="theta", build=model_with(_theta(1e308))),
    Case("model-theta-nan", "model", PREDICT, says="theta", build=model_with(_theta(float("nan")))),
    Case("model-theta-string", "model", PREDICT, says="theta", build=model_with(_theta("x"))),
    Case("model-theta-short", "model", PREDICT, build=model_with(_theta_len)),
    Case("model-version-2", "model", PREDICT, says="version", build=model_with(_set(["version"], 2))),
    Case("model-version-banana", "model", PREDICT, says="version",
         build=model_with(_set(["version"], "banana"))),  # fmt: skip
    Case("model-format-wrong", "model", PREDICT, says="format",
         build=model_with(_set(["format"], "other"))),  # fmt: skip
    Case("predict-unseen-value", "model",
         ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/bad.csv"], says="purple",
         build=csv_frame(lambda: small_frame(50).assign(color="purple"))),  # fmt: skip
    Case("predict-missing-column", "model",
         ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/bad.csv"], says="color",
         build=csv_frame(lambda: small_frame(50).drop(columns=["color"]))),  # fmt: skip
    Case("predict-good", "model",
         ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/test.csv", "--out",
          f"{D}/p.csv"], expect="ok", check=_finite_probabilities),  # fmt: skip
    Case("predict-csv-model", "model",
         ["predict", "--model", f"{D}/model.csv", "--csv", f"{D}/test.csv", "--out",
          f"{D}/p.csv"], expect="ok", check=_finite_probabilities),  # fmt: skip
    # ------------------------------------------------------------- outputs
    Case("predict-out-missing-dir", "output",
         ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/test.csv", "--out",
          f"{D}/nodir/p.csv"], says="nodir"),  # fmt: skip
    Case("predict-out-is-dir", "output",
         ["predict", "--model", f"{D}/model.json", "--csv", f"{D}/test.csv", "--out", D]),  # fmt: skip
    Case("export-model-bad-extension", "output",
         ["run", "--tables", f"{D}/release", *FAST, "--export-model", f"{D}/m.txt"],
         says=".json"),  # fmt: skip
    Case("export-model-missing-dir", "output",
         ["run", "--tables", f"{D}/release", *FAST, "--export-model", f"{D}/nodir/m.json"],
         says="nodir"),  # fmt: skip
    Case("aggregate-out-is-file", "output",
         ["aggregate", "--csv", f"{D}/good.csv", "--label", "bought", "--out", f"{D}/good.csv"]),  # fmt: skip
    Case("sweep-out-missing-dir", "output",
         ["sweep", "--dataset", "toy", "--epsilons", "1", "--iterations", "2", "--out",
          f"{D}/nodir/deeper/sw"], says="nodir"),  # fmt: skip
]
