"""Training threads beside a busy Python thread: what the GIL costs the explorer's pool.

    python benchmarks/gil_share.py                        # switch intervals 5, 1, 0.5, 0.1 ms
    python benchmarks/gil_share.py --switch 0.005 0.0005 --seconds 10

Two threads each train their own Adult trainer (n' = 10 000, one numba thread each), as the
explorer's training pool does, beside one pure-Python thread that is busy a given share of
each 10 ms (a stand-in for the server's event loop answering a class's pages), for several
values of Python's GIL switch interval (``sys.setswitchinterval``).  Printed: the training
threads' iterations per second, the Python thread's work units per second (its own
reference: the same thread alone), and the process's CPU in cores.

A training thread gives the GIL up for every compiled kernel and numpy operation and must
take it back after each; while the Python thread runs, each retake waits up to the switch
interval.  The reference for the training rate is the same two threads with no Python
thread (the first line of each interval).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from aggmrf_explore.experiment import prepare
from aggmrf_explore.kernels import set_threads
from aggmrf_explore.mrf import PCDTrainer, default_settings


def trainer(agg) -> PCDTrainer:
    t = PCDTrainer(agg, default_settings(agg.layout, agg.n, n_gibbs=10_000))
    t.step(20)  # compiled and warm
    return t


def measure(agg, trainers: int, busy: float, seconds: float) -> tuple[float, float, float]:
    """(training it/s, Python work units/s, CPU cores) over ``seconds``."""
    trs = [trainer(agg) for _ in range(trainers)]
    counts = [0] * trainers
    work = [0]
    stop = time.perf_counter() + seconds

    def train(i: int) -> None:
        set_threads(1)
        while time.perf_counter() < stop:
            trs[i].step(5)
            counts[i] += 5

    def python_thread() -> None:
        while time.perf_counter() < stop:
            t = time.perf_counter()
            while time.perf_counter() - t < busy * 0.01:
                sum(range(200))
                work[0] += 1
            time.sleep((1.0 - busy) * 0.01)

    threads = [threading.Thread(target=train, args=(i,)) for i in range(trainers)]
    if busy > 0:
        threads.append(threading.Thread(target=python_thread))
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return sum(counts) / wall, work[0] / wall, (time.process_time() - c0) / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switch", type=float, nargs="+", default=[0.005, 0.001, 0.0005, 0.0001])
    ap.add_argument("--busy", type=float, nargs="+", default=[0.3, 0.5, 1.0])
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    set_threads(1)
    agg = prepare("adult").aggregated
    print("| switch interval | Python thread busy | training it/s | Python work (k/s) | cores |")
    print("|---|---|---|---|---|")
    for sw in a.switch:
        sys.setswitchinterval(sw)
        for busy in [0.0, *a.busy]:
            rate, work, cores = measure(agg, 2, busy, a.seconds)
            alone = measure(agg, 0, busy, a.seconds)[1] if busy else 0.0
            print(
                f"| {sw * 1000:g} ms | {busy:.0%} | {rate:.0f} | "
                f"{work / 1000:.0f} (alone {alone / 1000:.0f}) | {cores:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
