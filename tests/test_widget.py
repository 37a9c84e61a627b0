"""Jupyter widgets: the explorer's ipywidget form and the small training widget."""

from __future__ import annotations

import json
import threading

import ipywidgets
import matplotlib
import numpy as np
import pytest

from aggmrf_explore import AggMRFError
from aggmrf_explore.explorer.notebook.widget import (
    TrainingWidget,
    convergence_figure,
    explorer_widget,
    notebook_explorer,
)
from aggmrf_explore.explorer.store import frames
from aggmrf_explore.mrf import PCDTrainer, default_settings

PNG = b"\x89PNG"


@pytest.fixture
def trainer(xor_problem):
    enc = xor_problem.encoded
    s = default_settings(xor_problem.layout, xor_problem.aggregated.n, n_gibbs=500)
    return PCDTrainer(xor_problem.aggregated, s, enc.X_test[:2000], enc.y_test[:2000])


def test_explorer_ipywidget_is_a_widget_and_steps():
    before = set(threading.enumerate())
    w = explorer_widget(dataset="toy", n_gibbs=200)
    assert isinstance(w, ipywidgets.Widget)
    ex = w.explorer
    assert ex.session.trainer is not None and ex.session.iteration == 0
    ex.step_button.clicks += 1  # the widget's own Step button
    assert ex.session.iteration == 1
    ex.session.step(3)
    assert ex.session.iteration == 4
    assert not ex.message.visible, ex.message.object
    # nothing left running behind the cell: no new thread, no periodic callback
    assert set(threading.enumerate()) <= before
    assert not ex._looping and not ex.session.running


def test_ipywidget_bundle_follows_steps_from_code():
    """A view that finishes drawing after ``step(k)`` from code gets the stepped state: when
    a view reports DocumentReady and the session moved on, the widget's render_bundle (what
    a view draws) is re-taken; not on a step itself (a bundle change redraws every view
    from scratch, and breaks a view that is still drawing), nor when nothing changed."""
    from bokeh.events import DocumentReady

    w = explorer_widget(dataset="toy", n_gibbs=200)
    doc = w._model.document
    before = w.render_bundle
    w.explorer.session.step(3)
    assert w.render_bundle is before  # a view still drawing keeps its bundle
    doc.callbacks.trigger_event(DocumentReady())  # a view has drawn the old snapshot
    after = w.render_bundle
    assert after is not before
    text = json.dumps(after["docs_json"], ensure_ascii=False)
    assert "iteration 3 ·" in text, "the bundle still holds the status before the step"
    assert "iteration 3 ·" not in json.dumps(before["docs_json"], ensure_ascii=False)
    doc.callbacks.trigger_event(DocumentReady())  # the redrawn view: nothing new, no redraw
    assert w.render_bundle is after


def test_notebook_explorer_is_loaded_and_viewable():
    import panel as pn

    ex = notebook_explorer(dataset="xor", n_samples=2000, n_gibbs=200)
    assert ex.session.bundle is not None and not ex.session.busy
    assert "X1 × X2" in ex.tables_tab.table_select.options
    assert isinstance(ex.__panel__(), pn.viewable.Viewable)


def test_slow_ticks_still_refresh_the_heavy_views(monkeypatch):
    """Ticks slower than the fast refresh period (a loaded machine, a notebook's comm) must
    not starve the heavy views (predictions, d̂ vs d): they took turns, not fast every tick."""
    from aggmrf_explore.explorer.views import app

    ex = notebook_explorer(dataset="toy", n_gibbs=200)
    ex.session.play()
    calls: list[str] = []
    clock = [1000.0]
    monkeypatch.setattr(app.time, "monotonic", lambda: clock[0])

    def fake(kind):  # records the call and its time, as the real refreshes do
        def refresh():
            calls.append(kind)
            setattr(ex, f"_last_{kind}", clock[0])

        return refresh

    monkeypatch.setattr(ex, "_refresh_fast", fake("fast"))
    monkeypatch.setattr(ex, "_refresh_heavy", fake("heavy"))
    ex._last_fast = ex._last_heavy = clock[0]
    for _ in range(12):  # one slice every 0.7 s > FAST_REFRESH
        clock[0] += 0.7
        ex.tick()
    ex.session.pause()
    assert calls.count("heavy") >= 2, calls
    assert calls.count("fast") >= 6, calls


def test_training_widget_run_advances_the_trainer(trainer):
    tw = TrainingWidget(trainer, plot_every=7, references={"truth": 0.05})
    assert isinstance(tw.widget, ipywidgets.Widget)
    first = bytes(tw.image.value)
    assert first.startswith(PNG)
    stats = tw.run(20)
    assert [s.iteration for s in stats] == list(range(1, 21))
    assert trainer.iteration == 20
    assert tw.progress.value == tw.progress.max == 20
    assert tw.progress.bar_style == "success"
    assert bytes(tw.image.value).startswith(PNG) and bytes(tw.image.value) != first
    assert "iteration <b>20</b>" in tw.label.value
    tw.run(5)
    assert trainer.iteration == 25 and tw.progress.max == 5


def test_training_widget_shows_divergence(trainer):
    trainer.update(step_mu=10.0, step_theta=10.0, lambda_mu=0.0, lambda_theta=0.0, clip=50.0)
    tw = TrainingWidget(trainer, plot_every=5)
    stats = tw.run(200)
    assert len(stats) < 200
    assert tw.progress.bar_style == "danger"
    assert "diverged" in tw.label.value


def test_training_widget_rejects_bad_input(trainer):
    with pytest.raises(AggMRFError, match="plot_every"):
        TrainingWidget(trainer, plot_every=0)
    with pytest.raises(AggMRFError, match="step"):
        TrainingWidget(object())
    with pytest.raises(AggMRFError, match="run"):
        TrainingWidget(trainer).run(0)


def test_convergence_figure_labels(trainer):
    trainer.step(5)
    fig = convergence_figure(trainer.history_frame(), floor=0.01, references={"logistic": 0.04})
    assert isinstance(fig, matplotlib.figure.Figure)
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
        assert ax.get_legend() is not None
    empty = convergence_figure(None)
    assert len(empty.axes) == 2
    with pytest.raises(AggMRFError, match="columns"):
        import pandas as pd

        convergence_figure(pd.DataFrame({"iteration": np.arange(3)}))


def test_url_restore_shows_every_setting_in_its_control():
    """Several settings restored at once from a URL (one batched update) reach every control."""
    import panel as pn
    from panel.io.location import Location

    from aggmrf_explore.explorer.store.store import URL_KEYS

    ex = notebook_explorer(dataset="toy", n_gibbs=200)
    failed = []
    loc = Location(search="?dataset=xor&mechanism=gaussian&epsilon=2&delta=1e-06&lambda_theta=10")
    loc.sync(ex.session, {k: k for k in URL_KEYS}, on_error=failed.append)
    assert not failed
    s = ex.session
    assert (s.dataset, s.mechanism, s.epsilon, s.delta) == ("xor", "gaussian", 2, 1e-6)
    assert ex.data_card.w_dataset.value == "xor"
    assert ex.privacy_card.w_mech.value == "gaussian"

    def slider(box):  # (the control's slider; its help "?" beside it)
        return box.select(pn.widgets.DiscreteSlider)[0]

    privacy = ex.privacy_card
    assert slider(privacy.c_eps).value == 2 and slider(privacy.c_delta).value == 1e-6
    assert slider(ex.training_card.c_ltheta).value == 10
    assert privacy.c_delta.visible and privacy.c_cal.visible  # the Gaussian controls are shown
    assert "Gaussian σ" in privacy.sigma.object
    assert not ex.message.visible, ex.message.object


def test_copied_figures_show_their_own_session_data():
    """A second session's figures are copies of the first one's structure with its own data."""
    import holoviews as hv
    from bokeh.models import GlyphRenderer

    from aggmrf_explore.explorer.views import liveplots

    first = notebook_explorer(dataset="toy", n_gibbs=200)
    first.session.step(3)
    first._refresh_all()
    second = notebook_explorer(dataset="toy", n_gibbs=300)
    second.session.step(5)
    second._refresh_all()
    for name in ("p_nllh", "p_conv", "p_pred", "p_dhat"):
        a, b = getattr(first.training_tab, name), getattr(second.training_tab, name)
        assert not {m.id for m in a.fig.references()} & {m.id for m in b.fig.references()}
        # drawn afresh by HoloViews from the second session's state: the same arrays
        b.key = object()
        liveplots.clear_figure_cache()
        kwargs = {
            "p_nllh": {
                "history": second.session.history(),
                "references": frames.references(second.session.baselines),
            },
            "p_conv": {"history": second.session.history(), "floor": second.session.floor},
        }
        if name in kwargs:
            fresh = hv.render(b.build(**kwargs[name]), backend="bokeh")
            glyphs = [r for r in fresh.renderers if isinstance(r, GlyphRenderer)]
            for r_fresh, r_copy in zip(glyphs, b.renderers, strict=True):
                for col, values in r_fresh.data_source.data.items():
                    if col in r_copy.data_source.data:
                        np.testing.assert_allclose(
                            np.asarray(r_copy.data_source.data[col], float),
                            np.asarray(values, float),
                        )
    assert second.training_tab.p_nllh.renderers[0].data_source.data["iteration"][-1] == 5
