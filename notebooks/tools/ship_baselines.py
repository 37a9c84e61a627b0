"""Regenerate ``aggmrf_explore/data/baselines.npz``: the slow baselines (logistic skyline,
one-hot logistic) of the bundled Adult and Bank datasets at the defaults of the explorer
and of ``aggmrf-explore run``, so that neither fits them again (a minute each on Adult),
and of the explorer's generated datasets at its defaults (seconds each, on a first start's
critical path).

    python notebooks/tools/ship_baselines.py

Run it after a change to ``aggmrf_explore/baselines.py``, to the bundled data or to their
encoding: ``tests/test_shipped_baselines.py`` fails until then (a stale file is never
used: results are looked up by a digest of the code, the data and the seed).
"""

from __future__ import annotations

import time

from aggmrf_explore.baselines import SHIPPED, ship_baselines
from aggmrf_explore.cli.parser import build_parser
from aggmrf_explore.explorer.store.problems import get_problem
from aggmrf_explore.explorer.store.store import ExplorerSession


def default_problems() -> list:
    """The bundled datasets' problems at the explorer's and the command line's defaults,
    and the explorer's generated datasets at its defaults (a first start draws the first
    screen with its skyline at once)."""
    from aggmrf_explore.cli import args as cli_args

    out = {}
    for dataset in ("adult", "bank"):
        explorer = get_problem(**ExplorerSession(lazy=True, dataset=dataset).data_key()).problem
        cli = cli_args.prepare_problem(build_parser().parse_args(["run", "--dataset", dataset]))
        for p in (explorer, cli):
            out[id(p)] = p
    for dataset in ("toy", "xor", "synthetic", "criteo"):
        p = get_problem(**ExplorerSession(lazy=True, dataset=dataset).data_key()).problem
        out[id(p)] = p
    return list(out.values())


if __name__ == "__main__":
    t0 = time.perf_counter()
    ship_baselines(default_problems())
    print(
        f"wrote {SHIPPED} ({SHIPPED.stat().st_size / 1e3:.0f} kB) in {time.perf_counter() - t0:.0f} s"
    )
