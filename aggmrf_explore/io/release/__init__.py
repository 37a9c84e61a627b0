"""Read and write *releases*: already-aggregated contingency tables, without any record.

A release is what an analyst receives: for each released table, one row per combination
of the table's feature values with a ``count`` and a ``label_sum`` (often noisy).  Two
on-disk formats, both written by :func:`write_release` and read by :func:`read_release`:

* a **directory**: one CSV per table (feature columns holding modality labels, ``count``,
  ``label_sum``) and a ``release.json`` metadata file;
* one **long CSV**: a ``table`` column naming the table, one column per feature (empty
  where the feature is not in the table), ``count`` and ``label_sum`` (``release.json``
  beside it, or ``FILE.json``, is read when present).

``release.json`` (optional, but needed for noise-aware training and for predicting on
raw records with numeric features)::

    {"format": "aggmrf-release", "version": 1, "n": 32561,
     "label": "income", "positive_label": ">50K", "classes": ["<=50K", ">50K"],
     "features": [{"name": "age", "kind": "numeric", "modalities": ["[17, 22)", ...],
                   "edges": [22.0, ...]},
                  {"name": "sex", "kind": "categorical", "modalities": ["Female", "Male"],
                   "values": "string", "known": ["Female", "Male"], "codes": [0, 1],
                   "unseen": "error"}, ...],
     "tables": [{"name": "age", "features": ["age"], "file": "001_age.csv"}, ...],
     "intercept": {"count": 32561, "label_sum": 7841},
     "noise": {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-07, "sigma": 12.3,
               "l2_sensitivity": 14.5, "calibration": "analytic", "accounting": "both"}}

The features are the :class:`~aggmrf_explore.encoding.Schema` of the encoder that made
the tables (``Schema.to_dict``), the noise is the mechanism's ``to_dict``.  Without
``release.json`` the schema is inferred: features are the table CSVs' columns other than
``count`` / ``label_sum``, modalities are the labels in order of first appearance.

Reading is a sequence of named steps, each raising :class:`AggMRFError` with a message
that names the table, and the file line where there is one:

1. ``reading._find_manifest`` / ``manifest.read_manifest`` — locate and parse ``release.json``;
2. ``manifest.check_manifest`` — its format;
3. ``reading._resolve_table_files`` — which files hold the tables (declared ``file`` entries,
   the directory's CSVs, or the long CSV itself);
4. ``reading._read_table_files`` — parse each file into raw tables (``reading._split_table``:
   missing columns, non-finite counts, empty feature cells, duplicate rows);
5. ``checks.assemble`` — the schema (declared or inferred), each table checked against it
   (``checks._table_codes``), the layout, the declared noise, and the consistency checks:
   the same feature with different modalities in two tables; without noise, negative
   counts or label sums and label sums larger than their count; tables whose totals (and
   per-feature marginals) disagree beyond what the declared noise explains
   (|Δ| > 5 σ √(cells summed)).  ``strict=False`` turns these consistency errors (not the
   malformed-file ones) into warnings.  Then the :class:`AggregatedData`.

Modules: :mod:`.common` (column names, limits, the noise block, :class:`Release`, the raw
table), :mod:`.writing`, :mod:`.reading` (steps 1–4) and :mod:`.checks` (step 5).
"""

from ...encoding import Schema
from ..manifest import RELEASE_FILE
from .common import MAX_CELL, Release, ReleaseWarning, mechanism_from_meta, noise_meta
from .reading import read_release, read_release_noise, read_schema, release_from_frames
from .writing import write_release

__all__ = [
    "Schema",
    "Release",
    "ReleaseWarning",
    "write_release",
    "read_release",
    "read_release_noise",
    "read_schema",
    "release_from_frames",
    "mechanism_from_meta",
    "noise_meta",
    "RELEASE_FILE",
    "MAX_CELL",
]
