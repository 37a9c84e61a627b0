"""The shipped defaults on small problems nobody tuned on: fresh seeds every run, the exact
optimum as reference (benchmarks/out_of_sample.py prints the full distribution)."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore.exact import all_states, expected_statistics, fit_exact, state_probabilities
from aggmrf_explore.experiment import prepare
from aggmrf_explore.mrf import PCDTrainer, default_settings
from benchmarks.out_of_sample import default_run, draw_problem


def small_problem(seed: int):
    """4–5 features of 2–3 modalities, all pairs, n = 1 000 records (datasets.synthetic)."""
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(4, 6))
    modalities = [int(m) for m in rng.integers(2, 4, size=n_features)]
    return prepare(
        "synthetic",
        n=1000,
        seed=int(rng.integers(1 << 30)),
        n_features=n_features,
        n_modalities=modalities,
    )


def gap_over_likely_states(model, layout, exact, n: int) -> float:
    """max |P(Y=1|x) − P_exact(Y=1|x)| over the states with n·π_exact(x) ≥ 1."""
    states = all_states(layout)
    px, p_exact = state_probabilities(layout, exact.mu, exact.theta)
    keep = n * px >= 1.0
    return float(np.abs(model.predict_proba(states[keep])[:, 1] - p_exact[keep]).max())


# Three problems each of the pairwise and mixture families of benchmarks/out_of_sample.py
# (1 000 records), drawn from fresh entropy on every run and trained with exactly the
# shipped defaults (the skewed family's |ΔP| are small whatever the trainer does: it is in
# the benchmark).  The shipped defaults land within 2·10⁻³ on at least 19 of 20 problems
# per family (medians 4–6·10⁻⁴, docs/out_of_sample.md); the former defaults (n' = n, the
# preconditioner from the chain's own d̂, ĉ) had a median of 7.2·10⁻³ on such problems and
# missed 3·10⁻³ on nearly all.  The median of six below 1.5·10⁻³ and none past 5·10⁻³
# separates the two: the former defaults fail it in every run tried (docs), the shipped
# ones would need three of six problems past 1.5·10⁻³.
MEDIAN_BOUND = 1.5e-3
MAX_BOUND = 5e-3


def test_shipped_defaults_land_near_the_exact_optimum_on_fresh_problems():
    """The documented accuracy (mrf.default_settings: 2·10⁻³ max |ΔP(Y=1|x)| of the exact
    regularised optimum on small problems) on four fresh problems; the seeds are in the
    failure message (``draw_problem(family, seed, 1000)`` repeats one)."""
    families = ("pairwise", "mixture") * 2
    seeds = [int(s) for s in np.random.SeedSequence().generate_state(len(families))]
    found = []
    for family, seed in zip(families, seeds, strict=True):
        data, _ = draw_problem(family, seed, 1000)
        gap, _, _ = default_run(data)
        found.append((gap, family, seed))
    gaps = np.array([g for g, _, _ in found])
    what = ", ".join(f"{f} {s}: {g:.1e}" for g, f, s in found)
    assert np.median(gaps) <= MEDIAN_BOUND, f"median {np.median(gaps):.1e} ({what})"
    assert gaps.max() <= MAX_BOUND, f"max {gaps.max():.1e} ({what})"


class ExactStatistics:
    """A chain without Monte-Carlo noise: its statistics are the exact expectations under
    the last (μ, θ) it was swept with, in the units of a chain of n' samples."""

    def __init__(self, layout, n: int, n_gibbs: int) -> None:
        self.layout, self.n, self.s = layout, n, n / n_gibbs

    def sweep(self, mu, theta) -> None:
        self.mu, self.theta = mu.copy(), theta.copy()

    def statistics(self, theta):
        d, c = expected_statistics(self.layout, self.mu, theta, self.n)
        return d / self.s, c / self.s


def test_gauge_step_removes_the_slow_relaxation_without_noise():
    """With exact statistics the preconditioned step relaxes the directions that leave the
    model unchanged (a value moved between a table and its sub-table) only at α·2λ/d per
    iteration; the gauge step (``TrainerSettings.gauge``, pcd.gauge_step) solves them
    exactly.  300 iterations: above 5·10⁻³ from the optimum without it, within 10⁻³ with it
    (2.2·10⁻⁴ measured)."""
    pb = small_problem(103)
    lay, agg = pb.layout, pb.aggregated
    gaps = {}
    for gauge in (False, True):
        st = default_settings(lay, agg.n, gauge=gauge)
        exact = fit_exact(agg, st.lambda_mu, st.lambda_theta)
        chain = lambda lay_, n_gibbs, marginals, seed: ExactStatistics(lay_, agg.n, n_gibbs)  # noqa: E731
        tr = PCDTrainer(agg, st, chain_factory=chain).fit(300)
        gaps[gauge] = gap_over_likely_states(tr.live_model, lay, exact, agg.n)
    assert gaps[False] > 5e-3
    assert gaps[True] < 1e-3


@pytest.mark.slow  # a long reproduction: 10⁵ records, 3 000 iterations (90 s)
def test_shipped_defaults_train_the_mixture_that_diverged():
    """Mixture problem 681682305 of 10⁵ records diverged under the former defaults (heavy
    ball β = 0.8 on θ: the fast directions ring with period ≈ 6 iterations, the chain's lag
    makes the ringing grow, θ₀ reached −50 at iteration 1 175; docs/out_of_sample.md).  The
    shipped defaults (no momentum, the gauge step) finish it and land near the optimum."""
    data, _ = draw_problem("mixture", 681682305, 100_000)
    gap, _, _ = default_run(data)
    assert gap <= 1e-2
