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

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from .callbacks import Callback, HeldOutNLLH, History, StopTraining
from .errors import AggMRFError, DivergenceError
from .kernels import make_chain, sample_logits
from .kernels.sums import relative_l1_pair, squares_sum
from .kernels.update import UpdateOutputs, average_step, momentum_step, update_buffers
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
    initial_marginals,
    initial_parameters,
    pcd_update,
    rescaling_ratio,
)
from .settings import GRADIENTS
from .tables import AggregatedData, TableLayout
from .tables.suppression import DualStep, box_targets, folded_bounds, row_noise_sd
from .trainer_settings import (
    ITERATION_RELAXATIONS,
    LAMBDA_THETA_CAP,
    MAX_GIBBS,
    MAX_RECORDS_PER_SAMPLE,
    MIN_GIBBS,
    MIN_ITERATIONS,
    TrainerSettings,
    cell_penalty_weights,
    default_gibbs,
    default_iterations,
    default_settings,
    noise_raises_penalty,
    release_noise_sd,
)

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
    "TrainerState",
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

# changing any other setting with PCDTrainer.update restarts the iterate average
KEEP_AVERAGE_SETTINGS = ("eval_every", "average")
# settings that change the sampler or the targets: ``PCDTrainer.update`` refuses them
FROZEN_SETTINGS = frozenset(
    ("n_gibbs", "seed", "noise_aware", "intercept_penalty", "cell_penalty", "sweep_sites")
)
AVERAGE_START_RELAXATIONS = 2.0  # the average starts after ⌈2/α_θ⌉ iterations
AVERAGE_ETA = 2.0  # polynomial-decay averaging: iterate k of the average weighs ∝ k^η


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


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


class IterationBuffers(NamedTuple):
    """The (K,) arrays one iteration writes before it reads them, kept by the trainer across
    iterations instead of made afresh (≈ 30 float64 (K,) arrays per iteration otherwise: at
    K = 5.7·10⁶, 46 MB each).  None of them holds state: the parameters, statistics,
    average and velocity that the trainer keeps are separate arrays."""

    update: UpdateOutputs  # pcd_update's ten results (θ + the momentum's step in new_theta)
    free: Params  # gauge_free's (μ, θ)
    velocity: np.ndarray  # the momentum's next velocity of θ, before it is accepted
    released_rows: np.ndarray  # int64, the released rows (np.flatnonzero of the mask)


def _iteration_buffers(scratch: dict, K: int, released: np.ndarray) -> IterationBuffers:
    """``scratch["buffers"]``, made for K rows and the released mask on the first call."""
    if "buffers" not in scratch:
        free = Params(np.empty(K), np.empty(K))
        scratch["buffers"] = IterationBuffers(
            update_buffers(K), free, np.empty(K), np.flatnonzero(released)
        )
    return scratch["buffers"]


class TrainerState(NamedTuple):
    """Everything a :class:`PCDTrainer` changes as it trains or is updated, as a value
    (``PCDTrainer.state()`` / ``restore()``).  Not in it: what stays fixed over the
    trainer's life (data, layout, penalty, targets, held-out records) and the history."""

    settings: TrainerSettings  # in effect (``update`` replaces them)
    mu: np.ndarray  # (K,) the last iterate
    theta: np.ndarray  # (K,)
    d_hat: np.ndarray  # (K,) the last iteration's statistics
    c_hat: np.ndarray  # (K,)
    velocity: Params  # the momentum's
    average: Params | None  # the iterate average (None before it starts)
    n_averaged: int  # iterates in the average
    average_from: int  # iterates after this iteration enter the average
    average_restarted_at: int  # the iteration of the average's last restart
    iteration: int  # iterations run
    status: str  # "ready", "training" or "diverged"
    last_nllh: float | None  # the last held-out NLLH
    last_error: str | None  # why the last rejected step was rejected
    gauge_active: bool  # the gauge step runs
    noise_targets: Targets | None  # noise-aware targets of the last refresh
    held_out: tuple  # (last, last_live) of the held-out monitor ((None, None) without one)
    chain: object  # the Gibbs chain: its samples, labels and sweep count


def _copied(state: TrainerState) -> TrainerState:
    """``state`` with its arrays and its chain copied; the chain's shared parts
    (``chain.shared_parts()``: its structure, and buffers each sweep rewrites before
    reading them) are kept, not copied."""

    def arrays(pair):
        return None if pair is None else type(pair)(*(np.array(a, copy=True) for a in pair))

    keep = getattr(state.chain, "shared_parts", dict)()
    return state._replace(
        mu=state.mu.copy(),
        theta=state.theta.copy(),
        d_hat=state.d_hat.copy(),
        c_hat=state.c_hat.copy(),
        velocity=arrays(state.velocity),
        average=arrays(state.average),
        noise_targets=arrays(state.noise_targets),
        chain=copy.deepcopy(state.chain, {id(p): p for p in keep.values()}),
    )


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
    every iteration so far; ``state()`` everything that training changes, as a value
    (:class:`TrainerState`), and ``restore(state)`` continues from one (e.g. a copy of the
    trainer stepped in another process, ``trainer_worker``).

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
        # as built (``update`` replaces ``settings``): with the data and the held-out
        # records, what a copy of the trainer is rebuilt from (``trainer_worker``)
        self.initial_settings = self.settings
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
            reg_theta[0] = self.settings.intercept_penalty  # (0 but on raw noisy tables)
            reg_mu[0] = 0.0
        if self.settings.cell_penalty:  # MRF-N: rows its targets hardly shrink get the rule's λ
            m_mu, m_theta = cell_penalty_weights(data, self.settings)
            reg_mu, reg_theta = reg_mu * m_mu, reg_theta * m_theta
        self.penalty = Penalty(
            reg_mu, reg_theta, bool(lay.intercept), self.scale, self.n * lay.n_tables / lay.K
        )
        projected = data.projected()
        self._projected = Targets(projected.d, projected.c)
        # the release's label rate p̄ = Σc⁺/Σd⁺ over the released rows (MRF-N's label floor)
        total = float(projected.d[self._released].sum())
        rate = float(projected.c[self._released].sum()) / total if total > 0 else 0.5
        self.label_rate = min(max(rate, 0.0), 1.0)
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
        # the gauge step fits exact, nearly exact or noise-aware targets only: raw noisy ones
        # contradict one another along the free directions, whose exact minimum lies at
        # |μ| ~ noise/2λ_μ (harmless to the model, but past the divergence bound: Adult,
        # Laplace ε = 1); "noisy" as the default rule sees it (the noise raises λ)
        T, sd = lay.n_released_tables, release_noise_sd(data)
        raw_noisy = not self.settings.noise_aware and noise_raises_penalty(T, sd)
        self.gauge_active = self.settings.gauge and not raw_noisy
        self.mu, self.theta = initial_parameters(lay, self._projected)
        factory = make_chain if chain_factory is None else chain_factory
        st = self.settings  # sites passed only when set: any chain factory takes the rest
        sites = {} if st.sweep_sites is None else {"sites": st.sweep_sites}
        self.chain = factory(
            lay, st.n_gibbs, initial_marginals(lay, self._projected.d), st.seed, **sites
        )
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
        self._scratch: dict = {}  # IterationBuffers: no state (a copy makes its own)
        self._restart_average()

    # ------------------------------------------------------------------ control
    def update(self, **changes) -> None:
        """Change step sizes, λ, gradient, precondition, clip or eval_every; next iteration uses them.

        n_gibbs, seed and noise_aware change the sampler or the targets: build a new trainer.
        """
        frozen = FROZEN_SETTINGS & set(changes)
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
        average_step(mu_bar, self.mu, w)  # μ̄ += w (μ − μ̄), in place
        average_step(theta_bar, self.theta, w)

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
        # the label sums' floor: one sample's weight, or its expected label sum s·p̄
        rate = self.label_rate if self.settings.label_floor == "rate" else 1.0
        self._noise_targets = Targets(
            *noise_aware_targets(
                self.data, d_hat, c_hat, floor, row_sd=self._row_sd, label_floor=floor * rate
            )
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

        Returns its statistics and whether a callback asked to stop.  Intermediate (K,)
        arrays go into :class:`IterationBuffers`; the μ, θ, d̂, ĉ kept are new arrays."""
        t0 = time.perf_counter()
        st = self.settings
        s = self.scale
        buf = _iteration_buffers(self._scratch, self.layout.K, self._released)
        self.chain.sweep(self.mu, self.theta)
        d_raw, c_raw = self.chain.statistics(self.theta)
        d_hat = s * d_raw
        c_hat = s * c_raw
        tg = self._box_targets(d_hat, c_hat, self._targets(d_hat, c_hat))
        # folded rows' proximal targets assume the chain's own preconditioner (DualStep)
        st_update = st if self._folded is None else replace(st, preconditioner="samples")
        upd = pcd_update(
            Params(self.mu, self.theta), d_hat, c_hat, tg, st_update, self.penalty, buf.update
        )
        velocity = self._velocity
        if st.momentum > 0.0:
            # heavy ball on θ only: on μ it amplifies the noisy drift of the directions the
            # tables leave free (a constant added to a table's μ) until |μ| passes MU_BOUND;
            # v' = β v + (θ_new − θ) into the spare velocity, θ + v' in place of θ_new
            ball = upd.params.theta
            momentum_step(self.theta, ball, velocity.theta, st.momentum, buf.velocity, ball)
            velocity = Params(velocity.mu, buf.velocity)
        checked, problem, gauged = upd, "", None
        if self.gauge_active:  # numba unless the chain is the numpy build (a first start)
            compiled = getattr(self.chain, "build", "parallel") != "numpy"
            gauged = upd._replace(
                params=gauge_step(upd.params, tg, st, self.penalty, self._gauge, self.n, compiled)
            )
            # the bound is for the model, not for where the targets put the gauge
            free = gauged._replace(
                params=gauge_free(gauged.params, self.penalty, self._gauge, compiled, buf.free)
            )
            problem = divergence(free, tg, st, self.layout)
            if problem and not divergence(upd, tg, st, self.layout):
                # tables that contradict one another (undeclared noise, an inconsistent
                # release): the gauge's exact minimum lies far out; go on without it
                self.gauge_active, problem, gauged = False, "", None
            else:
                upd, checked = gauged, free
        new_mu, new_theta = upd.params
        if gauged is None:  # (with the gauge step, ``free`` was checked above)
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
        if gauged is None:  # (the update's buffers: the trainer keeps copies)
            new_mu, new_theta = new_mu.copy(), new_theta.copy()
        self.mu, self.theta = new_mu, new_theta
        if velocity is not self._velocity:  # the spare becomes the velocity, and back
            self._scratch["buffers"] = buf = buf._replace(velocity=self._velocity.theta)
            self._velocity = velocity
        self.d_hat, self.c_hat = d_hat, c_hat
        self.iteration += 1
        self._accumulate()

        d_error, c_error = relative_l1_pair(d_hat, tg.d, c_hat, tg.c, buf.released_rows)
        stats = IterationStats(
            iteration=self.iteration,
            d_error=d_error,
            c_error=c_error,
            nllh_eval=None,
            seconds=time.perf_counter() - t0,
            theta_norm=float(np.sqrt(squares_sum(self.theta, 1))),
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

    def state(self) -> TrainerState:
        """A copy of everything the trainer changes as it trains or is updated
        (:class:`TrainerState`): training on does not touch it, and :meth:`restore` of it,
        here or in a copy of this trainer (another process), continues bit for bit."""
        ho = self.held_out
        live = TrainerState(
            settings=self.settings,
            mu=self.mu,
            theta=self.theta,
            d_hat=self.d_hat,
            c_hat=self.c_hat,
            velocity=self._velocity,
            average=self._average,
            n_averaged=self.n_averaged,
            average_from=self.average_from,
            average_restarted_at=self._average_restarted_at,
            iteration=self.iteration,
            status=self.status,
            last_nllh=self._last_nllh,
            last_error=self.last_error,
            gauge_active=self.gauge_active,
            noise_targets=self._noise_targets,
            held_out=(None, None) if ho is None else (ho.last, ho.last_live),
            chain=self.chain,
        )
        return _copied(live)

    def restore(self, state: TrainerState, history: Sequence[IterationStats] = ()) -> None:
        """Continue from ``state``, taken by :meth:`state` of this trainer or of a copy of
        it (same data, layout and held-out records); ``history``, the statistics of the
        iterations that led there, is appended to the history (which is otherwise kept).
        The state is copied: it can be restored again."""
        s = _copied(state)
        self.settings, self.chain, self.iteration = s.settings, s.chain, s.iteration
        self.mu, self.theta, self.d_hat, self.c_hat = s.mu, s.theta, s.d_hat, s.c_hat
        self._velocity, self._average, self.n_averaged = s.velocity, s.average, s.n_averaged
        self.average_from, self._average_restarted_at = s.average_from, s.average_restarted_at
        self.status, self._last_nllh, self.last_error = s.status, s.last_nllh, s.last_error
        self.gauge_active, self._noise_targets = s.gauge_active, s.noise_targets
        if self.held_out is not None:
            self.held_out.last, self.held_out.last_live = s.held_out
        self.recorder.records.extend(history)

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
