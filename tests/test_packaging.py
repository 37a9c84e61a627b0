"""The package as a teacher installs it: the sdist and the wheel, their metadata, and every
command of the README's "Install for a course", run from a fresh virtual environment.

What is checked
---------------
* ``python -m build`` makes the sdist, then the wheel *from the sdist* (build's default), so
  the sdist provably holds what the wheel needs; the sdist also carries the tests and what
  they read.  ``twine check --strict`` passes on both.  The wheel holds the data, the lessons,
  the licence files and the metadata an index page shows (version, classifiers, URLs).
* The wheel installed into a new virtual environment outside the source tree, and the
  README's commands run one by one from an empty directory: ``pip install``, ``--version``,
  ``serve`` (opened in chromium: the page loads, Play trains, the plot is drawn, the
  downloads work), ``lessons`` and ``jupyter execute`` of the first lesson.

How the environment is made, and why
------------------------------------
The suite runs offline and in a ~20 min budget, so the new environment cannot download its
dependencies, and copying them (≈ 1.5 GB) would be slow.  It is a plain ``python -m venv``
(with pip) whose site-packages holds one ``.pth`` file naming a *view* of the running
interpreter's site-packages: a directory of symbolic links to every installed distribution
except this package (its files, its ``.dist-info`` and setuptools' editable-install hooks).
So the dependencies are importable and count as installed for pip, while ``aggmrf_explore``
can come only from the wheel; the test checks that ``aggmrf_explore.__file__`` lies in the
new environment.  ``pip install`` runs as written in the README plus ``--no-index
--find-links DIST`` (the built wheel is the only "index"); the dependencies' console scripts
(``jupyter``, ``jupyter-execute``, …) are written into the environment's ``bin`` as pip
would have written them had it installed them there.  Every command runs with that ``bin``
first on ``PATH`` and without the running environment's ``bin``; a ``serve`` command runs
with ``--port 0`` (a free port: 5006 may be taken) and is stopped once checked.
"""

# ruff: noqa: F811  (the browser fixture of tests/test_browser.py is imported, then requested)
from __future__ import annotations

import email
import importlib.metadata
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

import aggmrf_explore
from tests.test_browser import browser  # noqa: F401 - fixture
from tests.test_browser_proxy import check_explorer, start_serve, stop_serve

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Install for a course"
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".venv*",
    ".ipynb_checkpoints",
    "out",
)


def NOT_SOURCE(directory: str, names: list[str]) -> set[str]:  # noqa: N802 - shutil's ignore
    """What the copy of the source tree leaves out: build and cache directories, and the
    clone's own ``screenshots/`` output (not ``docs/screenshots/``, which is tracked)."""
    ignored = set(_NOT_SOURCE(directory, names))
    if Path(directory) == ROOT and "screenshots" in names:
        ignored.add("screenshots")
    return ignored


TIMES: dict[str, float] = {}  # phase → seconds, printed at the end (pytest -s shows them)


def run(cmd: list[str], timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd``; fail the test with its output unless it exits 0."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert out.returncode == 0, (
        f"{cmd} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    )
    return out


def readme_commands() -> list[str]:
    """The command lines of the README's "Install for a course" code blocks, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", section, flags=re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of the source tree (the shared working
    tree gets no build/ or egg-info), the wheel from the sdist; checked by twine."""
    tmp = tmp_path_factory.mktemp("build")
    src, out = tmp / "src", tmp / "dist"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCE, symlinks=True)
    t0 = time.perf_counter()
    # --no-isolation: build with this environment's setuptools (an isolated build would
    # download one, and the suite runs offline)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)])
    TIMES["build sdist + wheel"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    run([sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())])
    TIMES["twine check"] = time.perf_counter() - t0
    return out


def _one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, f"{pattern}: {found}"
    return found[0]


def test_sdist_rebuilds_the_wheel_and_carries_the_tests(dist):
    version = aggmrf_explore.__version__
    sdist = _one(dist, f"aggmrf_explore-{version}.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = [
        "pyproject.toml",
        "MANIFEST.in",
        "LICENSE",
        "README.md",
        ".ci/run",
        "aggmrf_explore/__init__.py",
        "aggmrf_explore/data/adult.data.gz",
        "aggmrf_explore/data/CITATION.md",
        "aggmrf_explore/lessons/01_aggregated_data.ipynb",
        "tests/conftest.py",
        "tests/__init__.py",
        "tests/test_packaging.py",
        "tests/hostile/corpus.py",
        "apps/explorer.py",
        "notebooks/tools/nbtools.py",
        "benchmarks/hashing.py",
    ]
    if (ROOT / ".git").exists() and shutil.which("git"):  # a clone: every tracked file
        tracked = run(["git", "ls-files"], cwd=ROOT).stdout.splitlines()
        needed += [t for t in tracked if t != ".gitignore" and (ROOT / t).is_file()]
    missing = [n for n in needed if n not in names]
    assert not missing, f"the sdist lacks {missing[:20]}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]

    wheel = _one(dist, f"aggmrf_explore-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        files = set(z.namelist())
        meta = email.message_from_bytes(z.read(f"aggmrf_explore-{version}.dist-info/METADATA"))
        entry_points = z.read(f"aggmrf_explore-{version}.dist-info/entry_points.txt").decode()
    lessons = sorted(p.name for p in (ROOT / "aggmrf_explore" / "lessons").glob("*.ipynb"))
    assert len(lessons) == 6
    for name in lessons:
        assert f"aggmrf_explore/lessons/{name}" in files
    for name in ("adult.data.gz", "adult.test.gz", "bank-additional-full.csv.gz", "checksums.json"):
        assert f"aggmrf_explore/data/{name}" in files
    lic = f"aggmrf_explore-{version}.dist-info/licenses/"
    assert f"{lic}LICENSE" in files and f"{lic}aggmrf_explore/data/CITATION.md" in files
    assert not [f for f in files if f.startswith(("tests/", "notebooks/", "apps/"))]
    assert meta["Version"] == version
    assert meta["License-Expression"] == "MIT"
    assert "Intended Audience :: Education" in meta.get_all("Classifier")
    urls = " ".join(meta.get_all("Project-URL"))
    assert "arxiv.org/abs/2210.02450" in urls and "10.24432/C5XW20" in urls
    assert "Install for a course" in meta.get_payload()  # the README is the index page
    assert "aggmrf-explore = aggmrf_explore.cli:main" in entry_points


def _dependency_view(view: Path) -> Path:
    """A directory of links to everything installed for the running interpreter except
    this package (see the module docstring)."""
    view.mkdir()
    ours = ("aggmrf_explore", "aggmrf-explore", "__editable__", "__pycache__")
    sites = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    sites |= {d for d in (*site.getsitepackages(), site.getusersitepackages()) if d in sys.path}
    for site_dir in sorted(sites):
        for entry in Path(site_dir).iterdir():
            if entry.name.lower().startswith(ours) or entry.suffix == ".pth":
                continue
            if not (view / entry.name).exists():
                (view / entry.name).symlink_to(entry)
    return view


def _fresh_venv(base: Path) -> Path:
    """A new virtual environment that sees the dependencies but not this package."""
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    site_dir = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(site_dir.stdout.strip()) / "zz_dependencies.pth").write_text(
        str(_dependency_view(base / "dependencies")) + "\n"
    )
    return venv


def _console_scripts(venv: Path) -> None:
    """The dependencies' console scripts in the venv's bin, as pip writes them."""
    py = venv / "bin" / "python"
    for ep in importlib.metadata.entry_points(group="console_scripts"):
        target = venv / "bin" / ep.name
        if target.exists() or ep.dist is None or ep.dist.name.lower() == "aggmrf-explore":
            continue
        module, _, attr = ep.value.partition(":")
        target.write_text(
            f"#!{py}\nimport sys\nfrom {module} import {attr.split('.')[0]}\nsys.exit({attr}())\n"
        )
        target.chmod(0o755)


def _environment(venv: Path) -> dict[str, str]:
    """The venv's bin first on PATH; no directory holding another aggmrf-explore or jupyter."""
    others = [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not any((Path(d) / n).exists() for n in ("aggmrf-explore", "jupyter"))
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(
        PATH=os.pathsep.join([str(venv / "bin"), *others]),
        VIRTUAL_ENV=str(venv),
        PYTHONNOUSERSITE="1",
    )
    return env


def _serve(words: list[str], cwd: Path, env: dict, browser, venv: Path) -> None:
    """Start a README ``serve`` command on a free port, check it, stop it."""
    if "--port" in words:
        words[words.index("--port") + 1] = "0"
    else:
        words += ["--port", "0"]
    words[0] = str(venv / "bin" / words[0])
    t0 = time.perf_counter()
    proc, url = start_serve(words, cwd=cwd, env=env, timeout=180)
    try:
        if "--prefix" in words:  # the page answers under the prefix (the proxy test opens it)
            prefix = words[words.index("--prefix") + 1]
            assert f":{url.split(':')[2].split('/')[0]}{prefix}/explorer" in url, url
            with urllib.request.urlopen(url, timeout=60) as r:
                assert r.status == 200 and b"bokeh" in r.read()
        else:
            check_explorer(browser, url).close()
            TIMES["serve → page checked in chromium"] = time.perf_counter() - t0
        log = Path(proc.log_path).read_text()
        assert "Traceback" not in log, log[-3000:]
        # the server runs the installed package, not the clone
        assert str(ROOT) not in log, log[-3000:]
    finally:
        stop_serve(proc)


@pytest.mark.browser
def test_installed_wheel_runs_the_course_commands(dist, browser, tmp_path):
    t0 = time.perf_counter()
    venv = _fresh_venv(tmp_path)
    TIMES["fresh venv"] = time.perf_counter() - t0
    work = tmp_path / "course-room"  # an empty directory: no source anywhere near
    work.mkdir()
    env = _environment(venv)
    py = str(venv / "bin" / "python")
    commands = readme_commands()
    assert commands[0].startswith("pip install aggmrf-explore"), commands
    assert sum(c.startswith("aggmrf-explore serve") for c in commands) >= 1
    for line in commands:
        words = shlex.split(line)
        t1 = time.perf_counter()
        if words[0] == "pip":  # offline: the built wheel is the index
            offline = ["--no-index", "--find-links", str(dist)]
            run([py, "-m", "pip", *words[1:], *offline], cwd=work, env=env)
            _console_scripts(venv)
            code = "import aggmrf_explore; print(aggmrf_explore.__file__)"
            where = run([py, "-c", code], cwd=work, env=env).stdout.strip()
            assert Path(where).is_relative_to(venv), f"aggmrf_explore imported from {where}"
        elif words[:2] == ["aggmrf-explore", "serve"]:
            _serve(words, work, env, browser, venv)
        else:
            out = run(words, cwd=work, env=env, timeout=600)
            if words[:2] == ["aggmrf-explore", "--version"]:
                assert out.stdout.strip() == f"aggmrf-explore {aggmrf_explore.__version__}"
            if words[:2] == ["aggmrf-explore", "lessons"]:
                copied = work / words[2]
                for shipped in (ROOT / "aggmrf_explore" / "lessons").glob("*.ipynb"):
                    assert (copied / shipped.name).read_bytes() == shipped.read_bytes()
            if words[:2] == ["jupyter", "execute"]:  # the kernel is the venv's python
                code = (
                    "from jupyter_client.kernelspec import KernelSpecManager as K; "
                    "print(K().get_kernel_spec('python3').argv[0])"
                )
                argv0 = run([py, "-c", code], cwd=work, env=env).stdout.strip()
                resolved = Path(shutil.which(argv0, path=env["PATH"]) or argv0)
                assert resolved.parent == venv / "bin", f"the lesson ran on {resolved}"
        TIMES.setdefault(line, time.perf_counter() - t1)
    print("\n".join(f"{v:7.1f} s  {k}" for k, v in TIMES.items()))
