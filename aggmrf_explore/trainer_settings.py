"""The trainer's settings and their documented default rule.

- :class:`TrainerSettings`: every knob of :class:`~aggmrf_explore.mrf.PCDTrainer` (the user's
  ones declared once in :data:`aggmrf_explore.settings.SETTINGS`, the trainer's own here);
- :func:`default_settings`: the rule that sets them from the layout, the number of records and
  the release's declared noise (:func:`noise_penalties`), with no per-dataset constants;
- :func:`default_gibbs` (n') and :func:`default_iterations` (the run's length).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from .errors import AggMRFError
from .settings import SettingError, setting
from .tables import AggregatedData, TableLayout

__all__ = [
    "TrainerSettings",
    "default_settings",
    "default_iterations",
    "default_gibbs",
    "default_sweep_sites",
    "noise_penalties",
    "noise_raises_penalty",
    "cell_penalty_weights",
    "release_noise_sd",
    "MIN_GIBBS",
    "MAX_GIBBS",
    "MAX_RECORDS_PER_SAMPLE",
    "SUBSET_SCAN_MIN_GIBBS",
    "SUBSET_SCAN_SHARE",
    "LAMBDA_THETA_CAP",
    "PENALTY_MAX",
    "MIN_ITERATIONS",
    "ITERATION_RELAXATIONS",
    "DEFAULT_MOMENTUM",
    "USER_SETTINGS",
]

TARGETS = ("projected", "raw")
LABEL_FLOORS = ("rate", "weight")  # TrainerSettings.label_floor
PRECONDITIONERS = ("targets", "samples")  # TrainerSettings.preconditioner
# the fields a user sets, declared in settings.SETTINGS (the others are the trainer's own)
USER_SETTINGS = (
    "n_gibbs",
    "lambda_mu",
    "lambda_theta",
    "step_mu",
    "step_theta",
    "gradient",
    "seed",
)

# the default rule (default_settings, default_iterations)
LAMBDA_THETA_CAP = 50.0  # λθ = min(T/2, 50): each θ's prior sd is at least 1/√(2·50) = 0.1
PENALTY_MAX = 1e12  # the most a rule sets λ to (the settings' upper bound)
MIN_ITERATIONS = 3000  # default iteration count: max(3000, ⌈6/α_θ⌉)
ITERATION_RELAXATIONS = 6.0
DEFAULT_MOMENTUM = 0.0  # no heavy ball: the gauge step does its job (docs/out_of_sample.md)
# default n' = max(10 000, min(⌈n/10⌉, 400 000)) (default_gibbs; no longer capped at n)
MIN_GIBBS = 10_000  # the paper's n' on Adult and Bank
MAX_GIBBS = 400_000  # the paper's n' on Criteo
MAX_RECORDS_PER_SAMPLE = 10  # between the two, one Gibbs sample per 10 records
# from this many Gibbs samples on, each iteration updates a tenth of the features per sample
# (default_sweep_sites): measured at the authors' scale only (docs/criteo_full.md)
SUBSET_SCAN_MIN_GIBBS = MAX_GIBBS
SUBSET_SCAN_SHARE = 0.1


@dataclass(frozen=True)
class TrainerSettings:
    """Hyper-parameters of the PCD trainer.

    n_gibbs: persistent Gibbs samples n'.  lambda_mu, lambda_theta: L2 penalties λ_μ, λ_θ.
    step_mu, step_theta: step sizes α_μ, α_θ.  gradient: the θ-gradient r·ĉ − c + 2λ_θ θ
    with r of :func:`rescaling_ratio`: "rescaled" (default: r = (d − 2λ_μ μ)/d̂, whose
    fixed point is the exact regularised optimum), "rescaled-paper" (the paper's
    pseudo-gradient, r = d/d̂) or "true" (r = 1).  precondition: divide by the diagonal Hessian estimate.
    preconditioner: where that estimate comes from: "targets" (default; its value at the
    fixed point, (d − 2λ_μ μ)⁺ + 2λ_μ and (c − 2λ_θ θ)⁺ + 2λ_θ, free of the chain's noise) or
    "samples" (the paper's d̂ + 2λ_μ and r·ĉ + 2λ_θ, biased at small n'; a release with
    folded rows always uses it, as ``tables.suppression.DualStep`` assumes).
    clip: bound on each coordinate of the (preconditioned) direction.  noise_aware: use
    E[A | A + L = b] as target (needs a noisy release).  seed: everything random.
    eval_every: compute the held-out NLLH every this many iterations.
    noise_refresh: MRF-N recomputes its targets E[A | A + L = b] every this many iterations
    (they follow the slowly moving model; 1 = every iteration, 3 keeps the noise-aware
    iteration under 1.5× a plain one on Adult).
    targets: what the plain MRF fits on a noisy release: "projected" (default; d⁺ = max(d̃, 0),
    c⁺ = clip(c̃, 0, d⁺)) or "raw" (d̃, c̃ as released, the AdKDD'21 paper's MRF baseline;
    no count is ever a denominator: d̃ enters g_μ = d̂ − d̃ + … and the rescaling ratio's
    numerator (divided by d̂ ≥ 0; where the numerator is ≤ 0 the unbiased ratio falls back
    to 1, the paper's d̃/d̂ goes negative as it would in the paper), and the preconditioners
    are floored at s).
    Initial values always come from the projection; MRF-N ignores this setting.
    momentum: heavy-ball coefficient β on θ (0 = off; the rule :func:`default_settings`
    sets 0.8): θ moves by
    v_k = β v_{k−1} + Δ_k, Δ_k the step of :func:`pcd_update`; μ moves by Δ_k alone.  It
    shortens the slow relaxation of the directions held only by the penalty
    (benchmarks/out_of_sample.py); the velocity is reset by ``PCDTrainer.update`` and by a
    rejected step.
    noise_prior_floor: MRF-N's binomial priors use max(d̂, s), max(ĉ, s) (s = n/n', one Gibbs
    sample's weight), so a cell the chain has not visited can still be pulled up by a large
    released value (no absorption at zero; ``privacy.noise_aware_targets``).  Default True;
    False is the former behaviour (prior d̂, ĉ as estimated).
    label_floor: the floor of the label sums' prior under ``noise_prior_floor``: "rate"
    (default: max(ĉ, s·p̄), one sample's expected label sum, p̄ the release's label rate
    Σc⁺/Σd⁺ over the released rows) or "weight" (max(ĉ, s), as the counts'; the former
    default).  The chain's ĉ is marginalised (Σ P(y=1|x̃)), so it is 0 only where d̂ is; a
    floor of s lifted the prior of every cell expecting fewer than s positives to s, i.e.
    most pair cells of a rare label (Criteo-shaped sale at s = 10: test NLLH 0.0184 →
    0.0288 with "rate"; docs/criteo_defaults.md).
    cell_penalty: MRF-N only (default True; no effect on the plain MRF or exact tables):
    raise λ per released row j to the noise rule's value λ_A (:func:`noise_penalties`)
    where MRF-N's own shrinkage of that row, λ·(1 + σ²/b_j) with b_j the released count
    (label sum), is below it (:func:`cell_penalty_weights`): rows far above σ² are held as
    the plain MRF's rule holds them, small rows are left to MRF-N.
    table_prior: with ``cell_penalty``, on a release whose noise raises the rule's λ_θ,
    MRF-N lowers λ_θ on each table of two or more features whose label interactions show
    above the noise, to 1/(2τ²) (at least 1) for their variance τ² learnt from the release
    (:func:`aggmrf_explore.mrfn.table_penalties`, :func:`cell_penalty_weights`): where σ
    dwarfs a cell's label sum its coefficient is set by that prior, and the noise-free
    λ_θ's (prior sd 0.17) shrank the Criteo-shaped click's crossed pairs (sd ≈ 0.45)
    four-fold.
    gauge: after each step, minimise the objective exactly along the directions that leave
    the model unchanged (:func:`.pcd.gauge_step`; default True).  The preconditioned step
    relaxes them only at α·2λ/d per iteration (the curvature there is the penalty's 2λ, not
    h ≈ d), which left 3 000 iterations short of the optimum at 10⁵ records.  Rows of a
    suppression's boxes are left out (their objective is piecewise there).  It runs on
    exact tables, tables whose declared noise leaves the default penalties unchanged, and
    noise-aware targets (``PCDTrainer.gauge_active``): raw noisy values contradict one
    another along those directions, and the exact
    minimum there lies at |μ| ~ noise/2λ_μ, past the divergence bound (Adult with Laplace
    ε = 1 diverged at iteration 1); it also turns itself off at the first step it would
    push past the bound when the step without it would not (an inconsistent release that
    declares no noise).
    average: report the iterate average (μ̄, θ̄) as the model (``PCDTrainer.model``) instead of
    the last iterate; average_start: iterations before the average starts, counted from the
    start of training or from the last ``PCDTrainer.update`` (None: the rule of
    :class:`PCDTrainer`, "Iterate averaging": ⌈2/α_θ⌉, or half of the run that ``fit``
    plans if that is later).
    intercept_penalty: the share of λ_θ on θ₀, the base rate's logit (0: free, the paper's
    objective).  The default rule gives it 1/T on raw noisy tables whose noise raised λ_θ
    (its target averages the T tables' totals): a noisy count of positives projected to 0 of 0 sent θ₀ to −15 (the
    toy at ε = 0.1, test NLLH −12.6), and the full λ_θ pulled Adult's towards ½
    (docs/noise_rules.md).
    sweep_sites: features each Gibbs sample updates per iteration (None: all of them, the
    paper's sweep; the default rule's choice by size is :func:`default_sweep_sites`; k: k features drawn at random per sweep, a random-subset scan
    with the same stationary distribution, hence the same fixed point, at about k/D of the
    site updates' cost; the Metropolis-within-Gibbs chain only, see
    :class:`~aggmrf_explore.kernels.MHGibbsChain`).
    """

    n_gibbs: int = 10_000
    lambda_mu: float = 1.0
    lambda_theta: float = 50.0
    step_mu: float = 0.05
    step_theta: float = 0.01
    gradient: str = "rescaled"
    precondition: bool = True
    preconditioner: str = "targets"
    clip: float = 2.0
    noise_aware: bool = False
    seed: int = 0
    eval_every: int = 1
    noise_refresh: int = 3
    targets: str = "projected"
    noise_prior_floor: bool = True
    label_floor: str = "rate"
    cell_penalty: bool = True
    table_prior: bool = False
    average: bool = True
    average_start: int | None = None
    momentum: float = 0.0
    gauge: bool = True
    intercept_penalty: float = 0.0
    sweep_sites: int | None = None

    def validate(self) -> TrainerSettings:
        """Raise :class:`~aggmrf_explore.settings.SettingError` (an AggMRFError) naming the
        first bad value; returns self.  The user-facing fields are checked against their
        one declaration in :data:`aggmrf_explore.settings.SETTINGS`."""
        for name in USER_SETTINGS:
            setting(name).check(getattr(self, name))
        v = self.clip
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (np.isfinite(v) and v > 0):
            raise SettingError("clip", f"clip must be a finite number > 0; got {v}.")
        if not isinstance(self.eval_every, int | np.integer) or self.eval_every < 1:
            raise AggMRFError(f"eval_every must be an integer ≥ 1; got {self.eval_every}.")
        if not isinstance(self.noise_refresh, int | np.integer) or self.noise_refresh < 1:
            raise AggMRFError(f"noise_refresh must be an integer ≥ 1; got {self.noise_refresh}.")
        if self.preconditioner not in PRECONDITIONERS:
            raise AggMRFError(
                f"preconditioner must be one of {PRECONDITIONERS}; got {self.preconditioner!r}."
            )
        if self.label_floor not in LABEL_FLOORS:
            raise AggMRFError(
                f"label_floor must be one of {LABEL_FLOORS}; got {self.label_floor!r}."
            )
        if not isinstance(self.cell_penalty, bool | np.bool_):
            raise AggMRFError(f"cell_penalty must be True or False; got {self.cell_penalty!r}.")
        if not isinstance(self.table_prior, bool | np.bool_):
            raise AggMRFError(f"table_prior must be True or False; got {self.table_prior!r}.")
        if self.targets not in TARGETS:
            raise AggMRFError(f"targets must be one of {TARGETS}; got {self.targets!r}.")
        if self.average_start is not None and (
            not isinstance(self.average_start, int | np.integer) or self.average_start < 0
        ):
            raise AggMRFError(
                f"average_start must be None or an integer ≥ 0; got {self.average_start!r}."
            )
        if not isinstance(self.gauge, bool | np.bool_):
            raise AggMRFError(f"gauge must be True or False; got {self.gauge!r}.")
        m = self.momentum
        if isinstance(m, bool) or not isinstance(m, numbers.Real) or not (0.0 <= m < 1.0):
            raise AggMRFError(f"momentum must be a number in [0, 1); got {m!r}.")
        v = self.intercept_penalty
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (0.0 <= v <= 1.0):
            raise AggMRFError(f"intercept_penalty must be a number in [0, 1]; got {v!r}.")
        v = self.sweep_sites
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1):
            raise AggMRFError(f"sweep_sites must be None or an integer ≥ 1; got {v!r}.")
        return self


def default_settings(
    layout: TableLayout, n: int, noise_sd: float = 0.0, **overrides
) -> TrainerSettings:
    """The documented default rule (no per-dataset constants); ``noise_sd``: the noise
    standard deviation per cell of the release trained on (counts; 0: exact tables), which
    raises λ_μ and λ_θ (:func:`noise_penalties`) unless ``noise_aware`` models the noise.

    - α_θ = 1/T and α_μ = min(5/T, 1/T_f), T = number of released tables, T_f the largest
      number of released tables holding one feature (the paper's 1/T and "up to 5×" for μ;
      the cap keeps a coordinate-wise Newton step from overshooting when few tables
      share a feature, e.g. XOR: T = 6, T_f = 3);
    - λ_μ = 1 (the paper: keep it low, 1 prevents numerical trouble);
    - λ_θ = min(T/2, 50).  The penalty λ_θ‖θ‖² is a Gaussian prior N(0, 1/(2λ_θ)) on each
      coefficient.  The logit of a record is a sum of T coefficients, one per table, so
      λ_θ = T/2 gives the logit a prior variance of 1 whatever the number of tables
      (small problems: XOR T = 6 → 3).  That spreads a fixed signal ever thinner as T
      grows; past T = 100 the prior sd of a coefficient would fall below 0.1, and real
      data do not shrink like that: the logistic skyline on the same features chooses
      λ = 32 on both Adult (T = 105) and Bank (T = 210), and the paper finds the MRF's
      best λ_θ "the same magnitude as the best regularization for a logistic".  So the
      coefficient's prior sd stops at 1/√(2·50) = 0.1 (``LAMBDA_THETA_CAP``): Adult T = 105
      → 50 (T/2 = 52.5 gives the same test NLLH), Bank T = 210 → 50 (T/2 = 105 was 0.0063
      worse, over-regularised; docs/bank_gap.md);
    - n' = :func:`default_gibbs` (n) = max(10 000, min(⌈n/10⌉, 400 000)) Gibbs samples:
      10 000 (the paper's on Adult and Bank) up to 10⁵ records, also below 10 000 records,
      then one sample per 10 records up to the paper's 400 000 on Criteo (4·10⁶ records);
    - the preconditioner from the targets (``TrainerSettings.preconditioner = "targets"``)
      and, with the default ``gradient="rescaled"``, no θ move in a cell without a sample;
    - MRF-N (``noise_aware``; ``run --tables`` on a release that declares its noise) keeps
      the noise-free λ_μ, λ_θ: its targets already shrink each row j by b_j/(b_j + σ²).
      Per row, ``cell_penalty`` raises λ to :func:`noise_penalties`' where that shrinkage
      is weaker (rows far above σ²), and the label sums' prior is floored at one sample's
      expected label sum s·p̄ (``label_floor="rate"``), not s (docs/criteo_defaults.md);
    - the gauge step (``TrainerSettings.gauge``): after each step, the exact minimum along
      the directions that leave the model unchanged (a value moved between a table and its
      sub-table, :func:`.pcd.gauge_step`).  The preconditioned step relaxes them at only
      α·2λ/d per iteration (the curvature there is the penalty's 2λ, not h ≈ d), so without
      it 3 000 iterations stopped 10⁻³–3·10⁻² short of the optimum at 10⁵ records even
      without Monte-Carlo noise;
    - every feature updated in every sweep below 400 000 Gibbs samples, a random tenth of
      them from there on (:func:`default_sweep_sites`: the same fixed point, 3.2–3.4× faster
      iterations at the authors' scale);
    - no momentum (``DEFAULT_MOMENTUM`` = 0).  Heavy ball β = 0.8 on θ had been the remedy
      for those slow directions; it makes the fast ones ring (period ≈ 6 iterations at
      α_θ = 1/T), and the persistent chain's lag makes the ringing grow: a fresh 10⁵-record
      problem diverged (docs/out_of_sample.md).

    What these defaults deliver (``benchmarks/out_of_sample.py``, exactly these defaults on
    three families of fresh problems; docs/out_of_sample.md): 3 000 iterations, the second
    half averaged, land within 2·10⁻³ max |ΔP(Y=1|x)| of the exact regularised optimum
    (over the states with at least one expected record) on at least 19 of 20 fresh problems
    per family at 300 and at 1 000 records.  At 10⁵ records that maximum is over states of
    one to ten records, which n' = 10 000 samples visit less than once a sweep: there the
    Monte-Carlo noise of the average is the limit (it falls as 1/√n': 5.2·10⁻³ → 3.2·10⁻³
    with 4n' on the problem checked; without noise the same problem converges to 10⁻⁴),
    and the claim holds over the states the chain resolves, n'·π(x) ≥ 10 (docs table).
    With the former preconditioner (from the chain's own d̂ and ĉ) and n' = n, the same
    small problems missed by a bias of about one sample's weight per cell (E[g/h] = 0 is
    not E[g] = 0), which more iterations did not remove.

    The iteration count is :func:`default_iterations` (max(3000, ⌈6/α_θ⌉)); ``fit`` over
    it averages the second half of the run (:class:`PCDTrainer`, "Iterate averaging").
    """
    T = max(layout.n_released_tables, 1)
    T_f = max(sum(1 for t in layout.tables if f in t) for f in range(layout.n_features))
    raw_sd = 0.0 if overrides.get("noise_aware") else float(noise_sd)  # MRF-N models it
    lam_mu, lam_theta = noise_penalties(T, raw_sd)
    base = TrainerSettings(
        n_gibbs=default_gibbs(n),
        lambda_mu=lam_mu,
        lambda_theta=lam_theta,
        step_mu=min(5.0 / T, 1.0 / T_f),
        step_theta=1.0 / T,
        momentum=DEFAULT_MOMENTUM,
        # (only where the noise raised λ_θ: a release with negligible noise keeps θ₀ free)
        intercept_penalty=1.0 / T if noise_raises_penalty(T, raw_sd) else 0.0,
    )
    settings = replace(base, **overrides).validate()
    if "sweep_sites" in overrides:
        return settings
    # from the n' actually used (an override's), checked above
    return replace(settings, sweep_sites=default_sweep_sites(layout.n_features, settings.n_gibbs))


def noise_penalties(n_tables: int, noise_sd: float = 0.0) -> tuple[float, float]:
    """The default (λ_μ, λ_θ) for ``n_tables`` released tables whose cells carry noise of
    standard deviation ``noise_sd`` (counts; 0: exact tables).

    Without noise: λ_μ = 1, λ_θ = min(T/2, 50) (:func:`default_settings`).  With noise, a
    records-free rule: a noisy cell moves its coefficient by about noise/(2λ), and a
    record's logit sums T of them, so λ_θ = max(min(T/2, 50), ½σ√T) keeps the logit's
    noise-driven error near 1; λ_μ = max(1, ½σ) likewise for each μ (a μ held by λ_μ = 1
    ran away at σ ≈ 140 on Adult).  Both capped at the settings' 10⁶.  Chosen over
    noise-aware targets by default (MRF-N) on 24 Adult and Bank releases, ε from 0.1 to 3:
    mean test NLLH 0.327 against 0.256 on Adult, 0.162 against 0.045 on Bank, none diverged
    (the former defaults: 7 of 16 Adult releases diverged; docs/noise_rules.md).
    """
    T = max(int(n_tables), 1)
    sd = float(noise_sd) if np.isfinite(noise_sd) and noise_sd > 0 else 0.0
    lam_theta = max(min(T / 2.0, LAMBDA_THETA_CAP), 0.5 * sd * np.sqrt(T))
    lam_mu = max(1.0, 0.5 * sd)
    return min(lam_mu, PENALTY_MAX), min(lam_theta, PENALTY_MAX)


def cell_penalty_weights(
    data: AggregatedData, settings: TrainerSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row multipliers (m_μ, m_θ) ≥ 1 of λ_μ, λ_θ, each (K,), for MRF-N on ``data``.

    MRF-N's target moves a released row j towards its noisy value by w_j = ĉ_j/(ĉ_j + σ²),
    so at its fixed point the row is held as by a penalty λ·(1 + σ²/ĉ_j): rows with few
    records are shrunk hard, rows well above σ² hardly.  This rule raises the latter to the
    noise rule's penalty (:func:`noise_penalties`, λ_A) and leaves the others:
    m_j = max(1, λ_A / (λ·(1 + σ²/max(b_j, 1)))), b_j the released (projected) count for μ,
    label sum for θ; records-free.  Rows that are not released get 1.

    With ``settings.table_prior``, where the noise raises the rule's λ_θ
    (:func:`noise_raises_penalty`), the θ rows of a table whose label interactions show above
    the noise get at most λ_t/λ_θ, λ_t = 1/(2τ²) ≥ 1 of
    :func:`aggmrf_explore.mrfn.table_penalties` (τ² the interactions' variance, a lower
    bound); the other tables keep the rule above."""
    K = data.layout.K
    ones = np.ones(K), np.ones(K)
    sd = release_noise_sd(data)
    if sd <= 0.0 or not settings.noise_aware:
        return ones
    T = max(data.layout.n_released_tables, 1)
    lam_mu_a, lam_theta_a = noise_penalties(T, sd)
    rel = data.layout.released
    proj = data.projected()
    out = []
    for lam_a, lam, b in (
        (lam_mu_a, settings.lambda_mu, proj.d),
        (lam_theta_a, settings.lambda_theta, proj.c),
    ):
        m = np.ones(K)
        if lam > 0.0:
            own = lam * (1.0 + sd**2 / np.maximum(b[rel], 1.0))
            m[rel] = np.maximum(1.0, lam_a / own)
        out.append(m)
    if settings.table_prior and settings.lambda_theta > 0.0 and noise_raises_penalty(T, sd):
        from .mrfn import table_penalties

        for t, lam_t in table_penalties(data, sd).items():
            rows = slice(data.layout.offsets[t], data.layout.offsets[t + 1])
            out[1][rows] = np.minimum(out[1][rows], lam_t / settings.lambda_theta)
    return out[0], out[1]


def noise_raises_penalty(n_tables: int, noise_sd: float) -> bool:
    """Whether noise of sd ``noise_sd`` per cell raises the default λ_θ above the noise-free
    rule: where raw noisy tables count as noisy (θ₀'s penalty, no gauge step)."""
    return noise_penalties(n_tables, noise_sd)[1] > noise_penalties(n_tables)[1]


def release_noise_sd(data: AggregatedData) -> float:
    """The noise standard deviation per cell that ``data`` declares (counts; 0 if none)."""
    return 0.0 if data.noise is None else float(data.noise.std)


def default_gibbs(n: int) -> int:
    """The default number of persistent Gibbs samples for n records:
    n' = max(10 000, min(⌈n/10⌉, 400 000)), so that one sample's weight s = n/n' (the grain
    of d̂ and ĉ, in records) is at most 10 from 10⁵ to 4·10⁶ records and at most 1 below
    10⁴ records (``MIN_GIBBS``, ``MAX_RECORDS_PER_SAMPLE``, ``MAX_GIBBS``: the paper used
    10 000 samples on Adult and Bank, 400 000 on Criteo).

    Small data get 10 000 samples too (the rule was min(n, …) = n below 10⁴ records): with
    one sample per record the Monte-Carlo noise of the averaged model alone is of the order
    of the documented 2·10⁻³ (docs/out_of_sample.md).  An iteration then costs about as
    much as one of Adult with as many features (the cost grows as n', not n).

    The grain matters on noisy releases: noise-aware training (MRF-N) takes the model's d̂
    as the prior of each released count (floored at s) and σ = 17 noise leaves the many
    cells of a few to a hundred records to that prior.  With 10 000 samples for 10⁶ records
    (s = 100) every such cell's prior is 0, 100 or 200 records and the targets follow the
    model instead of the release: test NLLH −0.20 on the Criteo-shaped benchmark's click
    where s = 10 gives 0.071 (docs/out_of_sample.md).  Exact tables do not need it (there
    n' = 10 000 and 200 000 give the same model).  The cost of an iteration grows as n'.
    """
    n = max(int(n), 1)
    per_records = min(-(-n // MAX_RECORDS_PER_SAMPLE), MAX_GIBBS)
    return int(max(MIN_GIBBS, per_records))


def default_sweep_sites(n_features: int, n_gibbs: int) -> int | None:
    """Features each Gibbs sample updates per iteration by default
    (``TrainerSettings.sweep_sites``): all of them (None, the paper's sweep) below
    ``SUBSET_SCAN_MIN_GIBBS`` = 400 000 samples; from there on ⌈D/10⌉
    (``SUBSET_SCAN_SHARE``), drawn at random each iteration.

    Both have the same fixed point (the same stationary distribution; ``tests/test_mh.py``).
    At the authors' scale (10⁷ records, 19 features, K = 5.7·10⁶, n' = 400 000) a full sweep
    is four fifths of an iteration, and 2 features per sweep made the iteration 3.2–3.4×
    faster (2.2–2.3 → 0.68–0.70 s, quiet machine) with the same model: test NLLH 0.3417 after
    1 500 iterations against 0.3386 with full sweeps; one feature per sweep lagged and ended
    at 0.3401 (docs/criteo_full.md).  Smaller chains keep
    the full sweep: their iterations are short, and the subset scan mixes more slowly per
    iteration, which was not measured there.  Only the Metropolis-within-Gibbs chain reads
    it; the full-conditional chains always sweep every feature."""
    if n_gibbs < SUBSET_SCAN_MIN_GIBBS:
        return None
    return max(1, math.ceil(SUBSET_SCAN_SHARE * n_features))


def default_iterations(settings: TrainerSettings) -> int:
    """The default number of PCD iterations for ``settings``: max(3000, ⌈6/α_θ⌉).

    The preconditioned step moves each well-constrained θ about a fraction α_θ of the way
    to its target per iteration, so a run's length is measured in relaxation times 1/α_θ
    (= T iterations under the default α_θ = 1/T); 6 of them past T = 500.  Below, 3 000
    iterations (``MIN_ITERATIONS``), half of them averaged: the average needs the tail to
    hold the Monte-Carlo noise down (docs/out_of_sample.md).  Adult (T = 105) and Bank
    (T = 210): 3 000.
    """
    return int(max(MIN_ITERATIONS, np.ceil(ITERATION_RELAXATIONS / settings.step_theta - 1e-9)))
