"""Datasets: the paper's toy Table 1, the XOR counterexample, synthetic MRF data, Adult, Bank,
synthetic high-cardinality data, and your own CSV files.

``load_dataset(name, ...)`` returns a :class:`Dataset` (raw train / test DataFrames with the
label column); ``Dataset.encode()`` fits an :class:`~aggmrf_explore.encoding.Encoder` on
the TRAIN split only and returns :class:`EncodedData` (int32 codes, int8 labels, and a
``layout()`` helper building the :class:`~aggmrf_explore.tables.TableLayout`).

Modules: ``dataset`` (the two containers, feature selection, target encoding of a
Dataset), ``generated`` (toy, xor and its exact distribution / expected tables, synthetic,
high-cardinality with its vocabulary codes and hashed layout), ``bundled`` (Adult and Bank
from the md5-checked gzip copies in ``aggmrf_explore/data``), ``csv`` (your own files),
``splits`` (seeded stratified splits), ``catalog`` (:func:`load_dataset` by name).
"""

from __future__ import annotations

from .bundled import ADULT_CITATION, ADULT_COLUMNS, BANK_CITATION, adult, bank, clear_cache
from .catalog import DATASET_NAMES, DATASETS, DatasetSpec, dataset_spec, load_dataset
from .csv import MIN_CSV_ROWS, load_csv, read_csv_file
from .dataset import Dataset, EncodedData, other_class, target_encode
from .generated import (
    HIGH_CARDINALITY_FEATURES,
    MAX_SYNTHETIC_STATES,
    PAPER_CITATION,
    expected_tables,
    hashed_layout,
    high_cardinality_dataset,
    synthetic,
    toy,
    vocabulary_codes,
    xor,
    xor_distribution,
    xor_expected_tables,
    xor_states,
)

__all__ = [
    "Dataset",
    "EncodedData",
    "DATASET_NAMES",
    "DATASETS",
    "DatasetSpec",
    "dataset_spec",
    "load_dataset",
    "load_csv",
    "read_csv_file",
    "other_class",
    "toy",
    "xor",
    "xor_distribution",
    "xor_states",
    "expected_tables",
    "xor_expected_tables",
    "synthetic",
    "high_cardinality_dataset",
    "vocabulary_codes",
    "hashed_layout",
    "target_encode",
    "HIGH_CARDINALITY_FEATURES",
    "adult",
    "bank",
    "clear_cache",
    "ADULT_CITATION",
    "ADULT_COLUMNS",
    "BANK_CITATION",
    "PAPER_CITATION",
    "MAX_SYNTHETIC_STATES",
    "MIN_CSV_ROWS",
]
