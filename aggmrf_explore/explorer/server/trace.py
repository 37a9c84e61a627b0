"""What the server tells its operator (:func:`say`) and its timing trace (:func:`log`), and
the niceness of its worker threads (:func:`lower_priority`).  Free of Panel.

The trace is on when ``AGGMRF_EXPLORER_LOG`` is set (read once, at import): the benchmarks
read it from the server's stderr.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ...errors import AggMRFError
from .environment import env_flag

__all__ = ["log", "say", "lower_priority", "LOG_ON"]


def _log_wanted() -> bool:
    try:
        return env_flag("AGGMRF_EXPLORER_LOG", False)
    except AggMRFError:  # (a bad value: the server refuses it, serve.explorer_document)
        return True


LOG_ON = _log_wanted()  # the timing trace is on (read once, at import)


def log(msg: str) -> None:
    """Timing trace on stderr when AGGMRF_EXPLORER_LOG is set (benchmarks read it)."""
    if LOG_ON:
        print(f"[aggmrf explorer {time.time():.3f}] {msg}", file=sys.stderr, flush=True)


def say(msg: str) -> None:
    """A line for the person who ran ``panel serve`` (always printed, on stderr)."""
    print(f"aggmrf explorer: {msg}", file=sys.stderr, flush=True)
    log(msg)


def lower_priority(nice: int = 15) -> None:
    """Nice the calling worker thread to ``nice`` (Linux threads are tasks; never less
    nice than it is): the baselines (15) yield to training, training to the event loop."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(nice, os.getpriority(os.PRIO_PROCESS, tid)))
    except (AttributeError, OSError):
        pass
