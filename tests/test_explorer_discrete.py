"""The explorer offers the discrete mechanisms (integer noise) wherever it offers the
continuous ones: the store (choices from the one declaration in ``settings.py``), the
release, the σ text, the Privacy card's controls, the Privacy tab's histogram and runs
table, the URL and lesson links.  No browser (``test_browser_discrete.py`` has one)."""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the renderer, without pn.extension()
import numpy as np
import pytest

from aggmrf_explore import privacy
from aggmrf_explore.explorer.store import frames, url
from aggmrf_explore.explorer.store.store import URL_KEYS, ExplorerSession
from aggmrf_explore.explorer.views import privacy_plots
from aggmrf_explore.explorer.views.noise_text import noise_text
from aggmrf_explore.settings import SETTINGS, SettingError, applies

DISCRETE = ("discrete_laplace", "discrete_gaussian")


@pytest.fixture(scope="module", params=DISCRETE)
def session(request):
    s = ExplorerSession(dataset="toy", mechanism=request.param, epsilon=2.0, n_gibbs=200)
    yield s
    s.close()


def test_the_stores_mechanisms_are_the_declared_ones():
    decl = SETTINGS["mechanism"]
    assert list(ExplorerSession.param["mechanism"].objects) == list(decl.choices)
    assert set(DISCRETE) <= set(decl.choices)
    # the library makes every declared mechanism (and no other): the registry's
    assert decl.choices == tuple(privacy.REGISTRY)


def test_a_discrete_mechanism_releases_integer_noise(session):
    s = session
    assert s.mechanism in DISCRETE and s.mechanism_obj.discrete
    noise = frames.noise_frame(s.data, s.mechanism, s.mechanism_obj)["noise"].to_numpy()
    assert noise.size and np.all(np.isfinite(noise))
    assert np.array_equal(noise, np.round(noise)), noise[:10]  # integers …
    assert np.any(noise != 0)  # … and noise
    assert np.array_equal(s.data.d, np.round(s.data.d))  # released counts are integers too


def test_its_noise_scale_is_make_mechanisms(session):
    s = session
    names = ("epsilon", "delta", "accounting", "calibration")
    values = {"mechanism": s.mechanism, **{k: getattr(s, k) for k in names}}
    used = {k: (values[k] if applies(k, values) else None) for k in names}
    expected = privacy.make_mechanism(s.mechanism, layout=s.bundle.layout, **used)
    assert type(s.mechanism_obj) is type(expected)
    assert s.mechanism_obj.scale == pytest.approx(expected.scale, rel=1e-12)
    assert s.mechanism_obj.std == pytest.approx(expected.std, rel=1e-12)
    text = noise_text(s)
    assert "⚠" not in text
    assert f"{expected.scale:.3g}" in text and f"{expected.std:.3g}" in text, text
    assert privacy_plots.MECHANISM_LABELS[s.mechanism] in text, text


def test_noise_aware_training_models_it(session):
    s = session
    assert s.propose("noise_aware", True) is None
    try:
        s.step(3)
        assert s.iteration == 3 and np.isfinite(s.trainer.last_nllh)
    finally:
        assert s.propose("noise_aware", False) is None


def test_the_url_round_trips_it(session):
    s = session
    link = url.with_settings("", s, URL_KEYS)
    assert f"mechanism={s.mechanism}" in link
    other = ExplorerSession(lazy=True)
    assert url.apply_query(other, link, URL_KEYS) == {}
    assert (other.mechanism, other.epsilon, other.delta) == (s.mechanism, s.epsilon, s.delta)
    # the hyphen spelling of the name is the same mechanism
    third = ExplorerSession(lazy=True)
    spelled = s.mechanism.replace("_", "-")
    assert url.apply_query(third, f"?mechanism={spelled}", URL_KEYS) == {}
    assert third.mechanism == s.mechanism


def test_discrete_gaussian_uses_delta_and_not_the_calibration():
    """make_mechanism: δ for both Gaussians, the calibration for the continuous one only
    (the discrete one is calibrated by its zCDP bound: a calibration given is refused)."""
    T = 10
    for c in SETTINGS["calibration"].choices:
        with pytest.raises(SettingError, match="calibration goes only with gaussian;"):
            privacy.make_mechanism("discrete_gaussian", 1.0, 1e-7, T, calibration=c)
    assert (
        privacy.make_mechanism("discrete_gaussian", 1.0, 1e-5, T).sigma
        < privacy.make_mechanism("discrete_gaussian", 1.0, 1e-9, T).sigma
    )


@pytest.fixture(scope="module")
def explorer():
    from aggmrf_explore.explorer.notebook.widget import notebook_explorer

    ex = notebook_explorer(dataset="toy", n_gibbs=200)
    yield ex
    ex.session.close()


def test_the_privacy_card_offers_them_with_the_controls_each_uses(explorer):
    ex = explorer
    card, s = ex.privacy_card, ex.session
    assert set(card.w_mech.options.values()) == set(SETTINGS["mechanism"].choices)
    shown, texts = {}, {}
    for mech in SETTINGS["mechanism"].choices:
        assert s.propose("mechanism", mech) is None, s.errors
        assert card.w_mech.value == mech
        shown[mech] = tuple(
            box.visible for box in (card.c_eps, card.c_delta, card.c_acc, card.c_cal)
        )
        texts[mech] = card.sigma.object
        assert "⚠" not in texts[mech], (mech, texts[mech])
    assert shown["discrete_laplace"] == shown["laplace"] == (True, False, True, False)
    assert shown["gaussian"] == (True, True, True, True)
    assert shown["discrete_gaussian"] == (True, True, True, False)  # δ, no calibration
    assert "discrete Gaussian σ" in texts["discrete_gaussian"]
    assert "discrete Laplace" in texts["discrete_laplace"]


def test_the_privacy_tab_draws_integer_noise_against_its_pmf(explorer):
    ex = explorer
    s, tab = ex.session, ex.privacy_tab
    assert s.propose("mechanism", "discrete_gaussian") is None
    tab.refresh_noise()
    assert tab.noise_hist.visible and tab.noise_hist.object is not None
    assert not tab.noise_note.visible
    fig = privacy_plots.noise_histogram(
        frames.noise_frame(s.data, s.mechanism, s.mechanism_obj)["noise"].to_numpy(),
        s.mechanism_obj.std,
        s.mechanism,
        s.mechanism_obj.pmf,
    )
    labels = [el.label for el in fig]
    assert any("pmf" in lab and "discrete Gaussian" in lab for lab in labels), labels
    hv.render(fig, backend="bokeh")


def test_a_discrete_run_joins_the_runs_table_and_the_curve(explorer):
    ex = explorer
    s, tab = ex.session, ex.privacy_tab
    assert s.propose("mechanism", "discrete_gaussian") is None
    s.step(25)
    assert s.propose("epsilon", 5.0) is None  # the run ends: a point of the curve
    assert any(r["mechanism"] == "discrete_gaussian" for r in s.privacy_runs)
    tab.refresh_runs()
    assert "discrete gaussian" in tab.runs_md.object, tab.runs_md.object
    series = privacy_plots.privacy_series(s.privacy_runs, s.dataset)
    assert "discrete Gaussian · MRF" in series, series
    colors = privacy_plots.MECHANISM_COLORS
    assert len({colors[m] for m in ("gaussian", "discrete_gaussian", "discrete_laplace")}) == 3


def test_a_lesson_that_hides_delta_keeps_it_hidden_under_discrete_gaussian(explorer):
    ex = explorer
    assert ex.session.propose("mechanism", "laplace") is None
    ex.share_card.hidden = ["delta", "calibration"]
    try:
        assert ex.session.propose("mechanism", "discrete_gaussian") is None
        assert not ex.privacy_card.c_delta.visible and not ex.privacy_card.c_cal.visible
        assert ex.privacy_card.c_eps.visible
    finally:
        ex.share_card.hidden = []
        ex._show_controls()


@pytest.mark.parametrize("sigma", [0.4, 3.0, 70.0, 7000.0])
def test_integer_noise_gets_bins_of_whole_integers(sigma):
    from aggmrf_explore.privacy import sampling

    noise = np.round(np.random.default_rng(0).normal(0, sigma, 2000))
    pmf = lambda x: sampling.discrete_gaussian_pmf(x, sigma)  # noqa: E731
    fig = privacy_plots.noise_histogram(noise, sigma, "discrete_gaussian", pmf)
    edges = np.asarray(fig.get(0).edges)
    widths = np.diff(edges)
    assert np.allclose(edges % 1, 0.5) and np.allclose(widths, widths[0]) and widths[0] % 2 == 1
    assert edges[0] < -4 * sigma + 1 and edges[-1] > 4 * sigma - 1
    assert np.isclose(-edges[0], edges[-1])  # the middle bin is centred on 0
    hv.render(fig, backend="bokeh")
