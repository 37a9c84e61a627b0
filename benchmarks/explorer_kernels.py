"""Which numba kernels does the explorer's first screen (XOR, Play) need, and what does each
cost to compile on an empty cache?

    python benchmarks/explorer_kernels.py                 # parallel builds (a warm start loads them)
    python benchmarks/explorer_kernels.py --build numpy   # a first start: the numpy chain
    python benchmarks/explorer_kernels.py --build serial  # the dense kernels' serial builds

Runs the explorer's own path in a fresh process with ``NUMBA_CACHE_DIR`` pointing at an
empty temporary directory: the first screen's data (``data``), its trainer (``load``),
two iterations with the held-out NLLH (``play``).  Prints one line per compiled kernel:
phase, kernel, wall and CPU seconds of its compilation, its signature; then the totals
and the load average.  CPU seconds are the comparable number on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--build",
        choices=("parallel", "serial", "numpy"),
        default="parallel",
        help="the chain's build (kernels.make_chain)",
    )
    args = ap.parse_args()
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="aggmrf-kernels-")
    from numba.core import dispatcher

    records: list[tuple] = []
    phase = ["import"]
    depth = [0]
    original = dispatcher.Dispatcher.compile

    def compile_timed(self, sig):
        n0 = len(self.overloads)
        depth[0] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return original(self, sig)
        finally:
            depth[0] -= 1
            name = f"{self.py_func.__module__.rsplit('.', 1)[-1]}.{self.py_func.__name__}"
            if len(self.overloads) > n0 and name.split(".")[0] in KERNEL_MODULES:
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                records.append((phase[0], depth[0], name, wall, cpu, str(sig)[:70]))

    dispatcher.Dispatcher.compile = compile_timed
    load0 = os.getloadavg()[0]
    from aggmrf_explore.explorer.store.problems import get_baselines
    from aggmrf_explore.explorer.store.store import CHEAP_BASELINES, ExplorerSession, baseline_names

    phase[0] = "data"
    s = ExplorerSession(lazy=True, chain_build=lambda: args.build)
    bundle = s.fetch()
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    phase[0] = "load"
    s.load(bundle)
    phase[0] = "play"
    s.step(2)
    print(f"{'phase':6} {'kernel':34} {'wall s':>7} {'CPU s':>7}  signature")
    for ph, d, name, wall, cpu, sig in records:
        print(f"{ph:6} {'  ' * d + name:34} {wall:7.2f} {cpu:7.2f}  {sig}")
    top = [r for r in records if r[1] == 0]
    build = f"the chain's {args.build} build"
    print(
        f"{len(top)} kernels ({build}): {sum(r[3] for r in top):.1f} s wall, "
        f"{sum(r[4] for r in top):.1f} s CPU; load average {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


KERNEL_MODULES = {"gibbs", "rows", "rng", "update", "noise", "hashed", "mh", "simd"}

if __name__ == "__main__":
    main()
