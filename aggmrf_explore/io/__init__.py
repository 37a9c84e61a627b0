"""Files: releases (aggregated tables + release.json) and fitted models, read and written.

``release``: :func:`write_release` / :func:`read_release` (the reader's checks are named
steps), ``model``: :func:`save_model` / :func:`load_model`.  The :class:`Schema` they store
is the encoder's public form (:mod:`aggmrf_explore.encoding`).
"""

from .model import (
    LoadedModel,
    export_model_csv,
    export_model_json,
    load_model,
    model_from_dict,
    model_to_dict,
    save_model,
)
from .release import (
    RELEASE_FILE,
    Release,
    ReleaseWarning,
    Schema,
    mechanism_from_meta,
    noise_meta,
    read_release,
    read_schema,
    release_from_frames,
    write_release,
)

__all__ = [
    "Schema",
    "Release",
    "ReleaseWarning",
    "RELEASE_FILE",
    "write_release",
    "read_release",
    "read_schema",
    "release_from_frames",
    "mechanism_from_meta",
    "noise_meta",
    "LoadedModel",
    "export_model_json",
    "export_model_csv",
    "save_model",
    "load_model",
    "model_to_dict",
    "model_from_dict",
]
