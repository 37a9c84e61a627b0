"""Running a session's trainer: slices of training (maybe in worker threads), the sampler
build they use, the Steps pressed and not run yet, the live settings that wait for a
slice's end, the rate, the status line and the likely cause of a divergence.

:class:`RunControl` is a member of its :class:`~.store.ExplorerSession` (``session.run``),
not a base class.  It reads the session (settings, trainer, ``running``) and changes only
its own state and the trainer it trains; the session's own params (``running``,
``status``, ``warning``…) change through the session's methods, which call this one
(``play``, ``pause``, ``step``, ``tick``, ``finish_slice``, ``update_status``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from ...callbacks import TimeBox
from ...errors import DivergenceError
from ...kernels.chain import numpy_samples, with_build
from .keys import LIVE_KEYS
from .problems import DATASET_NAMES

__all__ = ["RunControl", "TrainingSlice", "status_line"]

RATE_SECONDS = 3.0  # the rate is measured over the last few seconds of training


class TrainingSlice(NamedTuple):
    """What :meth:`RunControl.train_slice` did: the trainer it trained (the session may
    have replaced it meanwhile), each iteration's statistics, and the divergence that
    ended it (None if none)."""

    trainer: object
    stats: list
    error: DivergenceError | None


class RunControl:
    """Run state of one session (module docstring).

    ``chain_build()``: the fastest chain build ready now ("parallel"; "numpy" on a first
    start while the compiled one is not ready; None: none).  ``steps_wanted``: Steps
    pressed and not run yet (they wait for data or sampler).  ``last_live``: the last
    live setting changed (name, old, new, iteration), the first suspect of a divergence.
    """

    def __init__(self, session, chain_build: Callable[[], str | None] | None = None) -> None:
        self.session = session
        self.chain_build = chain_build or (lambda: "parallel")
        # held while a slice trains (maybe in a worker thread): a live setting changed
        # meanwhile waits for its end (``live_pending``) instead of changing the trainer
        self.lock = threading.Lock()
        self.live_pending = False
        self.steps_wanted = 0
        self.last_live: tuple | None = None
        self.rate: deque = deque(maxlen=64)  # (time, iteration) after each slice

    # ------------------------------------------------------------------ a new trainer
    def new_trainer(self) -> None:
        """The session built a new trainer: no rate, no suspect yet."""
        self.rate.clear()
        self.last_live = None

    def usable_build(self) -> str | None:
        """The fastest chain build ready now that samples the session's data; None: wait."""
        build = self.chain_build()
        bundle = self.session.bundle
        ok = build != "numpy" or bundle is None or numpy_samples(bundle.layout)
        return build if ok else None

    def can_train(self) -> bool:
        """A chain build for this data is ready (always, but on a first start)."""
        return self.usable_build() is not None

    def faster_chain(self, trainer) -> None:
        """Move the trainer's samples to the chain build ready now (numpy → compiled: the
        same samples go on), so that no slice waits for a compiler."""
        if build := self.usable_build():
            trainer.chain = with_build(trainer.chain, trainer.layout, build)

    # ------------------------------------------------------------------ Steps and live settings
    def want_step(self) -> None:
        """Record a pressed Step (it runs once data and sampler are ready: the view's job)."""
        self.steps_wanted += 1

    def step_taken(self) -> None:
        """A pressed Step ran (or was dropped with its data)."""
        self.steps_wanted = max(0, self.steps_wanted - 1)

    def live_changed(self, name: str, old, new) -> None:
        """A live setting (λ, α, gradient, preconditioning) changed from ``old`` to ``new``:
        the first suspect of a divergence from now on (:meth:`divergence_cause`)."""
        self.last_live = (name, old, new, self.session.iteration)

    def apply_live(self) -> None:
        """The session's live settings to its trainer: now, or at the end of the slice
        under way if one trains."""
        trainer = self.session.trainer
        if trainer is None:
            return
        if self.lock.acquire(blocking=False):
            try:
                trainer.update(**self._live_values())
            finally:
                self.lock.release()
        else:
            self.live_pending = True

    def apply_pending(self) -> None:
        """At a slice's end: the live settings changed during it, to the trainer."""
        trainer = self.session.trainer
        if self.live_pending and trainer is not None:
            self.live_pending = False
            trainer.update(**self._live_values())

    def _live_values(self) -> dict:
        return {k: getattr(self.session, k) for k in LIVE_KEYS}

    # ------------------------------------------------------------------ slices
    def train_slice(
        self,
        budget: float | None,
        max_iters: int,
        while_running: bool = False,
        steps: Callable | None = None,
    ) -> TrainingSlice:
        """Up to ``max_iters`` iterations of the session's trainer, ending before
        ``budget`` seconds are overrun (None: no limit), through the trainer's one loop
        (``step`` with a :class:`TimeBox` callback); with ``while_running``, none once the
        session is paused, and none after the iteration under way when it is paused
        meanwhile.  ``steps(trainer, k, box)``, if given, runs ``trainer.step(k,
        callbacks=[box])`` elsewhere (the server's pool: a worker process), with the same
        result.

        Safe in a worker thread while the views run elsewhere: it changes the trainer only,
        never a parameter of the session (so no view reacts in this thread); the session's
        ``finish_slice`` applies the result on the thread of the views.
        """
        s = self.session
        trainer = s.trainer
        paused = (lambda: not s.running) if while_running else None
        box = TimeBox(budget, stop=paused)
        error = None
        with self.lock:
            try:
                if trainer is not None and max_iters >= 1 and not (paused and paused()):
                    self.faster_chain(trainer)
                    if steps is None:
                        trainer.step(max_iters, callbacks=[box])
                    else:
                        steps(trainer, max_iters, box)
            except DivergenceError as exc:
                error = exc
        return TrainingSlice(trainer, box.stats, error)

    @property
    def slice_under_way(self) -> bool:
        """A slice is training now (a Pause's last iteration, maybe)."""
        return self.lock.locked()

    # ------------------------------------------------------------------ rate and words
    def record(self, iteration: int) -> None:
        """A slice ended at ``iteration``: a point of the rate."""
        self.rate.append((time.perf_counter(), iteration))

    def iterations_per_second(self) -> float:
        """Iterations per second over the last ~3 s of running (0 when paused)."""
        if len(self.rate) < 2 or not self.session.running:
            return 0.0
        now = self.rate[-1][0]
        pts = [p for p in self.rate if now - p[0] <= RATE_SECONDS]
        if len(pts) < 2:
            pts = list(self.rate)[-2:]
        dt = pts[-1][0] - pts[0][0]
        return (pts[-1][1] - pts[0][1]) / dt if dt > 0 else 0.0

    def status(self) -> str:
        """The session's one-line status (:func:`status_line`)."""
        s = self.session
        name = DATASET_NAMES.get(s.bundle.key[0], s.bundle.key[0]) if s.bundle else ""
        return status_line(
            s.trainer,
            loading=s.busy,
            running=s.running,
            pausing=self.slice_under_way,
            rate=self.iterations_per_second(),
            dataset=name,
            compiled_ready=self.chain_build() != "numpy",
        )

    def divergence_cause(self) -> str:
        """The likely cause of a divergence, in words: the step size or λ the user changed
        last (with its values), else the step sizes in effect."""
        s = self.session
        if self.last_live is not None:
            name, old, new, it = self.last_live
            label = s.param[name].label or name
            if name in ("gradient", "precondition"):
                what = f"{label} was switched to {new!r}"
            else:
                verb = "raised" if _num(new) > _num(old) else "lowered"
                what = f"{label} was {verb} from {_num(old):.4g} to {_num(new):.4g}"
            return (
                f"Likely cause: {what} at iteration {it:,}. Put it back, or press Reset "
                "and turn on the default rule."
            )
        if not s.auto_defaults:
            return (
                f"Likely cause: hand-set step sizes (α_μ = {s.step_mu:.4g}, α_θ = "
                f"{s.step_theta:.4g}) or λ_θ = {s.lambda_theta:.4g} too far from the "
                "default rule for this dataset: turn the default rule back on."
            )
        return "Likely cause: the step sizes are too large for this data; lower α_μ and α_θ."


def status_line(
    trainer,
    loading: bool,
    running: bool,
    pausing: bool,
    rate: float,
    dataset: str,
    compiled_ready: bool = True,
) -> str:
    """The one-line status: state (training, pausing while a Pause's slice ends its
    iteration, paused), iteration, rate (it/s), test NLLH and dataset; "preparing data…"
    while data load (or a Play waits for them), "no data loaded" before."""
    if loading or trainer is None:
        return "preparing data…" if loading or running else "no data loaded"
    nl = trainer.last_nllh
    nl_s = "–" if nl is None or not math.isfinite(nl) else f"{nl:.4f}"
    state = "training" if running else "pausing" if pausing else "paused"
    rate_s = f"{rate:.1f} it/s"
    # (once the compiled sampler is ready the next slice moves to it: no note meanwhile,
    # a paused session would otherwise show it until its next Play)
    if getattr(trainer.chain, "build", "") == "numpy" and not compiled_ready:
        rate_s += " (numpy sampler until the compiled one is ready)"
    return f"{state} · iteration {trainer.iteration:,} · {rate_s} · test NLLH {nl_s} · {dataset}"


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")
