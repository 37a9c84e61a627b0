"""A release for others keeps its promise: played as an attacker who holds this package.

The documented command (``aggregate --mechanism gaussian --epsilon 1``) must release
integers whose noise no guessable seed reproduces, and two runs must differ.  The
positive control (``--insecure-seed``) shows that the same attack recovers every count
when the noise does come from a seed, so a pass is not the attack's fault.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from aggmrf_explore.cli import main
from aggmrf_explore.io import read_release
from aggmrf_explore.privacy import sampling

SEEDS = range(1000)  # every seed a user could guess: small integers, the default 0 among them


def _aggregate(tmp_path, name, *extra):
    out = tmp_path / name
    code = main(["aggregate", "--dataset", "adult", "--out", str(out), *extra])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """The exact tables, two runs of the documented command, and an insecure-seed release."""
    tmp = tmp_path_factory.mktemp("releases")
    exact = _aggregate(tmp, "exact")
    secure = [
        _aggregate(tmp, f"secure{i}", "--mechanism", "gaussian", "--epsilon", "1") for i in range(2)
    ]
    seeded = _aggregate(
        tmp, "seeded", "--mechanism", "gaussian", "--epsilon", "1", "--insecure-seed", "0"
    )
    return exact, secure, seeded


def _noise(path, exact):
    """The released values minus the exact ones, as the (2, K released) rows the release drew."""
    rel, ex = read_release(path).data, read_release(exact).data
    mask = rel.layout.released
    return np.stack([rel.d[mask] - ex.d[mask], rel.c[mask] - ex.c[mask]]), rel


def _candidates(seed, sigma, shape):
    """Noise an attacker recomputes from one seed: numpy's normal, laplace and integers
    generators (new and legacy APIs), and this package's own seeded discrete samplers."""
    yield np.rint(np.random.default_rng(seed).normal(0.0, sigma, shape))
    yield np.rint(np.random.default_rng(seed).laplace(0.0, sigma / np.sqrt(2), shape))
    yield np.random.default_rng(seed).integers(-4 * int(sigma), 4 * int(sigma), shape)
    yield np.rint(np.random.RandomState(seed).normal(0.0, sigma, shape))
    yield sampling.seeded_discrete_gaussian(sigma, shape, np.random.default_rng(seed))


def _best_match(noise, sigma):
    """The largest share of noise values any guessed seed reproduces exactly."""
    return max(
        float(np.mean(c == noise)) for s in SEEDS for c in _candidates(s, sigma, noise.shape)
    )


def test_documented_release_is_integer_and_not_reproduced_by_any_guessable_seed(releases):
    exact, secure, _ = releases
    noise, rel = _noise(secure[0], exact)
    meta = json.loads((secure[0] / "release.json").read_text())
    sigma = meta["noise"]["sigma"]
    assert meta["noise"]["mechanism"] == "discrete_gaussian"
    assert meta["noise"]["generator"] == "secure" and "seed" not in json.dumps(meta)
    # integers, to the last bit: nothing for a low-bit (Mironov) attack to read
    assert np.all(rel.d == np.round(rel.d)) and np.all(rel.c == np.round(rel.c))
    table = (secure[0] / "001_age.csv").read_text().splitlines()[1:]
    assert all("." not in line.rsplit('"', 1)[-1] for line in table)
    # the noise looks like its distribution (sd within 5 % of σ) and no seed reproduces it:
    # a chance match is Σ p(x)² ≈ 1/(2σ√π) ≈ 0.4 % of the values
    assert abs(noise.std() / sigma - 1.0) < 0.05
    assert _best_match(noise, sigma) < 0.02


def test_two_runs_of_the_documented_command_differ(releases):
    exact, secure, _ = releases
    a, _ = _noise(secure[0], exact)
    b, _ = _noise(secure[1], exact)
    assert np.mean(a == b) < 0.02  # independent draws agree only by chance


def test_the_attack_works_on_an_insecure_seed_release(releases):
    """Positive control: the seed 0 recomputes every noise value of --insecure-seed 0, and
    the reader warns that such a release is not private."""
    exact, _, seeded = releases
    noise, _ = _noise(seeded, exact)
    sigma = json.loads((seeded / "release.json").read_text())["noise"]["sigma"]
    assert _best_match(noise, sigma) == 1.0
    meta = json.loads((seeded / "release.json").read_text())
    assert meta["noise"]["generator"] == "insecure-seed"
    assert any("not private" in w for w in read_release(seeded).warnings)
