"""MRF-N on a local (randomized-response) release: per-cell σ in the posterior."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from aggmrf_explore import AggMRFError, mrf
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.privacy import make_mechanism, noise_aware_targets, posterior_mean_counts
from aggmrf_explore.privacy.local import local_release, make_local_mechanism


def test_constant_sigma_array_matches_the_mechanism_bit_for_bit():
    rng = np.random.default_rng(0)
    n = 500
    mu = rng.uniform(0, n, 300)
    b = mu + rng.normal(0, 30, 300)
    mech = make_mechanism("gaussian", epsilon=0.5, delta=1e-6, layout=4)
    ref = posterior_mean_counts(b, mu, n, mech)
    got = posterior_mean_counts(b, mu, n, np.full(300, mech.scale))
    assert np.array_equal(ref, got)


def test_per_cell_sigma_is_used_cell_by_cell():
    rng = np.random.default_rng(1)
    n = 400
    mu = rng.uniform(10, 390, 50)
    b = mu + rng.normal(0, 20, 50)
    sig = rng.uniform(0.5, 80.0, 50)
    sig[:5] = 0.0  # exact cells: the released value, clipped
    got = posterior_mean_counts(b, mu, n, sig)
    one = [
        posterior_mean_counts(b[j : j + 1], mu[j : j + 1], n, sig[j : j + 1])[0] for j in range(50)
    ]
    assert np.array_equal(got, np.array(one))
    assert np.array_equal(got[:5], np.clip(b[:5], 0, n))
    # shrinkage towards the prior grows with σ
    w = (got[5:] - b[5:]) / (mu[5:] - b[5:])
    order = np.argsort(sig[5:])
    assert np.corrcoef(sig[5:][order], w[order])[0, 1] > 0.5
    with pytest.raises(AggMRFError):
        posterior_mean_counts(b, mu, n, -sig)


@pytest.fixture(scope="module")
def local_xor():
    p = prepare("xor", n=20000, seed=0)
    mech = make_local_mechanism(2.0, p.layout)
    rel = local_release(p.encoded.X_train, p.encoded.y_train, p.layout, mech, seed=1)
    return p, rel


def test_noise_aware_targets_use_the_local_sigmas(local_xor):
    p, rel = local_xor
    lay = p.layout
    d_hat = np.full(lay.K, rel.n / 4.0)
    c_hat = d_hat / 2.0
    d_t, c_t = noise_aware_targets(rel, d_hat, c_hat)
    r = lay.released
    # default (refresh): σ re-evaluated at the model's tables, Var(T̂ | T = (d̂, ĉ))
    at = rel.noise.at_model(lay, d_hat, c_hat)
    assert not np.allclose(at.sigma_d[r], rel.noise.sigma_d[r])  # the refresh matters here
    expect = posterior_mean_counts(rel.d[r], d_hat[r], rel.n, at.sigma_d[r])
    assert np.array_equal(d_t[r], expect)
    assert np.all((d_t[r] >= 0) & (d_t[r] <= rel.n)) and np.all(c_t <= d_t)
    # refresh=False keeps the release's plug-in σ
    fixed = dataclasses.replace(rel, noise=dataclasses.replace(rel.noise, refresh=False))
    d_f, _ = noise_aware_targets(fixed, d_hat, c_hat)
    expect = posterior_mean_counts(rel.d[r], d_hat[r], rel.n, rel.noise.sigma_d[r])
    assert np.array_equal(d_f[r], expect)


def test_noise_aware_training_beats_plain_mrf_on_a_local_release(local_xor):
    p, rel = local_xor
    plain = train_mrf(p, mrf.default_settings(p.layout, rel.n, noise_aware=False), 100, data=rel)
    aware = train_mrf(p, mrf.default_settings(p.layout, rel.n, noise_aware=True), 100, data=rel)
    assert np.isfinite(aware.nllh_test)
    assert aware.nllh_test > plain.nllh_test + 0.1


def test_the_per_cell_gaussian_approximation_is_calibrated(local_xor):
    """MRF-N's approximation b_j = A_j + L_j, L_j ~ N(0, σ̂_j²): the standardised errors of the
    local estimates over 20 releases have sd ≈ 1 and ≈ 95 % inside ±1.96 (marginally; the
    cross-cell correlations, which the approximation ignores, are not checked here)."""
    p, _ = local_xor
    lay, enc = p.layout, p.encoded
    mech = make_local_mechanism(4.0, lay)
    rel = lay.released
    z = []
    for seed in range(20):
        r = local_release(enc.X_train, enc.y_train, lay, mech, seed=seed)
        z.append((r.d[rel] - r.true_d[rel]) / r.noise.sigma_d[rel])
        z.append((r.c[rel] - r.true_c[rel]) / r.noise.sigma_c[rel])
    z = np.concatenate(z)
    assert abs(z.mean()) < 0.1
    assert 0.85 < z.std() < 1.15
    assert 0.92 < np.mean(np.abs(z) < 1.96) < 0.98
