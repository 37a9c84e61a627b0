"""A first start trains with serial builds of the dense kernels (issue 14): same results.

The explorer's first start (empty numba cache) runs ``kernels.quick``'s serial builds of
gibbs_sweep, build_params and sample_statistics while the parallel builds compile in a
child process; the chain then switches to the parallel builds mid-run.  Both must give
bit-identical samples and statistics, so the switch is invisible.
"""

from __future__ import annotations

import numpy as np

from aggmrf_explore.kernels import GibbsChain, chain, gibbs, quick
from aggmrf_explore.tables import TableLayout


def _run(sweeps: int, switch_at: int | None = None):
    lay = TableLayout.all_pairs([3, 4, 2, 5])
    rng = np.random.default_rng(3)
    mu, theta = rng.normal(0, 0.7, lay.K), rng.normal(0, 0.7, lay.K)
    ch = GibbsChain(lay, 300, [np.ones(m) for m in (3, 4, 2, 5)], seed=11)
    out = []
    for k in range(sweeps):
        if k == switch_at:
            quick.use_parallel()
        ch.sweep(mu, theta)
        out.append((ch.codes.copy(), *ch.statistics(theta), *ch.statistics(theta * 0.5)))
    return out


def test_serial_builds_match_the_parallel_ones_bit_for_bit():
    reference = _run(4)
    try:
        quick.use_serial()
        assert quick.serial_in_use()
        assert chain.DENSE.gibbs_sweep is not gibbs.gibbs_sweep
        serial = _run(4)
        quick.use_serial()
        switched = _run(4, switch_at=2)  # serial for two sweeps, then the parallel builds
    finally:
        quick.use_parallel()
    assert not quick.serial_in_use()
    assert chain.DENSE.gibbs_sweep is gibbs.gibbs_sweep
    for got in (serial, switched):
        for a, b in zip(reference, got, strict=True):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)
    # the chain moved: the comparison is not between constant states
    assert not np.array_equal(reference[0][0], reference[-1][0])
