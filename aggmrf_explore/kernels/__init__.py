"""Numba kernels behind plain functions: the only place in the package that uses numba.

Everything here takes and returns numpy arrays; callers never see numba types.
``GibbsChain`` (the PCD trainer's persistent Gibbs samples) lives in :mod:`.gibbs`,
whose module docstring walks through the sweep; layouts with hashed tables use
``HashedGibbsChain`` (:mod:`.hashed`), and ``make_chain`` picks the right one.
"""

from __future__ import annotations

from .gibbs import GibbsChain, warm_up
from .hashed import HashedGibbsChain


def make_chain(layout, n_samples: int, marginals: list, seed: int):
    """The chain for a layout: GibbsChain, or HashedGibbsChain when a table is hashed."""
    cls = HashedGibbsChain if getattr(layout, "hashed", False) else GibbsChain
    return cls(layout, n_samples, marginals, seed)


__all__ = ["GibbsChain", "HashedGibbsChain", "make_chain", "warm_up"]
