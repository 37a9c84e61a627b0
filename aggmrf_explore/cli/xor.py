"""``aggmrf-explore xor``: the XOR counterexample, state by state — the truth, the exact
maximum-entropy model of the pair tables, PCD's MRF and a logistic regression on records."""

from __future__ import annotations

import argparse

from . import args as cli_args
from .report import ProgressBar, print_json, print_xor

__all__ = ["cmd_xor"]


def cmd_xor(args: argparse.Namespace) -> int:
    """``xor``: P(y = 1 | x) for the 8 states (JSON or a table); returns the exit status."""
    from ..baselines import logistic_pairs
    from ..datasets import load_dataset, xor_distribution, xor_expected_tables, xor_states
    from ..exact import fit_exact
    from ..experiment import prepare, train_mrf
    from ..mrf import default_settings

    cli_args.check_xor_records(args.n)
    problem = prepare(load_dataset("xor", n=args.n, seed=args.seed))
    lay = problem.layout
    dist = xor_distribution()
    states = xor_states()
    # infinite data: expected tables of the true distribution (n = 1, fractions)
    exact = fit_exact(xor_expected_tables(lay))
    settings = default_settings(lay, problem.n_train, seed=args.seed, lambda_theta=0.0)
    # the same tables' exact max-ent (PCD's own target): the gap to ``exact`` is sampling
    own = fit_exact(problem.aggregated, lambda_mu=settings.lambda_mu)
    run = train_mrf(
        problem,
        settings,
        args.iterations,
        progress=ProgressBar("MRF"),
        eval_every=args.iterations + 1,
    )
    enc = problem.encoded
    logit_model = logistic_pairs(
        enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay, seed=args.seed
    )
    lr = logit_model.info["model"]
    out = {
        "n": args.n,
        "states": [
            {
                "x": [int(v) for v in s],
                "p_x": float(px),
                "truth": float(py),
                "maxent_exact": float(pe),
                "maxent_tables": float(po),
                "mrf": float(pm),
                "logistic": float(pl),
            }
            for s, px, py, pe, po, pm, pl in zip(
                states,
                dist["p_x"],
                dist["p_y1"],
                exact.predict_proba(states)[:, 1],
                own.predict_proba(states)[:, 1],
                run.trainer.predict_proba(states)[:, 1],
                lr.predict_proba(lr.layout_.phi(states))[:, 1],
                strict=True,
            )
        ],
    }
    if args.json:
        print_json(out)
    else:
        print_xor(out)
    return 0
