# TEMPORARY shim (issue 12): remove at integration
"""Renamed: :mod:`aggmrf_explore.model_selection` (records-free model selection)."""

from .model_selection import (  # noqa: F401
    DEFAULT_MULTIPLIERS,
    EXTRA_SWEEPS,
    METHODS,
    PRIOR_SAMPLES,
    RULES,
    AggregatedScore,
    LambdaChoice,
    PathPoint,
    Reference,
    aggregated_nllh,
    choose_lambda_theta,
    cross_fit_losses,
    cross_fit_nllh,
    fit_path,
    fit_reference,
    lambda_grid,
    leave_tables_out,
    pick,
    predicted_rates,
    sample_codes,
    settings_with_choice,
    split_cv,
    split_release,
    sub_release,
)
