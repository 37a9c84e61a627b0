"""``aggmrf-explore serve`` runs its server with Python's small objects on the C allocator.

Under Python's own allocator a class's leftovers pin 1 MiB arenas and the server's memory
stays ≈ 30 % above its one-session size after the class; under ``PYTHONMALLOC=malloc`` the
explorer's ``malloc_trim`` returns the free pages (``benchmarks/explorer_load.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aggmrf_explore.cli.serve import restart_with_system_allocator


def test_restart_keeps_a_choice_already_made(monkeypatch):
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")
    assert restart_with_system_allocator(["serve"]) is None  # returned: no restart


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_the_serve_command_restarts_itself_under_the_c_allocator(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    out = tmp_path / "serve.log"
    with open(out, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aggmrf_explore.cli", "serve", "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    try:
        t0 = time.perf_counter()
        while "The explorer is at" not in out.read_text():
            assert proc.poll() is None, out.read_text()
            assert time.perf_counter() - t0 < 120, out.read_text()
            time.sleep(0.2)
        # the same process (exec keeps the pid), now with the variable set before Python began
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        assert b"PYTHONMALLOC=malloc" in environ
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:5] == [b"-m", b"aggmrf_explore.cli", b"serve", b"--port"]
        assert out.read_text().count("The explorer is at") == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
