"""A first start, as a teacher meets it: a fresh numba cache, ``panel serve``, Play.

Training starts within seconds of the page showing (the numpy chain, while a child
process compiles the fast sampler), the status line says which sampler runs, the
sessions move to the compiled sampler once it is there and keep training, and the
compiling child ends with the server (none outlives it).  The bounds are generous (a
shared CI machine); ``benchmarks/explorer_sessions.py --starts-only`` measures the real
timings.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .test_browser import Page, browser, free_port, slack, start_server, stop_server  # noqa: F401

pytestmark = pytest.mark.browser


def compilers_of(cache_dir: Path) -> list[int]:
    """PIDs of the processes whose NUMBA_CACHE_DIR is ``cache_dir`` (the server and its
    compiling children)."""
    pids = []
    needle = f"NUMBA_CACHE_DIR={cache_dir}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def first_start_page(browser, tmp_path, monkeypatch):  # noqa: F811
    """A server on an empty numba cache (a first start) and its first page."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    port = free_port()
    proc, _ = start_server(port)
    t0 = time.perf_counter()
    p = Page(browser, f"http://127.0.0.1:{port}/explorer", timeout=120)
    return proc, p, time.perf_counter() - t0


def test_a_first_start_trains_at_once_on_the_numpy_sampler(browser, tmp_path, monkeypatch):  # noqa: F811
    proc, p, shown = first_start_page(browser, tmp_path, monkeypatch)
    try:
        assert "numpy sampler" in p.status(), p.status()  # the fast sampler still compiles
        trained = p.play()
        limit = 15 * slack()
        print(f"first start: page ready {shown:.1f} s, Play trains after {trained:.1f} s")
        assert trained < limit, f"Play trained after {trained:.1f} s (limit {limit:.0f} s)"
        a = p.iteration()
        p.page.wait_for_timeout(2000)
        assert p.iteration() > a
        assert "numpy sampler" in p.status() or "numpy" not in p.status()
        assert not p.errors, p.errors
        p.close()
    finally:
        stop_server(proc)


@pytest.mark.slow  # the whole compile: minutes on a busy 2-core machine
def test_a_first_start_moves_to_the_compiled_sampler(browser, tmp_path, monkeypatch):  # noqa: F811
    proc, p, _ = first_start_page(browser, tmp_path, monkeypatch)
    try:
        p.play()
        before = p.iteration()
        p.wait_status(lambda t: "numpy" not in t and t.startswith("training"), timeout=600)
        after = p.iteration()
        p.page.wait_for_timeout(2000)
        assert p.iteration() > after >= before
        assert not p.errors, p.errors
        p.close()
    finally:
        stop_server(proc)


def test_the_compiling_child_ends_with_its_server(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    port = free_port()
    proc, _ = start_server(port)
    try:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/explorer", timeout=120) as r:
            assert r.status == 200  # a first page starts the compiling child
        deadline = time.perf_counter() + 30
        while len(compilers_of(tmp_path)) < 2 and time.perf_counter() < deadline:
            time.sleep(0.2)
        assert len(compilers_of(tmp_path)) >= 2, "no compiling child started"
    finally:
        proc.kill()  # the server dies without cleaning up
        proc.wait(10)
    deadline = time.perf_counter() + 10
    while compilers_of(tmp_path) and time.perf_counter() < deadline:
        time.sleep(0.2)
    assert not compilers_of(tmp_path), "a compiling child outlived its server"
