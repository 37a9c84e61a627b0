"""The default penalties know the declared noise (trainer_settings.noise_penalties; docs/noise_rules.md):
the same rule on every surface, today's rule without noise, and the shipped defaults finish
noisy releases that they used to fit into the ground (or diverge on)."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest

from aggmrf_explore.cli import main
from aggmrf_explore.experiment import prepare
from aggmrf_explore.trainer_settings import LAMBDA_THETA_CAP, default_settings, noise_penalties


@pytest.mark.parametrize("T", [1, 6, 21, 105, 210])
def test_without_noise_the_rule_is_the_former_one(T):
    assert noise_penalties(T, 0.0) == (1.0, min(T / 2.0, LAMBDA_THETA_CAP))
    assert noise_penalties(T, float("nan")) == noise_penalties(T, 0.0)


def test_with_noise_both_penalties_grow_with_it():
    """λ_θ = max(min(T/2, 50), ½σ√T), λ_μ = max(1, ½σ): worked by hand for Adult's
    T = 105 and Laplace ε = 1 (σ = √2·105 = 148.5)."""
    lam_mu, lam_theta = noise_penalties(105, 148.49)
    assert lam_mu == pytest.approx(74.245)
    assert lam_theta == pytest.approx(0.5 * 148.49 * np.sqrt(105))
    assert noise_penalties(105, 1.0) == (1.0, 50.0)  # small noise: the former rule holds
    assert noise_penalties(105, 1e30) == (1e12, 1e12)  # capped at the settings' bound


def test_noise_aware_training_keeps_the_former_penalties():
    lay = prepare("toy").layout
    plain = default_settings(lay, 100)
    assert asdict(default_settings(lay, 100, noise_sd=0.0)) == asdict(plain)
    aware = default_settings(lay, 100, noise_sd=50.0, noise_aware=True)
    assert (aware.lambda_mu, aware.lambda_theta) == (plain.lambda_mu, plain.lambda_theta)
    noisy = default_settings(lay, 100, noise_sd=50.0)
    assert noisy.lambda_theta > plain.lambda_theta and noisy.lambda_mu > plain.lambda_mu


def _run(capsys, *flags) -> dict:
    argv = ["run", "--dataset", "toy", "--no-baselines", "--json", "--seed", "3", *flags]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("mechanism", "epsilon"), [("laplace", "0.1"), ("laplace", "1e-9"), ("gaussian", "0.01")]
)
def test_the_shipped_defaults_finish_a_hopeless_release_near_the_base_rate(
    capsys, mechanism, epsilon
):
    """The toy's cells hold 1.67 records; at these ε the noise is 100 to 10¹⁰ times that.
    The former defaults diverged on all three (exit 2) or scored −12.6; the rule ends near
    the base rate (test NLLH 0)."""
    report = _run(capsys, "--mechanism", mechanism, "--epsilon", epsilon)
    settings = report["settings"]
    assert settings["lambda_theta"] > 50 and settings["lambda_mu"] > 1
    assert report["models"]["mrf"]["nllh_test"] >= -0.15, report["models"]


def test_the_explorer_store_follows_the_rule_when_the_noise_changes():
    """With the default rule on, choosing a mechanism (or a smaller ε) sets the rule's λ
    at the release's noise; no mechanism brings the former λ back."""
    from aggmrf_explore.explorer import ExplorerSession
    from aggmrf_explore.trainer_settings import noise_penalties

    s = ExplorerSession(dataset="toy", n_gibbs=200)
    try:
        T = s.bundle.layout.n_released_tables
        assert (s.lambda_mu, s.lambda_theta) == noise_penalties(T, 0.0)
        assert s.propose("mechanism", "laplace") is None
        sd = s.data.noise.std
        assert sd > 1 and (s.lambda_mu, s.lambda_theta) == noise_penalties(T, sd)
        assert s.trainer.settings.lambda_theta == s.lambda_theta  # the trainer got it
        assert s.propose("epsilon", s.epsilon / 10) is None
        assert s.lambda_theta == pytest.approx(noise_penalties(T, s.data.noise.std)[1])
        assert s.propose("mechanism", "none") is None
        assert (s.lambda_mu, s.lambda_theta) == noise_penalties(T, 0.0)
    finally:
        s.close()


def test_the_intercept_is_penalised_only_where_the_noise_raised_the_penalty():
    lay = prepare("toy").layout
    T = lay.n_released_tables
    assert default_settings(lay, 100).intercept_penalty == 0.0
    assert default_settings(lay, 100, noise_sd=0.01).intercept_penalty == 0.0  # negligible
    assert default_settings(lay, 100, noise_sd=50.0).intercept_penalty == pytest.approx(1 / T)
    assert default_settings(lay, 100, noise_sd=50.0, noise_aware=True).intercept_penalty == 0.0


def test_mrfn_raises_the_penalty_only_on_rows_its_targets_hardly_shrink():
    """MRF-N holds a released row as by λ·(1 + σ²/b_j) (its target moves by b/(b + σ²)); by
    default (``cell_penalty``) a row where that is below the noise rule's λ_A gets λ_A, the
    others keep λ.  Worked by hand: T = 36 (8 features, all pairs), σ = 17, λ_θ = 18,
    λ_A = ½·17·6 = 51: a label sum of 10 000 gets 51/(18·1.0289) = 2.754, one of 100 gets 1
    (18·3.89 = 70 > 51); λ_μ = 1 → λ_A = 8.5: a count of 10 000 gets 8.5/1.0289 = 8.261.
    A noise-free release and the plain MRF keep every row at 1; the trainer's penalty
    carries the weights."""
    from dataclasses import replace

    from aggmrf_explore import TableLayout, aggregate
    from aggmrf_explore.mrf import PCDTrainer
    from aggmrf_explore.privacy import GaussianMechanism
    from aggmrf_explore.trainer_settings import cell_penalty_weights

    lay = TableLayout.all_pairs([2] * 8)
    assert lay.n_released_tables == 36
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(400, 8))
    agg = aggregate(X, rng.integers(0, 2, 400), lay)
    rel = np.flatnonzero(lay.released)
    j, k = rel[3], rel[40]
    d, c = agg.d.astype(float), agg.c.astype(float)
    d[j], c[j], d[k], c[k] = 20_000.0, 10_000.0, 300.0, 100.0
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    data = replace(agg, d=d, c=c, noise=mech.scaled(17.0 / mech.sigma))
    assert data.noise.std == pytest.approx(17.0)
    st = default_settings(lay, data.n, noise_sd=17.0, noise_aware=True)
    assert st.cell_penalty and (st.lambda_mu, st.lambda_theta) == (1.0, 18.0)
    m_mu, m_theta = cell_penalty_weights(data, st)
    assert m_theta[j] == pytest.approx(51.0 / (18.0 * (1.0 + 289.0 / 10_000.0)))
    assert m_theta[k] == 1.0
    assert m_mu[j] == pytest.approx(8.5 / (1.0 + 289.0 / 20_000.0))
    assert (m_mu >= 1.0).all() and (m_theta >= 1.0).all()
    trainer = PCDTrainer(data, st)
    np.testing.assert_allclose(trainer.penalty.reg_theta[rel], m_theta[rel])
    plain = replace(st, noise_aware=False)
    assert all((m == 1.0).all() for m in cell_penalty_weights(data, plain))
    assert all((m == 1.0).all() for m in cell_penalty_weights(agg, st))
