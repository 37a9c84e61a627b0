"""Records-free regularisation rules for noisy releases, compared on test NLLH.

A noisy cell moves its θ by about noise / (2λ_θ + curvature); the logit of a record is a
sum of T coefficients (one per released table), so a logit error of at most ~½ needs
λ_θ ≳ σ·√T (σ the noise sd per cell, in counts).  The rules compared, each computed from
the layout, n and the declared σ only (no records):

* ``today``: the former rule, ``default_settings`` without ``noise_sd`` (λ_θ = min(T/2, 50),
  λ_μ = 1); since this comparison, ``A`` is the shipped default (``trainer_settings.noise_penalties``),
  and the trainer gives θ₀ 1/T of λ_θ on raw noisy tables under every rule;
* ``A-theta``: λ_θ = max(today's, ½·σ·√T), λ_μ as today;
* ``A``: λ_θ = max(today's, ½·σ·√T) and λ_μ = max(1, ½·σ);
* ``B``: today's λ, noise-aware targets (MRF-N, the posterior mean of each count), the
  label sums' prior floored at one sample's weight s = n/n' as the counts' (MRF-N's former
  default, ``label_floor="weight"``);
* ``A+B``: both;
* ``B-rate``: B with the label sums' prior floored at one sample's expected label sum s·p̄
  (``label_floor="rate"``);
* ``B-cells``: B with λ raised per row to A's where MRF-N's own shrinkage λ·(1 + σ²/b_j) is
  below it (``cell_penalty``, ``trainer_settings.cell_penalty_weights``);
* ``B-rate-cells``: both changes to B (MRF-N's defaults since);
* ``B-rate-cells-tables``: B-rate-cells with one λ_θ per pair table learnt from the release
  (``table_prior``, ``mrfn.table_penalties``).

Both λ are capped at 10⁶ here (the top of their declared domain when this was measured; the
shipped rule goes to 10¹², ``trainer_settings.PENALTY_MAX``).  Each release is trained
with the default iteration count (``mrf.default_iterations``) unless ``--iterations``; the
noise-free column is the same command on the exact tables of the same records (every rule
reduces to today's there).  Prints one row per (release, rule) as it finishes, then the
table; ``--json`` writes the rows.  One process, one core (NUMBA_NUM_THREADS=1 advised):

    nice -n 10 python benchmarks/noise_rules.py --datasets adult --mechanisms laplace,gaussian \\
        --epsilons 0.1,0.3,1,3 --seeds 3,4 --rules today,A,B
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace

import pandas as pd

from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.privacy import make_mechanism, release
from aggmrf_explore.trainer_settings import (
    default_iterations,
    default_settings,
    noise_penalties,
)

RULES = (
    "today",
    "A-theta",
    "A",
    "B",
    "A+B",
    "B-rate",
    "B-cells",
    "B-rate-cells",
    "B-rate-cells-tables",
)


def rule_settings(rule: str, layout, n: int, sigma: float, seed: int):
    """The settings of ``rule`` for a release of ``n`` records over ``layout`` with noise
    sd ``sigma`` per cell (0: noise-free, every rule is today's)."""
    s = default_settings(layout, n, seed=seed)
    if sigma <= 0:
        return s
    # rule A is the shipped one: trainer_settings.noise_penalties (λ_θ ≥ ½σ√T, λ_μ ≥ ½σ)
    lam_mu, lam_theta = noise_penalties(layout.n_released_tables, sigma)
    over = {}
    if rule in ("A-theta", "A", "A+B"):
        over["lambda_theta"] = lam_theta
    if rule in ("A", "A+B"):
        over["lambda_mu"] = lam_mu
    if rule.startswith("B") or rule == "A+B":
        over["noise_aware"] = True
        # MRF-N as it was
        over["label_floor"], over["cell_penalty"], over["table_prior"] = "weight", False, False
    if rule.startswith("B-rate"):  # MRF-N, the label sums' prior floored at s·p̄
        over["label_floor"] = "rate"
    if rule.startswith(("B-cells", "B-rate-cells")):  # λ raised to A's on rows it hardly shrinks
        over["cell_penalty"] = True
    if rule == "B-rate-cells-tables":  # one λ_θ per pair table, learnt from the release
        over["table_prior"] = True
    return replace(s, **over)


def train(problem, data, settings, iterations):
    """(test NLLH, None) or (nan, the divergence message)."""
    it = iterations or default_iterations(settings)
    try:
        run = train_mrf(problem, settings, it, data=data, eval_every=it + 1)
    except AggMRFError as e:
        return math.nan, str(e).split(":")[0]
    return run.nllh_test, None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="toy,adult")
    ap.add_argument("--mechanisms", default="laplace,gaussian")
    ap.add_argument("--epsilons", default="0.1,0.3,1,3")
    ap.add_argument("--seeds", default="3,4")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--iterations", type=int, default=None, help="default: the rule's")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rules = a.rules.split(",")
    for r in rules:
        if r not in RULES:
            ap.error(f"unknown rule {r!r}; choose from {', '.join(RULES)}")
    rows = []
    for ds in a.datasets.split(","):
        problem = prepare(ds)
        lay, enc = problem.layout, problem.encoded
        for seed in (int(s) for s in a.seeds.split(",")):
            exact = default_settings(lay, problem.aggregated.n, seed=seed)
            free, _ = train(problem, problem.aggregated, exact, a.iterations)
            for mech_name in a.mechanisms.split(","):
                for eps in (float(e) for e in a.epsilons.split(",")):
                    mech = make_mechanism(mech_name, epsilon=eps, layout=lay)
                    data = release(
                        problem.aggregated, mech, seed=seed, records=(enc.X_train, enc.y_train)
                    )
                    sigma = float(mech.std)
                    for rule in rules:
                        st = rule_settings(rule, lay, data.n, sigma, seed)
                        t0 = time.perf_counter()
                        score, err = train(problem, data, st, a.iterations)
                        row = {
                            "release": f"{ds} {mech_name} ε={eps:g} seed {seed}",
                            "sigma": sigma,
                            "T": lay.n_released_tables,
                            "rule": rule,
                            "lambda_theta": st.lambda_theta,
                            "lambda_mu": st.lambda_mu,
                            "test_nllh": score,
                            "noise_free_nllh": free,
                            "diverged": err is not None,
                            "seconds": time.perf_counter() - t0,
                        }
                        rows.append(row)
                        print(
                            f"{row['release']:<32} σ={sigma:<9.3g} {rule:<8} "
                            f"λθ={st.lambda_theta:<9.3g} λμ={st.lambda_mu:<9.3g} "
                            f"test {score:8.4f}  noise-free {free:.4f}  "
                            f"{'DIVERGED' if err else ''} {row['seconds']:.0f}s",
                            flush=True,
                        )
    frame = pd.DataFrame(rows)
    print()
    cols = ["release", "rule", "test_nllh", "noise_free_nllh", "diverged"]
    print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print("mean test NLLH per rule (diverged runs count as the base rate, 0):")
    frame["scored"] = frame["test_nllh"].fillna(0.0)
    print(frame.groupby("rule")[["scored", "diverged"]].agg({"scored": "mean", "diverged": "sum"}))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1, default=float)


if __name__ == "__main__":
    main()
