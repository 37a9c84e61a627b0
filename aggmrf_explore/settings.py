"""Every training and noise setting, declared once: its kind, domain, label, help and unit.

The one list the other surfaces derive from (scikit-learn's ``_parameter_constraints``,
TensorFlow Playground's ``State.PROPS``):

* the core: ``TrainerSettings.validate`` and ``privacy.make_mechanism`` call
  :meth:`Setting.check`, which raises :class:`SettingError` naming the setting;
* the command line: each flag's argparse ``type`` is :func:`cli.numbers.of` of its setting;
* the explorer: the store's params take their bounds, choices, label and doc from here
  (``explorer.params.param_for``), and the URL decoder checks with :meth:`Setting.check`.

Each declaration also carries the setting's ``default`` (a value, or the name of a rule in
``mrf.default_settings`` such as "rule: α_θ = 1/T") and when it applies (``applies``: a
predicate over the other settings).  :func:`check_combination` is the one check of the
rules between settings (δ only for a mechanism that uses it, ε with every noisy one,
noise-aware training only with noise): the core, the command line and the explorer call it,
so each refuses the same combinations with the same words.

The mechanisms' names are not written here: they come from the mechanism registry
(``privacy.registry.REGISTRY``), and so does which settings each mechanism uses.

A surface may narrow what its controls *show* (a slider's soft range), never the domain.
To add a setting: declare it here, add the field to ``TrainerSettings`` (or the mechanism),
then the flag in ``cli/parser.py`` and the param in ``explorer/store/store.py``;
``tests/test_settings.py`` checks that every surface accepts and refuses the same values.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import AggMRFError
from .privacy.calibration import CALIBRATIONS
from .privacy.checks import DELTA_RANGE, EPSILON_RANGE
from .privacy.mechanisms import ACCOUNTINGS

__all__ = [
    "Setting",
    "SettingError",
    "SETTINGS",
    "GRADIENTS",
    "SEED_MAX",
    "setting",
    "check_combination",
    "applies",
]

SEED_MAX = 2**63 - 1
GRADIENTS = ("rescaled", "rescaled-paper", "true")


def _mechanism_names() -> tuple[str, ...]:
    """The registered mechanisms' names, in the registry's order (read when first asked:
    the registry imports this module)."""
    from .privacy.registry import REGISTRY

    return tuple(REGISTRY)


def _used_by_mechanism(name: str) -> Callable[[Mapping], bool]:
    """``applies`` of a setting a mechanism may use: the chosen mechanism ``uses`` it."""

    def applies(values: Mapping) -> bool:
        from .privacy.registry import mechanism_class

        return name in mechanism_class(values.get("mechanism") or "none").uses

    applies.__doc__ = f"the chosen mechanism uses {name}"
    return applies


def _noisy(values: Mapping) -> bool:
    """the chosen mechanism adds noise"""
    from .privacy.registry import mechanism_class

    return bool(mechanism_class(values.get("mechanism") or "none").uses)


class SettingError(AggMRFError):
    """A value outside its setting's domain; ``setting`` names it (each surface maps the
    name to its own flag or control)."""

    def __init__(self, setting: str, message: str):
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class Setting:
    """One setting's declaration.

    name : the field's name in ``TrainerSettings`` / the store;  kind : "int", "float",
    "choice" or "bool";  lo, hi : bounds of a number (None: unbounded), ``lo_open`` /
    ``hi_open`` exclude them;  choices_of : the values of a "choice" (a tuple, or a function
    returning one: the mechanisms, from their registry; read them as ``choices``);  label :
    short name on a control;  help : one or two sentences in the lessons' words;  unit : of
    a number;  flag : the command line's flag (None: not on the command line);  default :
    the value a surface starts from, or a rule's name ("rule: …", computed by
    ``mrf.default_settings`` from the tables), or None (must be given where it applies);
    applies : when the setting means something, a predicate over the other settings (None:
    always);  options : a choice's words on a control, ((value, words), …) (the others show
    as themselves).
    """

    name: str
    kind: str
    label: str
    help: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices_of: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    flag: str | None = None
    default: object = None
    applies: Callable[[Mapping], bool] | None = None
    options: tuple[tuple[str, str], ...] = ()

    @property
    def choices(self) -> tuple[str, ...]:
        """The values of a "choice" setting (empty for the others)."""
        c = self.choices_of
        return tuple(c()) if callable(c) else c

    @property
    def title(self) -> str:
        """How messages name it: "δ (delta)", or "seed"."""
        return self.label if self.label == self.name else f"{self.label} ({self.name})"

    def option_words(self) -> dict[str, str]:
        """{words on a control: value} of every choice, in declared order."""
        words = dict(self.options)
        return {words.get(c, c): c for c in self.choices}

    def domain(self) -> str:
        """The domain in words, e.g. "an integer from 10 to 1,000,000"."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "int":
            return f"an integer from {int(self.lo):,} to {int(self.hi):,}"
        parts = []
        if self.lo is not None:
            parts.append(f"{'>' if self.lo_open else '≥'} {self.lo:g}")
        if self.hi is not None:
            parts.append(f"{'<' if self.hi_open else '≤'} {self.hi:g}")
        return "a finite number " + " and ".join(parts)

    def check(self, value: object) -> object:
        """``value`` cleaned to the setting's type (an int, float, str or bool), or a
        :class:`SettingError` saying what the value must be.

        Numbers may come as text (a URL, a flag): "1e3" is a float, an int must be written
        with digits only ("1000", "1_000"), and a float value is never an int.  A choice
        may be written in any case, with "-" for "_" or "_" for "-" ("discrete-gaussian"
        is "discrete_gaussian")."""
        bad = SettingError(self.name, f"{self.title} must be {self.domain()}; got {value!r:.60}.")
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
                return value.strip().lower() in ("true", "1")
            raise bad
        if self.kind == "choice":
            v = value.strip().lower() if isinstance(value, str) else value
            if isinstance(v, str) and v not in self.choices:
                v = next((c for c in self.choices if _spelled(c) == _spelled(v)), v)
            if v not in self.choices:
                raise bad
            return v
        if isinstance(value, bool):
            raise bad
        if self.kind == "int":
            v = _as_int(value)
            if v is None or not self.lo <= v <= self.hi:
                raise bad
            return v
        v = _as_float(value)
        if v is None or not math.isfinite(v):
            raise bad
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            raise bad
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            raise bad
        return v


def _spelled(choice: str) -> str:
    return choice.replace("-", "_")


def _as_int(value: object) -> int | None:
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        t = value.strip().replace("_", "")
        if t and (t.isdigit() or (t[0] in "+-" and t[1:].isdigit())):
            return int(t)
    return None


def _as_float(value: object) -> float | None:
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


_ALL = (
    Setting(
        "n_gibbs",
        "int",
        "Gibbs samples n'",
        "How many synthetic records the Gibbs chain keeps. More samples make d̂ less "
        "noisy (the Monte-Carlo floor falls as 1/√n') and each iteration slower.",
        "samples",
        lo=1,
        hi=1_000_000,
        flag="--gibbs-samples",
        default="rule: n' = min(n, max(10 000, min(⌈n/10⌉, 400 000)))",
    ),
    Setting(
        "lambda_mu",
        "float",
        "λ_μ",
        "L2 penalty on the single-table weights μ. Keep it low "
        "(the paper uses 1): it only prevents numerical trouble.",
        lo=0.0,
        hi=1e12,
        flag="--lambda-mu",
        default=1.0,
    ),
    Setting(
        "lambda_theta",
        "float",
        "λ_θ",
        "L2 penalty on the label weights θ: larger values pull the logistic "
        "model towards the base rate, smaller ones let it over-fit noisy tables.",
        lo=0.0,
        hi=1e12,
        flag="--lambda-theta",
        default="rule: λ_θ = min(T/2, 50)",
    ),
    Setting(
        "step_mu",
        "float",
        "α_μ",
        "Step size of μ per iteration (before preconditioning). "
        "Too large and d̂ oscillates around d.",
        lo=0.0,
        hi=100.0,
        lo_open=True,
        flag="--step-mu",
        default="rule: α_μ = 1/T",
    ),
    Setting(
        "step_theta",
        "float",
        "α_θ",
        "Step size of θ per iteration. Smaller is steadier and "
        "slower; the default is 1/T for T released tables.",
        lo=0.0,
        hi=100.0,
        lo_open=True,
        flag="--step-theta",
        default="rule: α_θ = 1/T",
    ),
    Setting(
        "gradient",
        "choice",
        "gradient",
        "How θ's gradient is estimated: 'rescaled' (converges to the exact regularised optimum), "
        "'rescaled-paper' (the paper's d/d̂ ratio) or 'true' (the plain PCD gradient).",
        choices_of=GRADIENTS,
        flag="--gradient",
        default="rescaled",
        options=(("rescaled-paper", "rescaled (paper)"),),
    ),
    Setting(
        "precondition",
        "bool",
        "preconditioning",
        "Divide each step by a diagonal estimate of the curvature, "
        "so that every table learns at a similar speed.",
        default=True,
    ),
    Setting(
        "noise_aware",
        "bool",
        "noise-aware training (MRF-N)",
        "Model the privacy noise: fit the posterior mean of each exact "
        "count given its noisy value, instead of the noisy value itself.",
        flag="--noise-aware",
        default=False,
        applies=_noisy,
    ),
    Setting(
        "seed",
        "int",
        "seed",
        "Seed of everything random in a simulation (data split, noise, Gibbs sampler).",
        lo=0,
        hi=SEED_MAX,
        flag="--seed",
        default=0,
    ),
    Setting(
        "iterations",
        "int",
        "iterations",
        "PCD iterations to run.",
        "iterations",
        lo=1,
        hi=10**7,
        flag="--iterations",
        default="rule: max(3000, ⌈6/α_θ⌉)",
    ),
    Setting(
        "sampler",
        "choice",
        "sampler",
        "Gibbs kernel: full conditionals, Metropolis-within-Gibbs for large "
        "M_f, or auto (mh when some M_f > 1000)",
        choices_of=("auto", "gibbs", "mh"),
        flag="--sampler",
        default="auto",
    ),
    Setting(
        "mechanism",
        "choice",
        "mechanism",
        "How the released tables are protected: no noise, Laplace or Gaussian noise on every "
        "count (floats), their discrete twins (integer noise, what a release handed to others "
        "gets), or local randomized response on every record.",
        choices_of=_mechanism_names,
        default="none",
        # (no flag: each command takes its own part of the domain, cli/parser.py)
    ),
    Setting(
        "epsilon",
        "float",
        "ε",
        "Privacy budget: one person changes the odds of any conclusion "
        "by at most e^ε. Smaller is more private and noisier.",
        lo=EPSILON_RANGE[0],
        hi=EPSILON_RANGE[1],
        flag="--epsilon",
        default=1.0,
        applies=_used_by_mechanism("epsilon"),
    ),
    Setting(
        "delta",
        "float",
        "δ",
        "The probability allowed to escape the e^ε bound "
        "(Gaussian mechanisms); keep it far below 1/n.",
        lo=DELTA_RANGE[0],
        hi=DELTA_RANGE[1],
        hi_open=True,
        flag="--delta",
        default=1e-7,
        applies=_used_by_mechanism("delta"),
    ),
    Setting(
        "accounting",
        "choice",
        "accounting",
        "What one record can change: 'both' (its count and label sum in "
        "every table, Δ1 = 2T), 'queries' (the AdKDD'21 count: T queries) "
        "or 'replace' (one record swapped for another, Δ1 = 4T).",
        choices_of=ACCOUNTINGS,
        flag="--accounting",
        default="both",
        applies=_used_by_mechanism("accounting"),
        options=(
            ("both", "counts and label sums (2T)"),
            ("queries", "T queries (paper)"),
            ("replace", "replace one record (4T)"),
        ),
    ),
    Setting(
        "calibration",
        "choice",
        "calibration",
        "How the continuous Gaussian's σ is chosen: 'analytic' (the exact curve, any "
        "ε), 'classic' (valid only for ε < 1) or 'adkdd21' (the challenge's formula).",
        choices_of=CALIBRATIONS,
        flag="--calibration",
        default="analytic",
        applies=_used_by_mechanism("calibration"),
        options=(
            ("analytic", "analytic (Balle & Wang)"),
            ("classic", "classic"),
            ("adkdd21", "AdKDD'21"),
        ),
    ),
)

SETTINGS: dict[str, Setting] = {s.name: s for s in _ALL}


def setting(name: str) -> Setting:
    """The declaration of setting ``name`` (an AggMRFError for an unknown name)."""
    try:
        return SETTINGS[name]
    except KeyError:
        raise AggMRFError(f"unknown setting {name!r}; known: {', '.join(SETTINGS)}.") from None


def applies(name: str, values: Mapping) -> bool:
    """Whether setting ``name`` means something under ``values`` (the other settings, by
    name; a missing mechanism is "none")."""
    pred = setting(name).applies
    return True if pred is None else bool(pred(values))


def check_combination(values: Mapping) -> None:
    """The rules between settings, checked once for every surface.

    Raise a :class:`SettingError` naming the first setting of ``values`` given (not None,
    and not False for a switch) where it does not apply, e.g. δ with the Laplace mechanism
    or noise-aware training without noise; or ε missing (None) where the mechanism uses
    it.  Settings not in ``values`` are not checked."""
    from .privacy.registry import mechanism_class, users_of

    mech = setting("mechanism").check(values.get("mechanism") or "none")
    cls = mechanism_class(mech)
    for name in [n for n in SETTINGS if n in values]:  # (in declared order: same words)
        value = values[name]
        if value is None or value is False or applies(name, values):
            continue
        decl = setting(name)
        if decl.applies is _noisy or not cls.uses:
            needs = "needs a noise mechanism (choose one, e.g. laplace)"
        else:
            needs = f"goes only with {' or '.join(users_of(name))}"
        raise SettingError(
            name, f"{decl.title} {needs}; mechanism {mech} does not use it: leave it out."
        )
    if "epsilon" in cls.uses and values.get("epsilon", 0) is None:
        raise SettingError(
            "epsilon", f"mechanism {mech} needs ε (epsilon), the privacy budget, e.g. 1."
        )
