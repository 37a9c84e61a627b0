"""Model selection without records: score a model on held-out *tables*, choose λθ from tables alone.

Two aggregated-only metrics
---------------------------
**Cell-level (aggregated NLLH)** — ``aggregated_nllh``.  A held-out table t (a second release,
a table left out of training, or the other half of a thinned release) gives, for each row k, a
count d_k and a label sum c_k.  The model predicts, for the records of row k, the rate
r_k = E_π[σ(φ(x)·θ) | x in row k], estimated from the model's own Gibbs samples x̃ (the
trainer's persistent chain plus ``EXTRA_SWEEPS`` = 4 sweeps at the final parameters)::

    r_k = (Σ_{i: x̃_i in k} σ(φ(x̃_i)·θ) + a·r̄) / (#{i: x̃_i in k} + a)      (a = 1 sample)

shrunk towards the samples' mean rate r̄ so that rows without samples get a defined rate.
The label sums are scored under c_k ~ Binomial(d_k, r_k) and normalised like NLLH against
the base rate p₀ = Σc/Σd of the same tables::

    aggregated NLLH = 1 − Σ_k [c_k log r_k + (d_k − c_k) log(1 − r_k)]
                        / Σ_k [c_k log p₀ + (d_k − c_k) log(1 − p₀)]

(the binomial coefficients cancel).  Noisy held-out tables are projected first
(d⁺ = max(d, 0), c⁺ = clip(c, 0, d⁺)).

This metric ranks *over*-regularised models correctly but is blind to
*under*-regularisation: the noise of overconfident record-level logits averages out
within the cells of the tables (docs/lambda_auto.md shows it on Adult and Bank).

**Record-level, cross-fit (cross-fit NLLH)** — ``cross_fit_nllh``.  Fit a *reference* model on
independent tables (the other half of a thinned release, or a second release) with the least
regularisation of the grid; it stands in for the unknown P(Y = 1 | x), its Gibbs samples for
the records.  A model with logits z is scored on the reference's samples x̃_i against the
reference's soft labels q_i = σ(z_ref(x̃_i))::

    cross-fit NLLH = 1 − mean_i [−q_i log σ(z(x̃_i)) − (1 − q_i) log(1 − σ(z(x̃_i)))] / h(p₀)

with h the binary entropy.  The loss is linear in q, so the reference's own estimation noise
(independent of the scored model) cancels in expectation: what remains is the scored model's
record-level log loss where the reference is unbiased, and the least-regularised reference is
the least shrunk.  Only tables were used to fit both models.

Choosing λθ (``choose_lambda_theta``, behind ``--lambda-theta auto``)
-------------------------------------------------------------------
The grid is a list of multipliers m of λθ = T/2 (the default rule of ``mrf.default_settings``
below its cap of 50, which applies only when T > 100; the grid ignores the cap;
default m ∈ {8, 4, 2, 1, 1/2, 1/4, 1/8, 1/16}), so a setting means the same shrinkage of the
logit whatever the number of tables T.  A *path* fits the grid from the largest λθ to the
smallest, each point warm-started from the previous one (μ, θ and the persistent chain,
``trainer.update(lambda_theta=...)``): ``iterations/2`` PCD iterations for the first point,
``iterations/10`` for each further one (``fit_path``).

* default, ``method="split"`` (``split_cv``): thin the release into two halves as if its
  records had been split at random (``split_release``); fit a path on each half (independent
  chains), point m with λθ = ½·m·T/2 (half the records, half the penalty: the same balance
  against the log-likelihood as m·T/2 on the whole release); score each half's point m by its
  cross-fit NLLH against the *other* half's last (least-regularised) point, pooled over both
  directions; choose the best m and apply m·T/2 to the whole release;
* with a second release (``validation=``, ``--validation-tables``): fit the path on the whole
  release and a reference on the second release (λθ of the smallest m, scaled by its size),
  and score the path's points by their cross-fit NLLH against that reference;
* ``method="leave-tables-out"``: hold out groups of pair tables, fit on the others, score the
  held-out tables with the cell-level metric (kept for comparison: it prefers the smallest λθ
  of the grid on Adult and Bank, see above).

Each table also reports the cell-level score (``cell_score``) of the same fits.  ``rule="max"``
(default) takes the best score; ``rule="one-se"`` the largest λθ within one standard error of
it (``se``: paired over samples or tables taken as independent; on Adult and Bank it is so
small that both rules agree).

Cost: two paths of iterations/2 + 7·iterations/10 PCD iterations on half-size releases
(about 2.5 training runs), then the final run on the whole release; measured, with the
choices on Adult and Bank, in docs/lambda_auto.md (``benchmarks/lambda_auto.py``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .errors import AggMRFError
from .kernels import sample_logits
from .mrf import MRFModel, PCDTrainer, default_settings, sigmoid
from .privacy import GaussianMechanism, scaled_noise
from .suppression import split_suppression, sub_suppression
from .tables import AggregatedData, TableLayout

__all__ = [
    "DEFAULT_MULTIPLIERS",
    "AggregatedScore",
    "LambdaChoice",
    "sample_codes",
    "predicted_rates",
    "aggregated_nllh",
    "sub_release",
    "split_release",
    "lambda_grid",
    "pick",
    "split_cv",
    "cross_fit_losses",
    "cross_fit_nllh",
    "fit_path",
    "leave_tables_out",
    "choose_lambda_theta",
    "Reference",
    "fit_reference",
]

DEFAULT_MULTIPLIERS = (8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625)
METHODS = ("split", "leave-tables-out")
RULES = ("one-se", "max")
EXTRA_SWEEPS = 4
PRIOR_SAMPLES = 1.0
_CLIP = 1e-6


# ---------------------------------------------------------------------- samples and rates
def sample_codes(trainer: PCDTrainer, extra_sweeps: int = EXTRA_SWEEPS) -> np.ndarray:
    """The chain's samples plus ``extra_sweeps`` more sweeps at the current (μ, θ), int32 (m, D).

    The extra sweeps run on a copy of the chain: the trainer is left untouched.
    """
    if not isinstance(trainer, PCDTrainer):
        raise AggMRFError("sample_codes needs a PCDTrainer.")
    out = [trainer.chain.codes.copy()]
    if extra_sweeps > 0:
        chain = copy.deepcopy(trainer.chain)
        for _ in range(int(extra_sweeps)):
            chain.sweep(trainer.mu, trainer.theta, statistics=False)
            out.append(chain.codes.copy())
    return np.concatenate(out, axis=0)


def _check_same_features(a: TableLayout, b: TableLayout) -> None:
    if list(a.feature_names) != list(b.feature_names) or not np.array_equal(
        a.n_modalities, b.n_modalities
    ):
        raise AggMRFError(
            "the held-out tables and the model have different features or modalities "
            f"({a.feature_names} with {a.n_modalities.tolist()} vs {b.feature_names} with "
            f"{b.n_modalities.tolist()}); a second release must use the training release's schema "
            "(aggregate --schema release.json)."
        )


def _same_tables(a: TableLayout, b: TableLayout) -> bool:
    return a is b or (
        a.tables == b.tables
        and a.intercept == b.intercept
        and np.array_equal(a.n_modalities, b.n_modalities)
    )


def _logits(model: MRFModel, codes: np.ndarray, layout: TableLayout, rows: np.ndarray):
    """φ(x)·θ of ``model`` on ``codes``, reusing ``rows`` (= layout.rows(codes)) if it fits."""
    if _same_tables(model.layout, layout):
        return sample_logits(rows, model.theta)
    return model.decision_function(codes)


def predicted_rates(
    model: MRFModel,
    codes: np.ndarray,
    layout: TableLayout,
    tables: Sequence[int],
    prior_samples: float = PRIOR_SAMPLES,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Model rate and number of samples per row of each table of ``layout`` in ``tables``.

    ``codes``: Gibbs samples of the model (n', D); returns {t: (rates (size_t,), samples (size_t,))}.
    """
    _check_same_features(model.layout, layout)
    R = layout.rows(codes)  # (n, n_tables) global rows of every table, one pass
    p = sigmoid(_logits(model, codes, layout, R))
    mean = float(p.mean()) if p.size else 0.5
    T = R.shape[1]
    cnt_all = np.bincount(R.ravel(), minlength=layout.K).astype(np.float64)
    sum_all = np.bincount(R.ravel(), weights=np.repeat(p, T), minlength=layout.K)
    out = {}
    for ti in tables:
        sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
        cnt, s = cnt_all[sl], sum_all[sl]
        out[ti] = ((s + prior_samples * mean) / (cnt + prior_samples), cnt)
    return out


@dataclass
class AggregatedScore:
    """Aggregated NLLH (pooled over the scored tables) and one row per table."""

    score: float
    per_table: pd.DataFrame
    loglik: float = 0.0
    base_loglik: float = 0.0


def _binomial_ll(d: np.ndarray, c: np.ndarray, r: np.ndarray) -> float:
    r = np.clip(r, _CLIP, 1.0 - _CLIP)
    return float(np.sum(c * np.log(r) + (d - c) * np.log1p(-r)))


def aggregated_nllh(
    model: MRFModel,
    codes: np.ndarray,
    heldout: AggregatedData,
    tables: Sequence[int | str | Sequence] | None = None,
    prior_samples: float = PRIOR_SAMPLES,
) -> AggregatedScore:
    """The aggregated-only validation metric of ``model`` on tables of ``heldout``.

    ``codes``: the model's Gibbs samples (``sample_codes(trainer)``); ``tables``: indices (or
    features) of ``heldout``'s tables to score (default: every released table).
    """
    if not isinstance(heldout, AggregatedData):
        raise AggMRFError("heldout must be an AggregatedData (e.g. a second release).")
    lay = heldout.layout
    if tables is None:
        idx = [ti for ti, t in enumerate(lay.tables) if t]
    else:
        idx = [
            int(t)
            if isinstance(t, int | np.integer)
            else lay.table_index(t if not isinstance(t, str) else [t])
            for t in tables
        ]
    if not idx:
        raise AggMRFError("no table to score.")
    rates = predicted_rates(model, codes, lay, idx, prior_samples)
    projected = heldout.projected()  # noisy tables: d⁺, c⁺
    d_all, c_all = projected.d, projected.c
    D = sum(float(d_all[lay.offsets[ti] : lay.offsets[ti + 1]].sum()) for ti in idx)
    C = sum(float(c_all[lay.offsets[ti] : lay.offsets[ti + 1]].sum()) for ti in idx)
    if D <= 0 or not 0 < C < D:
        raise AggMRFError(
            "the held-out tables need records of both classes (0 < total label sum < total count)."
        )
    p0 = C / D
    rows = []
    ll_sum = base_sum = 0.0
    for ti in idx:
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        d, c = d_all[sl], c_all[sl]
        r, cnt = rates[ti]
        ll = _binomial_ll(d, c, r)
        base = _binomial_ll(d, c, np.full_like(r, p0))
        ll_sum += ll
        base_sum += base
        rows.append(
            {
                "table": lay.table_name(lay.tables[ti]),
                "aggregated_nllh": 1.0 - ll / base if base < 0 else 0.0,
                "records": float(d.sum()),
                "rows": int(d.size),
                "rows_without_samples": int(np.sum((cnt == 0) & (d > 0))),
                "loglik": ll,
                "base_loglik": base,
            }
        )
    return AggregatedScore(1.0 - ll_sum / base_sum, pd.DataFrame(rows), ll_sum, base_sum)


# ---------------------------------------------------------------------- sub-releases
def sub_release(agg: AggregatedData, keep: Sequence[int]) -> AggregatedData:
    """The release restricted to the tables ``keep`` (indices into ``agg.layout.tables``).

    The intercept is kept; the noise mechanism (per-cell noise level) is carried over.
    """
    lay = agg.layout
    keep = sorted({int(t) for t in keep if lay.tables[int(t)]})
    if not keep:
        raise AggMRFError("a sub-release needs at least one released table.")
    sub = lay.with_tables([lay.tables[t] for t in keep])  # keeps hash sizes
    parts = ([np.arange(1)] if lay.intercept else []) + [
        np.arange(lay.offsets[t], lay.offsets[t + 1]) for t in keep
    ]
    rows = np.concatenate(parts)
    box = sub_suppression(agg.suppression, lay, keep)  # suppressed rows stay 0 ≤ d ≤ k
    return AggregatedData(
        sub, agg.d[rows], agg.c[rows], agg.n, noise=agg.noise, meta=dict(agg.meta), suppression=box
    )


def split_release(
    agg: AggregatedData, fraction: float = 0.5, seed: int = 0, fission: bool = True
) -> tuple[AggregatedData, AggregatedData]:
    """Split a release into two as if its records had been split at random (thinning).

    Each row's records are split independently per table: d_A ~ Binomial(d, fraction),
    c_A ~ Hypergeometric(c positives among d, d_A drawn); B = the rest.  Within a table
    this is exactly a random split of the table's records; across tables the splits are
    independent, so A's tables agree with each other only up to sampling noise (the
    trainer tolerates that, as it tolerates privacy noise).

    Noisy releases b = A + L (noise sd σ) are projected (d⁺, c⁺) and rounded first, then
    thinned the same way: with f = ``fraction``, half A's value is ≈ A_A + f·L (a random
    f-share A_A of the true records plus f·L) and half B's ≈ A_B + (1 − f)·L: the same L,
    so the two halves' noises are perfectly correlated.  Hence:

    * Gaussian noise, ``fission=True`` (default; Gaussian data fission): add W to every
      released value of A and subtract it from B, W ~ N(0, f(1 − f)σ²) i.i.d. (its own
      random stream).  The halves' noises f·L + W and (1 − f)·L − W are then independent,
      with sd σ√f and σ√(1 − f): σ/√2 each for f = ½.  Each half carries that mechanism.
    * Laplace noise (no such split exists) or ``fission=False``: each half carries the
      mechanism scaled by its share, f·σ and (1 − f)·σ (σ/2, Laplace scale b/2, for f = ½),
      and the two noises are the same f·L, (1 − f)·L, correlated.

    In both cases the mechanism is ``privacy.scaled_noise`` of the release's (what MRF-N on
    a half must assume); thinning the noise itself adds a binomial variance ≈ f(1 − f)|L|,
    negligible once σ ≳ 2.

    Suppressed rows (``agg.suppression``) stay suppressed in both halves, with the bound
    scaled to f·k and (1 − f)·k (``suppression.split_suppression`` says why), and their d, c
    stay 0; the halves' n (the intercept) comes from the tables without a threshold.
    """
    if not 0 < fraction < 1:
        raise AggMRFError(f"fraction must be in (0, 1); got {fraction!r}.")
    lay = agg.layout
    rel = lay.released
    d = np.round(np.maximum(agg.d, 0.0))
    c = np.minimum(np.round(np.clip(agg.c, 0.0, None)), d)
    rng = np.random.default_rng(seed)
    dA = d.copy()
    cA = c.copy()
    dA[rel] = rng.binomial(d[rel].astype(np.int64), fraction)
    cA[rel] = rng.hypergeometric(
        c[rel].astype(np.int64), (d[rel] - c[rel]).astype(np.int64), dA[rel].astype(np.int64)
    )
    parts = [
        (dA.astype(np.float64), cA.astype(np.float64), fraction),
        ((d - dA).astype(np.float64), (c - cA).astype(np.float64), 1.0 - fraction),
    ]
    split_noise = fission and isinstance(agg.noise, GaussianMechanism)
    if split_noise:
        tau = agg.noise.sigma * np.sqrt(fraction * (1.0 - fraction))
        w = np.random.default_rng([seed, 1]).normal(0.0, tau, (2, int(rel.sum())))
        for (dd, cc, _), sign in zip(parts, (1.0, -1.0), strict=True):
            dd[rel] += sign * w[0]
            cc[rel] += sign * w[1]
    halves = []
    starts = lay.offsets[int(lay.intercept) : -1]
    for dd, cc, share in parts:
        box = split_suppression(agg.suppression, share)  # same rows, bound share·k
        if box is not None:  # absent rows stay absent (no fission noise on them)
            dd[box.rows] = 0.0
            cc[box.rows] = 0.0
        noise = None
        if agg.noise is not None:
            noise = scaled_noise(agg.noise, np.sqrt(share) if split_noise else share)
        if lay.intercept:
            # n from the complete tables: a table with suppressed rows misses their records
            full = [t for t in range(1, lay.n_tables) if box is None or t not in box.thresholds]
            full = np.asarray(full or range(1, lay.n_tables)) - 1
            dd[0] = float(np.add.reduceat(dd, starts)[full].mean())
            cc[0] = float(np.add.reduceat(cc, starts)[full].mean())
        n = max(1, int(round(dd[0] if lay.intercept else dd[rel].sum() / lay.n_released_tables)))
        halves.append(
            AggregatedData(lay, dd, cc, n, noise=noise, meta=dict(agg.meta), suppression=box)
        )
    return halves[0], halves[1]


def lambda_grid(
    layout: TableLayout, multipliers: Sequence[float] = DEFAULT_MULTIPLIERS
) -> list[float]:
    """Absolute λθ values m · T/2 for a layout (T/2: the default rule without its cap)."""
    T = max(layout.n_released_tables, 1)
    return [float(m) * T / 2.0 for m in multipliers]


def _check_multipliers(multipliers: Sequence[float]) -> list[float]:
    ms = [float(m) for m in multipliers]
    if not ms or not all(np.isfinite(m) and m >= 0 for m in ms):
        raise AggMRFError(f"the λθ grid must be finite numbers ≥ 0; got {list(multipliers)}.")
    if len(set(ms)) != len(ms):
        raise AggMRFError(f"the λθ grid lists a value twice: {ms}.")
    return sorted(ms, reverse=True)


# ---------------------------------------------------------------------- paths
@dataclass
class PathPoint:
    multiplier: float
    lambda_theta: float  # the λθ this point was trained with (lambda_scale · m · T/2)
    model: MRFModel
    codes: np.ndarray
    iterations: int


def fit_path(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    iterations: int = 300,
    warm_iterations: int = 60,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    lambda_scale: float = 1.0,
    on_point: Callable[[PathPoint], None] | None = None,
) -> list[PathPoint]:
    """Fit along the λθ grid (largest first), each point warm-started from the previous one.

    Point m is trained with λθ = ``lambda_scale`` · m · T/2 (T: ``data``'s tables) for
    ``iterations`` (first point) or ``warm_iterations`` (the others) PCD iterations, starting
    from the previous point's μ, θ and persistent chain.  Returns one :class:`PathPoint` per
    multiplier (largest λθ first).
    """
    ms = _check_multipliers(multipliers)
    for name, v in (("iterations", iterations), ("warm_iterations", warm_iterations)):
        if not isinstance(v, int | np.integer) or v < 1:
            raise AggMRFError(f"{name} must be a positive integer; got {v!r}.")
    if not np.isfinite(lambda_scale) or lambda_scale <= 0:
        raise AggMRFError(f"lambda_scale must be a finite number > 0; got {lambda_scale!r}.")
    over = dict(settings_overrides or {})
    over.pop("lambda_theta", None)
    lams = [float(lambda_scale) * v for v in lambda_grid(data.layout, ms)]
    settings = default_settings(data.layout, data.n, lambda_theta=lams[0], **over)
    trainer = PCDTrainer(data, settings)
    out = []
    for i, (m, lam) in enumerate(zip(ms, lams, strict=True)):
        if i:
            trainer.update(lambda_theta=lam)
        trainer.fit(int(iterations if i == 0 else warm_iterations))
        pt = PathPoint(
            m, lam, trainer.model, sample_codes(trainer, extra_sweeps), trainer.iteration
        )
        if on_point is not None:
            on_point(pt)
        out.append(pt)
    return out


def _folds(layout: TableLayout, n_folds: int, holdout: float, seed: int) -> list[list[int]]:
    pairs = [ti for ti, t in enumerate(layout.tables) if len(t) >= 2]
    if len(pairs) < 2:
        raise AggMRFError(
            "leave-tables-out validation holds out pair tables, and this release has "
            f"{len(pairs)}; give a second release to validate on (validation=... / "
            "--validation-tables DIR) or set λθ yourself."
        )
    if not 0 < holdout < 1:
        raise AggMRFError(f"holdout must be a fraction in (0, 1); got {holdout!r}.")
    n_groups = max(2, int(round(1.0 / holdout)))
    perm = np.random.default_rng(seed).permutation(pairs)
    groups = [sorted(int(t) for t in g) for g in np.array_split(perm, n_groups) if len(g)]
    if not isinstance(n_folds, int | np.integer) or not 1 <= n_folds <= len(groups):
        raise AggMRFError(f"n_folds must be an integer in 1..{len(groups)}; got {n_folds!r}.")
    return groups[: int(n_folds)]


# ---------------------------------------------------------------------- scores and the rule
class _Units:
    """Log-likelihoods of the scored tables ("units") at each grid value.

    ``ll[u, j]``: binomial log-likelihood of unit u's label sums under grid point j;
    ``base[u]``: the same under the base rate p₀ (pooled over all units of the run).
    """

    def __init__(self, n_points: int) -> None:
        self.ll: list[np.ndarray] = []
        self.base: list[float] = []
        self.n_points = n_points

    def add(self, scores: Sequence[AggregatedScore]) -> None:
        """One AggregatedScore per grid point, all over the same tables."""
        ll = np.column_stack([sc.per_table["loglik"].to_numpy() for sc in scores])
        self.ll.extend(ll)
        self.base.extend(scores[0].per_table["base_loglik"].to_numpy())

    def frame(self, ms: Sequence[float], layout: TableLayout) -> pd.DataFrame:
        ll = np.asarray(self.ll).reshape(-1, self.n_points)
        base = float(np.sum(self.base))
        score = 1.0 - ll.sum(axis=0) / base
        best = int(np.argmax(score))
        diff = ll - ll[:, [best]]  # paired, per table: point j minus the best point
        U = ll.shape[0]
        sd = diff.std(axis=0, ddof=1) if U > 1 else np.zeros(self.n_points)
        se = np.sqrt(U) * sd / abs(base)
        return pd.DataFrame(
            {
                "multiplier": list(ms),
                "lambda_theta": lambda_grid(layout, ms),
                "score": score,
                "se": se,  # standard error of (score − best score), tables as units
            }
        )


def pick(table: pd.DataFrame, rule: str = "one-se") -> int:
    """Index (into ``table``, largest λθ first) of the grid point the rule selects.

    ``"max"``: the best score.  ``"one-se"``: the largest λθ whose score is within one
    standard error (column ``se``) of the best score (Breiman's one-standard-error rule).
    """
    score = table["score"].to_numpy()
    best = int(np.argmax(score))
    if rule == "max":
        return best
    if rule != "one-se":
        raise AggMRFError(f"rule must be one of {RULES}; got {rule!r}.")
    if "se" not in table:
        return best
    lam = table["lambda_theta"].to_numpy()
    ok = np.flatnonzero(score >= score[best] - table["se"].to_numpy())
    return int(ok[np.argmax(lam[ok])])


def leave_tables_out(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    n_folds: int = 2,
    holdout: float = 0.25,
    seed: int = 0,
    iterations: int = 300,
    warm_iterations: int = 60,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Leave-pair-tables-out CV along the λθ grid; one row per multiplier (largest first).

    Columns: multiplier, lambda_theta (for the full release), score (pooled aggregated NLLH
    over the held-out tables of all folds), se (standard error of score − best score, the
    held-out tables as units), score_fold{i}.
    """
    ms = _check_multipliers(multipliers)
    folds = _folds(data.layout, n_folds, holdout, seed)
    units = _Units(len(ms))
    per_fold = np.zeros((len(folds), len(ms)))
    total = len(folds) * len(ms)
    done = 0
    for fi, held in enumerate(folds):
        keep = [ti for ti, t in enumerate(data.layout.tables) if t and ti not in held]
        train = sub_release(data, keep)
        points = []

        def _tick(pt, points=points):
            nonlocal done
            points.append(pt)
            done += 1
            if progress is not None:
                progress(done, total)

        fit_path(
            train, ms, iterations=iterations, warm_iterations=warm_iterations,
            extra_sweeps=extra_sweeps, settings_overrides=settings_overrides, on_point=_tick,
        )  # fmt: skip
        scores = [aggregated_nllh(pt.model, pt.codes, data, held) for pt in points]
        units.add(scores)
        per_fold[fi] = [sc.score for sc in scores]
    frame = units.frame(ms, data.layout)
    for fi in range(len(folds)):
        frame[f"score_fold{fi}"] = per_fold[fi]
    frame.attrs["folds"] = [
        [data.layout.table_name(data.layout.tables[t]) for t in f] for f in folds
    ]
    return frame


def _entropy(rate: float) -> float:
    if not 0 < rate < 1:
        raise AggMRFError(f"the base rate must be in (0, 1); got {rate!r}.")
    return -(rate * np.log(rate) + (1.0 - rate) * np.log1p(-rate))


def _release_rate(data: AggregatedData) -> float:
    projected = data.projected()
    return float(projected.c.sum() / max(projected.d.sum(), 1e-300))


def cross_fit_losses(model: MRFModel, reference: MRFModel, codes: np.ndarray) -> np.ndarray:
    """Per-sample log loss of ``model`` against the soft labels q = σ(z_ref) of ``reference``.

    ``codes``: the reference's Gibbs samples.  ℓ_i = −q_i log p_i − (1 − q_i) log(1 − p_i),
    p = σ(z_model); shape (len(codes),).
    """
    return _soft_log_loss(
        sigmoid(reference.decision_function(codes)), model.decision_function(codes)
    )


def _soft_log_loss(q: np.ndarray, z: np.ndarray) -> np.ndarray:
    return q * np.logaddexp(0.0, -z) + (1.0 - q) * np.logaddexp(0.0, z)


def cross_fit_nllh(
    model: MRFModel, reference: MRFModel, codes: np.ndarray, base_rate: float
) -> float:
    """Records-free estimate of ``model``'s record-level NLLH (see the module docstring).

    1 − mean(:func:`cross_fit_losses`) / h(base_rate): the reference, fitted on independent
    tables, stands in for the unknown P(Y=1 | x), its samples for the records.
    """
    return 1.0 - float(cross_fit_losses(model, reference, codes).mean()) / _entropy(base_rate)


@dataclass
class Reference:
    """A model fitted on independent tables, its Gibbs samples and its release's base rate:
    what :func:`cross_fit_nllh` scores other models against."""

    model: MRFModel
    codes: np.ndarray
    base_rate: float

    def score(self, model: MRFModel) -> float:
        """Cross-fit NLLH of ``model`` against this reference."""
        return cross_fit_nllh(model, self.model, self.codes, self.base_rate)


def fit_reference(
    validation: AggregatedData,
    training: AggregatedData,
    multiplier: float = DEFAULT_MULTIPLIERS[-1],
    *,
    iterations: int = 300,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
) -> Reference:
    """The cross-fit reference of a second release: fitted on ``validation`` alone with the
    least regularisation of the grid, λθ = multiplier·T/2 scaled by n_validation / n_training
    (the same balance against the log-likelihood as on the training release)."""
    _check_same_features(training.layout, validation.layout)
    over = dict(settings_overrides or {})
    lam = lambda_grid(training.layout, [multiplier])[0] * validation.n / max(training.n, 1)
    over.update(lambda_theta=lam, seed=int(over.get("seed", 0)) + 1)
    over["noise_aware"] = bool(over.get("noise_aware")) and validation.noise is not None
    trainer = PCDTrainer(validation, default_settings(validation.layout, validation.n, **over))
    trainer.fit(int(iterations))
    rate = min(max(_release_rate(validation), 1e-6), 1.0 - 1e-6)
    return Reference(trainer.model, sample_codes(trainer, extra_sweeps), rate)


def split_cv(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    seed: int = 0,
    iterations: int = 300,
    warm_iterations: int = 60,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Two-fold CV on a thinned release (:func:`split_release`); one row per multiplier.

    Each half (n/2 records) is fitted along the warm-started grid, its point m with
    λθ = ½ · m · T/2 (the penalty keeps the same weight against the log-likelihood as m · T/2
    on the whole release), from independent chains (seeds ``seed`` and ``seed`` + 1).

    Columns: multiplier, lambda_theta (for the full release); ``score``: the cross-fit
    record-level NLLH, each half's fit at m scored (:func:`cross_fit_nllh`) against the other
    half's least-regularised fit (the last grid point) on that fit's samples, pooled over both
    directions; ``se``: its paired standard error against the best point (the samples taken as
    independent, so it is optimistic); ``cell_score``: aggregated NLLH of every table of the
    other half (the cell-level metric), pooled; ``cell_se``; score_fold0/1: the two
    directions' cross-fit NLLH.
    """
    ms = _check_multipliers(multipliers)
    A, B = split_release(data, 0.5, seed)
    units = _Units(len(ms))
    paths = []
    done = 0
    for fi, (train, test) in enumerate(((A, B), (B, A))):
        over = dict(settings_overrides or {})
        over["seed"] = int(over.get("seed", 0)) + fi  # independent chains for the two halves
        points = fit_path(
            train, ms, iterations=iterations, warm_iterations=warm_iterations,
            extra_sweeps=extra_sweeps, settings_overrides=over, lambda_scale=0.5,
        )  # fmt: skip
        scores = []
        for pt in points:
            scores.append(aggregated_nllh(pt.model, pt.codes, test))
            done += 1
            if progress is not None:
                progress(done, 2 * len(ms))
        units.add(scores)
        paths.append(points)
    cells = units.frame(ms, data.layout)
    h0 = _entropy(min(max(_release_rate(data), 1e-6), 1.0 - 1e-6))
    losses = []  # [direction][point] → per-sample losses
    for own, other in ((paths[0], paths[1]), (paths[1], paths[0])):
        ref = other[-1]
        rows = data.layout.rows(ref.codes)  # once per reference
        q = sigmoid(sample_logits(rows, ref.model.theta))
        losses.append([_soft_log_loss(q, sample_logits(rows, pt.model.theta)) for pt in own])
    per_dir = np.array([[1.0 - lo.mean() / h0 for lo in d] for d in losses])
    flat = [np.concatenate([losses[0][j], losses[1][j]]) for j in range(len(ms))]
    score = np.array([1.0 - f.mean() / h0 for f in flat])  # pooled over both directions
    best = int(np.argmax(score))
    se = np.array([np.std(f - flat[best], ddof=1) / np.sqrt(f.size) / h0 for f in flat])
    frame = pd.DataFrame(
        {
            "multiplier": ms,
            "lambda_theta": lambda_grid(data.layout, ms),
            "score": score,
            "se": se,
            "cell_score": cells["score"].to_numpy(),
            "cell_se": cells["se"].to_numpy(),
        }
    )
    for fi in range(2):
        frame[f"score_fold{fi}"] = per_dir[fi]
    return frame


@dataclass
class LambdaChoice:
    """Result of :func:`choose_lambda_theta`."""

    lambda_theta: float  # for the full release: multiplier · T/2
    multiplier: float
    method: str  # "split", "leave-tables-out" or "second release"
    table: pd.DataFrame  # one row per grid value: multiplier, lambda_theta, score, se, ...
    seconds: float
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "lambda_theta": self.lambda_theta,
            "multiplier": self.multiplier,
            "method": self.method,
            "seconds": self.seconds,
            "grid": self.table.to_dict(orient="records"),
            **self.details,
        }


def choose_lambda_theta(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    validation: AggregatedData | None = None,
    method: str = "split",
    rule: str = "max",
    iterations: int = 600,
    n_folds: int = 2,
    holdout: float = 0.25,
    seed: int = 0,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LambdaChoice:
    """Choose λθ from aggregated data only (see the module docstring for the procedure).

    ``iterations``: the iterations of one full training run; the path uses
    ``iterations // 2`` for its first fit and ``iterations // 10`` per further grid value.
    ``method``: "split" (default) or "leave-tables-out", used without ``validation``;
    ``rule``: "max" (default) or "one-se" (see :func:`pick`).
    Returns a :class:`LambdaChoice` whose ``lambda_theta`` applies to ``data``'s layout.
    """
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if not isinstance(data, AggregatedData):
        raise AggMRFError("choose_lambda_theta needs an AggregatedData (a release).")
    if method not in METHODS:
        raise AggMRFError(f"method must be one of {METHODS}; got {method!r}.")
    if rule not in RULES:
        raise AggMRFError(f"rule must be one of {RULES}; got {rule!r}.")
    ms = _check_multipliers(multipliers)
    first = max(1, int(iterations) // 2)
    warm = max(1, int(iterations) // 10)
    over = dict(settings_overrides or {})
    over.setdefault("seed", seed)
    details: dict = {}
    if validation is not None:
        ref = fit_reference(
            validation, data, ms[-1], iterations=first, extra_sweeps=extra_sweeps,
            settings_overrides=over,
        )  # fmt: skip
        units = _Units(len(ms))
        scores: list[AggregatedScore] = []
        xfit: list[float] = []

        def _score(pt):
            scores.append(aggregated_nllh(pt.model, pt.codes, validation))
            xfit.append(ref.score(pt.model))
            if progress is not None:
                progress(len(scores), len(ms))

        fit_path(
            data, ms, iterations=first, warm_iterations=warm, extra_sweeps=extra_sweeps,
            settings_overrides=over, on_point=_score,
        )  # fmt: skip
        units.add(scores)
        cells = units.frame(ms, data.layout)
        table = pd.DataFrame(
            {
                "multiplier": ms,
                "lambda_theta": lambda_grid(data.layout, ms),
                "score": xfit,
                "cell_score": cells["score"].to_numpy(),
                "cell_se": cells["se"].to_numpy(),
            }
        )
        method = "second release"
        iters = 2 * first + warm * (len(ms) - 1)
    elif method == "split":
        table = split_cv(
            data, ms, seed=seed, iterations=first, warm_iterations=warm,
            extra_sweeps=extra_sweeps, settings_overrides=over, progress=progress,
        )  # fmt: skip
        iters = 2 * (first + warm * (len(ms) - 1))
    else:
        table = leave_tables_out(
            data, ms, n_folds=n_folds, holdout=holdout, seed=seed, iterations=first,
            warm_iterations=warm, extra_sweeps=extra_sweeps, settings_overrides=over,
            progress=progress,
        )  # fmt: skip
        details = {"folds": table.attrs.get("folds"), "n_folds": n_folds, "holdout": holdout}
        iters = n_folds * (first + warm * (len(ms) - 1))
    j = pick(table, rule)
    m = float(table["multiplier"].iloc[j])
    lam = lambda_grid(data.layout, [m])[0]
    details.update(
        rule=rule,
        best_score_multiplier=float(table["multiplier"].iloc[pick(table, "max")]),
        cpu_seconds=time.process_time() - cpu0,
        path_iterations=iters,
        cost_in_iterations=iters / float(iterations),
    )
    return LambdaChoice(lam, m, method, table, time.perf_counter() - t0, details)


def settings_with_choice(settings, choice: LambdaChoice):
    """``settings`` with the chosen λθ."""
    return replace(settings, lambda_theta=choice.lambda_theta)
