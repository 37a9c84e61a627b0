"""The AdKDD'21 challenge format: import, export, round trip, malformed files, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aggmrf_explore import AggMRFError, TableLayout, aggregate
from aggmrf_explore.cli import main
from aggmrf_explore.datasets.criteo import write_criteo_release
from aggmrf_explore.io import read_release
from aggmrf_explore.io.criteo import OTHER, import_criteo, read_criteo, write_criteo
from aggmrf_explore.privacy import GaussianMechanism, release
from aggmrf_explore.tables.suppression import apply_suppression

M = (7, 5, 4, 3)


def _known_release(seed: int = 0):
    """A known noisy release with suppressed pair rows: (click data, sale sums (K,))."""
    rng = np.random.default_rng(seed)
    names = [f"hash_{i}" for i in (0, 1, 2, 5)]  # ids need not be contiguous
    labels = [[str(10 * v + 3) for v in range(m)] for m in M]
    lay = TableLayout.all_pairs(M, names, modality_labels=labels)
    n = 3000
    X = np.column_stack([np.minimum(rng.zipf(1.6, n) - 1, m - 1) for m in M]).astype(np.int32)
    click = (rng.random(n) < 0.3).astype(np.int64)
    sale = (rng.random(n) < 0.3 * click + 0.02).astype(np.int64)
    agg = aggregate(X, click, lay)
    agg_sale = aggregate(X, sale, lay)
    mech = GaussianMechanism.from_dict({"mechanism": "gaussian", "sigma": 17.0}, lay)
    noisy = release(agg, mech, seed=1)
    noise_sale = np.random.default_rng(2).normal(0, 17.0, lay.K)
    pairs = {i: 10.0 for i, t in enumerate(lay.tables) if len(t) == 2}
    sup = apply_suppression(noisy, pairs)
    sale_sums = agg_sale.c + noise_sale
    sale_sums[sup.suppression.rows] = 0.0
    return sup, sale_sums


@pytest.fixture(scope="module")
def known():
    return _known_release()


@pytest.fixture(scope="module")
def files(known, tmp_path_factory):
    d = tmp_path_factory.mktemp("criteo")
    data, sale = known
    p, s = write_criteo(data, sale, d / "aggregated_pairs.csv", d / "aggregated_singles.csv")
    return p, s


def test_written_files_have_the_challenge_schema(files):
    p, s = files
    pairs, singles = pd.read_csv(p), pd.read_csv(s)
    assert list(pairs.columns) == [
        "Unnamed: 0",
        "feature_1_id",
        "feature_2_id",
        "feature_1_value",
        "feature_2_value",
        "c",
        "click",
        "sale",
    ]
    assert list(singles.columns) == [
        "Unnamed: 0",
        "feature_1_id",
        "feature_1_value",
        "c",
        "click",
        "sale",
    ]
    assert set(singles["feature_1_id"]) == {0, 1, 2, 5}


def test_round_trip_same_tables_and_metadata(known, files):
    data, sale = known
    rel = read_criteo(*files)
    got, lay = rel.data, rel.data.layout
    assert lay.feature_names == data.layout.feature_names
    # modalities in increasing integer order: the known release's order
    assert lay.modality_labels == data.layout.modality_labels
    assert lay.tables == data.layout.tables
    rel_rows = ~data.suppression.rows
    rel_rows[0] = False
    np.testing.assert_allclose(got.d[rel_rows], data.d[rel_rows], rtol=1e-12)
    np.testing.assert_allclose(got.c[rel_rows], data.c[rel_rows], rtol=1e-12)
    np.testing.assert_allclose(rel.sale[rel_rows], sale[rel_rows], rtol=1e-12)
    np.testing.assert_array_equal(got.suppression.rows, data.suppression.rows)
    assert got.suppression.thresholds == data.suppression.thresholds
    assert got.noise.std == pytest.approx(17.0)
    # the intercept: the mean of the single tables' totals
    singles = [i for i, t in enumerate(lay.tables) if len(t) == 1]
    tot = np.mean([data.d[lay.offsets[i] : lay.offsets[i + 1]].sum() for i in singles])
    assert got.d[0] == pytest.approx(tot) and got.n == round(tot)


def test_import_writes_a_two_label_release(known, files, tmp_path):
    data, sale = known
    meta_path, rel = import_criteo(*files, tmp_path / "rel")
    meta = json.loads(meta_path.read_text())
    assert meta["labels"] == ["click", "sale"]
    assert meta["noise"]["sigma"] == pytest.approx(17.0)
    pair_specs = [t for t in meta["tables"] if len(t["features"]) == 2]
    assert pair_specs and all(t["suppression"] == 10.0 for t in pair_specs)
    for label, sums in (("click", rel.data.c), ("sale", rel.sale)):
        r = read_release(tmp_path / "rel", label=label)
        assert r.schema.label == label
        np.testing.assert_allclose(r.data.c[1:], sums[1:], rtol=1e-12)
        np.testing.assert_allclose(r.data.d, rel.data.d, rtol=1e-12)
        np.testing.assert_array_equal(r.data.suppression.rows, data.suppression.rows)
    with pytest.raises(AggMRFError, match="no label 'conversion'"):
        read_release(tmp_path / "rel", label="conversion")


def test_max_modalities_folds_rare_values(files):
    rel = read_criteo(*files, max_modalities=4)
    lay = rel.data.layout
    assert all(m <= 4 for m in lay.n_modalities)
    f0 = lay.feature_names.index("hash_0")
    assert lay.modality_labels[f0][-1] == OTHER
    assert rel.report["folded_values"]["hash_0"] == 7 - 3
    full = read_criteo(*files)
    ti, ti_full = lay.table_index(("hash_0",)), full.data.layout.table_index(("hash_0",))
    block = rel.data.d[lay.offsets[ti] : lay.offsets[ti + 1]]
    block_full = full.data.d[
        full.data.layout.offsets[ti_full] : full.data.layout.offsets[ti_full + 1]
    ]
    assert block.sum() == pytest.approx(block_full.sum())  # folding keeps every record
    # the schema maps a folded value (and an unseen one) to "(other)"
    kept = lay.modality_labels[f0][:-1]
    folded = next(v for v in full.data.layout.modality_labels[f0] if v not in kept)
    X = rel.schema.transform(
        pd.DataFrame(
            {
                name: [int(folded), 999_999]
                if name == "hash_0"
                else [int(lay.modality_labels[f][0])] * 2
                for f, name in enumerate(lay.feature_names)
            }
        )
    )
    assert list(X[:, f0]) == [lay.n_modalities[f0] - 1] * 2


def _write(df: pd.DataFrame, path) -> str:
    df.to_csv(path)
    return str(path)


@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda p, s: (p.drop(columns=["sale"]), s), "no column 'sale'"),
        (lambda p, s: (p, s.drop(columns=["feature_1_value"])), "no column 'feature_1_value'"),
        (
            lambda p, s: (p.assign(feature_2_id=p["feature_2_id"].where(p.index != 3, 42)), s),
            "feature_2_id = 42 is not a feature id",
        ),
        (lambda p, s: (pd.concat([p, p.iloc[[5]]], ignore_index=True), s), "are the same row"),
        (lambda p, s: (p.assign(c=p["c"].where(p.index != 2, -500.0)), s), "below"),
        (lambda p, s: (p, s.assign(click=s["click"].where(s.index != 1, np.nan))), "not a finite"),
        (
            lambda p, s: (
                p.assign(
                    feature_1_value=p["feature_1_value"].astype(float).where(p.index != 0, 1.5)
                ),
                s,
            ),
            "not a non-negative integer",
        ),
        (
            lambda p, s: (
                p.assign(feature_2_value=p["feature_2_value"].where(p.index != 0, 777)),
                s,
            ),
            "is not a value of",
        ),
        (lambda p, s: (p.assign(feature_2_id=p["feature_1_id"]), s), "the same feature"),
    ],
)
def test_malformed_challenge_files_are_clear_errors(files, tmp_path, capsys, break_it, message):
    p, s = (pd.read_csv(f, index_col=0) for f in files)
    bp, bs = break_it(p, s)
    args = [_write(bp, tmp_path / "pairs.csv"), _write(bs, tmp_path / "singles.csv")]
    with pytest.raises(AggMRFError, match=message):
        read_criteo(*args)
    assert main(["import-criteo", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message.split()[0] in err[0]


def test_cli_import_then_run_each_label(tmp_path, capsys):
    """The generator's files → import-criteo → run --tables --label click|sale --test-csv."""
    src = tmp_path / "src"
    write_criteo_release(
        src, n=8_000, seed=3, n_sample=500, n_test=3000, cardinalities=np.array([16, 10, 6, 4])
    )
    out = tmp_path / "rel"
    pairs, singles = str(src / "aggregated_pairs.csv"), str(src / "aggregated_singles.csv")
    assert main(["import-criteo", pairs, singles, "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["pair_cells_suppressed"] > 0 and rep["noise_sigma"] == 17.0
    test_csv = str(src / "test.csv")
    for label in ("click", "sale"):
        flags = ["--iterations", "30", "--gibbs-samples", "2000", "--json"]
        code = main(["run", "--tables", str(out), "--label", label, "--test-csv", test_csv, *flags])
        assert code == 0
        res = json.loads(capsys.readouterr().out)
        assert res["label"] == label and res["n_test"] == 3000
        assert np.isfinite(res["models"]["mrf"]["nllh_test"])
        sup = res["suppression"]
        assert sup["suppressed_rows"] == rep["pair_cells_suppressed"]
        # the reported model's d̂ on the suppressed rows, per table and in total
        assert 0 <= sup["outside"] <= sup["suppressed_rows"] and sup["d_hat_sweeps"] > 0
        assert sum(v["outside"] for v in sup["tables"].values()) == sup["outside"]
        assert sum(v["suppressed"] for v in sup["tables"].values()) == sup["suppressed_rows"]
        assert all(
            np.isfinite(v["max_d_hat"]) and v["max_d_hat"] >= 0 for v in sup["tables"].values()
        )
        assert np.isfinite(sup["max_ratio"]) and sup["max_ratio"] > 0
    assert main(["run", "--tables", str(out), "--iterations", "20", "--gibbs-samples", "1000"]) == 0
    text = capsys.readouterr().out
    assert "suppressed rows:" in text and "k = 10" in text
    assert "the model's d̂ on them:" in text and "outside [0, k]" in text
    # with --validation-csv (no trainer left: a fresh chain at the chosen model, burnt in)
    sample = str(src / "granular_sample.csv")
    flags = ["--iterations", "20", "--gibbs-samples", "1000", "--json"]
    code = main(["run", "--tables", str(out), "--validation-csv", sample, *flags])
    assert code == 0
    sup = json.loads(capsys.readouterr().out)["suppression"]
    assert 0 <= sup["outside"] <= sup["suppressed_rows"] == rep["pair_cells_suppressed"]


# ---------------------------------------------------------------------- byte caps
def _cli_error(capsys, args: list[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err  # one line, no traceback
    return err[0]


def test_caps_refuse_huge_line_big_file_many_rows_and_binary(files, tmp_path, capsys):
    """Hostile challenge files are refused from their bytes, before pandas parses them, with
    one error line naming the cap and how to raise it; within the caps they import."""
    from aggmrf_explore.io.criteo import CsvCaps, scan_csv

    p, s = files
    out = ["--out", str(tmp_path / "out")]
    raw = p.read_bytes()
    n_rows = raw.count(b"\n") - 1
    assert scan_csv(p, "pairs") == n_rows
    # a huge line (100 MB of digits in one field), found while scanning 4 MiB blocks
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as fh:
        fh.write(raw.splitlines(keepends=True)[0] + b"0,1,2,3,4,")
        for _ in range(25):
            fh.write(b"7" * (4 << 20))
        fh.write(b",1,0,0\n")
    with pytest.raises(AggMRFError, match="line 2: longer than 4096 bytes"):
        read_criteo(huge, s)
    msg = _cli_error(capsys, ["import-criteo", str(huge), str(s), *out])
    assert "--max-line-bytes" in msg
    # a file over the byte cap (a small cap here), refused from its size
    with pytest.raises(AggMRFError, match="more than the .* allowed.*--max-file-mib"):
        read_criteo(p, s, caps=CsvCaps(max_bytes=1000))
    msg = _cli_error(capsys, ["import-criteo", str(huge), str(s), "--max-file-mib", "50", *out])
    assert "MiB, more than the 50 MiB allowed" in msg and "--max-file-mib 101" in msg
    # too many rows
    with pytest.raises(AggMRFError, match="more than the 10 rows allowed.*--max-lines"):
        read_criteo(p, s, caps=CsvCaps(max_lines=10))
    msg = _cli_error(capsys, ["import-criteo", str(p), str(s), "--max-lines", "10", *out])
    assert "--max-lines" in msg
    # binary garbage (a NUL byte), and bytes that are not CSV at all
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 100_000, np.uint8).tobytes())
    msg = _cli_error(capsys, ["import-criteo", str(garbage), str(s), *out])
    assert "binary data" in msg
    noise = tmp_path / "noise.csv"
    noise.write_bytes(bytes(range(1, 10)) * 50 + b"\n" + b"\xff\xfe;;" * 100 + b"\n")
    _cli_error(capsys, ["import-criteo", str(noise), str(s), *out])
    # a directory or a device is refused without being opened
    assert "not a regular file" in _cli_error(
        capsys, ["import-criteo", str(tmp_path), str(s), *out]
    )
    assert "device" in _cli_error(capsys, ["import-criteo", "/dev/zero", str(s), *out])
    # within the caps: the same files import
    assert read_criteo(p, s, caps=CsvCaps(max_lines=n_rows, max_line_bytes=200)).data.layout.K > 0
    with pytest.raises(AggMRFError, match="max_lines must be an integer"):
        CsvCaps(max_lines=0)


def test_genuine_noise_far_below_zero_is_kept_and_impossible_counts_refused(files, tmp_path):
    """σ = 17 noise on ~10⁵ counts reaches −5σ a few times per file: the floor scales with
    the file's size (false alarm 10⁻⁹ per file), so a −6σ value in a real file is kept,
    while a count no such noise explains is still refused."""
    from aggmrf_explore.io.criteo import CRITEO_SIGMA, negative_z

    p, s = (pd.read_csv(f, index_col=0) for f in files)
    z = negative_z(3 * len(p))
    assert 5.5 < z < 9
    kept = p.assign(c=p["c"].where(p.index != 2, -6.0 * CRITEO_SIGMA))
    args = [_write(kept, tmp_path / "pairs.csv"), _write(s, tmp_path / "singles.csv")]
    assert read_criteo(*args).data.layout.K > 0
    refused = p.assign(c=p["c"].where(p.index != 2, -(z + 0.5) * CRITEO_SIGMA))
    args = [_write(refused, tmp_path / "pairs2.csv"), args[1]]
    with pytest.raises(AggMRFError, match="does not explain it"):
        read_criteo(*args)
