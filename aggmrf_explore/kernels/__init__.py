"""Numba kernels behind plain functions: the only place in the package that uses numba.

Everything here takes and returns numpy arrays; callers never see numba types.
``GibbsChain`` (the PCD trainer's persistent Gibbs samples) lives in :mod:`.gibbs`,
whose module docstring walks through the sweep.
"""

from __future__ import annotations

from .gibbs import GibbsChain, warm_up

__all__ = ["GibbsChain", "warm_up"]
