"""``aggmrf-explore predict``: P(y = 1 | x) of raw records under a model exported by
``run --export-model`` (CSV ``probability`` column), and their NLLH with ``--label``."""

from __future__ import annotations

import argparse
import sys

from . import args as cli_args

__all__ = ["cmd_predict"]


def cmd_predict(args: argparse.Namespace) -> int:
    """``predict``: probabilities to ``--out`` or stdout; returns the exit status."""
    import pandas as pd

    from ..io import load_model
    from ..metrics import nllh

    model = load_model(args.model)
    df = cli_args.read_records(args.csv)
    p = model.predict_proba(df)
    frame = pd.DataFrame({"probability": p})
    text = frame.to_csv(index=False, float_format="%.17g")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    label = args.label
    if label:
        cli_args.check_label_column(label, df, args.csv)
        y = model.schema.encode_label(df[label])
        print(f"NLLH on {args.csv}: {nllh(y, p):.6f} ({len(p)} records)", file=sys.stderr)
    return 0
