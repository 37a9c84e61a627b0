"""``aggmrf-explore import-criteo PAIRS.csv SINGLES.csv --out DIR``: the AdKDD'21 challenge
files → one of our releases (two labels, click and sale; the declared Gaussian σ; the pairs'
suppression), which ``run --tables DIR --label click|sale`` trains on (:mod:`..io.criteo`)."""

from __future__ import annotations

import argparse
import time

from .report import print_json

__all__ = ["cmd_import_criteo"]


def cmd_import_criteo(args: argparse.Namespace) -> int:
    """``import-criteo``: read, write the release, report; returns the exit status."""
    from ..io.criteo import DEFAULT_CAPS, CsvCaps, import_criteo

    t0 = time.perf_counter()
    mib = getattr(args, "max_file_mib", None)
    caps = CsvCaps(
        max_bytes=int(mib) * 2**20 if mib else DEFAULT_CAPS.max_bytes,
        max_line_bytes=getattr(args, "max_line_bytes", None) or DEFAULT_CAPS.max_line_bytes,
        max_lines=getattr(args, "max_lines", None) or DEFAULT_CAPS.max_lines,
    )
    path, rel = import_criteo(
        args.pairs,
        args.singles,
        args.out,
        max_modalities=args.max_modalities,
        suppression=args.suppression,
        sigma=args.sigma,
        caps=caps,
    )
    rep = dict(rel.report)
    rep["release"] = str(path.parent)
    rep["n_rows"] = int(rel.data.layout.K)
    rep["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(rep)
        return 0
    print(
        f"wrote {path.parent} ({rep['n_features']} features, "
        f"{rel.data.layout.n_released_tables} tables, K = {rep['n_rows']} rows; "
        "labels click, sale)"
    )
    print(
        f"n ≈ {rep['n']} records (mean of the singles totals), "
        f"click rate {rep['click_rate']:.4f}, sale rate {rep['sale_rate']:.4f}"
    )
    print(
        f"noise: Gaussian σ = {rep['noise_sigma']:g}; "
        f"pairs: {rep['pair_rows_listed']} rows listed, "
        f"{rep['pair_cells_suppressed']} of {rep['pair_cells']} cells suppressed "
        f"(true count ≤ {rep['suppression']:g}; "
        f"{rep['source_pair_cells_left_out']} source cells left out)"
    )
    if rep["max_modalities"]:
        folded = {k: v for k, v in rep["folded_values"].items() if v}
        print(
            f"--max-modalities {rep['max_modalities']}: rare values folded into '(other)' in "
            f"{len(folded)} feature(s):"
        )
        for k, v in folded.items():
            share = rep["folded_count_share"][k]
            print(
                f"  {k}: {rep['cardinalities'][k]} values → {rep['modalities'][k]} modalities "
                f"({v} folded, {100 * share:.1f}% of its records)"
            )
        if rep.get("pair_rows_missing_cells"):
            print(
                f"  {rep['pair_rows_missing_cells']} listed pair rows miss "
                f"{rep['pair_cells_missing_from_listed_rows']} suppressed source cells: "
                f"trained as boxes listed ≤ d ≤ listed + {rep['suppression']:g} × those cells"
            )
    print(f"({rep['seconds']:.1f}s)")
    return 0
