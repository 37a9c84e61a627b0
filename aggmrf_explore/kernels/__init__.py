"""Numba kernels behind plain functions: the only place in the package that uses numba.

Everything here takes and returns numpy arrays (or named tuples of them); callers never
see numba types.  One module per job:

- :mod:`.rng`    the package's one splitmix64, stream keys, uniforms, the feature order;
- :mod:`.simd`   a float32 × 8 vector type and the LLVM intrinsics of the dense sweep;
- :mod:`.rows`   the one row computation (record → row of each table, hashing included);
- :mod:`.gibbs`  the dense full-conditional sweep and its statistics (module doc: the sweep);
- :mod:`.hashed` the sweep for layouts with hashed tables;
- :mod:`.mh`     Metropolis-within-Gibbs site updates (alias proposals), for large M_f;
- :mod:`.mh_chain` :class:`MHGibbsChain` (per-feature MH or full conditional, shardable);
- :mod:`.noise`  samplers of the MRF-N noise posterior;
- :mod:`.quick`  the builds of the dense chain's kernels ("parallel", "serial"), chosen
  per chain by an argument;
- :mod:`.reference` ``NumpyGibbsChain``, the dense chain in plain numpy (the "numpy"
  build: no compiler, for a first start while numba compiles);
- :mod:`.cache`  where numba caches the kernels, and the fallback (a temporary directory,
  else no cache, with one warning) when nothing is writable; run first, at import;
- :mod:`.chain`  the :class:`Chain` protocol, ``GibbsChain``, ``HashedGibbsChain`` and
  ``make_chain``, which picks one from ``layout.has_hashed_tables``, its ``sampler``
  ("auto": ``MHGibbsChain`` for an exact layout with some M_f > 1000) and its ``build``.
"""

from __future__ import annotations

from .cache import set_up as _set_up_cache

_set_up_cache()  # before any kernel is defined: numba looks for its cache then

from .chain import (  # noqa: E402
    BUILDS,
    SAMPLERS,
    Chain,
    GibbsChain,
    HashedGibbsChain,
    MHGibbsChain,
    NumpyGibbsChain,
    make_chain,
    warm_up,
)
from .rows import sample_logits, table_rows  # noqa: E402

__all__ = [
    "BUILDS",
    "Chain",
    "GibbsChain",
    "HashedGibbsChain",
    "MHGibbsChain",
    "NumpyGibbsChain",
    "SAMPLERS",
    "make_chain",
    "sample_logits",
    "table_rows",
    "warm_up",
]


def set_threads(n: int) -> None:
    """Run the calling thread's parallel kernels on ``n`` threads (at least 1, at most
    numba's pool size).  Thread-local: each thread of a pool sets its own; the results do
    not depend on it (the kernels hand work out by counters)."""
    import numba

    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))


__all__ += ["set_threads"]
