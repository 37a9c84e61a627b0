"""Privacy mechanisms: what noise a release gets, and how much it protects.

Every mechanism follows the :class:`Mechanism` protocol: ``name``, ε, δ, ``scale`` (the
parameter of its density, counts), ``std``, ``discrete``, ``density`` ("gauss" or
"laplace": the shape exp(−x²/2s²) or exp(−|x|/s) the MRF-N posterior uses), ``sample``,
``describe`` / ``to_dict`` / ``from_dict`` and ``scaled``.

========================  ==========  ============================  ===================
mechanism                 values      guarantee                     use
========================  ==========  ============================  ===================
``laplace``               floats      ε-DP, b = Δ1/ε                simulations
``gaussian``              floats      (ε, δ)-DP, analytic σ         simulations
``discrete_laplace``      integers    ε-DP, t = Δ1/ε                releases (secure)
``discrete_gaussian``     integers    ρ-zCDP → (ε, δ), σ            releases (secure)
========================  ==========  ============================  ===================

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
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ..errors import AggMRFError
from ..settings import setting
from ..tables import TableLayout
from . import sampling
from .calibration import (
    CALIBRATIONS,
    ClassicGaussianWarning,
    analytic_gaussian_sigma,
    discrete_gaussian_epsilon,
    discrete_gaussian_sigma,
    gaussian_sigma,
)
from .checks import choice as _choice
from .checks import delta_value as _delta
from .checks import generator as _rng
from .checks import positive_finite as _positive_finite

__all__ = [
    "Mechanism",
    "LaplaceMechanism",
    "GaussianMechanism",
    "DiscreteLaplaceMechanism",
    "DiscreteGaussianMechanism",
    "MECHANISMS",
    "DISCRETE",
    "ACCOUNTINGS",
    "NEIGHBOURS",
    "sensitivity",
    "make_mechanism",
    "mechanism_from_dict",
    "check_mechanism",
]

MECHANISMS = ("none", "laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
DISCRETE = {"laplace": "discrete_laplace", "gaussian": "discrete_gaussian"}  # continuous → discrete
ACCOUNTINGS = ("both", "queries", "replace")
NEIGHBOURS = {
    "both": "add or remove one record (its count and label sum in every released table)",
    "queries": "add or remove one record, one column per table (the AdKDD'21 count: "
    "protects counts or label sums, not both)",
    "replace": "replace one record by another (its count and label sum in every table)",
}


@runtime_checkable
class Mechanism(Protocol):
    """What the release, the trainer and the readers need of a noise mechanism."""

    name: ClassVar[str]
    discrete: ClassVar[bool]
    density: ClassVar[str]  # "gauss" or "laplace": the noise density's shape
    epsilon: float
    delta: float

    @property
    def scale(self) -> float: ...  # the density's scale parameter (counts)

    @property
    def std(self) -> float: ...  # the noise's standard deviation (counts)

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray: ...

    def describe(self) -> dict: ...

    def to_dict(self) -> dict: ...

    def scaled(self, factor: float) -> Mechanism: ...


# ---------------------------------------------------------------------- continuous (simulations)
@dataclass(frozen=True)
class LaplaceMechanism:
    """ε-DP Laplace mechanism: i.i.d. Laplace(0, b) noise with b = Δ1/ε.

    epsilon : privacy parameter ε > 0;  l1_sensitivity : Δ1 > 0 (in counts).
    """

    epsilon: float
    l1_sensitivity: float
    budget_known: bool = True  # False: only the noise level was declared (ε means nothing)
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
        """ε, δ, scale, std and Δ1; ε and δ are None when only the noise level is known."""
        if not self.budget_known:
            return {"mechanism": self.name, "epsilon": None, "delta": None,
                    "scale": self.scale, "std": self.std, "budget": "unknown"}  # fmt: skip
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
        if d.get("epsilon") is not None and "l1_sensitivity" in d:
            return cls(d["epsilon"], d["l1_sensitivity"])
        if d.get("epsilon") is not None and layout is not None:
            return make_mechanism(
                "laplace", d["epsilon"], None, layout, d.get("accounting", "both")
            )
        scale = d.get("scale")
        if scale is None and d.get("sigma") is not None:
            scale = float(d["sigma"]) / math.sqrt(2.0)
        if scale is None:
            raise AggMRFError("a laplace 'noise' needs epsilon (+ l1_sensitivity) or scale.")
        return cls(1.0, float(scale), budget_known=False)

    discrete: ClassVar[bool] = False
    density: ClassVar[str] = "laplace"

    def scaled(self, factor: float) -> LaplaceMechanism:
        """The noise × ``factor`` > 0 (ε kept, Δ1 × factor)."""
        f = _positive_finite("factor", factor)
        return LaplaceMechanism(self.epsilon, self.l1_sensitivity * f, self.budget_known)


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
    budget_known: bool = True  # False: only σ was declared, held in l2_sensitivity (no ε, δ)
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
            sigma = gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity, self.calibration)
        if not self.budget_known:  # only σ was declared: it is held in l2_sensitivity
            sigma = self.l2_sensitivity
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
        """ε, δ, σ, Δ2 and the calibration; ε and δ are None when only σ is known."""
        if not self.budget_known:
            return {"mechanism": self.name, "epsilon": None, "delta": None,
                    "sigma": self.sigma, "std": self.sigma, "budget": "unknown"}  # fmt: skip
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
        if d.get("epsilon") is not None and "l2_sensitivity" in d:
            return cls(d["epsilon"], d.get("delta", 1e-7), d["l2_sensitivity"], calib)
        if d.get("epsilon") is not None and layout is not None:
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
        return cls(1.0, 1e-6, float(sigma), budget_known=False)

    discrete: ClassVar[bool] = False
    density: ClassVar[str] = "gauss"

    def scaled(self, factor: float) -> GaussianMechanism:
        """The noise × ``factor`` > 0 (ε, δ, calibration kept, Δ2 × factor: σ is linear in it)."""
        f = _positive_finite("factor", factor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClassicGaussianWarning)
            return GaussianMechanism(
                self.epsilon,
                self.delta,
                self.l2_sensitivity * f,
                self.calibration,
                self.budget_known,
            )


# ---------------------------------------------------------------------- discrete (releases)
def _integer_noise(mech, size, rng) -> np.ndarray:
    """Integer draws: secure (OpenDP) when ``rng`` is None, else from the seeded Generator."""
    if rng is None:
        n = int(np.prod(size))
        return sampling.secure_integer_noise(mech.name, mech.scale, n).reshape(size)
    g = _rng(rng)
    if mech.name == "discrete_laplace":
        return sampling.seeded_discrete_laplace(mech.scale, size, g)
    return sampling.seeded_discrete_gaussian(mech.scale, size, g)


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
    """ε-DP discrete Laplace (two-sided geometric) mechanism: P(x) ∝ exp(−|x|/t), t = Δ1/ε.

    epsilon : ε > 0;  l1_sensitivity : Δ1 > 0 (counts).  Integer noise.
    """

    epsilon: float
    l1_sensitivity: float
    name: ClassVar[str] = "discrete_laplace"
    delta: ClassVar[float] = 0.0
    discrete: ClassVar[bool] = True
    density: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive_finite("epsilon", self.epsilon))
        l1 = _positive_finite("l1_sensitivity", self.l1_sensitivity)
        object.__setattr__(self, "l1_sensitivity", l1)

    @property
    def scale(self) -> float:
        """t = Δ1/ε (counts)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def std(self) -> float:
        """√(2q)/(1 − q), q = e^(−1/t): the exact standard deviation (counts)."""
        q = math.exp(-1.0 / self.scale)
        return math.sqrt(2.0 * q) / (1.0 - q)

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """Integer noise (int64): secure when ``rng`` is None, else seeded (a simulation)."""
        return _integer_noise(self, size, rng)

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
    def from_dict(
        cls, d: dict, layout: TableLayout | int | None = None
    ) -> DiscreteLaplaceMechanism:
        """Inverse of :meth:`to_dict`; ``{"epsilon"[, "accounting"]}`` with ``layout`` or
        ``{"scale"}`` (t, counts; ε = 1 then means nothing) are accepted too."""
        if "epsilon" in d and "l1_sensitivity" in d:
            return cls(d["epsilon"], d["l1_sensitivity"])
        if "epsilon" in d and layout is not None:
            return make_mechanism(cls.name, d["epsilon"], None, layout, d.get("accounting", "both"))
        if d.get("scale") is None:
            raise AggMRFError(
                "a discrete_laplace 'noise' needs epsilon (+ l1_sensitivity) or scale."
            )
        return cls(1.0, float(d["scale"]))

    def scaled(self, factor: float) -> LaplaceMechanism:
        """The noise × ``factor``, no longer integer: its continuous Laplace twin × factor
        (an approximation, used for the halves of a thinned release)."""
        return LaplaceMechanism(self.epsilon, self.l1_sensitivity).scaled(factor)


@dataclass(frozen=True)
class DiscreteGaussianMechanism:
    """(ε, δ)-DP discrete Gaussian mechanism N_Z(0, σ²): P(x) ∝ exp(−x²/(2σ²)) on the integers.

    epsilon : ε > 0;  delta : 0 < δ < 1;  l2_sensitivity : Δ2 > 0 (counts).  ``sigma``
    (counts) is the smallest σ whose zCDP bound ρ = Δ2²/(2σ²), converted, gives (ε, δ)
    (:func:`.calibration.discrete_gaussian_sigma`); ``sigma_continuous`` is the analytic σ
    the continuous mechanism would need, for comparison.  Integer noise.
    """

    epsilon: float
    delta: float
    l2_sensitivity: float
    sigma: float = field(init=False)
    name: ClassVar[str] = "discrete_gaussian"
    discrete: ClassVar[bool] = True
    density: ClassVar[str] = "gauss"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive_finite("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _delta(self.delta))
        l2 = _positive_finite("l2_sensitivity", self.l2_sensitivity)
        object.__setattr__(self, "l2_sensitivity", l2)
        object.__setattr__(self, "sigma", discrete_gaussian_sigma(self.epsilon, self.delta, l2))

    @property
    def scale(self) -> float:
        return self.sigma

    @property
    def std(self) -> float:
        """≈ σ (the discrete Gaussian's variance is below σ² by less than 10⁻⁸ for σ ≥ 1)."""
        return self.sigma

    @property
    def rho(self) -> float:
        """ρ = Δ2²/(2σ²), the zCDP the release satisfies."""
        return self.l2_sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def sigma_continuous(self) -> float:
        """The analytic σ of the continuous Gaussian at the same (ε, δ, Δ2)."""
        return analytic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)

    def sample(
        self, size: int | tuple[int, ...], rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """Integer noise (int64): secure when ``rng`` is None, else seeded (a simulation)."""
        return _integer_noise(self, size, rng)

    def describe(self) -> dict:
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sigma": self.sigma,
            "std": self.sigma,
            "l2_sensitivity": self.l2_sensitivity,
            "calibration": "zcdp",
            "rho": self.rho,
            "sigma_continuous": self.sigma_continuous,
        }

    def to_dict(self) -> dict:
        """The JSON-able form (release.json's ``noise``)."""
        return self.describe()

    @classmethod
    def from_dict(
        cls, d: dict, layout: TableLayout | int | None = None
    ) -> DiscreteGaussianMechanism:
        """Inverse of :meth:`to_dict`; ``{"epsilon"[, "delta", "accounting"]}`` with ``layout``
        is accepted too (δ defaults to 1e-7).  A bare σ is a continuous "gaussian" noise level."""
        if "epsilon" in d and "l2_sensitivity" in d:
            return cls(d["epsilon"], d.get("delta", 1e-7), d["l2_sensitivity"])
        if "epsilon" in d and layout is not None:
            return make_mechanism(
                cls.name, d["epsilon"], d.get("delta", 1e-7), layout, d.get("accounting", "both")
            )
        raise AggMRFError("a discrete_gaussian 'noise' needs epsilon and l2_sensitivity.")

    def epsilon_at(self, delta: float) -> float:
        """The ε this release satisfies at another δ."""
        return discrete_gaussian_epsilon(self.sigma, delta, self.l2_sensitivity)

    def scaled(self, factor: float) -> GaussianMechanism:
        """The noise × ``factor``, no longer integer: the continuous Gaussian of σ × factor
        (an approximation, used for the halves of a thinned release)."""
        g = GaussianMechanism(self.epsilon, self.delta, self.l2_sensitivity)
        return g.scaled(factor * self.sigma / g.sigma)


_CLASSES = {
    c.name: c
    for c in (
        LaplaceMechanism,
        GaussianMechanism,
        DiscreteLaplaceMechanism,
        DiscreteGaussianMechanism,
    )
}


# ---------------------------------------------------------------------- accounting
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
    """Mechanism for a layout: "none" → None, or one of ``MECHANISMS`` (δ ignored by the
    Laplace mechanisms, ``calibration`` used by the continuous Gaussian only).

    The sensitivity comes from ``sensitivity(layout, accounting)``.
    """
    kind = _choice("mechanism", name, MECHANISMS)
    if kind == "none":
        return None
    if layout is None:
        raise AggMRFError(f"mechanism {kind!r} needs the layout (or T) to compute its sensitivity.")
    if epsilon is None:
        raise AggMRFError(f"mechanism {kind!r} needs epsilon > 0.")
    epsilon = setting("epsilon").check(epsilon)
    calibration = setting("calibration").check(calibration)
    l1, l2 = sensitivity(layout, setting("accounting").check(accounting))
    if kind in ("laplace", "discrete_laplace"):
        return _CLASSES[kind](epsilon, l1)
    if delta is None:
        raise AggMRFError(f"the {kind} mechanism needs delta with 0 < delta < 1 (e.g. 1e-7).")
    delta = setting("delta").check(delta)
    if kind == "discrete_gaussian":
        return DiscreteGaussianMechanism(epsilon, delta, l2)
    return GaussianMechanism(epsilon, delta, l2, calibration)


def check_mechanism(mechanism: object) -> Mechanism:
    """``mechanism`` if it is one of this module's mechanisms, else an error."""
    if not isinstance(mechanism, tuple(_CLASSES.values())):
        raise AggMRFError(f"expected a privacy mechanism (see make_mechanism); got {mechanism!r}.")
    return mechanism


def mechanism_from_dict(d: dict, layout: TableLayout | int | None = None) -> Mechanism | None:
    """The mechanism a ``noise`` object describes (``{"mechanism": "none"}`` → None)."""
    kind = _choice("mechanism", str(d.get("mechanism", "none")), MECHANISMS)
    return None if kind == "none" else _CLASSES[kind].from_dict(d, layout)
