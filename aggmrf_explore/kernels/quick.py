"""Serial builds of the dense chain's parallel kernels, for a first start on an empty cache.

On an empty numba cache the parallel builds (``parallel=True``) of :func:`.gibbs.gibbs_sweep`,
:func:`.gibbs.build_params` and :func:`.gibbs.sample_statistics` take about 25 s of CPU
to compile (numba's parfor passes and the outlined parallel body), serial builds of the
same Python functions about 9 s.  Their results are bit-identical: the kernels hand out
their work with counters (a serial build runs the workers one after the other, the
first takes every block), the randomness is counter based and the statistics are
integer sums, so nothing depends on how many workers run or which runs which block.

:func:`use_serial` makes :class:`.chain.GibbsChain` call the serial builds (compiled
in-process on first use, not cached on disk: numba's cache is keyed by function and
signature, not by the parallel flag, so a cached serial build would shadow the parallel
one); :func:`use_parallel` loads (or compiles) the parallel builds for every signature
the serial ones were called with, then switches back, between two calls.
"""

from __future__ import annotations

import os

from numba import njit

from . import chain, gibbs

__all__ = ["KERNELS", "parallel_cached", "serial_in_use", "use_parallel", "use_serial"]

KERNELS = ("build_params", "sample_statistics", "gibbs_sweep")
_SERIAL: dict = {}


def _serial(name: str):
    if name not in _SERIAL:
        _SERIAL[name] = njit(nogil=True)(getattr(gibbs, name).py_func)  # (no cache: module doc)
    return _SERIAL[name]


def parallel_cached() -> bool:
    """True if numba's on-disk cache has an index for each parallel build (they were
    compiled once: this start loads them instead); False if unknown."""
    try:
        paths = [getattr(gibbs, n)._cache._cache_file._index_path for n in KERNELS]
    except AttributeError:  # another numba version's internals, or no cache
        return False
    return all(os.path.exists(p) for p in paths)


def use_serial() -> None:
    """The dense chain calls the serial builds from now on (each compiles on first call)."""
    for name in KERNELS:
        setattr(chain.DENSE, name, _serial(name))


def serial_in_use() -> bool:
    """True while the dense chain calls the serial builds."""
    return any(getattr(chain.DENSE, n) is _SERIAL.get(n) for n in KERNELS)


def use_parallel() -> list[str]:
    """Load the parallel builds for the signatures in use (numba's cache, else compile
    them: seconds of CPU, in the calling thread), then switch the chain back to them.

    Returns the kernels whose parallel build had to be compiled here (not in the cache).
    """
    compiled = []
    for name in KERNELS:
        par = getattr(gibbs, name)
        ser = _SERIAL.get(name)
        for sig in ser.signatures if ser is not None else ():
            if sig not in par.overloads:
                before = par.stats.cache_misses.copy()
                par.compile(sig)
                if par.stats.cache_misses != before:
                    compiled.append(name)
    for name in KERNELS:
        setattr(chain.DENSE, name, getattr(gibbs, name))
    return compiled
