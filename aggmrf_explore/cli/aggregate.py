"""``aggmrf-explore aggregate``: records → a release (one CSV per table + release.json, or
one long CSV), exact or privacy-noised; ``--schema`` encodes a second release with the
schema of a first one, so that both share their modalities.

A noisy release is meant for someone else, so it goes through :func:`privacy.publish`:
integer noise (discrete Laplace or discrete Gaussian) from the operating system's secure
generator, never from ``--seed``.  ``--insecure-seed`` is the one exception, and the
release says so."""

from __future__ import annotations

import argparse

from ..errors import AggMRFError
from . import args as cli_args
from .report import noise_summary, note, print_json, warn

__all__ = ["cmd_aggregate", "check_output", "earlier_mechanisms", "privacy_spent"]


def earlier_mechanisms(paths: list[str]) -> list:
    """The noise mechanisms of earlier releases of the same records (their release.json
    or directory), for the privacy they spent; an error if one declares no usable noise."""
    from ..io import read_release_noise

    mechs = []
    for path in paths:
        mech = read_release_noise(path)
        if mech is None:
            raise AggMRFError(
                f"--earlier-release {path}: it declares no noise, so it spent unbounded "
                "privacy (the exact tables) — nothing adds up to a guarantee."
            )
        mechs.append(mech)
    return mechs


def privacy_spent(mechs: list, args: argparse.Namespace) -> dict:
    """What all releases of the same records spent together, at the total δ
    (``privacy.composed_epsilon``: zCDP adds up, then converts)."""
    from ..privacy import composed_epsilon

    if any(m is None for m in mechs):
        raise AggMRFError(
            "--earlier-release with --mechanism none: exact tables spend unbounded privacy."
        )
    delta = sum(m.delta for m in mechs) or (args.delta or 1e-7)
    return {
        "releases": len(mechs),
        "epsilon_each": [m.epsilon for m in mechs],
        "epsilon_total": composed_epsilon(mechs, delta),
        "delta_total": delta,
    }


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
            schema.n_modalities,
            schema.feature_names,
            singles=not args.no_singles,
            pairs=not args.no_pairs,
            modality_labels=schema.modality_labels,
        )
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
    from ..privacy import publish

    agg = aggregate(X, y, layout)
    mech = cli_args.make_mechanism(args, layout, args.epsilon)
    earlier = earlier_mechanisms(args.earlier_release)
    cli_args.warn_useless_noise(mech, layout, agg.n)
    data = publish(agg, mech, insecure_seed=args.insecure_seed) if mech is not None else agg
    if args.insecure_seed is not None and mech is not None:
        warn(
            "--insecure-seed: whoever knows or guesses the seed recovers every count; "
            "this release is for tests and demonstrations, never for anyone else."
        )
    meta = write_release(data, args.out, schema, fmt=args.format, accounting=args.accounting)
    out = {
        "source": str(name),
        "out": str(args.out),
        "metadata": str(meta),
        "n_records": int(agg.n),
        "n_tables": layout.n_released_tables,
        "n_rows": int(layout.K - int(layout.intercept)),
        "noise": noise_summary(mech, args.accounting, data.meta.get("generator")),
    }
    if mech is not None and mech.name == "discrete_gaussian":
        out["noise"]["sigma_continuous"] = mech.sigma_continuous
    if earlier:
        out["privacy_spent"] = privacy_spent([*earlier, mech], args)
    if args.noise_aware:
        note("--noise-aware is a training option; ignored by aggregate.")
    print_json(out)
    return 0
