"""Hybrid model selection: choose λθ and the iteration count on a small labelled sample.

The AdKDD'21 challenge gave a small labelled granular sample beside the aggregates, and every
winning team used it.  Here it only *selects*: for each λθ of a grid (multiples of T/2,
the default rule without its cap) a PCD run on the release (same seed, same chain, same settings otherwise) is
scored on the sample every ``eval_every`` iterations (record-level NLLH of P(y | x)); the
(λθ, iteration) with the best sample NLLH wins and that run's model at that iteration is
returned — no refit, so the cost is one training run per grid value.  The records-free
alternative is ``selection.lambda_theta.choose_lambda_theta`` (split-release cross-fit NLLH).

The sample's likelihood is not added to the objective.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import AggMRFError
from ..metrics import nllh
from ..mrf import MRFModel, PCDTrainer, TrainerSettings
from ..tables import AggregatedData

__all__ = ["SampleChoice", "DEFAULT_MULTIPLIERS", "choose_on_sample"]

DEFAULT_MULTIPLIERS = (4.0, 1.0, 0.25, 1.0 / 16)


@dataclass
class SampleChoice:
    """The choice: λθ, the iteration count, the model there, and every score.

    grid: one dict per λθ: {"lambda_theta", "best_iteration", "nllh" (best), "curve":
    [[iteration, sample NLLH], ...]}.
    """

    lambda_theta: float
    iterations: int
    nllh: float
    model: MRFModel
    grid: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    n_sample: int = 0

    def to_dict(self) -> dict:
        return {
            "method": "labelled sample",
            "lambda_theta": self.lambda_theta,
            "iterations": self.iterations,
            "sample_nllh": self.nllh,
            "n_sample": self.n_sample,
            "seconds": self.seconds,
            "grid": self.grid,
        }


def choose_on_sample(
    data: AggregatedData,
    X: np.ndarray,
    y: np.ndarray,
    settings: TrainerSettings,
    iterations: int,
    multipliers: Sequence[float] = DEFAULT_MULTIPLIERS,
    eval_every: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SampleChoice:
    """λθ = m · settings.lambda_theta for m in ``multipliers`` and the iteration count in
    ``eval_every, 2·eval_every, …, iterations``, chosen on the labelled sample (X codes
    (n, D), y 0/1 (n,)).  ``eval_every`` defaults to max(1, iterations // 10)."""
    t0 = time.perf_counter()
    X = data.layout.check_codes(X)
    y = np.asarray(y)
    if y.shape != (X.shape[0],) or X.shape[0] == 0:
        raise AggMRFError(f"the sample needs one 0/1 label per record; got {y.shape}.")
    if not np.all((y == 0) | (y == 1)) or y.min() == y.max():
        raise AggMRFError("the sample's labels must be 0/1 with both classes present.")
    if not multipliers or any(not (m > 0) for m in multipliers):
        raise AggMRFError("λθ multipliers must be positive numbers.")
    if int(iterations) < 1:
        raise AggMRFError(f"iterations must be ≥ 1; got {iterations}.")
    every = int(eval_every or max(1, iterations // 10))
    rows = data.layout.rows(X).astype(np.int32)
    base = settings.lambda_theta
    best: tuple[float, float, int, MRFModel] | None = None
    grid = []
    total = len(multipliers) * int(iterations)
    done = 0
    for m in multipliers:
        lam = float(m * base)
        trainer = PCDTrainer(data, replace(settings, lambda_theta=lam))
        curve = []
        row_best: tuple[float, int] | None = None
        it = 0
        while it < iterations:
            k = min(every, int(iterations) - it)
            trainer.fit(k)
            it += k
            done += k
            model = trainer.model
            score = float(nllh(y, model.proba_of_rows(rows)))
            curve.append([it, score])
            if row_best is None or score > row_best[0]:
                row_best = (score, it)
            if best is None or score > best[0]:
                best = (score, lam, it, model)
            if progress is not None:
                progress(done, total)
        grid.append(
            {
                "lambda_theta": lam,
                "best_iteration": row_best[1],
                "nllh": row_best[0],
                "curve": curve,
            }
        )
    assert best is not None
    return SampleChoice(
        lambda_theta=best[1],
        iterations=best[2],
        nllh=best[0],
        model=best[3],
        grid=grid,
        seconds=time.perf_counter() - t0,
        n_sample=int(X.shape[0]),
    )
