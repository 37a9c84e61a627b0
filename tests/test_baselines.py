"""Baselines: hyper-parameters chosen on training data only; naive Bayes not absurd."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import AggMRFError
from aggmrf_explore.baselines import best_pair, fit_logistic, logistic_pairs, naive_bayes
from aggmrf_explore.experiment import prepare


@pytest.fixture(scope="module")
def adult_small():
    return prepare("adult", n=6000, seed=0)


def test_hyperparameters_never_see_the_test_set(adult_small):
    enc, lay = adult_small.encoded, adult_small.layout
    a = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    b = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, 1 - enc.y_test, lay)
    assert a.info["lambda"] == b.info["lambda"]
    np.testing.assert_array_equal(a.proba_test, b.proba_test)
    nb1 = naive_bayes(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    nb2 = naive_bayes(enc.X_train, enc.y_train, enc.X_test, 1 - enc.y_test, lay)
    assert nb1.info == nb2.info
    bp1 = best_pair(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    bp2 = best_pair(enc.X_train, enc.y_train, enc.X_test, 1 - enc.y_test, lay)
    assert bp1.info == bp2.info


def test_ordering_on_adult_subsample(adult_small):
    enc, lay = adult_small.encoded, adult_small.layout
    lr = logistic_pairs(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    nb = naive_bayes(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    bp = best_pair(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    assert lr.nllh_test > bp.nllh_test > 0.1
    assert nb.nllh_test > 0.1  # tempered NB is not worse than the base rate
    assert nb.info["temperature"] < 1.0  # correlated features: NB is shrunk
    assert np.all((nb.proba_test > 0) & (nb.proba_test < 1))


def test_logistic_grid_and_errors(adult_small):
    enc, lay = adult_small.encoded, adult_small.layout
    model, lam, scores = fit_logistic(enc.X_train, enc.y_train, lay, lambdas=(4.0, 64.0))
    assert lam in (4.0, 64.0) and set(scores) == {4.0, 64.0}
    assert lam == max(scores, key=scores.get)
    with pytest.raises(AggMRFError, match="single class"):
        fit_logistic(enc.X_train, np.zeros_like(enc.y_train), lay)


def test_logistic_on_a_hashed_layout_uses_the_hashed_features():
    """The skyline of a hashed release is the logistic on the same φ_H (H columns), not on
    the exact crossed features."""
    from aggmrf_explore.tables import TableLayout

    rng = np.random.default_rng(0)
    X = rng.integers(0, 30, size=(2000, 2)).astype(np.int32)
    y = (rng.random(2000) < 0.3).astype(np.int8)
    lay = TableLayout([30, 30], [(0,), (1,), (0, 1)], ["a", "b"], hash_sizes={(0, 1): 64})
    model, _, _ = fit_logistic(X, y, lay, lambdas=(4.0,))
    assert model.n_features_in_ == 30 + 30 + 64
    assert model.layout_.hash_sizes.tolist() == [0, 0, 64]


def test_plain_naive_bayes_is_sklearn_categorical_nb(adult_small):
    """The paper's naive Bayes (add-1 smoothing, base-rate prior, no temperature) equals
    scikit-learn's CategoricalNB(alpha=1) on the same codes; the tempered one differs."""
    from sklearn.naive_bayes import CategoricalNB

    from aggmrf_explore.baselines import naive_bayes_plain

    enc, lay = adult_small.encoded, adult_small.layout
    plain = naive_bayes_plain(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    ref = CategoricalNB(alpha=1.0, min_categories=lay.n_modalities).fit(enc.X_train, enc.y_train)
    np.testing.assert_allclose(plain.proba_test, ref.predict_proba(enc.X_test)[:, 1], atol=1e-9)
    tempered = naive_bayes(enc.X_train, enc.y_train, enc.X_test, enc.y_test, lay)
    assert tempered.nllh_test > plain.nllh_test  # correlated features: plain NB over-confident


def test_skyline_grid_powers_of_two_coarse_to_fine(adult_small):
    """The default grid is the paper's powers of 2 (1 … 1024); the coarse-to-fine search scores
    8 of the 11 and picks what the full search picks."""
    from aggmrf_explore.baselines import LAMBDA_GRID

    assert LAMBDA_GRID == tuple(2.0**k for k in range(11))
    enc, lay = adult_small.encoded, adult_small.layout
    _, lam, scores = fit_logistic(enc.X_train, enc.y_train, lay, max_iter=60)
    _, lam_full, scores_full = fit_logistic(
        enc.X_train, enc.y_train, lay, max_iter=60, refine=False
    )
    assert len(scores) == 8 and len(scores_full) == 11
    assert lam == lam_full == max(scores_full, key=scores_full.get)
    for k, v in scores.items():
        assert v == scores_full[k]
