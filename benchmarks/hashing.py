"""High-cardinality features (the paper's section 4.3): NLLH and memory against the hash size H.

    python benchmarks/hashing.py                   # H = 2^10, 2^12, 2^14 (defaults below)
    python benchmarks/hashing.py --H 1024 16384 --sites 20000 --advertisers 3000 --json
    python benchmarks/hashing.py --single hashed --H 4096   # one run in this process, one JSON
    python benchmarks/hashing.py --single exact             # exact tables: K and memory only

A pair table over two features with M modalities has M² rows, so raw high-cardinality
features (M ~ 10^4 .. 10^5) do not fit.  :func:`hashed_compare` draws
:func:`~aggmrf_explore.datasets.high_cardinality_dataset` with a site × device interaction,
codes every raw value by its index in the generator's vocabulary
(:func:`~aggmrf_explore.datasets.vocabulary_codes`: sites and advertisers stay
high-cardinality variables of the MRF), hashes every table that holds ``site`` or
``advertiser`` into H rows (:func:`~aggmrf_explore.datasets.hashed_layout`, i.e.
``TableLayout(..., hash_sizes=...)``: the paper's φ_H = 𝓗 φ, sampled exactly by the hashed
Gibbs chain), trains the MRF on the aggregates and fits a scikit-learn logistic regression
on the same hashed φ_H(x) (λ chosen on a validation split).  It reports both test NLLHs,
K, Σ_t Π M_f (the rows exact tables would need) and the peak memory.
:func:`exact_memory` builds the same data with *exact* tables (layout, aggregates, a
trainer and one iteration of the dense chain): the memory that hashing avoids.
:func:`target_encoding_compare` (``benchmarks/train.py --highcard``) is the other remedy:
MRF vs logistic on a target encoding fitted on held-out records.

Each H runs ``--single hashed`` in its own subprocess, so that the peak RSS
(``ru_maxrss``) belongs to that run alone.  The table printed at the end shows: both test
NLLHs and the truth's, K (table rows), ``dense`` = Σ_t Π_{f∈t} M_f, the chain's and the
parameters' memory, and the peak RSS after building the data and after training the MRF
(the difference is what training costs).  Last, unless ``--no-exact``, the exact-tables
run shows K = Σ Π M_f and its peak RSS.

Limitations: a site update costs O(M_f × tables holding f) gathers, so a sweep is
O(n' Σ_f M_f T_f) — hashing bounds the memory, not the time spent on a 20 000-value
feature.  Hashed tables cannot be written as CSV releases nor exported as model files
(both raise AggMRFError: their rows are buckets, not modality combinations).

Measured (defaults: n = 100 000, 5 000 sites, 1 000 advertisers, n' = 1 000, 200
iterations; 2 cores shared with other jobs, load ≈ 5, so the seconds are pessimistic)::

          H        K       dense  NLLH MRF  logistic   truth  RSS data  RSS MRF  MRF s
       1024    11732     5240468    0.0920    0.1028  0.1952       315      368    149
       4096    45524     5240468    0.1066    0.1143  0.1952       315      361    100
      16384   180692     5240468    0.1080    0.1237  0.1952       315      386    224
      exact  5240468     5240468         -         -       -       236     1951      -

(chain + parameters: 0.6, 1.6 and 5.7 MiB for the hashed runs, 320 MiB exact; "RSS data"
of the hashed runs includes scikit-learn, imported before the data.)  The generator's
full sizes, ``python benchmarks/hashing.py --H 4096 --sites 20000
--advertisers 3000``: K = 45 524 instead of Σ Π M_f = 60 920 468, NLLH MRF 0.0771, logistic 0.0863,
truth 0.1871, peak RSS 316 → 378 MiB, MRF 399 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence

import numpy as np

from aggmrf_explore.datasets import (
    hashed_layout,
    high_cardinality_dataset,
    target_encode,
    vocabulary_codes,
)
from aggmrf_explore.tables import TableLayout


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def hashed_compare(
    n: int = 100_000,
    seed: int = 0,
    H: int = 2**12,
    n_sites: int = 5_000,
    n_advertisers: int = 1_000,
    site_device_scale: float = 0.6,
    n_gibbs: int = 1_000,
    iterations: int = 200,
    lambdas: Sequence[float] = (1.0, 4.0, 16.0, 64.0),
) -> dict:
    """MRF on hashed tables vs logistic regression on the same hashed features.

    Returns a JSON-able dict: the test NLLH of the MRF, of the
    logistic on φ_H (λ on a 20 % validation split of the training records, then refit)
    and of the true P(Y=1|x); K, Π M_f summed over the tables (``dense_rows``), the
    chain's and the parameters' bytes, the peak RSS (MiB) after the data were built and
    at the end, and the seconds of each fit.
    """
    import time

    from aggmrf_explore.baselines import fit_l2_logistic, validation_split
    from aggmrf_explore.metrics import nllh
    from aggmrf_explore.mrf import PCDTrainer, default_settings
    from aggmrf_explore.tables import aggregate

    raw = high_cardinality_dataset(n, seed, n_sites, n_advertisers, site_device_scale)
    X, y, Xt, yt, sizes = vocabulary_codes(raw)
    names = list(raw.feature_columns)
    lay = hashed_layout(sizes, names, H)
    rss_data = _peak_rss_mb()

    t0 = time.perf_counter()
    agg = aggregate(X, y, lay)
    settings = default_settings(lay, agg.n, n_gibbs=n_gibbs, eval_every=iterations, seed=seed)
    trainer = PCDTrainer(agg, settings, Xt, yt)
    trainer.fit(iterations)
    p_mrf = trainer.predict_proba(Xt)[:, 1]
    mrf_seconds = time.perf_counter() - t0
    rss_mrf = _peak_rss_mb()

    t0 = time.perf_counter()
    Phi, Phi_t = lay.phi(X), lay.phi(Xt)
    tr, va = validation_split(X.shape[0], 0.2, seed)
    scores = {
        float(lam): nllh(
            y[va], fit_l2_logistic(Phi[tr], y[tr], lam, 200).predict_proba(Phi[va])[:, 1]
        )
        for lam in lambdas
    }
    best = max(scores, key=scores.get)
    p_lr = fit_l2_logistic(Phi, y, best, 200).predict_proba(Phi_t)[:, 1]
    lr_seconds = time.perf_counter() - t0

    return {
        "n_train": int(X.shape[0]),
        "n_test": int(Xt.shape[0]),
        "H": int(H),
        "n_modalities": dict(zip(names, map(int, sizes), strict=True)),
        "K": int(lay.K),
        "dense_rows": int(lay.dense_sizes.sum()),
        "hashed_tables": int(np.count_nonzero(lay.hash_sizes)),
        "tables": int(lay.n_tables),
        "n_gibbs": int(n_gibbs),
        "iterations": int(iterations),
        "nllh_test": {
            "mrf_hashed": float(nllh(yt, p_mrf)),
            "logistic_hashed": float(nllh(yt, p_lr)),
            "truth": float(nllh(yt, raw.true_proba_test)),
        },
        "logistic_lambda": best,
        "logistic_validation_nllh": scores,
        "final_d_error": float(trainer.history[-1].d_error),
        "chain_mb": trainer.chain.memory_bytes / 2**20,
        "parameters_mb": 2 * lay.K * 8 / 2**20,
        "peak_rss_mb_after_data": rss_data,
        "peak_rss_mb_after_mrf": rss_mrf,
        "peak_rss_mb_end": _peak_rss_mb(),
        "mrf_seconds": mrf_seconds,
        "logistic_seconds": lr_seconds,
    }


def exact_memory(
    n: int = 100_000,
    seed: int = 0,
    n_sites: int = 5_000,
    n_advertisers: int = 1_000,
    site_device_scale: float = 0.6,
    n_gibbs: int = 1_000,
) -> dict:
    """The same data with *exact* (unhashed) single and pair tables: K, memory, no hashing.

    Builds the layout, the aggregates and a PCD trainer (whose chain is the fast
    ``gibbs.py`` kernel with its dense Π M_f parameter blocks) and runs one iteration;
    returns K, the chain's bytes and the peak RSS (MiB) after the data and at the end.
    Memory grows with Π M_f here: keep n_sites × n_advertisers moderate.
    """
    from aggmrf_explore.mrf import PCDTrainer, default_settings
    from aggmrf_explore.tables import aggregate

    raw = high_cardinality_dataset(n, seed, n_sites, n_advertisers, site_device_scale)
    X, y, _, _, sizes = vocabulary_codes(raw)
    lay = TableLayout.all_pairs(sizes, list(raw.feature_columns))
    rss_data = _peak_rss_mb()
    agg = aggregate(X, y, lay)
    trainer = PCDTrainer(agg, default_settings(lay, agg.n, n_gibbs=n_gibbs, seed=seed))
    trainer.step(1)
    return {
        "layout": "exact",
        "n_modalities": dict(zip(raw.feature_columns, map(int, sizes), strict=True)),
        "K": int(lay.K),
        "chain_mb": trainer.chain.memory_bytes / 2**20,
        "parameters_mb": 2 * lay.K * 8 / 2**20,
        "peak_rss_mb_after_data": rss_data,
        "peak_rss_mb_end": _peak_rss_mb(),
    }


def target_encoding_compare(n: int = 200_000, seed: int = 0, iterations: int = 600) -> dict:
    """MRF vs logistic on the same target encoding of the synthetic high-cardinality data.

    Returns the test NLLH of the MRF (default settings, exact aggregates of the
    non-held-out rows) and of the logistic on the same φ (singles + pairs), the raw and
    encoded numbers of modalities, K, and the peak memory of the chain.
    """
    from aggmrf_explore.baselines import fit_baselines
    from aggmrf_explore.experiment import prepare, train_mrf

    raw = high_cardinality_dataset(n, seed)
    ds, encoders = target_encode(raw, ["site", "advertiser"], holdout_fraction=0.3, seed=seed)
    problem = prepare(ds)
    run = train_mrf(problem, iterations=iterations, eval_every=iterations + 1)
    base = fit_baselines(problem, seed=seed, which=("logistic_pairs", "logistic"))
    return {
        "n_aggregated": problem.n_train,
        "raw_modalities": {c: int(raw.train[c].nunique()) for c in ("site", "advertiser")},
        "encoded_modalities": problem.layout.n_modalities.tolist(),
        "K": problem.layout.K,
        "chain_memory_mb": run.trainer.chain.memory_bytes / 2**20,
        "nllh_test": {
            "mrf": run.nllh_test,
            "logistic_pairs": base["logistic_pairs"].nllh_test,
            "logistic": base["logistic"].nllh_test,
        },
        "mrf_minus_logistic_pairs": run.nllh_test - base["logistic_pairs"].nllh_test,
        "mrf_seconds": run.seconds,
    }


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--H",
        type=int,
        nargs="+",
        default=[2**10, 2**12, 2**14],
        help="hash size of each hashed table (one run per value)",
    )
    ap.add_argument("--n", type=int, default=100_000, help="training records")
    ap.add_argument("--sites", type=int, default=5_000)
    ap.add_argument("--advertisers", type=int, default=1_000)
    ap.add_argument("--n-gibbs", type=int, default=1_000)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact-tables run")
    ap.add_argument("--json", action="store_true", help="one JSON object per run, nothing else")
    ap.add_argument(
        "--single",
        choices=("hashed", "exact"),
        help="run one experiment (the first H) in this process, print its JSON",
    )
    return ap


def _single(a: argparse.Namespace) -> dict:
    if a.single == "exact":
        return exact_memory(a.n, a.seed, a.sites, a.advertisers, n_gibbs=a.n_gibbs)
    return hashed_compare(
        a.n, a.seed, a.H[0], a.sites, a.advertisers, n_gibbs=a.n_gibbs, iterations=a.iterations
    )


def main(argv: Sequence[str] | None = None) -> None:
    a = _parser().parse_args(argv)
    if a.single:
        print(json.dumps(_single(a)))
        return
    common = ["--n", str(a.n), "--sites", str(a.sites), "--advertisers", str(a.advertisers)]
    common += ["--n-gibbs", str(a.n_gibbs), "--seed", str(a.seed)]

    def run(args: list[str]) -> dict:
        cmd = [sys.executable, __file__, *args, *common]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        if a.json:
            print(json.dumps(res), flush=True)
        return res

    rows = [
        run(["--single", "hashed", "--H", str(H), "--iterations", str(a.iterations)]) for H in a.H
    ]
    exact = None if a.no_exact else run(["--single", "exact"])
    if a.json:
        return
    print(
        f"n = {a.n}, M_site = {a.sites}, M_advertiser = {a.advertisers}, "
        f"n' = {a.n_gibbs}, {a.iterations} iterations"
    )
    head = (
        f"{'H':>7} {'K':>8} {'dense':>11} {'NLLH MRF':>9} {'logistic':>9} {'truth':>7} "
        f"{'chain MB':>9} {'param MB':>9} {'RSS data':>9} {'RSS MRF':>8} {'MRF s':>6}"
    )
    print(head)
    for r in rows:
        nl = r["nllh_test"]
        print(
            f"{r['H']:>7} {r['K']:>8} {r['dense_rows']:>11} {nl['mrf_hashed']:>9.4f} "
            f"{nl['logistic_hashed']:>9.4f} {nl['truth']:>7.4f} {r['chain_mb']:>9.2f} "
            f"{r['parameters_mb']:>9.2f} {r['peak_rss_mb_after_data']:>9.0f} "
            f"{r['peak_rss_mb_after_mrf']:>8.0f} {r['mrf_seconds']:>6.0f}"
        )
    if exact is not None:
        print(
            f"{'exact':>7} {exact['K']:>8} {exact['K']:>11} {'-':>9} {'-':>9} {'-':>7} "
            f"{exact['chain_mb']:>9.2f} {exact['parameters_mb']:>9.2f} "
            f"{exact['peak_rss_mb_after_data']:>9.0f} {exact['peak_rss_mb_end']:>8.0f} {'-':>6}"
        )


if __name__ == "__main__":
    main()
