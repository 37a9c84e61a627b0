"""The README's default commands on a Criteo-shaped challenge release, with and without each default.

    nice -n 10 python benchmarks/criteo_defaults.py                  # 3·10⁵ records, 8 features
    nice -n 10 python benchmarks/criteo_defaults.py --n 200000 --seed 3 --largest 32
    nice -n 10 python benchmarks/criteo_defaults.py --n 1000000 --seed 1 --only-defaults --n-gibbs 10000
    nice -n 10 python benchmarks/criteo_defaults.py --n 300000 --seed 0 --versus-noise-free

1. generate (``datasets.criteo.write_criteo_release``): a known model over ``--features``
   features (cardinalities ``criteo_cardinalities(D, largest)`` in a seeded order, Zipf-like:
   max(10, round(largest · r^-1.6)) at popularity rank r; 2 000 by default), n records
   aggregated into the challenge's two files (pair cells with a true count ≤ 10 dropped,
   Gaussian noise σ = 17 on c, click and sale), and a labelled test set;
2. ``aggmrf-explore import-criteo … --max-modalities 32`` (the README's command);
3. per label (click, sale): the README's command ``run --tables release/ --label L
   --test-csv test.csv`` with no other option (its own process), then the same training
   from the Python API with each default turned off:

   - noise-aware: MRF-N when the release declares its noise (off: ``--no-noise-aware``);
   - the convergence rule: max(3 000, ⌈6/α_θ⌉) iterations (with the gauge step),
     the average over the second half (off: the former rule, plain step, max(600, ⌈6/α_θ⌉)
     iterations, the average from iteration ⌈2/α_θ⌉);

4. the skyline: an L2 logistic on the MRF's features (one-hot singles and pair crosses of
   the imported modalities), λ on a validation split, trained on all n records of the
   aggregated stream.

Every run stores the command's and the skyline's numbers per label in ``results.json`` of
the release's directory; ``--reuse`` takes them from there instead of recomputing them (the
skyline on 4·10⁶ records costs tens of minutes), so a full table can follow an
``--only-defaults`` run.  The API's all-defaults row is still checked against the command's
stored number.

``--n-gibbs N`` adds ``--gibbs-samples N`` to the command and uses n' = N in every variant
(default: the rule's n', ``mrf.default_gibbs``).

``--versus-noise-free``: what the noise costs.  The same records are also written without the
files' σ = 17 noise (the generator suppresses cells ≤ 10 on the true counts before it draws
the noise, so the suppression is the same) and imported with ``--sigma 0.01``; per label the
README's command runs on both (each in its own process, no option) and the skyline is the
logistic on the noisy import's features; ``--explore K=V,...`` adds variants of the
command's settings trained from the API on both (numbers kept in ``versus.json``).

Test NLLH = 1 − logloss / entropy on the test set.  The API's all-defaults row must equal
the command's number (same seed): the benchmark checks it.  A run that diverges is
reported as such (its iteration) instead of a number.  Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from aggmrf_explore import DivergenceError
from aggmrf_explore.baselines import fit_logistic
from aggmrf_explore.datasets.criteo import (
    CriteoTruth,
    criteo_cardinalities,
    feature_columns,
    iter_records,
    write_criteo_release,
)
from aggmrf_explore.io import read_release, read_schema
from aggmrf_explore.metrics import nllh
from aggmrf_explore.mrf import PCDTrainer, TrainerSettings, default_iterations, default_settings
from aggmrf_explore.trainer_settings import release_noise_sd

LABELS = ("click", "sale")
# (noise-aware, new convergence rule) → row title
VARIANTS = {
    (True, True): "defaults: MRF-N, the gauge step, 3 000 iterations",
    (False, True): "without noise-aware (`--no-noise-aware`)",
    (True, False): "without the convergence rule (plain step, 600 iterations)",
    (False, False): "without both (the former defaults)",
}


def cli(*args: str, fail: bool = True) -> dict | str:
    """``aggmrf-explore ARGS --json`` in its own process: its JSON report, or (``fail=False``)
    its error line when it fails."""
    cmd = [sys.executable, "-m", "aggmrf_explore.cli", *args, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        if not fail:
            return res.stderr.strip().splitlines()[-1][:100]
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
    return json.loads(res.stdout)


def rule_settings(
    data, noise_aware: bool = True, new_rule: bool = True, **overrides
) -> tuple[TrainerSettings, int]:
    """The settings and iteration count of ``run --tables`` on ``data`` (MRF-N when
    ``noise_aware`` and the release declares its noise), or, ``new_rule=False``, with the
    former convergence rule: plain step, the average from ⌈2/α_θ⌉, max(600, ⌈6/α_θ⌉)
    iterations.  ``overrides``: other settings (``n_gibbs``, ``lambda_theta``)."""
    aware = noise_aware and data.noise is not None
    sd = release_noise_sd(data)
    st = default_settings(data.layout, data.n, noise_sd=sd, noise_aware=aware, **overrides)
    if new_rule:
        return st, default_iterations(st)
    st = replace(st, momentum=0.0, average_start=int(np.ceil(2.0 / st.step_theta - 1e-9)))
    return st, max(600, int(np.ceil(6.0 / st.step_theta - 1e-9)))


def train(
    release: Path, label: str, noise_aware: bool, new_rule: bool, test, n_gibbs: int | None
) -> float | str:
    """Test NLLH of the MRF trained on ``label`` of ``release`` as ``run --tables`` does
    (``n_gibbs``: None for the rule's n'; or "diverged at k" when the trainer rejects
    iteration k)."""
    data = read_release(release, label=label).data
    over = {} if n_gibbs is None else {"n_gibbs": n_gibbs}
    st, iterations = rule_settings(data, noise_aware, new_rule, **over)
    trainer = PCDTrainer(data, st)
    try:
        trainer.fit(iterations)
    except DivergenceError:
        return f"diverged at {trainer.iteration + 1}"
    model = trainer.model
    return nllh(test[1], model.predict_proba(test[0])[:, 1])


def fmt(v: float | str) -> str:
    return f"{v:.4f}" if isinstance(v, float) else v


def gap(row: dict, key) -> str:
    return f"{row['logistic'] - row[key]:+.4f}" if isinstance(row[key], float) else ""


def make_release(args: argparse.Namespace, noise_free: bool = False) -> Path:
    """Generate (once) the records' challenge files and import them with the README's
    command; returns the work directory.  ``noise_free``: the same records and the same
    suppression (the generator draws records and suppresses on true counts before any
    noise), the files without their σ = 17 noise, imported with ``--sigma 0.01``."""
    import aggmrf_explore.datasets.criteo as generator

    src = Path(args.dir) / f"n{args.n}_d{args.features}_m{args.largest}_s{args.seed}"
    if noise_free:
        src = src.with_name(src.name + "_noise_free")
    if not (src / "truth.json").exists():
        card = criteo_cardinalities(args.features, largest=args.largest)
        card = np.random.default_rng(args.seed).permutation(card)
        sigma = generator.NOISE_SIGMA
        generator.NOISE_SIGMA = 0.0 if noise_free else sigma  # read when it draws the noise
        try:
            write_criteo_release(
                src, n=args.n, seed=args.seed, n_sample=1000, n_test=args.n_test, cardinalities=card
            )
        finally:
            generator.NOISE_SIGMA = sigma
    rel = src / "release"
    if not (rel / "release.json").exists():
        files = (str(src / "aggregated_pairs.csv"), str(src / "aggregated_singles.csv"))
        sigma = ["--sigma", "0.01"] if noise_free else []
        cli("import-criteo", *files, "--out", str(rel), "--max-modalities", "32", *sigma)
    return src


def command(src: Path, label: str, flags: list[str]) -> float | str:
    """Test NLLH of the README's command on ``label`` of the release in ``src`` (with
    ``flags`` added), in its own process; its error line if it fails."""
    out = cli(
        "run",
        "--tables",
        str(src / "release"),
        "--label",
        label,
        "--test-csv",
        str(src / "test.csv"),
        *flags,
        fail=False,
    )
    return out["models"]["mrf"]["nllh_test"] if isinstance(out, dict) else out


def skyline(args: argparse.Namespace, src: Path, label: str) -> tuple[float, float]:
    """(test NLLH, λ) of the L2 logistic on the MRF's features (the imported release's
    modalities: singles and pair crosses), λ on a validation split, trained on all n records."""
    schema = read_schema(src / "release")
    test = pd.read_csv(src / "test.csv")
    truth = CriteoTruth.from_dict(json.loads((src / "truth.json").read_text())["truth"])
    D = truth.n_features
    records = [np.concatenate(a) for a in zip(*iter_records(truth, args.n, args.seed), strict=True)]
    train_df = pd.DataFrame(records[0], columns=feature_columns(D))
    train_df[label] = records[1 if label == "click" else 2]
    layout = schema.layout(
        [(f,) for f in range(D)] + [(f, g) for f in range(D) for g in range(f + 1, D)]
    )
    X, y = schema.transform(train_df), train_df[label].to_numpy().astype(np.int64)
    model, lam, _ = fit_logistic(X, y, layout, max_iter=100)
    Xt, yt = schema.transform(test), test[label].to_numpy().astype(np.int64)
    return nllh(yt, model.predict_proba(model.layout_.phi(Xt))[:, 1]), lam


def parse_variant(text: str, data) -> tuple[TrainerSettings, int]:
    """Settings of an exploratory variant on ``data``: ``k=v,k=v`` overrides of the command's
    default settings (``noise_aware=0/1``; a value ``rule`` takes the noise rule's
    value at the release's declared σ, as the plain MRF gets it)."""
    from aggmrf_explore.trainer_settings import noise_penalties

    over: dict = {}
    T = data.layout.n_released_tables
    rule_mu, rule_theta = noise_penalties(T, release_noise_sd(data))
    for item in filter(None, text.removeprefix("noisy:").split(",")):
        key, value = item.split("=")
        if key in (
            "noise_aware",
            "noise_prior_floor",
            "gauge",
            "average",
            "precondition",
            "cell_penalty",
            "table_prior",
        ):
            over[key] = bool(int(value))
        elif key == "label_floor":
            over[key] = value
        elif value == "rule":
            over[key] = {"lambda_mu": rule_mu, "lambda_theta": rule_theta}[key]
        else:
            over[key] = int(value) if key in ("n_gibbs", "seed", "noise_refresh") else float(value)
    aware = over.pop("noise_aware", True)
    return rule_settings(data, noise_aware=aware, **over)


def same_as_default(src: Path, label: str, text: str) -> bool:
    """Whether the variant ``text`` gives the command's own settings on ``src``."""
    data = read_release(src / "release", label=label).data
    return parse_variant(text, data) == rule_settings(data)


def explore(src: Path, label: str, text: str) -> float | str:
    """Test NLLH of the variant ``text`` (:func:`parse_variant`) on ``label`` of ``src``."""
    rel = src / "release"
    data = read_release(rel, label=label).data
    schema = read_schema(rel)
    test = pd.read_csv(src / "test.csv")
    st, iterations = parse_variant(text, data)
    trainer = PCDTrainer(data, st)
    try:
        trainer.fit(iterations)
    except DivergenceError:
        return f"diverged at {trainer.iteration + 1}"
    Xt, yt = schema.transform(test), test[label].to_numpy().astype(np.int64)
    return nllh(yt, trainer.model.predict_proba(Xt)[:, 1])


def load() -> str:
    return "load " + " ".join(f"{v:.1f}" for v in os.getloadavg())


def versus_noise_free(args: argparse.Namespace) -> None:
    """The README's command on the release and on the noise-free tables of the same records
    (same suppression), per label, with the skyline; ``--explore`` variants on both."""
    noisy, free = make_release(args), make_release(args, noise_free=True)
    store = noisy / "versus.json"
    stored = json.loads(store.read_text()) if store.exists() else {}
    print(f"{args.n:,} records, seed {args.seed}; {load()}", flush=True)
    rows = {}
    for label in args.labels.split(","):
        row = rows.setdefault(label, {})
        for name, src in (("noisy", noisy), ("noise-free", free)):
            key = f"{label} {name} command"
            if not (args.reuse and key in stored):
                t0 = time.perf_counter()
                stored[key] = command(src, label, [])
                print(f"{key}: {fmt(stored[key])} ({time.perf_counter() - t0:.0f} s, {load()})")
            row[name] = stored[key]
            store.write_text(json.dumps(stored, indent=1))
        key = f"{label} skyline"
        if args.no_skyline:
            stored.setdefault(key, "not run")
        elif not (args.reuse and isinstance(stored.get(key), float)):
            t0 = time.perf_counter()
            stored[key], lam = skyline(args, noisy, label)
            print(f"{key}: {stored[key]:.4f} (λ = {lam:g}, {time.perf_counter() - t0:.0f} s)")
        row["skyline"] = stored[key]
        for text in args.explore:
            for name, src in (("noisy", noisy), ("noise-free", free)):
                key = f"{label} {name} {text}"
                if name == "noise-free" and text.startswith("noisy:"):
                    stored[key] = "not run"
                elif name == "noise-free" and same_as_default(src, label, text):
                    stored[key] = row[name]  # the rule gives the command's settings there
                elif not (args.reuse and key in stored):
                    t0 = time.perf_counter()
                    stored[key] = explore(src, label, text)
                    print(f"{key}: {fmt(stored[key])} ({time.perf_counter() - t0:.0f} s, {load()})")
                row[f"{name} {text}"] = stored[key]
        store.write_text(json.dumps(stored, indent=1))
    print(f"\n{load()}\n")
    print("| training | label | noisy | noise-free | noise-free − noisy | skyline − noisy |")
    print("|---|---|---|---|---|---|")
    for label, row in rows.items():
        for title, a, b in [("the command", "noisy", "noise-free")] + [
            (f"`{t}`", f"noisy {t}", f"noise-free {t}") for t in args.explore
        ]:
            x, y = row[a], row[b]
            both = isinstance(x, float) and isinstance(y, float)
            diff = f"{y - x:+.4f}" if both else ""
            sky = f"{row['skyline'] - x:+.4f}" if both and isinstance(row["skyline"], float) else ""
            print(f"| {title} | {label} | {fmt(x)} | {fmt(y)} | {diff} | {sky} |")
    for label, row in rows.items():
        print(f"| logistic on all {args.n:,} records | {label} | {fmt(row['skyline'])} | | | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=300_000, help="records aggregated")
    ap.add_argument("--features", type=int, default=8)
    ap.add_argument("--largest", type=int, default=2000, help="the most popular feature's values")
    ap.add_argument("--seed", type=int, default=0, help="the generator's seed")
    ap.add_argument("--n-test", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/criteo_defaults", help="work directory (reused)")
    ap.add_argument(
        "--only-defaults",
        action="store_true",
        help="only the README's command per label and the skyline (no API variants)",
    )
    ap.add_argument(
        "--noise-free",
        action="store_true",
        help="a control: the challenge files without their σ = 17 noise (suppression kept), "
        "imported with --sigma 0.01",
    )
    ap.add_argument(
        "--versus-noise-free",
        action="store_true",
        help="the command on the release and on the noise-free tables of the same records "
        "(same suppression), per label, and the skyline: what the noise costs",
    )
    ap.add_argument(
        "--explore",
        action="append",
        default=[],
        metavar="K=V,...",
        help="with --versus-noise-free: also train this variant of the command's settings "
        "from the API on both (noise_aware=0/1, lambda_theta=…, lambda_mu=…; 'rule': the "
        "noise rule's value at the declared σ; a prefix noisy: trains it on the noisy release only); "
        "repeatable",
    )
    ap.add_argument(
        "--no-skyline",
        action="store_true",
        help="with --versus-noise-free: skip the logistic skyline (minutes at 10⁶ records)",
    )
    ap.add_argument(
        "--labels", default=",".join(LABELS), help="with --versus-noise-free: the labels trained"
    )
    ap.add_argument(
        "--n-gibbs",
        type=int,
        default=None,
        help="Gibbs samples n' of every training (default: the rule's, mrf.default_gibbs)",
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="take the command's and the skyline's numbers from an earlier run on the same "
        "release (results.json in its directory) instead of recomputing them",
    )
    args = ap.parse_args()
    if args.versus_noise_free:
        versus_noise_free(args)
        return
    gibbs = [] if args.n_gibbs is None else ["--gibbs-samples", str(args.n_gibbs)]
    print(f"load average {os.getloadavg()}", flush=True)
    src = make_release(args, noise_free=args.noise_free)
    rel = src / "release"
    K = read_release(rel).data.layout.K
    print(f"imported: K = {K} rows", flush=True)
    schema = read_schema(rel)
    test = pd.read_csv(src / "test.csv")
    D = read_release(rel).data.layout.n_features
    results: dict = {}
    store = src / "results.json"
    stored = json.loads(store.read_text()) if store.exists() else {}
    for label in LABELS:
        row = {}
        entry = f"{label} n_gibbs={args.n_gibbs}"
        old = stored.get(entry, {}) if args.reuse else {}
        t0 = time.perf_counter()
        row["command"] = old["command"] if "command" in old else command(src, label, gibbs)
        print(
            f"{label}: command {fmt(row['command'])} ({time.perf_counter() - t0:.0f}s"
            f"{', stored' if 'command' in old else ''})",
            flush=True,
        )
        Xt, yt = schema.transform(test), test[label].to_numpy().astype(np.int64)
        for key in () if args.only_defaults else VARIANTS:
            t0 = time.perf_counter()
            row[key] = train(rel, label, *key, (Xt, yt), args.n_gibbs)
            print(f"{label}: {VARIANTS[key]} {fmt(row[key])} ({time.perf_counter() - t0:.0f}s)")
        if isinstance(row["command"], float) and not args.only_defaults:
            assert abs(row[(True, True)] - row["command"]) < 1e-12, "the API and the command differ"
        t0 = time.perf_counter()
        if "logistic" in old:
            row["logistic"], lam = old["logistic"], old["lambda"]
        else:
            row["logistic"], lam = skyline(args, src, label)
        print(
            f"{label}: logistic {row['logistic']:.4f} (λ = {lam:g}, "
            f"{time.perf_counter() - t0:.0f}s{', stored' if 'logistic' in old else ''})",
            flush=True,
        )
        results[label] = row
        stored[entry] = {"command": row["command"], "logistic": row["logistic"], "lambda": lam}
        store.write_text(json.dumps(stored, indent=1))
    print(f"\nload average {os.getloadavg()}")
    print(
        f"\n{args.n:,} records, {D} features, seed {args.seed}, K = {K:,} rows; "
        f"test NLLH on {len(test):,} records (gap: logistic − MRF)\n"
    )
    print("| model | click | gap | sale | gap |")
    print("|---|---|---|---|---|")
    c, s = results["click"], results["sale"]
    rows = {"command": "the command `run --tables release/ --label L --test-csv test.csv`"}
    rows.update({} if args.only_defaults else VARIANTS)
    for key, title in rows.items():
        print(f"| {title} | {fmt(c[key])} | {gap(c, key)} | {fmt(s[key])} | {gap(s, key)} |")
    print(f"| logistic on all {args.n:,} records | {c['logistic']:.4f} | | {s['logistic']:.4f} | |")


if __name__ == "__main__":
    main()
