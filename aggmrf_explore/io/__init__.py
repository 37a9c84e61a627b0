"""Files: releases (aggregated tables + release.json) and fitted models, read and written.

``release``: :func:`write_release` / :func:`read_release` (the reader's checks are named
steps), ``model``: :func:`save_model` / :func:`load_model`.  The :class:`Schema` they store
is the encoder's public form (:mod:`aggmrf_explore.encoding`).

Every reader treats its file as hostile input (README "Bad input"): ``manifest`` checks
release.json (strict JSON, every field, confined table files, byte caps), ``fields`` the
typed fields shared with model files, ``formula`` neutralises spreadsheet formulas in every
CSV written and restores them on reading.
"""

from .formula import neutralise_cell, neutralise_frame, restore_cell, restore_frame
from .model import (
    LoadedModel,
    check_model_path,
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
    read_release_noise,
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
    "read_release_noise",
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
    "check_model_path",
    "neutralise_cell",
    "restore_cell",
    "neutralise_frame",
    "restore_frame",
]
