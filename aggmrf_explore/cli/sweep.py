"""``aggmrf-explore sweep``: what does ε cost?  MRF and the noise-aware MRF-N trained on a
release at each ε of ``--epsilons``, against the noiseless MRF and the logistic skyline on
records: PREFIX.csv (one row per ε and model) and PREFIX.png (test NLLH against ε)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from . import args as cli_args
from .report import ProgressBar, noise_summary, print_json, print_sweep

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cmd_sweep", "sweep_plot"]


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: write the CSV and the PNG, print the rows; returns the exit status."""
    from dataclasses import replace

    import pandas as pd

    from ..baselines import logistic_pairs
    from ..experiment import train_mrf
    from ..privacy import release

    epsilons = cli_args.float_list(args.epsilons, "--epsilons")
    iterations = cli_args.iterations(args)
    problem = cli_args.prepare_problem(args)
    # every mechanism first, so that a bad δ fails before any training
    mechs = [cli_args.make_mechanism(args, problem.layout, eps) for eps in epsilons]
    base = cli_args.trainer_settings(args, problem.layout, problem.aggregated.n)
    enc = problem.encoded
    total = 2 + 2 * len(epsilons)
    bar = ProgressBar("sweep")
    done = 0
    bar(done, total)
    rows = []
    ref = train_mrf(problem, base, iterations, eval_every=iterations + 1)
    done += 1
    bar(done, total)
    sky = logistic_pairs(
        enc.X_train, enc.y_train, enc.X_test, enc.y_test, problem.layout, seed=args.seed
    )
    done += 1
    bar(done, total)
    for eps, mech in zip(epsilons, mechs, strict=True):
        data = release(problem.aggregated, mech, seed=args.seed)
        summary = noise_summary(mech, args.accounting)
        for aware in (False, True):
            st = replace(base, noise_aware=aware)
            run = train_mrf(problem, st, iterations, data=data, eval_every=iterations + 1)
            rows.append({
                "epsilon": eps, "delta": summary["delta"], "mechanism": summary["mechanism"],
                "sigma": summary["sigma"], "model": "MRF-N" if aware else "MRF",
                "nllh_test": run.nllh_test, "seconds": run.seconds,
            })  # fmt: skip
            done += 1
            bar(done, total)
    frame = pd.DataFrame(rows)
    frame["mrf_noiseless"] = ref.nllh_test
    frame["logistic_pairs"] = sky.nllh_test
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    csv_path = out.with_suffix(".csv")
    png_path = out.with_suffix(".png")
    frame.to_csv(csv_path, index=False)
    sweep_plot(frame, problem.name, png_path)
    if args.json:
        print_json({"csv": str(csv_path), "png": str(png_path), "rows": rows,
                    "mrf_noiseless": ref.nllh_test, "logistic_pairs": sky.nllh_test})  # fmt: skip
    else:
        print_sweep(frame, csv_path, png_path)
    return 0


def sweep_plot(frame: pd.DataFrame, dataset: str, path: Path) -> None:
    """Test NLLH against ε (log axis) for MRF and MRF-N with the noiseless references.

    ``frame``: the sweep's rows (columns as in PREFIX.csv); ``path``: the PNG written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for model, style in (("MRF", "o-"), ("MRF-N", "s-")):
        sub = frame[frame["model"] == model].sort_values("epsilon")
        ax.plot(sub["epsilon"], sub["nllh_test"], style, label=f"{model} (noisy tables)")
    sky, ref = frame["logistic_pairs"].iloc[0], frame["mrf_noiseless"].iloc[0]
    ax.axhline(sky, color="k", ls="--", lw=1, label=f"logistic on records, skyline ({sky:.3f})")
    ax.axhline(ref, color="tab:green", ls=":", lw=2, label=f"MRF, no noise ({ref:.3f})")
    ax.set_xscale("log")
    eps = frame.groupby("epsilon")["sigma"].first()
    ax.set_xticks(eps.index, [f"{e:g}\nσ={s:.3g}" for e, s in eps.items()])
    ax.minorticks_off()
    ax.set_xlabel("privacy budget ε, noise sd σ (log scale; smaller ε = more private)")
    ax.set_ylabel("test NLLH (higher is better)")
    mech = frame["mechanism"].iloc[0]
    delta = frame["delta"].iloc[0]
    ax.set_title(
        f"What does ε cost? {dataset}, {mech} mechanism" + (f", δ={delta:g}" if delta else "")
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
