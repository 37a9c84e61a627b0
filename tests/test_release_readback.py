"""The reader reads everything the writer writes, and still refuses what noise cannot explain.

A user who makes a release must be able to train on it: the strict reader's consistency
checks allow each mechanism's real tail (:mod:`aggmrf_explore.privacy.tails`), not a fixed
multiple of σ, which refused 2 of 3 discrete-Laplace ε = 1 Adult releases.  The tails are
checked against draws; the releases are the ones ``aggregate`` writes, every mechanism, at
ε 0.1, 1 and 8 (``benchmarks/release_readback.py`` runs 200 of them).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from aggmrf_explore.cli import main
from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.io import read_release
from aggmrf_explore.privacy import make_mechanism
from aggmrf_explore.privacy.tails import noise_tail

MECHANISMS = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("m", [1, 2, 40])
def test_tail_bound_holds_on_draws(name, m):
    """P(|sum of m noises| > noise_tail(q, m)) ≤ q on 100 000 draws (q = 10⁻³); a smaller
    q reaches further; and the bound stays within a few σ·√m (not a blank cheque)."""
    mech = make_mechanism(name, 1.0, 1e-7 if "gaussian" in name else None, 20)
    q = 1e-3
    t = noise_tail(mech, q, m)
    z = mech.sample((100_000, m), np.random.default_rng()).sum(axis=1)
    rate = float(np.mean(np.abs(z) > t))
    assert rate <= q
    assert noise_tail(mech, q / 1000, m) > t  # a smaller probability reaches further
    assert t < 6.0 * mech.std * np.sqrt(m) * (1.0 + 2.0 / np.sqrt(m))


def _aggregate(tmp, tag, mechanism, epsilon):
    out = tmp / tag
    argv = ["aggregate", "--dataset", "adult", "--out", str(out)]
    assert main([*argv, "--mechanism", mechanism, "--epsilon", str(epsilon)]) == 0
    return out


@pytest.mark.parametrize("epsilon", [0.1, 1, 8])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_strict_reader_reads_adult_releases(tmp_path, mechanism, epsilon):
    """``aggregate --dataset adult --mechanism M --epsilon E`` (the discrete mechanisms)
    is read back by the strict reader without a problem, with the release's n."""
    rel = _aggregate(tmp_path, "r", mechanism, epsilon)
    back = read_release(rel)
    meta = json.loads((rel / "release.json").read_text())
    assert back.data.n == meta["n"]
    assert not [w for w in back.warnings if "inconsistent" in w]


def test_reader_still_refuses_what_noise_cannot_explain(tmp_path):
    """The tails are not a blank cheque: a label sum 60σ above its count (the Laplace tail
    at 10⁻⁹ over Adult's 20 000 rows is about 22σ) is refused."""
    rel = _aggregate(tmp_path, "r", "laplace", 1)
    sigma = json.loads((rel / "release.json").read_text())["noise"]["std"]
    first = sorted(p for p in rel.iterdir() if p.suffix == ".csv")[0]
    lines = first.read_text().splitlines()
    head, row = lines[0].split(","), lines[1].split(",")
    i_d, i_c = head.index("count"), head.index("label_sum")
    row[i_c] = str(int(row[i_d]) + int(60 * sigma))
    first.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    with pytest.raises(AggMRFError, match="label_sum exceeds count"):
        read_release(rel)
