"""Fairness of the explorer's training scheduler under overload, without Panel or browsers.

    python benchmarks/explorer_fairness.py [--sessions 2 10 30] [--seconds 15] [--busy-core]

For each N: N explorer stores on Adult (n' = 10 000) trained at once by the server's own
scheduler (``scheduler.TrainingPool`` with its worker processes, one ``scheduler.RunLoop``
per session on one asyncio loop, as the served page runs them, minus the page's drawing),
first with the pool's fair share (this code), then with the former order (first in, first
out, no lead cap) in the same run; ``--busy-core``: a busy loop pinned to core 0 at the
default niceness all along (another job on the server).  Prints each session's iterations
per second and slowest / median for both.  The target: slowest ≥ 0.5 × median.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from aggmrf_explore.explorer.server import scheduler
from aggmrf_explore.explorer.server.scheduler import RunLoop, TrainingPool
from aggmrf_explore.explorer.store.problems import get_problem
from aggmrf_explore.explorer.store.store import ExplorerSession
from aggmrf_explore.kernels import warm_up


def busy_loop(core: int = 0) -> subprocess.Popen:
    code = f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


class FirstInFirstOut(TrainingPool):
    """The order before fair share: Steps first, then first in, first out, never held."""

    def order(self, priority: int = 1, share=None) -> tuple:
        super().order(priority, share)  # (the share's bookkeeping)
        return (priority, 0.0)

    def pick(self):
        return min(self._waiting) if self._waiting else None


def measure(n: int, seconds: float, pool: TrainingPool, warm: float = 5.0) -> list[float]:
    """Iterations per second of each of ``n`` Adult sessions trained at once by ``pool``."""
    sessions = [ExplorerSession(lazy=True, dataset="adult") for _ in range(n)]
    bundle = get_problem(**sessions[0].data_key())
    for s in sessions:
        s.load(bundle)

    async def run() -> list[float]:
        tasks = []
        loops = [
            RunLoop(
                s,
                pool,
                execute=lambda fn: tasks.append(asyncio.ensure_future(fn())),
                ready=lambda: True,
                after_slice=lambda first: None,
                stopped=lambda: None,
                report=lambda text: print("   ", text),
                steps=pool.run_steps,
            )
            for s in sessions
        ]
        for s, loop in zip(sessions, loops, strict=True):
            s.play()
            loop.start()
        await asyncio.sleep(warm)  # (worker processes started, every session past its first slices)
        i0, t0 = [s.iteration for s in sessions], time.perf_counter()
        await asyncio.sleep(seconds)
        i1, t1 = [s.iteration for s in sessions], time.perf_counter()
        for s in sessions:
            s.pause()
        for loop in loops:
            loop.cancel_queued()
        await asyncio.gather(*tasks)
        return [(b - a) / (t1 - t0) for a, b in zip(i0, i1, strict=True)]

    rates = asyncio.run(run())
    for s in sessions:
        s.close()
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sessions", type=int, nargs="+", default=[2, 10, 30])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--busy-core", action="store_true")
    ap.add_argument(
        "--worker-nice",
        type=int,
        default=scheduler.WORKER_NICE,
        help="the worker processes' niceness (the server's by default; lower it to get any "
        "training at all on a machine other jobs keep busy)",
    )
    ap.add_argument("--warm-up", type=float, default=5.0, help="seconds before the window")
    a = ap.parse_args()
    scheduler.WORKER_NICE = a.worker_nice
    warm_up()
    busy = busy_loop(0) if a.busy_core else None
    try:
        for n in a.sessions:
            for name, cls in (
                ("fair share", TrainingPool),
                ("first in, first out", FirstInFirstOut),
            ):
                load0 = os.getloadavg()[0]
                pool = cls(processes_ready=lambda: True)
                pool.use_processes()
                rates = measure(n, a.seconds, pool, a.warm_up)
                pool.end_idle_workers()
                med = statistics.median(rates)
                print(
                    f"N = {n:2d}, {name:19s}: it/s min {min(rates):.1f} / median {med:.1f} / "
                    f"max {max(rates):.1f}, total {sum(rates):.0f}; slowest / median "
                    f"{min(rates) / max(med, 1e-9):.2f} (load {load0:.1f} → "
                    f"{os.getloadavg()[0]:.1f}{', busy loop on core 0' if busy else ''}, workers at nice {a.worker_nice})",
                    flush=True,
                )
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


if __name__ == "__main__":
    main()
