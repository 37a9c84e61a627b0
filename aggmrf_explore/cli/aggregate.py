"""``aggmrf-explore aggregate``: records → a release (one CSV per table + release.json, or
one long CSV), exact or privacy-noised; ``--schema`` encodes a second release with the
schema of a first one, so that both share their modalities."""

from __future__ import annotations

import argparse

from . import args as cli_args
from .report import noise_summary, note, print_json

__all__ = ["cmd_aggregate", "check_output"]


def check_output(args: argparse.Namespace) -> None:
    """``--out`` can be written (before any work): a directory whose parent exists, or with
    ``--format long`` a ``.csv`` file in an existing directory; nothing is created."""
    from ..files import check_output_dir, check_output_file

    if args.format == "long":
        check_output_file(args.out, "--out", (".csv",))
    else:
        check_output_dir(args.out, "--out")


def cmd_aggregate(args: argparse.Namespace) -> int:
    """``aggregate``: write the release, print a JSON summary; returns the exit status."""
    from ..datasets import other_class
    from ..encoding import Schema
    from ..tables import TableLayout, aggregate

    cli_args.check_numbers(args)
    cli_args.check_tables_kept(args)
    check_output(args)
    if args.schema:
        from ..io import read_schema

        cli_args.check_aggregate_schema(args)
        schema = read_schema(args.schema)
        df = cli_args.read_records(args.csv)
        cli_args.check_label_column(args.label, df, args.csv)
        cli_args.check_schema_size(args, schema)
        X = schema.transform(df)
        y = schema.encode_label(df[args.label])
        layout = TableLayout.all_pairs(
            schema.n_modalities, schema.feature_names, singles=not args.no_singles,
            pairs=not args.no_pairs, modality_labels=schema.modality_labels,
        )  # fmt: skip
        name = args.csv
    else:
        ds = cli_args.load_aggregate_records(args)
        cli_args.check_records_size(args, ds)
        enc = ds.encode(n_bins=args.bins)
        X, y = enc.X_train, enc.y_train
        layout = enc.layout(singles=not args.no_singles, pairs=not args.no_pairs)
        neg = other_class(ds.train[ds.label], enc.positive_label)
        schema = Schema.from_encoder(
            enc.encoder, ds.label, enc.positive_label, [neg, enc.positive_label]
        )
        name = ds.name
    from ..io import write_release
    from ..privacy import release

    agg = aggregate(X, y, layout)
    mech = cli_args.make_mechanism(args, layout, args.epsilon)
    cli_args.warn_useless_noise(mech, layout, agg.n)
    data = release(agg, mech, seed=args.seed) if mech is not None else agg
    meta = write_release(data, args.out, schema, fmt=args.format, accounting=args.accounting)
    out = {
        "source": str(name),
        "out": str(args.out),
        "metadata": str(meta),
        "n_records": int(agg.n),
        "n_tables": layout.n_released_tables,
        "n_rows": int(layout.K - int(layout.intercept)),
        "noise": noise_summary(mech, args.accounting),
    }
    if args.noise_aware:
        note("--noise-aware is a training option; ignored by aggregate.")
    print_json(out)
    return 0
