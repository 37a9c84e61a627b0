"""Validation without records: score a model on held-out *tables*, choose λθ from tables alone.

The metric (aggregated NLLH)
----------------------------
A held-out table t (from a second release, or a table left out of training) gives, for each
row k, a count d_k and a label sum c_k.  The model predicts, for the records of row k, the
rate r_k = E_π[σ(φ(x)·θ) | x in row k], estimated from the model's own Gibbs samples x̃
(the trainer's persistent chain, plus a few extra sweeps at the final parameters)::

    r_k = (Σ_{i: x̃_i in k} σ(φ(x̃_i)·θ) + a·r̄) / (#{i: x̃_i in k} + a)      (a = 1 sample)

shrunk towards the samples' mean rate r̄ so that rows without samples get a defined rate.
The label sums are scored under c_k ~ Binomial(d_k, r_k) and normalised like NLLH against
the base rate p₀ = Σc/Σd of the same tables::

    aggregated NLLH = 1 − Σ_k [c_k log r_k + (d_k − c_k) log(1 − r_k)]
                        / Σ_k [c_k log p₀ + (d_k − c_k) log(1 − p₀)]

(the binomial coefficients cancel).  It is the record-level NLLH of the model that predicts
r_k for every record of row k, so it is 0 for the base rate and higher is better, like
NLLH.  Noisy held-out tables are projected first (d⁺ = max(d, 0), c⁺ = clip(c, 0, d⁺)).

Choosing λθ (``choose_lambda_theta``, behind ``--lambda-theta auto``)
-------------------------------------------------------------------
The grid is a list of multipliers m of the default rule λθ = T/2 (``mrf.default_settings``;
default m ∈ {1/8, 1/4, 1/2, 1, 2, 4}), so a setting means the same shrinkage of the logit
whatever the number of tables T of the model it is applied to.

* with a second release (``validation=``): train on the whole release along the grid from the
  largest λθ to the smallest, each fit warm-started from the previous one (μ, θ and the
  persistent chain: ``trainer.update(lambda_theta=...)``), and score the second release;
* otherwise leave-tables-out cross-validation: the pair tables are shuffled (seeded) into
  groups of ``holdout`` of them; for each of ``n_folds`` groups, train on every other table
  (single tables are always kept) along the same warm-started grid, and score the held-out
  pair tables, whose interactions the fold's model must predict from the other tables.
  Scores are pooled over folds; the best m is applied to the full release as m·T/2.

Cost: per fold, one fit of ``iterations/2`` then ``iterations/6`` per further grid value, on
75 % of the tables; with the defaults (2 folds, 6 values) about 2.5 training runs, plus the
final run on all tables with the chosen λθ (identical to ``run --lambda-theta <value>``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .errors import AggMRFError
from .mrf import MRFModel, PCDTrainer, default_settings, sigmoid
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
    "fit_path",
    "leave_tables_out",
    "choose_lambda_theta",
]

DEFAULT_MULTIPLIERS = (4.0, 2.0, 1.0, 0.5, 0.25, 0.125)
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
            try:
                chain.sweep(trainer.mu, trainer.theta, statistics=False)
            except TypeError:  # a kernel without the statistics switch
                chain.sweep(trainer.mu, trainer.theta)
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
    p = sigmoid(model.decision_function(codes))
    mean = float(p.mean()) if p.size else 0.5
    X = layout.check_codes(codes).astype(np.int64)
    out = {}
    for ti in tables:
        t = layout.tables[ti]
        local = X[:, list(t)] @ layout.strides[ti][list(t)] if t else np.zeros(len(X), np.int64)
        size = int(layout.table_sizes[ti])
        cnt = np.bincount(local, minlength=size).astype(np.float64)
        s = np.bincount(local, weights=p, minlength=size)
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
    d_all = np.maximum(heldout.d, 0.0)
    c_all = np.clip(heldout.c, 0.0, d_all)
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
    sub = TableLayout(
        lay.n_modalities,
        [lay.tables[t] for t in keep],
        lay.feature_names,
        intercept=lay.intercept,
        modality_labels=lay.modality_labels,
    )
    parts = ([np.arange(1)] if lay.intercept else []) + [
        np.arange(lay.offsets[t], lay.offsets[t + 1]) for t in keep
    ]
    rows = np.concatenate(parts)
    return AggregatedData(
        sub, agg.d[rows], agg.c[rows], agg.n, noise=agg.noise, meta=dict(agg.meta)
    )


def split_release(
    agg: AggregatedData, fraction: float = 0.5, seed: int = 0
) -> tuple[AggregatedData, AggregatedData]:
    """Split a release into two as if its records had been split at random (thinning).

    Each row's records are split independently per table: d_A ~ Binomial(d, fraction),
    c_A ~ Hypergeometric(c positives among d, d_A drawn); B = the rest.  Within a table
    this is exactly a random split of the table's records; across tables the splits are
    independent, so A's tables agree with each other only up to sampling noise (the
    trainer tolerates that, as it tolerates privacy noise).  Noisy releases are projected
    (d⁺, c⁺) and rounded first; the noise mechanism is carried over to both halves.
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
    halves = []
    starts = lay.offsets[int(lay.intercept) : -1]
    for dd, cc in ((dA, cA), (d - dA, c - cA)):
        dd, cc = dd.astype(np.float64), cc.astype(np.float64)
        if lay.intercept:
            dd[0] = float(np.add.reduceat(dd, starts).sum()) / lay.n_released_tables
            cc[0] = float(np.add.reduceat(cc, starts).sum()) / lay.n_released_tables
        n = max(1, int(round(dd[0] if lay.intercept else dd[rel].sum() / lay.n_released_tables)))
        halves.append(AggregatedData(lay, dd, cc, n, noise=agg.noise, meta=dict(agg.meta)))
    return halves[0], halves[1]


def lambda_grid(
    layout: TableLayout, multipliers: Sequence[float] = DEFAULT_MULTIPLIERS
) -> list[float]:
    """Absolute λθ values m · T/2 of the default rule for a layout."""
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
    lambda_theta: float
    model: MRFModel
    codes: np.ndarray
    iterations: int


def fit_path(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    iterations: int = 300,
    warm_iterations: int = 100,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    on_point: Callable[[PathPoint], None] | None = None,
) -> list[PathPoint]:
    """Fit along the λθ grid (largest first), each point warm-started from the previous one.

    Returns one :class:`PathPoint` per multiplier (largest λθ first).
    """
    ms = _check_multipliers(multipliers)
    for name, v in (("iterations", iterations), ("warm_iterations", warm_iterations)):
        if not isinstance(v, int | np.integer) or v < 1:
            raise AggMRFError(f"{name} must be a positive integer; got {v!r}.")
    over = dict(settings_overrides or {})
    over.pop("lambda_theta", None)
    lams = lambda_grid(data.layout, ms)
    settings = default_settings(data.layout, data.n, lambda_theta=lams[0], **over)
    trainer = PCDTrainer(data, settings)
    out = []
    for i, (m, lam) in enumerate(zip(ms, lams, strict=True)):
        if i:
            trainer.update(lambda_theta=lam)
        k = iterations if i == 0 else warm_iterations
        trainer.step(int(k))
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


@dataclass
class LambdaChoice:
    """Result of :func:`choose_lambda_theta`."""

    lambda_theta: float  # for the full release: multiplier · T/2
    multiplier: float
    method: str  # "leave-tables-out" or "second release"
    table: pd.DataFrame  # one row per grid value: multiplier, lambda_theta, score(s)
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


def leave_tables_out(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    n_folds: int = 2,
    holdout: float = 0.25,
    seed: int = 0,
    iterations: int = 300,
    warm_iterations: int = 100,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Leave-pair-tables-out CV along the λθ grid; one row per multiplier (largest first).

    Columns: multiplier, lambda_theta (for the full release), score (pooled aggregated NLLH
    over the held-out tables of all folds), score_fold{i}.
    """
    ms = _check_multipliers(multipliers)
    folds = _folds(data.layout, n_folds, holdout, seed)
    ll = np.zeros(len(ms))
    base = np.zeros(len(ms))
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
        for j, pt in enumerate(points):
            sc = aggregated_nllh(pt.model, pt.codes, data, held)
            ll[j] += sc.loglik
            base[j] += sc.base_loglik
            per_fold[fi, j] = sc.score
    frame = pd.DataFrame(
        {"multiplier": ms, "lambda_theta": lambda_grid(data.layout, ms), "score": 1.0 - ll / base}
    )
    for fi in range(len(folds)):
        frame[f"score_fold{fi}"] = per_fold[fi]
    frame.attrs["folds"] = [
        [data.layout.table_name(data.layout.tables[t]) for t in f] for f in folds
    ]
    return frame


def split_cv(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    seed: int = 0,
    iterations: int = 300,
    warm_iterations: int = 100,
    extra_sweeps: int = EXTRA_SWEEPS,
    settings_overrides: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Two-fold CV on a thinned release (:func:`split_release`): train on one half along the
    warm-started grid, score every table of the other half; pooled over both directions."""
    ms = _check_multipliers(multipliers)
    A, B = split_release(data, 0.5, seed)
    ll = np.zeros(len(ms))
    base = np.zeros(len(ms))
    per_fold = np.zeros((2, len(ms)))
    done = 0
    for fi, (train, test) in enumerate(((A, B), (B, A))):
        points = fit_path(
            train, ms, iterations=iterations, warm_iterations=warm_iterations,
            extra_sweeps=extra_sweeps, settings_overrides=settings_overrides,
        )  # fmt: skip
        for j, pt in enumerate(points):
            sc = aggregated_nllh(pt.model, pt.codes, test)
            ll[j] += sc.loglik
            base[j] += sc.base_loglik
            per_fold[fi, j] = sc.score
            done += 1
            if progress is not None:
                progress(done, 2 * len(ms))
    frame = pd.DataFrame(
        {"multiplier": ms, "lambda_theta": lambda_grid(data.layout, ms), "score": 1.0 - ll / base}
    )
    for fi in range(2):
        frame[f"score_fold{fi}"] = per_fold[fi]
    return frame


def choose_lambda_theta(
    data: AggregatedData,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    *,
    validation: AggregatedData | None = None,
    method: str = "leave-tables-out",
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
    ``iterations // 2`` for its first fit and ``iterations // 6`` per further grid value.
    Returns a :class:`LambdaChoice` whose ``lambda_theta`` applies to ``data``'s layout.
    """
    t0 = time.perf_counter()
    if not isinstance(data, AggregatedData):
        raise AggMRFError("choose_lambda_theta needs an AggregatedData (a release).")
    ms = _check_multipliers(multipliers)
    first = max(1, int(iterations) // 2)
    warm = max(1, int(iterations) // 6)
    over = dict(settings_overrides or {})
    over.setdefault("seed", seed)
    if validation is not None:
        _check_same_features(data.layout, validation.layout)
        scores = []
        total = len(ms)

        def _score(pt):
            scores.append(aggregated_nllh(pt.model, pt.codes, validation).score)
            if progress is not None:
                progress(len(scores), total)

        fit_path(
            data, ms, iterations=first, warm_iterations=warm, extra_sweeps=extra_sweeps,
            settings_overrides=over, on_point=_score,
        )  # fmt: skip
        table = pd.DataFrame(
            {"multiplier": ms, "lambda_theta": lambda_grid(data.layout, ms), "score": scores}
        )
        method = "second release"
        details: dict = {}
    elif method == "split":
        table = split_cv(
            data, ms, seed=seed, iterations=first, warm_iterations=warm,
            extra_sweeps=extra_sweeps, settings_overrides=over, progress=progress,
        )  # fmt: skip
        details = {}
    elif method == "leave-tables-out":
        table = leave_tables_out(
            data, ms, n_folds=n_folds, holdout=holdout, seed=seed, iterations=first,
            warm_iterations=warm, extra_sweeps=extra_sweeps, settings_overrides=over,
            progress=progress,
        )  # fmt: skip
        details = {"folds": table.attrs.get("folds"), "n_folds": n_folds, "holdout": holdout}
    else:
        raise AggMRFError(f"method must be 'leave-tables-out' or 'split'; got {method!r}.")
    best = int(np.argmax(table["score"].to_numpy()))
    m = float(table["multiplier"].iloc[best])
    lam = lambda_grid(data.layout, [m])[0]
    return LambdaChoice(lam, m, method, table, time.perf_counter() - t0, details)


def settings_with_choice(settings, choice: LambdaChoice):
    """``settings`` with the chosen λθ."""
    return replace(settings, lambda_theta=choice.lambda_theta)
