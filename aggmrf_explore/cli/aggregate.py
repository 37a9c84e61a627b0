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

__all__ = [
    "cmd_aggregate",
    "check_output",
    "check_publish_flags",
    "check_earlier_release",
    "earlier_mechanisms",
    "privacy_spent",
]


def check_publish_flags(args: argparse.Namespace) -> None:
    """Before any work: ``--insecure-seed`` only with a noise mechanism (a seed without
    noise is meaningless), and each ``--earlier-release`` is a release the error can name
    as given (:func:`check_earlier_release`)."""
    if args.insecure_seed is not None and args.mechanism == "none":
        raise AggMRFError(
            f"--insecure-seed {args.insecure_seed} with --mechanism none: there is no noise "
            "to draw from it; drop --insecure-seed, or choose --mechanism laplace or gaussian."
        )
    for path in args.earlier_release:
        check_earlier_release(path)


def check_earlier_release(path: str) -> None:
    """``--earlier-release PATH`` names an earlier release itself: its directory, its
    release.json, its long CSV or the FILE.json beside one.  A symlink must stay in its own
    directory (a link to a system file is refused, naming the link as given); a file must
    be a regular file; a FILE.json needs its FILE.csv.  Errors name ``path`` as given."""
    import os
    from pathlib import Path

    from ..files import check_regular_file

    p, shown = Path(path), repr(str(path))
    if not os.path.lexists(p):
        raise AggMRFError(
            f"--earlier-release {shown} not found; give an earlier release's directory or "
            "its release.json."
        )
    for q, named in ((p, shown), (p / "release.json", repr(os.path.join(path, "release.json")))):
        if q.is_symlink():
            home = os.path.realpath(q.parent if str(q.parent) else ".")
            if os.path.dirname(os.path.realpath(q)) != home:
                raise AggMRFError(
                    f"--earlier-release {named} is a symlink to a file outside its directory; "
                    "give the earlier release itself (its directory or its release.json)."
                )
        if not p.is_dir():
            break
    if p.is_dir():
        return
    check_regular_file(p, "--earlier-release", shown)
    if p.suffix.lower() == ".json" and p.name != "release.json":
        if not p.with_suffix(".csv").is_file():
            raise AggMRFError(
                f"--earlier-release {shown}: a FILE.json describes the long release FILE.csv "
                "beside it, and there is none; give the earlier release's directory, its "
                "release.json or its long CSV."
            )


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
    delta = sum(m.delta for m in mechs) or (args.delta or cli_args.DEFAULT_DELTA)
    return {
        "releases": len(mechs),
        "epsilon_each": [m.epsilon for m in mechs],
        "epsilon_total": composed_epsilon(mechs, delta),
        "delta_total": delta,
    }


def check_output(args: argparse.Namespace) -> None:
    """``--out`` can be written (before any work): a directory whose parent exists, or with
    ``--format long`` a ``.csv`` file in an existing directory (and FILE.json beside it);
    nothing is created.  The release's files are written through
    :func:`~aggmrf_explore.files.create_file` (never through a link planted in the directory)."""
    from pathlib import Path

    from ..files import check_output_dir, check_output_file

    if args.format == "long":
        check_output_file(args.out, "--out", (".csv",))
        check_output_file(Path(args.out).with_suffix(".json"), "--out")
    else:
        check_output_dir(args.out, "--out")


def _records_schema(ds, bins: int) -> tuple:
    """(schema, X, y): the schema fitted on the records themselves (``--schema-from-records``,
    or an exact release), the encoder's deciles and categories as they are."""
    from ..datasets import other_class
    from ..encoding import Schema

    enc = ds.encode(n_bins=bins)
    neg = other_class(ds.train[ds.label], enc.positive_label)
    schema = Schema.from_encoder(
        enc.encoder, ds.label, enc.positive_label, [neg, enc.positive_label]
    )
    return schema, enc.X_train, enc.y_train


def release_schema(args: argparse.Namespace, ds, mech_name: str) -> tuple:
    """(schema, X, y, source): the schema the release publishes and the records' codes.

    ``--schema FILE``: declared by the owner (a declared-schema JSON, or an earlier
    release's release.json);  ``--schema-from-records``: fitted on the records (not
    private);  else a bundled dataset's declared public schema (Adult, Bank: from their
    codebooks);  else, for exact tables (``--mechanism none``), the records' own schema;
    else a DP schema at ``--schema-epsilon`` (default ε/2), whose (ε, δ) ``source`` carries."""
    from ..datasets import other_class
    from ..privacy.schema import SCHEMA_SOURCES, bundled_schema, declared_schema, private_schema
    from ..values import encode_label

    feats = list(ds.feature_columns)
    source: dict = {}
    if args.schema:
        from pathlib import Path

        if Path(args.schema).is_file() and Path(args.schema).suffix.lower() == ".json":
            schema = declared_schema(args.schema)
        else:
            from ..io import read_schema

            schema = read_schema(args.schema)
        source = {"source": "declared", "about": SCHEMA_SOURCES["declared"]}
    elif args.schema_from_records:
        schema, X, y = _records_schema(ds, args.bins)
        return schema, X, y, {"source": "records", "about": SCHEMA_SOURCES["records"]}
    elif not args.csv and (schema := bundled_schema(ds.name)) is not None:
        schema = schema.subset(feats)
        source = {
            "source": "declared",
            "about": SCHEMA_SOURCES["declared"] + "; " + ds.name + "'s codebook",
        }
    elif mech_name == "none":  # exact tables: nothing is private, the records' own schema
        schema, X, y = _records_schema(ds, args.bins)
        return schema, X, y, {"source": "records", "about": SCHEMA_SOURCES["records"]}
    else:
        eps = args.schema_epsilon if args.schema_epsilon is not None else args.epsilon / 2.0
        delta = args.delta if args.delta is not None else cli_args.DEFAULT_DELTA
        schema, source = private_schema(
            ds.train,
            feats,
            epsilon=eps,
            delta=delta,
            n_bins=args.bins,
            neighbours="replace" if cli_args.accounting_of(args) == "replace" else "add/remove",
        )
    y, pos = encode_label(ds.train[ds.label], positive=schema.positive_label or ds.positive)
    neg = other_class(ds.train[ds.label], pos)
    schema.label, schema.positive_label, schema.classes = ds.label, pos, [neg, pos]
    X = schema.transform(ds.train)
    return schema, X, y, source


def privacy_block(mech, accounting: str, generator: str | None, source: dict) -> dict:
    """release.json's ``privacy``: the whole release's (ε, δ) for the neighbour relation it
    states: the counts' guarantee (both columns, whatever ``--accounting`` calibrated for)
    plus the schema's share; ``private`` False when the schema was fitted on the records or
    the noise was drawn from a seed."""
    from ..privacy import NEIGHBOURS, release_guarantee

    eps_c, delta_c = release_guarantee(mech, accounting)
    eps_s = float(source.get("epsilon", 0.0))
    delta_s = float(source.get("delta", 0.0))
    relation = "replace" if accounting == "replace" else "both"
    return {
        "neighbouring": NEIGHBOURS[relation],
        "epsilon": eps_c + eps_s,
        "delta": delta_c + delta_s,
        "counts": {"epsilon": eps_c, "delta": delta_c},
        "schema": {"epsilon": eps_s, "delta": delta_s, "source": source.get("source")},
        "private": source.get("source") != "records" and generator not in ("insecure-seed",),
    }


def cmd_aggregate(args: argparse.Namespace) -> int:
    """``aggregate``: write the release, print a JSON summary; returns the exit status."""
    from ..tables import TableLayout, aggregate

    cli_args.check_numbers(args)
    cli_args.check_tables_kept(args)
    check_publish_flags(args)
    check_output(args)
    if args.schema and not args.csv and not args.dataset:
        cli_args.check_aggregate_schema(args)
    ds = cli_args.load_aggregate_records(args)
    cli_args.check_records_size(args, ds)
    schema, X, y, source = release_schema(args, ds, args.mechanism)
    if args.schema:
        cli_args.check_schema_size(args, schema)
    layout = TableLayout.all_pairs(
        schema.n_modalities,
        schema.feature_names,
        singles=not args.no_singles,
        pairs=not args.no_pairs,
        modality_labels=schema.modality_labels,
    )
    name = args.csv or ds.name
    from ..io import write_release
    from ..privacy import publish

    agg = aggregate(X, y, layout)
    mech = cli_args.make_mechanism(args, layout, args.epsilon)
    earlier = earlier_mechanisms(args.earlier_release)
    cli_args.warn_useless_noise(mech, layout, agg.n)
    data = publish(agg, mech, insecure_seed=args.insecure_seed) if mech is not None else agg
    data = cli_args.suppressed_as_released(args, data)
    if args.insecure_seed is not None and mech is not None:
        warn(
            "--insecure-seed: whoever knows or guesses the seed recovers every count; "
            "this release is for tests and demonstrations, never for anyone else."
        )
    if mech is not None and source.get("source") == "records":
        warn(
            "--schema-from-records: the bin edges and categories in release.json come from "
            "the records without privacy (a bin label prints the data's minimum, a value one "
            "person holds appears); the file says it is not private. Declare a schema "
            "(--schema) or let aggregate choose one with privacy (the default)."
        )
    extra = {"schema_source": source}
    if mech is not None:
        accounting = cli_args.accounting_of(args)
        extra["privacy"] = privacy_block(mech, accounting, data.meta.get("generator"), source)
    meta = write_release(
        data,
        args.out,
        schema,
        fmt=args.format,
        accounting=cli_args.accounting_of(args),
        extra=extra,
    )
    out = {
        "source": str(name),
        "out": str(args.out),
        "metadata": str(meta),
        "n_records": int(data.n),
        "n_tables": layout.n_released_tables,
        "n_rows": int(layout.K - int(layout.intercept)),
        "noise": noise_summary(mech, cli_args.accounting_of(args), data.meta.get("generator")),
        "schema": {k: v for k, v in source.items() if k != "about"},
    }
    if mech is not None:
        out["privacy"] = extra["privacy"]
    if earlier:
        out["privacy_spent"] = privacy_spent([*earlier, mech], args)
    if args.noise_aware:
        note("--noise-aware is a training option; ignored by aggregate.")
    print_json(out)
    return 0
