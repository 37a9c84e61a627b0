"""The max-entropy MRF and its Persistent Contrastive Divergence trainer (Algorithm 1).

Model: π(x, y) ∝ exp(φ(x)·(μ + yθ)), so P(Y=1 | x) = σ(φ(x)·θ).

One iteration of :class:`PCDTrainer` (n' persistent Gibbs samples, s = n / n'):

1. one Gibbs sweep of the samples (kernels.GibbsChain);
2. d̂ = s Σ_i φ(x̃_i),  ĉ = s Σ_i σ(φ(x̃_i)·θ) φ(x̃_i)   (ĉ marginalised over y);
3. g_μ = d̂ − d + 2λ_μ μ;
   g_θ = r·ĉ − c + 2λ_θ θ   (rescaled pseudo-gradient) with r = (d − 2λ_μ μ) / d̂, the
   μ-update's own target over d̂: r = 1 at μ's fixed point, so θ's fixed point is the exact
   regularised optimum (:func:`rescaling_ratio`; ``gradient="rescaled-paper"`` uses the
   paper's r = d / d̂, biased by O(λ_μ/n) when λ_μ > 0; ``gradient="true"`` uses r = 1);
4. preconditioned directions g_μ / h_μ and g_θ / h_θ, clipped to ±clip, with the
   curvatures taken at the fixed point, h_μ = (d − 2λ_μ μ)⁺ + 2λ_μ and
   h_θ = (c − 2λ_θ θ)⁺ + 2λ_θ (``preconditioner="targets"``, the default), not from the
   chain's own d̂ + 2λ_μ and r·ĉ + 2λ_θ (``"samples"``, the paper's): a preconditioner
   computed from the same samples as the gradient biases the fixed point (E[g/h] = 0 is
   not E[g] = 0; with one sample per record a cell of 5 records settles ≈ 16 % too full);
5. μ −= α_μ dir_μ;  θ −= α_θ dir_θ;
6. the gauge step (``gauge``, the default): the exact minimum of the objective along the
   directions that leave the model unchanged (a value moved between a table and its
   sub-table, :func:`.pcd.gauge_step`), which the preconditioned step relaxes only at
   α·2λ/d per iteration;
7. the reported model is a tail average of the iterates (``average``; PCDTrainer).

Steps 3–5 are the pure function :func:`pcd_update`, step 6 :func:`.pcd.gauge_step` (in :mod:`.pcd`: no state, no checks;
its intermediate quantities are returned for tests and plots).  :meth:`PCDTrainer.step` / :meth:`PCDTrainer.fit`
are the one training loop: sweep, statistics, ``pcd_update``, divergence checks, then the
callbacks ``cb(trainer, stats)`` (:mod:`.callbacks`: progress, held-out NLLH, history).

Edge cases, all tested: where d̂ = 0 or d − 2λ_μ μ ≤ 0 the ratio falls back to r = 1, the
true gradient (ĉ = 0 where d̂ = 0), except that under the default ``gradient="rescaled"`` a
cell with no sample (d̂ = 0) but d − 2λ_μ μ > 0 has g_θ = 0 for that iteration (no
estimate of the model's label rate there: θ waits rather than being pushed by −c, which
would bias it by the probability of an empty cell); preconditioners are floored at s (the weight of
one Gibbs sample) so nothing is divided by zero even with λ = 0; noisy targets are first
projected (d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺)) or, noise-aware, replaced by the posterior
mean E[A | A + L = b] under the current model.  The intercept (row 0) is unregularised and
its μ (which cancels in Z) is never moved.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from .callbacks import Callback, HeldOutNLLH, History, StopTraining
from .errors import AggMRFError, DivergenceError
from .kernels import make_chain, sample_logits
from .metrics import relative_l1
from .pcd import (
    MU_BOUND,
    THETA_BOUND,
    Params,
    Penalty,
    Targets,
    Update,
    divergence,
    gauge_free,
    gauge_groups,
    gauge_step,
    pcd_update,
    rescaling_ratio,
)
from .settings import GRADIENTS, SettingError, setting
from .tables import AggregatedData, TableLayout
from .tables.suppression import DualStep, box_targets, folded_bounds, row_noise_sd

__all__ = [
    "TrainerSettings",
    "default_settings",
    "default_iterations",
    "default_gibbs",
    "MIN_GIBBS",
    "MAX_GIBBS",
    "MAX_RECORDS_PER_SAMPLE",
    "LAMBDA_THETA_CAP",
    "MIN_ITERATIONS",
    "ITERATION_RELAXATIONS",
    "MRFModel",
    "IterationStats",
    "PCDTrainer",
    "Params",
    "Targets",
    "Penalty",
    "Update",
    "pcd_update",
    "StopTraining",
    "sigmoid",
    "expected_floor",
    "rescaling_ratio",
    "divergence",
    "GRADIENTS",
    "THETA_BOUND",
    "MU_BOUND",
]

TARGETS = ("projected", "raw")
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
# changing any other setting with PCDTrainer.update restarts the iterate average
KEEP_AVERAGE_SETTINGS = ("eval_every", "average")
AVERAGE_START_RELAXATIONS = 2.0  # the average starts after ⌈2/α_θ⌉ iterations
AVERAGE_ETA = 2.0  # polynomial-decay averaging: iterate k of the average weighs ∝ k^η
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


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


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
    gauge: after each step, minimise the objective exactly along the directions that leave
    the model unchanged (:func:`.pcd.gauge_step`; default True).  The preconditioned step
    relaxes them only at α·2λ/d per iteration (the curvature there is the penalty's 2λ, not
    h ≈ d), which left 3 000 iterations short of the optimum at 10⁵ records.  Rows of a
    suppression's boxes are left out (their objective is piecewise there).  It runs on
    noise-free tables and noise-aware targets only (``PCDTrainer.gauge_active``): the
    noisy values themselves contradict one another along those directions, and the exact
    minimum there lies at |μ| ~ noise/2λ_μ, past the divergence bound (Adult with Laplace
    ε = 1 diverged at iteration 1); it also turns itself off at the first step it would
    push past the bound when the step without it would not (an inconsistent release that
    declares no noise).
    average: report the iterate average (μ̄, θ̄) as the model (``PCDTrainer.model``) instead of
    the last iterate; average_start: iterations before the average starts, counted from the
    start of training or from the last ``PCDTrainer.update`` (None: the rule of
    :class:`PCDTrainer`, "Iterate averaging": ⌈2/α_θ⌉, or half of the run that ``fit``
    plans if that is later).
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
    average: bool = True
    average_start: int | None = None
    momentum: float = 0.0
    gauge: bool = True

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
    - the gauge step (``TrainerSettings.gauge``): after each step, the exact minimum along
      the directions that leave the model unchanged (a value moved between a table and its
      sub-table, :func:`.pcd.gauge_step`).  The preconditioned step relaxes them at only
      α·2λ/d per iteration (the curvature there is the penalty's 2λ, not h ≈ d), so without
      it 3 000 iterations stopped 10⁻³–3·10⁻² short of the optimum at 10⁵ records even
      without Monte-Carlo noise;
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
    lam_mu, lam_theta = noise_penalties(T, 0.0 if overrides.get("noise_aware") else float(noise_sd))
    base = TrainerSettings(
        n_gibbs=default_gibbs(n),
        lambda_mu=lam_mu,
        lambda_theta=lam_theta,
        step_mu=min(5.0 / T, 1.0 / T_f),
        step_theta=1.0 / T,
        momentum=DEFAULT_MOMENTUM,
    )
    return replace(base, **overrides).validate()


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


class MRFModel:
    """A fitted model: parameters μ, θ (float64, shape (K,)) over a TableLayout."""

    def __init__(self, layout: TableLayout, mu: np.ndarray, theta: np.ndarray) -> None:
        self.layout = layout
        self.mu = np.asarray(mu, dtype=np.float64).copy()
        self.theta = np.asarray(theta, dtype=np.float64).copy()
        if self.mu.shape != (layout.K,) or self.theta.shape != (layout.K,):
            raise AggMRFError(f"mu and theta must have shape ({layout.K},).")

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """φ(x)·θ for coded records X (n, D); shape (n,)."""
        rows = self.layout.rows(X).astype(np.int32)
        return sample_logits(rows, self.theta)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """P(Y=0 | x), P(Y=1 | x) for coded records X (n, D); shape (n, 2)."""
        p1 = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p1, p1])

    def proba_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """P(Y=1 | x) = σ(φ(x)·θ) for records given by their table rows (n, n_tables), int32;
        shape (n,).  ``rows = layout.rows(X).astype(np.int32)``, computed once for repeated use."""
        return sigmoid(sample_logits(rows, self.theta))


@dataclass
class IterationStats:
    """What one PCD iteration reports."""

    iteration: int
    d_error: float  # ‖d̂ − d‖₁ / ‖d‖₁ over released rows
    c_error: float  # ‖ĉ − c‖₁ / ‖c‖₁ over released rows
    nllh_eval: float | None  # held-out NLLH; None on iterations where it was not computed
    seconds: float  # wall time of this iteration, its callbacks included
    theta_norm: float
    step_mu: float
    step_theta: float
    lambda_mu: float
    lambda_theta: float
    n_averaged: int = 0  # iterates in the running average (0: the model is the last iterate)
    nllh_live: float | None = None  # held-out NLLH of the last iterate (HeldOutNLLH(live=True))
    acceptance: float | None = None  # MH acceptance rate of the sweep (MHGibbsChain only)


# ---------------------------------------------------------------------- the trainer
class PCDTrainer:
    """Incremental PCD training of the max-entropy MRF on aggregated data.

    Parameters
    ----------
    data : AggregatedData (possibly a noisy release)
    settings : TrainerSettings; None → default_settings(layout, n)
    X_eval, y_eval : optional held-out coded records (n_eval, D) and labels; they install a
        :class:`callbacks.HeldOutNLLH` (every ``settings.eval_every`` iterations).
    chain_factory : optional ``f(layout, n_gibbs, marginals, seed) -> Chain`` (default
        ``kernels.make_chain``), e.g. ``partial(make_chain, sampler="mh")`` or a sharded
        chain of :mod:`aggmrf_explore.distributed`.

    ``fit(n_iter, callbacks)`` / ``step(k, callbacks)`` run iterations (the one training
    loop; each callback is ``cb(trainer, stats)``, see :mod:`.callbacks`); ``update(...)``
    changes step sizes or λ between them; ``model`` is the reported fit (the iterate average
    with ``settings.average``), ``live_model`` the last iterate; ``history`` the statistics of
    every iteration so far.

    Iterate averaging.  PCD's last iterate carries Monte-Carlo noise.  The trainer keeps a
    polynomial-decay average (Shamir & Zhang 2013, η = 2) of (μ, θ) over the tail:

    - it starts after ``average_start`` iterations.  By default (None) after ⌈2/α_θ⌉: the
      preconditioned step moves each well-constrained θ about a fraction α_θ of the way to
      its target per iteration, so after 2/α_θ iterations that part of the start-up
      transient has decayed to about e⁻² ≈ 14 %.  The directions the penalty alone holds
      take much longer, so ``fit(n_iter)``, when it is the first call since the start or the
      last restart, moves the start to half of its run if that is later (Polyak–Ruppert's
      tail average: ``fit(3000)`` averages iterations 1 501–3 000).  ``step`` alone keeps
      ⌈2/α_θ⌉ (it does not know how long the run will be);
    - the k-th iterate since the start enters with weight w_k = (η+1)/(k+η) (w_1 = 1):
      θ̄_k = θ̄_{k−1} + w_k (θ_k − θ̄_{k−1}), so iterate j weighs ∝ j(j+1) — an average over
      a window that grows with the run (the first half of it weighs ≈ 1/8) and keeps
      forgetting the early, still-moving iterates;
    - ``update()`` that changes any setting but ``eval_every`` and ``average`` restarts it
      (with the same delay; it also zeroes the momentum's velocity): λ or the gradient move the optimum, and new step sizes (e.g.
      after a divergence) start a new regime whose early iterates should not be mixed in.

    It is always kept (``averaged``, ``n_averaged``); ``settings.average`` decides whether
    ``model`` (held-out NLLH, predictions, exports) is the average or the last iterate.

    Divergence.  A step that makes a parameter non-finite or takes |θ| past 50 or |μ| past 200
    is rejected before anything is stored: μ, θ, the average, d̂, ĉ, the iteration count and
    the history stay those of the last good iteration (the Gibbs samples have moved one sweep
    under those last good parameters, a valid PCD move).  :class:`DivergenceError` names the
    coordinate and the likely cause; reduce α (``update(step_theta=…)``) or raise λ and
    call ``step`` again to continue from the last good state.
    """

    def __init__(
        self,
        data: AggregatedData,
        settings: TrainerSettings | None = None,
        X_eval: np.ndarray | None = None,
        y_eval: np.ndarray | None = None,
        chain_factory: Callable | None = None,
    ) -> None:
        if not isinstance(data, AggregatedData):
            raise AggMRFError("data must be an AggregatedData (see tables.aggregate).")
        self.data = data
        self.layout = lay = data.layout
        self.settings = (
            settings or default_settings(lay, data.n, noise_sd=release_noise_sd(data))
        ).validate()
        if self.settings.noise_aware and data.noise is None:
            raise AggMRFError(
                "noise_aware=True needs a noisy release (privacy.release); this data has no noise."
            )
        self.n = data.n
        self.scale = self.n / self.settings.n_gibbs
        self._released = lay.released
        reg_theta = np.ones(lay.K)
        reg_mu = np.ones(lay.K)
        if lay.intercept:
            # θ₀ (the base rate's logit) is free on exact tables; on raw noisy ones it has
            # 1/T of the penalty (its target averages the T tables' totals): a noisy count
            # of positives projected to 0 of 0 sent it to −15 (the toy at ε = 0.1: test
            # NLLH −12.6), and a full penalty pulled Adult's towards ½ (docs/noise_rules.md)
            raw_noisy = data.noise is not None and not self.settings.noise_aware
            reg_theta[0] = 1.0 / max(lay.n_released_tables, 1) if raw_noisy else 0.0
            reg_mu[0] = 0.0
        self.penalty = Penalty(
            reg_mu, reg_theta, bool(lay.intercept), self.scale, self.n * lay.n_tables / lay.K
        )
        projected = data.projected()
        self._projected = Targets(projected.d, projected.c)
        # what the plain MRF fits: the projection (default) or the raw noisy values (the
        # AdKDD'21 paper's MRF baseline; see TrainerSettings.targets)
        raw = self.settings.targets == "raw" and not self.settings.noise_aware
        self._fit_targets = Targets(data.d, data.c) if raw else self._projected
        self._noise_targets: Targets | None = None
        # folded values: the noise sd of rows summing several source rows, and the folded
        # rows' boxes around their listed values (tables.suppression, "Noise")
        box = data.suppression
        self._row_sd = row_noise_sd(lay, box, data.noise)
        self._folded = None
        if box is not None and box.n_folded:
            self._folded = folded_bounds(box, *self._fit_targets, self._row_sd)
        # the directions along which the model does not move (pcd.gauge_groups), without
        # the rows of the suppression's boxes
        boxed = None if box is None else box.rows | (box.slack > 0)
        self._gauge = gauge_groups(lay, boxed)
        # the gauge step fits exact or noise-aware targets only: raw noisy ones contradict one
        # another along the free directions, whose exact minimum lies at |μ| ~ noise/2λ_μ
        # (harmless to the model, but past the divergence bound: Adult, Laplace ε = 1)
        self.gauge_active = self.settings.gauge and (
            data.noise is None or self.settings.noise_aware
        )
        self.mu, self.theta = self._initial_parameters()
        factory = make_chain if chain_factory is None else chain_factory
        self.chain = factory(lay, self.settings.n_gibbs, self._marginals(), self.settings.seed)
        self.recorder = History()
        self._monitors: list[Callback] = [self.recorder]
        # the held-out NLLH of X_eval, y_eval (None without them); ``held_out.live = True``
        # adds the last iterate's NLLH (stats.nllh_live) while the model is an average
        self.held_out = None if X_eval is None else HeldOutNLLH(X_eval, y_eval, layout=lay)
        if self.held_out is not None:
            self._monitors.append(self.held_out)
        self.iteration = 0
        self.d_hat = np.zeros(lay.K)
        self.c_hat = np.zeros(lay.K)
        self.status = "ready"
        self._last_nllh: float | None = None
        self.last_error: str | None = None  # why the last rejected step was rejected
        self._restart_average()

    # ------------------------------------------------------------------ set-up
    def _marginals(self) -> list[np.ndarray]:
        """Per-feature modality frequencies from the first table holding each feature."""
        lay, d = self.layout, self._projected.d
        out = []
        for f in range(lay.n_features):
            ti = next(
                (i for i, t in enumerate(lay.tables) if f in t and not lay.is_hashed(i)), None
            )
            if ti is None:  # f is only in hashed tables: start from uniform codes
                out.append(np.full(lay.n_modalities[f], 1.0 / lay.n_modalities[f]))
                continue
            t = lay.tables[ti]
            block = d[lay.offsets[ti] : lay.offsets[ti + 1]].reshape(
                [lay.n_modalities[g] for g in t]
            )
            axes = tuple(j for j, g in enumerate(t) if g != f)
            counts = block.sum(axis=axes) + 0.5
            out.append(counts / counts.sum())
        return out

    def _initial_parameters(self) -> tuple[np.ndarray, np.ndarray]:
        """μ from single tables' log-frequencies, θ = 0 but the intercept at the base rate."""
        lay, tg = self.layout, self._projected
        mu = np.zeros(lay.K)
        theta = np.zeros(lay.K)
        for ti, t in enumerate(lay.tables):
            if len(t) == 1:
                sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
                counts = tg.d[sl] + 0.5
                mu[sl] = np.log(counts / counts.sum())
        if lay.intercept:
            rate = (tg.c[0] + 0.5) / (tg.d[0] + 1.0)
            theta[0] = np.log(rate / (1.0 - rate))
        return mu, theta

    # ------------------------------------------------------------------ control
    def update(self, **changes) -> None:
        """Change step sizes, λ, gradient, precondition, clip or eval_every; next iteration uses them.

        n_gibbs, seed and noise_aware change the sampler or the targets: build a new trainer.
        """
        frozen = {"n_gibbs", "seed", "noise_aware"} & set(changes)
        if frozen:
            raise AggMRFError(
                f"{', '.join(sorted(frozen))} cannot change mid-run; build a new PCDTrainer (reset)."
            )
        new = replace(self.settings, **changes).validate()
        old, self.settings = self.settings, new
        if any(
            getattr(new, k) != getattr(old, k) for k in changes if k not in KEEP_AVERAGE_SETTINGS
        ):
            self._restart_average()

    # ------------------------------------------------------------------ iterate averaging
    def _restart_average(self) -> None:
        """Forget the average; it starts again after the documented delay (class docstring)."""
        st = self.settings
        delay = (
            st.average_start
            if st.average_start is not None
            else int(np.ceil(AVERAGE_START_RELAXATIONS / st.step_theta))
        )
        self.average_from = self.iteration + delay
        self._average_restarted_at = self.iteration
        self.n_averaged = 0
        self._average: Params | None = None
        self._velocity = Params(np.zeros(self.layout.K), np.zeros(self.layout.K))

    def _accumulate(self) -> None:
        """Fold the current iterate into the polynomial-decay average (class docstring)."""
        if self.iteration <= self.average_from:
            return
        self.n_averaged += 1
        k = self.n_averaged
        if self._average is None:
            self._average = Params(self.mu.copy(), self.theta.copy())
            return
        w = (AVERAGE_ETA + 1.0) / (k + AVERAGE_ETA)
        mu_bar, theta_bar = self._average
        mu_bar += w * (self.mu - mu_bar)
        theta_bar += w * (self.theta - theta_bar)

    @property
    def averaged(self) -> Params | None:
        """The running average (μ̄, θ̄) (copies), or None before it starts."""
        if self._average is None:
            return None
        return Params(self._average.mu.copy(), self._average.theta.copy())

    @property
    def live_model(self) -> MRFModel:
        """The last iterate (μ, θ) as a model."""
        return MRFModel(self.layout, self.mu, self.theta)

    @property
    def model(self) -> MRFModel:
        """The reported model: the iterate average with ``settings.average`` once it has
        started, else the last iterate."""
        if self.settings.average and self._average is not None:
            return MRFModel(self.layout, self._average.mu, self._average.theta)
        return self.live_model

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(X)

    @property
    def history(self) -> list[IterationStats]:
        """The statistics of every iteration so far, oldest first."""
        return self.recorder.records

    # ------------------------------------------------------------------ training
    def _targets(self, d_hat: np.ndarray, c_hat: np.ndarray) -> Targets:
        if not self.settings.noise_aware:
            return self._fit_targets
        if self._noise_targets is not None and self.iteration % self.settings.noise_refresh:
            return self._noise_targets
        from .privacy import noise_aware_targets

        floor = self.scale if self.settings.noise_prior_floor else 0.0
        self._noise_targets = Targets(
            *noise_aware_targets(self.data, d_hat, c_hat, floor, row_sd=self._row_sd)
        )
        return self._noise_targets

    def _box_targets(self, d_hat: np.ndarray, c_hat: np.ndarray, tg: Targets) -> Targets:
        """Suppressed rows as 0 ≤ d ≤ bound, folded rows in their boxes around the projected
        (or raw) listed values, never the noise-aware ones, widened by the noise
        (``suppression.folded_bounds``), with the proximal targets of
        ``suppression.box_targets``; else ``tg``."""
        box = self.data.suppression
        if box is None:
            return tg
        st = self.settings
        ratio = None
        if st.gradient != "true":
            pen_mu = 2.0 * st.lambda_mu * self.penalty.reg_mu * self.mu
            ratio = lambda t: rescaling_ratio(d_hat, t, pen_mu, st.gradient)  # noqa: E731
        if self._folded is None:  # absent rows only
            return Targets(*box_targets(d_hat, c_hat, tg.d, tg.c, box, ratio))
        pen = self.penalty  # folded rows: the proximal form (suppression.box_targets)
        step = DualStep(
            self.mu,
            self.theta,
            2.0 * st.lambda_mu * pen.reg_mu,
            2.0 * st.lambda_theta * pen.reg_theta,
            st.step_mu,
            st.step_theta,
            pen.s,
            None if st.precondition else max(pen.h_plain, pen.s),
        )
        out = box_targets(d_hat, c_hat, tg.d, tg.c, box, ratio, bounds=self._folded, step=step)
        return Targets(*out)

    def step(self, k: int = 1, callbacks: Sequence[Callback] = ()) -> list[IterationStats]:
        """Run k iterations; returns their statistics (also appended to ``history``).

        Each of ``callbacks`` is called as ``cb(self, stats)`` after each iteration (after the
        trainer's own history and held-out NLLH); one raising :class:`StopTraining` ends the
        run after that iteration.
        """
        if not isinstance(k, int | np.integer) or k < 1:
            raise AggMRFError(f"step(k) needs an integer k ≥ 1; got {k!r}.")
        out: list[IterationStats] = []
        monitors = [*self._monitors, *callbacks]
        for _ in range(int(k)):
            stats, stop = self._iterate(monitors)
            out.append(stats)
            if stop:
                break
        return out

    def fit(self, n_iter: int, callbacks: Sequence[Callback] = ()) -> PCDTrainer:
        """Run n_iter (≥ 0) iterations with ``callbacks`` (see :meth:`step`); returns self.

        The first ``fit`` since the start or the last restart of the average plans the
        average's start (class docstring, "Iterate averaging")."""
        if not isinstance(n_iter, int | np.integer) or n_iter < 0:
            raise AggMRFError(f"fit(n_iter) needs an integer n_iter ≥ 0; got {n_iter!r}.")
        if n_iter:
            if self.settings.average_start is None and self.iteration == self._average_restarted_at:
                self.average_from = max(self.average_from, self.iteration + int(n_iter) // 2)
            self.step(n_iter, callbacks)
        return self

    def _iterate(self, monitors: Sequence[Callback]) -> tuple[IterationStats, bool]:
        """One iteration: sweep, statistics, the pure update, checks, bookkeeping, callbacks.

        Returns its statistics and whether a callback asked to stop."""
        t0 = time.perf_counter()
        st = self.settings
        s = self.scale
        self.chain.sweep(self.mu, self.theta)
        d_raw, c_raw = self.chain.statistics(self.theta)
        d_hat = s * d_raw
        c_hat = s * c_raw
        tg = self._box_targets(d_hat, c_hat, self._targets(d_hat, c_hat))
        # folded rows' proximal targets assume the chain's own preconditioner (DualStep)
        st_update = st if self._folded is None else replace(st, preconditioner="samples")
        upd = pcd_update(Params(self.mu, self.theta), d_hat, c_hat, tg, st_update, self.penalty)
        velocity = self._velocity
        if st.momentum > 0.0:
            # heavy ball on θ only: on μ it amplifies the noisy drift of the directions the
            # tables leave free (a constant added to a table's μ) until |μ| passes MU_BOUND
            velocity = Params(
                velocity.mu, st.momentum * velocity.theta + (upd.params.theta - self.theta)
            )
            upd = upd._replace(params=Params(upd.params.mu, self.theta + velocity.theta))
        checked = upd
        problem = ""
        if self.gauge_active:  # numba unless the chain is the numpy build (a first start)
            compiled = getattr(self.chain, "build", "parallel") != "numpy"
            gauged = upd._replace(
                params=gauge_step(upd.params, tg, st, self.penalty, self._gauge, self.n, compiled)
            )
            # the bound is for the model, not for where the targets put the gauge
            free = gauged._replace(
                params=gauge_free(gauged.params, self.penalty, self._gauge, compiled)
            )
            problem = divergence(free, tg, st, self.layout)
            if problem and not divergence(upd, tg, st, self.layout):
                # tables that contradict one another (undeclared noise, an inconsistent
                # release): the gauge's exact minimum lies far out; go on without it
                self.gauge_active, problem = False, ""
            else:
                upd, checked = gauged, free
        new_mu, new_theta = upd.params
        problem = problem or divergence(checked, tg, st, self.layout)
        if problem:
            self._velocity = Params(np.zeros(self.layout.K), np.zeros(self.layout.K))
            self.status = "diverged"
            self.last_error = (
                f"training diverged at iteration {self.iteration + 1}: {problem} The step was "
                f"rejected: μ and θ are those of iteration {self.iteration}, the last good state; "
                "change α or λ with trainer.update(...) and continue, or reset."
            )
            raise DivergenceError(self.last_error)
        self.last_error = None
        self.mu, self.theta = new_mu, new_theta
        self._velocity = velocity
        self.d_hat, self.c_hat = d_hat, c_hat
        self.iteration += 1
        self._accumulate()

        rel = self._released
        stats = IterationStats(
            iteration=self.iteration,
            d_error=relative_l1(d_hat[rel], tg.d[rel]),
            c_error=relative_l1(c_hat[rel], tg.c[rel]),
            nllh_eval=None,
            seconds=time.perf_counter() - t0,
            theta_norm=float(np.sqrt(np.sum(self.theta[1:] ** 2))),
            step_mu=st.step_mu,
            step_theta=st.step_theta,
            lambda_mu=st.lambda_mu,
            lambda_theta=st.lambda_theta,
            n_averaged=self.n_averaged if st.average else 0,
            acceptance=getattr(self.chain, "acceptance", None),
        )
        self.status = "training"
        stop = False
        for cb in monitors:
            try:
                cb(self, stats)
            except StopTraining:
                stop = True
                break
        if stats.nllh_eval is not None:
            self._last_nllh = stats.nllh_eval
        stats.seconds = time.perf_counter() - t0
        return stats, stop

    @property
    def last_nllh(self) -> float | None:
        """The most recent held-out NLLH, or None if none was computed."""
        return self._last_nllh

    # ------------------------------------------------------------------ another process
    def shared_parts(self) -> dict[str, object]:
        """The parts that a copy of this trainer in another process keeps between calls
        instead of receiving them again (``trainer_worker``), by name: what never changes
        over the trainer's life (the data, layout, penalty, targets, the held-out records
        and their rows) and the chain's (``chain.shared_parts()``, if it has them: its
        structure, and scratch buffers that each sweep rewrites before reading)."""
        parts = {
            "data": self.data,
            "layout": self.layout,
            "penalty": self.penalty,
            "projected": self._projected,
            "fit_targets": self._fit_targets,
            "released": self._released,
            "row_sd": self._row_sd,
            "folded": self._folded,
            "gauge": self._gauge,
        }
        if self.held_out is not None:
            parts.update(held_out_X=self.held_out.X, held_out_y=self.held_out.y)
            parts["held_out_rows"] = self.held_out.rows
        chain_parts = getattr(self.chain, "shared_parts", dict)()
        parts.update({f"chain.{name}": obj for name, obj in chain_parts.items()})
        return {name: obj for name, obj in parts.items() if obj is not None}

    def absorb(self, trained: PCDTrainer) -> list[IterationStats]:
        """Take over the state of ``trained``: a copy of this trainer (with its shared
        parts, ``shared_parts()``) that started with an empty history and was stepped in
        another process.  Everything becomes the copy's but the history, which gets the
        copy's statistics appended, and the held-out monitor, which keeps its identity;
        returns those statistics."""
        new = trained.history
        for name, value in vars(trained).items():
            if name not in ("recorder", "_monitors", "held_out"):
                setattr(self, name, value)
        if self.held_out is not None and trained.held_out is not None:
            vars(self.held_out).update(vars(trained.held_out))
        self.recorder.records.extend(new)
        return new

    def history_frame(self) -> pd.DataFrame:
        """The training history, one row per iteration."""
        return self.recorder.frame()

    def settings_dict(self) -> dict:
        return asdict(self.settings)


def expected_floor(data: AggregatedData, n_gibbs: int) -> float:
    """Monte-Carlo floor of ‖d̂ − d‖₁/‖d‖₁ with n' exact samples: Σ_k sqrt(n p_k s)/Σ d_k ·√(2/π)."""
    d = np.maximum(data.d[data.layout.released], 0.0)
    s = data.n / n_gibbs
    # d̂_k = s·Binomial(n', d_k/n): E|d̂_k − d_k| ≈ √(2/π)·s·√(n' p_k (1 − p_k))
    p = np.clip(d / data.n, 0.0, 1.0)  # a noisy count may exceed n
    mad = np.sqrt(2.0 / np.pi) * s * np.sqrt(n_gibbs * p * (1.0 - p))
    return float(mad.sum() / max(d.sum(), 1e-300))
