"""Out of sample: does PCD reach the exact regularised optimum on problems nobody tuned on?

Each run draws fresh small problems (new seeds, printed so a run can be repeated with
``--seed``): 4–5 features with 2–3 modalities each, all singles and pairs, n = 1 000
training records from ``datasets.synthetic`` (a random pairwise model), λ_μ = 1,
λ_θ = T/2 (the default rule), n' = 10 000 Gibbs samples.  The reference is
``exact.fit_exact`` with the same penalties.  For each training schedule it prints the
distribution over problems of

    max |P(Y=1|x) − P_exact(Y=1|x)|  over the states with n·π_exact(x) ≥ 1,

for the reported model (the iterate average) and the last iterate.  Schedules:

- ``default``: the default settings and iteration count (``default_settings``,
  ``default_iterations``: momentum 0.8 on θ, 3 000 iterations, the second half averaged);
- ``former default``: the rule before momentum: plain step, 600 iterations, the average
  from iteration ⌈2/α_θ⌉; ``plain×2000``: the same over 2 000 iterations;
- ``momentum 1000`` / ``momentum 2000``: heavy ball on θ (``TrainerSettings(momentum=0.9)``),
  1 000 or 2 000 iterations, the polynomial-decay average started at mid-run;
- ``momentum 0.8``, ``momentum 0.5``: β = 0.8 or 0.5, otherwise as ``momentum 2000``;
  ``momentum 0.8 rule``: β = 0.8, 2 000 iterations, the average from ⌈2/α_θ⌉;
  ``momentum 0.8×3000``, ``momentum 0.8×4000``: longer, the second half averaged;
- ``PR decay``: Polyak–Ruppert, plain step decaying as α_θ·min(1, (k₀/k)^0.6) from
  k₀ = 500 and the uniform average of iterations 1 001–2 000 (:func:`polyak_ruppert`).

    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/out_of_sample.py --schedules default
    nice -n 10 python benchmarks/out_of_sample.py --problems 5 --seed 1234
    nice -n 10 python benchmarks/out_of_sample.py --schedules default,"former default"

(On a loaded machine ``NUMBA_NUM_THREADS=1`` avoids oversubscribing the cores: 2–4 s per
problem and schedule instead of minutes; the numbers do not depend on the thread count.)
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import numpy as np

from aggmrf_explore.exact import all_states, fit_exact, state_probabilities
from aggmrf_explore.experiment import prepare
from aggmrf_explore.mrf import PCDTrainer, default_iterations, default_settings

RULE = "⌈2/α_θ⌉"  # average_start: the start rule of step(), whatever fit() plans
SCHEDULES = {  # name: (settings overrides, iterations or None for the default count)
    "default": ({}, None),
    "former default": ({"momentum": 0.0, "average_start": RULE}, 600),
    "plain×2000": ({"momentum": 0.0, "average_start": RULE}, 2000),
    "momentum 1000": ({"momentum": 0.9, "average_start": 500}, 1000),
    "momentum 2000": ({"momentum": 0.9, "average_start": 1000}, 2000),
    "momentum 0.8": ({"momentum": 0.8, "average_start": 1000}, 2000),
    "momentum 0.5": ({"momentum": 0.5, "average_start": 1000}, 2000),
    "momentum 0.8 rule": ({"momentum": 0.8, "average_start": RULE}, 2000),
    "momentum 0.8×3000": ({"momentum": 0.8, "average_start": 1500}, 3000),
    "momentum 0.8×4000": ({"momentum": 0.8, "average_start": 2000}, 4000),
    "PR decay": ({"momentum": 0.0}, 2000),  # see polyak_ruppert
}


def polyak_ruppert(trainer: PCDTrainer, iterations: int, power: float = 0.6):
    """Polyak–Ruppert: α_θ,k = α_θ·min(1, (k₀/k)^power) from k₀ = iterations/4 and the
    uniform average of the iterates of the second half; returns that average as a model.

    The step is set on ``trainer.settings`` directly (``update`` would restart the trainer's
    own average, which this schedule does not use)."""
    from aggmrf_explore.mrf import MRFModel

    base, k0, half = trainer.settings, iterations // 4, iterations // 2
    total = [np.zeros_like(trainer.mu), np.zeros_like(trainer.theta), 0]

    def hook(tr, stats):
        k = stats.iteration
        if k >= k0:
            tr.settings = replace(base, step_theta=base.step_theta * (k0 / (k + 1)) ** power)
        if k > half:
            total[0] += tr.mu
            total[1] += tr.theta
            total[2] += 1

    trainer.fit(iterations, [hook])
    return MRFModel(trainer.layout, total[0] / total[2], total[1] / total[2])


def draw_problem(seed: int, n: int = 1000):
    """A small problem from ``seed``: (Problem, description)."""
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(4, 6))
    modalities = [int(m) for m in rng.integers(2, 4, size=n_features)]
    data_seed = int(rng.integers(1 << 30))
    pb = prepare("synthetic", n=n, seed=data_seed, n_features=n_features, n_modalities=modalities)
    return pb, f"D = {n_features}, M = {modalities}, T = {pb.layout.n_released_tables}"


def gaps(seed: int, schedules=SCHEDULES) -> tuple[str, dict[str, tuple[float, float, float]]]:
    """(description, {schedule: (averaged gap, last-iterate gap, seconds)}) on one problem."""
    pb, desc = draw_problem(seed)
    lay, agg = pb.layout, pb.aggregated
    base = default_settings(lay, agg.n, n_gibbs=10_000, lambda_mu=1.0, seed=seed % 2**31)
    exact = fit_exact(agg, base.lambda_mu, base.lambda_theta)
    states = all_states(lay)
    px, p_exact = state_probabilities(lay, exact.mu, exact.theta)
    keep = agg.n * px >= 1.0
    out = {}
    for name, (overrides, iterations) in schedules.items():
        t0 = time.perf_counter()
        if overrides.get("average_start") == RULE:
            overrides = {**overrides, "average_start": int(np.ceil(2.0 / base.step_theta - 1e-9))}
        st = replace(base, **overrides).validate()
        tr = PCDTrainer(agg, st)
        if name == "PR decay":
            model = polyak_ruppert(tr, iterations)
        else:
            model = tr.fit(iterations or default_iterations(st)).model
        avg = np.abs(model.predict_proba(states[keep])[:, 1] - p_exact[keep]).max()
        last = np.abs(tr.live_model.predict_proba(states[keep])[:, 1] - p_exact[keep]).max()
        out[name] = (float(avg), float(last), time.perf_counter() - t0)
    return desc, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy)")
    ap.add_argument(
        "--schedules", default=",".join(SCHEDULES), help="comma-separated names (default: all)"
    )
    args = ap.parse_args()
    schedules = {k: SCHEDULES[k] for k in args.schedules.split(",")}
    root = np.random.SeedSequence(args.seed)
    print(f"root seed {root.entropy}; load average {os.getloadavg()}")
    seeds = [int(s.generate_state(1)[0]) for s in root.spawn(args.problems)]
    rows = {name: [] for name in schedules}
    for seed in seeds:
        desc, out = gaps(seed, schedules)
        print(
            f"seed {seed:10d} {desc:36s} "
            + "  ".join(f"{k}: {a:.1e}/{b:.1e} ({s:.0f}s)" for k, (a, b, s) in out.items()),
            flush=True,
        )
        for k, v in out.items():
            rows[k].append(v)
    print(f"\nload average {os.getloadavg()}")
    print("max |ΔP(Y=1|x)| over states with n·π(x) ≥ 1, averaged model (last iterate):")
    print("schedule        median    90 %      max       ≤ 2e-3   ≤ 5e-3   s/problem")
    for k, v in rows.items():
        a = np.array([x[0] for x in v])
        b = np.array([x[1] for x in v])
        sec = np.mean([x[2] for x in v])
        print(
            f"{k:14s} {np.median(a):.1e}   {np.quantile(a, 0.9):.1e}   {a.max():.1e}   "
            f"{(a <= 2e-3).sum():2d}/{len(a)}    {(a <= 5e-3).sum():2d}/{len(a)}    {sec:.0f}"
            f"   (last: median {np.median(b):.1e}, max {b.max():.1e})"
        )


if __name__ == "__main__":
    main()
