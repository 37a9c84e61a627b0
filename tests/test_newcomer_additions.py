"""Adding a mechanism or a dataset, as a newcomer would: in a scratch copy of the package,
a new central mechanism is one new file (its class) and one registry entry; a new dataset
is one new file (its loader) and one spec line.  Then every surface shows it, without
another edit: the settings' domain, the command line, the explorer's buttons and menus,
the URL decoder, the noise text and the noise histogram, and the rules between settings.

The copy is imported in a child process (``PYTHONPATH`` first), so the installed package
is not touched.  Only the two folders edited are copied; the others are links to the
package (so the compiled kernels' cache is the package's own).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aggmrf_explore

PACKAGE = Path(aggmrf_explore.__file__).parent

GEOMETRIC = '''
"""A geometric mechanism that spends ε on the counts only: t = Δ1 / (ε/2) (a scratch test)."""

from dataclasses import dataclass
from typing import ClassVar

from .mechanisms import IntegerNoise, LaplaceFamily


@dataclass(frozen=True)
class GeometricMechanism(IntegerNoise, LaplaceFamily):
    name: ClassVar[str] = "geometric"
    label: ClassVar[str] = "geometric (half ε)"
    color: ClassVar[str] = "#2ca02c"

    @property
    def scale(self) -> float:
        return 2.0 * self.l1_sensitivity / self.epsilon

    @property
    def std(self) -> float:
        import math

        q = math.exp(-1.0 / self.scale)
        return math.sqrt(2.0 * q) / (1.0 - q)
'''

TINY = '''
"""A tiny generated dataset (a scratch test): the XOR generator at 200 records."""

from .generated import xor


def tiny(n: int = 200, seed: int = 0):
    return xor(n=n, seed=seed)
'''

GEOMETRIC_IMPORT = "from .geometric import GeometricMechanism\n"
GEOMETRIC_LINE = '    "geometric": GeometricMechanism,\n'
TINY_IMPORT = "from .tiny import tiny\n"
BANK_SPEC = '        DatasetSpec("bank", "Bank marketing", "Bank marketing", bank, "bundled"),\n'
TINY_SPEC = (
    '        DatasetSpec("tiny", "tiny XOR", "Tiny XOR (200 records)", tiny, "generated"),\n'
)

CHECKS = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
out = {}
from aggmrf_explore import privacy
from aggmrf_explore.settings import setting, check_combination, SettingError
out["choices"] = list(setting("mechanism").choices)
out["release_names"] = list(privacy.registry.release_names())
try:
    check_combination({"mechanism": "geometric", "epsilon": 1.0, "delta": 1e-7})
    out["delta_refused"] = ""
except SettingError as e:
    out["delta_refused"] = str(e)
from aggmrf_explore.explorer.views.controls import mechanism_options
from aggmrf_explore.explorer.store.problems import DATASET_MENU, DATASET_NAMES
from aggmrf_explore.explorer.store.store import URL_KEYS, ExplorerSession
import holoviews as hv
import holoviews.plotting.bokeh  # the renderer, without pn.extension()
hv.Store.set_current_backend("bokeh")
from aggmrf_explore.explorer.store import frames, url
from aggmrf_explore.explorer.views import privacy_plots
from aggmrf_explore.explorer.views.noise_text import noise_text
out["buttons"] = mechanism_options()
out["store_mechanisms"] = list(ExplorerSession.param["mechanism"].objects)
out["store_datasets"] = list(ExplorerSession.param["dataset"].objects)
out["menu"] = DATASET_MENU
s = ExplorerSession(lazy=True)
out["url_refused"] = url.apply_query(s, "?dataset=tiny&mechanism=geometric&epsilon=2", URL_KEYS)
out["url_values"] = [s.dataset, s.mechanism, s.epsilon]
s = ExplorerSession(dataset="tiny", mechanism="geometric", epsilon=2.0, n_gibbs=200)
s.step(3)
out["iteration"] = s.iteration
out["status_name"] = DATASET_NAMES[s.bundle.key[0]]
out["noise_text"] = noise_text(s)
nf = frames.noise_frame(s.data, s.mechanism, s.mechanism_obj)
noise = nf["noise"].to_numpy()
out["integer_noise"] = bool((noise == noise.round()).all() and (noise != 0).any())
out["scale"] = s.mechanism_obj.scale
fig = privacy_plots.noise_histogram(noise, s.mechanism_obj.std, s.mechanism, s.mechanism_obj.pmf)
out["histogram_labels"] = [el.label for el in fig]
s.close()
from aggmrf_explore.cli import main
import contextlib, io
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    code = main(["run", "--dataset", "tiny", "--mechanism", "geometric", "--epsilon", "2",
                 "--iterations", "30", "--no-baselines", "--json"])
out["cli_code"] = code
out["cli_noise"] = json.loads(buf.getvalue())["noise"]
print("RESULT " + json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A copy of the package with a geometric mechanism and a tiny dataset added, and the
    files the additions touched (relative paths)."""
    root = tmp_path_factory.mktemp("newcomer")
    pkg = root / "aggmrf_explore"
    pkg.mkdir()
    for entry in PACKAGE.iterdir():
        if entry.name in ("privacy", "datasets"):
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(entry, pkg / entry.name, ignore=ignore)
        elif entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    touched = []

    def write(rel: str, text: str) -> None:
        (pkg / rel).write_text(text, encoding="utf-8")
        touched.append(rel)

    def insert_after(rel: str, anchor: str, lines: str) -> None:
        text = (pkg / rel).read_text(encoding="utf-8")
        assert text.count(anchor) == 1, anchor
        write(rel, text.replace(anchor, anchor + lines))

    # the mechanism: its class, and its entry in the registry (an import and a line)
    write("privacy/geometric.py", GEOMETRIC)
    insert_after("privacy/registry.py", "from ..errors import AggMRFError\n", GEOMETRIC_IMPORT)
    insert_after("privacy/registry.py", '    "local": RandomizedResponse,\n', GEOMETRIC_LINE)
    # the dataset: its loader, and its spec (an import and a line)
    write("datasets/tiny.py", TINY)
    insert_after("datasets/catalog.py", "from .bundled import adult, bank\n", TINY_IMPORT)
    insert_after("datasets/catalog.py", BANK_SPEC, TINY_SPEC)
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CHECKS],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-3000:]
    return sorted(set(touched)), json.loads(line[len("RESULT ") :])


def test_a_mechanism_and_a_dataset_each_touch_two_files(scratch):
    touched, _ = scratch
    assert touched == [
        "datasets/catalog.py",
        "datasets/tiny.py",
        "privacy/geometric.py",
        "privacy/registry.py",
    ]


def test_the_new_mechanism_is_on_every_surface(scratch):
    _, out = scratch
    assert "geometric" in out["choices"] and "geometric" in out["store_mechanisms"]
    assert out["buttons"]["geometric (half ε)"] == "geometric"
    assert "geometric" in out["release_names"]  # aggregate offers it: integer noise
    assert out["url_refused"] == {} and out["url_values"] == ["tiny", "geometric", 2.0]
    # its own scale rule, its own words, its pmf in the histogram
    assert out["integer_noise"]
    assert f"{out['scale']:.3g}" in out["noise_text"], out["noise_text"]
    assert "**geometric (half ε)**" in out["noise_text"]
    assert any(str(lab).startswith("geometric (half ε) pmf") for lab in out["histogram_labels"])
    # the command line trains with it and reports it
    assert out["cli_code"] == 0 and out["cli_noise"]["mechanism"] == "geometric"
    # the rules know which settings it uses: no δ (a Laplace-family mechanism)
    assert out["delta_refused"].startswith("δ (delta) goes only with gaussian or discrete_gaussian")


def test_the_new_dataset_is_on_every_surface(scratch):
    _, out = scratch
    assert "tiny" in out["store_datasets"]
    assert out["menu"]["Tiny XOR (200 records)"] == "tiny"
    assert out["iteration"] == 3 and out["status_name"] == "tiny XOR"
