"""The named datasets: :func:`load_dataset` ("toy", "xor", "synthetic", "adult", "bank")."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import AggMRFError
from .bundled import adult, bank
from .dataset import Dataset, select_features
from .generated import synthetic, toy, xor

__all__ = ["DATASET_NAMES", "load_dataset"]

DATASET_NAMES = ("toy", "xor", "synthetic", "adult", "bank")


def load_dataset(
    name: str,
    *,
    n: int | None = None,
    seed: int = 0,
    features: list[str] | None = None,
    drop_features: list[str] | None = None,
    **kw: Any,
) -> Dataset:
    """Load a named dataset: "toy", "xor", "synthetic", "adult" or "bank".

    ``n``: number of records (xor / synthetic: each split; adult / bank: a seeded subsample
    of the train split; not accepted by toy).  ``features`` / ``drop_features`` select
    feature columns (``truth`` of synthetic data still describes the full generating model).
    Other keywords go to the generator (e.g. ``n_features``, ``coupling``, bank's
    ``test_fraction``); unknown ones raise AggMRFError listing the accepted ones.
    """
    key = str(name).strip().lower()
    if key not in DATASET_NAMES:
        raise AggMRFError(
            f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)} "
            "(or load_csv(path, label) for your own file)."
        )
    args: dict[str, Any] = dict(kw)
    if key == "toy":
        if n is not None:
            raise AggMRFError("the toy dataset has exactly 5 records; do not pass n.")
        fn = toy
    else:
        fn = {"xor": xor, "synthetic": synthetic, "adult": adult, "bank": bank}[key]
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
