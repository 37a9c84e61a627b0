"""``aggmrf-explore sweep``: what does ε cost?  At each ε of ``--epsilons``, ``--noise-seeds``
independent releases; on each, three models trained on the noisy tables:

* ``MRF (raw)``: the plain MRF fitted to the released values as they are (targets="raw",
  the AdKDD'21 paper's MRF baseline);
* ``MRF (projected)``: the plain MRF fitted to d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺) (the
  trainer's default);
* ``MRF-N``: noise-aware training (the paper's section 5);

against the noiseless MRF and the logistic skyline on records.

``--privacy central,local`` (issue 18): at each ε and seed a central release (as above) and/or
a local one (``local_privacy.local_release``: randomized response on every training record
at a person's ε, split equally over the fields, channel inverted), and on each the plain MRF
(projected) and MRF-N (per-cell Gaussian σ for the local tables): models "central MRF",
"central MRF-N", "local MRF", "local MRF-N".  The CSV gains ``privacy`` and ``noise_rms``
(the central σ, or the local release's root-mean-square per-cell σ); the ``sigma`` column
stays the central mechanism's σ at that ε (the plot's axis label).  Writes PREFIX.csv (one row
per ε, model and noise seed) and PREFIX.png (test NLLH against ε: mean over the noise seeds,
error bars ± 1 standard deviation).  ``--quick``: ε 1 and 10, 2 seeds, 150 iterations (each
overridable by its own flag).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from . import args as cli_args
from .report import ProgressBar, noise_summary, print_json, print_sweep

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cmd_sweep", "sweep_plot", "sweep_summary", "check_out", "MODELS"]

#: model label → TrainerSettings overrides
MODELS = {
    "MRF (raw)": {"targets": "raw", "noise_aware": False},
    "MRF (projected)": {"targets": "projected", "noise_aware": False},
    "MRF-N": {"noise_aware": True},
}
#: ``--privacy`` other than "central": model label → (privacy model, TrainerSettings overrides)
PRIVACY_MODELS = {
    "central MRF": ("central", {"targets": "projected", "noise_aware": False}),
    "central MRF-N": ("central", {"noise_aware": True}),
    "local MRF": ("local", {"targets": "projected", "noise_aware": False}),
    "local MRF-N": ("local", {"noise_aware": True}),
}
PRIVACIES = ("central", "local")
STYLES = {  # model → (matplotlib format, x offset dodging the error bars, colour)
    "MRF (raw)": ("v-", 0.97, None), "MRF (projected)": ("o-", 1.0, None),
    "MRF-N": ("s-", 1.03, None),
    "central MRF": ("o-", 0.96, "tab:blue"), "central MRF-N": ("s-", 0.98, "tab:orange"),
    "local MRF": ("o--", 1.02, "tab:purple"), "local MRF-N": ("s--", 1.04, "tab:red"),
}  # fmt: skip
DEFAULT_EPSILONS = "0.5,1,2,5,10"
QUICK = {"epsilons": "1,10", "noise_seeds": 2, "iterations": 150}


def _options(args: argparse.Namespace) -> tuple[list[float], int, int]:
    """(ε list, number of noise seeds ≥ 1, iterations) from the flags and ``--quick``."""
    from ..errors import AggMRFError

    quick = bool(getattr(args, "quick", False))
    eps_text = args.epsilons if args.epsilons is not None else (
        QUICK["epsilons"] if quick else DEFAULT_EPSILONS
    )  # fmt: skip
    epsilons = cli_args.float_list(eps_text, "--epsilons")
    seeds = getattr(args, "noise_seeds", None)
    seeds = (QUICK["noise_seeds"] if quick else 3) if seeds is None else seeds
    if not isinstance(seeds, int) or seeds < 1:
        raise AggMRFError(f"--noise-seeds must be an integer ≥ 1; got {seeds!r}.")
    if quick and args.iterations is None:
        return epsilons, seeds, QUICK["iterations"]
    return epsilons, seeds, cli_args.iterations(args)


def _privacies(args: argparse.Namespace) -> list[str]:
    """``--privacy``: a non-empty list of distinct names from PRIVACIES."""
    from ..errors import AggMRFError

    text = getattr(args, "privacy", None) or "central"
    out = [t.strip() for t in str(text).split(",") if t.strip()]
    if not out or any(t not in PRIVACIES for t in out) or len(set(out)) != len(out):
        raise AggMRFError(
            f"--privacy must be a comma-separated list of {', '.join(PRIVACIES)}; got {text!r}."
        )
    return out


def _models(privacies: list[str]) -> dict[str, tuple[str, dict]]:
    """Model label → (privacy model, settings overrides) for the sweep's ``--privacy``."""
    if privacies == ["central"]:
        return {m: ("central", o) for m, o in MODELS.items()}
    return {m: v for m, v in PRIVACY_MODELS.items() if v[0] in privacies}


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: write the CSV and the PNG, print the rows; returns the exit status."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from ..baselines import logistic_pairs
    from ..errors import DivergenceError
    from ..experiment import train_mrf
    from ..io.formula import neutralise_frame
    from ..local_privacy import local_release, make_local_mechanism
    from ..privacy import release

    cli_args.check_numbers(args)
    check_out(args.out)
    privacies = _privacies(args)
    models = _models(privacies)
    with_privacy = privacies != ["central"]
    epsilons, n_seeds, iterations = _options(args)
    problem = cli_args.prepare_problem(args)
    # every mechanism first, so that a bad δ fails before any training
    mechs = [cli_args.make_mechanism(args, problem.layout, eps) for eps in epsilons]
    base = cli_args.trainer_settings(args, problem.layout, problem.aggregated.n)
    enc = problem.encoded
    local_mechs = (
        [make_local_mechanism(eps, problem.layout) for eps in epsilons]
        if "local" in privacies
        else [None] * len(epsilons)
    )
    total = 2 + len(models) * n_seeds * len(epsilons)
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
    for eps, mech, lmech in zip(epsilons, mechs, local_mechs, strict=True):
        summary = noise_summary(mech, args.accounting)
        for k in range(n_seeds):
            noise_seed = args.seed + k
            releases = {}
            if "central" in privacies:
                releases["central"] = release(problem.aggregated, mech, seed=noise_seed)
            if lmech is not None:
                releases["local"] = local_release(
                    enc.X_train, enc.y_train, problem.layout, lmech, seed=noise_seed
                )
            for model, (priv, overrides) in models.items():
                data = releases[priv]
                st = replace(base, **overrides)
                try:
                    run = train_mrf(problem, st, iterations, data=data, eval_every=iterations + 1)
                    score, seconds = run.nllh_test, run.seconds
                except DivergenceError:  # reported as NaN: the plot and summary skip it
                    score, seconds = float("nan"), float("nan")
                rows.append({
                    "epsilon": eps, "delta": summary["delta"], "mechanism": summary["mechanism"],
                    "sigma": summary["sigma"], "model": model, "noise_seed": noise_seed,
                    "nllh_test": score, "seconds": seconds,
                })  # fmt: skip
                if with_privacy:  # the local rows keep the central σ at that ε as its label
                    rows[-1]["privacy"] = priv
                    rows[-1]["noise_rms"] = (
                        float(data.noise.std) if priv == "local" else summary["sigma"]
                    )
                done += 1
                bar(done, total)
    frame = pd.DataFrame(rows)
    frame["mrf_noiseless"] = ref.nllh_test
    frame["logistic_pairs"] = sky.nllh_test
    out = Path(args.out)
    csv_path = out.with_suffix(".csv")
    png_path = out.with_suffix(".png")
    neutralise_frame(frame).to_csv(csv_path, index=False)
    sweep_plot(frame, problem.name, png_path)
    table = sweep_summary(frame)
    if args.json:
        clean = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                 for r in rows]  # fmt: skip
        print_json({"csv": str(csv_path), "png": str(png_path), "rows": clean,
                    "summary": table.to_dict(orient="records"),
                    "mrf_noiseless": ref.nllh_test, "logistic_pairs": sky.nllh_test})  # fmt: skip
    else:
        print_sweep(table, csv_path, png_path)
    return 0


def check_out(prefix: str) -> None:
    """``--out PREFIX`` (before any work): PREFIX.csv and PREFIX.png can be written in an
    existing directory (nothing is created), and PREFIX is not itself a directory."""
    from ..errors import AggMRFError
    from ..files import check_output_file

    out = Path(prefix)
    if out.is_dir():
        raise AggMRFError(
            f"--out {prefix!r} is a directory; give a file prefix such as {str(out / 'sweep')!r} "
            "(writes PREFIX.csv and PREFIX.png)."
        )
    check_output_file(out.with_suffix(".csv"), "--out")
    check_output_file(out.with_suffix(".png"), "--out")


def sweep_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count of the test NLLH over the noise seeds, one row per
    ε and model (diverged runs, NaN, left out; ``n`` says how many runs remain)."""
    g = frame.groupby(["epsilon", "sigma", "model"], sort=True)["nllh_test"]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    order = {m: i for i, m in enumerate([*MODELS, *PRIVACY_MODELS])}
    out["_o"] = out["model"].map(order)
    return out.sort_values(["epsilon", "_o"]).drop(columns="_o").reset_index(drop=True)


def sweep_plot(frame: pd.DataFrame, dataset: str, path: Path) -> None:
    """Test NLLH against ε (log axis): each model's mean over the noise seeds with ± 1 sd
    error bars, and the noiseless references.

    ``frame``: the sweep's rows (columns as in PREFIX.csv); ``path``: the PNG written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = sweep_summary(frame)
    n_seeds = int(frame.groupby(["epsilon", "model"])["noise_seed"].nunique().max())
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for model in [*MODELS, *PRIVACY_MODELS]:  # offsets dodge the error bars
        sub = table[table["model"] == model]
        if sub.empty:
            continue
        fmt, offset, colour = STYLES[model]
        ax.errorbar(
            sub["epsilon"] * offset, sub["mean"], yerr=sub["sd"].fillna(0.0),
            fmt=fmt, capsize=3, label=f"{model}", color=colour,
        )  # fmt: skip
    sky, ref = frame["logistic_pairs"].iloc[0], frame["mrf_noiseless"].iloc[0]
    ax.axhline(sky, color="k", ls="--", lw=1, label=f"logistic on records, skyline ({sky:.3f})")
    ax.axhline(ref, color="tab:green", ls=":", lw=2, label=f"MRF, no noise ({ref:.3f})")
    local = "privacy" in frame and bool((frame["privacy"] == "local").any())
    floor = -0.25  # plain MRF on local tables can fall far below 0: keep the rest readable
    clipped = local and bool((table["mean"] < floor).any())
    if clipped:
        top = max(float(table["mean"].max()), float(sky), float(ref))
        ax.set_ylim(floor, top + 0.05)
        ax.text(0.01, 0.01, f"means below {floor} are off the axis (see the CSV)",
                transform=ax.transAxes, fontsize=7, va="bottom")  # fmt: skip
    ax.set_xscale("log")
    eps = frame.groupby("epsilon")["sigma"].first()
    ax.set_xticks(eps.index, [f"{e:g}\nσ={s:.3g}" for e, s in eps.items()])
    ax.minorticks_off()
    ax.set_xlabel("privacy budget ε, noise sd σ (log scale; smaller ε = more private)")
    ax.set_ylabel("test NLLH (higher is better)")
    mech = frame["mechanism"].iloc[0]
    delta = frame["delta"].iloc[0]
    kind = f"{mech} mechanism" + (f", δ={delta:g}" if delta else "")
    if local:  # σ on the axis is the central mechanism's; local ε is pure (δ = 0)
        kind = f"\ncentral: {kind} (σ on the axis); local: randomized response, δ=0"
    ax.set_title(
        f"What does ε cost? {dataset}, {kind}"
        + f"\nmean ± 1 sd over {n_seeds} noise seed{'s' if n_seeds > 1 else ''}",
        fontsize=10,
    )  # fmt: skip
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
