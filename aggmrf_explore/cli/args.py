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
from typing import TYPE_CHECKING

import numpy as np

from ..errors import AggMRFError

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
    "read_records",
    "trainer_settings",
    "make_mechanism",
]

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
    """``--noise-aware`` needs a mechanism (``mech`` not None)."""
    if args.noise_aware and mech is None:
        raise AggMRFError(
            "--noise-aware needs noise: add --mechanism laplace|gaussian --epsilon X."
        )


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


def iterations(args: argparse.Namespace) -> int:
    """``--iterations`` (default: experiment.DEFAULT_ITERATIONS), ≥ 1."""
    from ..experiment import DEFAULT_ITERATIONS

    it = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
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
        )
    if not args.dataset:
        raise AggMRFError(
            "choose the data: --dataset NAME (toy, xor, synthetic, adult, bank) or --csv FILE --label COL."
        )
    if args.label or args.test_csv:
        raise AggMRFError("--label and --test-csv go with --csv, not with --dataset.")
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
        features=(args.features.split(",") if args.features else None),
        drop_features=(args.drop_features.split(",") if args.drop_features else None),
    )


def prepare_problem(args: argparse.Namespace) -> Problem:
    """The records of :func:`load_dataset`, encoded with ``--bins`` and aggregated into the
    tables that ``--no-singles`` / ``--no-pairs`` keep."""
    from ..experiment import prepare

    check_tables_kept(args)
    check_bins(args)
    return prepare(
        load_dataset(args), singles=not args.no_singles, pairs=not args.no_pairs, n_bins=args.bins
    )


# ---------------------------------------------------------------------- training
def trainer_settings(args: argparse.Namespace, layout: TableLayout, n: int) -> TrainerSettings:
    """mrf.default_settings for ``layout`` and ``n`` records, overridden by the training flags.

    ``--lambda-theta auto`` leaves the default λθ (the caller chooses it later) and is
    accepted with ``run`` only.
    """
    from ..mrf import default_settings

    over = {"seed": args.seed}
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
    return default_settings(layout, n, **over)


def make_mechanism(args: argparse.Namespace, layout: TableLayout, epsilon: float | None):
    """The mechanism of ``--mechanism`` at budget ``epsilon`` (with ``--delta``,
    ``--accounting``, ``--calibration``) for ``layout``'s tables; None for "none"."""
    from ..privacy import make_mechanism as build

    if args.mechanism != "none" and epsilon is None:
        raise AggMRFError(f"--mechanism {args.mechanism} needs --epsilon (e.g. --epsilon 1).")
    if args.mechanism == "none" and epsilon is not None:
        raise AggMRFError("--epsilon given without a mechanism: add --mechanism laplace|gaussian.")
    return build(args.mechanism, epsilon, args.delta, layout, args.accounting, args.calibration)
