# TEMPORARY shim (issue 12): remove at integration
"""Moved: releases are read and written by :mod:`aggmrf_explore.io.release`."""

from .io.release import (  # noqa: F401
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
