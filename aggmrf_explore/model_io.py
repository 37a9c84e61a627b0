# TEMPORARY shim (issue 12): remove at integration
"""Moved: models are saved and loaded by :mod:`aggmrf_explore.io.model`."""

from .io.model import (  # noqa: F401
    LoadedModel,
    export_model_csv,
    export_model_json,
    load_model,
    model_from_dict,
    model_to_dict,
    save_model,
)
