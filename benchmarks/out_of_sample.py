"""Out of sample: do the shipped defaults reach the exact regularised optimum on problems
nobody tuned on?

Each run draws fresh problems (root seed printed; ``--seed`` repeats a run) from three
families that the defaults were not chosen on, written here and nowhere else:

- ``pairwise``: 4–5 features of 2–4 values whose joint law is a pairwise MRF (log-potentials
  N(0, 0.8²) per value, N(0, 0.6²) per pair of values), label logit with single and pair terms
  (N(0, 0.7²), N(0, 0.5²)) and an intercept N(0, 0.5²);
- ``mixture``: features from a mixture of 2–3 product laws (Dirichlet(0.7) per feature and
  component): not a pairwise MRF; the label's logit adds a triplet term N(0, 0.7²) of three
  random features to the single and pair terms (the pair tables cannot hold it);
- ``skewed``: as ``pairwise``, with the intercept chosen so that 5 % of records are positive.

Each problem is trained with exactly what a user gets: ``PCDTrainer(data)`` (the settings of
``mrf.default_settings``, seed 0) over ``mrf.default_iterations``; nothing is overridden.
The reference is ``exact.fit_exact`` with the same λ_μ, λ_θ.  The metric is

    max |P(Y=1|x) − P_exact(Y=1|x)|  over the states with n·π_exact(x) ≥ 1

for the reported model (the iterate average); the claim of ``mrf.default_settings`` is that
it is ≤ 2·10⁻³.  Also printed: the same over the states with n'·π_exact(x) ≥ 10 too (the
chain's resolution: the same states up to 10⁴ records with n' = 10 000).  Sizes: ``--sizes`` (records per problem).

    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/out_of_sample.py
    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/out_of_sample.py --sizes 300,100000 --problems 10
    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/out_of_sample.py --families skewed --seed 1234

(``NUMBA_NUM_THREADS=1`` avoids oversubscribing a loaded machine; the numbers do not depend
on the thread count.)  Results: docs/out_of_sample.md.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np

from aggmrf_explore.errors import DivergenceError
from aggmrf_explore.exact import all_states, fit_exact, state_probabilities
from aggmrf_explore.mrf import PCDTrainer, default_iterations
from aggmrf_explore.tables import AggregatedData, TableLayout, aggregate

FAMILIES = ("pairwise", "mixture", "skewed")
BOUND = 2e-3  # the documented accuracy (mrf.default_settings)
SKEWED_RATE = 0.05


def _logit_terms(rng: np.random.Generator, S: np.ndarray, M: list[int]) -> np.ndarray:
    """Single and pair terms of the label's logit on every state S (n_states, D)."""
    z = np.zeros(len(S))
    for f in range(len(M)):
        z += rng.normal(0.0, 0.7, M[f])[S[:, f]]
    for f, g in itertools.combinations(range(len(M)), 2):
        z += rng.normal(0.0, 0.5, (M[f], M[g]))[S[:, f], S[:, g]]
    return z


def _intercept_for_rate(px: np.ndarray, z: np.ndarray, rate: float) -> float:
    """b with Σ_x π(x) σ(z(x) + b) = rate (bisection)."""
    lo, hi = -30.0, 30.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if np.sum(px / (1.0 + np.exp(-(z + mid)))) > rate:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def draw_problem(family: str, seed: int, n: int) -> tuple[AggregatedData, str]:
    """n records of a fresh problem of ``family`` from ``seed``, aggregated over every single
    and pair table (with the intercept): (data, description)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}; got {family!r}.")
    rng = np.random.default_rng(seed)
    D = int(rng.integers(4, 6))
    M = [int(m) for m in rng.integers(2, 5, size=D)]
    S = np.array(list(itertools.product(*[range(m) for m in M])), dtype=np.int64)
    if family == "mixture":
        weights = rng.dirichlet(np.ones(int(rng.integers(2, 4))))
        px = np.zeros(len(S))
        for w in weights:
            comp = np.ones(len(S))
            for f in range(D):
                comp *= rng.dirichlet(np.full(M[f], 0.7))[S[:, f]]
            px += w * comp
    else:
        log_px = np.zeros(len(S))
        for f in range(D):
            log_px += rng.normal(0.0, 0.8, M[f])[S[:, f]]
        for f, g in itertools.combinations(range(D), 2):
            log_px += rng.normal(0.0, 0.6, (M[f], M[g]))[S[:, f], S[:, g]]
        px = np.exp(log_px - log_px.max())
    px = px / px.sum()
    z = _logit_terms(rng, S, M)
    if family == "mixture":
        f, g, h = (int(v) for v in rng.choice(D, 3, replace=False))
        z += rng.normal(0.0, 0.7, (M[f], M[g], M[h]))[S[:, f], S[:, g], S[:, h]]
    if family == "skewed":
        z += _intercept_for_rate(px, z, SKEWED_RATE)
    else:
        z += rng.normal(0.0, 0.5)
    p_y = 1.0 / (1.0 + np.exp(-z))
    idx = rng.choice(len(S), size=n, p=px)
    y = (rng.random(n) < p_y[idx]).astype(np.int64)
    data = aggregate(S[idx], y, TableLayout.all_pairs(M))
    return data, f"D = {D}, M = {M}, positives {y.mean():.3f}"


def gap_to_exact(data: AggregatedData, model, exact, n_gibbs: int | None = None) -> float:
    """max |P(Y=1|x) − P_exact(Y=1|x)| over the states with n·π_exact(x) ≥ 1 (and, with
    ``n_gibbs``, n'·π_exact(x) ≥ 10: states the chain visits ten times a sweep)."""
    lay = data.layout
    states = all_states(lay)
    px, p_exact = state_probabilities(lay, exact.mu, exact.theta)
    keep = data.n * px >= 1.0
    if n_gibbs is not None:
        keep &= n_gibbs * px >= 10.0
    return float(np.abs(model.predict_proba(states[keep])[:, 1] - p_exact[keep]).max())


def train_default(data: AggregatedData):
    """``PCDTrainer(data).fit(default_iterations(...))``, nothing overridden: (trainer,
    seconds), trainer None if the run diverged."""
    t0 = time.perf_counter()
    tr = PCDTrainer(data)
    try:
        tr.fit(default_iterations(tr.settings))
    except DivergenceError as err:
        print(f"diverged: {err}", flush=True)
        return None, time.perf_counter() - t0
    return tr, time.perf_counter() - t0


def default_run(data: AggregatedData) -> tuple[float, float, float]:
    """(gap of the reported model, gap of the last iterate, seconds of training) of the
    shipped defaults (:func:`train_default`).  A run that diverges counts as a miss: both
    gaps are inf."""
    tr, seconds = train_default(data)
    if tr is None:
        return float("inf"), float("inf"), seconds
    exact = fit_exact(data, tr.settings.lambda_mu, tr.settings.lambda_theta)
    return gap_to_exact(data, tr.model, exact), gap_to_exact(data, tr.live_model, exact), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=20, help="problems per family and size")
    ap.add_argument("--sizes", default="1000,100000", help="records per problem, comma-separated")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy)")
    args = ap.parse_args()
    sizes = [int(float(v)) for v in args.sizes.split(",")]
    families = args.families.split(",")
    root = np.random.SeedSequence(args.seed)
    print(f"root seed {root.entropy}; load average {os.getloadavg()}", flush=True)
    results = {}
    for (family, n), ss in zip(
        itertools.product(families, sizes), root.spawn(len(families) * len(sizes)), strict=True
    ):
        rows = []
        for seed in (int(s.generate_state(1)[0]) for s in ss.spawn(args.problems)):
            data, desc = draw_problem(family, seed, n)
            t0 = time.process_time()
            tr, sec = train_default(data)
            cpu = time.process_time() - t0
            gaps = (float("inf"),) * 3
            if tr is not None:
                exact = fit_exact(data, tr.settings.lambda_mu, tr.settings.lambda_theta)
                gaps = (
                    gap_to_exact(data, tr.model, exact),
                    gap_to_exact(data, tr.live_model, exact),
                    gap_to_exact(data, tr.model, exact, tr.settings.n_gibbs),
                )
            rows.append((*gaps, sec, cpu))
            print(
                f"{family:8s} n={n:<7d} seed {seed:10d} {desc:44s} {gaps[0]:.1e} (last "
                f"{gaps[1]:.1e}; n'π ≥ 10: {gaps[2]:.1e}; {sec:.0f} s, {cpu:.1f} s CPU)",
                flush=True,
            )
        results[family, n] = np.array(rows)
    print(f"\nload average {os.getloadavg()}")
    print("max |ΔP(Y=1|x)| over states with n·π(x) ≥ 1, reported model (last iterate):")
    print("family   n        median   90 %     max      ≤ 2e-3  ≤ 5e-3  s (CPU)/problem")
    for (family, n), a in results.items():
        g, r = a[:, 0], a[:, 2]
        print(
            f"{family:8s} {n:<8d} {np.median(g):.1e}  {np.quantile(g, 0.9):.1e}  {g.max():.1e}  "
            f"{(g <= BOUND).sum():2d}/{len(g)}   {(g <= 5e-3).sum():2d}/{len(g)}   "
            f"{a[:, 3].mean():.1f} ({a[:, 4].mean():.1f})   (last: median {np.median(a[:, 1]):.1e}; "
            f"n'π ≥ 10: median {np.median(r):.1e}, max {r.max():.1e}, ≤ 2e-3 {(r <= BOUND).sum()}/{len(r)})"
        )


if __name__ == "__main__":
    main()
