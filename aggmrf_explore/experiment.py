"""One place for the whole data flow, used by the CLI, the explorer and the notebooks.

records (Dataset) → encode → TableLayout → aggregate → [privacy release] → PCDTrainer → metrics

The release step is ``privacy.release(problem.aggregated, mechanism, seed, records=(X, y))``
for every mechanism ``privacy.make_mechanism`` makes, central (noise on the tables) or
local (randomized response on each record).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from .callbacks import Progress
from .errors import AggMRFError
from .metrics import nllh
from .mrf import (
    MIN_ITERATIONS,
    IterationStats,
    PCDTrainer,
    TrainerSettings,
    default_iterations,
    default_settings,
)
from .tables import AggregatedData, TableLayout, aggregate
from .trainer_settings import release_noise_sd

__all__ = ["Problem", "prepare", "DEFAULT_ITERATIONS", "MRFRun", "train_mrf"]

DEFAULT_ITERATIONS = MIN_ITERATIONS  # the minimum of the rule mrf.default_iterations


@dataclass
class Problem:
    """A dataset made ready for training: codes, layout and the exact aggregates."""

    dataset: object  # datasets.Dataset
    encoded: object  # datasets.EncodedData
    layout: TableLayout
    aggregated: AggregatedData
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def n_train(self) -> int:
        return int(self.encoded.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.encoded.X_test.shape[0])


def prepare(
    dataset,
    *,
    singles: bool = True,
    pairs: bool = True,
    triples: bool = False,
    n_bins: int = 10,
    **load_kwargs,
) -> Problem:
    """Load (by name) or take a Dataset, encode it on its training split, aggregate it.

    ``dataset``: a datasets.Dataset or a name accepted by datasets.load_dataset
    (then ``load_kwargs`` go to the loader: n, seed, features, drop_features, ...).
    """
    from . import datasets

    t0 = time.perf_counter()
    if isinstance(dataset, str):
        dataset = datasets.load_dataset(dataset, **load_kwargs)
    elif load_kwargs:
        raise AggMRFError(f"loader options {sorted(load_kwargs)} only apply to a dataset name.")
    enc = dataset.encode(n_bins=n_bins)
    layout = enc.layout(singles=singles, pairs=pairs, triples=triples)
    agg = aggregate(enc.X_train, enc.y_train, layout)
    return Problem(dataset, enc, layout, agg, time.perf_counter() - t0)


@dataclass
class MRFRun:
    """A finished training run."""

    trainer: PCDTrainer
    nllh_test: float
    seconds: float
    history: list[IterationStats] = field(default_factory=list)


def train_mrf(
    problem: Problem,
    settings: TrainerSettings | None = None,
    iterations: int | None = None,
    data: AggregatedData | None = None,
    progress: Callable[[int, int], None] | None = None,
    eval_every: int | None = None,
    chain_factory: Callable | None = None,
) -> MRFRun:
    """Train the MRF on ``data`` (default: the problem's exact aggregates) and score it on test.

    ``progress(done, total)`` is called every few iterations.  ``eval_every``: held-out
    NLLH every this many iterations (default: the settings' eval_every).  ``chain_factory``:
    see :class:`~aggmrf_explore.mrf.PCDTrainer`.  ``iterations``: None is the rule
    :func:`~aggmrf_explore.mrf.default_iterations` (max(3000, ⌈6/α_θ⌉)).
    """
    data = data if data is not None else problem.aggregated
    enc = problem.encoded
    if settings is None:
        settings = default_settings(problem.layout, data.n, noise_sd=release_noise_sd(data))
    if iterations is None:
        iterations = default_iterations(settings)
    if not isinstance(iterations, int | np.integer) or iterations < 1:
        raise AggMRFError(f"iterations must be a positive integer; got {iterations!r}.")
    if eval_every is not None:
        settings = replace(settings, eval_every=eval_every)
    t0 = time.perf_counter()
    evaluate = settings.eval_every <= iterations
    trainer = PCDTrainer(
        data,
        settings,
        enc.X_test if evaluate else None,
        enc.y_test if evaluate else None,
        chain_factory=chain_factory,
    )
    trainer.fit(iterations, [Progress(progress, iterations)] if progress else ())
    p = trainer.predict_proba(enc.X_test)[:, 1]
    return MRFRun(trainer, nllh(enc.y_test, p), time.perf_counter() - t0, trainer.history)
