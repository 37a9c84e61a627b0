"""Monitoring kept out of the trainer: callbacks run after each PCD iteration.

A callback is any callable ``cb(trainer, stats) -> None``; :meth:`mrf.PCDTrainer.fit` and
:meth:`mrf.PCDTrainer.step` call every callback of their ``callbacks`` argument after each
iteration, in order, with the trainer and that iteration's ``IterationStats`` (a mutable
record: a callback may fill a field, as :class:`HeldOutNLLH` fills ``nllh_eval``).  A
callback stops training early by raising :class:`StopTraining`.

- :class:`Progress`: ``report(done, total)`` every few iterations (the CLI's progress bar,
  the notebook widget, the explorer);
- :class:`HeldOutNLLH`: the NLLH of held-out coded records, every ``every`` iterations (of
  the reported model, the iterate average when the trainer averages; ``live=True`` adds the
  last iterate's);
- :class:`History`: the list of every iteration's statistics and its DataFrame.

This module imports nothing from :mod:`.mrf`: the trainer is duck-typed (:class:`Trainer`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .errors import AggMRFError
from .metrics import nllh

__all__ = [
    "Callback",
    "History",
    "HeldOutNLLH",
    "held_out_rows",
    "Progress",
    "StopTraining",
    "TimeBox",
    "Trainer",
]


class StopTraining(Exception):  # noqa: N818 - named like StopIteration, which it mirrors
    """Raised by a callback to end ``fit``/``step`` after the current iteration (not an error)."""


class Trainer(Protocol):
    """What the callbacks here read from a trainer (``mrf.PCDTrainer`` has it)."""

    layout: Any  # tables.TableLayout
    iteration: int
    settings: Any  # mrf.TrainerSettings

    @property
    def model(self) -> Any: ...  # mrf.MRFModel: the reported model (maybe an iterate average)

    @property
    def live_model(self) -> Any: ...  # mrf.MRFModel: the last iterate


Callback = Callable[[Trainer, Any], None]  # cb(trainer, stats: mrf.IterationStats) -> None


class Progress:
    """Call ``report(done, total)`` about ``n_reports`` times over a run of ``total`` iterations.

    ``done`` counts the iterations seen by this callback (1 … total); the report comes every
    ``every`` = max(1, total // n_reports) iterations and at ``done == total``.
    """

    def __init__(self, report: Callable[[int, int], None], total: int, n_reports: int = 50) -> None:
        if not isinstance(total, int | np.integer) or total < 1:
            raise AggMRFError(f"Progress needs a total ≥ 1 iterations; got {total!r}.")
        if not isinstance(n_reports, int | np.integer) or n_reports < 1:
            raise AggMRFError(f"n_reports must be an integer ≥ 1; got {n_reports!r}.")
        self.report = report
        self.total = int(total)
        self.every = max(1, self.total // int(n_reports))
        self.done = 0

    def __call__(self, trainer: Trainer, stats: Any) -> None:
        self.done += 1
        if self.done % self.every == 0 or self.done == self.total:
            self.report(self.done, self.total)


class HeldOutNLLH:
    """Fill ``stats.nllh_eval`` with the NLLH of held-out coded records X (n, D), labels y (n,).

    Computed on the first iteration and every ``every``-th (``every=None``: the trainer's
    ``settings.eval_every``, read at each iteration so ``trainer.update(eval_every=…)``
    applies); ``last`` is the most recent value (None before the first).  With ``layout``
    the records' table rows are computed (and the codes checked) at once, else at the first
    call from ``trainer.layout``.  The score is that of ``trainer.model``, the reported model
    (the iterate average once the trainer averages); with ``live=True`` also
    ``stats.nllh_live``, the last iterate's (``last_live``), computed only while the two differ.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        every: int | None = None,
        layout: Any = None,
        live: bool = False,
    ) -> None:
        y = np.asarray(y)
        if y.shape != (np.asarray(X).shape[0],):
            raise AggMRFError("y_eval must have one label per row of X_eval.")
        if every is not None and (not isinstance(every, int | np.integer) or every < 1):
            raise AggMRFError(f"every must be an integer ≥ 1; got {every!r}.")
        self.X = X
        self.y = y.astype(np.float64)
        self.every = every
        self.live = bool(live)
        self.last: float | None = None
        self.last_live: float | None = None
        self.rows = None if layout is None else held_out_rows(layout, X)

    def __call__(self, trainer: Trainer, stats: Any) -> None:
        every = self.every if self.every is not None else trainer.settings.eval_every
        it = trainer.iteration
        if it % every == 0 or it == 1:
            if self.rows is None:
                self.rows = held_out_rows(trainer.layout, self.X)
            model = trainer.model
            self.last = nllh(self.y, model.proba_of_rows(self.rows))
            stats.nllh_eval = self.last
            if self.live:
                live = trainer.live_model
                same = live.theta is model.theta or np.array_equal(live.theta, model.theta)
                self.last_live = self.last if same else nllh(self.y, live.proba_of_rows(self.rows))
                stats.nllh_live = self.last_live


_ROWS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key → rows, while used
_OWNERS: dict[tuple[int, int], tuple[weakref.ref, weakref.ref]] = {}  # key → (layout, X)


def held_out_rows(layout: Any, X: np.ndarray) -> np.ndarray:
    """The table rows of coded records ``X`` (n, D) under ``layout``, int32 (n, T),
    read-only and computed once for the same layout and array while anything still holds
    them: the sessions of a server that evaluate on the same test records share one copy,
    and it is freed with the last of them (the cache holds the rows, the layout and the
    records weakly, so an id reused by a later object never returns stale rows)."""
    key = (id(layout), id(X))
    rows = _ROWS.get(key)
    owners = _OWNERS.get(key)
    if rows is not None and owners is not None and owners[0]() is layout and owners[1]() is X:
        return rows
    rows = layout.rows(X).astype(np.int32)
    rows.flags.writeable = False
    try:
        owners = (weakref.ref(layout), weakref.ref(X))
    except TypeError:  # records given as a list (no weak reference): rows of their own
        return rows
    for gone in [k for k in _OWNERS if k not in _ROWS]:
        del _OWNERS[gone]
    _ROWS[key] = rows
    _OWNERS[key] = owners
    return rows


class History:
    """Every iteration's statistics, in order (``records``), and as a DataFrame (``frame()``)."""

    def __init__(self) -> None:
        self.records: list = []

    def __call__(self, trainer: Trainer, stats: Any) -> None:
        self.records.append(stats)

    def frame(self) -> pd.DataFrame:
        """One row per iteration, one column per IterationStats field."""
        return pd.DataFrame([asdict(h) for h in self.records])


class TimeBox:
    """A trainer callback that collects each iteration's statistics and ends the run
    (:class:`~aggmrf_explore.callbacks.StopTraining`) before the next iteration would
    overrun ``budget`` seconds from its creation (None: no time limit), or as soon as
    ``stop()`` is true (e.g. the session was paused)."""

    def __init__(self, budget: float | None, stop: Callable[[], bool] | None = None) -> None:
        self.budget = budget
        self.stop = stop
        self.stats: list = []
        self.t0 = time.perf_counter()

    def __call__(self, trainer, stats) -> None:
        self.stats.append(stats)
        if self.stop is not None and self.stop():
            raise StopTraining
        if self.budget is not None:
            elapsed = time.perf_counter() - self.t0
            if elapsed + elapsed / len(self.stats) > self.budget:
                raise StopTraining
