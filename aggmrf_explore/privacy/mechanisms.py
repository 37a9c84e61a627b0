"""Privacy mechanisms: what noise a release gets, and how much it protects.

Every mechanism follows the :class:`Mechanism` protocol: ``name``, ``privacy`` ("central":
noise on the tables, or "local": on each record), ``discrete``, ε, δ, ``describe`` /
``to_dict`` and ``release`` (the tables training sees: a seeded simulation).  Each central
one is a :class:`NoiseMechanism` too: ``scale`` (the parameter of its density,
counts), ``std``, ``density`` ("gauss" or "laplace": the shape exp(−x²/2s²) or exp(−|x|/s)
the MRF-N posterior uses), ``sample``, ``from_dict`` and ``scaled``.
:func:`make_mechanism` makes any of them by name.

========================  ==========  ============================  ===================
mechanism                 values      guarantee                     use
========================  ==========  ============================  ===================
``laplace``               floats      ε-DP, b = Δ1/ε                simulations
``gaussian``              floats      (ε, δ)-DP, analytic σ         simulations
``discrete_laplace``      integers    ε-DP, t = Δ1/ε                releases (secure)
``discrete_gaussian``     integers    ρ-zCDP → (ε, δ), σ            releases (secure)
``local``                 floats      ε-local DP per person         simulations
========================  ==========  ============================  ===================

``local`` is randomized response on every record before aggregation
(:class:`~aggmrf_explore.privacy.local.RandomizedResponse`); its tables are unbiased
estimates, and their noise model is per cell (``privacy.local.CellGaussianNoise``).

Floating-point noise added to counts leaks through its low bits (Mironov 2012), so
releases handed to others use the discrete mechanisms (:func:`.release.publish`).

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
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ..errors import AggMRFError
from ..tables import AggregatedData, TableLayout
from . import sampling
from .additive import add_noise, check_exact
from .calibration import (
    CALIBRATIONS,
    ClassicGaussianWarning,
    analytic_gaussian_sigma,
    discrete_gaussian_epsilon,
    discrete_gaussian_sigma,
    gaussian_sigma,
    warn_classic,
)
from .checks import choice as _choice
from .checks import delta_value as _delta
from .checks import epsilon_value as _epsilon
from .checks import generator as _rng
from .checks import positive_finite as _positive_finite

__all__ = [
    "Mechanism",
    "NoiseMechanism",
    "LaplaceFamily",
    "GaussFamily",
    "IntegerNoise",
    "Records",
    "LaplaceMechanism",
    "GaussianMechanism",
    "DiscreteLaplaceMechanism",
    "DiscreteGaussianMechanism",
    "ACCOUNTINGS",
    "NEIGHBOURS",
    "sensitivity",
    "check_mechanism",
]

ACCOUNTINGS = ("both", "queries", "replace")  # what one record can change (``sensitivity``)
NEIGHBOURS = {
    "both": "add or remove one record (its count and label sum in every released table)",
    "queries": "add or remove one record, one column per table (the AdKDD'21 count: "
    "protects counts or label sums, not both)",
    "replace": "replace one record by another (its count and label sum in every table)",
}


Records = tuple[np.ndarray, np.ndarray]
"""Records as the mechanisms take them: (X (n, D) int codes, y (n,) labels in {0, 1})."""


@runtime_checkable
class Mechanism(Protocol):
    """What every privacy mechanism offers, central or local: what the pipeline needs."""

    name: ClassVar[str]
    privacy: ClassVar[str]  # "central": noise on the tables; "local": on each record
    discrete: ClassVar[bool]  # integer tables
    label: ClassVar[str]  # its name on a button, a legend, a table ("discrete Laplace")
    color: ClassVar[str]  # its colour in every plot ("#rrggbb")
    uses: ClassVar[tuple[str, ...]]  # the settings it reads (``settings.py`` names)
    epsilon: float
    delta: float

    @classmethod
    def from_settings(
        cls, epsilon, layout, delta=None, accounting=None, calibration=None
    ): ...  # the mechanism at these settings (those it does not use are None)

    def summary(self, names: list[str] | None = None) -> list[str]: ...  # markdown lines

    def describe(self) -> dict: ...  # JSON-able: "mechanism", "epsilon", "delta", …

    def to_dict(self) -> dict: ...

    def release(
        self, exact: AggregatedData, records: Records | None = None, seed: int | None = None
    ) -> AggregatedData: ...  # the tables training sees (a seeded simulation)


@runtime_checkable
class NoiseMechanism(Mechanism, Protocol):
    """A central mechanism: i.i.d. noise on every released count and label sum.  What MRF-N's
    posterior, the release files and the thinned halves of a release need of it."""

    density: ClassVar[str]  # "gauss" or "laplace": the noise density's shape

    @property
    def scale(self) -> float: ...  # the density's scale parameter (counts)

    @property
    def std(self) -> float: ...  # the noise's standard deviation (counts)

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray: ...

    def scaled(self, factor: float) -> NoiseMechanism: ...

    def noise_density(self, x: np.ndarray) -> np.ndarray: ...  # density, or pmf if discrete


# ---------------------------------------------------------------------- what the mechanisms share
class _Shared:
    """What every central mechanism does the same way, written once.

    A subclass names its sensitivity field (``_sensitivity``: "l1_sensitivity" or
    "l2_sensitivity") and the key its noise level has in :meth:`describe` (``_level``:
    "scale" or "sigma"), and may add :meth:`_details` (more keys of :meth:`describe`),
    :meth:`_options` (more arguments of ``make_mechanism`` read from a description) and
    :meth:`_from_level` (a description that gives only the noise level).
    """

    privacy: ClassVar[str] = "central"
    discrete: ClassVar[bool] = False
    budget_known = True  # the continuous mechanisms make it a field: False when only σ is known
    _sensitivity: ClassVar[str]
    _level: ClassVar[str]

    @classmethod
    def from_settings(
        cls,
        epsilon: float,
        layout: TableLayout | int,
        delta: float | None = None,
        accounting: str | None = None,
        calibration: str | None = None,
    ) -> NoiseMechanism:
        """This mechanism at budget ε (and δ, calibration if it ``uses`` them) for the
        released tables of ``layout`` (or T): the sensitivity from ``sensitivity(layout,
        accounting)`` (accounting None: "both").  The factory, ``privacy.make_mechanism``,
        checks the settings against their declarations and the rules between them first."""
        l1, l2 = sensitivity(layout, accounting or "both")
        options = {"calibration": calibration or "analytic"} if "calibration" in cls.uses else {}
        level = l1 if cls._sensitivity == "l1_sensitivity" else l2
        return cls._from_budget(epsilon, delta, level, **options)

    def noise_density(self, x: np.ndarray) -> np.ndarray:
        """The noise's density at x (counts; 1/count), or its pmf P(noise = x) at integers x
        when ``discrete``: exp(``log_density``) or ``pmf``."""
        if self.discrete:
            return self.pmf(x)
        return np.exp(self.log_density(x))

    def describe(self) -> dict:
        """The mechanism, ε, δ, its noise level (counts), std (counts), its sensitivity and
        :meth:`_details`; ε and δ are None (and ``budget`` "unknown") when only the noise
        level is known."""
        out = {
            "mechanism": self.name,
            "epsilon": None,
            "delta": None,
            self._level: self.scale,
            "std": self.std,
        }
        if not self.budget_known:
            return {**out, "budget": "unknown"}
        out.update(epsilon=self.epsilon, delta=self.delta)
        return {**out, self._sensitivity: getattr(self, self._sensitivity), **self._details()}

    def _details(self) -> dict:
        return {}

    def release(
        self, exact: AggregatedData, records: Records | None = None, seed: int | None = None
    ) -> AggregatedData:
        """``exact`` (the exact aggregates) with this mechanism's noise, drawn from
        ``np.random.default_rng(seed)``, on every released count and label sum
        (:func:`.additive.add_noise`): a simulation.  ``records`` is not used: central noise
        goes on the tables."""
        return add_noise(check_exact(exact), self, seed, secure=False)

    def to_dict(self) -> dict:
        """The JSON-able form (release.json's ``noise``): :meth:`describe` with ``sigma``
        set to the noise's standard deviation (counts)."""
        return {**self.describe(), "sigma": self.std}

    @classmethod
    def from_dict(cls, d: dict, layout: TableLayout | int | None = None) -> NoiseMechanism:
        """Inverse of :meth:`to_dict`; also reads the shorter forms people write by hand.

        ``{"epsilon", <sensitivity>, …}`` (what :meth:`to_dict` writes; δ defaults to 1e-7):
        this mechanism;  ``{"epsilon"[, "delta", "accounting"]}`` with ``layout``: the
        sensitivity from ``sensitivity(layout, accounting)``;  otherwise the noise level
        alone, where the mechanism accepts one (:meth:`_from_level`).  ``mechanism``, if
        given, must be this mechanism's name.
        """
        kind = str(d.get("mechanism", cls.name)).lower()
        if kind != cls.name:
            raise AggMRFError(f"a {kind!r} description is not a {cls.name} mechanism.")
        epsilon, delta = d.get("epsilon"), d.get("delta", 1e-7)
        if epsilon is not None and cls._sensitivity in d:
            return cls._from_budget(epsilon, delta, d[cls._sensitivity], **cls._options(d))
        if epsilon is not None and layout is not None:
            delta = delta if "delta" in cls.uses else None
            return cls.from_settings(epsilon, layout, delta, d.get("accounting"), **cls._options(d))
        return cls._from_level(d)

    @classmethod
    def _options(cls, d: dict) -> dict:
        return {}

    @classmethod
    def _from_level(cls, d: dict) -> NoiseMechanism:
        raise AggMRFError(f"a {cls.name} 'noise' needs epsilon and {cls._sensitivity}.")

    def scaled(self, factor: float) -> NoiseMechanism:
        """The noise × ``factor`` > 0: everything kept but the sensitivity, × ``factor``
        (every calibration's σ, and the Laplace scale, is linear in it)."""
        f = _positive_finite("factor", factor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClassicGaussianWarning)
            return replace(self, **{self._sensitivity: getattr(self, self._sensitivity) * f})


class IntegerNoise:
    """Integer noise (the discrete mechanisms): secure or seeded draws of ``name`` at ``scale``."""

    discrete: ClassVar[bool] = True

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """Integer noise (int64) of the given shape: from OpenDP and the operating system's
        secure generator when ``rng`` is None, else from the seeded Generator (a simulation)."""
        laplace = self.density == "laplace"  # the shape: discrete Laplace or Gaussian
        if rng is None:
            n = int(np.prod(size))
            kind = "discrete_laplace" if laplace else "discrete_gaussian"
            return sampling.secure_integer_noise(kind, self.scale, n).reshape(size)
        g = _rng(rng)
        if laplace:
            return sampling.seeded_discrete_laplace(self.scale, size, g)
        return sampling.seeded_discrete_gaussian(self.scale, size, g)

    def pmf(self, x: np.ndarray | int) -> np.ndarray:
        """P(noise = x), elementwise, for integers x (counts)."""
        if self.density == "laplace":
            return sampling.discrete_laplace_pmf(x, self.scale)
        return sampling.discrete_gaussian_pmf(x, self.scale)


@dataclass(frozen=True)
class LaplaceFamily(_Shared):
    """ε-DP with L1 sensitivity Δ1 > 0 (counts): noise of scale b = Δ1/ε, density ∝ exp(−|x|/b)."""

    epsilon: float
    l1_sensitivity: float
    budget_known: bool = True  # False when only the noise level was declared
    delta: ClassVar[float] = 0.0
    density: ClassVar[str] = "laplace"
    uses: ClassVar[tuple[str, ...]] = ("epsilon", "accounting")
    _sensitivity: ClassVar[str] = "l1_sensitivity"
    _level: ClassVar[str] = "scale"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _epsilon(self.epsilon))
        l1 = _positive_finite("l1_sensitivity", self.l1_sensitivity)
        object.__setattr__(self, "l1_sensitivity", l1)

    @property
    def scale(self) -> float:
        """The scale b = Δ1/ε (counts)."""
        return self.l1_sensitivity / self.epsilon

    @classmethod
    def _from_budget(cls, epsilon, delta, l1_sensitivity) -> NoiseMechanism:
        return cls(epsilon, l1_sensitivity)

    def summary(self, names: list[str] | None = None) -> list[str]:
        """Its scale and standard deviation, in records (markdown)."""
        integer = " (integer noise)" if self.discrete else ""
        b = "t" if self.discrete else "b"
        return [
            f"**{self.label}**{integer} scale {b} = {self.scale:.3g}, "
            f"noise std = **{self.std:.3g}** records"
        ]

    @classmethod
    def _from_level(cls, d: dict) -> NoiseMechanism:
        if d.get("scale") is None:
            raise AggMRFError(f"a {cls.name} 'noise' needs epsilon (+ l1_sensitivity) or scale.")
        return cls(1.0, float(d["scale"]), budget_known=False)


@dataclass(frozen=True)
class GaussFamily(_Shared):
    """(ε, δ)-DP with L2 sensitivity Δ2 > 0 (counts): noise of density ∝ exp(−x²/(2σ²)),
    σ (``sigma``, counts) from :meth:`_calibrate`; 0 < δ < 1."""

    epsilon: float
    delta: float
    l2_sensitivity: float
    density: ClassVar[str] = "gauss"
    uses: ClassVar[tuple[str, ...]] = ("epsilon", "delta", "accounting")
    _sensitivity: ClassVar[str] = "l2_sensitivity"
    _level: ClassVar[str] = "sigma"

    def __post_init__(self) -> None:
        for key, value in self._checked().items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "sigma", self._calibrate())

    def _checked(self) -> dict:
        return {
            "epsilon": _epsilon(self.epsilon),
            "delta": _delta(self.delta),
            "l2_sensitivity": _positive_finite("l2_sensitivity", self.l2_sensitivity),
        }

    @property
    def scale(self) -> float:
        """σ (counts)."""
        return self.sigma

    @property
    def std(self) -> float:
        """σ (counts; for the discrete Gaussian its variance is below σ² by less than 10⁻⁸
        when σ ≥ 1)."""
        return self.sigma

    @classmethod
    def _from_budget(cls, epsilon, delta, l2_sensitivity, **options) -> NoiseMechanism:
        if delta is None:
            raise AggMRFError(
                f"the {cls.name} mechanism needs δ (delta) with 0 < δ < 1, e.g. 1e-7."
            )
        return cls(epsilon, delta, l2_sensitivity, **options)


# ---------------------------------------------------------------------- continuous (simulations)
@dataclass(frozen=True)
class LaplaceMechanism(LaplaceFamily):
    """ε-DP Laplace mechanism: i.i.d. Laplace(0, b) noise with b = Δ1/ε.

    epsilon : privacy parameter ε > 0;  l1_sensitivity : Δ1 > 0 (in counts);
    budget_known : False when only the noise level was declared (ε = 1 then means nothing).
    """

    budget_known: bool = True
    name: ClassVar[str] = "laplace"
    label: ClassVar[str] = "Laplace"
    color: ClassVar[str] = "#1f77b4"

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

    @classmethod
    def _from_level(cls, d: dict) -> LaplaceMechanism:
        """``{"scale"}`` or ``{"sigma"}`` (counts, σ = √2·b): the noise level only."""
        scale = d.get("scale")
        if scale is None and d.get("sigma") is not None:
            scale = float(d["sigma"]) / math.sqrt(2.0)
        if scale is None:
            raise AggMRFError("a laplace 'noise' needs epsilon (+ l1_sensitivity) or scale.")
        return cls(1.0, float(scale), budget_known=False)


@dataclass(frozen=True)
class GaussianMechanism(GaussFamily):
    """(ε, δ)-DP Gaussian mechanism: i.i.d. N(0, σ²) noise, σ from ``calibration``.

    epsilon : ε > 0;  delta : 0 < δ < 1;  l2_sensitivity : Δ2 > 0 (counts);
    calibration : "analytic" (default, tight), "classic" or "adkdd21";
    budget_known : False when only σ was declared (held in ``l2_sensitivity``; ε, δ mean
    nothing).  ``sigma`` (= ``scale`` = ``std``, counts) is computed from them.
    """

    calibration: Literal["analytic", "classic", "adkdd21"] = "analytic"
    budget_known: bool = True
    sigma: float = field(init=False)
    name: ClassVar[str] = "gaussian"
    label: ClassVar[str] = "Gaussian"
    color: ClassVar[str] = "#ff7f0e"
    uses: ClassVar[tuple[str, ...]] = ("epsilon", "delta", "accounting", "calibration")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.calibration == "classic":
            warn_classic(self.epsilon, stacklevel=3)

    def _checked(self) -> dict:
        return {
            **super()._checked(),
            "calibration": _choice("calibration", self.calibration, CALIBRATIONS),
        }

    def _calibrate(self) -> float:
        if not self.budget_known:  # only σ was declared: it is held in l2_sensitivity
            return self.l2_sensitivity
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClassicGaussianWarning)
            return gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity, self.calibration)

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

    def _details(self) -> dict:
        return {"calibration": self.calibration}

    def summary(self, names: list[str] | None = None) -> list[str]:
        """σ under each calibration at the same (ε, δ, Δ2), in records (markdown)."""
        sig = {}
        for c in ("analytic", "classic", "adkdd21"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ClassicGaussianWarning)
                try:
                    sig[c] = gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity, c)
                except AggMRFError:
                    sig[c] = float("nan")
        note = "" if self.epsilon <= 1.0 else " (not valid for ε > 1)"
        return [
            f"**Gaussian σ**: analytic **{sig['analytic']:.3g}** · classic "
            f"{sig['classic']:.3g}{note} · AdKDD'21 {sig['adkdd21']:.3g} records"
        ]

    @classmethod
    def _options(cls, d: dict) -> dict:
        return {"calibration": d.get("calibration", "analytic")}

    @classmethod
    def _from_level(cls, d: dict) -> GaussianMechanism:
        """``{"sigma"}`` or ``{"scale"}`` (counts): the noise level only."""
        sigma = d.get("sigma", d.get("scale"))
        if sigma is None:
            raise AggMRFError("a gaussian 'noise' needs epsilon (+ l2_sensitivity) or sigma.")
        return cls(1.0, 1e-6, float(sigma), budget_known=False)


# ---------------------------------------------------------------------- discrete (releases)
@dataclass(frozen=True)
class DiscreteLaplaceMechanism(IntegerNoise, LaplaceFamily):
    """ε-DP discrete Laplace (two-sided geometric) mechanism: P(x) ∝ exp(−|x|/t), t = Δ1/ε.

    epsilon : ε > 0;  l1_sensitivity : Δ1 > 0 (counts).  Integer noise.  A description
    with only ``scale`` (t, counts) gives a mechanism whose budget is unknown
    (``budget_known`` False: ε and δ are None in :meth:`describe`).
    """

    name: ClassVar[str] = "discrete_laplace"
    twin: ClassVar[str] = "laplace"  # the continuous mechanism it replaces in a release
    label: ClassVar[str] = "discrete Laplace"
    color: ClassVar[str] = "#17becf"

    @property
    def std(self) -> float:
        """√(2q)/(1 − q), q = e^(−1/t): the exact standard deviation (counts)."""
        q = math.exp(-1.0 / self.scale)
        return math.sqrt(2.0 * q) / (1.0 - q)

    def scaled(self, factor: float) -> LaplaceMechanism:
        """The noise × ``factor``, no longer integer: its continuous Laplace twin × factor
        (an approximation, used for the halves of a thinned release)."""
        return LaplaceMechanism(self.epsilon, self.l1_sensitivity).scaled(factor)


@dataclass(frozen=True)
class DiscreteGaussianMechanism(IntegerNoise, GaussFamily):
    """(ε, δ)-DP discrete Gaussian mechanism N_Z(0, σ²): P(x) ∝ exp(−x²/(2σ²)) on the integers.

    epsilon : ε > 0;  delta : 0 < δ < 1;  l2_sensitivity : Δ2 > 0 (counts).  ``sigma``
    (counts) is the smallest σ whose zCDP bound ρ = Δ2²/(2σ²), converted, gives (ε, δ)
    (:func:`.calibration.discrete_gaussian_sigma`); ``sigma_continuous`` is the analytic σ
    the continuous mechanism would need, for comparison.  Integer noise.  A bare σ is a
    continuous "gaussian" noise level.
    """

    sigma: float = field(init=False)
    name: ClassVar[str] = "discrete_gaussian"
    twin: ClassVar[str] = "gaussian"  # the continuous mechanism it replaces in a release
    label: ClassVar[str] = "discrete Gaussian"
    color: ClassVar[str] = "#8c564b"

    def _calibrate(self) -> float:
        return discrete_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)

    @property
    def rho(self) -> float:
        """ρ = Δ2²/(2σ²), the zCDP the release satisfies."""
        return self.l2_sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def sigma_continuous(self) -> float:
        """The analytic σ of the continuous Gaussian at the same (ε, δ, Δ2)."""
        return analytic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)

    def _details(self) -> dict:
        return {"calibration": "zcdp", "rho": self.rho, "sigma_continuous": self.sigma_continuous}

    def summary(self, names: list[str] | None = None) -> list[str]:
        """σ, its zCDP ρ and the continuous mechanism's σ, in records (markdown)."""
        return [
            f"**discrete Gaussian σ** (integer noise; its budget in zero-concentrated DP, "
            f"ρ = {self.rho:.3g}, the same guarantee as ε, δ in another unit): "
            f"**{self.sigma:.3g}** records · the continuous one's analytic σ: "
            f"{self.sigma_continuous:.3g}"
        ]

    def epsilon_at(self, delta: float) -> float:
        """The ε this release satisfies at another δ."""
        return discrete_gaussian_epsilon(self.sigma, delta, self.l2_sensitivity)

    def scaled(self, factor: float) -> GaussianMechanism:
        """The noise × ``factor``, no longer integer: the continuous Gaussian of σ × factor
        (an approximation, used for the halves of a thinned release)."""
        g = GaussianMechanism(self.epsilon, self.delta, self.l2_sensitivity)
        return g.scaled(factor * self.sigma / g.sigma)


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


def check_mechanism(mechanism: object) -> NoiseMechanism:
    """``mechanism`` if it is one of this module's central mechanisms, else an error."""
    if not isinstance(mechanism, _Shared):
        raise AggMRFError(f"expected a privacy mechanism (see make_mechanism); got {mechanism!r}.")
    return mechanism
