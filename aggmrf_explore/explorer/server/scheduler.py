"""Who trains next: the server's pools of daemon threads and each session's run loop.

Free of Panel (``tests/test_explorer_scheduler.py`` drives it with asyncio alone):

- :class:`DaemonPool`: daemon threads taking work from one queue (``submit``); a server
  that stops drops the work under way instead of waiting for it (Python joins the threads
  of a ``ThreadPoolExecutor`` at exit: a Ctrl-C waited for a baseline's fit).
- :class:`TrainingPool`: the sessions' slices of training.  Fair share: each session has a
  :class:`Share` that counts the CPU seconds its slices got; the queue hands out the
  waiting slice of the session that got least (after Steps and a Play's first slice).  A
  slice that ran on a starved core (a busy loop on it, a niced worker behind other work)
  got few CPU seconds in its wall-clock budget: its session goes first next time, so under
  overload every session slows down by the same factor instead of one crawling.
- :class:`RunLoop`: one session's training loop on the event loop (Play: "queue a slice,
  wait for it, refresh the page if due", at most one slice per ``TICK_MS``), a pressed Step,
  and their waits for what training needs.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError, Future

from ...errors import error_message
from ...trainer_worker import SharedParts, TrainerWorker, WorkerLost
from .environment import env_flag, env_int
from .trace import log, lower_priority, say

__all__ = [
    "DaemonPool",
    "TrainingPool",
    "Share",
    "RunLoop",
    "TICK_MS",
    "SLICE_SECONDS",
    "WAIT_POLL",
    "CREDIT_SECONDS",
]

TICK_MS = 100  # a training session queues at most one slice per period
WAIT_POLL = 0.25  # s: how often a pressed Play or Step checks that training can start
SLICE_SECONDS = 0.1  # the most one slice trains (then the page may refresh)
# the most CPU seconds a session may be behind the others and keep as credit: a session
# that paused (or just opened) starts level with the others instead of taking the cores
# until it has caught up; a session starved by its slices' core keeps its due
CREDIT_SECONDS = 0.2
# the most CPU seconds a session may be ahead of the training session that got least: past
# it, its slices wait (a free thread waits for the one behind).  Meant for two sessions on
# two threads, one thread starved, each keeping its own; off (infinite): with 30 Adult
# sessions and a busy loop on one core it cut the total rate from 37 to 6 it/s and left one
# session at 0 (benchmarks/explorer_fairness.py, docs/explorer.md)
LEAD_SECONDS = math.inf
ACTIVE_SECONDS = 1.0  # a session whose last slice ended this long ago no longer holds others
RECHECK_SECONDS = 0.05  # a pool thread held back by pick() looks again this often
IDLE_SECONDS = 5.0  # a pool thread without work for this long tidies up (TrainingPool)
# the training threads' niceness: on a busy machine the event loop (one thread, answering
# every page) gets the cores first, training what is left; alone, training loses nothing
TRAINING_NICE = 5
# a training worker process's niceness and that of its scheduling group: it trains on what
# the event loop and everything else on the machine (the pages of a class, a teacher's
# notebook) leave
WORKER_NICE = 19
WORKER_IDLE = 15.0  # seconds without a slice after which a worker process ends
MAX_WORKER_FAILURES = 4  # worker processes lost before the pool keeps to its threads
THREADS_PER_SLICE = 1  # numba threads of a training slice (see TrainingPool)


class DaemonPool:
    """``workers`` daemon threads running what :meth:`submit` queues, in the queue's order
    (``order(**kw)``: the sort key of an item; first in, first out by default) among the
    items :meth:`pick` allows now (all, by default)."""

    def __init__(self, workers: int, name: str, initializer: Callable[[], None] | None = None):
        self._workers, self.name, self.initializer = workers, name, initializer
        self._waiting: list[tuple] = []  # (key, future, fn, args, kw), a heap by key
        self._count = itertools.count()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Condition()

    @property
    def workers(self) -> int:
        return self._workers

    def order(self, **kw) -> tuple:
        """The sort key of a submitted item (before its submission number)."""
        return ()

    def submit(self, fn: Callable, *args, **kw) -> Future:
        """Queue ``fn(*args)`` (``kw``: what :meth:`order` sorts by); its future has the
        result or the exception."""
        future: Future = Future()
        with self._lock:
            key = (*self.order(**kw), next(self._count))
            heapq.heappush(self._waiting, (key, future, fn, args, kw))
            self._lock.notify_all()
            while len(self._threads) < self.workers:
                t = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                t.start()
        return future

    def run(self, fn: Callable, *args, **kw):
        """An awaitable of ``fn(*args)`` run in the pool (call it on the event loop)."""
        return asyncio.wrap_future(self.submit(fn, *args, **kw))

    def _work(self) -> None:
        if self.initializer is not None:
            self.initializer()
        while True:
            item = self._take(IDLE_SECONDS)
            if item is None:
                self.idle()
                continue
            key, future, fn, args, kw = item
            try:
                if future.set_running_or_notify_cancel():
                    self.execute(key, future, fn, args, kw)
            finally:
                self.finished(item)

    def _take(self, timeout: float) -> tuple | None:
        """The next item :meth:`pick` allows, waiting up to ``timeout`` s (None: none)."""
        end = time.monotonic() + timeout
        with self._lock:
            while True:
                item = self.pick()
                if item is not None:
                    self._waiting.remove(item)
                    heapq.heapify(self._waiting)
                    self.taken(item)
                    return item
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(min(left, RECHECK_SECONDS))

    def pick(self) -> tuple | None:
        """(Under the lock.)  The waiting item to run next: the first in order."""
        return self._waiting[0] if self._waiting else None

    def taken(self, item: tuple) -> None:
        """(Under the lock.)  ``item`` leaves the queue for a thread."""

    def finished(self, item: tuple) -> None:
        """``item`` ran (or was cancelled before it started)."""

    def execute(self, key: tuple, future: Future, fn: Callable, args: tuple, kw: dict) -> None:
        """Run one item in a pool thread (its result or exception to ``future``)."""
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
            future.set_exception(exc)

    def idle(self) -> None:
        """(A pool thread without work for ``IDLE_SECONDS``.)"""


class Share:
    """A session's account in the :class:`TrainingPool`: the CPU seconds its slices got
    (``used``), its slices run (``slices``), queued (``queued``) and running now
    (``under_way``), and whether it is training now (a slice queued or running, or one
    ended less than ``ACTIVE_SECONDS`` ago)."""

    __slots__ = ("used", "slices", "queued", "under_way", "last_end", "__weakref__")

    def __init__(self) -> None:
        self.used = 0.0
        self.slices = 0
        self.queued = self.under_way = 0
        self.last_end = -math.inf

    def active(self, now: float) -> bool:
        return bool(self.queued or self.under_way) or now - self.last_end < ACTIVE_SECONDS


class TrainingPool(DaemonPool):
    """Worker threads that run the sessions' slices of training, one per core by default.

    ``submit(fn, *args, priority=1, share=None)`` returns a Future.  Work is taken by
    ``priority`` (0: a Step or a Play's first slice, never behind the queue), then fair
    share: the slice of the :class:`Share` with the fewest CPU seconds so far (a share
    more than ``CREDIT_SECONDS`` behind the last slice handed out counts as that far
    behind), then in order of submission.

    numba's compiled kernels release the GIL, but a thread hands it back tens of times per
    iteration and waits for it behind the event loop: once :meth:`use_processes` was
    called (a served page) and ``processes_ready()`` (the compiled sampler is loaded),
    each thread hands its slices to a worker process of its own (:meth:`run_steps`), niced
    to ``WORKER_NICE`` in a scheduling group of its own, and only waits for the answer.
    A slice runs its kernels on one thread: numba's OpenMP barriers wait for a descheduled
    team thread whenever the machine is busy (the results do not depend on it).
    """

    def __init__(
        self, workers: int | None = None, processes_ready: Callable[[], bool] = lambda: True
    ) -> None:
        super().__init__(0, "aggmrf-train")
        self.cores = max(1, os.cpu_count() or 1)
        self._asked = workers
        self._processes_ready = processes_ready
        self.clock = 0.0  # the CPU seconds of the share of the last slice handed out
        self.active = 0  # slices running now
        self.processes = False  # step trainers in worker processes (use_processes)
        self._local = threading.local()  # a pool thread's worker process, its slice's CPU
        self._failures = 0  # worker processes lost (past MAX_WORKER_FAILURES: threads only)
        self._started: list[TrainerWorker] = []  # the worker processes started
        self._shares: weakref.WeakSet = weakref.WeakSet()  # the sessions' shares seen
        self._parts = SharedParts()  # what its worker processes hold, by token

    @property
    def workers(self) -> int:
        """The pool's threads: as asked, else ``AGGMRF_TRAIN_THREADS``, else one per core
        (read when the first slice is queued: the server checked the variable before)."""
        return max(1, int(self._asked or env_int("AGGMRF_TRAIN_THREADS", self.cores)))

    def order(self, priority: int = 1, share: Share | None = None) -> tuple:
        if share is None:
            return (priority, self.clock)
        share.used = max(share.used, self.clock - CREDIT_SECONDS)
        share.queued += 1
        self._shares.add(share)
        return (priority, share.used)

    def pick(self) -> tuple | None:
        """The first waiting slice in order (Steps, then the share that got least) whose
        share is at most ``LEAD_SECONDS`` ahead of the training share that got least."""
        if not self._waiting:
            return None
        now = time.monotonic()
        floor = min((sh.used for sh in self._shares if sh.active(now)), default=0.0)
        for item in sorted(self._waiting):
            key, future, _, _, kw = item
            share = kw.get("share")
            if key[0] == 0 or share is None or future.cancelled():
                return item
            if share.used <= floor + LEAD_SECONDS:
                return item
        return None

    def taken(self, item: tuple) -> None:
        key, kw = item[0], item[4]
        self.clock = max(self.clock, key[1])
        share = kw.get("share")
        if share is not None:
            share.queued -= 1
            share.under_way += 1

    def finished(self, item: tuple) -> None:
        share = item[4].get("share")
        if share is not None:
            with self._lock:
                share.under_way -= 1
                share.last_end = time.monotonic()
                self._lock.notify_all()

    def use_processes(self) -> None:
        """From now on each pool thread steps trainers in a worker process of its own once
        ``processes_ready()``; ``AGGMRF_TRAIN_PROCESSES=0`` keeps them in the threads."""
        if env_flag("AGGMRF_TRAIN_PROCESSES", True):
            self.processes = True

    def execute(self, key, future, fn, args, kw) -> None:
        from ...kernels import set_threads

        share = kw.get("share")
        with self._lock:
            self.active += 1
        self._local.elsewhere = 0.0  # CPU seconds of this slice in a worker process
        t0 = time.thread_time()
        try:
            set_threads(THREADS_PER_SLICE)
            super().execute(key, future, fn, args, kw)
        finally:
            used = time.thread_time() - t0 + self._local.elsewhere
            with self._lock:
                self.active -= 1
                if share is not None:
                    share.used += used
                    share.slices += 1

    def _work(self) -> None:
        lower_priority(TRAINING_NICE)  # the event loop (clicks, pages, refreshes) comes first
        super()._work()

    def run_steps(self, trainer, k: int, box) -> None:
        """``trainer.step(k, callbacks=[box])``, in this pool thread's worker process when
        it has one ready (the same numbers bit for bit), else in this thread."""
        worker = self._worker()
        if worker is not None and getattr(trainer.chain, "build", "parallel") == "parallel":
            try:
                self._local.elsewhere += worker.run_steps(trainer, k, box)
                self._retire(worker)
                return
            except WorkerLost as exc:
                self._local.worker = None
                if not worker.closed:  # (not ended by end_idle_workers meanwhile)
                    say(f"{exc} Training continues in the server process.")
                    self._failures += 1
        trainer.step(k, callbacks=[box])

    def _worker(self) -> TrainerWorker | None:
        """This pool thread's worker process once it is ready (None before, or without
        processes); started here the first time it is wanted."""
        if not self.processes or not self._processes_ready():
            return None
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.closed:
            if self._failures >= MAX_WORKER_FAILURES:
                return None
            try:
                worker = self._local.worker = TrainerWorker(WORKER_NICE, self._parts)
            except OSError as exc:
                say(f"no training worker process ({exc}): training stays in the server process.")
                self._failures = MAX_WORKER_FAILURES
                return None
            with self._lock:
                self._started.append(worker)
            log(f"training worker process {worker.proc.pid} started")
        return worker if worker.ready() else None

    def end_idle_workers(self) -> None:
        """End the worker processes that are not stepping a trainer now (when no session
        trains: their memory goes back to the system; the next training starts new ones)."""
        with self._lock:
            started, self._started = self._started, []
        for worker in started:
            if worker.close_if_idle():
                log(f"training worker process {worker.proc.pid} ended")
            else:  # busy this instant: its thread ends it once done (_retire)
                worker.retire = True
                with self._lock:
                    self._started.append(worker)

    def _retire(self, worker: TrainerWorker) -> bool:
        """End ``worker`` (this thread's) if :meth:`end_idle_workers` asked; True if so."""
        if worker.retire and worker.close_if_idle():
            log(f"training worker process {worker.proc.pid} ended")
            return True
        return False

    def idle(self) -> None:
        """Its worker process drops what it holds of closed sessions, and ends after
        ``WORKER_IDLE`` s without work (it starts again, in about a second, when wanted)."""
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.closed or self._retire(worker):
            return
        if time.monotonic() - worker.last_used > WORKER_IDLE:
            if worker.close_if_idle():
                log(f"training worker process {worker.proc.pid} ended (idle)")
        else:
            worker.forget_dead()


class RunLoop:
    """One session's training on the event loop: Play's loop and a pressed Step.

    ``session``: the store (``running``, ``busy``, ``trainer``, ``finish_slice``, and its run
    control ``session.run``: ``train_slice``, ``want_step``/``step_taken``); ``pool``: a
    :class:`TrainingPool`; ``execute(coroutine_function)``: schedules it on the event loop
    (Panel's ``pn.state.execute`` on a page, ``asyncio``'s tasks in a test); ``ready()``: what
    training needs (data, sampler) is ready; ``after_slice(first)``: the page's refresh
    due (``first``: a Play's first slice, to be shown at once); ``stopped()``: the loop
    ended (paused); ``report(text)``: a message for the page; ``steps``: how the pool
    steps a trainer (``TrainingPool.run_steps``, a worker process) or None (in the pool's
    thread).
    """

    def __init__(
        self,
        session,
        pool: TrainingPool,
        execute: Callable,
        ready: Callable[[], bool],
        after_slice: Callable[[bool], None],
        stopped: Callable[[], None],
        report: Callable[[str], None],
        steps: Callable | None = None,
    ) -> None:
        self.session, self.pool, self.execute = session, pool, execute
        self.ready, self.after_slice, self.stopped, self.report = (
            ready,
            after_slice,
            stopped,
            report,
        )
        self.steps = steps
        self.share = Share()
        self.looping = False  # the loop (a coroutine) is under way
        self.closed = False  # the page is gone: nothing more runs
        self._lock: asyncio.Lock | None = None  # one slice of this session at a time
        self.future: Future | None = None  # the slice queued or under way in the pool
        self.ahead: Future | None = None  # the next slice, queued while the page refreshes

    def _slice_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def start(self) -> bool:
        """Start the loop (once: a Play during a Pause's last slice reuses it); False
        without an event loop (a script: ``Explorer.tick()`` by hand)."""
        if self.looping or self.closed:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        self.looping = True
        self.execute(self.loop)
        return True

    def cancel_queued(self) -> None:
        """Paused: the slice still waiting in the pool's queue is dropped (one under way
        ends after its current iteration)."""
        if self.future is not None:
            self.future.cancel()

    def close(self) -> None:
        self.closed = True
        self.cancel_queued()

    async def loop(self) -> None:
        """While the session plays: a slice in the pool, then the refresh due; at most one
        slice per ``TICK_MS`` (``iters_per_tick`` is per period).  The next slice is queued
        before the page refreshes (:meth:`train_once`): the worker trains while the event
        loop draws."""
        first = True  # a Play's first slice goes ahead of the queue, as a Step does
        cancelled = False  # this task was cancelled (its event loop ends): no restart
        try:
            while self.session.running and not self.closed:
                t0 = time.monotonic()
                if await self.train_once(priority=0 if first else 1):
                    first = False
                await asyncio.sleep(max(TICK_MS / 1000 - (time.monotonic() - t0), 0.0))
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            await self._finish_ahead()
            self.looping = False
            if not self.closed and not cancelled:
                if self.session.running:  # a Play pressed while the last slice ended
                    self.start()
                else:
                    self.stopped()

    def _submit(self, priority: int) -> Future:
        s = self.session
        return self.pool.submit(
            s.run.train_slice,
            SLICE_SECONDS,
            s.iters_per_tick,
            True,
            self.steps,
            priority=priority,
            share=self.share,
        )

    def _can_slice(self) -> bool:
        s = self.session
        return s.running and not s.busy and s.trainer is not None and not self.closed

    async def train_once(self, priority: int = 1) -> bool:
        """One slice in the pool (the one queued ahead, if any), then the next one queued
        ahead, then the refresh due; False (after ``WAIT_POLL``) if what training needs
        is not ready yet."""
        if not self.ready():
            await self._finish_ahead()
            self.after_slice(False)
            await asyncio.sleep(WAIT_POLL)
            return False
        async with self._slice_lock():
            if not self._can_slice():
                await self._finish(self.ahead)
                self.ahead = None
                return False
            future, self.ahead = self.ahead or self._submit(priority), None
            await self._finish(future)
            if self._can_slice():
                self.ahead = self.future = self._submit(1)  # trains while the page draws
        if not self.closed:
            self.after_slice(priority == 0)
        return True

    async def _finish(self, future: Future | None) -> None:
        """Wait for a slice and apply its outcome to the session (a Pause may have
        cancelled it before it started)."""
        if future is None:
            return
        s = self.session
        self.future = future
        try:
            done = await asyncio.wrap_future(future)
            if not self.closed:
                s.finish_slice(done)
        except (asyncio.CancelledError, CancelledError):
            if _task_cancelled(future):
                raise  # this task itself is cancelled: the loop ends (never swallowed)
            # else: the slice was cancelled (paused) before it started
        except Exception as exc:  # noqa: BLE001
            s.pause()
            self.report(f"training stopped: {error_message(exc)}")
        finally:
            self.future = None

    async def _finish_ahead(self) -> None:
        """The slice queued ahead, if any: cancelled if it has not started, else its
        iterations (up to the one under way at a Pause) applied to the session."""
        future, self.ahead = self.ahead, None
        if future is not None:
            future.cancel()
            async with self._slice_lock():
                await self._finish(future)

    def step(self) -> None:
        """A pressed Step: recorded now, run once data and sampler are ready."""
        self.session.run.want_step()
        self.execute(self.step_when_ready)

    async def step_when_ready(self) -> None:
        s = self.session
        while not self.closed and not self.ready():
            self.after_slice(False)  # (the status line: "Step pressed: … once … ready")
            await asyncio.sleep(WAIT_POLL)
        async with self._slice_lock():  # after this session's slice under way, if any
            s.run.step_taken()
            if s.trainer is None or s.busy or self.closed:
                return
            try:
                done = await self.pool.run(
                    s.run.train_slice, None, 1, False, self.steps, priority=0, share=self.share
                )
                s.finish_slice(done)
            except Exception as exc:  # noqa: BLE001
                self.report(error_message(exc))
                return
            s.param.trigger("stepped")  # the views redraw


def _task_cancelled(future: Future) -> bool:
    """Whether a CancelledError met while awaiting ``future`` cancels the awaiting task
    (its event loop ends, ``asyncio.run`` tidies up) rather than only the slice."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)  # Python ≥ 3.11
    if cancelling is not None:
        return cancelling() > 0
    return not future.cancelled()  # (a slice cancelled by a Pause is itself cancelled)
