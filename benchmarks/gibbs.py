"""Gibbs sweep throughput: the project's numba kernel (1 thread, all threads) vs plain numpy.

    python benchmarks/gibbs.py --json            # both problems, one JSON object on stdout
    python benchmarks/gibbs.py --scaling --json  # + the cost-scaling table

Problems
- ``adult``: the real Adult layout (14 features, Adult's modality counts, 14 singles +
  91 pairs + intercept, K = 9 235), 10 000 samples, parameters after 30 PCD iterations.
- ``large``: 19 synthetic features, four with 1 000 / 500 / 200 / 100 modalities, all
  pairs and singles (K ≈ 1.2 M), 200 000 samples, random parameters.

A *site update* is one resampling of one feature of one sample: a sweep makes n' × D of
them.  The numba rate is measured on ``GibbsChain.sweep`` (whatever kernel
``aggmrf_explore.kernels`` exports) as the trainer calls it, followed by
``statistics(θ)``; ``*_sweep_only`` leaves the statistics out.  Rates are n' D / (best
time over repeats): wall time, and ``*_cpu`` CPU time — the thread's on 1 thread, the
process's (all threads) on several — which is robust to other processes on the machine;
``load_average`` says how busy the machine was (1-minute, at start and end).  The 1-thread
and all-thread runs alternate every 5 back-to-back sweeps (the trainer's steady state),
so that their ratio compares like with like; it still needs the cores to itself (a load average near 0).  The numpy reference
is the way a straightforward implementation vectorises a sweep: over samples, one
feature at a time (random feature order per sweep), fancy-indexed gathers per table, a
stable softmax and inverse-CDF sampling, then ỹ and the same statistics d̂, ĉ (two
bincounts), so that both sides do the work of one trainer iteration's sampling.  Timings
run with Python's garbage collector off (as ``timeit`` does).  On ``large`` the numpy
reference runs on 5 000 samples (its rate per site update does not depend on n', and
200 000 samples would take hours).  Each problem runs in its
own subprocess so that ``peak_rss_mb`` (ru_maxrss) is the peak memory of that problem.
``machine_ceiling_all_vs_1_thread`` is what a perfectly parallel chain of multiply-adds
gains from all threads in the same run (timed between the sweeps): the machine's own
limit, below the thread count when the cores are shared or a lone core runs faster.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

LARGE_MODALITIES = [1000, 500, 200, 100] + [2, 3, 4, 5, 6, 8, 10, 12, 16, 2, 3, 4, 6, 8, 12]


# ---------------------------------------------------------------------- numpy reference
def numpy_sweep(rows, codes, y, mu, theta, layout, rng):
    """One Gibbs sweep vectorised over samples, then the statistics, like one call of
    ``GibbsChain.sweep`` + ``statistics``: features in a random order, then
    ỹ ~ σ(φ(x̃)·θ) and d̂ = Σ φ(x̃), ĉ = Σ σ(φ(x̃)·θ) φ(x̃).  rows, codes, y in place."""
    n = rows.shape[0]
    strides = layout.strides
    for f in rng.permutation(layout.n_features):
        M = int(layout.n_modalities[f])
        tabs = np.flatnonzero(strides[:, f])
        v = np.arange(M)
        scores = np.zeros((n, M))
        for t in tabs:
            st = strides[t, f]
            idx = (rows[:, t] - codes[:, f] * st)[:, None] + v[None, :] * st
            scores += mu[idx] + y[:, None] * theta[idx]
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        cdf = np.cumsum(p, axis=1)
        u = rng.random(n)[:, None] * cdf[:, -1:]
        new = np.minimum((u >= cdf).sum(axis=1), M - 1)
        delta = new - codes[:, f]
        rows[:, tabs] += delta[:, None] * strides[tabs, f][None, :]
        codes[:, f] = new
    sigma = 1.0 / (1.0 + np.exp(-theta[rows].sum(axis=1)))
    y[:] = rng.random(n) < sigma
    flat = rows.ravel()
    d_hat = np.bincount(flat, minlength=layout.K)
    c_hat = np.bincount(flat, weights=np.repeat(sigma, rows.shape[1]), minlength=layout.K)
    return d_hat, c_hat


def numpy_rate(layout, codes, mu, theta, sweeps, max_seconds=20.0):
    """(wall rate, CPU rate) of the numpy sweep + statistics: best over ``sweeps`` sweeps."""
    codes = codes.astype(np.int64).copy()
    rows = layout.rows(codes)
    rng = np.random.default_rng(0)
    y = (rng.random(len(codes)) < 0.5).astype(np.float64)
    best = best_cpu = np.inf
    spent = 0.0
    for _ in range(sweeps):
        with _gc_off():
            t0, c0 = time.perf_counter(), _process_cpu()
            numpy_sweep(rows, codes, y, mu, theta, layout, rng)
            dt = time.perf_counter() - t0
            best_cpu = min(best_cpu, _process_cpu() - c0)
        best = min(best, dt)
        spent += dt
        if spent > max_seconds:
            break
    sites = codes.shape[0] * layout.n_features
    return sites / best, sites / best_cpu


@contextlib.contextmanager
def _gc_off():
    """Python's garbage collector off while timing (as ``timeit`` does)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _process_cpu() -> float:
    """CPU time of the whole process (all threads), seconds."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# ---------------------------------------------------------------------- numba
_ceiling_loop = None
STRETCH = 5  # back-to-back timed sweeps per thread count before switching


def _arithmetic_seconds(threads: int, n: int = 2_000_000) -> float:
    """Wall time of ``threads`` workers each running the same chain of n dependent
    multiply-adds (no memory traffic): the machine's own multi-thread ceiling."""
    global _ceiling_loop
    import numba

    if _ceiling_loop is None:

        @numba.njit(parallel=True)
        def loop(n, workers):
            out = np.zeros(workers)
            for w in numba.prange(workers):
                x = 1.0 + w
                for _ in range(n):
                    x = x * 0.999999 + 1e-6
                out[w] = x
            return out

        _ceiling_loop = loop
    t0 = time.perf_counter()
    _ceiling_loop(n, threads)
    return time.perf_counter() - t0


def numba_rates(chain, mu, theta, repeats):
    """Rates of GibbsChain.sweep (+ statistics) on 1 thread and on all threads.

    ``*_cpu``: sites / CPU time — of the calling thread with 1 thread, of the whole
    process (all threads, busy-waiting included) with several.
    """
    import numba

    sites = chain.n_samples * chain.codes.shape[1]
    runs = (("1_thread", 1), ("all_threads", numba.config.NUMBA_NUM_THREADS))
    best: dict[str, list[float]] = {}
    for _label, threads in runs:  # warm (compile, caches) on both thread counts
        numba.set_num_threads(threads)
        chain.sweep(mu, theta)
        _arithmetic_seconds(threads)
    # the thread counts alternate, a stretch of STRETCH back-to-back sweeps at a time (as
    # the trainer runs them), so that both see the same machine load
    for _ in range(max(1, repeats // STRETCH)):
        for label, threads in runs:
            numba.set_num_threads(threads)
            # one untimed sweep after the switch: OpenMP's idle workers spin for a while
            # after a parallel region (they would share a core with the 1-thread run) and
            # sleeping workers take a while to wake up (the first 2-thread sweep)
            chain.sweep(mu, theta)
            clock = time.thread_time if threads == 1 else _process_cpu
            with _gc_off():
                dt = _arithmetic_seconds(threads)
            b = best.setdefault(f"arithmetic_{label}", [np.inf, np.inf])
            b[0] = b[1] = min(b[0], dt)
            for stats in (True, False):
                for _ in range(STRETCH):
                    with _gc_off():
                        t0, c0 = time.perf_counter(), clock()
                        chain.sweep(mu, theta, statistics=stats)
                        if stats:
                            chain.statistics(theta)
                        wall, cpu = time.perf_counter() - t0, clock() - c0
                    key = f"numba_{label}" + ("" if stats else "_sweep_only")
                    b = best.setdefault(key, [np.inf, np.inf])
                    b[0], b[1] = min(b[0], wall), min(b[1], cpu)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    arithmetic = [best.pop(f"arithmetic_{label}")[0] for label, _ in runs]
    out = {}
    for key, (wall, cpu) in best.items():
        out[key] = sites / wall
        out[key + "_cpu"] = sites / cpu
    out["threads"] = numba.config.NUMBA_NUM_THREADS
    # what a perfectly parallel, compute-bound loop gains from all threads in this run: below
    # the thread count when one core is boosted higher alone or the cores are shared
    out["machine_ceiling_all_vs_1_thread"] = out["threads"] * arithmetic[0] / arithmetic[1]
    out["speedup_all_vs_1_thread_sweep_only"] = (
        out["numba_all_threads_sweep_only"] / out["numba_1_thread_sweep_only"]
    )
    return out


# ---------------------------------------------------------------------- problems
def _chain_class(kernel: str | None):
    """GibbsChain of module ``kernel`` (e.g. a candidate kernel), default the package's."""
    import importlib

    return importlib.import_module(kernel or "aggmrf_explore.kernels").GibbsChain


def adult_problem(kernel: str | None = None):
    from aggmrf_explore.experiment import prepare
    from aggmrf_explore.mrf import PCDTrainer, default_settings

    pb = prepare("adult")
    tr = PCDTrainer(pb.aggregated, default_settings(pb.layout, pb.aggregated.n))
    tr.step(30)
    chain = tr.chain
    if kernel:  # the same state in another kernel's chain
        lay = pb.layout
        chain = _chain_class(kernel)(
            lay, tr.chain.n_samples, [np.ones(m) for m in lay.n_modalities], 0
        )
        chain._x[:-1] = tr.chain.codes.T
    return pb.layout, chain, tr.mu, tr.theta


def large_problem(n=200_000, seed=0, kernel: str | None = None):
    from aggmrf_explore.tables import TableLayout

    lay = TableLayout.all_pairs(LARGE_MODALITIES)
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 0.5, lay.K)
    theta = rng.normal(0.0, 0.1, lay.K)
    chain = _chain_class(kernel)(lay, n, [np.ones(m) for m in lay.n_modalities], seed)
    return lay, chain, mu, theta


def run_problem(name: str, repeats: int, kernel: str | None = None) -> dict:
    load0 = os.getloadavg()[0]
    lay, chain, mu, theta = (
        adult_problem(kernel) if name == "adult" else large_problem(kernel=kernel)
    )
    res = numba_rates(chain, mu, theta, repeats if name == "adult" else max(2, repeats // 4))
    n_ref = chain.n_samples if name == "adult" else 5_000
    res["numpy_reference"], res["numpy_reference_cpu"] = numpy_rate(
        lay, chain.codes[:n_ref], mu, theta, 3
    )
    res["numpy_reference_samples"] = n_ref
    res["speedup_1_thread_vs_numpy"] = res["numba_1_thread"] / res["numpy_reference"]
    res["speedup_1_thread_vs_numpy_cpu"] = res["numba_1_thread_cpu"] / res["numpy_reference_cpu"]
    res["speedup_all_vs_1_thread"] = res["numba_all_threads"] / res["numba_1_thread"]
    res.update(
        n_samples=chain.n_samples,
        n_features=lay.n_features,
        K=lay.K,
        chain_memory_mb=chain.memory_bytes / 2**20,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        load_average=[load0, os.getloadavg()[0]],
        kernel=type(chain).__module__ + "." + type(chain).__qualname__,
    )
    return res


# ---------------------------------------------------------------------- scaling
def scaling_table(repeats: int = 5) -> list[dict]:
    """Sweep time vs n' (Adult) and vs Σ_f Mp_f × tables(f) (synthetic, n' = 10 000), 1 thread."""
    import numba

    from aggmrf_explore.kernels import GibbsChain
    from aggmrf_explore.tables import TableLayout

    numba.set_num_threads(1)
    rows = []

    def measure(lay, n, mu, theta, label):
        chain = GibbsChain(lay, n, [np.ones(m) for m in lay.n_modalities], 0)
        chain.sweep(mu, theta)
        cpu = np.inf
        for _ in range(repeats):
            c0 = time.thread_time()
            chain.sweep(mu, theta)
            chain.statistics(theta)
            cpu = min(cpu, time.thread_time() - c0)
        work = sum(
            int(chain.structure.n_mod_pad[f]) * int(np.count_nonzero(lay.strides[:, f]))
            for f in range(lay.n_features)
        )
        rows.append(
            {
                "case": label,
                "n_samples": n,
                "K": lay.K,
                "sum_Mf_x_tables": work,
                "ms_per_iteration_1_thread_cpu": cpu * 1e3,
                "ns_per_sample_unit": cpu * 1e9 / (n * work),
            }
        )

    lay = TableLayout.all_pairs([10, 10, 10, 17, 6, 8, 16, 7, 6, 3, 2, 2, 6, 42])
    rng = np.random.default_rng(0)
    mu, theta = rng.normal(0, 0.3, lay.K), rng.normal(0, 0.05, lay.K)
    for n in (5_000, 10_000, 20_000, 40_000):
        measure(lay, n, mu, theta, "adult-shaped, vary n'")
    for m in (4, 8, 16, 32, 64, 128):
        lay = TableLayout.all_pairs([m] * 14)
        mu, theta = rng.normal(0, 0.3, lay.K), rng.normal(0, 0.05, lay.K)
        measure(lay, 10_000, mu, theta, f"14 features x {m} modalities")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--problems", default="adult,large")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--scaling", action="store_true", help="add the cost-scaling table")
    ap.add_argument(
        "--kernel",
        default="",
        help="module whose GibbsChain to measure (default: aggmrf_explore.kernels), "
        "e.g. a candidate kernel to compare at the same machine load",
    )
    ap.add_argument("--_one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._one:
        print(json.dumps(run_problem(args._one, args.repeats, args.kernel or None)))
        return 0
    out: dict = {"problems": {}, "unit": "Gibbs site updates per second"}
    for name in args.problems.split(","):
        proc = subprocess.run(
            [sys.executable, __file__, "--_one", name, "--repeats", str(args.repeats)]
            + (["--kernel", args.kernel] if args.kernel else []),
            capture_output=True,
            text=True,
            check=True,
        )
        out["problems"][name] = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.scaling:
        out["scaling"] = scaling_table()
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for name, r in out["problems"].items():
            print(
                f"{name:6s} 1 thread {r['numba_1_thread'] / 1e6:6.2f} M/s wall, "
                f"{r['numba_1_thread_cpu'] / 1e6:6.2f} M/s cpu (sweep only "
                f"{r['numba_1_thread_sweep_only_cpu'] / 1e6:6.2f}); {r['threads']} threads "
                f"{r['numba_all_threads'] / 1e6:6.2f} M/s wall; numpy "
                f"{r['numpy_reference_cpu'] / 1e6:6.3f} M/s cpu; load {r['load_average']}; "
                f"peak {r['peak_rss_mb']:.0f} MB"
            )
        for row in out.get("scaling", []):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
