"""Running a session's trainer: play, pause, step, slices of training in worker threads,
divergence and the status line.

:class:`TrainingControl` is mixed into :class:`~.store.ExplorerSession`: it reads the
session's settings and trainer and sets its ``running``, ``warning``, ``notice`` and
``status``.  A slice (:meth:`TrainingControl.train_slice`) changes only the trainer, so it
may run in a worker thread; :meth:`TrainingControl.finish_slice` applies its outcome on the
thread of the views.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import NamedTuple

from ..callbacks import TimeBox
from ..errors import AggMRFError, DivergenceError
from ..kernels.chain import numpy_samples, with_build
from .keys import LIVE_KEYS
from .problems import DATASET_NAMES

__all__ = ["TrainingControl", "TrainingSlice"]


class TrainingSlice(NamedTuple):
    """What :meth:`ExplorerSession.train_slice` did: the trainer it trained (the session
    may have replaced it meanwhile), each iteration's statistics, and the divergence that
    ended it (None if none)."""

    trainer: object
    stats: list
    error: DivergenceError | None


class TrainingControl:
    """Play, pause, step and the training slices of a session (module docstring)."""

    @property
    def diverged(self) -> bool:
        """The last step diverged and nothing that could help has changed since (the
        trainer holds the last good state; ``warning`` says why)."""
        return bool(self.warning) and self.trainer is not None

    def play(self) -> None:
        """Record that the session wants to train (``running``): it trains as soon as its
        data and sampler are ready (while data load, ``running`` is already set: the
        load keeps it, and the status line says what training waits for)."""
        if self.diverged:  # the same step would only be rejected again
            raise AggMRFError(
                "training diverged: lower a step size α or raise λ, or press "
                "“Continue from last good state” (halves α), or Reset."
            )
        self.running = True
        self._rate.clear()
        self.update_status()

    def pause(self) -> None:
        self.running = False
        self.update_status()

    def resume(self, shrink: float = 0.5) -> None:
        """Continue training from the last good state after a divergence: the step sizes
        α_μ, α_θ are multiplied by ``shrink`` unless the user changed a setting since (the
        trainer rejected the diverging step, so μ, θ and the history are those of the last
        good iteration), then training plays."""
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        if self.diverged:
            it = self.trainer.iteration
            old = (self.step_mu, self.step_theta)
            with self.quiet():
                self.auto_defaults = False
            self.param.update(step_mu=old[0] * shrink, step_theta=old[1] * shrink)
            self.warning = ""
            self.set_notice(
                f"continuing from iteration {it:,}, the last good state, with the step sizes "
                f"multiplied by {shrink:g}: α_μ = {self.step_mu:.3g}, α_θ = {self.step_theta:.3g}."
            )
        self.play()

    def want_step(self) -> None:
        """Record a pressed Step (it runs once data and sampler are ready: the view's
        job); ``steps_wanted`` counts those not run yet (the status line says so)."""
        self.steps_wanted += 1

    def step_taken(self) -> None:
        """A pressed Step ran (or was dropped with its data)."""
        self.steps_wanted = max(0, self.steps_wanted - 1)

    def toggle(self) -> None:
        self.pause() if self.running else self.play()

    def reset(self) -> None:
        """Fresh trainer on the same data and settings (keeps running if it was)."""
        if self.bundle is None:
            self.load()
            return
        self._new_trainer(notice="reset: training restarted from iteration 0.")

    def step(self, k: int = 1) -> list:
        """Run k iterations now (the Step button); returns their statistics."""
        if self.trainer is None:
            raise AggMRFError("no data loaded yet.")
        stats = self._run(budget=None, max_iters=int(k))
        self.param.trigger("stepped")
        return stats

    def tick(self, budget: float = 0.06) -> list:
        """One time-boxed slice of training while running: iterations until ``budget`` s are used."""
        if not self.running or self.trainer is None or self.busy:
            return []
        return self._run(budget=budget, max_iters=self.iters_per_tick)

    def _run(self, budget: float | None, max_iters: int) -> list:
        """Up to ``max_iters`` iterations now (:meth:`train_slice`, then :meth:`finish_slice`)."""
        return self.finish_slice(self.train_slice(budget, max_iters))

    def train_slice(
        self,
        budget: float | None,
        max_iters: int,
        while_running: bool = False,
        steps: Callable | None = None,
    ) -> TrainingSlice:
        """Up to ``max_iters`` iterations of the current trainer, ending before ``budget``
        seconds are overrun (None: no limit), through the trainer's one loop (``step`` with
        a :class:`TimeBox` callback); with ``while_running``, none once the session is
        paused, and none after the iteration under way when it is paused meanwhile.
        ``steps(trainer, k, box)``, if given, runs ``trainer.step(k, callbacks=[box])``
        elsewhere (the server's pool: a worker process), with the same result.

        Safe in a worker thread while the views run elsewhere: it changes the trainer only,
        never a parameter of the session (so no view reacts in this thread); the caller
        hands the result to :meth:`finish_slice` on the thread of the views.
        """
        trainer = self.trainer
        paused = (lambda: not self.running) if while_running else None
        box = TimeBox(budget, stop=paused)
        error = None
        with self._train_lock:
            try:
                if trainer is not None and max_iters >= 1 and not (paused and paused()):
                    self._faster_chain(trainer)
                    if steps is None:
                        trainer.step(max_iters, callbacks=[box])
                    else:
                        steps(trainer, max_iters, box)
            except DivergenceError as exc:
                error = exc
        return TrainingSlice(trainer, box.stats, error)

    def _usable_build(self) -> str | None:
        """The fastest chain build ready now that samples this data; None: wait."""
        build = self._chain_build()
        ok = build != "numpy" or self.bundle is None or numpy_samples(self.bundle.layout)
        return build if ok else None

    def can_train(self) -> bool:
        """A chain build for this data is ready (always, but on a first start)."""
        return self._usable_build() is not None

    def _faster_chain(self, trainer) -> None:
        """Move the trainer's samples to the chain build ready now (numpy → compiled: the
        same samples go on), so that no slice waits for a compiler."""
        if build := self._usable_build():
            trainer.chain = with_build(trainer.chain, trainer.layout, build)

    def finish_slice(self, done: TrainingSlice) -> list:
        """Apply a slice's outcome to the session: the live settings changed meanwhile, a
        divergence (pauses training with a warning), the rate and the status line.
        Returns the slice's statistics ([] if the trainer was replaced meanwhile)."""
        if self._live_pending and self.trainer is not None:
            self._live_pending = False
            self.trainer.update(**{k: getattr(self, k) for k in LIVE_KEYS})
        if done.trainer is not self.trainer or self.trainer is None:
            return []  # a reset or new data replaced it: its iterations are gone
        if done.error is not None:
            self.running = False
            self.notice = ""
            self.warning = f"{done.error} Training paused. {self.divergence_cause()}"
        if done.stats:
            self._rate.append((time.perf_counter(), self.trainer.iteration))
            self._expire_notice()
        self.update_status()
        return done.stats

    def divergence_cause(self) -> str:
        """The likely cause of a divergence, in words: the step size or λ the user changed
        last (with its values), else the step sizes in effect."""
        if self._last_live is not None:
            name, old, new, it = self._last_live
            label = self.param[name].label or name
            if name in ("gradient", "precondition"):
                what = f"{label} was switched to {new!r}"
            else:
                verb = "raised" if _num(new) > _num(old) else "lowered"
                what = f"{label} was {verb} from {_num(old):.4g} to {_num(new):.4g}"
            return (
                f"Likely cause: {what} at iteration {it:,}. Put it back, or press Reset "
                "and turn on the default rule."
            )
        if not self.auto_defaults:
            return (
                f"Likely cause: hand-set step sizes (α_μ = {self.step_mu:.4g}, α_θ = "
                f"{self.step_theta:.4g}) or λ_θ = {self.lambda_theta:.4g} too far from the "
                "default rule for this dataset: turn the default rule back on."
            )
        return "Likely cause: the step sizes are too large for this data; lower α_μ and α_θ."

    @property
    def iteration(self) -> int:
        return 0 if self.trainer is None else self.trainer.iteration

    def iterations_per_second(self) -> float:
        """Iterations per second over the last ~3 s of running (0 when paused)."""
        if len(self._rate) < 2 or not self.running:
            return 0.0
        now = self._rate[-1][0]
        pts = [p for p in self._rate if now - p[0] <= 3.0]
        if len(pts) < 2:
            pts = list(self._rate)[-2:]
        dt = pts[-1][0] - pts[0][0]
        return (pts[-1][1] - pts[0][1]) / dt if dt > 0 else 0.0

    def update_status(self) -> None:
        """Recompute the one-line ``status`` (state, iteration, speed, test NLLH, dataset)."""
        if self.busy or self.trainer is None:
            self.status = "preparing data…" if self.busy or self.running else "no data loaded"
            return
        nl = self.trainer.last_nllh
        nl_s = "–" if nl is None or not math.isfinite(nl) else f"{nl:.4f}"
        # ("pausing" while a Pause's slice ends its iteration: "paused" beside the last one)
        state = "training" if self.running else "pausing" if self._train_lock.locked() else "paused"
        name = DATASET_NAMES.get(self.bundle.key[0], self.bundle.key[0]) if self.bundle else ""
        rate = f"{self.iterations_per_second():.1f} it/s"
        # (once the compiled sampler is ready the next slice moves to it: no note meanwhile,
        # a paused session would otherwise show it until its next Play)
        if getattr(self.trainer.chain, "build", "") == "numpy" and self._chain_build() == "numpy":
            rate += " (numpy sampler until the compiled one is ready)"
        self.status = (
            f"{state} · iteration {self.trainer.iteration:,} · {rate} · test NLLH {nl_s} · {name}"
        )


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")
