"""The records-free commands behind ``aggmrf-explore`` (kept apart from cli.py's core):

* ``aggregate``: records → a release (per-table CSVs + release.json, optionally noisy);
* ``run --tables``: train on a release, no records (``--test-csv`` scores on records if any,
  ``--validation-tables`` scores on a second release with the aggregated-only metric);
* ``--lambda-theta auto``: λθ from the tables alone (validation.choose_lambda_theta);
* ``predict``: probabilities of raw records under an exported model.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, replace
from types import SimpleNamespace

from .errors import AggMRFError

__all__ = ["cmd_aggregate", "cmd_run_tables", "cmd_predict", "auto_lambda"]


def _progress(label: str):
    from .cli import Progress

    return Progress(label)


def auto_lambda(args, data, settings, iterations: int, validation=None):
    """(settings with the chosen λθ, LambdaChoice) — from the release ``data`` only."""
    from .validation import choose_lambda_theta

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
        progress=_progress("λθ auto"),
    )
    return replace(settings, lambda_theta=choice.lambda_theta), choice


def _records(path: str):
    from .datasets import _read_csv_file

    return _read_csv_file(path)


# ---------------------------------------------------------------------- aggregate
def cmd_aggregate(args) -> int:
    from . import datasets
    from .cli import _load, _mechanism, noise_summary
    from .privacy import release
    from .tables import TableLayout, aggregate
    from .tables_io import Schema, read_schema, write_release

    if args.no_singles and args.no_pairs:
        raise AggMRFError("--no-singles and --no-pairs together leave no table to release.")
    if args.schema:
        if not args.csv or not args.label:
            raise AggMRFError("--schema goes with --csv FILE --label COL (records to aggregate).")
        schema = read_schema(args.schema)
        df = _records(args.csv)
        if args.label not in df.columns:
            raise AggMRFError(
                f"label column {args.label!r} not in {args.csv!r}: {list(df.columns)}."
            )
        X = schema.transform(df)
        y = schema.encode_label(df[args.label])
        layout = TableLayout.all_pairs(
            schema.n_modalities, schema.feature_names, singles=not args.no_singles,
            pairs=not args.no_pairs, modality_labels=schema.modality_labels,
        )  # fmt: skip
        name = args.csv
    else:
        if args.csv:
            if not args.label:
                raise AggMRFError("--csv needs --label COLUMN (the binary label column).")
            # every record of the file is aggregated: the file is its own "train split"
            extra = {"unseen": args.unseen} if getattr(args, "unseen", None) else {}
            ds = datasets.load_csv(
                args.csv, args.label, test_csv=args.csv, **extra,
                features=(args.features.split(",") if args.features else None),
                drop_features=(args.drop_features.split(",") if args.drop_features else None),
            )  # fmt: skip
        else:
            ds = _load(args)
        enc = ds.encode(n_bins=args.bins)
        X, y = enc.X_train, enc.y_train
        layout = enc.layout(singles=not args.no_singles, pairs=not args.no_pairs)
        neg = datasets._other_class(ds.train[ds.label], enc.positive_label)
        schema = Schema.from_encoder(
            enc.encoder, ds.label, enc.positive_label, [neg, enc.positive_label]
        )
        name = ds.name
    agg = aggregate(X, y, layout)
    mech = _mechanism(args, layout, args.epsilon)
    data = release(agg, mech, seed=args.seed) if mech is not None else agg
    meta = write_release(data, args.out, schema, fmt=args.format, accounting=args.accounting)
    out = {
        "source": str(name),
        "out": str(args.out),
        "metadata": str(meta),
        "n_records": int(agg.n),
        "n_tables": layout.n_released_tables,
        "n_rows": int(layout.K - int(layout.intercept)),
        "noise": noise_summary(mech, args.accounting),
    }
    if getattr(args, "noise_aware", False):
        print("note: --noise-aware is a training option; ignored by aggregate.", file=sys.stderr)
    print(json.dumps(out, indent=2))
    return 0


# ---------------------------------------------------------------------- run --tables
def cmd_run_tables(args) -> int:
    from .cli import _iterations, _print_run, _settings, noise_summary
    from .experiment import run_iterations
    from .metrics import nllh
    from .mrf import PCDTrainer
    from .tables_io import read_release
    from .validation import aggregated_nllh, fit_reference, sample_codes

    t0 = time.perf_counter()
    if args.dataset or args.csv:
        raise AggMRFError("--tables replaces --dataset / --csv; give one data source.")
    if args.mechanism != "none" or args.epsilon is not None:
        raise AggMRFError(
            "--tables reads a release as it is; its noise is declared in release.json "
            "(write a noisy release with `aggregate --mechanism ...`)."
        )
    rel = read_release(args.tables, strict=not args.lenient)
    for w in rel.warnings:
        print(f"warning: {w}", file=sys.stderr)
    data, schema = rel.data, rel.schema
    if args.noise_aware and data.noise is None:
        raise AggMRFError("--noise-aware needs a noisy release (release.json declares no noise).")
    val = None
    if args.validation_tables:
        val = read_release(args.validation_tables, strict=not args.lenient).data
    settings = _settings(args, SimpleNamespace(layout=data.layout), data.n)
    if args.noise_aware:
        settings = replace(settings, noise_aware=True)
    iterations = _iterations(args)
    auto = None
    if args.lambda_theta == "auto":
        settings, auto = auto_lambda(args, data, settings, iterations, validation=val)
    test = None
    if args.test_csv:
        df = _records(args.test_csv)
        label = args.label or schema.label
        if not label or label not in df.columns:
            raise AggMRFError(
                f"the test records need the label column ({label!r}); give --label COL. "
                f"Columns of {args.test_csv!r}: {list(df.columns)}."
            )
        test = (schema.transform(df), schema.encode_label(df[label]))
    prep = time.perf_counter() - t0
    t1 = time.perf_counter()
    trainer = run_iterations(
        PCDTrainer(data, settings),
        iterations,
        _progress("MRF" + ("-N" if settings.noise_aware else "")),
    )
    mrf = {"seconds": time.perf_counter() - t1}
    if test is not None:
        mrf["nllh_test"] = nllh(test[1], trainer.predict_proba(test[0])[:, 1])
    if val is not None:
        sc = aggregated_nllh(trainer.model, sample_codes(trainer), val)
        mrf["aggregated_nllh"] = sc.score
        over = {"seed": settings.seed, "n_gibbs": settings.n_gibbs}
        over["noise_aware"] = settings.noise_aware
        ref = fit_reference(val, data, iterations=max(1, iterations // 2), settings_overrides=over)
        mrf["cross_fit_nllh"] = ref.score(trainer.model)
    if args.export_model:
        from .model_io import save_model

        save_model(
            args.export_model, trainer.model, schema, {**asdict(settings), "iterations": iterations}
        )
    lay = data.layout
    out = {
        "dataset": str(args.tables),
        "n_train": int(data.n),
        "n_test": int(len(test[1])) if test is not None else 0,
        "n_features": lay.n_features,
        "n_tables": lay.n_released_tables,
        "n_rows": lay.K,
        "settings": {**asdict(settings), "iterations": iterations},
        "models": {"mrf": mrf},
        "noise": noise_summary(data.noise, (rel.meta.get("noise") or {}).get("accounting", "both")),
        "seconds": {"prepare": prep, "total": time.perf_counter() - t0},
        "warnings": rel.warnings,
    }
    if auto is not None:
        out["lambda_theta_auto"] = auto.to_dict()
    if args.export_model:
        out["model_file"] = str(args.export_model)
    if args.json:
        print(json.dumps(out, indent=2, default=float))
    else:
        _print_tables_run(out, _print_run)
    return 0


def _print_tables_run(out: dict, _print_run) -> None:
    m = out["models"]["mrf"]
    printable = dict(out)
    printable["models"] = {
        "mrf": {"nllh_test": m.get("nllh_test", float("nan")), "seconds": m["seconds"]}
    }
    _print_run(printable)
    if "aggregated_nllh" in m:
        print("aggregated-only validation on the second release (see aggmrf_explore.validation):")
        print(f"  cross-fit NLLH   {m['cross_fit_nllh']:.4f}  (estimates the record-level NLLH)")
        print(f"  cell-level NLLH  {m['aggregated_nllh']:.4f}  (label sums of its table cells)")
    if "lambda_theta_auto" in out:
        a = out["lambda_theta_auto"]
        print(f"λθ auto ({a['method']}): {a['lambda_theta']:g} in {a['seconds']:.0f}s")
        for row in a["grid"]:
            print(f"  λθ={row['lambda_theta']:<10.4g} score {row['score']:.4f}")


# ---------------------------------------------------------------------- predict
def cmd_predict(args) -> int:
    import pandas as pd

    from .metrics import nllh
    from .model_io import load_model

    model = load_model(args.model)
    df = _records(args.csv)
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
        if label not in df.columns:
            raise AggMRFError(f"label column {label!r} not in {args.csv!r}: {list(df.columns)}.")
        y = model.schema.encode_label(df[label])
        print(f"NLLH on {args.csv}: {nllh(y, p):.6f} ({len(p)} records)", file=sys.stderr)
    return 0
