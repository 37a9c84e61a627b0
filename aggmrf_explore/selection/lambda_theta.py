"""Choosing λθ from aggregated data alone (``choose_lambda_theta``, behind ``--lambda-theta auto``).

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
  of the grid on Adult and Bank: that metric is blind to under-regularisation, see
  :mod:`.scores`).

Each table also reports the cell-level score (``cell_score``) of the same fits.  ``rule="max"``
(default) takes the best score; ``rule="one-se"`` the largest λθ within one standard error of
it (``se``: paired over samples or tables taken as independent; on Adult and Bank it is so
small that both rules agree).

Cost: two paths of iterations/2 + 7·iterations/10 PCD iterations on half-size releases
(about 2.5 training runs), then the final run on the whole release; measured, with the
choices on Adult and Bank, in docs/lambda_auto.md (``benchmarks/lambda_auto.py``).

The scores are in :mod:`.scores` (aggregated and cross-fit NLLH), the thinned and
sub-releases in :mod:`.releases`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..kernels import sample_logits
from ..mrf import MRFModel, PCDTrainer, default_settings, sigmoid
from ..tables import AggregatedData, TableLayout
from .releases import split_release, sub_release
from .scores import (
    EXTRA_SWEEPS,
    AggregatedScore,
    Reference,
    aggregated_nllh,
    binary_entropy,
    check_same_features,
    release_rate,
    sample_codes,
    soft_log_loss,
)

__all__ = [
    "DEFAULT_MULTIPLIERS",
    "LambdaChoice",
    "PathPoint",
    "choose_lambda_theta",
    "fit_path",
    "fit_reference",
    "lambda_grid",
    "leave_tables_out",
    "pick",
    "settings_with_choice",
    "split_cv",
]

DEFAULT_MULTIPLIERS = (8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625)
METHODS = ("split", "leave-tables-out")
RULES = ("one-se", "max")


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
            train,
            ms,
            iterations=iterations,
            warm_iterations=warm_iterations,
            extra_sweeps=extra_sweeps,
            settings_overrides=settings_overrides,
            on_point=_tick,
        )
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
    check_same_features(training.layout, validation.layout)
    over = dict(settings_overrides or {})
    lam = lambda_grid(training.layout, [multiplier])[0] * validation.n / max(training.n, 1)
    over.update(lambda_theta=lam, seed=int(over.get("seed", 0)) + 1)
    over["noise_aware"] = bool(over.get("noise_aware")) and validation.noise is not None
    trainer = PCDTrainer(validation, default_settings(validation.layout, validation.n, **over))
    trainer.fit(int(iterations))
    rate = min(max(release_rate(validation), 1e-6), 1.0 - 1e-6)
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
            train,
            ms,
            iterations=iterations,
            warm_iterations=warm_iterations,
            extra_sweeps=extra_sweeps,
            settings_overrides=over,
            lambda_scale=0.5,
        )
        scores = []
        for pt in points:
            scores.append(aggregated_nllh(pt.model, pt.codes, test))
            done += 1
            if progress is not None:
                progress(done, 2 * len(ms))
        units.add(scores)
        paths.append(points)
    cells = units.frame(ms, data.layout)
    h0 = binary_entropy(min(max(release_rate(data), 1e-6), 1.0 - 1e-6))
    losses = []  # [direction][point] → per-sample losses
    for own, other in ((paths[0], paths[1]), (paths[1], paths[0])):
        ref = other[-1]
        rows = data.layout.rows(ref.codes)  # once per reference
        q = sigmoid(sample_logits(rows, ref.model.theta))
        losses.append([soft_log_loss(q, sample_logits(rows, pt.model.theta)) for pt in own])
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
            validation,
            data,
            ms[-1],
            iterations=first,
            extra_sweeps=extra_sweeps,
            settings_overrides=over,
        )
        units = _Units(len(ms))
        scores: list[AggregatedScore] = []
        xfit: list[float] = []

        def _score(pt):
            scores.append(aggregated_nllh(pt.model, pt.codes, validation))
            xfit.append(ref.score(pt.model))
            if progress is not None:
                progress(len(scores), len(ms))

        fit_path(
            data,
            ms,
            iterations=first,
            warm_iterations=warm,
            extra_sweeps=extra_sweeps,
            settings_overrides=over,
            on_point=_score,
        )
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
            data,
            ms,
            seed=seed,
            iterations=first,
            warm_iterations=warm,
            extra_sweeps=extra_sweeps,
            settings_overrides=over,
            progress=progress,
        )
        iters = 2 * (first + warm * (len(ms) - 1))
    else:
        table = leave_tables_out(
            data,
            ms,
            n_folds=n_folds,
            holdout=holdout,
            seed=seed,
            iterations=first,
            warm_iterations=warm,
            extra_sweeps=extra_sweeps,
            settings_overrides=over,
            progress=progress,
        )
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
