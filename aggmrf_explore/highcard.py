# TEMPORARY shim (issue 12): remove at integration
"""Moved: the encoders to :mod:`aggmrf_explore.encoding` (TargetEncoder, HashedCross), the
data to :mod:`aggmrf_explore.datasets` (high_cardinality_dataset, target_encode,
vocabulary_codes, hashed_layout), the experiments and their command line to
``benchmarks/hashing.py`` (hashed_compare, exact_memory, target_encoding_compare)."""

from .datasets import (
    hashed_layout,
    high_cardinality_dataset,
    target_encode,
    vocabulary_codes,
)
from .encoding import HashedCross, TargetEncoder

__all__ = [
    "TargetEncoder",
    "target_encode",
    "HashedCross",
    "high_cardinality_dataset",
    "vocabulary_codes",
    "hashed_layout",
]
