"""The builds of the dense chain's kernels, chosen per chain by an argument.

The dense chain (:class:`.chain.GibbsChain`) calls three kernels of :mod:`.gibbs` whose
parallel builds (``parallel=True``) take about 25 s of CPU to compile on an empty numba
cache (numba's parfor passes and the outlined parallel body); serial builds of the same
Python functions take about 9 s.  Their results are bit-identical: the kernels hand out
their work with counters (a serial build runs the workers one after the other, the first
takes every block), the randomness is counter based and the statistics are integer sums,
so nothing depends on how many workers run or which runs which block.

:func:`dense_kernels` gives the namespace of one build, ``"parallel"`` (numba's on-disk
cache) or ``"serial"`` (compiled in-process on first use, never cached on disk: numba's
cache is keyed by function and signature, not by the parallel flag, so a cached serial
build would shadow the parallel one).  A chain switches between them with
``GibbsChain.use_build`` (same state, same results); :func:`load_parallel` first loads
(or compiles) the parallel builds for every signature the serial ones were called with.
A third build, ``"numpy"``, needs no compiler at all: :class:`.reference.NumpyGibbsChain`.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from types import SimpleNamespace

from numba import njit

from . import gibbs

__all__ = [
    "BUILDS",
    "KERNELS",
    "cache_marker",
    "compiled_marks",
    "dense_kernels",
    "load_parallel",
    "mark_compiled",
]

BUILDS = ("parallel", "serial", "numpy")  # fastest first; "numpy" compiles nothing
KERNELS = ("build_params", "sample_statistics", "gibbs_sweep")
PARALLEL = SimpleNamespace(**{name: getattr(gibbs, name) for name in KERNELS})


@cache
def _serial_builds() -> SimpleNamespace:
    # (no cache=True: the module doc)
    return SimpleNamespace(
        **{name: njit(nogil=True)(getattr(gibbs, name).py_func) for name in KERNELS}
    )


def dense_kernels(build: str) -> SimpleNamespace:
    """The dense chain's three kernels in ``build`` ("parallel" or "serial")."""
    if build == "parallel":
        return PARALLEL
    if build == "serial":
        return _serial_builds()
    raise ValueError(f"the dense kernels are built 'parallel' or 'serial'; got {build!r}.")


def cache_marker() -> Path:
    """A file beside numba's on-disk cache of the kernels, written once their parallel
    builds are compiled (:func:`mark_compiled`): its absence means that a start compiles
    (a fresh virtual environment or cache).  Named after this package's and numba's
    versions, whose change empties numba's cache."""
    from importlib.metadata import version

    from .. import __version__
    from .cache import cache_dir

    root = os.environ.get("NUMBA_CACHE_DIR")
    base = Path(root) if root else (cache_dir() or Path(__file__).resolve().parent / "__pycache__")
    return base / f"aggmrf-explorer-warm-{__version__}-numba-{version('numba')}.txt"


def compiled_marks() -> str:
    """What :func:`mark_compiled` recorded ("" if nothing), e.g. "dense extras"."""
    try:
        return cache_marker().read_text()
    except OSError:
        return ""


def mark_compiled(what: str) -> None:
    """Record that the kernels of ``what`` ("dense", "dense extras") are in numba's cache."""
    from ..errors import AggMRFError
    from ..files import write_text

    try:
        if what not in compiled_marks():
            cache_marker().parent.mkdir(parents=True, exist_ok=True)
            write_text(cache_marker(), what, "numba cache marker")
    except (OSError, AggMRFError):
        pass  # (a read-only cache: the next start compiles again, nothing worse)


def load_parallel() -> list[str]:
    """Load the parallel builds for every signature the serial builds were called with
    (numba's cache, else compile them: seconds of CPU, in the calling thread), so that a
    chain's switch to them compiles nothing.  Returns the kernels compiled here."""
    compiled = []
    if _serial_builds.cache_info().currsize == 0:
        return compiled
    serial = _serial_builds()
    for name in KERNELS:
        par = getattr(gibbs, name)
        for sig in getattr(serial, name).signatures:
            if sig not in par.overloads:
                before = par.stats.cache_misses.copy()
                par.compile(sig)
                if par.stats.cache_misses != before:
                    compiled.append(name)
    return compiled
