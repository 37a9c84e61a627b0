"""Differential-privacy release of aggregated tables and the MRF-N noise posterior.

Mechanisms
----------
``LaplaceMechanism`` (ε-DP, scale b = Δ1/ε, std √2·b) and ``GaussianMechanism``
((ε, δ)-DP, std σ) add i.i.d. noise to every released count and label sum.  Gaussian σ
calibrations: ``"analytic"`` (Balle & Wang 2018, tight, any ε), ``"classic"``
(√(2 ln(1.25/δ))·Δ2/ε, valid only for ε < 1) and ``"adkdd21"`` (the formula of the
AdKDD'21 experiments).

Sensitivity
-----------
A release publishes T tables (``layout.n_released_tables``; the intercept row is derived
by post-processing, never released).  Adding or removing one record changes exactly one
row of each released table: that row's count by 1 and its label sum by y ∈ {0, 1}.  So
the release vector (counts and label sums, 2K entries) moves by at most 2T in L1 and
√(T·1² + T·1²) = √(2T) in L2 (``accounting="both"``).  The AdKDD'21 paper counted T queries
(Δ1 = T, Δ2 = √T: ``accounting="queries"``), which protects only one of the two columns.
Under replace-one neighbours (one record swapped for another, ``accounting="replace"``) two
rows of each table move, each by 1 in its count and up to 1 in its label sum: Δ1 = 4T and
Δ2 = √(4T) = 2√T, i.e. twice the Laplace scale and √2 × the Gaussian σ of "both".

Negative and zero noisy counts (trainer policy)
-----------------------------------------------
Noisy d̃, c̃ can be negative, zero, or have c̃ > d̃.  The plain MRF trainer fits the
projected targets ``AggregatedData.projected()``: d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺)
(post-processing, no privacy cost).  MRF-N instead replaces the targets by the posterior
means E[A_j | A_j + L_j = b_j] from ``posterior_mean_counts`` (always in [0, n]); the
paper's gradient term is then E[L_j | ·] = b_j − E[A_j | ·] (``expected_noise``).

Prior for MRF-N.  Under the model, each of the n i.i.d. records falls in row j with
probability d̂_j/n, so A_j ~ Binomial(n, d̂_j/n) exactly; the label sum C_j counts the
records in row j with y = 1, each with probability ĉ_j/n, so C_j ~ Binomial(n, ĉ_j/n)
exactly too.  Hence the recommended call for both columns is
``posterior_mean_counts(b, model_expectation, agg.n, mechanism)``.  (Conditioning C_j on
the row's count, Binomial(round(d⁺_j), ĉ_j/d̂_j), is possible by passing an array ``n``.)
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from .errors import AggMRFError
from .tables import AggregatedData, TableLayout

__all__ = [
    "ClassicGaussianWarning",
    "LaplaceMechanism",
    "GaussianMechanism",
    "Mechanism",
    "MECHANISMS",
    "CALIBRATIONS",
    "ACCOUNTINGS",
    "achieved_delta",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "adkdd21_gaussian_sigma",
    "sensitivity",
    "make_mechanism",
    "release",
    "posterior_mean_counts",
    "expected_noise",
    "noise_aware_targets",
    "scaled_noise",
]

MECHANISMS = ("none", "laplace", "gaussian")
CALIBRATIONS = ("analytic", "classic", "adkdd21")
ACCOUNTINGS = ("both", "queries", "replace")
PRIORS = ("binomial", "poisson")


class ClassicGaussianWarning(UserWarning):
    """The classic Gaussian calibration was used with ε > 1, where it gives no (ε, δ)-DP guarantee."""


# ---------------------------------------------------------------------- validation
def _positive_finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise AggMRFError(f"{name} must be a positive finite number; got {value!r}.")
    return v


def _delta(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AggMRFError(f"delta must be a number with 0 < delta < 1; got {value!r}.")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise AggMRFError(f"delta must satisfy 0 < delta < 1; got {value!r}.")
    return v


def _choice(name: str, value: object, valid: tuple[str, ...]) -> str:
    v = value.lower() if isinstance(value, str) else value
    if v not in valid:
        raise AggMRFError(f"unknown {name} {value!r}; choose one of {', '.join(valid)}.")
    return v  # type: ignore[return-value]


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


# ---------------------------------------------------------------------- mechanisms
@dataclass(frozen=True)
class LaplaceMechanism:
    """ε-DP Laplace mechanism: i.i.d. Laplace(0, b) noise with b = Δ1/ε.

    epsilon : privacy parameter ε > 0;  l1_sensitivity : Δ1 > 0 (in counts).
    """

    epsilon: float
    l1_sensitivity: float
    name: ClassVar[str] = "laplace"
    delta: ClassVar[float] = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive_finite("epsilon", self.epsilon))
        l1 = _positive_finite("l1_sensitivity", self.l1_sensitivity)
        object.__setattr__(self, "l1_sensitivity", l1)

    @property
    def scale(self) -> float:
        """Laplace scale b = Δ1/ε (counts)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def std(self) -> float:
        """Noise standard deviation √2·b (counts)."""
        return math.sqrt(2.0) * self.scale

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """I.i.d. noise of the given shape (float64)."""
        return _rng(rng).laplace(0.0, self.scale, size)

    def log_density(self, x: np.ndarray | float) -> np.ndarray:
        """log f_L(x) = −|x|/b − log(2b), elementwise (x in counts)."""
        b = self.scale
        return -np.abs(np.asarray(x, dtype=np.float64)) / b - math.log(2.0 * b)

    def describe(self) -> dict:
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "scale": self.scale,
            "std": self.std,
            "l1_sensitivity": self.l1_sensitivity,
        }

    def to_dict(self) -> dict:
        """The JSON-able form (release.json's ``noise``): :meth:`describe` plus ``sigma`` (= std)."""
        return {**self.describe(), "sigma": self.std}

    @classmethod
    def from_dict(cls, d: dict, layout: TableLayout | int | None = None) -> LaplaceMechanism:
        """Inverse of :meth:`to_dict`; also reads the shorter forms people write by hand.

        ``{"epsilon", "l1_sensitivity"}`` (what :meth:`to_dict` writes): this mechanism;
        ``{"epsilon"[, "accounting"]}`` with ``layout``: Δ1 from ``sensitivity(layout)``;
        ``{"scale"}`` or ``{"sigma"}`` (counts): the noise level only (ε = 1, meaningless).
        """
        kind = str(d.get("mechanism", cls.name)).lower()
        if kind != cls.name:
            raise AggMRFError(f"a {kind!r} description is not a {cls.name} mechanism.")
        if "epsilon" in d and "l1_sensitivity" in d:
            return cls(d["epsilon"], d["l1_sensitivity"])
        if "epsilon" in d and layout is not None:
            return make_mechanism(
                "laplace", d["epsilon"], None, layout, d.get("accounting", "both")
            )
        scale = d.get("scale")
        if scale is None and d.get("sigma") is not None:
            scale = float(d["sigma"]) / math.sqrt(2.0)
        if scale is None:
            raise AggMRFError("a laplace 'noise' needs epsilon (+ l1_sensitivity) or scale.")
        return cls(1.0, float(scale))


def achieved_delta(sigma: float, epsilon: float, l2_sensitivity: float) -> float:
    """Exact δ of the Gaussian mechanism N(0, σ²) at ε (Balle & Wang 2018, Thm 8).

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space.
    """
    sigma = _positive_finite("sigma", sigma)
    eps = _positive_finite("epsilon", epsilon)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    return math.exp(_log_delta(sigma, eps, l2))


def _log_delta(sigma: float, eps: float, l2: float) -> float:
    u = l2 / (2.0 * sigma)
    v = eps * sigma / l2
    la = float(log_ndtr(u - v))
    lb = eps + float(log_ndtr(-u - v))
    x = lb - la  # < 0 exactly; log δ = la + log(1 − e^x)
    if x >= 0.0:
        return -math.inf
    log1mexp = math.log(-math.expm1(x)) if x > -math.log(2.0) else math.log1p(-math.exp(x))
    return la + log1mexp


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP (Balle & Wang 2018), by brentq on log σ."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    target = math.log(dl)

    def f(log_s: float) -> float:
        return _log_delta(math.exp(log_s), eps, l2) - target

    lo = hi = math.log(l2 * math.sqrt(2.0 * math.log(1.25 / dl)) / eps)
    while f(lo) <= 0.0:  # δ(σ) decreases in σ
        lo -= 1.0
    while f(hi) > 0.0:
        hi += 1.0
    return math.exp(brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


def classic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """√(2 ln(1.25/δ))·Δ2/ε (Dwork & Roth); warns (ClassicGaussianWarning) when ε > 1."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    if eps > 1.0:
        warnings.warn(
            f"the classic Gaussian calibration is not a valid (ε, δ)-DP calibration for ε > 1 "
            f"(got ε = {eps:g}); use calibration='analytic'.",
            ClassicGaussianWarning,
            stacklevel=2,
        )
    return math.sqrt(2.0 * math.log(1.25 / dl)) * l2 / eps


def adkdd21_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """σ = Δ2 (c + √(c² + ε)) / (ε√2), c = √(ln(2/(√(16δ+1) − 1))) (AdKDD'21 experiments)."""
    eps = _positive_finite("epsilon", epsilon)
    dl = _delta(delta)
    l2 = _positive_finite("l2_sensitivity", l2_sensitivity)
    c = math.sqrt(math.log(2.0 / math.expm1(0.5 * math.log1p(16.0 * dl))))
    return l2 * (c + math.sqrt(c * c + eps)) / (eps * math.sqrt(2.0))


_CALIBRATE = {
    "analytic": analytic_gaussian_sigma,
    "classic": classic_gaussian_sigma,
    "adkdd21": adkdd21_gaussian_sigma,
}


@dataclass(frozen=True)
class GaussianMechanism:
    """(ε, δ)-DP Gaussian mechanism: i.i.d. N(0, σ²) noise, σ from ``calibration``.

    epsilon : ε > 0;  delta : 0 < δ < 1;  l2_sensitivity : Δ2 > 0 (counts);
    calibration : "analytic" (default, tight), "classic" or "adkdd21".
    ``sigma`` (= ``scale`` = ``std``, counts) is computed from them.
    """

    epsilon: float
    delta: float
    l2_sensitivity: float
    calibration: Literal["analytic", "classic", "adkdd21"] = "analytic"
    sigma: float = field(init=False)
    name: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        checked = {
            "epsilon": _positive_finite("epsilon", self.epsilon),
            "delta": _delta(self.delta),
            "l2_sensitivity": _positive_finite("l2_sensitivity", self.l2_sensitivity),
            "calibration": _choice("calibration", self.calibration, CALIBRATIONS),
        }
        for key, value in checked.items():
            object.__setattr__(self, key, value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClassicGaussianWarning)
            sigma = _CALIBRATE[self.calibration](self.epsilon, self.delta, self.l2_sensitivity)
        object.__setattr__(self, "sigma", sigma)
        if self.calibration == "classic" and self.epsilon > 1.0:
            warnings.warn(
                f"the classic Gaussian calibration is not a valid (ε, δ)-DP calibration for ε > 1 "
                f"(got ε = {self.epsilon:g}); use calibration='analytic'.",
                ClassicGaussianWarning,
                stacklevel=3,
            )

    @property
    def scale(self) -> float:
        return self.sigma

    @property
    def std(self) -> float:
        return self.sigma

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """I.i.d. N(0, σ²) noise of the given shape (float64)."""
        return _rng(rng).normal(0.0, self.sigma, size)

    def log_density(self, x: np.ndarray | float) -> np.ndarray:
        """log f(x) = −x²/(2σ²) − ½ log(2πσ²), elementwise (x in counts)."""
        s = self.sigma
        z = np.asarray(x, dtype=np.float64) / s
        return -0.5 * z * z - math.log(s) - 0.5 * math.log(2.0 * math.pi)

    def describe(self) -> dict:
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sigma": self.sigma,
            "std": self.sigma,
            "l2_sensitivity": self.l2_sensitivity,
            "calibration": self.calibration,
        }

    def to_dict(self) -> dict:
        """The JSON-able form (release.json's ``noise``): :meth:`describe` (σ included)."""
        return {**self.describe(), "sigma": self.sigma}

    @classmethod
    def from_dict(cls, d: dict, layout: TableLayout | int | None = None) -> GaussianMechanism:
        """Inverse of :meth:`to_dict`; also reads the shorter forms people write by hand.

        ``{"epsilon", "delta", "l2_sensitivity", "calibration"}`` (what :meth:`to_dict`
        writes): this mechanism (δ defaults to 1e-7, calibration to "analytic");
        ``{"epsilon"[, "delta", "accounting"]}`` with ``layout``: Δ2 from the layout;
        ``{"sigma"}`` or ``{"scale"}`` (counts): the noise level only (ε, δ meaningless).
        """
        kind = str(d.get("mechanism", cls.name)).lower()
        if kind != cls.name:
            raise AggMRFError(f"a {kind!r} description is not a {cls.name} mechanism.")
        calib = d.get("calibration", "analytic")
        if "epsilon" in d and "l2_sensitivity" in d:
            return cls(d["epsilon"], d.get("delta", 1e-7), d["l2_sensitivity"], calib)
        if "epsilon" in d and layout is not None:
            return make_mechanism(
                "gaussian",
                d["epsilon"],
                d.get("delta", 1e-7),
                layout,
                d.get("accounting", "both"),
                calib,
            )
        sigma = d.get("sigma", d.get("scale"))
        if sigma is None:
            raise AggMRFError("a gaussian 'noise' needs epsilon (+ l2_sensitivity) or sigma.")
        unit = analytic_gaussian_sigma(1.0, 1e-6, 1.0)
        return cls(1.0, 1e-6, float(sigma) / unit)


Mechanism = LaplaceMechanism | GaussianMechanism


# ---------------------------------------------------------------------- accounting
def sensitivity(
    layout_or_T: TableLayout | int, accounting: Literal["both", "queries", "replace"] = "both"
) -> tuple[float, float]:
    """(Δ1, Δ2) of releasing the T released tables of a layout (or T given directly).

    One record sits in exactly one row of each of the T released tables; adding or
    removing it changes that row's count by 1 and its label sum by y ∈ {0, 1}.
    "both" (add/remove-one, counts and label sums released): Δ1 = 2T, Δ2 = √(2T).
    "queries" (the paper's convention, T queries): Δ1 = T, Δ2 = √T.
    "replace" (replace-one neighbours: the old record leaves one row of each table, the new
    one enters another, 4 entries move by ≤ 1 per table): Δ1 = 4T, Δ2 = 2√T.
    The intercept row is derived from the released tables, so it costs nothing.
    """
    acc = _choice("accounting", accounting, ACCOUNTINGS)
    if isinstance(layout_or_T, TableLayout):
        T = layout_or_T.n_released_tables
    elif isinstance(layout_or_T, numbers.Integral) and not isinstance(layout_or_T, bool):
        T = int(layout_or_T)
    else:
        raise AggMRFError(
            f"sensitivity needs a TableLayout or a number of released tables T; got {layout_or_T!r}."
        )
    if T < 1:
        raise AggMRFError(f"the number of released tables T must be ≥ 1; got {T}.")
    k = {"both": 2 * T, "queries": T, "replace": 4 * T}[acc]  # entries moved, each by ≤ 1
    return float(k), math.sqrt(k)


def make_mechanism(
    name: str,
    epsilon: float | None = None,
    delta: float | None = None,
    layout: TableLayout | int | None = None,
    accounting: Literal["both", "queries", "replace"] = "both",
    calibration: Literal["analytic", "classic", "adkdd21"] = "analytic",
) -> Mechanism | None:
    """Mechanism for a layout: "none" → None, "laplace" (δ ignored) or "gaussian".

    The sensitivity comes from ``sensitivity(layout, accounting)``.
    """
    kind = _choice("mechanism", name, MECHANISMS)
    if kind == "none":
        return None
    if layout is None:
        raise AggMRFError(f"mechanism {kind!r} needs the layout (or T) to compute its sensitivity.")
    if epsilon is None:
        raise AggMRFError(f"mechanism {kind!r} needs epsilon > 0.")
    l1, l2 = sensitivity(layout, accounting)
    if kind == "laplace":
        return LaplaceMechanism(epsilon, l1)
    if delta is None:
        raise AggMRFError("the gaussian mechanism needs delta with 0 < delta < 1 (e.g. 1e-7).")
    return GaussianMechanism(epsilon, delta, l2, calibration)


def _check_mechanism(mechanism: object) -> Mechanism:
    if not isinstance(mechanism, LaplaceMechanism | GaussianMechanism):
        raise AggMRFError(
            f"expected a LaplaceMechanism or GaussianMechanism (see make_mechanism); got {mechanism!r}."
        )
    return mechanism


# ---------------------------------------------------------------------- release
def release(
    agg: AggregatedData, mechanism: Mechanism | None, seed: int | None = None
) -> AggregatedData:
    """Noisy release of exact aggregates: a new AggregatedData (the input is not modified).

    Every row of the released tables (``layout.released``) gets i.i.d. noise on its count
    and on its label sum.  The intercept row (row 0 when ``layout.intercept``) is derived
    by post-processing: its d (c) is the mean over released tables of the table's total
    noisy count (label sum).  ``n`` becomes that derived total, rounded (≥ 1), since the
    exact n is not released; the exact values stay in ``true_d``, ``true_c`` and
    ``meta["true_n"]``.  ``mechanism=None`` returns an exact copy.  Deterministic for a seed.
    """
    if not isinstance(agg, AggregatedData):
        raise AggMRFError(
            f"release needs an AggregatedData (from aggregate()); got {type(agg).__name__}."
        )
    if agg.is_noisy:
        raise AggMRFError(
            "this AggregatedData is already a noisy release; release the exact aggregates."
        )
    if mechanism is None:
        return replace(agg, d=agg.d.copy(), c=agg.c.copy(), meta=dict(agg.meta))
    mech = _check_mechanism(mechanism)
    lay = agg.layout
    mask = lay.released
    rng = np.random.default_rng(seed)
    noise = mech.sample((2, int(mask.sum())), rng)
    d = agg.d.copy()
    c = agg.c.copy()
    d[mask] += noise[0]
    c[mask] += noise[1]
    starts = lay.offsets[int(lay.intercept) : -1]
    n_tab = lay.n_released_tables
    d_tot = float(np.add.reduceat(d, starts).sum()) / n_tab
    c_tot = float(np.add.reduceat(c, starts).sum()) / n_tab
    if lay.intercept:
        d[0] = d_tot
        c[0] = c_tot
    meta = dict(agg.meta)
    meta.update(privacy=mech.describe(), seed=seed, true_n=agg.n)
    return AggregatedData(
        lay,
        d,
        c,
        max(1, int(round(d_tot))),
        true_d=agg.d.copy(),
        true_c=agg.c.copy(),
        noise=mech,
        meta=meta,
    )


# ---------------------------------------------------------------------- MRF-N posterior
@functools.lru_cache(maxsize=4)
def _log_factorials(n_max: int) -> np.ndarray:
    """Cached log k! table (k ≤ n_max, capped) for the posterior kernel's fast path."""
    from .kernels.noise import log_factorials

    table = log_factorials(n_max)
    table.setflags(write=False)
    return table


def posterior_mean_counts(
    b: np.ndarray,
    prior_mean: np.ndarray,
    n: int | np.ndarray,
    mechanism: Mechanism | np.ndarray | None,
    prior: Literal["binomial", "poisson"] = "binomial",
) -> np.ndarray:
    """E[A_j | A_j + L_j = b_j] for every coordinate j independently, shape of ``b``.

    ``mechanism`` may also be an array of per-coordinate Gaussian σ_j ≥ 0 (counts,
    broadcastable to b): L_j ~ N(0, σ_j²) independently (a local release's
    ``CellGaussianNoise``); where σ_j = 0 the value is exact and the result is clip(b_j, 0, n_j).

    b : noisy values, shape (K,);  prior_mean : E[A_j] under the model, shape (K,)
    (clipped to [0, n_j]);  n : trials (int or integer-valued array broadcastable to b);
    A_j ~ Binomial(n_j, prior_mean_j/n_j) or Poisson(prior_mean_j) truncated to [0, n_j];
    L_j ~ the mechanism's noise.  Sum over the integers a ∈ [0, n_j] (numba, parallel over
    coordinates): where the posterior sd s ≥ 4 and its ±6.5 s window is inside [0, n_j]
    (and, for Laplace noise, away from the kink a = b_j), every h-th integer, h = ⌊s⌋, with
    a log-factorial table; elsewhere an exact walk out from the posterior mode.  Accurate
    to ~1e-8·s (tested against brute force at 1e-6·s); results are finite and in [0, n_j]
    for any finite b.  ``mechanism=None`` (no noise) returns clip(b, 0, n).
    """
    kind = _choice("prior", prior, PRIORS)
    b_arr = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(b_arr)):
        raise AggMRFError("b (noisy values) must be finite; got NaN or inf.")
    mu = np.asarray(prior_mean, dtype=np.float64)
    if not np.all(np.isfinite(mu)):
        raise AggMRFError("prior_mean must be finite; got NaN or inf.")
    n_arr = np.asarray(n, dtype=np.float64)
    if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 0):
        raise AggMRFError(f"n must be a non-negative integer (or array of them); got {n!r}.")
    n_int = np.round(n_arr)
    if np.any(np.abs(n_int - n_arr) > 1e-9 * np.maximum(1.0, n_arr)):
        raise AggMRFError(f"n must be integer-valued (a number of trials); got {n!r}.")
    try:
        b_b, mu_b, n_b = np.broadcast_arrays(b_arr, mu, n_int)
    except ValueError:
        raise AggMRFError(
            f"b, prior_mean and n must have broadcastable shapes; got {b_arr.shape}, {mu.shape}, {n_arr.shape}."
        ) from None
    if b_b.shape != b_arr.shape:
        raise AggMRFError(f"prior_mean and n must broadcast to b's shape {b_arr.shape}.")
    if mechanism is None:
        return np.clip(b_arr, 0.0, n_b)
    from .kernels.noise import (
        NOISE_GAUSS,
        NOISE_LAPLACE,
        PRIOR_BINOMIAL,
        PRIOR_POISSON,
        posterior_mean_kernel,
    )

    shape = b_arr.shape
    bb = np.ascontiguousarray(b_b, dtype=np.float64).ravel()
    nn = np.ascontiguousarray(n_b, dtype=np.float64).ravel()
    mm = np.clip(np.ascontiguousarray(mu_b, dtype=np.float64).ravel(), 0.0, nn)
    if isinstance(mechanism, LaplaceMechanism | GaussianMechanism):
        scale = np.full(bb.size, float(mechanism.scale))
        noise = NOISE_GAUSS if isinstance(mechanism, GaussianMechanism) else NOISE_LAPLACE
    elif isinstance(mechanism, np.ndarray):
        sig = np.asarray(mechanism, dtype=np.float64)
        if not np.all(np.isfinite(sig)) or np.any(sig < 0):
            raise AggMRFError("per-coordinate σ must be finite and ≥ 0.")
        try:
            scale = np.ascontiguousarray(np.broadcast_to(sig, shape), dtype=np.float64).ravel()
        except ValueError:
            raise AggMRFError(
                f"σ of shape {sig.shape} does not broadcast to b's {shape}."
            ) from None
        noise = NOISE_GAUSS
    else:
        _check_mechanism(mechanism)  # raises
    exact = scale <= 0.0
    out = posterior_mean_kernel(
        bb,
        mm,
        nn,
        np.where(exact, 1.0, scale),
        PRIOR_BINOMIAL if kind == "binomial" else PRIOR_POISSON,
        noise,
        _log_factorials(int(nn.max()) if nn.size else 0),
    )
    if exact.any():
        out[exact] = np.clip(bb[exact], 0.0, nn[exact])
    return out.reshape(shape)


def expected_noise(
    b: np.ndarray,
    prior_mean: np.ndarray,
    n: int | np.ndarray,
    mechanism: Mechanism | None,
    prior: Literal["binomial", "poisson"] = "binomial",
) -> np.ndarray:
    """E[L_j | A_j + L_j = b_j] = b_j − E[A_j | ·] (the paper's MRF-N gradient term), shape of b."""
    return np.asarray(b, dtype=np.float64) - posterior_mean_counts(
        b, prior_mean, n, mechanism, prior
    )


def noise_aware_targets(
    data: AggregatedData,
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    prior_floor: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """MRF-N's targets (d_t, c_t), each shape (K,): the posterior means of the exact counts.

    On the released rows j, with b the noisy release ``data.d`` (``data.c``) and n = ``data.n``:
    d_t,j = E[A_j | A_j + L_j = b_j] with A_j ~ Binomial(n, max(d̂_j, f)/n), and
    c_t,j = E[C_j | C_j + L'_j = b'_j] with C_j ~ Binomial(n, max(ĉ_j, f)/n) (the label sums'
    own prior, the model's ĉ, never d̂), L ~ ``data.noise``; then c_t = min(c_t, d_t).  The
    derived intercept row keeps its projected value.  ``prior_floor`` f (counts, ≥ 0): where
    the Monte-Carlo estimate d̂_j (ĉ_j) is 0 the binomial prior is a point mass at 0 and the
    posterior ignores b_j ("absorption at zero"); a floor of one Gibbs sample's weight
    s = n / n' lets a large released value pull the target up.
    d_hat, c_hat : the model's expected counts and label sums (counts), shape (K,).

    A local release (``local_privacy.local_release``; ``data.noise`` a ``CellGaussianNoise``)
    is treated with the approximation b_j = A_j + L_j, L_j ~ N(0, σ_j²) independent per cell
    (σ_j = ``sigma_d[j]`` / ``sigma_c[j]``): the channel-inversion error is a sum over the
    records, so near-Gaussian, but its cross-cell covariances are ignored.  σ_j is
    re-evaluated at (d_hat, c_hat) on every call (``CellGaussianNoise.at_model``: the
    closed-form Var(T̂_j | T) with the model's expectation as T) unless the release's noise
    has ``refresh=False``, which keeps its plug-in σ.  Central releases are unaffected.
    """
    if not isinstance(data, AggregatedData) or data.noise is None:
        raise AggMRFError("noise_aware_targets needs a noisy release (privacy.release).")
    floor = float(prior_floor)
    if not (math.isfinite(floor) and floor >= 0.0):
        raise AggMRFError(f"prior_floor must be a finite number ≥ 0; got {prior_floor!r}.")
    K = data.layout.K
    d_hat = np.asarray(d_hat, dtype=np.float64)
    c_hat = np.asarray(c_hat, dtype=np.float64)
    if d_hat.shape != (K,) or c_hat.shape != (K,):
        raise AggMRFError(f"d_hat and c_hat must have shape ({K},).")
    rel = data.layout.released
    projected = data.projected()
    d_t = projected.d.copy()
    c_t = projected.c.copy()
    prior_d = np.maximum(d_hat[rel], floor) if floor > 0.0 else d_hat[rel]
    prior_c = np.maximum(c_hat[rel], floor) if floor > 0.0 else c_hat[rel]
    noise_d = noise_c = data.noise
    if hasattr(data.noise, "sigma_d"):  # local_privacy.CellGaussianNoise: one σ per row
        cell = data.noise.at_model(data.layout, d_hat, c_hat) if data.noise.refresh else data.noise
        noise_d = np.asarray(cell.sigma_d, dtype=np.float64)[rel]
        noise_c = np.asarray(cell.sigma_c, dtype=np.float64)[rel]
    d_t[rel] = posterior_mean_counts(data.d[rel], prior_d, data.n, noise_d)
    c_t[rel] = posterior_mean_counts(data.c[rel], prior_c, data.n, noise_c)
    return d_t, np.minimum(c_t, d_t)


def scaled_noise(mechanism: Mechanism, factor: float) -> Mechanism:
    """The same mechanism with its noise multiplied by ``factor`` > 0 (ε, δ and calibration
    kept, sensitivity × factor; every calibration's σ, and Laplace's b, is linear in it).

    Used for what a release's noise becomes after post-processing, e.g. the halves of a
    thinned release (``model_selection.split_release``) carry the noise L/2: ``factor`` ½.
    """
    mech = _check_mechanism(mechanism)
    f = _positive_finite("factor", factor)
    if isinstance(mech, LaplaceMechanism):
        return LaplaceMechanism(mech.epsilon, mech.l1_sensitivity * f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicGaussianWarning)
        return GaussianMechanism(
            mech.epsilon, mech.delta, mech.l2_sensitivity * f, mech.calibration
        )
