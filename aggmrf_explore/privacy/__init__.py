"""Differential privacy for released tables: mechanisms, calibration, releases, MRF-N.

* :mod:`.mechanisms` — the :class:`Mechanism` protocol (central and local), the continuous
  (simulation) and discrete (release) mechanisms and their sensitivity;
* :mod:`.registry` — every mechanism by name (one line each);
* :mod:`.factory` — ``make_mechanism``: one built from the settings, checked once;
* :mod:`.additive` — central noise added to exact tables (simulations and releases);
* :mod:`.calibration` — σ for (ε, δ): analytic Gaussian, zCDP of the discrete Gaussian;
* :mod:`.sampling` — exact integer samplers: secure (OpenDP) and seeded (simulations);
* :mod:`.release` — ``release`` (a seeded simulation, any mechanism) and ``publish`` (a
  release for others);
* :mod:`.posterior` — MRF-N's posterior means of the exact counts;
* :mod:`.local` — local privacy: randomized response on records and unbiased tables by
  channel inversion (``privacy.local``, imported with the package).
"""

from . import local
from .calibration import (
    CALIBRATIONS,
    ClassicGaussianWarning,
    achieved_delta,
    adkdd21_gaussian_sigma,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    discrete_gaussian_epsilon,
    discrete_gaussian_sigma,
    zcdp_epsilon,
)
from .factory import make_mechanism, mechanism_from_dict
from .mechanisms import (
    ACCOUNTINGS,
    NEIGHBOURS,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    NoiseMechanism,
    Records,
    check_mechanism,
    sensitivity,
)
from .posterior import (
    PRIORS,
    expected_noise,
    noise_aware_targets,
    posterior_mean_counts,
    scaled_noise,
)
from .registry import REGISTRY, NoMechanism, central_names, mechanism_class
from .release import (
    INSECURE_SEED,
    SECURE,
    SIMULATION,
    composed_epsilon,
    publish,
    release,
    release_guarantee,
)

__all__ = [
    "local",
    "ACCOUNTINGS",
    "CALIBRATIONS",
    "INSECURE_SEED",
    "NEIGHBOURS",
    "REGISTRY",
    "NoMechanism",
    "central_names",
    "mechanism_class",
    "release_guarantee",
    "PRIORS",
    "SECURE",
    "SIMULATION",
    "ClassicGaussianWarning",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "NoiseMechanism",
    "Records",
    "achieved_delta",
    "adkdd21_gaussian_sigma",
    "analytic_gaussian_sigma",
    "check_mechanism",
    "classic_gaussian_sigma",
    "composed_epsilon",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_sigma",
    "expected_noise",
    "make_mechanism",
    "mechanism_from_dict",
    "noise_aware_targets",
    "posterior_mean_counts",
    "publish",
    "release",
    "scaled_noise",
    "sensitivity",
    "zcdp_epsilon",
]
