"""``aggmrf-explore sweep``: what does ε cost?  At each ε of ``--epsilons``, ``--noise-seeds``
independent releases; on each, three models trained on the noisy tables:

* ``MRF (raw)``: the plain MRF fitted to the released values as they are (targets="raw",
  the AdKDD'21 paper's MRF baseline);
* ``MRF (projected)``: the plain MRF fitted to d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺) (the
  trainer's default);
* ``MRF-N``: noise-aware training (the paper's section 5);

against the noiseless MRF and the logistic skyline on records.

``--privacy central,local``: at each ε and seed a central release (as above) and/or
a local one (``privacy.local.local_release``: randomized response on every training record
at a person's ε, split equally over the fields, channel inverted), and on each the plain MRF
(projected) and MRF-N (per-cell Gaussian σ for the local tables): models "central MRF",
"central MRF-N", "local MRF", "local MRF-N".  The CSV gains ``privacy`` and ``noise_rms``
(the central σ, or the local release's root-mean-square per-cell σ); the ``sigma`` column
stays the central mechanism's σ at that ε (the plot's axis label).  Writes PREFIX.csv (one row
per ε, model and noise seed) and PREFIX.png (test NLLH against ε: mean over the noise seeds,
error bars ± 1 standard deviation).  ``--quick``: ε 1 and 10, 2 seeds, 150 iterations (each
overridable by its own flag).

``--sizes``: every model is also trained on nested random subsamples of the
training records (fractions of them, or record counts; default 0.25,0.5,1 with
``central,local``, else all records only).  Seed k's subsamples are the first m records of
one permutation seeded by k (the full size keeps every record in order, so its rows equal a
sweep without ``--sizes``); the noiseless MRF and the skyline stay at the full size.  The CSV
gains ``n_records``; PREFIX.png shows the full size.  With central and local privacy and
≥ 2 sizes, PREFIX_records.csv and PREFIX_records.png give, per ε, the records local privacy
needs for the test NLLH central privacy gets with n_c records (``selection.sample_size.records_table``:
the rule for interpolated, extrapolated and "beyond" points is in ``selection.sample_size``), against
the theoretical count of ``privacy.local.records_needed_theory`` (dashed).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import create_file
from . import args as cli_args
from .report import ProgressBar, noise_summary, print_json, print_sweep

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cmd_sweep", "sweep_plot", "sweep_summary", "records_plot", "check_out", "MODELS"]

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
    "MRF (raw)": ("v-", 0.97, None),
    "MRF (projected)": ("o-", 1.0, None),
    "MRF-N": ("s-", 1.03, None),
    "central MRF": ("o-", 0.96, "tab:blue"),
    "central MRF-N": ("s-", 0.98, "tab:orange"),
    "local MRF": ("o--", 1.02, "tab:purple"),
    "local MRF-N": ("s--", 1.04, "tab:red"),
}
DEFAULT_EPSILONS = "0.5,1,2,5,10"
DEFAULT_SIZES = {"local": "0.25,0.5,1", "central": "1"}  # with and without central,local
QUICK = {"epsilons": "1,10", "noise_seeds": 2, "iterations": 150, "sizes": "0.5,1"}


def _options(args: argparse.Namespace) -> tuple[list[float], int, int | None]:
    """(ε list, number of noise seeds ≥ 1, iterations or None for the default rule) from the
    flags and ``--quick``."""
    from ..errors import AggMRFError

    quick = bool(getattr(args, "quick", False))
    eps_text = (
        args.epsilons
        if args.epsilons is not None
        else (QUICK["epsilons"] if quick else DEFAULT_EPSILONS)
    )
    epsilons = cli_args.float_list(eps_text, "--epsilons")
    seeds = getattr(args, "noise_seeds", None)
    seeds = (QUICK["noise_seeds"] if quick else 3) if seeds is None else seeds
    if not isinstance(seeds, int) or seeds < 1:
        raise AggMRFError(f"--noise-seeds must be an integer ≥ 1; got {seeds!r}.")
    if quick and args.iterations is None:
        return epsilons, seeds, QUICK["iterations"]
    # None: the rule mrf.default_iterations, once the layout is known
    return epsilons, seeds, None if args.iterations is None else cli_args.iterations(args)


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


def _sizes(args: argparse.Namespace, privacies: list[str]) -> list[float]:
    """``--sizes`` (syntax only; :func:`selection.sample_size.resolve_sizes` checks them against n)."""
    from ..selection.sample_size import parse_sizes

    text = getattr(args, "sizes", None)
    if text is None:
        both = set(privacies) == set(PRIVACIES)
        quick = bool(getattr(args, "quick", False))
        text = QUICK["sizes"] if (quick and both) else DEFAULT_SIZES["local" if both else "central"]
    return parse_sizes(text)


def _models(privacies: list[str]) -> dict[str, tuple[str, dict]]:
    """Model label → (privacy model, settings overrides) for the sweep's ``--privacy``."""
    if privacies == ["central"]:
        return {m: ("central", o) for m, o in MODELS.items()}
    return {m: v for m, v in PRIVACY_MODELS.items() if v[0] in privacies}


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: write the CSV and the PNG(s), print the rows; returns the exit status."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd

    from ..baselines import logistic_pairs
    from ..errors import DivergenceError
    from ..experiment import train_mrf
    from ..io.formula import neutralise_frame
    from ..privacy import make_mechanism, release
    from ..privacy.local import records_needed_theory
    from ..selection.sample_size import nested_subsample, records_table, resolve_sizes
    from ..tables import aggregate
    from ..trainer_settings import release_noise_sd

    cli_args.check_numbers(args)
    check_out(args.out)
    privacies = _privacies(args)
    models = _models(privacies)
    with_privacy = privacies != ["central"]
    size_spec = _sizes(args, privacies)
    epsilons, n_seeds, iterations = _options(args)
    problem = cli_args.prepare_problem(args)
    full = problem.aggregated
    sizes = resolve_sizes(size_spec, full.n)
    with_sizes = with_privacy or getattr(args, "sizes", None) is not None
    records = set(privacies) == set(PRIVACIES) and len(sizes) >= 2
    if records:
        check_out(str(_records_prefix(args.out)))
    # every mechanism first, so that a bad δ fails before any training
    mechs = [cli_args.make_mechanism(args, problem.layout, eps) for eps in epsilons]
    bases = {m: cli_args.trainer_settings(args, problem.layout, m) for m in sizes}
    base = (
        bases[sizes[-1]]
        if sizes[-1] == full.n
        else cli_args.trainer_settings(args, problem.layout, full.n)
    )
    if iterations is None:
        iterations = cli_args.iterations(args, base)
    enc = problem.encoded
    local_mechs = [
        make_mechanism("local", eps, layout=problem.layout) if "local" in privacies else None
        for eps in epsilons
    ]
    total = 2 + len(models) * n_seeds * len(epsilons) * len(sizes)
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
        summary = noise_summary(mech, cli_args.accounting_of(args))
        for size in sizes:
            for k in range(n_seeds):
                noise_seed = args.seed + k
                idx = nested_subsample(full.n, size, noise_seed)
                X = enc.X_train if idx is None else enc.X_train[idx]
                y = enc.y_train if idx is None else enc.y_train[idx]
                exact = full if idx is None else aggregate(X, y, problem.layout)
                releases = {
                    priv: release(exact, m, seed=noise_seed, records=(X, y))
                    for priv, m in (("central", mech), ("local", lmech))
                    if priv in privacies
                }
                for model, (priv, overrides) in models.items():
                    data = releases[priv]
                    # the default rule's penalties follow this release's noise
                    st = cli_args.trainer_settings(
                        args,
                        problem.layout,
                        size,
                        release_noise_sd(data),
                        bool(overrides.get("noise_aware")),
                    )
                    st = replace(st, **overrides)
                    try:
                        run = train_mrf(
                            problem, st, iterations, data=data, eval_every=iterations + 1
                        )
                        score, seconds = run.nllh_test, run.seconds
                    except DivergenceError:  # reported as NaN: the plot and summary skip it
                        score, seconds = float("nan"), float("nan")
                    rows.append(
                        {
                            "epsilon": eps,
                            "delta": summary["delta"],
                            "mechanism": summary["mechanism"],
                            "sigma": summary["sigma"],
                            "model": model,
                            "noise_seed": noise_seed,
                            "nllh_test": score,
                            "seconds": seconds,
                        }
                    )
                    if with_privacy:  # the local rows keep the central σ at that ε as its label
                        rows[-1]["privacy"] = priv
                        rows[-1]["noise_rms"] = (
                            float(data.noise.std) if priv == "local" else summary["sigma"]
                        )
                    if with_sizes:
                        rows[-1]["n_records"] = size
                    done += 1
                    bar(done, total)
    frame = pd.DataFrame(rows)
    frame["mrf_noiseless"] = ref.nllh_test
    frame["logistic_pairs"] = sky.nllh_test
    out = Path(args.out)
    csv_path = out.with_suffix(".csv")
    png_path = out.with_suffix(".png")
    with create_file(csv_path, "--out", newline="") as fh:
        neutralise_frame(frame).to_csv(fh, index=False)
    at_full = frame if not with_sizes else frame[frame["n_records"] == sizes[-1]]
    sweep_plot(at_full, problem.name, png_path)
    table = sweep_summary(frame)
    extra = {}
    if records:
        theory = {
            eps: functools.partial(
                records_needed_theory, problem.layout, lm, full.d, full.c, full.n, m.std
            )
            for eps, m, lm in zip(epsilons, mechs, local_mechs, strict=True)
        }
        need = records_table(table, theory)
        rec = _records_prefix(args.out)
        extra = {
            "records_csv": str(rec.with_suffix(".csv")),
            "records_png": str(rec.with_suffix(".png")),
        }
        with create_file(extra["records_csv"], "--out", newline="") as fh:
            neutralise_frame(need).to_csv(fh, index=False)
        records_plot(table, need, frame, problem.name, Path(extra["records_png"]))
    if args.json:
        clean = [
            {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in rows
        ]
        summary = [
            {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in table.to_dict(orient="records")
        ]
        report = {
            "csv": str(csv_path),
            "png": str(png_path),
            "rows": clean,
            "summary": summary,
            "mrf_noiseless": ref.nllh_test,
            "logistic_pairs": sky.nllh_test,
        }
        if records:
            report.update(extra, records=need.to_dict(orient="records"))
        print_json(report)
    else:
        one = bool((table["n"] < 2).all())  # no spread from one run: no sd column
        print_sweep(table.drop(columns="sd") if one else table, csv_path, png_path)
        if one:
            print("(one noise seed: no standard deviation; --noise-seeds 2 or more for one)")
        if records:
            print("\nrecords local privacy needs for the NLLH central privacy gets with n_central:")
            print(need.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
            print(f"\nwrote {extra['records_csv']} and {extra['records_png']}")
    return 0


def _records_prefix(prefix: str) -> Path:
    """PREFIX_records (the records-needed CSV and PNG) for ``--out PREFIX``."""
    out = Path(prefix)
    return out.with_name(out.name + "_records")


def check_out(prefix: str) -> None:
    """``--out PREFIX`` (before any work): PREFIX.csv and PREFIX.png pass the output checks
    of :func:`~aggmrf_explore.files.check_output_file` (an existing directory, never a
    device or special file, never one of the command's inputs, never a symlink; nothing is
    created), and PREFIX itself is neither a directory, a name that means "here" or the
    root, nor a device (:func:`~aggmrf_explore.files.check_output_name`)."""
    import os
    import stat

    from ..errors import AggMRFError
    from ..files import check_output_file, check_output_name

    out = check_output_name(prefix, "--out")
    if out.is_dir():
        raise AggMRFError(
            f"--out {prefix!r} is a directory; give a file prefix such as {str(out / 'sweep')!r} "
            "(writes PREFIX.csv and PREFIX.png)."
        )
    try:
        mode = os.stat(out).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise AggMRFError(
            f"--out {prefix!r} is a device or special file; give a file prefix in a directory "
            "of yours, such as 'results/sweep' (writes PREFIX.csv and PREFIX.png)."
        )
    check_output_file(out.with_suffix(".csv"), "--out")
    check_output_file(out.with_suffix(".png"), "--out")


def sweep_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count of the test NLLH over the noise seeds, one row per
    ε and model (and ``n_records`` when the frame has it); diverged runs, NaN, left out;
    ``n`` says how many runs remain."""
    keys = ["epsilon", "sigma", "model"] + (["n_records"] if "n_records" in frame else [])
    g = frame.groupby(keys, sort=True)["nllh_test"]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    order = {m: i for i, m in enumerate([*MODELS, *PRIVACY_MODELS])}
    out["_o"] = out["model"].map(order)
    by = ["epsilon", "_o"] + (["n_records"] if "n_records" in frame else [])
    return out.sort_values(by).drop(columns="_o").reset_index(drop=True)


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
            sub["epsilon"] * offset,
            sub["mean"],
            yerr=sub["sd"].fillna(0.0),
            fmt=fmt,
            capsize=3,
            label=f"{model}",
            color=colour,
        )
    sky, ref = frame["logistic_pairs"].iloc[0], frame["mrf_noiseless"].iloc[0]
    ax.axhline(sky, color="k", ls="--", lw=1, label=f"logistic on records, skyline ({sky:.3f})")
    ax.axhline(ref, color="tab:green", ls=":", lw=2, label=f"MRF, no noise ({ref:.3f})")
    local = "privacy" in frame and bool((frame["privacy"] == "local").any())
    floor = -0.25  # plain MRF on local tables can fall far below 0: keep the rest readable
    clipped = local and bool((table["mean"] < floor).any())
    if clipped:
        top = max(float(table["mean"].max()), float(sky), float(ref))
        ax.set_ylim(floor, top + 0.05)
        ax.text(
            0.01,
            0.01,
            f"means below {floor} are off the axis (see the CSV)",
            transform=ax.transAxes,
            fontsize=7,
            va="bottom",
        )
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
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    with create_file(path, "--out", binary=True) as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)


def records_plot(
    table: pd.DataFrame, need: pd.DataFrame, frame: pd.DataFrame, dataset: str, path: Path
) -> None:
    """Two panels: test NLLH against the number of training records (central and local MRF-N,
    one colour per ε, ± 1 sd over the noise seeds), and the records local privacy needs for
    the NLLH central privacy gets with n_c records, against ε (log scales).

    Filled markers: interpolated between measured sizes; hollow: extrapolated (≤ 10 × the
    largest size); ▲ at the bound: more than 10 × the largest size; ▼: at most the smallest
    size.  Dashed: ``privacy.local.records_needed_theory``.  ``table``: ``sweep_summary`` of
    the sweep's rows (with ``n_records``); ``need``: ``selection.sample_size.records_table``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    n_seeds = int(frame.groupby(["epsilon", "model", "n_records"])["noise_seed"].nunique().max())
    eps_list = sorted(table["epsilon"].unique())
    cmap = plt.get_cmap("viridis")
    colour = {e: cmap(i / max(1, len(eps_list) - 1) * 0.9) for i, e in enumerate(eps_list)}
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 6.6), dpi=120)
    for e in eps_list:
        for model, ls, mk in (("central MRF-N", "-", "s"), ("local MRF-N", "--", "o")):
            sub = table[(table["epsilon"] == e) & (table["model"] == model)]
            sub = sub[np.isfinite(sub["mean"])]
            if sub.empty:
                continue
            ax.errorbar(
                sub["n_records"] * (0.97 if ls == "-" else 1.03),
                sub["mean"],
                yerr=sub["sd"].fillna(0.0),
                ls=ls,
                marker=mk,
                ms=4,
                capsize=2,
                color=colour[e],
                label=f"ε={e:g} {model.split()[0]}",
            )
    ref = float(frame["mrf_noiseless"].iloc[0])
    n_full = int(table["n_records"].max())
    ax.axhline(ref, color="tab:green", ls=":", lw=2, label=f"MRF, no noise, {n_full:,} ({ref:.3f})")
    ax.axhline(0.0, color="k", lw=0.6)
    floor = -0.25
    if bool((table["mean"] < floor).any()):
        ax.set_ylim(floor, max(float(table["mean"].max()), ref) + 0.05)
        ax.text(
            0.01,
            0.01,
            f"means below {floor} off the axis (see the CSV)",
            transform=ax.transAxes,
            fontsize=7,
        )
    ax.set_xscale("log")
    ax.set_xlabel("training records n (nested random subsamples; log scale)")
    ax.set_ylabel("test NLLH (higher is better)")
    ax.set_title(
        f"MRF-N: central (solid) and local (dashed), mean ± 1 sd over {n_seeds} seed"
        f"{'s' if n_seeds > 1 else ''}",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    # right: records needed against ε
    n_small = int(need["n_central"].min()) if not need.empty else n_full
    series = [
        ("MRF-N", n_full, "tab:red"),
        ("MRF-N", n_small, "tab:orange"),
        ("MRF", n_full, "tab:purple"),
    ]
    seen = set()
    for pair, n_c, col in series:
        if (pair, n_c) in seen:
            continue
        seen.add((pair, n_c))
        sub = need[(need["pair"] == pair) & (need["n_central"] == n_c)].sort_values("epsilon")
        if sub.empty:
            continue
        off = {"tab:red": 1.0, "tab:orange": 0.96, "tab:purple": 1.04}[col]
        x = sub["epsilon"].to_numpy() * off
        yv = sub["records_needed"].to_numpy()
        st = sub["status"].to_numpy()
        bx.plot(
            x,
            yv,
            "-",
            color=col,
            lw=1,
            alpha=0.7,
            label=f"local {pair} to match central {pair} at n_c = {n_c:,}",
        )
        for mark, stat, face in (
            ("o", "interpolated", col),
            ("o", "extrapolated", "white"),
            ("^", "beyond", "white"),
            ("v", "below", "white"),
        ):
            m = st == stat
            if m.any():
                bx.plot(x[m], yv[m], mark, ms=7, mfc=face, mec=col, mew=1.5, ls="none")
        if pair == "MRF-N":
            bx.plot(
                x,
                sub["theory_records"],
                "--",
                color=col,
                lw=1.2,
                label=f"theory (χ² of the tables), n_c = {n_c:,}",
            )
    bx.axhline(n_full, color="k", ls=":", lw=1, label=f"records available ({n_full:,})")
    for mark, face, text in (
        ("o", "grey", "interpolated"),
        ("o", "white", "extrapolated (≤ 10 × n)"),
        ("^", "white", "more than 10 × n (bound)"),
        ("v", "white", "at most the smallest size"),
    ):
        bx.plot([], [], mark, mfc=face, mec="grey", ls="none", label=text)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xticks(eps_list, [f"{e:g}" for e in eps_list])
    bx.minorticks_off()
    bx.set_xlabel("privacy budget ε (log scale; local: per person, split over the fields)")
    bx.set_ylabel("records local privacy needs (log scale)")
    bx.set_title("records needed for the same test NLLH", fontsize=10)
    bx.grid(True, which="both", alpha=0.3)
    bx.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    fig.suptitle(f"Local versus central privacy on {dataset}: how many more records?", fontsize=11)
    fig.tight_layout()
    with create_file(path, "--out", binary=True) as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
