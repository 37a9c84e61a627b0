"""The explorer's process runtime: kernel warm-up, worker threads, open sessions, memory.

What one server process shares between its sessions is held by one object,
:data:`RUNTIME` (a :class:`ServerRuntime`); this module's functions are its interface:

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
- training runs in ``RUNTIME.training``, a :class:`~.scheduler.TrainingPool` of one
  thread per core shared by every session, each thread stepping its slices in a worker
  process of its own (:mod:`aggmrf_explore.trainer_worker`) once the compiled sampler is
  loaded; the event loop only hands out slices and pushes their results to the pages;
- data preparation runs in ``RUNTIME.data`` (2 threads), the slow baselines in
  ``RUNTIME.slow`` (1 niced thread), so the event loop never blocks;
- :func:`max_sessions` caps the open sessions (a page past it says the class is full);
- ``RUNTIME.running`` and ``RUNTIME.sessions`` track the explorers training now and the
  open server sessions (weak sets: a closed session is never kept alive by them);
- :func:`release_memory_soon` hands the memory of closed sessions back to the system.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import importlib
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable

from ...trainer_worker import end_with_parent, ignore_interrupts, trim_memory
from .environment import env_int
from .scheduler import DaemonPool, TrainingPool
from .trace import LOG_ON, log, lower_priority, say

__all__ = [
    "ServerRuntime",
    "RUNTIME",
    "TrainingPool",
    "DaemonPool",
    "steps_for",
    "max_sessions",
    "DEFAULT_MAX_SESSIONS",
    "RELEASE_DELAY",
    "FREEZE_DELAY",
    "COMPILE_ESTIMATE",
    "log",
    "say",
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
    "freeze_heap_soon",
    "lower_priority",
    "import_in_background",
    "one_kernel_thread",
    "limit_malloc_arenas",
]

RELEASE_DELAY = 5.0  # seconds after a session closes: Bokeh has dropped its document by then
FREEZE_DELAY = 2.0  # seconds after a page is built or loads new data: its objects are in place
DEFAULT_MAX_SESSIONS = 40  # open sessions per server process (AGGMRF_MAX_SESSIONS changes it)
# how long a first start's compiler takes (docs/explorer.md, "A first start"): what a
# pressed Play waiting for it is told
COMPILE_ESTIMATE = "a minute on 2 cores"
M_ARENA_MAX = -8  # glibc's mallopt parameter: the most malloc arenas (one per thread by default)
# what a compiling subprocess runs: numba fills its on-disk cache there, with a GIL of its
# own, so the server's event loop (page building, clicks) never waits for the compiler
DENSE_KERNELS = (
    "import os; os.environ['AGGMRF_COMPILING'] = '1'\n"
    "from aggmrf_explore.kernels import warm_up; warm_up()\n"
    "from aggmrf_explore.explorer.server.runtime import train_first_screen; train_first_screen()"
)
EXTRA_KERNELS = (
    "import os; os.environ['AGGMRF_COMPILING'] = '1'\n"
    "from aggmrf_explore.explorer.server.runtime import warm_up_extras; warm_up_extras()"
)
IN_SUBPROCESS = bool(os.environ.get("AGGMRF_COMPILING"))


def one_kernel_thread() -> None:
    """The calling thread (the event loop, a worker) runs numba's parallel kernels on one
    thread: their OpenMP barriers stall whenever the machine is busy (see TrainingPool)."""
    from ...kernels import set_threads

    set_threads(1)


def max_sessions() -> int:
    """The most sessions one server process opens: ``AGGMRF_MAX_SESSIONS`` if set (an
    integer ≥ 1), else :data:`DEFAULT_MAX_SESSIONS`.  Past it a new page says the class is
    full instead of loading (each training session holds 15–20 MB and its share of the
    cores)."""
    return env_int("AGGMRF_MAX_SESSIONS", DEFAULT_MAX_SESSIONS)


class ServerRuntime:
    """What one server process shares between its sessions (module docstring): the warm-up
    of the kernels and its progress, the pools of threads, the open and training sessions,
    the timers that freeze and release memory.  One per process (:data:`RUNTIME`)."""

    def __init__(self) -> None:
        self.warm = threading.Event()  # the first screen's kernels are ready
        self.extras = threading.Event()  # MRF-N's kernels are ready
        self.parallel = threading.Event()  # the parallel builds of the dense kernels are in use
        self.prefetched = threading.Event()  # first screen's kernels and data ready
        self.warm_started: float | None = None  # perf_counter when the warm-up thread started
        self.first: bool | None = None  # numba's cache was empty at the first look
        self.warm_lock = threading.Lock()  # held while the kernels compile (or load)
        self.start_lock = threading.Lock()  # starts the warm-up thread (never held for long)
        self.warm_thread: threading.Thread | None = None
        self.child: tuple[threading.Thread, float] | None = None  # first start's compile
        self.compiler: threading.Thread | None = None
        self.release_handle: asyncio.TimerHandle | None = None  # release after the last close
        self.freeze_handle: asyncio.TimerHandle | None = None  # freeze after the last page
        self.importing: set[str] = set()  # modules import_in_background was asked for
        self.arenas_limited = False
        self.reported: set[str] = set()  # the refusals printed (serve.py): each once
        self.training = TrainingPool(processes_ready=self.parallel.is_set)
        self.data = DaemonPool(2, "aggmrf-data", initializer=one_kernel_thread)
        self.slow = DaemonPool(1, "aggmrf-baselines")
        self.running: weakref.WeakSet = weakref.WeakSet()  # explorers training now
        self.sessions: weakref.WeakSet = weakref.WeakSet()  # explorers of open server pages
        self.gc_started = 0.0
        if LOG_ON:
            gc.callbacks.append(self.log_long_collections)

    def log_long_collections(self, phase: str, info: dict) -> None:
        """``gc.callbacks`` entry: a collection that held the GIL longer than 20 ms, in the log."""
        if phase == "start":
            self.gc_started = time.perf_counter()
            return
        ms = 1000 * (time.perf_counter() - self.gc_started)
        if ms > 20:
            log(f"garbage collection of generation {info['generation']}: {ms:.0f} ms")


RUNTIME = ServerRuntime()


def steps_for(explorer):
    """How the pool steps ``explorer``'s trainer (``session.run.train_slice(steps=…)``): in a
    worker process if it is a served session (:meth:`TrainingPool.run_steps`), else None, in
    the pool's thread (a notebook's kernel keeps to one process)."""
    return RUNTIME.training.run_steps if explorer in RUNTIME.sessions else None


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
    if RUNTIME.first is None:
        from ...kernels.quick import cache_marker

        try:
            RUNTIME.first = not cache_marker().exists()
        except Exception:  # noqa: BLE001 - an unreadable cache: say "compiling"
            RUNTIME.first = True
    return RUNTIME.first


def warm_up_message() -> str:
    """What the page shows while the kernels are not ready (empty once they are)."""
    if RUNTIME.warm.is_set():
        return ""
    what = (
        "compiling the sampler (first start only)"
        if first_start()
        else "loading the compiled sampler"
    )
    if RUNTIME.warm_started is None:
        return f"{what}…"
    return f"{what}… {time.perf_counter() - RUNTIME.warm_started:.0f} s"


def kernels_ready() -> bool:
    """True once the kernels the first screen trains with are compiled (or loaded)."""
    return RUNTIME.warm.is_set()


def parallel_ready() -> bool:
    """True once the dense chain runs its parallel builds (always after a warm start)."""
    return RUNTIME.parallel.is_set()


def extras_ready() -> bool:
    """True once the other kernels (MRF-N's noise posterior) are compiled (or loaded)."""
    return RUNTIME.extras.is_set()


def train_first_screen(iterations: int = 2, build: str = "parallel") -> None:
    """A few iterations of the first screen (XOR, the explorer's default settings) through
    the explorer's own call path, the chain in ``build``: every kernel a Play needs, with
    its argument types, is compiled (or loaded) — the row kernel, the logits, the chain
    (none with "numpy"), the update."""
    from ..store.problems import get_baselines
    from ..store.store import CHEAP_BASELINES, ExplorerSession, baseline_names

    s = ExplorerSession(lazy=True, chain_build=lambda: build)
    bundle = s.fetch()
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    s.load(bundle)
    s.step(iterations)
    s.close()


def warm_up_once(quick_start: bool = False) -> None:
    """Compile (or load from numba's cache) the first screen's kernels once per process.

    On a first start with ``quick_start`` (the served app), training is ready as soon as
    the small kernels (rows, logits, the update: seconds) are compiled here: the chain runs
    its numpy build (:class:`~aggmrf_explore.kernels.NumpyGibbsChain`) while a niced child
    compiles the parallel builds into numba's cache; :func:`finish_parallel` then loads
    them, and each session's next slice moves its samples to them.  Without it (a
    notebook), a child compiles the parallel builds and this waits for it.
    """
    rt = RUNTIME
    if rt.warm.is_set():
        return
    with rt.warm_lock:
        if rt.warm.is_set():
            return
        from ...kernels import warm_up

        first = first_start()
        t0 = time.perf_counter()
        if first and not quick_start:
            say("compiling the sampler (first start only; about a minute on 2 cores)…")
            compile_in_subprocess(DENSE_KERNELS)
            first = False  # (now in numba's cache: loaded below)
        if first:
            child = start_parallel_compile()
            train_first_screen(build="numpy")  # the update, rows and logits, on Play's path
            rt.warm.set()
            rt.child = (child, t0)
            dt = time.perf_counter() - t0
            say(
                f"training is ready after {dt:.1f} s with the numpy sampler; the compiled "
                "one follows (first start only, in the background)"
            )
            log(f"numpy sampler ready in {dt:.2f} s")
            return
        warm_up()  # loads numba's cache, ~1 s
        train_first_screen()  # the rest of Play's kernels (update, logits) on the real path
        rt.warm.set()
        rt.parallel.set()
        dt = time.perf_counter() - t0
        how = "compiled" if first_start() else "loaded"
        say(f"sampler {how} in {dt:.1f} s: training is ready")
        log(f"numba kernels ready in {dt:.2f} s")


def chain_build() -> str | None:
    """The build of the Gibbs chain the sessions train with now: "parallel" once the
    compiled sampler is loaded, "numpy" on a first start until then, None before either
    is ready (see :func:`warm_up_once`)."""
    if RUNTIME.parallel.is_set():
        return "parallel"
    return "numpy" if RUNTIME.warm.is_set() else None


def start_parallel_compile() -> threading.Thread:
    """(A first start) a thread running the child that compiles the parallel builds of
    the first screen's kernels into numba's cache (once per process)."""
    rt = RUNTIME
    with rt.start_lock:
        if rt.compiler is None:
            say("compiling the sampler (first start only)…")
            rt.compiler = threading.Thread(
                target=lambda: compile_in_subprocess(DENSE_KERNELS, nice=True),
                name="aggmrf-compile-parallel",
                daemon=True,
            )
            rt.compiler.start()
        return rt.compiler


def finish_parallel() -> None:
    """After a first start's :func:`warm_up_once`: wait for the child compiling the
    parallel builds, then load them (compiled here if the child failed); sessions move
    their chains to them at their next slice.  At once after a warm start."""
    rt = RUNTIME
    if rt.child is None or rt.parallel.is_set():
        return
    (child, t0), rt.child = rt.child, None
    from ...kernels import warm_up

    child.join()
    warm_up()
    train_first_screen()
    rt.parallel.set()
    say(f"compiled sampler ready after {time.perf_counter() - t0:.1f} s: training moves to it")


def warm_up_extras() -> None:
    """Compile (or load) what only some screens need: MRF-N's noise posterior, by one
    noise-aware iteration on the toy data (the explorer's own call path and types)."""
    if RUNTIME.extras.is_set():
        return
    t0 = time.perf_counter()
    from ...kernels.quick import compiled_marks, mark_compiled

    if "extras" not in compiled_marks() and not IN_SUBPROCESS:
        compile_in_subprocess(EXTRA_KERNELS, nice=True)
    from ... import datasets, experiment, mrf, privacy

    prob = experiment.prepare(datasets.load_dataset("toy"))
    mech = privacy.make_mechanism("laplace", 1.0, layout=prob.layout)
    noisy = privacy.release(prob.aggregated, mech, 0)
    trainer = mrf.PCDTrainer(noisy, mrf.TrainerSettings(n_gibbs=20, noise_aware=True))
    trainer.step(1)
    RUNTIME.extras.set()
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
    rt = RUNTIME

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
                rt.prefetched.set()
            finish_parallel()
            warm_up_extras()
        except Exception as exc:  # noqa: BLE001 - the sessions report their own errors
            say(f"warm-up failed: {type(exc).__name__}: {exc}")

    # not warm_lock: a session opened while the kernels compile would block the server
    with rt.start_lock:
        if rt.warm_thread is not None:
            return
        rt.warm_started = time.perf_counter()
        rt.warm_thread = threading.Thread(target=run, name="aggmrf-warm-up", daemon=True)
    rt.warm_thread.start()


def import_in_background(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (in order) in a daemon thread, each once per process.

    The served app's first page is sent without what only its plots need; these imports
    then run while the browser loads the page's scripts.  Code that needs a module
    imports it as usual: Python's import lock makes it wait for an import under way.
    """
    todo = tuple(m for m in modules if m not in sys.modules and m not in RUNTIME.importing)
    if not todo:
        return
    RUNTIME.importing.update(todo)

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
    thread = RUNTIME.warm_thread
    if thread is not None and thread.is_alive():
        RUNTIME.prefetched.wait(timeout=timeout)


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc's malloc use at most ``arenas`` arenas (once per process, before the
    worker threads start): by default each thread that allocates gets its own, and the
    freed memory of closed sessions stays scattered over them, out of ``malloc_trim``'s
    reach.  Nothing happens on another C library."""
    if RUNTIME.arenas_limited:
        return
    RUNTIME.arenas_limited = True
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
    rt = RUNTIME
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    if rt.release_handle is not None:
        rt.release_handle.cancel()

    def release() -> None:
        rt.release_handle = None
        if not rt.running:  # nobody trains: the worker processes' memory goes back too
            rt.training.end_idle_workers()
        gc.unfreeze()  # the closed sessions' objects may be among the frozen ones
        gc.collect()
        gc.freeze()
        trim_memory()
        log(f"memory released after closed sessions ({len(rt.sessions)} open)")

    rt.release_handle = loop.call_later(RELEASE_DELAY, release)


def freeze_heap_soon(explorer=None) -> None:
    """``FREEZE_DELAY`` s after a page was built or loaded new data (``explorer``: its
    explorer; nothing unless it is a served session of ``RUNTIME.sessions``), move every
    object alive then out of the cycle collector's reach (``gc.freeze``); at most one
    freeze per ``FREEZE_DELAY`` s while a class arrives.

    With a class on one server the collector's full passes scanned every session's objects,
    the GIL held: every page and training thread stopped for up to seconds, several times
    a minute.  Frozen, the same passes scan only what was made since (docs/explorer.md,
    "A class on one server").  Frozen objects are still freed by their reference counts;
    only their reference cycles (a closed page's, or the views a data switch replaced) wait
    for the next release after a close (:func:`release_memory_soon` unfreezes and collects
    everything).
    """
    rt = RUNTIME
    if explorer is not None and explorer not in rt.sessions:
        return  # a notebook's explorer: its kernel keeps Python's collector as it is
    if rt.freeze_handle is not None:
        return  # one is due within FREEZE_DELAY s
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    def freeze() -> None:
        rt.freeze_handle = None
        gc.collect(1)  # the young garbage first: only what lives on is frozen
        gc.freeze()
        log(f"heap frozen ({gc.get_freeze_count()} objects)")

    rt.freeze_handle = loop.call_later(FREEZE_DELAY, freeze)
