"""Explorer hardening without a browser: links read key by key, escaping of user strings,
upload limits and the upload size budget."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from aggmrf_explore.errors import AggMRFError
from aggmrf_explore.explorer.store import caches, problems, url
from aggmrf_explore.explorer.store.escape import escape_html, escape_markdown, shorten
from aggmrf_explore.explorer.store.store import URL_KEYS, ExplorerSession

sys.path.insert(0, str(Path(__file__).parent))
from hostile.corpus import two_id_columns  # noqa: E402


def fresh() -> ExplorerSession:
    return ExplorerSession(lazy=True)


def link_of(session: ExplorerSession) -> str:
    """The query string the app writes for a session (what Panel's Location.sync writes)."""
    query = {}
    for k in URL_KEYS:
        v = session.param[k].serialize(getattr(session, k))
        query[k] = v if isinstance(v, str) else json.dumps(v)
    return "?" + urlencode(query)


# ---------------------------------------------------------------- links, key by key
def test_one_bad_value_costs_only_its_own_setting():
    s = fresh()
    errors = url.apply_query(
        s, "?dataset=xor&lambda_theta=nan&mechanism=gaussian&epsilon=2", URL_KEYS
    )
    assert (s.dataset, s.mechanism, s.epsilon) == ("xor", "gaussian", 2.0)
    assert s.lambda_theta == ExplorerSession.param["lambda_theta"].default
    assert set(errors) == {"lambda_theta"} and set(s.errors) == {"lambda_theta"}
    assert "finite" in s.errors["lambda_theta"]


def test_true_gradient_link_round_trips_with_lambda_and_default_rule():
    s = fresh()
    for k, v in (("gradient", "true"), ("auto_defaults", False), ("lambda_theta", 10.0)):
        assert s.propose(k, v) is None
    link = link_of(s)
    assert "gradient=true" in link
    t = fresh()
    assert url.apply_query(t, link, URL_KEYS) == {}
    assert t.settings() == s.settings()
    # the capitalised form a Python bool would print is read too
    u = fresh()
    assert url.apply_query(u, "?gradient=True&lambda_theta=10&auto_defaults=False", URL_KEYS) == {}
    assert (u.gradient, u.lambda_theta, u.auto_defaults) == ("true", 10.0, False)


HOSTILE_URL = [
    ("n_gibbs", "1e99", "an integer from"),
    ("n_gibbs", "12.5", "an integer from"),
    ("dataset", "<script>alert(1)</script>", "one of"),
    ("epsilon", "-1", "≥ 1e-09"),
    ("epsilon", "inf", "finite"),
    ("delta", "2", "< 1"),
    ("data_seed", "-1", "an integer from"),
    ("train_seed", "1e23", "an integer from"),
    ("noise_seed", "abc", "an integer from"),
    ("lambda_theta", "x" * 100_000, "too long"),
    ("table", "y" * 100_000, "too long"),
    ("auto_defaults", "maybe", "true or false"),
    ("features", "[1, 2]", "list of names"),
    ("features", "[oops", "list"),
    ("gradient", "javascript:alert(1)", "one of"),
    ("iters_per_tick", "0", "between"),
]


@pytest.mark.parametrize(
    "key,value,says", HOSTILE_URL, ids=[f"{k}={v[:12]}" for k, v, _ in HOSTILE_URL]
)
def test_hostile_url_value_is_refused_beside_its_control(key, value, says):
    """Class "url" of the hostile corpus: each bad value gives a message for its own key,
    and the other settings of the link are kept."""
    s = fresh()
    before = getattr(s, key)
    query = urlencode(
        [
            ("mechanism", "laplace"),
            (key, value),
            ("n_gibbs" if key != "n_gibbs" else "lambda_mu", "2000" if key != "n_gibbs" else "7"),
        ]
    )
    errors = url.apply_query(s, query, URL_KEYS)
    assert set(errors) == {key}, errors
    assert says in errors[key], errors[key]
    assert len(errors[key]) < 400  # a huge value is not echoed whole
    assert getattr(s, key) == before
    assert s.mechanism == "laplace"
    assert (s.n_gibbs == 2000) if key != "n_gibbs" else (s.lambda_mu == 7.0)


def test_unknown_features_in_a_link_fail_the_load_on_that_setting_only():
    s = fresh()
    assert url.apply_query(s, '?dataset=xor&features=["nope"]', URL_KEYS) == {}
    with pytest.raises(problems.SettingError) as info:
        s.fetch()
    assert info.value.setting == "features" and "nope" in str(info.value)


def test_keys_that_are_not_settings_are_left_alone():
    s = fresh()
    assert url.apply_query(s, "?lesson=hello&hide=lambda_mu&dataset=xor", URL_KEYS) == {}
    assert url.without_keys("?lesson=hi&dataset=xor&hide=a", URL_KEYS) == "?lesson=hi&hide=a"
    assert url.without_keys("?dataset=xor", URL_KEYS) == ""


def test_list_and_boolean_decoding():
    p = ExplorerSession.param
    assert url.decode_value(p["features"], "features", '["a", "b,c"]') == ["a", "b,c"]
    assert url.decode_value(p["features"], "features", "a, b") == ["a", "b"]
    assert url.decode_value(p["features"], "features", "") == []
    assert url.decode_value(p["singles"], "singles", "0") is False
    assert url.decode_value(p["dataset"], "dataset", '"xor"') == "xor"
    with pytest.raises(url.URLValueError):
        url.decode_value(p["step_mu"], "step_mu", "nan")


# ---------------------------------------------------------------- escaping
PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "\"quoted' name",
]


@pytest.mark.parametrize("text", PAYLOADS)
def test_escaping_leaves_no_markup(text):
    for out in (escape_html(text), escape_markdown(text)):
        assert "<" not in out and ">" not in out and '"' not in out
    assert "](" not in escape_markdown(text)
    import html

    assert html.unescape(escape_html(text)) == text


def test_shorten_caps_long_strings():
    assert shorten("abc") == "abc"
    out = shorten("z" * 10_000, 50)
    assert len(out) < 80 and "10,000 characters" in out


# ---------------------------------------------------------------- uploads
def test_upload_over_the_limit_is_refused_and_names_the_file():
    reg = caches.UploadRegistry(max_bytes=1000)
    with pytest.raises(AggMRFError, match="big.csv"):
        reg.register(b"x" * 1001, "big.csv")
    h = reg.register(b"a,b\n1,2\n", "mine.csv")
    assert reg.name(h) == "mine.csv" and reg.get(h) == b"a,b\n1,2\n"
    assert reg.columns(h) == ["a", "b"]


def test_upload_errors_name_the_file_never_the_temporary_path():
    h = problems.register_upload(b"colour,buys\nred,1\nblue,0\n" * 20, "shop.csv")
    with pytest.raises(AggMRFError) as info:
        problems.get_problem("upload", None, 0, None, True, True, label="nope", upload=h)
    msg = str(info.value)
    assert "shop.csv" in msg and "/tmp" not in msg and ".csv'" in msg


def test_two_id_columns_upload_is_refused_before_allocation():
    data = two_id_columns().to_csv(index=False).encode()
    h = problems.register_upload(data, "ids.csv")
    t0 = time.perf_counter()
    with pytest.raises(AggMRFError, match="budget") as info:
        problems.get_problem("upload", None, 0, None, True, True, label="y", upload=h)
    assert time.perf_counter() - t0 < 5
    assert "'user'" in str(info.value) and "'item'" in str(info.value)


def test_upload_picker_drops_a_file_over_the_limit_on_the_server():
    from aggmrf_explore.explorer.views.upload_widget import UploadPicker

    class Event:
        def __init__(self, name, chunk, total, data):
            self.event_name = "upload_event"
            self.data = {
                "name": name,
                "chunk": chunk,
                "total_chunks": total,
                "data": data,
                "type": "text/csv",
            }

    w = UploadPicker(max_bytes=10)
    assert w.max_file_size == "1KB"
    w._process_event(Event("big.csv", 1, 2, b"123456"))
    w._process_event(Event("big.csv", 2, 2, b"123456"))
    assert w.value == {} and "big.csv" in w.refused
    w._process_event(Event("ok.csv", 1, 1, b"a,b\n"))
    assert w.value == {"ok.csv": "a,b\n"} and w.refused == ""


# ---------------------------------------------------------------- divergence
def test_after_divergence_play_refuses_and_continue_resumes_from_the_last_good_state():
    import numpy as np

    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=200)
    s.step(3)
    for k, v in (
        ("precondition", False),
        ("step_theta", 50.0),  # the preconditioner from the targets survives 10 for 100+ steps
        ("step_mu", 50.0),
        ("lambda_theta", 0.0),
    ):
        assert s.propose(k, v) is None
    for _ in range(80):
        s.step(1)
        if s.diverged:
            break
    assert s.diverged and "diverged" in s.warning
    it, theta, mu = s.iteration, s.trainer.theta.copy(), s.trainer.mu.copy()
    with pytest.raises(AggMRFError, match="Continue from last good state"):
        s.play()  # Play does not take another bad step
    assert not s.running and s.iteration == it
    s.resume()
    assert s.running and not s.diverged and s.warning == ""
    assert (s.step_mu, s.step_theta) == (25.0, 25.0) and s.auto_defaults is False
    assert s.trainer.settings.step_theta == 25.0  # applied to the live trainer
    assert np.array_equal(s.trainer.theta, theta) and np.array_equal(s.trainer.mu, mu)
    assert f"iteration {it:,}" in s.notice
    s.pause()
    for _ in range(6):  # smaller steps: training goes on (or diverges again, resumable)
        if s.diverged:
            s.resume()
            s.pause()
        s.step(1)
    assert s.iteration > it


def test_upload_chunks_fit_the_servers_websocket_message_limit():
    """The picker's chunks (plus Bokeh's message framing) stay far below the websocket
    message limit of `panel serve` (Bokeh's default, which the explorer documents), and the
    upload limit is what the picker announces."""
    from bokeh.server.tornado import DEFAULT_WEBSOCKET_MAX_MESSAGE_SIZE_BYTES

    from aggmrf_explore.explorer.views.upload_widget import UploadPicker, size_limit_text

    assert caches.WEBSOCKET_MAX_MESSAGE_BYTES == DEFAULT_WEBSOCKET_MAX_MESSAGE_SIZE_BYTES
    assert 4 * caches.UPLOAD_CHUNK_BYTES <= caches.WEBSOCKET_MAX_MESSAGE_BYTES
    w = UploadPicker()
    assert w.chunk_size == caches.UPLOAD_CHUNK_BYTES and w.max_bytes == caches.UPLOAD_MAX_BYTES
    assert w.max_file_size == size_limit_text(caches.UPLOAD_MAX_BYTES) == "10MB"
    assert caches.UPLOADS.max_bytes == caches.UPLOAD_MAX_BYTES


@pytest.mark.parametrize(
    "name, text, words",
    [
        ("n_samples", "2.5", "must be a whole number; got '2.5'."),
        ("n_samples", "nan", "must be a whole number; got 'nan'."),
        ("iters_per_tick", "many", "must be a whole number; got 'many'."),
        ("iters_per_tick", "x" * 60, "must be a whole number; got '" + "x" * 40 + "…"),
    ],
)
def test_a_number_is_read_by_one_rule_from_a_link_and_from_a_widget(name, text, words):
    from aggmrf_explore.explorer.store.params import parse_number

    s = fresh()
    p = s.param[name]
    with pytest.raises(AggMRFError) as direct:
        parse_number(p.label, text, whole=True)
    with pytest.raises(url.URLValueError) as linked:
        url.decode_value(p, name, text)
    before = getattr(s, name)
    proposed = s.propose(name, text)  # (what a widget's value goes through)
    assert str(direct.value) == str(linked.value) == proposed
    assert proposed.startswith(p.label) and words in proposed
    assert getattr(s, name) == before and s.errors[name] == proposed
    assert parse_number(p.label, " 12 ", whole=True) == 12
    assert parse_number(p.label, "2.5", whole=False) == 2.5
