"""The max-entropy MRF and its Persistent Contrastive Divergence trainer (Algorithm 1).

Model: π(x, y) ∝ exp(φ(x)·(μ + yθ)), so P(Y=1 | x) = σ(φ(x)·θ).

One iteration of :class:`PCDTrainer` (n' persistent Gibbs samples, s = n / n'):

1. one Gibbs sweep of the samples (kernels.GibbsChain);
2. d̂ = s Σ_i φ(x̃_i),  ĉ = s Σ_i σ(φ(x̃_i)·θ) φ(x̃_i)   (ĉ marginalised over y);
3. g_μ = d̂ − d + 2λ_μ μ;
   g_θ = (d / d̂)·ĉ − c + 2λ_θ θ   (rescaled pseudo-gradient; ``gradient="true"`` uses ĉ − c);
4. preconditioned directions g_μ / (d̂ + 2λ_μ) and g_θ / ((d / d̂)·ĉ + 2λ_θ), clipped to ±clip;
5. μ −= α_μ dir_μ;  θ −= α_θ dir_θ.

Edge cases, all tested: where d̂ = 0 the ratio d / d̂ is undefined and the θ-gradient falls
back to the true gradient (ĉ = 0 there); preconditioners are floored at s (the weight of
one Gibbs sample) so nothing is divided by zero even with λ = 0; noisy targets are first
projected (d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺)) or, noise-aware, replaced by the posterior
mean E[A | A + L = b] under the current model.  The intercept (row 0) is unregularised and
its μ (which cancels in Z) is never moved.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from .errors import AggMRFError, DivergenceError
from .kernels import make_chain
from .kernels.gibbs import sample_logits
from .metrics import nllh, relative_l1
from .tables import AggregatedData, TableLayout

__all__ = [
    "TrainerSettings",
    "default_settings",
    "MRFModel",
    "IterationStats",
    "PCDTrainer",
    "sigmoid",
    "expected_floor",
]

GRADIENTS = ("rescaled", "true")


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


@dataclass(frozen=True)
class TrainerSettings:
    """Hyper-parameters of the PCD trainer.

    n_gibbs: persistent Gibbs samples n'.  lambda_mu, lambda_theta: L2 penalties λ_μ, λ_θ.
    step_mu, step_theta: step sizes α_μ, α_θ.  gradient: "rescaled" (the paper's
    pseudo-gradient) or "true".  precondition: divide by the diagonal Hessian estimate.
    clip: bound on each coordinate of the (preconditioned) direction.  noise_aware: use
    E[A | A + L = b] as target (needs a noisy release).  seed: everything random.
    eval_every: compute the held-out NLLH every this many iterations.
    noise_refresh: MRF-N recomputes its targets E[A | A + L = b] every this many iterations
    (they follow the slowly moving model; 1 = every iteration, 3 keeps the noise-aware
    iteration under 1.5× a plain one on Adult).
    """

    n_gibbs: int = 10_000
    lambda_mu: float = 1.0
    lambda_theta: float = 50.0
    step_mu: float = 0.05
    step_theta: float = 0.01
    gradient: str = "rescaled"
    precondition: bool = True
    clip: float = 2.0
    noise_aware: bool = False
    seed: int = 0
    eval_every: int = 1
    noise_refresh: int = 3

    def validate(self) -> TrainerSettings:
        """Raise AggMRFError naming the first bad value; returns self."""
        if not isinstance(self.n_gibbs, int | np.integer) or self.n_gibbs <= 0:
            raise AggMRFError(
                f"n_gibbs (Gibbs samples n') must be a positive integer; got {self.n_gibbs}."
            )
        for name in ("lambda_mu", "lambda_theta"):
            v = getattr(self, name)
            if not np.isfinite(v) or v < 0:
                raise AggMRFError(f"{name} must be a finite number ≥ 0; got {v}.")
        for name in ("step_mu", "step_theta", "clip"):
            v = getattr(self, name)
            if not np.isfinite(v) or v <= 0:
                raise AggMRFError(f"{name} must be a finite number > 0; got {v}.")
        if self.gradient not in GRADIENTS:
            raise AggMRFError(f"gradient must be one of {GRADIENTS}; got {self.gradient!r}.")
        if not isinstance(self.eval_every, int | np.integer) or self.eval_every < 1:
            raise AggMRFError(f"eval_every must be an integer ≥ 1; got {self.eval_every}.")
        if not isinstance(self.noise_refresh, int | np.integer) or self.noise_refresh < 1:
            raise AggMRFError(f"noise_refresh must be an integer ≥ 1; got {self.noise_refresh}.")
        if not isinstance(self.seed, int | np.integer) or self.seed < 0:
            raise AggMRFError(f"seed must be a non-negative integer; got {self.seed}.")
        return self


def default_settings(layout: TableLayout, n: int, **overrides) -> TrainerSettings:
    """The documented default rule (no per-dataset constants).

    - α_θ = 1/T and α_μ = min(5/T, 1/T_f), T = number of released tables, T_f the largest
      number of released tables holding one feature (the paper's 1/T and "up to 5×" for μ;
      the cap keeps a coordinate-wise Newton step from overshooting when few tables
      share a feature, e.g. XOR: T = 6, T_f = 3);
    - λ_μ = 1 (the paper: keep it low, 1 prevents numerical trouble);
    - λ_θ = T / 2: the logit of a record is a sum of T coefficients, so the penalty
      per coefficient must grow like T to shrink the logit by the same amount whatever
      the number of tables (Adult: T = 105 → 52.5; Bank: T = 210 → 105);
    - n' = min(n, 10 000) Gibbs samples (the paper used 10 000 on Adult and Bank).
    """
    T = max(layout.n_released_tables, 1)
    T_f = max(sum(1 for t in layout.tables if f in t) for f in range(layout.n_features))
    base = TrainerSettings(
        n_gibbs=int(min(max(n, 1), 10_000)),
        lambda_mu=1.0,
        lambda_theta=T / 2.0,
        step_mu=min(5.0 / T, 1.0 / T_f),
        step_theta=1.0 / T,
    )
    return replace(base, **overrides).validate()


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


@dataclass
class IterationStats:
    """What one PCD iteration reports."""

    iteration: int
    d_error: float  # ‖d̂ − d‖₁ / ‖d‖₁ over released rows
    c_error: float  # ‖ĉ − c‖₁ / ‖c‖₁ over released rows
    nllh_eval: float | None  # held-out NLLH; None on iterations where it was not computed
    seconds: float  # wall time of this iteration
    theta_norm: float
    step_mu: float
    step_theta: float
    lambda_mu: float
    lambda_theta: float


@dataclass
class _Targets:
    d: np.ndarray
    c: np.ndarray


class PCDTrainer:
    """Incremental PCD training of the max-entropy MRF on aggregated data.

    Parameters
    ----------
    data : AggregatedData (possibly a noisy release)
    settings : TrainerSettings; None → default_settings(layout, n)
    X_eval, y_eval : optional held-out coded records (n_eval, D) and labels, for NLLH.

    Use ``step(k)`` to run k iterations (returns their IterationStats) and
    ``update(...)`` to change step sizes or λ between steps; ``model`` is the current fit.
    """

    def __init__(
        self,
        data: AggregatedData,
        settings: TrainerSettings | None = None,
        X_eval: np.ndarray | None = None,
        y_eval: np.ndarray | None = None,
    ) -> None:
        if not isinstance(data, AggregatedData):
            raise AggMRFError("data must be an AggregatedData (see tables.aggregate).")
        self.data = data
        self.layout = lay = data.layout
        self.settings = (settings or default_settings(lay, data.n)).validate()
        if self.settings.noise_aware and data.noise is None:
            raise AggMRFError(
                "noise_aware=True needs a noisy release (privacy.release); this data has no noise."
            )
        self.n = data.n
        self.scale = self.n / self.settings.n_gibbs
        self._released = lay.released
        self._reg_theta = np.ones(lay.K)
        self._reg_mu = np.ones(lay.K)
        if lay.intercept:
            self._reg_theta[0] = 0.0
            self._reg_mu[0] = 0.0
        self._projected = self._project(data.d, data.c)
        self._noise_targets: _Targets | None = None
        self.mu, self.theta = self._initial_parameters()
        self.chain = make_chain(lay, self.settings.n_gibbs, self._marginals(), self.settings.seed)
        self._eval_rows = None
        if X_eval is not None:
            y_eval = np.asarray(y_eval)
            if y_eval.shape != (np.asarray(X_eval).shape[0],):
                raise AggMRFError("y_eval must have one label per row of X_eval.")
            self._eval_rows = lay.rows(X_eval).astype(np.int32)
            self._y_eval = y_eval.astype(np.float64)
        self.iteration = 0
        self.history: list[IterationStats] = []
        self.d_hat = np.zeros(lay.K)
        self.c_hat = np.zeros(lay.K)
        self.status = "ready"
        self._last_nllh: float | None = None

    # ------------------------------------------------------------------ set-up
    @staticmethod
    def _project(d: np.ndarray, c: np.ndarray) -> _Targets:
        d_plus = np.maximum(d, 0.0)
        return _Targets(d_plus, np.clip(c, 0.0, d_plus))

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
        self.settings = replace(self.settings, **changes).validate()

    @property
    def model(self) -> MRFModel:
        return MRFModel(self.layout, self.mu, self.theta)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(X)

    # ------------------------------------------------------------------ training
    def _targets(self, d_hat: np.ndarray, c_hat: np.ndarray) -> _Targets:
        if not self.settings.noise_aware:
            return self._projected
        if self._noise_targets is not None and self.iteration % self.settings.noise_refresh:
            return self._noise_targets
        from .privacy import posterior_mean_counts

        mech = self.data.noise
        rel = self._released
        d_t = self._projected.d.copy()
        c_t = self._projected.c.copy()
        d_t[rel] = posterior_mean_counts(self.data.d[rel], d_hat[rel], self.n, mech)
        c_t[rel] = posterior_mean_counts(self.data.c[rel], c_hat[rel], self.n, mech)
        self._noise_targets = _Targets(d_t, np.minimum(c_t, d_t))
        return self._noise_targets

    def step(self, k: int = 1) -> list[IterationStats]:
        """Run k iterations; returns their statistics (also appended to ``history``)."""
        if not isinstance(k, int | np.integer) or k < 1:
            raise AggMRFError(f"step(k) needs an integer k ≥ 1; got {k!r}.")
        out = []
        for _ in range(int(k)):
            out.append(self._one_iteration())
        return out

    def fit(self, n_iter: int, callback=None) -> PCDTrainer:
        """Run n_iter iterations; callback(stats) after each."""
        for _ in range(int(n_iter)):
            stats = self._one_iteration()
            if callback is not None:
                callback(stats)
        return self

    def _one_iteration(self) -> IterationStats:
        t0 = time.perf_counter()
        st = self.settings
        s = self.scale
        self.chain.sweep(self.mu, self.theta)
        d_raw, c_raw = self.chain.statistics(self.theta)
        d_hat = s * d_raw
        c_hat = s * c_raw
        tg = self._targets(d_hat, c_hat)

        g_mu = d_hat - tg.d + 2.0 * st.lambda_mu * self._reg_mu * self.mu
        if st.gradient == "rescaled":
            positive = d_hat > 0
            ratio = np.divide(tg.d, d_hat, out=np.ones_like(d_hat), where=positive)
            c_model = ratio * c_hat
        else:
            c_model = c_hat
        lam_theta = 2.0 * st.lambda_theta * self._reg_theta
        g_theta = c_model - tg.c + lam_theta * self.theta

        if st.precondition:
            h_mu = np.maximum(d_hat + 2.0 * st.lambda_mu * self._reg_mu, s)
            h_theta = np.maximum(c_model + lam_theta, s)
        else:
            h_mu = h_theta = max(self.n * self.layout.n_tables / self.layout.K, s)
        dir_mu = np.clip(g_mu / h_mu, -st.clip, st.clip)
        dir_theta = np.clip(g_theta / h_theta, -st.clip, st.clip)
        if self.layout.intercept:
            dir_mu[0] = 0.0
        new_mu = self.mu - st.step_mu * dir_mu
        new_theta = self.theta - st.step_theta * dir_theta
        if not (np.all(np.isfinite(new_mu)) and np.all(np.isfinite(new_theta))):
            self.status = "diverged"
            raise DivergenceError(
                f"training diverged at iteration {self.iteration + 1}: parameters stopped being finite. "
                "Reduce the step sizes α_μ, α_θ or increase λ_μ, λ_θ, then reset."
            )
        self.mu, self.theta = new_mu, new_theta
        self.d_hat, self.c_hat = d_hat, c_hat
        self.iteration += 1

        rel = self._released
        nl = None
        if self._eval_rows is not None and (
            self.iteration % st.eval_every == 0 or self.iteration == 1
        ):
            p = sigmoid(sample_logits(self._eval_rows, self.theta))
            nl = nllh(self._y_eval, p)
            self._last_nllh = nl
        stats = IterationStats(
            iteration=self.iteration,
            d_error=relative_l1(d_hat[rel], tg.d[rel]),
            c_error=relative_l1(c_hat[rel], tg.c[rel]),
            nllh_eval=nl,
            seconds=time.perf_counter() - t0,
            theta_norm=float(np.sqrt(np.sum(self.theta[1:] ** 2))),
            step_mu=st.step_mu,
            step_theta=st.step_theta,
            lambda_mu=st.lambda_mu,
            lambda_theta=st.lambda_theta,
        )
        self.history.append(stats)
        self.status = "training"
        worst_theta, worst_mu = np.max(np.abs(self.theta)), np.max(np.abs(self.mu))
        if worst_theta > 50 or worst_mu > 200:
            self.status = "diverged"
            what = (
                f"|θ| reached {worst_theta:.0f}"
                if worst_theta > 50
                else f"|μ| reached {worst_mu:.0f}"
            )
            raise DivergenceError(
                f"training diverged at iteration {self.iteration}: {what}. "
                "Reduce the step sizes α_μ, α_θ or increase λ_μ, λ_θ, then reset."
            )
        return stats

    @property
    def last_nllh(self) -> float | None:
        """The most recent held-out NLLH, or None if none was computed."""
        return self._last_nllh

    def history_frame(self) -> pd.DataFrame:
        """The training history, one row per iteration."""
        return pd.DataFrame([asdict(h) for h in self.history])

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
