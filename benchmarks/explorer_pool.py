"""The explorer's training pool in one process, without a server (Adult, n' = 10 000).

    python benchmarks/explorer_pool.py [--seconds 4]

1. One session trained in the calling thread, its kernels on 2 numba threads then on 1,
   alternating (three rounds each): iterations per second and the CPU cores the process
   used.  On a busy machine the 2-thread kernels wait at OpenMP barriers for a descheduled
   team thread.
2. 1, 2 and 4 sessions trained by ``runtime.TrainingPool`` (one thread per core, one numba
   thread per slice), every session queuing its next slice once its last one is back, as
   the served explorer does: the total iterations per second and the cores used.

Prints the load average beside every figure (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import time

from aggmrf_explore.explorer.server.runtime import TrainingPool
from aggmrf_explore.explorer.store.store import ExplorerSession
from aggmrf_explore.kernels import set_threads, warm_up


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0, help="length of each measurement")
    a = ap.parse_args()
    warm_up()
    sessions = [ExplorerSession(lazy=True, dataset="adult", n_gibbs=10_000) for _ in range(4)]
    for s in sessions:
        s.load()
        s.step(5)
    print(f"{os.cpu_count()} cores; {load()}", flush=True)

    s = sessions[0]
    for threads in (2, 1, 2, 1, 2, 1):
        set_threads(threads)
        t0, c0, i0 = time.perf_counter(), time.process_time(), s.iteration
        while time.perf_counter() - t0 < a.seconds:
            s.run.train_slice(0.1, 1000)
        dt = time.perf_counter() - t0
        print(
            f"one session, calling thread, {threads} numba thread(s): "
            f"{(s.iteration - i0) / dt:.0f} it/s, {(time.process_time() - c0) / dt:.2f} cores; "
            f"{load()}",
            flush=True,
        )

    pool = TrainingPool()
    for k in (1, 2, 4, 2, 1):
        running = sessions[:k]
        t0, c0 = time.perf_counter(), time.process_time()
        i0 = [x.iteration for x in running]
        futures = {pool.submit(x.run.train_slice, 0.1, 1000): x for x in running}
        while futures:
            for f in list(futures):
                if f.done():
                    x = futures.pop(f)
                    if time.perf_counter() - t0 < a.seconds:
                        futures[pool.submit(x.run.train_slice, 0.1, 1000)] = x
            time.sleep(0.002)
        dt = time.perf_counter() - t0
        total = sum(x.iteration - b for x, b in zip(running, i0, strict=True)) / dt
        print(
            f"pool of {pool.workers} threads, {k} session(s): {total:.0f} it/s in total, "
            f"{(time.process_time() - c0) / dt:.2f} cores; {load()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
