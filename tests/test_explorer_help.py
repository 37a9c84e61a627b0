"""Every control of the explorer explains itself: a declared setting's control shows the
help of its one declaration (``settings.SETTINGS``), the explorer's own controls theirs;
each tab has a "what to look for" note."""

from __future__ import annotations

import panel as pn

from aggmrf_explore.explorer.store.params import declaration
from aggmrf_explore.explorer.views.app import Explorer
from aggmrf_explore.explorer.views.checkbox import LabeledCheckbox
from aggmrf_explore.explorer.views.help import CONTROL_HELP, EXPLAIN, TAB_NOTES, help_for
from aggmrf_explore.settings import SETTINGS


def _helps(box) -> list[str]:
    """The help texts a control's box carries (tooltips, "?" icons, checkbox help)."""
    out = []
    for obj in box.select(lambda o: isinstance(o, pn.widgets.Widget | LabeledCheckbox)):
        if isinstance(obj, pn.widgets.TooltipIcon):
            out.append(str(obj.value))
        elif "description" in obj.param and obj.description:
            out.append(str(obj.description))
    return out


def test_every_control_shows_its_help():
    ex = Explorer(sync_url=False)
    try:
        assert len(ex.binder.control_boxes) >= 20
        for name, box in ex.binder.control_boxes.items():
            text = help_for(name)
            assert text, f"no help for {name}"
            assert text in _helps(box), (name, _helps(box))
            decl = declaration(name)
            if decl is not None and name not in CONTROL_HELP:  # its one declaration's words
                assert text == SETTINGS[decl.name].help
        for name in ("n_gibbs", "lambda_mu", "lambda_theta", "step_mu", "step_theta"):
            assert name in ex.binder.control_boxes
        for name in ("gradient", "accounting", "calibration", "iters_per_tick", "epsilon"):
            assert name in ex.binder.control_boxes
    finally:
        ex.session.close()


def test_each_tab_has_a_note_that_stays_true():
    ex = Explorer(sync_url=False)
    try:
        titles = list(ex.tabs._names)
        assert set(titles) == set(TAB_NOTES)
        # the XOR fall is the lesson, not a failure; the floor note and the band agree
        assert "XOR" in TAB_NOTES["Training"] and "lesson" in TAB_NOTES["Training"]
        from aggmrf_explore.explorer.views.help import EXPLAIN

        assert "cannot go below" not in EXPLAIN["convergence"]
        assert "dip below" in EXPLAIN["convergence"]
    finally:
        ex.session.close()


def test_the_noise_text_names_each_mechanisms_scale():
    from aggmrf_explore.explorer.store.store import ExplorerSession
    from aggmrf_explore.explorer.views.noise_text import noise_text

    s = ExplorerSession(dataset="toy", mechanism="laplace", n_gibbs=200)
    assert "**Laplace** scale b" in noise_text(s)
    s.mechanism = "gaussian"
    assert "Gaussian σ" in noise_text(s)
    s.mechanism = "local"
    assert "| field | values | ε share | keep p |" in noise_text(s)
    s.mechanism = "none"
    assert noise_text(s).startswith("No noise")


def test_button_groups_and_seeds_have_help_of_their_own():
    """The mechanism and gradient buttons carry a "?" icon (a group's own tooltip covered
    the whole group and stayed over the plots after a click); each seed says what it seeds."""
    ex = Explorer(sync_url=False)
    try:
        for name in ("mechanism", "gradient"):
            box = ex.binder.control_boxes[name]
            icons = box.select(pn.widgets.TooltipIcon)
            assert [str(i.value) for i in icons] == [help_for(name)], name
            (group,) = box.select(pn.widgets.RadioButtonGroup)
            assert not group.description, name
        seeds = [help_for(n) for n in ("data_seed", "noise_seed", "train_seed")]
        assert len(set(seeds)) == 3 and all("eed" in t for t in seeds)
        for name in ("noise_seed", "train_seed"):
            assert help_for(name) in _helps(ex.binder.control_boxes[name])
    finally:
        ex.session.close()


def test_each_symbol_is_explained_where_it_appears():
    from aggmrf_explore.explorer.store.store import ExplorerSession
    from aggmrf_explore.explorer.views.noise_text import noise_text

    s = ExplorerSession(dataset="toy", mechanism="laplace", n_gibbs=200)
    text = noise_text(s)
    assert "Δ₁" in text and "one person can change" in text
    s.mechanism = "discrete_gaussian"
    assert "ρ" in noise_text(s) and "zero-concentrated" in noise_text(s)
    assert "Monte-Carlo floor" in EXPLAIN["convergence"] and "exact" in EXPLAIN["convergence"]
    assert "0 shown as 0.5" in EXPLAIN["dhat"] and "has no 0" in EXPLAIN["dhat"]
