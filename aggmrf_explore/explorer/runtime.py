"""The explorer's process runtime: kernel warm-up, worker threads, open sessions, memory.

One per server process (module-level, shared by every session):

- the numba kernels are compiled (or loaded from numba's cache) once, in a background
  thread started when the served app is first built (:func:`warm_up_in_background`), in
  two phases: first what the first screen trains with (the dense Gibbs chain, the rows,
  the logits, the update: :func:`kernels_ready`), then the rest (the MRF-N noise
  posterior: :func:`extras_ready`), so no click ever waits for the compiler;
  :func:`warm_up_message` is the progress line the page and the terminal show meanwhile
  (on a fresh numba cache, "compiling the sampler (first start only)…").  The data load
  never waits for it: every control but training works during a compilation.
- a *first start* (empty numba cache) trains as soon as the small kernels (rows, logits,
  the update) are compiled in-process, seconds: the chain runs its numpy build
  (``kernels.NumpyGibbsChain``) while a niced child process, which ends with the server,
  compiles the parallel builds into numba's cache; the sessions' chains move to them once
  they are there (:func:`chain_build`, :func:`parallel_ready`);
- training runs in :data:`TRAINING`, a pool of one thread per core shared by every
  session (:class:`TrainingPool`); the event loop only hands out slices of training and
  pushes their results to the pages.  A served session's slices run in the pool
  thread's worker process (:mod:`aggmrf_explore.trainer_worker`, the trainer's state
  shipped there and back, the same numbers bit for bit): with a GIL of its own it keeps
  its core busy however busy the event loop is, in a scheduling group niced to
  :data:`WORKER_NICE` (it trains on what the pages and everything else leave); the
  worker processes end when no session trains (:data:`WORKER_IDLE`);
- data preparation runs in :data:`DATA_EXECUTOR` (2 threads), the slow baselines in
  :data:`SLOW_EXECUTOR` (1 niced thread), so the event loop never blocks;
- :func:`max_sessions` caps the open sessions (a page past it says the class is full);
- :data:`RUNNING` and :data:`SESSIONS` track the explorers training now and the open
  server sessions (weak sets: a closed session is never kept alive by them);
- :func:`release_memory_soon` hands the memory of closed sessions back to the system.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import importlib
import itertools
import os
import queue
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future

from ..errors import AggMRFError
from ..trainer_worker import (
    TrainerWorker,
    WorkerLost,
    end_with_parent,
    ignore_interrupts,
    trim_memory,
)
from .environment import env_flag, env_int

__all__ = [
    "TrainingPool",
    "TRAINING",
    "steps_for",
    "max_sessions",
    "DEFAULT_MAX_SESSIONS",
    "DATA_EXECUTOR",
    "SLOW_EXECUTOR",
    "RUNNING",
    "SESSIONS",
    "RELEASE_DELAY",
    "log",
    "warm_up_once",
    "warm_up_in_background",
    "kernels_ready",
    "chain_build",
    "parallel_ready",
    "train_first_screen",
    "extras_ready",
    "first_start",
    "warm_up_message",
    "warm_up_extras",
    "finish_parallel",
    "start_parallel_compile",
    "compile_in_subprocess",
    "wait_for_warm_up",
    "release_memory_soon",
    "lower_priority",
    "import_in_background",
    "one_kernel_thread",
    "limit_malloc_arenas",
]


def one_kernel_thread() -> None:
    """The calling thread (the event loop, a worker) runs numba's parallel kernels on one
    thread: their OpenMP barriers stall whenever the machine is busy (see TrainingPool)."""
    from ..kernels import set_threads

    set_threads(1)


class BackgroundThreads:
    """A pool of ``workers`` daemon threads for ``loop.run_in_executor`` (``submit``).

    Not :class:`concurrent.futures.ThreadPoolExecutor`: Python joins its threads when the
    interpreter exits, so a Ctrl-C that stopped ``panel serve`` waited for the data load or
    the baseline fit under way (tens of seconds for Adult's logistic skyline); the work of
    a server that stops is dropped instead."""

    def __init__(self, workers: int, name: str, initializer: Callable[[], None] | None = None):
        self.workers, self.name, self.initializer = workers, name, initializer
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable, *args) -> Future:
        future: Future = Future()
        self._queue.put((future, fn, args))
        with self._lock:
            if len(self._threads) < self.workers:
                t = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                t.start()
        return future

    def _work(self) -> None:
        if self.initializer is not None:
            self.initializer()
        while True:
            future, fn, args = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                future.set_exception(exc)


DATA_EXECUTOR = BackgroundThreads(2, "aggmrf-data", initializer=one_kernel_thread)
SLOW_EXECUTOR = BackgroundThreads(1, "aggmrf-baselines")
RUNNING: weakref.WeakSet = weakref.WeakSet()  # explorers training now (share the loop)
SESSIONS: weakref.WeakSet = weakref.WeakSet()  # explorers of open server sessions
RELEASE_DELAY = 5.0  # seconds after a session closes: Bokeh has dropped its document by then
FREEZE_DELAY = 2.0  # seconds after a page is built or loads new data: its objects are in place
DEFAULT_MAX_SESSIONS = 40  # open sessions per server process (AGGMRF_MAX_SESSIONS changes it)
THREADS_PER_SLICE = 1  # numba threads of a training slice (see TrainingPool)
# the training threads' niceness: on a busy machine the event loop (one thread, answering
# every page) gets the cores first, training what is left; alone, training loses nothing
TRAINING_NICE = 5
# a training worker process's niceness and that of its scheduling group: it trains on what
# the event loop and everything else on the machine (the pages of a class on one machine,
# a teacher's notebook) leave
WORKER_NICE = 19
# how long a first start's compiler takes (docs/explorer.md, "A first start"): what a
# pressed Play waiting for it is told
COMPILE_ESTIMATE = "a minute on 2 cores"
WORKER_IDLE = 15.0  # seconds without a slice after which a worker process ends
MAX_WORKER_FAILURES = 4  # worker processes lost before the pool keeps to its threads


def max_sessions() -> int:
    """The most sessions one server process opens: ``AGGMRF_MAX_SESSIONS`` if set (an
    integer ≥ 1), else :data:`DEFAULT_MAX_SESSIONS`.  Past it a new page says the class is
    full instead of loading (each training session holds 15–20 MB and its share of the
    cores)."""
    return env_int("AGGMRF_MAX_SESSIONS", DEFAULT_MAX_SESSIONS)


class TrainingPool:
    """Worker threads that run the sessions' slices of training, one per core by default.

    ``submit(fn, *args, priority=…)`` returns a :class:`concurrent.futures.Future`;
    ``await pool.run(fn, *args, priority=…)`` waits for it on the event loop.  Work is
    taken by priority, then in order of submission: a session that submits its next
    slice after the previous one ended goes behind every other session's, so the
    sessions training at once share the cores round-robin, and a Step (priority 0) waits
    for at most the slices already running, never for the queue.

    numba's compiled kernels release the GIL, so the threads train at the same time, one
    core each, niced by :data:`TRAINING_NICE` so that the event loop answers first.  But
    a thread hands the GIL back tens of times per iteration and waits to get it back from
    the event loop: with a class, the threads waited more than they trained.  So, once
    :meth:`use_processes` was called (a served page) and the compiled sampler is loaded,
    each thread hands its slices to a worker process of its own (:meth:`run_steps`), and
    only waits for the answer.

    A slice runs its parallel kernels on one thread: with more (numba's
    OpenMP teams), every kernel ends at a barrier that waits for a descheduled team
    thread whenever the machine is busy (another session, a browser, another job), and
    Adult at n' = 10 000 fell from 142–173 to 17–51 iterations per second at load 4 on 2
    cores.  The results do not depend on it (the kernels hand work out by counters).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.cores = max(1, os.cpu_count() or 1)
        self._workers = workers
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.active = 0  # slices running now
        self.processes = False  # step trainers in worker processes (use_processes)
        self._local = threading.local()  # a pool thread's worker process
        self._failures = 0  # worker processes lost (past MAX_WORKER_FAILURES: threads only)
        self._processes: list[TrainerWorker] = []  # the worker processes started

    def use_processes(self) -> None:
        """From now on each pool thread steps trainers in a worker process of its own
        (:mod:`aggmrf_explore.trainer_worker`) once the compiled sampler is ready: a
        process has its own GIL, so a class training at once keeps every core busy
        while the event loop answers the pages.  ``AGGMRF_TRAIN_PROCESSES=0`` keeps
        them in the threads."""
        if env_flag("AGGMRF_TRAIN_PROCESSES", True):
            self.processes = True

    @property
    def workers(self) -> int:
        """The pool's threads: as asked, else ``AGGMRF_TRAIN_THREADS``, else one per core
        (read when the first slice is queued: the server checked the variable before)."""
        return max(1, int(self._workers or env_int("AGGMRF_TRAIN_THREADS", self.cores)))

    def run_steps(self, trainer, k: int, box) -> None:
        """``trainer.step(k, callbacks=[box])``, in this pool thread's worker process when
        it has one ready (the same numbers bit for bit), else in this thread; for
        ``ExplorerSession.train_slice(steps=…)`` in the pool."""
        worker = self._worker()
        if worker is not None and getattr(trainer.chain, "build", "parallel") == "parallel":
            try:
                worker.run_steps(trainer, k, box)
                self._retire(worker)
                return
            except WorkerLost as exc:
                self._local.worker = None
                if not worker.closed:  # (not ended by end_idle_workers meanwhile)
                    say(f"{exc} Training continues in the server process.")
                    self._failures += 1
        trainer.step(k, callbacks=[box])

    def _worker(self):
        """This pool thread's worker process once it is ready (None before, or without
        processes); started here the first time it is wanted."""
        if not self.processes or not _PARALLEL.is_set():
            return None
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.closed:
            if self._failures >= MAX_WORKER_FAILURES:
                return None
            try:
                worker = self._local.worker = TrainerWorker(nice=WORKER_NICE)
            except OSError as exc:
                say(f"no training worker process ({exc}): training stays in the server process.")
                self._failures = MAX_WORKER_FAILURES
                return None
            with self._lock:
                self._processes.append(worker)
            log(f"training worker process {worker.proc.pid} started")
        return worker if worker.ready() else None

    def end_idle_workers(self) -> None:
        """End the worker processes that are not stepping a trainer now (when no session
        trains: their memory goes back to the system; the next training starts new ones)."""
        with self._lock:
            processes, self._processes = self._processes, []
        for worker in processes:
            if worker.close_if_idle():
                log(f"training worker process {worker.proc.pid} ended")
            else:  # busy this instant: its thread ends it once done (_retire)
                worker.retire = True
                with self._lock:
                    self._processes.append(worker)

    def _retire(self, worker) -> bool:
        """End ``worker`` (this thread's) if :meth:`end_idle_workers` asked; True if so."""
        if worker.retire and worker.close_if_idle():
            log(f"training worker process {worker.proc.pid} ended")
            return True
        return False

    def submit(self, fn: Callable, *args, priority: int = 1) -> Future:
        """Queue ``fn(*args)``; its future has the result (or the exception)."""
        future: Future = Future()
        self._queue.put((priority, next(self._order), future, fn, args))
        with self._lock:
            while len(self._threads) < self.workers:
                t = threading.Thread(
                    target=self._work, name=f"aggmrf-train-{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                t.start()
        return future

    def run(self, fn: Callable, *args, priority: int = 1):
        """An awaitable of ``fn(*args)`` run in the pool (call it on the event loop)."""
        return asyncio.wrap_future(self.submit(fn, *args, priority=priority))

    def _idle(self) -> None:
        """(A pool thread with nothing to do for ``RELEASE_DELAY`` s.)  Its worker process
        drops what it holds of closed sessions, and ends after ``WORKER_IDLE`` s without
        work: the memory of a class that left goes back to the system (it starts again, in
        about a second, with the next training)."""
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.closed or self._retire(worker):
            return
        if time.monotonic() - worker.last_used > WORKER_IDLE:
            if worker.close_if_idle():
                log(f"training worker process {worker.proc.pid} ended (idle)")
        else:
            worker.forget_dead()

    def _work(self) -> None:
        from ..kernels import set_threads

        lower_priority(TRAINING_NICE)  # the event loop (clicks, pages, refreshes) comes first
        while True:
            try:
                _, _, future, fn, args = self._queue.get(timeout=RELEASE_DELAY)
            except queue.Empty:
                self._idle()
                continue
            if not future.set_running_or_notify_cancel():
                continue
            with self._lock:
                self.active += 1
            try:
                set_threads(THREADS_PER_SLICE)
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting session
                future.set_exception(exc)
            finally:
                with self._lock:
                    self.active -= 1


def steps_for(explorer):
    """How the pool steps ``explorer``'s trainer (``train_slice(steps=…)``): in a worker
    process if it is a served session (:meth:`TrainingPool.run_steps`), else None, in the
    pool's thread (a notebook's kernel keeps to one process)."""
    return TRAINING.run_steps if explorer in SESSIONS else None


TRAINING = TrainingPool()

_WARM = threading.Event()
_EXTRAS = threading.Event()
_PARALLEL = threading.Event()  # the parallel builds of the dense kernels are in use
_PREFETCHED = threading.Event()  # first screen's kernels and data ready (warm-up thread)
_warm_started: float | None = None  # perf_counter when the warm-up thread started
_first_start: bool | None = None
_WARM_LOCK = threading.Lock()  # held while the kernels compile (or load)
_START_LOCK = threading.Lock()  # starts the warm-up thread (never held for long)
_warm_thread: threading.Thread | None = None
_child: tuple[threading.Thread, float] | None = None  # first start: the parallel compile
_compiler: threading.Thread | None = None
_release_handle: asyncio.TimerHandle | None = None  # the release after the last close
_freeze_handle: asyncio.TimerHandle | None = None  # the freeze after the last page built
_IMPORTING: set[str] = set()  # modules import_in_background was asked for


def _log_wanted() -> bool:
    try:
        return env_flag("AGGMRF_EXPLORER_LOG", False)
    except AggMRFError:  # (a bad value: the server refuses it, serve.explorer_document)
        return True


_LOG = _log_wanted()  # the timing log is on (read once, at import)


def log(msg: str) -> None:
    """Timing trace on stderr when AGGMRF_EXPLORER_LOG is set (benchmarks read it)."""
    if _LOG:
        print(f"[aggmrf explorer {time.time():.3f}] {msg}", file=sys.stderr, flush=True)


_gc_started = [0.0]


def _log_long_collections(phase: str, info: dict) -> None:
    """``gc.callbacks`` entry: a collection that held the GIL longer than 20 ms, in the log."""
    if phase == "start":
        _gc_started[0] = time.perf_counter()
        return
    ms = 1000 * (time.perf_counter() - _gc_started[0])
    if ms > 20:
        log(f"garbage collection of generation {info['generation']}: {ms:.0f} ms")


if _LOG:
    gc.callbacks.append(_log_long_collections)


def say(msg: str) -> None:
    """A line for the person who ran ``panel serve`` (always printed, on stderr)."""
    print(f"aggmrf explorer: {msg}", file=sys.stderr, flush=True)
    log(msg)


# what a compiling subprocess runs: numba fills its on-disk cache there, with a GIL of its
# own, so the server's event loop (page building, clicks) never waits for the compiler
DENSE_KERNELS = (
    "import os; os.environ['AGGMRF_COMPILING'] = '1'\n"
    "from aggmrf_explore.kernels import warm_up; warm_up()\n"
    "from aggmrf_explore.explorer.runtime import train_first_screen; train_first_screen()"
)
EXTRA_KERNELS = (
    "import os; os.environ['AGGMRF_COMPILING'] = '1'\n"
    "from aggmrf_explore.explorer.runtime import warm_up_extras; warm_up_extras()"
)
_IN_SUBPROCESS = bool(os.environ.get("AGGMRF_COMPILING"))


def _child_setup(nice: bool) -> None:
    """In the child, before it runs: niced with ``nice`` (the server and the browser come
    first), and ended by the system when the server ends (Linux): a compiler never
    outlives it; what it compiled so far stays in numba's cache (one file per kernel)."""
    if nice:
        try:
            os.nice(10)
        except OSError:
            pass
    ignore_interrupts()  # a Ctrl-C is the server's; it ends its compilers itself
    end_with_parent()


def compile_in_subprocess(code: str, nice: bool = False) -> bool:
    """Run ``code`` (a warm-up) in a child Python sharing numba's cache directory (niced
    with ``nice``); True if it succeeded (else the caller compiles in-process)."""
    cmd = [sys.executable, "-c", code]
    try:
        done = subprocess.run(
            cmd,
            env=os.environ.copy(),
            capture_output=True,
            timeout=1800,
            preexec_fn=functools.partial(_child_setup, nice) if os.name == "posix" else None,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log(f"compiling subprocess failed to run: {exc}")
        return False
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        log(f"compiling subprocess failed: {tail}")
    return done.returncode == 0


def first_start() -> bool:
    """True when the kernels are not in numba's on-disk cache yet (they will compile)."""
    global _first_start
    if _first_start is None:
        from ..kernels.quick import cache_marker

        try:
            _first_start = not cache_marker().exists()
        except Exception:  # noqa: BLE001 - an unreadable cache: say "compiling"
            _first_start = True
    return _first_start


def warm_up_message() -> str:
    """What the page shows while the kernels are not ready (empty once they are)."""
    if _WARM.is_set():
        return ""
    what = (
        "compiling the sampler (first start only)"
        if first_start()
        else "loading the compiled sampler"
    )
    if _warm_started is None:
        return f"{what}…"
    return f"{what}… {time.perf_counter() - _warm_started:.0f} s"


def kernels_ready() -> bool:
    """True once the kernels the first screen trains with are compiled (or loaded)."""
    return _WARM.is_set()


def parallel_ready() -> bool:
    """True once the dense chain runs its parallel builds (always after a warm start)."""
    return _PARALLEL.is_set()


def train_first_screen(iterations: int = 2, build: str = "parallel") -> None:
    """A few iterations of the first screen (XOR, the explorer's default settings) through
    the explorer's own call path, the chain in ``build``: every kernel a Play needs, with
    its argument types, is compiled (or loaded) — the row kernel, the logits, the chain
    (none with "numpy"), the update."""
    from .problems import get_baselines
    from .store import CHEAP_BASELINES, ExplorerSession, baseline_names

    s = ExplorerSession(lazy=True, chain_build=lambda: build)
    bundle = s.fetch()
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    s.load(bundle)
    s.step(iterations)
    s.close()


def extras_ready() -> bool:
    """True once the other kernels (MRF-N's noise posterior) are compiled (or loaded)."""
    return _EXTRAS.is_set()


def warm_up_once(quick_start: bool = False) -> None:
    """Compile (or load from numba's cache) the first screen's kernels once per process.

    On a first start with ``quick_start`` (the served app), training is ready as soon as
    the small kernels (rows, logits, the update: seconds) are compiled here: the chain runs
    its numpy build (:class:`~aggmrf_explore.kernels.NumpyGibbsChain`) while a niced child
    compiles the parallel builds into numba's cache; :func:`finish_parallel` then loads
    them, and each session's next slice moves its samples to them.  Without it (a
    notebook), a child compiles the parallel builds and this waits for it.
    """
    global _child
    if _WARM.is_set():
        return
    with _WARM_LOCK:
        if _WARM.is_set():
            return
        from ..kernels import warm_up

        first = first_start()
        t0 = time.perf_counter()
        if first and not quick_start:
            say("compiling the sampler (first start only; about a minute on 2 cores)…")
            compile_in_subprocess(DENSE_KERNELS)
            first = False  # (now in numba's cache: loaded below)
        if first:
            child = start_parallel_compile()
            train_first_screen(build="numpy")  # the update, rows and logits, on Play's path
            _WARM.set()
            _child = (child, t0)
            dt = time.perf_counter() - t0
            say(
                f"training is ready after {dt:.1f} s with the numpy sampler; the compiled "
                "one follows (first start only, in the background)"
            )
            log(f"numpy sampler ready in {dt:.2f} s")
            return
        warm_up()  # loads numba's cache, ~1 s
        train_first_screen()  # the rest of Play's kernels (update, logits) on the real path
        _WARM.set()
        _PARALLEL.set()
        dt = time.perf_counter() - t0
        how = "compiled" if first_start() else "loaded"
        say(f"sampler {how} in {dt:.1f} s: training is ready")
        log(f"numba kernels ready in {dt:.2f} s")


def chain_build() -> str | None:
    """The build of the Gibbs chain the sessions train with now: "parallel" once the
    compiled sampler is loaded, "numpy" on a first start until then, None before either
    is ready (see :func:`warm_up_once`)."""
    if _PARALLEL.is_set():
        return "parallel"
    return "numpy" if _WARM.is_set() else None


def start_parallel_compile() -> threading.Thread:
    """(A first start) a thread running the child that compiles the parallel builds of
    the first screen's kernels into numba's cache (once per process)."""
    global _compiler
    if _compiler is None:
        say("compiling the sampler (first start only)…")
        _compiler = threading.Thread(
            target=lambda: compile_in_subprocess(DENSE_KERNELS, nice=True),
            name="aggmrf-compile-parallel",
            daemon=True,
        )
        _compiler.start()
    return _compiler


def finish_parallel() -> None:
    """After a first start's :func:`warm_up_once`: wait for the child compiling the
    parallel builds, then load them (compiled here if the child failed); sessions move
    their chains to them at their next slice.  At once after a warm start."""
    global _child
    if _child is None or _PARALLEL.is_set():
        return
    (child, t0), _child = _child, None
    from ..kernels import warm_up

    child.join()
    warm_up()
    train_first_screen()
    _PARALLEL.set()
    say(f"compiled sampler ready after {time.perf_counter() - t0:.1f} s: training moves to it")


def warm_up_extras() -> None:
    """Compile (or load) what only some screens need: MRF-N's noise posterior, by one
    noise-aware iteration on the toy data (the explorer's own call path and types)."""
    if _EXTRAS.is_set():
        return
    t0 = time.perf_counter()
    from ..kernels.quick import compiled_marks, mark_compiled

    if "extras" not in compiled_marks() and not _IN_SUBPROCESS:
        compile_in_subprocess(EXTRA_KERNELS, nice=True)
    from .. import datasets, experiment, mrf, privacy

    prob = experiment.prepare(datasets.load_dataset("toy"))
    mech = privacy.make_mechanism("laplace", 1.0, 1e-7, prob.layout, "both", "analytic")
    noisy = privacy.release(prob.aggregated, mech, 0)
    trainer = mrf.PCDTrainer(noisy, mrf.TrainerSettings(n_gibbs=20, noise_aware=True))
    trainer.step(1)
    _EXTRAS.set()
    mark_compiled("dense extras")
    log(f"MRF-N kernels ready in {time.perf_counter() - t0:.2f} s")


def warm_up_in_background(
    prefetch: Callable[[], None] | None = None, first: Callable[[], None] | None = None
) -> None:
    """Start (once per process) a daemon thread: numba warm-up, then ``prefetch()``.

    Called when the served app is first built, so the kernels are ready (and the
    default data cached by ``prefetch``) before the first page asks for them.  On a
    first start ``first()`` (the first screen's data) runs before the compiler starts:
    numba compiles one function at a time, and the page's data need a kernel too.
    """
    global _warm_thread, _warm_started
    # not _WARM_LOCK: a session opened while the kernels compile would block the server
    with _START_LOCK:
        if _warm_thread is not None:
            return
        _warm_started = time.perf_counter()

        def run() -> None:
            try:
                if first_start():
                    start_parallel_compile()
                    if first is not None:
                        first()
                warm_up_once(quick_start=True)
                try:
                    if prefetch is not None:
                        prefetch()
                finally:
                    _PREFETCHED.set()
                finish_parallel()
                warm_up_extras()
            except Exception as exc:  # noqa: BLE001 - the sessions report their own errors
                say(f"warm-up failed: {type(exc).__name__}: {exc}")

        _warm_thread = threading.Thread(target=run, name="aggmrf-warm-up", daemon=True)
        _warm_thread.start()


def import_in_background(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (in order) in a daemon thread, each once per process.

    The served app's first page is sent without what only its plots need; these imports
    then run while the browser loads the page's scripts.  Code that needs a module
    imports it as usual: Python's import lock makes it wait for an import under way.
    """
    todo = tuple(m for m in modules if m not in sys.modules and m not in _IMPORTING)
    if not todo:
        return
    _IMPORTING.update(todo)

    def run() -> None:
        t0 = time.perf_counter()
        for name in todo:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - the code that needs it reports it
                log(f"background import of {name} failed: {exc}")
        log(f"{', '.join(todo)} imported in {time.perf_counter() - t0:.2f} s")

    threading.Thread(target=run, name="aggmrf-imports", daemon=True).start()


def wait_for_warm_up(timeout: float) -> None:
    """Wait (at most ``timeout`` s) for the warm-up thread under way to have the first
    screen's kernels and data ready (not the other kernels); return at once if none."""
    thread = _warm_thread
    if thread is not None and thread.is_alive():
        _PREFETCHED.wait(timeout=timeout)


M_ARENA_MAX = -8  # glibc's mallopt parameter: the most malloc arenas (one per thread by default)
_arenas_limited = False


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc's malloc use at most ``arenas`` arenas (once per process, before the
    worker threads start): by default each thread that allocates gets its own, and the
    freed memory of closed sessions stays scattered over them, out of ``malloc_trim``'s
    reach.  Nothing happens on another C library."""
    global _arenas_limited
    if _arenas_limited:
        return
    _arenas_limited = True
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, arenas)
    except (OSError, AttributeError):
        pass


def release_memory_soon() -> None:
    """Once the closed sessions' documents are gone, collect them and hand freed memory back.

    A session's objects form reference cycles (widgets ↔ callbacks), freed by the cycle
    collector; glibc then keeps the freed arenas unless asked (``malloc_trim``), so the
    server's resident memory would stay at its peak after the sessions close.  A class
    leaving closes many sessions within seconds: each close moves the release to
    ``RELEASE_DELAY`` after it, so one release follows the last.
    """
    global _release_handle
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    if _release_handle is not None:
        _release_handle.cancel()

    def release() -> None:
        global _release_handle
        _release_handle = None
        if not RUNNING:  # nobody trains: the worker processes' memory goes back too
            TRAINING.end_idle_workers()
        gc.unfreeze()  # the closed sessions' objects may be among the frozen ones
        gc.collect()
        gc.freeze()
        trim_memory()
        log(f"memory released after closed sessions ({len(SESSIONS)} open)")

    _release_handle = loop.call_later(RELEASE_DELAY, release)


def freeze_heap_soon(explorer=None) -> None:
    """``FREEZE_DELAY`` s after a page was built or loaded new data (``explorer``: its
    explorer; nothing unless it is a served session of :data:`SESSIONS`), move every object
    alive then out of the cycle collector's reach (``gc.freeze``); at most one freeze per
    ``FREEZE_DELAY`` s while a class arrives.

    With a class on one server the collector's full passes scanned every session's objects,
    the GIL held: every page and training thread stopped for up to seconds, several times
    a minute.  Frozen, the same passes scan only what was made since (docs/explorer.md,
    "A class on one server").  Frozen objects are still freed by their reference counts;
    only their reference cycles (a closed page's, or the views a data switch replaced) wait
    for the next release after a close (:func:`release_memory_soon` unfreezes and collects
    everything).
    """
    global _freeze_handle
    if explorer is not None and explorer not in SESSIONS:
        return  # a notebook's explorer: its kernel keeps Python's collector as it is
    if _freeze_handle is not None:
        return  # one is due within FREEZE_DELAY s
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    def freeze() -> None:
        global _freeze_handle
        _freeze_handle = None
        gc.collect(1)  # the young garbage first: only what lives on is frozen
        gc.freeze()
        log(f"heap frozen ({gc.get_freeze_count()} objects)")

    _freeze_handle = loop.call_later(FREEZE_DELAY, freeze)


def lower_priority(nice: int = 15) -> None:
    """Nice the calling worker thread to ``nice`` (Linux threads are tasks; never less
    nice than it is): the baselines (15) yield to training, training
    (:data:`TRAINING_NICE`) to the event loop."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(nice, os.getpriority(os.PRIO_PROCESS, tid)))
    except (AttributeError, OSError):
        pass
