"""Every setting is declared once, and every surface accepts and refuses the same values.

For each setting of :data:`aggmrf_explore.settings.SETTINGS` the candidates are generated
from its declaration (its bounds, just inside and just outside them, its choices, and
values no domain holds); each surface then answers: the core (``TrainerSettings.validate``
or ``privacy.make_mechanism``), the explorer's store (``ExplorerSession.check``), its URL
decoder and the command line's parser.  Each must agree with the declaration.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from aggmrf_explore import privacy
from aggmrf_explore.cli.parser import UsageError, build_parser
from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.explorer.store import url
from aggmrf_explore.explorer.store.params import SETTING_OF
from aggmrf_explore.explorer.store.store import ExplorerSession
from aggmrf_explore.settings import SETTINGS, Setting, SettingError
from aggmrf_explore.trainer_settings import USER_SETTINGS, TrainerSettings

MECHANISM_SETTINGS = ("epsilon", "delta", "accounting", "calibration")


def candidates(s: Setting) -> list[str]:
    """Texts on both sides of the declared domain, as a user would type them."""
    junk = ["", "abc", "nan", "inf", "-inf", "1e999", "True", " ", "1,5"]
    if s.kind == "choice":
        return [*s.choices, s.choices[0].upper(), f" {s.choices[-1]} ", "bogus", *junk]
    if s.kind == "bool":
        return ["true", "false", "1", "0", "yes-please", *junk]
    out = list(junk)
    for edge in (s.lo, s.hi):
        if edge is None:
            continue
        if s.kind == "int":
            out += [str(int(edge) + d) for d in (-1, 0, 1)]
        else:
            out += [
                repr(float(v))
                for v in (np.nextafter(edge, -np.inf), edge, np.nextafter(edge, np.inf))
            ]
    mid = (s.lo + s.hi) / 2 if s.hi is not None else s.lo + 1
    out += [str(int(mid)) if s.kind == "int" else repr(mid), "2.5", "-3", "1e3", "007"]
    return out


def declared(s: Setting, text: str) -> bool:
    try:
        s.check(text)
        return True
    except SettingError:
        return False


def _core_accepts(s: Setting, text: str) -> bool | None:
    """The core's answer for the value a text denotes (None: the core takes no text)."""
    value = SETTINGS[s.name].check(text) if declared(s, text) else _parse_loosely(text)
    if value is None:
        return None
    try:
        if s.name in USER_SETTINGS:
            TrainerSettings(**{s.name: value}).validate()
        elif s.name in MECHANISM_SETTINGS:
            kw = {"epsilon": 1.0, "delta": 1e-7, "accounting": "both", "calibration": "analytic"}
            privacy.make_mechanism("gaussian", layout=10, **{**kw, s.name: value})
        else:
            return None
        return True
    except AggMRFError:
        return False


def _parse_loosely(text: str):
    """What a Python caller would pass for a text: a number if it reads as one, else the text."""
    try:
        v = float(text)
    except ValueError:
        return text if text.strip() else None
    return int(text) if text.strip().lstrip("+-").isdigit() else v


CASES = [(s, t) for s in SETTINGS.values() for t in candidates(s)]


@pytest.fixture(scope="module")
def store():
    return ExplorerSession(lazy=True)


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def test_every_user_setting_is_declared_once():
    trainer_fields = {f.name for f in fields(TrainerSettings)}
    assert set(USER_SETTINGS) <= trainer_fields and set(USER_SETTINGS) <= set(SETTINGS)
    assert set(SETTING_OF.values()) <= set(SETTINGS)
    for store_name, name in SETTING_OF.items():
        p = ExplorerSession.param[store_name]
        decl = SETTINGS[name]
        assert p.label == decl.label
        if decl.kind == "choice":
            assert list(p.objects) == list(decl.choices)
        elif decl.kind in ("int", "float"):
            assert tuple(p.bounds) == (decl.lo, decl.hi)


@pytest.mark.parametrize(("s", "text"), CASES, ids=[f"{s.name}={t!r}" for s, t in CASES])
def test_surfaces_agree_with_the_declaration(s, text, store, parser):
    expected = declared(s, text)
    # the explorer's store and its URL decoder
    for store_name in [k for k, v in SETTING_OF.items() if v == s.name]:
        try:
            store.check(store_name, text)
            assert expected, f"store accepted {store_name}={text!r}"
        except AggMRFError:
            assert not expected, f"store refused {store_name}={text!r}"
        try:
            url.decode_value(store.param[store_name], store_name, text)
            assert expected, f"URL accepted {store_name}={text!r}"
        except url.URLValueError:
            assert not expected, f"URL refused {store_name}={text!r}"
    # the command line (flags that take a value)
    if s.flag is not None and s.kind != "bool":
        command = "xor" if s.name in ("iterations", "seed") else "run"
        argv = [command, f"{s.flag}={text}"]
        try:
            parser.parse_args(argv)
            assert expected, f"CLI accepted {argv}"
        except UsageError:
            assert not expected, f"CLI refused {argv}"
    # the core, on the value the text denotes
    core = _core_accepts(s, text)
    if core is not None:
        assert core == expected, f"core {'accepted' if core else 'refused'} {s.name}={text!r}"


# ---------------------------------------------------------------------- widgets and defaults
@pytest.fixture(scope="module")
def cards(store):
    """The explorer's Privacy and Training cards, bound to a (lazy) store."""
    from aggmrf_explore.explorer.views.binding import Binder
    from aggmrf_explore.explorer.views.controls import PrivacyCard, TrainingCard

    binder = Binder(store, guard=lambda action: action())
    return PrivacyCard(store, binder), TrainingCard(store, binder)


def test_every_declared_choice_is_selectable_on_its_widget(cards):
    privacy_card, training_card = cards
    widgets = {
        "mechanism": privacy_card.w_mech,
        "accounting": privacy_card.w_acc,
        "calibration": privacy_card.w_cal,
        "gradient": training_card.w_grad,
    }
    shown = {SETTING_OF[k] for k in SETTING_OF}  # the settings the explorer shows
    assert {n for n, s in SETTINGS.items() if s.kind == "choice" and n in shown} == set(widgets)
    for name, widget in widgets.items():
        assert list(widget.options.values()) == list(SETTINGS[name].choices) or sorted(
            widget.options.values()
        ) == sorted(SETTINGS[name].choices), name
        # each in its declared words (or the registry's label for a mechanism)
        words = {v: k for k, v in widget.options.items()}
        for value in SETTINGS[name].choices:
            if name == "mechanism":
                assert words[value] == privacy.REGISTRY[value].label
            else:
                assert words[value] == dict(SETTINGS[name].options).get(value, value)


def test_every_default_is_the_same_on_every_surface(parser):
    """A value default is declared once: the store starts from it, ``TrainerSettings`` and
    the command line use it; a rule's default is computed (the flag's value is None)."""
    args = parser.parse_args(["run", "--dataset", "toy"])
    trainer = {f.name: f.default for f in fields(TrainerSettings)}
    from aggmrf_explore.cli.args import DEFAULT_DELTA

    for name, decl in SETTINGS.items():
        rule = isinstance(decl.default, str) and decl.default.startswith("rule:")
        for store_name in [k for k, v in SETTING_OF.items() if v == name]:
            if not rule:
                assert ExplorerSession.param[store_name].default == decl.default, store_name
        if name in trainer and not rule and name != "noise_aware":
            assert trainer[name] == decl.default, name
        dest = (decl.flag or "").lstrip("-").replace("-", "_")
        if decl.flag and hasattr(args, dest) and decl.kind != "bool":
            flag_default = getattr(args, dest)
            assert flag_default in (None, decl.default), (name, flag_default)
            if rule:
                assert flag_default is None, name
    assert DEFAULT_DELTA == SETTINGS["delta"].default


def test_the_samplers_are_the_kernels():
    """The sampler's choices are declared in ``settings.py``; the kernels (below the
    settings in the data flow, so they cannot read them) resolve exactly those."""
    from aggmrf_explore.kernels.chain import SAMPLERS

    assert SETTINGS["sampler"].choices == SAMPLERS


# ---------------------------------------------------------------------- rules between settings
GIVEN = {"epsilon": 1.0, "delta": 1e-6, "calibration": "classic"}


def _rule_cases():
    """(mechanism, settings given): every registered mechanism with each noise setting
    given alone, and with ε left out."""
    for mech in privacy.REGISTRY:
        for extra in ("epsilon", "delta", "calibration"):
            given = {"epsilon": 1.0} if extra != "epsilon" else {}
            given[extra] = GIVEN[extra]
            yield mech, given
        yield mech, {"epsilon": None}


RULE_CASES = list(_rule_cases())

# What the rules must refuse, written out by hand (not derived from the code under test): a
# mechanism needs ε; δ goes with the Gaussians only; a calibration with the continuous
# Gaussian only; "none" takes no noise setting at all.
REFUSED = {
    ("none", "epsilon"),
    ("none", "delta"),
    ("none", "calibration"),
    *((m, "delta") for m in ("laplace", "discrete_laplace", "local")),
    *((m, "calibration") for m in ("laplace", "discrete_laplace", "local", "discrete_gaussian")),
    *((m, "no-epsilon") for m in privacy.REGISTRY if m != "none"),
}


def _case_key(mech: str, given: dict) -> tuple[str, str]:
    if given.get("epsilon", 1.0) is None:
        return mech, "no-epsilon"
    return mech, next((k for k in given if k != "epsilon"), "epsilon")


def test_the_rules_refuse_exactly_the_combinations_written_out():
    assert {_case_key(m, g) for m, g in RULE_CASES} >= REFUSED  # every pinned case drawn
    refused = {_case_key(m, g) for m, g in RULE_CASES if _expected_words({"mechanism": m, **g})}
    assert refused == REFUSED


@pytest.fixture(scope="module")
def toy_layout():
    from aggmrf_explore import datasets, experiment

    return experiment.prepare(datasets.load_dataset("toy")).layout


def _expected_words(values: dict) -> str | None:
    from aggmrf_explore.settings import check_combination

    try:
        check_combination(values)
        return None
    except SettingError as exc:
        return str(exc)


@pytest.mark.parametrize(
    ("mech", "given"), RULE_CASES, ids=[f"{m}-{'-'.join(g)}" for m, g in RULE_CASES]
)
def test_each_rule_refuses_the_same_combinations_everywhere(mech, given, capsys, toy_layout):
    from aggmrf_explore.cli import main

    words = _expected_words({"mechanism": mech, **given})
    uses = privacy.REGISTRY[mech].uses
    if not uses and given.get("epsilon", 1) is None:
        words = None  # no mechanism, no ε: nothing to refuse
    # the core
    try:
        privacy.make_mechanism(mech, layout=toy_layout, **given)
        core = None
    except SettingError as exc:
        core = str(exc)
    assert core == words, (mech, given)
    # the command line: the same words, after the flag they name
    argv = ["run", "--dataset", "toy", "--mechanism", mech, "--iterations", "1", "--json"]
    for k, v in given.items():
        if v is not None:
            argv += [SETTINGS[k].flag, str(v)]
    code = main(argv)
    err = capsys.readouterr().err
    if words is None:
        assert code == 0 or "error: " in err and words is None and "goes only" not in err
    else:
        assert code == 2 and err.startswith("error: --") and words in err, (argv, err)


def test_noise_aware_without_noise_is_refused_the_same_way_everywhere(capsys):
    from aggmrf_explore.cli import main

    words = _expected_words({"mechanism": "none", "noise_aware": True})
    assert words and words.startswith("noise-aware training (MRF-N) (noise_aware) needs a noise")
    # the command line
    assert main(["run", "--dataset", "toy", "--noise-aware", "--iterations", "1"]) == 2
    assert words in capsys.readouterr().err
    # the explorer's store: the setting is refused with the same words, the store unchanged
    s = ExplorerSession(dataset="toy", n_gibbs=200)
    try:
        assert s.propose("noise_aware", True) == words
        assert s.trainer is not None and s.trainer.settings.noise_aware is False
        assert s.propose("mechanism", "laplace") is None
        assert s.propose("noise_aware", True) is None and s.trainer.settings.noise_aware
    finally:
        s.close()
