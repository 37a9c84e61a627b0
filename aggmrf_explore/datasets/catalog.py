"""The named datasets, one :class:`DatasetSpec` each (:data:`DATASETS`), and :func:`load_dataset`.

A dataset is declared once, here: its name, the label people read, its loader, whether it
is generated or bundled, whether n and seed apply, and the suppression its release has.
The command line (``--dataset``), the explorer's dataset list and ``aggregate`` read these
specs; adding a dataset is one spec (and its loader).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import AggMRFError
from .bundled import adult, bank
from .dataset import Dataset, select_features
from .generated import synthetic, toy, xor

__all__ = ["DatasetSpec", "DATASETS", "DATASET_NAMES", "load_dataset", "dataset_spec"]


def _criteo(n: int = 20_000, seed: int = 0, label: str = "click") -> Dataset:
    """The small Criteo-shaped teaching dataset (:func:`.criteo.small_dataset`)."""
    from .criteo import small_dataset

    return small_dataset(n, seed, label)


@dataclass(frozen=True)
class DatasetSpec:
    """What every surface asks of a named dataset.

    ``name``: the key (``--dataset NAME``, the explorer's links);  ``label``: how people read
    it (the explorer's status line);  ``menu``: its entry in the explorer's dataset list (a
    few words on what it is);  ``loader``: ``loader(**options) -> Dataset`` (``n``, ``seed`` when ``seeded``);
    ``source``: "generated" (drawn from a seed) or "bundled" (real records shipped with the
    package);  ``seeded``: n and seed apply (a draw, or a subsample of the bundled train
    split);  ``suppression``: k when the dataset's release leaves out its pair cells of
    count ≤ k (the AdKDD'21 rule, decided on the released counts), else None.
    """

    name: str
    label: str
    menu: str
    loader: Callable[..., Dataset]
    source: str
    seeded: bool = True
    suppression: float | None = None


DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in (
        DatasetSpec(
            "toy", "toy (Table 1)", "Toy — the paper's Table 1", toy, "generated", seeded=False
        ),
        DatasetSpec("xor", "XOR", "XOR counterexample", xor, "generated"),
        DatasetSpec("synthetic", "synthetic", "Synthetic (random MRF)", synthetic, "generated"),
        DatasetSpec(
            "criteo",
            "Criteo-shaped (suppressed)",
            "Criteo-shaped (small, suppressed)",
            _criteo,
            "generated",
            suppression=10.0,
        ),
        DatasetSpec("adult", "Adult", "Adult (census income)", adult, "bundled"),
        DatasetSpec("bank", "Bank marketing", "Bank marketing", bank, "bundled"),
    )
}
DATASET_NAMES = tuple(DATASETS)


def dataset_spec(name: str) -> DatasetSpec:
    """The spec of dataset ``name`` (case and spaces ignored); an error listing the names."""
    key = str(name).strip().lower()
    if key not in DATASETS:
        raise AggMRFError(
            f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)} "
            "(or load_csv(path, label) for your own file)."
        )
    return DATASETS[key]


def load_dataset(
    name: str,
    *,
    n: int | None = None,
    seed: int = 0,
    features: list[str] | None = None,
    drop_features: list[str] | None = None,
    **kw: Any,
) -> Dataset:
    """Load a named dataset (:data:`DATASET_NAMES`; its :class:`DatasetSpec`).

    ``n``: number of records (generated: each split; adult / bank: a seeded subsample of the
    train split; not accepted by toy).  ``features`` / ``drop_features`` select
    feature columns (``truth`` of synthetic data still describes the full generating model).
    Other keywords go to the generator (e.g. ``n_features``, ``coupling``, bank's
    ``test_fraction``); unknown ones raise AggMRFError listing the accepted ones.
    """
    spec = dataset_spec(name)
    key, fn = spec.name, spec.loader
    args: dict[str, Any] = dict(kw)
    if not spec.seeded:
        if n is not None:
            raise AggMRFError(
                f"the {key} dataset has a fixed set of records (exactly 5 records for the "
                "toy); do not pass n."
            )
    else:
        args["seed"] = seed
        if n is not None:
            args["n"] = n
    params = inspect.signature(fn).parameters
    bad = [k for k in args if k not in params]
    if bad:
        ok = [p for p in params if p not in ("n", "seed")]
        raise AggMRFError(
            f"dataset {key!r} does not accept {bad}; its options are {ok or 'none'} "
            "(plus n, seed, features, drop_features)."
        )
    ds = fn(**args)
    return select_features(ds, features, drop_features)
