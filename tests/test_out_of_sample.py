"""The shipped defaults on small problems nobody tuned on: fresh seeds every run, the exact
optimum as reference (benchmarks/out_of_sample.py prints the full distribution)."""

from __future__ import annotations

import numpy as np

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
# the benchmark).  The defaults miss 2·10⁻³ on about 1 problem in 20 (the slow relaxation
# of docs/out_of_sample.md, up to 4.2·10⁻³); the former defaults (n' = n, the
# preconditioner from the chain's own d̂, ĉ) missed 3·10⁻³ on every pairwise problem
# measured (20 of 20, median 8.3·10⁻³).  At least 4 of 6 within 3·10⁻³ separates the two:
# the former defaults fail it with the three pairwise problems alone, the new ones about
# once in 400 runs (three misses at 1 in 20 each).
WITHIN = 3e-3
AT_LEAST = 4
MAX_BOUND = 1e-2


def test_shipped_defaults_land_near_the_exact_optimum_on_fresh_problems():
    """The documented accuracy (mrf.default_settings: 2·10⁻³ max |ΔP(Y=1|x)| of the exact
    regularised optimum on small problems) on six fresh problems; the seeds are in the
    failure message (``draw_problem(family, seed, 1000)`` repeats one)."""
    families = ("pairwise", "mixture") * 3
    seeds = [int(s) for s in np.random.SeedSequence().generate_state(len(families))]
    found = []
    for family, seed in zip(families, seeds, strict=True):
        data, _ = draw_problem(family, seed, 1000)
        gap, _, _ = default_run(data)
        found.append((gap, family, seed))
    gaps = np.array([g for g, _, _ in found])
    what = ", ".join(f"{f} {s}: {g:.1e}" for g, f, s in found)
    assert (gaps <= WITHIN).sum() >= AT_LEAST, f"fewer than {AT_LEAST} within {WITHIN}: {what}"
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


def test_momentum_on_theta_shortens_the_slow_relaxation_without_noise():
    """With exact statistics the plain update relaxes slowly along the directions the
    penalty alone holds; heavy ball on θ (β = 0.9) gets 4.4× closer in 300 iterations
    (1.0·10⁻² → 2.3·10⁻³ with the default preconditioner from the targets; more than 5×
    with the paper's from the samples).  Without momentum the ratio is 1."""
    pb = small_problem(103)
    lay, agg = pb.layout, pb.aggregated
    gaps = {}
    for beta in (0.0, 0.9):
        st = default_settings(lay, agg.n, lambda_mu=1.0, momentum=beta)
        exact = fit_exact(agg, st.lambda_mu, st.lambda_theta)
        chain = lambda lay_, n_gibbs, marginals, seed: ExactStatistics(lay_, agg.n, n_gibbs)  # noqa: E731
        tr = PCDTrainer(agg, st, chain_factory=chain).fit(300)
        gaps[beta] = gap_over_likely_states(tr.live_model, lay, exact, agg.n)
    assert gaps[0.0] > 5e-3
    assert gaps[0.9] < gaps[0.0] / 3
