"""Baselines the MRF is compared with (the paper's section 5.2).

- ``logistic_pairs``: the skyline, a logistic regression on exactly the MRF's features φ(x)
  (one-hot + all pair crosses), trained on the full disaggregated records;
- ``logistic``: plain logistic regression on one-hot features;
- ``naive_bayes``: naive Bayes from the single-feature tables, tempered;
- ``naive_bayes_plain``: the paper's naive Bayes (add-1 / Laplace smoothing, no temperature);
- ``best_pair``: the best model that uses one pair table alone (the paper's "B2f").

Every hyper-parameter (L2 strength, NB temperature, which pair) is chosen on a validation
split of the *training* records (``validation_fraction``, seeded), never on the test set,
then the model is refit on all training records.  The skyline's λ is searched over the
powers of 2 from 1 to 1024 (``LAMBDA_GRID``, the paper's grid): coarse to fine, every other
point first, then the two neighbours of the best (``refine=True``: 8 fits instead of 11,
the same choice whenever the validation curve is unimodal on the grid).  Penalties are written as the MRF's:
loss = Σ_i logloss_i + λ ‖w‖², so scikit-learn's C = 1 / (2λ).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from .errors import AggMRFError
from .metrics import log_loss, nllh
from .tables import TableLayout, aggregate

if TYPE_CHECKING:  # (scikit-learn is imported by the fits that use it: 2 s of a first start)
    from sklearn.linear_model import LogisticRegression

__all__ = [
    "BaselineResult",
    "LAMBDA_GRID",
    "fit_logistic",
    "fit_l2_logistic",
    "validation_split",
    "logistic_pairs",
    "logistic_onehot",
    "naive_bayes",
    "naive_bayes_plain",
    "best_pair",
    "fit_baselines",
    "SHIPPED",
    "problem_digest",
    "shipped_baseline",
    "ship_baselines",
]

LAMBDA_GRID = tuple(2.0**k for k in range(11))  # 1, 2, 4, …, 1024
NB_TEMPERATURES = (1.0, 0.7, 0.5, 0.35, 0.25, 0.15)
PAIR_SMOOTHING = 2.0  # pseudo-records at the base rate in each pair cell


@dataclass
class BaselineResult:
    """A fitted baseline: test predictions P(Y=1|x) (n_test,), test NLLH, fit time (s)."""

    name: str
    proba_test: np.ndarray
    nllh_test: float
    seconds: float
    info: dict = field(default_factory=dict)


def validation_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of n records: (fit_idx, validation_idx), int64, validation
    size max(1, round(fraction · n)) (the validation split every baseline uses for λ)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_val = max(1, int(round(fraction * n)))
    return perm[n_val:], perm[:n_val]


def _check_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise AggMRFError(f"X must be (n, D) and y (n,); got {X.shape} and {y.shape}.")
    if len(np.unique(y)) < 2:
        raise AggMRFError("the training labels have a single class; a classifier needs both.")
    return X, y


def fit_l2_logistic(
    Phi: np.ndarray, y: np.ndarray, lam: float, max_iter: int
) -> LogisticRegression:
    """L2 logistic regression of y (n,) on the features Phi (n, K), penalty λ·|w|² (C = 1/(2λ)).

    L-BFGS (the paper: 200 iterations), convergence warnings silenced (they are expected
    at the tolerance we use and say nothing the validation score does not)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=1.0 / (2.0 * lam), max_iter=max_iter, tol=1e-4).fit(Phi, y)


def fit_logistic(
    X: np.ndarray,
    y: np.ndarray,
    layout: TableLayout,
    lambdas: tuple[float, ...] = LAMBDA_GRID,
    validation_fraction: float = 0.2,
    seed: int = 0,
    max_iter: int = 200,
    refine: bool = True,
) -> tuple[LogisticRegression, float, dict]:
    """L2 logistic regression on φ(X) of a layout; λ picked on a validation split.

    ``lambdas`` are searched in increasing order; ``refine``: score every other one first
    (the first and last included), then the unscored neighbours of the best, and pick the
    best scored (``refine=False``: score all).  Returns (model fitted on all of X, chosen λ,
    {λ: validation NLLH} of the scored λ).
    """
    X, y = _check_xy(X, y)
    lay = layout.with_tables([t for t in layout.tables if t], intercept=False)  # keeps hashing
    Phi = lay.phi(X)
    tr, va = validation_split(X.shape[0], validation_fraction, seed)
    grid = sorted(float(lam) for lam in lambdas)
    scores = {}

    def score(i: int) -> None:
        if grid[i] not in scores:
            m = fit_l2_logistic(Phi[tr], y[tr], grid[i], max_iter)
            scores[grid[i]] = nllh(y[va], m.predict_proba(Phi[va])[:, 1])

    if len(grid) > 1 and len(np.unique(y[va])) == 2:
        coarse = sorted({*range(0, len(grid), 2), len(grid) - 1}) if refine else range(len(grid))
        for i in coarse:
            score(i)
        i_best = grid.index(max(scores, key=scores.get))
        for i in (i_best - 1, i_best + 1):
            if 0 <= i < len(grid):
                score(i)
        best = max(scores, key=scores.get)
    else:
        best = grid[0]
    model = fit_l2_logistic(Phi, y, best, max_iter)
    model.layout_ = lay
    return model, best, scores


def _logistic_result(name, X, y, X_test, y_test, layout, seed) -> BaselineResult:
    t0 = time.perf_counter()
    model, lam, scores = fit_logistic(X, y, layout, seed=seed)
    p = model.predict_proba(model.layout_.phi(X_test))[:, 1]
    return BaselineResult(
        name,
        p,
        nllh(y_test, p),
        time.perf_counter() - t0,
        {"lambda": lam, "validation_nllh": scores, "model": model},
    )


def logistic_pairs(X, y, X_test, y_test, layout: TableLayout, seed: int = 0) -> BaselineResult:
    """Skyline: logistic on the MRF's own φ (same tables), trained on all records."""
    return _logistic_result("logistic_pairs", X, y, X_test, y_test, layout, seed)


def logistic_onehot(X, y, X_test, y_test, layout: TableLayout, seed: int = 0) -> BaselineResult:
    """Plain logistic regression on one-hot features (single tables only)."""
    singles = TableLayout(
        layout.n_modalities, [(f,) for f in range(layout.n_features)], layout.feature_names
    )
    return _logistic_result("logistic", X, y, X_test, y_test, singles, seed)


def _nb_log_ratios(X, y, layout: TableLayout, alpha: float = 1.0):
    """Per-feature log P(x_f | y=1) − log P(x_f | y=0) with add-α smoothing, list of (M_f,)."""
    singles = TableLayout(
        layout.n_modalities, [(f,) for f in range(layout.n_features)], intercept=False
    )
    agg = aggregate(X, y, singles)
    out = []
    for ti in range(singles.n_tables):
        sl = slice(singles.offsets[ti], singles.offsets[ti + 1])
        pos = agg.c[sl] + alpha
        neg = agg.d[sl] - agg.c[sl] + alpha
        out.append(np.log(pos / pos.sum()) - np.log(neg / neg.sum()))
    return out


def _nb_scores(X, ratios) -> np.ndarray:
    return sum(r[X[:, f]] for f, r in enumerate(ratios))


def naive_bayes(
    X, y, X_test, y_test, layout: TableLayout, seed: int = 0, validation_fraction: float = 0.2
) -> BaselineResult:
    """Naive Bayes from the single-feature tables (add-1 smoothing), tempered.

    Correlated features make plain NB over-confident; its summed log-likelihood ratio is
    multiplied by a temperature w ≤ 1 and the intercept refit to the base rate, with w
    chosen on a validation split of the training records.
    """
    t0 = time.perf_counter()
    X, y = _check_xy(X, y)
    tr, va = validation_split(X.shape[0], validation_fraction, seed)

    def fit_intercept(s, yy, w):
        # one-dimensional: b such that mean σ(b + w s) = mean y
        from scipy.optimize import brentq

        target = yy.mean()
        return brentq(lambda b: expit(b + w * s).mean() - target, -50, 50)

    ratios = _nb_log_ratios(X[tr], y[tr], layout)
    s_tr, s_va = _nb_scores(X[tr], ratios), _nb_scores(X[va], ratios)
    scores = {}
    for w in NB_TEMPERATURES:
        b = fit_intercept(s_tr, y[tr], w)
        scores[w] = -log_loss(y[va], expit(b + w * s_va))
    w = max(scores, key=scores.get)
    ratios = _nb_log_ratios(X, y, layout)
    s = _nb_scores(X, ratios)
    b = fit_intercept(s, y, w)
    p = expit(b + w * _nb_scores(X_test, ratios))
    return BaselineResult(
        "naive_bayes", p, nllh(y_test, p), time.perf_counter() - t0, {"temperature": w}
    )


def naive_bayes_plain(
    X, y, X_test, y_test, layout: TableLayout, seed: int = 0, alpha: float = 1.0
) -> BaselineResult:
    """The paper's naive Bayes (its Table 4): P(x_f | y) from the single-feature tables with
    add-α Laplace smoothing (α = 1), the prior P(y) from the training base rate, no
    temperature: logit = log(p₀/(1 − p₀)) + Σ_f log P(x_f | 1)/P(x_f | 0).  No
    hyper-parameter is chosen (``seed`` is accepted for a uniform signature)."""
    t0 = time.perf_counter()
    X, y = _check_xy(X, y)
    ratios = _nb_log_ratios(X, y, layout, alpha)
    p0 = float(np.mean(y))
    p = expit(np.log(p0 / (1.0 - p0)) + _nb_scores(X_test, ratios))
    return BaselineResult(
        "naive_bayes_plain", p, nllh(y_test, p), time.perf_counter() - t0, {"alpha": alpha}
    )


def _pair_rates(X, y, f, g, M, prior):
    idx = X[:, f].astype(np.int64) * M[g] + X[:, g]
    d = np.bincount(idx, minlength=M[f] * M[g])
    c = np.bincount(idx, weights=y.astype(float), minlength=M[f] * M[g])
    return (c + PAIR_SMOOTHING * prior) / (d + PAIR_SMOOTHING)


def best_pair(
    X, y, X_test, y_test, layout: TableLayout, seed: int = 0, validation_fraction: float = 0.2
) -> BaselineResult:
    """The paper's B2f: the best single pair table used alone as a predictor.

    Each cell predicts its smoothed positive rate (c + m p₀) / (d + m); the pair is chosen
    on a validation split of the training records, then refit on all of them.
    """
    t0 = time.perf_counter()
    X, y = _check_xy(X, y)
    pairs = [t for t in layout.tables if len(t) == 2]
    if not pairs:
        D = layout.n_features
        pairs = [(f, g) for f in range(D) for g in range(f + 1, D)]
    if not pairs:
        raise AggMRFError("best_pair needs at least two features.")
    M = layout.n_modalities
    tr, va = validation_split(X.shape[0], validation_fraction, seed)
    prior = y[tr].mean()
    scores = {}
    for f, g in pairs:
        rates = _pair_rates(X[tr], y[tr], f, g, M, prior)
        scores[(f, g)] = -log_loss(y[va], rates[X[va, f] * M[g] + X[va, g]])
    f, g = max(scores, key=scores.get)
    rates = _pair_rates(X, y, f, g, M, y.mean())
    p = rates[X_test[:, f].astype(np.int64) * M[g] + X_test[:, g]]
    name = f"{layout.feature_names[f]} × {layout.feature_names[g]}"
    return BaselineResult("best_pair", p, nllh(y_test, p), time.perf_counter() - t0, {"pair": name})


def fit_baselines(
    problem, seed: int = 0, which: tuple[str, ...] | None = None
) -> dict[str, BaselineResult]:
    """All baselines for a prepared problem (experiment.Problem); dict keyed by name.

    The slow ones of the bundled datasets at their default settings come from
    :data:`SHIPPED` when it holds them for exactly this problem, seed and code
    (:func:`problem_digest`); ``info["precomputed"]`` then says so."""
    enc, lay = problem.encoded, problem.layout
    args = (enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    makers = {
        "logistic_pairs": logistic_pairs,
        "logistic": logistic_onehot,
        "naive_bayes": naive_bayes,
        "naive_bayes_plain": naive_bayes_plain,
        "best_pair": best_pair,
    }
    which = which or tuple(makers)
    unknown = set(which) - set(makers)
    if unknown:
        raise AggMRFError(f"unknown baselines {sorted(unknown)}; choose from {sorted(makers)}.")
    out = {}
    for name in which:
        out[name] = shipped_baseline(problem, name, seed) or makers[name](*args, seed=seed)
    return out


# ---------------------------------------------------------------------- shipped results
SHIPPED = Path(__file__).resolve().parent / "data" / "baselines.npz"
SHIPPED_BASELINES = ("logistic_pairs", "logistic")  # the slow ones (a minute each on Adult)


def problem_digest(problem, name: str, seed: int) -> str:
    """What a baseline's result depends on, hashed: this module's source, the coded
    training and test records, the layout and the seed.  (Not scikit-learn's version: a
    new one gives the same fits to ~1e-7, which a test checks by refitting one.)"""
    import hashlib

    h = hashlib.sha256(Path(__file__).read_bytes())
    enc, lay = problem.encoded, problem.layout
    arrays = (enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay.n_modalities)
    for a in map(np.ascontiguousarray, arrays):
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    h.update(repr((lay.tables, name, int(seed))).encode())
    return h.hexdigest()[:32]


@cache
def _shipped() -> dict:
    try:
        with np.load(SHIPPED, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError):
        return {}


def shipped_baseline(problem, name: str, seed: int) -> BaselineResult | None:
    """The shipped result of baseline ``name`` on ``problem`` (None if not shipped)."""
    if name not in SHIPPED_BASELINES:
        return None
    table = _shipped()
    key = problem_digest(problem, name, seed)
    if f"{key}/proba" not in table:
        return None
    nllh_test, seconds = (float(v) for v in table[f"{key}/scores"])
    info = json.loads(str(table[f"{key}/info"]))
    proba = table[f"{key}/proba"].astype(np.float64)
    return BaselineResult(name, proba, nllh_test, seconds, {**info, "precomputed": True})


def ship_baselines(problems, path: Path = SHIPPED, seed: int = 0) -> None:
    """Fit the slow baselines of ``problems`` and write them to ``path`` (the maintainers'
    step after a change to this module or to the bundled data; a test says when)."""
    arrays = {}
    for problem in problems:
        enc, lay = problem.encoded, problem.layout
        args = (enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
        for name, fit in (("logistic_pairs", logistic_pairs), ("logistic", logistic_onehot)):
            r = fit(*args, seed=seed)
            key = problem_digest(problem, name, seed)
            arrays[f"{key}/proba"] = r.proba_test.astype(np.float32)
            arrays[f"{key}/scores"] = np.array([r.nllh_test, r.seconds])
            info = {k: _plain(v) for k, v in r.info.items() if _plain(v) is not None}
            arrays[f"{key}/info"] = np.array(json.dumps(info))
    from .files import create_file

    with create_file(path, "shipped baselines", binary=True) as fh:
        np.savez_compressed(fh, **arrays)
    _shipped.cache_clear()


def _plain(v):
    """``v`` as JSON (numbers, strings and tuples of them), None for anything else (a
    fitted estimator is not shipped)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, tuple | list) and all(isinstance(x, int | float | str) for x in v):
        return list(v)
    return None
