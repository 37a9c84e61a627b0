# TEMPORARY shim (issue 12): remove at integration
"""Old home of the explorer's session: now ``store.py`` (the session), ``problems.py``
(shared problems, releases, baselines) and ``caches.py`` (LRU cache, uploads, disk)."""

from .problems import (
    BASELINE_LABELS,
    CHEAP_BASELINES,
    DATASET_NAMES,
    DATASETS,
    GENERATED,
    SLOW_BASELINES,
    SUBSAMPLED,
    ProblemBundle,
    StoredBaseline,
    clear_caches,
    get_baselines,
    get_problem,
    get_release,
    noise_summary,
    peek_baselines,
    peek_problem,
    register_upload,
    upload_columns,
)
from .store import (
    DATA_KEYS,
    LIVE_KEYS,
    NOISE_KEYS,
    TRAINER_KEYS,
    URL_KEYS,
    ExplorerSession,
    error_message,
)

__all__ = [
    "BASELINE_LABELS", "CHEAP_BASELINES", "DATASET_NAMES", "DATASETS", "GENERATED",
    "SLOW_BASELINES", "SUBSAMPLED", "ProblemBundle", "StoredBaseline", "clear_caches",
    "get_baselines", "get_problem", "get_release", "noise_summary", "peek_baselines",
    "peek_problem", "register_upload", "upload_columns", "DATA_KEYS", "LIVE_KEYS",
    "NOISE_KEYS", "TRAINER_KEYS", "URL_KEYS", "ExplorerSession", "error_message",
]  # fmt: skip
