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
from aggmrf_explore.explorer import url
from aggmrf_explore.explorer.params import SETTING_OF
from aggmrf_explore.explorer.store import ExplorerSession
from aggmrf_explore.mrf import USER_SETTINGS, TrainerSettings
from aggmrf_explore.settings import SETTINGS, Setting, SettingError

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
