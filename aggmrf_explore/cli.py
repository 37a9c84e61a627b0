"""`aggmrf-explore`: train and evaluate from the command line (a stable, scriptable surface).

Subcommands
-----------
run    train the MRF (optionally on a noisy release) and the baselines, print a table or JSON
xor    the XOR counterexample: truth, exact max-ent, PCD and logistic per state
sweep  what-if over ε: MRF and noise-aware MRF-N at each ε, CSV + PNG of test NLLH vs ε

Every error the user can cause prints one line ``error: …`` and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .errors import AggMRFError

__all__ = ["main", "build_parser"]


# ---------------------------------------------------------------------- progress
class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / max(total, 1))
        elapsed = time.perf_counter() - self.t0
        sys.stderr.write(
            f"\r{self.label:<22} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {elapsed:5.1f}s"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------- arguments
def _csv_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise AggMRFError(f"expected a comma-separated list, got {text!r}.")
    return items


def _float_list(text: str, what: str) -> list[float]:
    try:
        vals = [float(t) for t in _csv_list(text) or []]
    except ValueError:
        raise AggMRFError(
            f"{what} must be comma-separated numbers, e.g. 0.5,1,2; got {text!r}."
        ) from None
    if not vals or not all(np.isfinite(v) and v > 0 for v in vals):
        raise AggMRFError(f"{what} must be positive finite numbers; got {text!r}.")
    return vals


def _lambda_theta_arg(text: str) -> float | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0 or 'auto'; got {text!r}") from None


def _add_data_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--dataset", help="toy, xor, synthetic, adult or bank")
    src.add_argument("--csv", help="your own CSV file (needs --label)")
    g.add_argument("--label", help="label column of --csv (binary: 0/1, yes/no, true/false, …)")
    g.add_argument("--test-csv", help="a separate test CSV (default: split --csv)")
    g.add_argument(
        "--test-fraction", type=float, default=0.3, help="test share when splitting (0.3)"
    )
    g.add_argument("--features", help="comma-separated feature columns to keep")
    g.add_argument("--drop-features", help="comma-separated feature columns to drop")
    g.add_argument("--n", type=int, default=None, help="records (generated data) or a subsample")
    g.add_argument("--bins", type=int, default=10, help="bins for numeric columns (deciles: 10)")
    g.add_argument("--unseen", choices=("error", "other"), default="error",
                   help="--csv: a test value never seen in training is an error (default) or '(other)'")  # fmt: skip
    g.add_argument("--no-singles", action="store_true", help="do not release single-feature tables")
    g.add_argument("--no-pairs", action="store_true", help="do not release pair tables")
    g.add_argument("--seed", type=int, default=0, help="seed for data, noise and Gibbs sampling")


def _add_train_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training (defaults: a documented rule, see mrf.default_settings)")
    g.add_argument("--iterations", type=int, default=None, help="PCD iterations (600)")
    g.add_argument("--gibbs-samples", type=int, default=None, help="persistent Gibbs samples n'")
    g.add_argument("--lambda-mu", type=float, default=None, help="L2 penalty on μ")
    g.add_argument("--lambda-theta", type=_lambda_theta_arg, default=None,
                   help="L2 penalty on θ, or 'auto' (chosen from the tables alone, run only)")  # fmt: skip
    g.add_argument("--step-mu", type=float, default=None, help="step size α_μ")
    g.add_argument("--step-theta", type=float, default=None, help="step size α_θ")
    g.add_argument("--gradient", choices=("rescaled", "true"), default=None)
    g.add_argument("--no-precondition", action="store_true")


def _add_noise_options(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    g = p.add_argument_group("privacy noise")
    g.add_argument(
        "--mechanism",
        choices=("laplace", "gaussian") if sweep else ("none", "laplace", "gaussian"),
        default="gaussian" if sweep else "none",
    )
    if not sweep:
        g.add_argument("--epsilon", type=float, default=None, help="privacy budget ε > 0")
    g.add_argument("--delta", type=float, default=1e-7, help="δ of the Gaussian mechanism (1e-7)")
    g.add_argument("--accounting", choices=("both", "queries"), default="both",
                   help="both: counts and label sums (Δ1 = 2T); queries: the paper's T queries")  # fmt: skip
    g.add_argument("--calibration", choices=("analytic", "classic", "adkdd21"), default="analytic")
    if not sweep:
        g.add_argument("--noise-aware", action="store_true", help="MRF-N: model the noise")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aggmrf-explore",
        description="Learn a logistic model from aggregated (and privacy-noised) contingency tables.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train the MRF and the baselines, report test NLLH")
    _add_data_options(run)
    _add_train_options(run)
    _add_noise_options(run)
    run.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    run.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    _add_release_options(run)

    agg = sub.add_parser(
        "aggregate", help="aggregate records into a release (tables + release.json)"
    )
    _add_data_options(agg)
    _add_noise_options(agg)
    agg.add_argument(
        "--out", required=True, help="output directory (or FILE.csv with --format long)"
    )
    agg.add_argument("--format", choices=("dir", "long"), default="dir",
                     help="dir: one CSV per table + release.json; long: one CSV + FILE.json")  # fmt: skip
    agg.add_argument(
        "--schema", help="encode with the schema of this release.json (a second release)"
    )

    pr = sub.add_parser("predict", help="probabilities of records under an exported model")
    pr.add_argument("--model", required=True, help="model file written by run --export-model")
    pr.add_argument("--csv", required=True, help="records (CSV with the feature columns)")
    pr.add_argument("--out", help="write the probabilities here (default: stdout)")
    pr.add_argument("--label", help="label column: also report the NLLH on stderr")

    xor = sub.add_parser("xor", help="the XOR counterexample, state by state")
    xor.add_argument("--n", type=int, default=100_000, help="records for PCD and logistic")
    xor.add_argument("--iterations", type=int, default=600)
    xor.add_argument("--seed", type=int, default=0)
    xor.add_argument("--json", action="store_true")

    sw = sub.add_parser("sweep", help="MRF and MRF-N over a list of ε: CSV and PNG")
    _add_data_options(sw)
    _add_train_options(sw)
    _add_noise_options(sw, sweep=True)
    sw.add_argument("--epsilons", default="0.5,1,2,5,10", help="comma-separated ε values")
    sw.add_argument(
        "--out", default="sweep", help="output prefix: writes PREFIX.csv and PREFIX.png"
    )
    sw.add_argument("--json", action="store_true", help="also print the rows as JSON")
    return parser


# ---------------------------------------------------------------------- helpers
def _load(args) -> object:
    from . import datasets

    features = _csv_list(args.features)
    drop = _csv_list(args.drop_features)
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


def _problem(args):
    from .experiment import prepare

    if args.no_singles and args.no_pairs:
        raise AggMRFError("--no-singles and --no-pairs together leave no table to release.")
    if args.bins < 2:
        raise AggMRFError(f"--bins must be at least 2; got {args.bins}.")
    return prepare(
        _load(args), singles=not args.no_singles, pairs=not args.no_pairs, n_bins=args.bins
    )


def _settings(args, problem, n: int):
    from .mrf import default_settings

    over = {"seed": args.seed}
    for opt, key in (
        ("gibbs_samples", "n_gibbs"),
        ("lambda_mu", "lambda_mu"),
        ("lambda_theta", "lambda_theta"),
        ("step_mu", "step_mu"),
        ("step_theta", "step_theta"),
        ("gradient", "gradient"),
    ):
        v = getattr(args, opt)
        if v == "auto":
            if getattr(args, "command", "run") != "run":
                raise AggMRFError("--lambda-theta auto is available with `run` only.")
            continue
        if v is not None:
            over[key] = v
    if args.no_precondition:
        over["precondition"] = False
    return default_settings(problem.layout, n, **over)


def _iterations(args) -> int:
    from .experiment import DEFAULT_ITERATIONS

    it = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
    if it < 1:
        raise AggMRFError(f"--iterations must be ≥ 1; got {it}.")
    return it


def _mechanism(args, layout, epsilon):
    from .privacy import make_mechanism

    if args.mechanism != "none" and epsilon is None:
        raise AggMRFError(f"--mechanism {args.mechanism} needs --epsilon (e.g. --epsilon 1).")
    if args.mechanism == "none" and epsilon is not None:
        raise AggMRFError("--epsilon given without a mechanism: add --mechanism laplace|gaussian.")
    return make_mechanism(
        args.mechanism, epsilon, args.delta, layout, args.accounting, args.calibration
    )


def noise_summary(mech, accounting: str) -> dict:
    """The JSON "noise" object of a mechanism (or of no noise)."""
    if mech is None:
        return {"mechanism": "none"}
    out = {
        "mechanism": mech.name,
        "epsilon": mech.epsilon,
        "delta": mech.delta,
        "accounting": accounting,
    }
    if mech.name == "laplace":
        out.update(scale=mech.scale, sigma=mech.std, l1_sensitivity=mech.l1_sensitivity)
    else:
        out.update(
            sigma=mech.sigma, l2_sensitivity=mech.l2_sensitivity, calibration=mech.calibration
        )
    return out


# ---------------------------------------------------------------------- commands
def cmd_run(args) -> int:
    from .baselines import fit_baselines
    from .experiment import train_mrf
    from .privacy import release

    if getattr(args, "tables", None):
        from .cli_tables import cmd_run_tables

        return cmd_run_tables(args)
    t0 = time.perf_counter()
    problem = _problem(args)
    mech = _mechanism(args, problem.layout, args.epsilon)
    data = (
        release(problem.aggregated, mech, seed=args.seed)
        if mech is not None
        else problem.aggregated
    )
    if args.noise_aware and mech is None:
        raise AggMRFError(
            "--noise-aware needs noise: add --mechanism laplace|gaussian --epsilon X."
        )
    settings = _settings(args, problem, data.n)
    if args.noise_aware:
        from dataclasses import replace

        settings = replace(settings, noise_aware=True)
    iterations = _iterations(args)
    auto = None
    if args.lambda_theta == "auto":
        from .cli_tables import auto_lambda

        settings, auto = auto_lambda(args, data, settings, iterations)
    prep_seconds = time.perf_counter() - t0
    run = train_mrf(
        problem, settings, iterations, data=data,
        progress=Progress("MRF" + ("-N" if args.noise_aware else "")),
        eval_every=iterations + 1,
    )  # fmt: skip
    models = {"mrf": {"nllh_test": run.nllh_test, "seconds": run.seconds}}
    if not args.no_baselines:
        bar = Progress("baselines")
        bar(0, 4)
        for i, (name, res) in enumerate(fit_baselines(problem, seed=args.seed).items()):
            models[name] = {"nllh_test": res.nllh_test, "seconds": res.seconds}
            extra = {k: v for k, v in res.info.items() if k in ("lambda", "temperature", "pair")}
            models[name].update(extra)
            bar(i + 1, 4)
    out = {
        "dataset": problem.name,
        "n_train": problem.n_train,
        "n_test": problem.n_test,
        "n_features": problem.layout.n_features,
        "n_tables": problem.layout.n_released_tables,
        "n_rows": problem.layout.K,
        "settings": {**asdict(settings), "iterations": iterations},
        "models": models,
        "noise": noise_summary(mech, args.accounting),
        "seconds": {"prepare": prep_seconds, "total": time.perf_counter() - t0},
    }
    if auto is not None:
        out["lambda_theta_auto"] = auto.to_dict()
    if args.export_model:
        from .model_io import save_model
        from .tables_io import Schema

        enc = problem.encoded
        schema = Schema.from_encoder(enc.encoder, problem.dataset.label, enc.positive_label)
        save_model(args.export_model, run.trainer.model, schema, out["settings"])
        out["model_file"] = str(args.export_model)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        _print_run(out)
    return 0


def _print_run(out: dict) -> None:
    print(f"dataset {out['dataset']}: {out['n_train']} train / {out['n_test']} test records, "
          f"{out['n_features']} features, {out['n_tables']} tables, {out['n_rows']} rows")  # fmt: skip
    noise = out["noise"]
    if noise["mechanism"] != "none":
        print(f"noise: {noise['mechanism']} ε={noise['epsilon']} δ={noise['delta']} "
              f"σ={noise['sigma']:.2f} ({noise['accounting']} accounting)")  # fmt: skip
    s = out["settings"]
    print(f"MRF: {s['iterations']} iterations, n'={s['n_gibbs']}, λμ={s['lambda_mu']:g}, "
          f"λθ={s['lambda_theta']:g}, αμ={s['step_mu']:.4g}, αθ={s['step_theta']:.4g}, "
          f"{s['gradient']} gradient{', noise-aware' if s['noise_aware'] else ''}")  # fmt: skip
    print(f"\n{'model':<16}{'test NLLH':>10}{'seconds':>10}")
    for name, m in out["models"].items():
        print(f"{name:<16}{m['nllh_test']:>10.4f}{m['seconds']:>10.1f}")


def cmd_xor(args) -> int:
    from .baselines import logistic_pairs
    from .datasets import load_dataset, xor_distribution
    from .exact import fit_exact
    from .experiment import prepare, train_mrf
    from .mrf import default_settings
    from .tables import AggregatedData

    if args.n < 100:
        raise AggMRFError(f"--n must be at least 100 records; got {args.n}.")
    problem = prepare(load_dataset("xor", n=args.n, seed=args.seed))
    lay = problem.layout
    dist = xor_distribution()
    states = dist[["X1", "X2", "X3"]].to_numpy().astype(np.int32)
    # infinite data: expected tables of the true distribution (n = 1, fractions)
    r = lay.rows(states)
    T = lay.n_tables
    d = np.bincount(r.ravel(), weights=np.repeat(dist["p_x"].to_numpy(), T), minlength=lay.K)
    c = np.bincount(
        r.ravel(), weights=np.repeat((dist["p_x"] * dist["p_y1"]).to_numpy(), T), minlength=lay.K
    )
    exact = fit_exact(AggregatedData(lay, d, c, 1))
    settings = default_settings(lay, problem.n_train, seed=args.seed, lambda_theta=0.0)
    run = train_mrf(problem, settings, args.iterations, progress=Progress("MRF"),
                    eval_every=args.iterations + 1)  # fmt: skip
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
                "mrf": float(pm),
                "logistic": float(pl),
            }
            for s, px, py, pe, pm, pl in zip(
                states,
                dist["p_x"],
                dist["p_y1"],
                exact.predict_proba(states)[:, 1],
                run.trainer.predict_proba(states)[:, 1],
                lr.predict_proba(lr.layout_.phi(states))[:, 1],
                strict=True,
            )
        ],
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'x':<10}{'P(x)':>6}{'truth':>8}{'max-ent':>9}{'MRF':>8}{'logistic':>10}")
        for s in out["states"]:
            print(f"{str(s['x']):<10}{s['p_x']:>6.2f}{s['truth']:>8.3f}{s['maxent_exact']:>9.3f}"
                  f"{s['mrf']:>8.3f}{s['logistic']:>10.3f}")  # fmt: skip
        print(
            "(states with P(x) = 0 never occur; the max-ent and MRF values there are extrapolations)"
        )
    return 0


def cmd_sweep(args) -> int:
    from dataclasses import replace

    import pandas as pd

    from .baselines import logistic_pairs
    from .experiment import train_mrf
    from .privacy import release

    epsilons = _float_list(args.epsilons, "--epsilons")
    iterations = _iterations(args)
    problem = _problem(args)
    # every mechanism first, so that a bad δ fails before any training
    mechs = [_mechanism(args, problem.layout, eps) for eps in epsilons]
    base = _settings(args, problem, problem.aggregated.n)
    enc = problem.encoded
    total = 2 + 2 * len(epsilons)
    bar = Progress("sweep")
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
        print(json.dumps({"csv": str(csv_path), "png": str(png_path), "rows": rows,
                          "mrf_noiseless": ref.nllh_test, "logistic_pairs": sky.nllh_test}, indent=2))  # fmt: skip
    else:
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print(f"\nwrote {csv_path} and {png_path}")
    return 0


def sweep_plot(frame, dataset: str, path: Path) -> None:
    """Test NLLH against ε (log axis) for MRF and MRF-N with the noiseless references."""
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


def _add_release_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("records-free workflow (issue 7)")
    g.add_argument("--tables", help="train on an aggregated release (directory or long CSV), "
                   "no records; --test-csv scores it on records if you have some")  # fmt: skip
    g.add_argument("--validation-tables", help="a second release: aggregated-only validation")
    g.add_argument("--lenient", action="store_true",
                   help="inconsistent tables are warnings, not errors")  # fmt: skip
    g.add_argument("--export-model", help="write the fitted model (.json or .csv)")


def cmd_aggregate(args) -> int:
    from .cli_tables import cmd_aggregate as run_aggregate

    return run_aggregate(args)


def cmd_predict(args) -> int:
    from .cli_tables import cmd_predict as run_predict

    return run_predict(args)


COMMANDS = {
    "run": cmd_run,
    "xor": cmd_xor,
    "sweep": cmd_sweep,
    "aggregate": cmd_aggregate,
    "predict": cmd_predict,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `aggmrf-explore` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except AggMRFError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
