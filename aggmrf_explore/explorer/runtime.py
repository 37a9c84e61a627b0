"""The explorer's process runtime: kernel warm-up, worker threads, open sessions, memory.

One per server process (module-level, shared by every session):

- the numba kernels are compiled (or loaded from numba's cache) once, in a background
  thread started when the served app is first built (:func:`warm_up_in_background`);
- data preparation runs in :data:`DATA_EXECUTOR` (2 threads), the slow baselines in
  :data:`SLOW_EXECUTOR` (1 niced thread), so the event loop never blocks;
- :data:`RUNNING` and :data:`SESSIONS` track the explorers training now and the open
  server sessions (weak sets: a closed session is never kept alive by them);
- :func:`release_memory_soon` hands the memory of closed sessions back to the system.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "DATA_EXECUTOR",
    "SLOW_EXECUTOR",
    "RUNNING",
    "SESSIONS",
    "RELEASE_DELAY",
    "log",
    "warm_up_once",
    "warm_up_in_background",
    "kernels_ready",
    "wait_for_warm_up",
    "release_memory_soon",
    "lower_priority",
]

DATA_EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="aggmrf-data")
SLOW_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aggmrf-baselines")
RUNNING: weakref.WeakSet = weakref.WeakSet()  # explorers training now (share the loop)
SESSIONS: weakref.WeakSet = weakref.WeakSet()  # explorers of open server sessions
RELEASE_DELAY = 5.0  # seconds after a session closes: Bokeh has dropped its document by then

_WARM = threading.Event()
_WARM_LOCK = threading.Lock()
_warm_thread: threading.Thread | None = None
_release_pending = False


def log(msg: str) -> None:
    """Timing trace on stderr when AGGMRF_EXPLORER_LOG is set (benchmarks read it)."""
    if os.environ.get("AGGMRF_EXPLORER_LOG"):
        print(f"[aggmrf explorer {time.time():.3f}] {msg}", file=sys.stderr, flush=True)


def kernels_ready() -> bool:
    """True once the numba kernels are compiled (or loaded) in this process."""
    return _WARM.is_set()


def warm_up_once() -> None:
    """Compile (or load from numba's cache) every kernel once per process."""
    if _WARM.is_set():
        return
    with _WARM_LOCK:
        if not _WARM.is_set():
            from ..kernels import warm_up

            t0 = time.perf_counter()
            warm_up()
            _WARM.set()
            log(f"numba kernels ready in {time.perf_counter() - t0:.2f} s")


def warm_up_in_background(prefetch: Callable[[], None] | None = None) -> None:
    """Start (once per process) a daemon thread: numba warm-up, then ``prefetch()``.

    Called when the served app is first built, so the kernels are ready (and the
    default data cached by ``prefetch``) before the first page asks for them.
    """
    global _warm_thread
    with _WARM_LOCK:
        if _warm_thread is not None:
            return

        def run() -> None:
            try:
                warm_up_once()
                if prefetch is not None:
                    prefetch()
            except Exception:  # noqa: BLE001 - the sessions report their own errors
                pass

        _warm_thread = threading.Thread(target=run, name="aggmrf-warm-up", daemon=True)
        _warm_thread.start()


def wait_for_warm_up(timeout: float) -> None:
    """Wait (at most ``timeout`` s) for a warm-up thread under way; return at once if none."""
    thread = _warm_thread
    if thread is not None and thread.is_alive():
        thread.join(timeout=timeout)


def release_memory_soon() -> None:
    """Once the closed sessions' documents are gone, collect them and hand freed memory back.

    A session's objects form reference cycles (widgets ↔ callbacks), freed by the cycle
    collector; glibc then keeps the freed arenas unless asked (``malloc_trim``), so the
    server's resident memory would stay at its peak after the sessions close.
    """
    global _release_pending
    if _release_pending:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _release_pending = True

    def release() -> None:
        global _release_pending
        _release_pending = False
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass  # not glibc
        log(f"memory released after closed sessions ({len(SESSIONS)} open)")

    loop.call_later(RELEASE_DELAY, release)


def lower_priority() -> None:
    """Nice the calling worker thread (Linux threads are tasks): baselines yield to ticks."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)
    except (AttributeError, OSError):
        pass
