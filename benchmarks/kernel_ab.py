"""Interleaved A/B of two Gibbs kernels on the Adult problem, in one process.

    python benchmarks/kernel_ab.py aggmrf_explore.kernels.chain my_copy_module [--repeats 30]
    PYTHONPATH=/path/to/old python benchmarks/kernel_ab.py gibbs_old aggmrf_explore.kernels.chain

Each module must export ``GibbsChain`` (the package's lives in ``aggmrf_explore.kernels.chain``,
also exported by ``aggmrf_explore.kernels``; a self-contained copy of an older ``gibbs.py``
works too), whose state is the transposed codes ``_x`` (D + 1, n').  Both chains start from the same state (the
trainer's after 30 iterations); sweeps + ``statistics(θ)`` alternate kernel by kernel and
1 / 2 threads repeat by repeat, so that both kernels see the same machine load.  Prints,
per kernel, the best and the median rate (site updates per second) on 1 and on all
threads, and their ratio.  Differences of a few per cent need two or three runs with
the order of the modules swapped: on a shared machine they are within the noise.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from gibbs import adult_problem  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs=2, help="two modules exporting GibbsChain")
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    layout, base, mu, theta = adult_problem()
    threads = (1, numba.config.NUMBA_NUM_THREADS)
    chains = []
    for name in args.modules:
        chain = importlib.import_module(name).GibbsChain(
            layout, base.n_samples, [np.ones(m) for m in layout.n_modalities], 0
        )
        chain._x[:-1] = base.codes.T
        chains.append(chain)
        for t in threads:  # compile / warm on both thread counts
            numba.set_num_threads(t)
            chain.sweep(mu, theta)
            chain.statistics(theta)
    times = {(name, t): [] for name in args.modules for t in threads}
    gc.disable()
    for _ in range(args.repeats):
        for t in threads:
            numba.set_num_threads(t)
            chains[0].sweep(mu, theta)  # untimed: let OpenMP's workers settle (gibbs.py)
            for name, chain in zip(args.modules, chains, strict=True):
                t0 = time.perf_counter()
                chain.sweep(mu, theta)
                chain.statistics(theta)
                times[(name, t)].append(time.perf_counter() - t0)
    gc.enable()
    sites = base.n_samples * layout.n_features
    for name in args.modules:
        one, many = np.array(times[(name, threads[0])]), np.array(times[(name, threads[1])])
        print(
            f"{name:40s} best: 1 thread {sites / one.min() / 1e6:6.2f} M/s, {threads[1]} "
            f"threads {sites / many.min() / 1e6:6.2f} M/s ({one.min() / many.min():.3f}x) | "
            f"median: {sites / np.median(one) / 1e6:6.2f}, {sites / np.median(many) / 1e6:6.2f} "
            f"({np.median(one) / np.median(many):.3f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
