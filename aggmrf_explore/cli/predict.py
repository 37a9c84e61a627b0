"""``aggmrf-explore predict``: P(y = 1 | x) of raw records under a model exported by
``run --export-model`` (CSV ``probability`` column), and their NLLH with ``--label``."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from . import args as cli_args

__all__ = ["cmd_predict", "warn_saturated", "SATURATED"]

SATURATED = 1e-12  # a probability within this of 0 or 1 is saturated


def warn_saturated(p) -> None:
    """A ``warning:`` line when predictions saturate (p within 1e-12 of 0 or 1): the model's
    θ are extreme, and a wrong saturated prediction has an infinite log loss."""
    import numpy as np

    from ..errors import AggMRFError
    from .report import warn

    p = np.asarray(p, dtype=np.float64)
    if not np.all(np.isfinite(p)):
        raise AggMRFError(
            "the model gives non-finite probabilities — its parameters are unusable; retrain it."
        )
    sat = int(np.count_nonzero((p < SATURATED) | (p > 1.0 - SATURATED)))
    if sat:
        warn(
            f"{sat} of {len(p)} predictions saturate at 0 or 1 (within {SATURATED:g}): the "
            "model's θ are extreme, so a wrong one costs an infinite log loss — check the model "
            "(or retrain with a larger --lambda-theta)."
        )


def cmd_predict(args: argparse.Namespace) -> int:
    """``predict``: probabilities to ``--out`` or stdout; returns the exit status."""
    import pandas as pd

    from ..files import check_output_file, write_text
    from ..io import load_model, neutralise_frame
    from ..metrics import nllh

    if args.out is not None:  # ("" too: refused, never stdout)
        check_output_file(args.out, "--out")
    model = load_model(args.model, budget=cli_args.budget(args))
    df = cli_args.read_records(args.csv)
    warn_unseen_values(model.schema, df)
    p = model.predict_proba(df)
    warn_saturated(p)
    frame = neutralise_frame(pd.DataFrame({"probability": p}))
    text = frame.to_csv(index=False, float_format="%.17g")
    if args.out is not None:
        write_text(args.out, text, "--out")
    else:
        sys.stdout.write(text)
    label = args.label
    if label:
        cli_args.check_label_column(label, df, args.csv)
        y = model.schema.encode_label(df[label])
        print(f"NLLH on {args.csv}: {nllh(y, p):.6f} ({len(p)} records)", file=sys.stderr)
    return 0


def warn_unseen_values(schema, df: pd.DataFrame) -> None:
    """A ``warning:`` line per column of ``df`` holding values the model's schema never saw
    (a schema whose policy is "(other)" maps them there; one whose policy is "error" stops
    in ``predict_proba`` with an error line)."""
    from .report import warn

    if any(name not in df.columns for name in schema.feature_names):
        return  # the missing column is reported by predict_proba
    for column, values in schema.unseen_values(df).items():
        shown = ", ".join(f"{v!r} ({n} row{'s' * (n != 1)})" for v, n in list(values.items())[:5])
        more = f" and {len(values) - 5} more" if len(values) > 5 else ""
        warn(
            f"column {column!r}: value(s) the model never saw: {shown}{more}; they count as "
            "'(other)' if the model's schema allows it."
        )
