"""``aggmrf-explore run``: train the MRF and report its test NLLH (JSON or a table).

- on records (``--dataset`` / ``--csv``): exact or privacy-noised tables, plus the baselines;
- records-free (``--tables``): on a release, scored on records with ``--test-csv`` and on a
  second release with ``--validation-tables`` (the aggregated-only metrics);
- ``--lambda-theta auto``: λθ chosen from the tables alone (selection.lambda_theta);
- ``--export-model``: the fitted model, for ``predict``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, replace
from pathlib import Path

from ..errors import AggMRFError
from . import args as cli_args
from .report import ProgressBar, noise_summary, note, print_json, print_run, print_tables_run, warn

__all__ = [
    "cmd_run",
    "cmd_run_tables",
    "tables_report",
    "suppression_summary",
    "auto_lambda",
    "chain_factory_for",
]


# the reported model's d̂ on suppressed rows: the mean of this many sweeps of a copy of the
# trainer's chain at the model's (μ, θ) (a fresh chain, with --validation-csv, is burnt in)
SUPPRESSION_SWEEPS = 20
SUPPRESSION_BURN_IN = 100


def chain_factory_for(args: argparse.Namespace):
    """The trainer's chain factory for ``--sampler`` / ``--scheduler`` (None: the default)."""
    scheduler = getattr(args, "scheduler", None)
    sampler = getattr(args, "sampler", "auto")
    if scheduler:
        from ..distributed import cluster_chain_factory

        return cluster_chain_factory(scheduler, sampler=sampler)
    if sampler != "auto":
        from functools import partial

        from ..kernels import make_chain

        return partial(make_chain, sampler=sampler)
    return None


def auto_lambda(args: argparse.Namespace, data, settings, iterations: int, validation=None):
    """(settings with the chosen λθ, LambdaChoice), chosen from the release ``data`` only
    (and the second release ``validation`` if given); ``iterations`` per candidate fit."""
    from ..selection.lambda_theta import choose_lambda_theta

    over = {
        k: v
        for k, v in asdict(settings).items()
        if k in ("n_gibbs", "lambda_mu", "gradient", "precondition", "clip", "noise_aware", "seed")
    }
    for opt, key in (("step_mu", "step_mu"), ("step_theta", "step_theta")):
        if getattr(args, opt, None) is not None:
            over[key] = getattr(args, opt)
    choice = choose_lambda_theta(
        data,
        validation=validation,
        iterations=iterations,
        seed=settings.seed,
        settings_overrides=over,
        progress=ProgressBar("λθ auto"),
    )
    return replace(settings, lambda_theta=choice.lambda_theta), choice


def cmd_run(args: argparse.Namespace) -> int:
    """``run``: train on records' tables (``--tables``: on a release); returns the exit status."""
    cli_args.check_numbers(args)
    if args.export_model is not None:  # before any work ("" refused too)
        from ..io import check_model_path

        check_model_path(args.export_model)
    if args.tables:
        return cmd_run_tables(args)
    if args.validation_csv:
        raise AggMRFError(
            "--validation-csv goes with --tables (a release; records have their own split)."
        )
    from ..baselines import fit_baselines
    from ..experiment import train_mrf
    from ..privacy import release
    from ..trainer_settings import release_noise_sd

    t0 = time.perf_counter()
    problem = cli_args.prepare_problem(args)
    mech = cli_args.make_mechanism(args, problem.layout, args.epsilon)
    enc = problem.encoded
    data = release(problem.aggregated, mech, seed=args.seed, records=(enc.X_train, enc.y_train))
    data = cli_args.suppressed_as_released(args, data)
    cli_args.warn_useless_noise(data.noise, problem.layout, problem.aggregated.n)
    cli_args.check_noise_aware(args, mech)
    settings = cli_args.trainer_settings(
        args, problem.layout, data.n, release_noise_sd(data), bool(args.noise_aware)
    )
    iterations = cli_args.iterations(args, settings)
    auto = None
    if args.lambda_theta == "auto":
        settings, auto = auto_lambda(args, data, settings, iterations)
    prep_seconds = time.perf_counter() - t0
    run = train_mrf(
        problem,
        settings,
        iterations,
        data=data,
        progress=ProgressBar("MRF" + ("-N" if args.noise_aware else "")),
        eval_every=iterations + 1,
        chain_factory=chain_factory_for(args),
    )
    models = {"mrf": {"nllh_test": run.nllh_test, "seconds": run.seconds}}
    if not args.no_baselines:
        bar = ProgressBar("baselines")
        bar(0, 5)
        for i, (name, res) in enumerate(fit_baselines(problem, seed=args.seed).items()):
            models[name] = {"nllh_test": res.nllh_test, "seconds": res.seconds}
            kept = ("lambda", "temperature", "pair", "precomputed")
            extra = {k: v for k, v in res.info.items() if k in kept}
            models[name].update(extra)
            bar(i + 1, 5)
    out = {
        "dataset": problem.name,
        "n_train": problem.n_train,
        "n_test": problem.n_test,
        "n_features": problem.layout.n_features,
        "n_tables": problem.layout.n_released_tables,
        "n_rows": problem.layout.K,
        "settings": {**asdict(settings), "iterations": iterations},
        "models": models,
        "noise": noise_summary(mech, cli_args.accounting_of(args)),
        "seconds": {"prepare": prep_seconds, "total": time.perf_counter() - t0},
    }
    if data.suppression is not None:  # the dataset's release leaves out small pair cells
        out["suppression"] = {
            "threshold": max(data.suppression.thresholds.values()),
            "rows_left_out": data.suppression.n_rows,
        }
    if mech is not None and mech.privacy == "local":  # σ per cell: their root mean square
        out["noise"].update(sigma=float(data.noise.std), accounting="local")
    if auto is not None:
        out["lambda_theta_auto"] = auto.to_dict()
    if args.export_model:
        from ..encoding import Schema
        from ..io import save_model

        schema = Schema.from_encoder(enc.encoder, problem.dataset.label, enc.positive_label)
        save_model(args.export_model, run.trainer.model, schema, out["settings"])
        out["model_file"] = str(args.export_model)
    if args.json:
        print_json(out)
    else:
        print_run(out)
    return 0


def cmd_run_tables(args: argparse.Namespace) -> int:
    """``run --tables``: train on a release, no records; returns the exit status.

    ``--label NAME`` picks one label of a release with several (default: its primary one);
    ``--label all`` fits each label in turn (same seed and settings) and reports each under
    ``labels`` (the text report prints one block per label).
    """
    from ..io import read_release

    cli_args.check_release_source(args)
    if args.validation_csv and args.lambda_theta == "auto":
        raise AggMRFError("--validation-csv chooses λθ itself; drop --lambda-theta auto.")
    if args.validation_csv and args.validation_tables:
        raise AggMRFError("--validation-csv and --validation-tables: give one of them.")
    if args.label != "all":
        out = tables_report(args, args.label)
    else:
        rel = read_release(args.tables, strict=not args.lenient, budget=cli_args.budget(args))
        labels = rel.meta.get("labels") or [None]
        out = {"dataset": str(args.tables), "labels": {}}
        for lab in labels:
            sub = argparse.Namespace(**{**vars(args), "label": lab})
            if args.export_model and lab is not None:
                p = Path(args.export_model)
                sub.export_model = str(p.with_name(f"{p.stem}.{lab}{p.suffix}"))
            out["labels"][lab or "label"] = tables_report(sub, lab)
    if args.json:
        print_json(out, default=float)
    elif "labels" in out:
        for lab, one in out["labels"].items():
            print(f"== label {lab} ==")
            print_tables_run(one)
    else:
        print_tables_run(out)
    return 0


def tables_report(args: argparse.Namespace, label: str | None) -> dict:
    """Train on label ``label`` of the release ``--tables`` (None: its primary label); the
    report ``run --tables --json`` prints."""
    from ..callbacks import Progress
    from ..io import read_release
    from ..metrics import nllh
    from ..mrf import PCDTrainer
    from ..selection.lambda_theta import fit_reference
    from ..selection.scores import aggregated_nllh, sample_codes
    from ..trainer_settings import release_noise_sd

    t0 = time.perf_counter()
    rel = read_release(
        args.tables, strict=not args.lenient, label=label, budget=cli_args.budget(args)
    )
    for w in rel.warnings:
        warn(w)
    data, schema = rel.data, rel.schema
    cli_args.check_noise_aware_release(args, data)
    val = None
    if args.validation_tables:
        val = read_release(
            args.validation_tables,
            strict=not args.lenient,
            label=label,
            budget=cli_args.budget(args),
        ).data
    if args.noise_aware is None and data.noise is not None:  # the release declares its noise
        note(
            f"the release declares its noise ({data.noise.name}, σ = {data.noise.std:.3g}): "
            "training MRF-N, which models it (--no-noise-aware: the plain MRF)."
        )
    aware = bool(args.noise_aware or (args.noise_aware is None and data.noise is not None))
    settings = cli_args.trainer_settings(args, data.layout, data.n, release_noise_sd(data), aware)
    iterations = cli_args.iterations(args, settings)
    auto = None
    if args.lambda_theta == "auto":
        settings, auto = auto_lambda(args, data, settings, iterations, validation=val)
    test = None
    if args.test_csv:
        df = cli_args.read_records(args.test_csv)
        col = cli_args.label_of_test_records(args, df, schema.label)
        test = (schema.transform(df), schema.encode_label(df[col]))
    prep = time.perf_counter() - t0
    t1 = time.perf_counter()
    chosen = None
    if args.validation_csv:
        from ..selection.sample import choose_on_sample

        df = cli_args.read_records(args.validation_csv)
        col = cli_args.label_of_test_records(
            argparse.Namespace(**{**vars(args), "test_csv": args.validation_csv}), df, schema.label
        )
        chosen = choose_on_sample(
            data,
            schema.transform(df),
            schema.encode_label(df[col]),
            settings,
            iterations,
            progress=ProgressBar("λθ on the sample"),
        )
        settings = replace(settings, lambda_theta=chosen.lambda_theta)
        iterations = chosen.iterations
        model = chosen.model
        trainer = None
    else:
        bar = ProgressBar("MRF" + ("-N" if settings.noise_aware else ""))
        trainer = PCDTrainer(data, settings, chain_factory=chain_factory_for(args))
        trainer.fit(iterations, [Progress(bar, iterations)])
        model = trainer.model
    mrf = {"seconds": time.perf_counter() - t1}
    d_hat = None
    if data.suppression is not None:  # the reported model's d̂ on the suppressed rows
        from ..tables.suppression import model_counts

        burn = 0 if trainer is not None else SUPPRESSION_BURN_IN  # a fresh chain: burn in
        chain = (trainer or PCDTrainer(data, settings, chain_factory=chain_factory_for(args))).chain
        d_hat = model_counts(chain, model.mu, model.theta, data.n, SUPPRESSION_SWEEPS, burn)
    if test is not None:
        mrf["nllh_test"] = nllh(test[1], model.predict_proba(test[0])[:, 1])
    if val is not None:
        sc = aggregated_nllh(model, sample_codes(trainer), val)
        mrf["aggregated_nllh"] = sc.score
        over = {"seed": settings.seed, "n_gibbs": settings.n_gibbs}
        over["noise_aware"] = settings.noise_aware
        ref = fit_reference(val, data, iterations=max(1, iterations // 2), settings_overrides=over)
        mrf["cross_fit_nllh"] = ref.score(model)
    if args.export_model:
        from ..io import save_model

        save_model(args.export_model, model, schema, {**asdict(settings), "iterations": iterations})
    lay = data.layout
    accounting = (rel.meta.get("noise") or {}).get("accounting", "both")
    out = {
        "dataset": str(args.tables),
        "label": schema.label,
        "n_train": int(data.n),
        "n_test": int(len(test[1])) if test is not None else 0,
        "n_features": lay.n_features,
        "n_tables": lay.n_released_tables,
        "n_rows": lay.K,
        "settings": {**asdict(settings), "iterations": iterations},
        "models": {"mrf": mrf},
        "noise": noise_summary(data.noise, accounting),
        "privacy": rel.meta.get("privacy"),  # the release's whole (ε, δ), schema included
        "suppression": suppression_summary(data, d_hat),
        "seconds": {"prepare": prep, "total": time.perf_counter() - t0},
        "warnings": rel.warnings,
    }
    if auto is not None:
        out["lambda_theta_auto"] = auto.to_dict()
    if chosen is not None:
        out["validation_csv"] = chosen.to_dict()
    if args.export_model:
        out["model_file"] = str(args.export_model)
    return out


def suppression_summary(data, d_hat=None) -> dict | None:
    """{"tables": {name: {"threshold", "suppressed", "rows"}}, "suppressed_rows", ...} of a
    release with suppressed tables (None without).  With the model's counts ``d_hat``
    (float64 (K,), records) each table also gets "outside" (suppressed rows whose d̂ is
    outside [0, k]), "max_d_hat" and "mean_d_hat", and the total "outside", "max_ratio"
    (largest d̂/k) and "d_hat_sweeps" (:func:`..suppression.suppression_check`)."""
    from ..tables.suppression import suppressed_per_table, suppression_check

    per = suppressed_per_table(data)
    if not per:
        return None
    out = {
        "tables_with_threshold": len(per),
        "suppressed_rows": int(sum(v["suppressed"] for v in per.values())),
        "rows": int(sum(v["rows"] for v in per.values())),
        "tables": per,
    }
    if d_hat is not None:
        check = suppression_check(data, d_hat)
        out.update(
            outside=check["outside"],
            max_ratio=check["max_ratio"],
            d_hat_sweeps=SUPPRESSION_SWEEPS,
            tables=check["tables"],
        )
    return out
