"""Shared fixtures: small, seeded problems so the suite stays fast."""

from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import TableLayout, aggregate


@pytest.fixture(scope="session")
def xor_problem():
    """50 000 XOR records (seeded), all singles + pairs, exact aggregates."""
    from aggmrf_explore.experiment import prepare

    return prepare("xor", n=50_000, seed=0)


@pytest.fixture(scope="session")
def toy_problem():
    from aggmrf_explore.experiment import prepare

    return prepare("toy")


@pytest.fixture
def random_layout_data():
    """A small random layout (3 features, M = 2, 3, 4) with 5 000 random records."""
    rng = np.random.default_rng(7)
    lay = TableLayout.all_pairs([2, 3, 4])
    X = np.column_stack([rng.integers(0, m, 5000) for m in (2, 3, 4)])
    y = (rng.random(5000) < 0.3 + 0.2 * (X[:, 0] == 1)).astype(int)
    return lay, X, y, aggregate(X, y, lay)


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory):
    """One Jupyter server (JupyterLab 4 and Notebook 7: ``tests.test_jupyterlab.jupyter_lab``)
    for the run, started by the first test that asks for it: the README notebook's test and
    the lessons' test put their notebooks in its root and shut their kernels down when done
    (a server's start costs seconds, once instead of once per module).  Yields (url, root)."""
    from tests.test_jupyterlab import jupyter_lab

    root = tmp_path_factory.mktemp("jupyter")
    with jupyter_lab(root) as url:
        yield url, root


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """Close the browser tests' shared chromium (``browser`` in tests/test_browser.py) once
    the next test does not ask for it, or the run ends."""
    if getattr(item.config, "aggmrf_chromium", None) is None:
        return
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        from tests.test_browser import close_shared_browser

        close_shared_browser(item.config)


@pytest.fixture(scope="module")
def worker():
    """A training worker process (``trainer_worker.TrainerWorker``), one per test module."""
    from aggmrf_explore.trainer_worker import TrainerWorker

    w = TrainerWorker()
    assert w.wait_ready(120), "the worker process did not start"
    yield w
    w.close()
