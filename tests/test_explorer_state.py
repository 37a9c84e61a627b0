"""The explorer's session state machine: play, pause, step, reset, changes mid-run, validation."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest

from aggmrf_explore.explorer.store import frames
from aggmrf_explore.explorer.store.store import ExplorerSession
from aggmrf_explore.explorer.views.noise_text import noise_text


@pytest.fixture
def xor_session():
    # small n' keeps each iteration around a millisecond
    return ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=500)


def test_import_starts_nothing():
    s = ExplorerSession(lazy=True)
    assert s.trainer is None and not s.running
    assert s.tick() == []


def test_play_tick_pause_step(xor_session):
    s = xor_session
    assert s.iteration == 0 and not s.running
    assert s.tick(0.05) == []  # paused: ticks do nothing
    s.play()
    stats = s.tick(0.05)
    assert s.running and len(stats) >= 1 and s.iteration == len(stats)
    s.pause()
    it = s.iteration
    assert s.tick(0.05) == [] and s.iteration == it
    s.step(3)
    assert s.iteration == it + 3 and not s.running
    assert "iteration" in s.status and "it/s" in s.status


def test_tick_is_time_boxed(xor_session):
    s = xor_session
    s.iters_per_tick = 1000
    s.play()
    s.tick(0.01)  # warm
    import time

    t0 = time.perf_counter()
    done = s.tick(0.03)
    # the time box stops the tick, not iters_per_tick (1 000 XOR iterations take ≥ 1 s);
    # the wall bound is loose for a loaded CI machine
    assert 1 <= len(done) < 1000
    assert time.perf_counter() - t0 < 1.0


def test_reset_restarts_from_zero(xor_session):
    s = xor_session
    s.step(5)
    s.reset()
    assert s.iteration == 0 and "reset" in s.notice


def test_live_parameters_apply_without_reset(xor_session):
    s = xor_session
    s.play()
    s.step(3)
    assert s.propose("lambda_theta", 7.0) is None
    assert s.propose("step_theta", 0.05) is None
    assert s.propose("gradient", "true") is None
    assert s.iteration == 3  # no reset
    assert s.trainer.settings.lambda_theta == 7.0
    assert s.trainer.settings.step_theta == 0.05
    assert s.trainer.settings.gradient == "true"
    assert not s.auto_defaults  # touching λ / α leaves the default rule
    stats = s.step(1)
    assert stats[0].lambda_theta == 7.0 and s.running


def test_invalidating_changes_reset_with_notice(xor_session):
    s = xor_session
    s.step(4)
    v = s.version
    assert s.propose("n_gibbs", 300) is None
    assert s.iteration == 0 and s.version == v + 1 and "n_gibbs" in s.notice
    s.step(2)
    assert s.propose("mechanism", "gaussian") is None
    assert s.iteration == 0 and "mechanism" in s.notice and s.data.is_noisy
    assert frames.noise_frame(s.data, s.mechanism, s.mechanism_obj) is not None
    assert s.mechanism_obj.sigma > 0 and "**Gaussian σ**: analytic" in noise_text(s)
    s.step(2)
    assert s.propose("n_samples", 1000) is None
    assert s.iteration == 0 and s.bundle.aggregated.n == 1000


@pytest.mark.parametrize(
    "name,value",
    [
        ("step_mu", -1),
        ("step_theta", float("nan")),
        ("lambda_theta", float("inf")),
        ("lambda_mu", "abc"),
        ("n_gibbs", 0),
        ("epsilon", 0),
        ("delta", 1.5),
        ("n_samples", 2.5),
        ("dataset", "nope"),
        ("iters_per_tick", -3),
    ],
)
def test_bad_values_leave_state_running(xor_session, name, value):
    s = xor_session
    s.play()
    s.step(2)
    before = getattr(s, name)
    settings = s.trainer.settings
    msg = s.propose(name, value)
    assert msg and name in s.errors and "Traceback" not in msg
    assert getattr(s, name) == before
    assert s.trainer.settings == settings and s.iteration == 2 and s.running
    s.tick(0.02)
    assert s.iteration > 2
    # a good value clears the message
    good = {"dataset": "xor", "n_samples": 2000}.get(name, before)
    if name != "dataset" and name != "n_samples":
        s.propose(name, good if not isinstance(good, float) else good * 1.0)
    else:
        s.errors = {}
    assert name not in s.errors or getattr(s, name) == before


def test_failed_data_change_keeps_previous_data(xor_session):
    s = xor_session
    s.step(3)
    # "Upload a CSV…" without a file: the choice stays (the file picker must stay in
    # view), the label control says what to do, the previous data keep training
    assert s.propose("dataset", "upload") is None
    assert s.dataset == "upload" and "choose a CSV file" in s.errors["label_column"]
    assert s.bundle.key[0] == "xor" and s.iteration == 3
    s.step(1)
    assert s.iteration == 4
    assert s.propose("dataset", "xor") is None
    assert s.bundle.key[0] == "xor"


def test_noise_aware_needs_a_mechanism(xor_session):
    msg = xor_session.propose("noise_aware", True)
    assert msg and "mechanism" in msg
    assert xor_session.noise_aware is False


def test_divergence_pauses_with_message():
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=200)
    s.propose("precondition", False)
    s.propose("step_theta", 10.0)
    s.propose("step_mu", 10.0)
    s.propose("lambda_theta", 0.0)
    s.play()
    for _ in range(50):
        s.tick(0.02)
        if not s.running:
            break
    if not s.running:
        assert "diverged" in s.warning and "Likely cause" in s.warning
        assert s.notice == ""  # a warning, not a routine notice
    # whatever happened, the views have no NaN / inf
    h = s.history()
    for c in ("d_error", "c_error"):
        assert np.all(np.isfinite(h[c].to_numpy(float))) or not s.running


def test_views_and_downloads(xor_session):
    s = xor_session
    s.step(5)
    h = s.history()
    assert list(h["iteration"]) == [1, 2, 3, 4, 5]
    csv = s.history().to_csv(index=False)
    assert csv.splitlines()[0].startswith("iteration")
    settings = json.loads(s.settings_json())
    assert settings["dataset"] == "xor" and settings["n_gibbs"] == 500
    t = frames.table_frame(s.data, s.trainer, s.table)
    assert {"count", "label_sum", "d_hat", "c_hat"} <= set(t.columns)
    d = frames.dhat_frame(s.data, s.trainer)
    assert set(d["kind"]) <= {"single", "pair", "triple"}
    p = s.predictions()
    assert np.all((p["mrf"] >= 0) & (p["mrf"] <= 1))
    refs = frames.references(s.baselines)
    assert all(math.isfinite(v) for v in refs.values())


def test_xor_frame_converges_toward_maxent():
    s = ExplorerSession(dataset="xor", n_samples=20000, n_gibbs=2000)
    s.step(150)
    f = frames.xor_frame(s.bundle, s.trainer, s.baselines)
    assert len(f) == 4
    hi = f["truth"] > 0.5
    assert np.allclose(f.loc[hi, "exact max-ent"], 0.9, atol=0.03)
    assert np.allclose(f.loc[~hi, "exact max-ent"], 0.1, atol=0.03)
    assert np.allclose(f["live MRF"], f["exact max-ent"], atol=0.05)


def test_sessions_are_independent():
    a = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=300)
    b = ExplorerSession(dataset="toy", n_gibbs=300)
    a.step(3)
    b.propose("lambda_theta", 1.0)
    assert a.iteration == 3 and b.iteration == 0
    assert a.trainer.settings.lambda_theta != 1.0
    # the cached problem is shared read-only between sessions with the same data
    c = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=300)
    assert c.bundle is a.bundle and c.trainer is not a.trainer


# ---------------------------------------------------------------- the store's declarations
NUMERIC_SETTINGS = (
    "n_samples",
    "data_seed",
    "epsilon",
    "delta",
    "noise_seed",
    "n_gibbs",
    "train_seed",
    "lambda_mu",
    "lambda_theta",
    "step_mu",
    "step_theta",
    "iters_per_tick",
)


@pytest.mark.parametrize("name", NUMERIC_SETTINGS)
def test_numeric_settings_declare_their_bounds(name):
    """param itself refuses a value outside the declared bounds; the store is unchanged."""
    s = ExplorerSession(lazy=True)
    p = s.param[name]
    lo, hi = p.bounds
    assert lo is not None and hi is not None and lo < hi
    assert lo <= p.default <= hi
    before = getattr(s, name)
    too_big = hi + 1 if isinstance(hi, int) else hi * 2 + 1
    with pytest.raises(ValueError):
        setattr(s, name, too_big)
    assert getattr(s, name) == before
    msg = s.propose(name, too_big)
    assert msg and p.label in msg and getattr(s, name) == before


def test_choices_are_declared():
    s = ExplorerSession(lazy=True)
    assert set(s.param["dataset"].objects) >= {"toy", "xor", "adult", "bank", "upload"}
    with pytest.raises(ValueError):
        s.mechanism = "exponential"
    assert s.mechanism == "none"


def test_revert_and_use_upload_change_settings_without_reloading(xor_session):
    s = xor_session
    s.step(3)
    trainer, version = s.trainer, s.version
    s.set_notice("n_samples changed: data are being prepared, training restarts.")
    s.revert({"n_samples": 1000, "data_seed": 5}, "the data could not be prepared.")
    assert (s.n_samples, s.data_seed) == (1000, 5)
    # the message beside each reverted control; the notice about the change no longer holds
    assert s.errors["n_samples"] == s.errors["data_seed"] == "the data could not be prepared."
    assert s.notice == ""
    s.revert({}, "no such file.", blame=("dataset",))  # nothing to revert: beside the dataset
    assert s.errors["dataset"] == "no such file."
    assert s.trainer is trainer and s.version == version and s.iteration == 3
    s.use_upload("0123456789abcdef")
    assert (s.dataset, s.upload_hash, s.label_column) == ("upload", "0123456789abcdef", "")
    assert "label_column" in s.errors and s.trainer is trainer
    s.close()
    assert s.trainer is None and s.bundle is None and not s.running


def _is_super_call(node) -> bool:
    import ast

    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


# Third-party internals with no public API, each read in one place, by name:
# Panel's per-document stylesheet cache, which widget.load_offline answers from Panel's own
# files so its late stylesheets never go to its CDN (holoviz/panel#5167).
# third-party internals the widget needs to publish BokehJS inline in a notebook cell
THIRD_PARTY_INTERNALS = {
    ("widget.py", "pn.state._stylesheets"),
    ("widget.py", "panel_extension._loaded"),
    ("widget.py", "pyviz_comms.extension._last_execution_count"),
}


def test_views_use_only_the_public_api_of_other_objects():
    """No module of the explorer but the store reads or writes another object's private
    attributes (``session._x``, ``ex._x``): only ``self._x``."""
    import ast
    from pathlib import Path

    import aggmrf_explore.explorer as pkg

    bad = []
    for path in sorted(Path(pkg.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and not _is_super_call(node.value)  # a subclass extending its base's hook
                and (path.name, ast.unparse(node)) not in THIRD_PARTY_INTERNALS
            ):
                bad.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not bad, bad


def test_locked_cache_computes_once_under_concurrency():
    import threading
    import time

    from aggmrf_explore.explorer.store.caches import LockedCache

    cache = LockedCache(2)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.05)
        return object()

    out = []
    threads = [
        threading.Thread(target=lambda: out.append(cache.get("k", compute))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(v is out[0] for v in out)
    cache.get("a", object)
    cache.get("b", object)
    assert cache.peek("k") is None  # least recently used, evicted at maxsize 2


def test_upload_registry_columns_and_eviction():
    from aggmrf_explore.errors import AggMRFError
    from aggmrf_explore.explorer.store.caches import UploadRegistry

    reg = UploadRegistry(maxsize=1)
    h = reg.register(b'a;"b";c\n1;2;3\n')
    assert reg.columns(h) == ["a", "b", "c"]
    reg.register(b"x,y\n1,2\n")
    with pytest.raises(AggMRFError, match="upload it again"):
        reg.columns(h)


# ---------------------------------------------------------------- teaching aids
def test_one_feature_subset_trains_without_best_pair():
    """Building a subset by clicking starts with one feature: it must load (no "best_pair
    needs at least two features" revert), the best pair joins at two features."""
    s = ExplorerSession(dataset="synthetic", n_samples=1000, n_gibbs=200)
    f = s.bundle.all_features
    assert s.propose("features", f[:1]) is None
    assert s.features == f[:1] and s.bundle.layout.n_features == 1
    assert "best_pair" not in s.baselines and "naive_bayes" in s.baselines
    s.step(2)
    assert s.propose("features", f[:2]) is None
    assert s.features == f[:2] and "best_pair" in s.baselines


def test_dataset_switch_returns_hand_set_settings_to_the_defaults():
    s = ExplorerSession(dataset="xor", n_samples=1000, n_gibbs=500)
    s.propose("lambda_theta", 50.0)
    s.propose("step_theta", 2.0)
    s.propose("train_seed", 7)
    assert not s.auto_defaults
    s.propose("dataset", "toy")
    assert s.errors == {}
    assert s.auto_defaults and s.n_gibbs == 10_000 and s.train_seed == 0
    from aggmrf_explore.mrf import default_settings

    d = default_settings(s.bundle.layout, s.bundle.aggregated.n)
    assert (s.lambda_theta, s.step_theta) == (d.lambda_theta, d.step_theta)
    assert s.trainer.settings.lambda_theta == d.lambda_theta


def test_keep_settings_pins_hand_set_values_across_a_switch():
    s = ExplorerSession(dataset="xor", n_samples=1000, n_gibbs=500)
    s.propose("keep_settings", True)
    s.propose("lambda_theta", 50.0)
    s.propose("dataset", "toy")
    assert s.lambda_theta == 50.0 and s.n_gibbs == 500 and not s.auto_defaults


def test_status_never_shows_the_previous_run_under_the_new_dataset():
    s = ExplorerSession(dataset="xor", n_samples=1000, n_gibbs=300)
    s.step(40)
    seen: list[str] = []
    s.param.watch(lambda e: seen.append(e.new), "status")
    s.propose("dataset", "toy")
    stale = [t for t in seen if "toy" in t and "iteration 40" in t]
    assert not stale, stale
    assert "iteration 0" in s.status and s.status.endswith("toy (Table 1)")


def test_routine_notice_expires_after_training(monkeypatch):
    from aggmrf_explore.explorer.store import store

    s = ExplorerSession(dataset="xor", n_samples=1000, n_gibbs=300)
    s.propose("n_samples", 1200)
    assert "changed" in s.notice
    monkeypatch.setattr(store, "NOTICE_SECONDS", 0.0)
    s.play()
    s.tick(0.02)
    s.tick(0.02)
    assert s.notice == ""


def test_divergence_warning_names_the_last_change():
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=200)
    s.step(5)
    s.propose("precondition", False)
    s.propose("step_mu", 10.0)
    s.propose("step_theta", 10.0)
    cause = s.run.divergence_cause()
    assert "α_θ was raised from" in cause and "to 10" in cause and "iteration 5" in cause
    s.reset()  # a fresh run: no change since, the hand-set step sizes are the suspects
    cause = s.run.divergence_cause()
    assert "hand-set step sizes" in cause and "α_θ = 10" in cause


def test_privacy_runs_collect_one_point_per_finished_run():
    s = ExplorerSession(dataset="xor", n_samples=2000, n_gibbs=300)
    s.propose("mechanism", "gaussian")
    s.propose("epsilon", 1.0)
    s.step(25)
    assert s.privacy_point()["epsilon"] == 1.0
    s.propose("epsilon", 5.0)  # re-release: the ε = 1 run is finished
    assert len(s.privacy_runs) == 1
    run = s.privacy_runs[0]
    assert set(run) >= {"epsilon", "nllh", "iterations"}
    assert run["epsilon"] == 1.0 and run["iterations"] == 25 and math.isfinite(run["nllh"])
    s.step(3)
    s.propose("epsilon", 2.0)  # too short a run: no point
    assert len(s.privacy_runs) == 1


def test_triplet_table_moves_xor_toward_the_truth():
    s = ExplorerSession(dataset="xor", n_samples=4000, n_gibbs=1000)
    s.step(150)
    before = frames.xor_frame(s.bundle, s.trainer, s.baselines)
    assert s.propose("triples", True) is None
    assert "X1 × X2 × X3" in s.bundle.layout.table_names
    s.step(300)
    after = frames.xor_frame(s.bundle, s.trainer, s.baselines)
    err_before = np.abs(before["live MRF"] - before["truth"]).max()
    err_after = np.abs(after["live MRF"] - after["truth"]).max()
    assert err_before > 0.1 and err_after < 0.06, (err_before, err_after)
    s.propose("dataset", "toy")  # another dataset: the toggle goes back off
    assert not s.triples


def test_lesson_link_round_trip():
    from aggmrf_explore.explorer.store.lesson import lesson_link, parse_lesson

    settings = {"dataset": "adult", "gradient": "true", "lambda_theta": 10.0, "n_gibbs": 10_000}
    defaults = {"dataset": "xor", "gradient": "rescaled", "lambda_theta": 3.0, "n_gibbs": 10_000}
    link = lesson_link(
        "http://h/explorer", settings, defaults, ["lambda_mu", "step_mu"], "Try <b>λ</b> & see"
    )
    assert "n_gibbs" not in link and "gradient=true" in link
    les = parse_lesson(link.split("?", 1)[1], ["lambda_mu", "step_mu", "dataset"])
    assert les.hide == ["lambda_mu", "step_mu"] and les.text == "Try <b>λ</b> & see"
    assert parse_lesson("hide=bogus,dataset", ["dataset"]).unknown == ["bogus"]


def test_every_failed_change_goes_back_through_the_one_revert(monkeypatch):
    """A refused setting, a release the privacy settings cannot make and a failed load all
    put their settings back with ``ExplorerSession.revert``: the culprit only, its message
    beside its control, the rest applied."""
    from aggmrf_explore.explorer.server.loader import Loader
    from aggmrf_explore.explorer.store import url
    from aggmrf_explore.explorer.store.store import URL_KEYS

    s = ExplorerSession(lazy=True, dataset="xor", n_samples=2000, n_gibbs=300)
    reverted = []
    revert = s.revert
    monkeypatch.setattr(
        s, "revert", lambda good, *a, **k: (reverted.append(good), revert(good, *a, **k))
    )
    shown = []
    loader = Loader(s, on_loaded=lambda: None, on_message=shown.append, on_baselines=lambda: None)
    # a link: unknown features (the load fails on them) and a local ε too small for a
    # usable channel (the release fails on it), with a valid sample size
    query = '?features=["nope"]&n_samples=3000&mechanism=local&epsilon=1e-7'
    assert url.apply_query(s, query, URL_KEYS) == {}
    asyncio.run(loader.load(""))
    assert reverted[0] == {"features": []}
    assert reverted[1] == {"epsilon": s.param["epsilon"].default}
    assert s.features == [] and "nope" in s.errors["features"] and "nope" in shown[0]
    assert s.epsilon == s.param["epsilon"].default and "ε ≥" in s.errors["epsilon"]
    assert (s.n_samples, s.mechanism) == (3000, "local") and s.trainer is not None
    assert not s.busy and s.notice == ""
    # a refused live value: back to the one before, beside its control
    before = s.step_mu
    monkeypatch.setattr(s, "_apply", lambda names: 1 / 0)  # (the change fails downstream)
    assert s.propose("step_mu", before / 2)
    assert reverted[2] == {"step_mu": before} and s.step_mu == before and s.errors["step_mu"]


def test_a_dataset_switched_during_the_first_load_is_loaded(monkeypatch):
    """A teacher switches the dataset while the page's first load is still preparing: the
    store starts no load before data are in place, so the first load must prepare the new
    settings itself instead of ending with nothing in place ("preparing" for ever)."""
    from aggmrf_explore.explorer.server.loader import Loader

    s = ExplorerSession(lazy=True, dataset="xor", n_samples=2000, n_gibbs=300)
    fetch = s.fetch
    calls = []

    def switching_fetch(*a, **k):
        calls.append(s.dataset)
        if len(calls) == 1:
            s.dataset = "toy"  # the click, while the first data are being prepared
        return fetch(*a, **k)

    monkeypatch.setattr(s, "fetch", switching_fetch)
    loaded = []
    loader = Loader(
        s,
        on_loaded=lambda: loaded.append(s.dataset),
        on_message=lambda m: None,
        on_baselines=lambda: None,
    )
    asyncio.run(loader.load(""))
    assert calls == ["xor", "toy"]
    assert s.bundle is not None and s.bundle.key[0] == "toy" and s.trainer is not None
    assert loaded == ["toy"] and loader.loaded and not s.busy
