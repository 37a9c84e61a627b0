"""Shared argument handling: parsed arguments → the objects they name, checked on the way.

Every check of what an argument's value means, or of how arguments fit together, lives
here (the ``check_*`` functions and the builders that raise); each raises
:class:`~aggmrf_explore.errors.AggMRFError`, which ``main`` turns into the one
``error: …`` line and exit status 2.  The commands call them in the order they need them,
before any training starts.

- :func:`load_dataset`, :func:`load_aggregate_records`, :func:`prepare_problem`: records;
- :func:`read_records`: a CSV file of records as a DataFrame (no encoding);
- :func:`trainer_settings`, :func:`iterations`: training;
- :func:`make_mechanism`: the privacy mechanism of ``--mechanism/--epsilon/--delta``.
"""

from __future__ import annotations

import argparse
import difflib
from typing import TYPE_CHECKING

import numpy as np

from ..errors import AggMRFError
from ..settings import setting

if TYPE_CHECKING:
    import pandas as pd

    from ..datasets import Dataset
    from ..experiment import Problem
    from ..mrf import TrainerSettings
    from ..tables import AggregatedData, TableLayout

__all__ = [
    "csv_list",
    "float_list",
    "check_tables_kept",
    "check_bins",
    "check_noise_aware",
    "check_rules",
    "mechanism_name",
    "accounting_of",
    "check_release_source",
    "check_noise_aware_release",
    "label_of_test_records",
    "check_aggregate_schema",
    "check_xor_records",
    "check_label_column",
    "iterations",
    "load_dataset",
    "load_aggregate_records",
    "prepare_problem",
    "warn_unseen",
    "read_records",
    "trainer_settings",
    "make_mechanism",
    "check_numbers",
    "budget",
    "check_records_size",
    "check_trainer_size",
    "check_schema_size",
    "warn_useless_noise",
    "DEFAULT_DELTA",
]

DEFAULT_DELTA = setting("delta").default  # --delta of the Gaussian mechanisms when not given

# (argument name, TrainerSettings field) of the training flags
_SETTINGS_FLAGS = (
    ("gibbs_samples", "n_gibbs"),
    ("lambda_mu", "lambda_mu"),
    ("lambda_theta", "lambda_theta"),
    ("step_mu", "step_mu"),
    ("step_theta", "step_theta"),
    ("gradient", "gradient"),
)


# ---------------------------------------------------------------------- values
def csv_list(text: str | None) -> list[str] | None:
    """``"a, b,c"`` → ``["a", "b", "c"]``; None stays None; a list of nothing is an error."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise AggMRFError(f"expected a comma-separated list, got {text!r}.")
    return items


def float_list(text: str, what: str) -> list[float]:
    """``"0.5,1,2"`` → ``[0.5, 1.0, 2.0]``: positive finite numbers; ``what`` names the flag."""
    try:
        vals = [float(t) for t in csv_list(text) or []]
    except ValueError:
        raise AggMRFError(
            f"{what} must be comma-separated numbers, e.g. 0.5,1,2; got {text!r}."
        ) from None
    if not vals or not all(np.isfinite(v) and v > 0 for v in vals):
        raise AggMRFError(f"{what} must be positive finite numbers; got {text!r}.")
    return vals


# ---------------------------------------------------------------------- checks
def check_tables_kept(args: argparse.Namespace) -> None:
    """``--no-singles`` and ``--no-pairs`` may not both be given."""
    if args.no_singles and args.no_pairs:
        raise AggMRFError("--no-singles and --no-pairs together leave no table to release.")


def check_bins(args: argparse.Namespace) -> None:
    """``--bins`` ≥ 2."""
    if args.bins < 2:
        raise AggMRFError(f"--bins must be at least 2; got {args.bins}.")


def check_noise_aware(args: argparse.Namespace, mech) -> None:
    """``--noise-aware`` needs a mechanism: the rule of ``settings.check_combination``."""
    check_rules({"mechanism": args.mechanism, "noise_aware": bool(args.noise_aware)})


def check_rules(values: dict) -> None:
    """:func:`aggmrf_explore.settings.check_combination`, its error naming the flag."""
    from ..settings import SettingError, check_combination, setting

    try:
        check_combination(values)
    except SettingError as exc:
        flag = setting(exc.setting).flag or "--mechanism"
        raise AggMRFError(f"{flag}: {exc}") from None


def check_release_source(args: argparse.Namespace) -> None:
    """``run --tables``: no other data source and no noise flags (the release has its own)."""
    if args.dataset or args.csv:
        raise AggMRFError("--tables replaces --dataset / --csv; give one data source.")
    if args.mechanism != "none" or args.epsilon is not None:
        raise AggMRFError(
            "--tables reads a release as it is; its noise is declared in release.json "
            "(write a noisy release with `aggregate --mechanism ...`)."
        )


def check_noise_aware_release(args: argparse.Namespace, data: AggregatedData) -> None:
    """``run --tables --noise-aware`` needs a release that declares its noise."""
    if args.noise_aware and data.noise is None:
        raise AggMRFError("--noise-aware needs a noisy release (release.json declares no noise).")


def label_of_test_records(
    args: argparse.Namespace, df: pd.DataFrame, release_label: str | None
) -> str:
    """The label column of ``--test-csv``'s records ``df``: ``--label``, else the release's."""
    label = args.label or release_label
    if not label or label not in df.columns:
        raise AggMRFError(
            f"the test records need the label column ({label!r}); give --label COL. "
            f"Columns of {args.test_csv!r}: {list(df.columns)}."
        )
    return label


def check_aggregate_schema(args: argparse.Namespace) -> None:
    """``aggregate --schema`` goes with ``--csv FILE --label COL``."""
    if not args.csv or not args.label:
        raise AggMRFError("--schema goes with --csv FILE --label COL (records to aggregate).")


def check_xor_records(n: int) -> None:
    """``xor --n`` ≥ 100 records."""
    if n < 100:
        raise AggMRFError(f"--n must be at least 100 records; got {n}.")


def check_label_column(label: str, df: pd.DataFrame, path: str) -> None:
    """The label column ``label`` is a column of the records ``df`` read from ``path``."""
    if label not in df.columns:
        raise AggMRFError(f"label column {label!r} not in {path!r}: {list(df.columns)}.")


def iterations(args: argparse.Namespace, settings: TrainerSettings | None = None) -> int:
    """``--iterations``, ≥ 1; by default the rule ``mrf.default_iterations(settings)``
    (max(3000, ⌈6/α_θ⌉)), or experiment.DEFAULT_ITERATIONS (3000) without settings."""
    from ..experiment import DEFAULT_ITERATIONS
    from ..mrf import default_iterations

    if args.iterations is not None:
        it = args.iterations
    else:
        it = DEFAULT_ITERATIONS if settings is None else default_iterations(settings)
    if it < 1:
        raise AggMRFError(f"--iterations must be ≥ 1; got {it}.")
    return it


# ---------------------------------------------------------------------- records
def read_records(path: str) -> pd.DataFrame:
    """The records of a CSV file (header line, ',' ';' or tab separated), not encoded."""
    from ..datasets import read_csv_file

    return read_csv_file(path)


def load_dataset(args: argparse.Namespace) -> Dataset:
    """The Dataset of ``--dataset NAME`` or ``--csv FILE --label COL`` (with their options)."""
    from .. import datasets

    features = csv_list(args.features)
    drop = csv_list(args.drop_features)
    if args.csv:
        if not args.label:
            raise AggMRFError("--csv needs --label COLUMN (the binary label column).")
        return datasets.load_csv(
            args.csv,
            args.label,
            test_csv=args.test_csv,
            test_fraction=args.test_fraction,
            features=features,
            drop_features=drop,
            seed=args.seed,
            unseen=args.unseen,
            min_count=args.min_count,
        )
    if not args.dataset:
        raise AggMRFError(
            f"choose the data: --dataset NAME ({', '.join(datasets.DATASET_NAMES)}) or --csv "
            "FILE --label COL."
        )
    if args.label or args.test_csv:
        raise AggMRFError("--label and --test-csv go with --csv, not with --dataset.")
    if str(args.dataset).strip().lower() not in datasets.DATASET_NAMES:
        close = difflib.get_close_matches(str(args.dataset).lower(), datasets.DATASET_NAMES, 1)
        hint = f"did you mean --dataset {close[0]}? " if close else ""
        raise AggMRFError(
            f"unknown dataset {args.dataset!r} — {hint}the datasets are "
            f"{', '.join(datasets.DATASET_NAMES)}; for your own file: --csv FILE --label COLUMN."
        )
    return datasets.load_dataset(
        args.dataset, n=args.n, seed=args.seed, features=features, drop_features=drop
    )


def load_aggregate_records(args: argparse.Namespace) -> Dataset:
    """``aggregate``'s records: with ``--csv`` every record of the file is aggregated (the
    file is its own training split), else :func:`load_dataset`."""
    from .. import datasets

    if not args.csv:
        return load_dataset(args)
    if not args.label:
        raise AggMRFError("--csv needs --label COLUMN (the binary label column).")
    # (the column lists are split as they always were here: no stripping, unlike csv_list)
    return datasets.load_csv(
        args.csv,
        args.label,
        test_csv=args.csv,
        unseen=args.unseen,
        min_count=args.min_count,
        features=(args.features.split(",") if args.features else None),
        drop_features=(args.drop_features.split(",") if args.drop_features else None),
    )


def prepare_problem(args: argparse.Namespace) -> Problem:
    """The records of :func:`load_dataset`, encoded with ``--bins`` and aggregated into the
    tables that ``--no-singles`` / ``--no-pairs`` keep."""
    from ..experiment import prepare
    from .report import status

    check_tables_kept(args)
    check_bins(args)
    status(f"preparing the data: {args.csv or args.dataset} (reading the records)")
    ds = load_dataset(args)
    check_records_size(args, ds)
    status(f"preparing the data: encoding {len(ds.train):,} records, aggregating the tables")
    problem = prepare(ds, singles=not args.no_singles, pairs=not args.no_pairs, n_bins=args.bins)
    if args.csv:
        warn_unseen(problem, ds)
    return problem


def warn_unseen(problem: Problem, ds: Dataset) -> None:
    """A ``warning:`` line per feature whose test split holds values its training split
    lacks (with ``--unseen other`` they count as "(other)"; ``--unseen error`` stops first)."""
    from .report import warn

    schema = problem.encoded.encoder.schema_
    for column, values in schema.unseen_values(ds.test).items():
        shown = ", ".join(f"{v!r} ({n} row{'s' * (n != 1)})" for v, n in list(values.items())[:5])
        more = f" and {len(values) - 5} more" if len(values) > 5 else ""
        warn(
            f"column {column!r}: the test split holds value(s) the training split lacks: "
            f"{shown}{more}; they count as '(other)' (--unseen error stops instead)."
        )


# ---------------------------------------------------------------------- training
def trainer_settings(
    args: argparse.Namespace,
    layout: TableLayout,
    n: int,
    noise_sd: float = 0.0,
    noise_aware: bool = False,
) -> TrainerSettings:
    """mrf.default_settings for ``layout``, ``n`` records and a release whose cells carry
    noise of sd ``noise_sd`` (counts; the rule's penalties follow it unless ``noise_aware``),
    overridden by the training flags.

    ``--lambda-theta auto`` leaves the default λθ (the caller chooses it later) and is
    accepted with ``run`` only.
    """
    from ..mrf import default_settings

    over = {"seed": args.seed, "noise_aware": bool(noise_aware)}
    for opt, key in _SETTINGS_FLAGS:
        v = getattr(args, opt)
        if v == "auto":
            if getattr(args, "command", "run") != "run":
                raise AggMRFError("--lambda-theta auto is available with `run` only.")
            continue
        if v is not None:
            over[key] = v
    if args.no_precondition:
        over["precondition"] = False
    settings = default_settings(layout, n, noise_sd=noise_sd, **over)
    check_trainer_size(args, layout, settings.n_gibbs)
    return settings


def make_mechanism(args: argparse.Namespace, layout: TableLayout, epsilon: float | None):
    """The mechanism of ``--mechanism`` at budget ``epsilon`` (with ``--delta``,
    ``--accounting``, ``--calibration`` where it uses them) for ``layout``'s tables; None
    for "none".

    For ``aggregate`` (a release for others) a continuous mechanism's name stands for its
    integer twin (``privacy.registry.release_name``)."""
    from ..privacy import make_mechanism as build
    from ..privacy import mechanism_class

    kind = mechanism_name(args)
    uses = mechanism_class(kind).uses
    given = {"epsilon": epsilon, "delta": args.delta, "accounting": args.accounting}
    check_rules({"mechanism": kind, **given, "calibration": args.calibration})
    delta = (DEFAULT_DELTA if args.delta is None else args.delta) if "delta" in uses else None
    accounting = accounting_of(args) if "accounting" in uses else None
    calibration = args.calibration if "calibration" in uses else None
    return build(kind, epsilon, delta, layout, accounting, calibration)


# ---------------------------------------------------------------------- before any work
def check_numbers(args: argparse.Namespace) -> None:
    """How the number flags fit together, checked before any work (each flag's own range is
    checked while parsing, :mod:`.numbers`): ε and δ with the mechanism, by the rules of
    ``settings.check_combination``."""
    if getattr(args, "mechanism", None) is None:
        return
    values = {"mechanism": mechanism_name(args)}
    for name in ("delta", "accounting", "calibration", "epsilon"):
        if hasattr(args, name):  # (a sweep takes its own list of ε)
            values[name] = getattr(args, name)
    check_rules(values)


def mechanism_name(args: argparse.Namespace) -> str:
    """The registered mechanism ``--mechanism`` names: for ``aggregate`` (a release for
    others) a continuous mechanism's name stands for its integer twin."""
    from ..privacy.registry import release_name

    if getattr(args, "command", None) == "aggregate":
        return release_name(args.mechanism)
    return args.mechanism


def accounting_of(args: argparse.Namespace) -> str:
    """``--accounting``, or the declared default when not given."""
    return args.accounting or setting("accounting").default


def budget(args: argparse.Namespace):
    """The size budget of ``--max-rows`` (:class:`aggmrf_explore.tables.budget.Budget`)."""
    from ..tables.budget import DEFAULT_MAX_ROWS, Budget

    return Budget(max_rows=getattr(args, "max_rows", None) or DEFAULT_MAX_ROWS)


def check_records_size(args: argparse.Namespace, ds: Dataset) -> None:
    """The size budget of the records' tables, from one ``nunique`` per column, before
    anything is encoded or aggregated (:func:`aggmrf_explore.tables.budget.check_records`)."""
    from ..tables.budget import check_records

    cols = list(ds.feature_columns)
    opts = dict(ds.encoding or {})
    check_records(
        ds.train[cols],
        n_bins=args.bins,
        unseen=opts.get("unseen", "error"),
        min_count=int(opts.get("min_count", 1)),
        singles=not args.no_singles,
        pairs=not args.no_pairs,
        budget=budget(args),
    )


def check_schema_size(args: argparse.Namespace, schema) -> None:
    """The size budget of the all-pairs tables of a schema (``aggregate --schema``)."""
    from ..tables.budget import all_pairs_tables, check_size

    tables = all_pairs_tables(schema.n_features, not args.no_singles, not args.no_pairs)
    check_size(
        schema.n_modalities.tolist(),
        tables,
        schema.feature_names,
        budget=budget(args),
        what="the tables of this schema",
    )


def check_trainer_size(args: argparse.Namespace, layout: TableLayout, n_gibbs: int) -> None:
    """The size budget with the trainer's Gibbs samples (``--gibbs-samples``)."""
    from ..tables.budget import check_size

    tables = [t for t in layout.tables if t]
    check_size(
        [int(m) for m in layout.n_modalities],
        tables,
        list(layout.feature_names),
        budget=budget(args),
        n_gibbs=n_gibbs,
        what="training",
    )


def warn_useless_noise(mechanism, layout: TableLayout, n: float) -> None:
    """A ``warning:`` line when the noise σ is far (> 10 ×) above the typical cell count
    n / (rows per released table): the noisy tables then carry almost no information."""
    from .report import warn

    if mechanism is None:
        return
    sizes = [int(s) for s, t in zip(layout.table_sizes, layout.tables, strict=True) if t]
    if not sizes:
        return
    typical = float(n) / (sum(sizes) / len(sizes))
    sigma = float(mechanism.std)
    if sigma > 10.0 * max(typical, 1.0):
        warn(
            f"the noise σ = {sigma:.3g} is {sigma / max(typical, 1e-12):.3g} × the typical cell "
            f"count ({typical:.3g} = n / rows per table): the noisy tables carry almost no "
            "information — raise --epsilon, or release fewer, coarser tables."
        )


def suppressed_as_released(args: argparse.Namespace, data):
    """``data`` as ``--dataset NAME``'s release shows it: the pair cells of (released, noisy)
    count ≤ k left out when the dataset's spec declares a suppression k (the Criteo-shaped
    dataset, the AdKDD'21 rule); unchanged otherwise, and for local noise (per record)."""
    from .. import datasets
    from ..tables.suppression import suppress_pair_tables

    if not getattr(args, "dataset", None) or getattr(args, "csv", None):
        return data
    spec = datasets.dataset_spec(args.dataset)
    if spec.suppression is None or (data.noise is not None and data.noise.privacy != "central"):
        return data
    return suppress_pair_tables(data, spec.suppression)
