"""Hostile input, fourth corpus: files written through planted links, names that mean
"here", an unwritable numba cache, an IPv6 address, the DuckDB path's address space and the
smaller flag checks.  Each case ends in one ``error:`` line and exit status 2, or in a
documented acceptance; never a traceback, a file written where the user did not say, or
a file outside the target directory replaced."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ DuckDB address space
_VM_PROBE = textwrap.dedent(
    """
    import sys
    import duckdb, numpy, pyarrow
    from aggmrf_explore import TableLayout
    from aggmrf_explore.tables.big import aggregate_duckdb

    def vm():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize"):
                return int(line.split()[1]) // 1024

    path, n = sys.argv[1], int(sys.argv[2])
    lay = TableLayout.all_pairs([n], ["f"])
    before = vm()
    agg = aggregate_duckdb(path, lay, label="label")
    assert agg.n == n and agg.d[lay.offsets[1]:].sum() == n, "wrong counts"
    print(pyarrow.default_memory_pool().max_memory(), vm() - before)
    """
)


def _parquet(path: Path, n: int) -> None:
    """n records, one feature whose codes are all distinct (0 … n − 1, shuffled), written
    by DuckDB."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(
        f"COPY (SELECT i AS f, CAST(hash(i + 1) % 2 AS INTEGER) AS label FROM range({n}) t(i) "
        f"ORDER BY hash(i)) TO '{path}' (FORMAT parquet)"
    )
    con.close()


def test_duckdb_parquet_path_never_touches_arrows_pool(tmp_path):
    """The mechanism of the regression, small: reading a Parquet file's header through
    pyarrow made the first allocation from Arrow's default pool (mimalloc), which reserves
    about 1 GiB of address space for the rest of the process.  The path must allocate
    nothing from that pool, and its address space must not grow by a gigabyte."""
    path = tmp_path / "records.parquet"
    _parquet(path, 1000)
    proc = subprocess.run(
        [sys.executable, "-c", _VM_PROBE, str(path), "1000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    pool_bytes, grown_mib = map(int, proc.stdout.split())
    assert pool_bytes == 0, f"Arrow's pool allocated {pool_bytes} bytes"
    assert grown_mib < 900, f"address space grew by {grown_mib} MiB"


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000 * 1024, 3_000_000 * 1024))


@pytest.mark.slow
def test_ten_million_distinct_codes_under_3gb_address_space(tmp_path):
    """n = 10⁷ records, K = 10⁷ + 1 rows, through DuckDB's stream under ``ulimit -v
    3000000``: it finishes with the right counts (it stopped with "out of memory")."""
    n = 10_000_000
    path = tmp_path / "records.parquet"
    _parquet(path, n)
    proc = subprocess.run(
        [sys.executable, "-c", _VM_PROBE, str(path), str(n)],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_limit_address_space,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


# --------------------------------------------------------------- files written safely
from aggmrf_explore import AggMRFError  # noqa: E402
from aggmrf_explore import files as files_mod  # noqa: E402
from aggmrf_explore.cli import main  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from hostile.corpus import FAST, make_fixtures  # noqa: E402
from hostile.round3 import SWEEP_FAST, challenge  # noqa: E402

TEMP = re.compile(r"\..+\.[0-9a-f]{16}\.tmp")  # create_file's temporary names
_OPENS: list[tuple] = []
_RECORD = {"on": False}


def _audit(event: str, args: tuple) -> None:
    if _RECORD["on"] and event == "open":
        _OPENS.append(args)


sys.addaudithook(_audit)  # (records only while _RECORD["on"])

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(out: Path) -> list[tuple[str, object, int]]:
    """The opens for writing recorded inside ``out`` (relative names: opened by dir_fd)."""
    found = []
    for path, mode, flags in _OPENS:
        if isinstance(path, int):
            continue  # (an fd already opened, e.g. os.fdopen)
        p = os.fsdecode(path)
        writing = (mode is None and flags & _WRITE_FLAGS) or (
            isinstance(mode, str) and any(ch in mode for ch in "wax+")
        )
        if writing and (not os.path.isabs(p) or p.startswith(str(out))):
            found.append((p, mode, flags))
    return found


def _outside(tmp: Path, name: str) -> Path:
    """A file outside the output directory that a planted link points to."""
    target = tmp / "outside" / name.replace("/", "_")
    target.parent.mkdir(exist_ok=True)
    target.write_text(f"keep {name}\n")
    return target


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return status, out, err


def _one_error(status: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    assert "Traceback" not in err, err
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (status, err)
    return lines[0]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile4")
    make_fixtures(d)
    challenge()(d)
    return d


#: every command that writes files: (id, argv with {d} = fixtures and {o} = output
#: directory, the directory inside {o} its files go to ("" = {o} itself))
WRITERS = [
    ("lessons", ["lessons", "{o}"], ""),
    (
        "aggregate-dir",
        ["aggregate", "--csv", "{d}/good.csv", "--label", "bought", "--out", "{o}/rel"],
        "rel",
    ),
    (
        "aggregate-long",
        [
            "aggregate",
            "--csv",
            "{d}/good.csv",
            "--label",
            "bought",
            "--format",
            "long",
            "--out",
            "{o}/long.csv",
        ],
        "",
    ),
    (
        "predict",
        ["predict", "--model", "{d}/model.json", "--csv", "{d}/test.csv", "--out", "{o}/p.csv"],
        "",
    ),
    (
        "export-json",
        ["run", "--tables", "{d}/release", "--export-model", "{o}/m.json", *FAST, "--json"],
        "",
    ),
    (
        "export-csv",
        ["run", "--tables", "{d}/release", "--export-model", "{o}/m.csv", *FAST, "--json"],
        "",
    ),
    ("sweep", ["sweep", "--dataset", "toy", *SWEEP_FAST, "--out", "{o}/sw"], ""),
    (
        "import-criteo",
        ["import-criteo", "{d}/ch/pairs.csv", "{d}/ch/singles.csv", "--out", "{o}/ch"],
        "ch",
    ),
]


def _argv(template: list[str], d: Path, o: Path) -> list[str]:
    return [a.replace("{d}", str(d)).replace("{o}", str(o)) for a in template]


@pytest.fixture(scope="module")
def written(fixtures, tmp_path_factory) -> dict[str, list[str]]:
    """Per command: the names it writes, from a clean run, and every open for writing
    it made inside its output directory (recorded by an audit hook)."""
    names, opens = {}, {}
    for wid, template, sub in WRITERS:
        o = tmp_path_factory.mktemp(f"clean-{wid}")
        _OPENS.clear()
        _RECORD["on"] = True
        try:
            status = main(_argv(template, fixtures, o))
        finally:
            _RECORD["on"] = False
        assert status == 0, wid
        names[wid] = sorted(p.name for p in (o / sub).iterdir())
        opens[wid] = _writes(o)
    return {"names": names, "opens": opens}


@pytest.mark.parametrize("wid", [w[0] for w in WRITERS])
def test_every_write_is_an_exclusive_unpredictable_temporary_file(wid, written):
    """Every file a command writes is opened once, O_CREAT | O_EXCL | O_NOFOLLOW, under an
    unpredictable hidden name (then renamed): never a plain open of the final name."""
    names, opens = written["names"][wid], written["opens"][wid]
    assert names, f"{wid} wrote nothing"
    assert len(opens) >= len(names), (wid, names, opens)
    for path, mode, flags in opens:
        base = os.path.basename(path)
        assert mode is None, f"{wid}: {base} opened by open(…, {mode!r})"
        need = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        assert flags & need == need, f"{wid}: {base} opened without O_EXCL/O_NOFOLLOW"
        assert TEMP.fullmatch(base), f"{wid}: {base} is not an unpredictable temporary name"
    assert not [n for n in names if TEMP.fullmatch(n)], f"{wid}: temporary file left"


@pytest.mark.parametrize("wid", [w[0] for w in WRITERS])
def test_links_at_predictable_temporary_names_are_never_followed(
    wid, written, fixtures, tmp_path, capsys
):
    """Links planted at the names a careless writer would use (.NAME.tmp, NAME.tmp, NAME~,
    .NAME.swp, NAME.part): the command succeeds, every file it writes is a regular file,
    and no file outside its directory changes."""
    template, sub = next((t, s) for w, t, s in WRITERS if w == wid)
    o = tmp_path / "out"
    (o / sub).mkdir(parents=True)
    planted = {}
    for name in written["names"][wid]:
        for fake in (f".{name}.tmp", f"{name}.tmp", f"{name}~", f".{name}.swp", f"{name}.part"):
            planted[fake] = _outside(tmp_path, fake)
            (o / sub / fake).symlink_to(planted[fake])
    status, out, err = _run(_argv(template, fixtures, o), capsys)
    assert status == 0 and "Traceback" not in err, err
    for name in written["names"][wid]:
        assert not (o / sub / name).is_symlink() and (o / sub / name).is_file(), name
    for fake, target in planted.items():
        assert target.read_text() == f"keep {fake}\n", f"{wid} wrote through {fake}"
        assert (o / sub / fake).is_symlink()


@pytest.mark.parametrize("wid", [w[0] for w in WRITERS])
def test_links_at_final_names_are_refused_and_never_followed(
    wid, written, fixtures, tmp_path, capsys
):
    """A link planted at each name the command writes: one error line naming the link
    (lessons: a changed lesson, replaced only with --force, the link itself), exit 2, and
    the link's target outside the directory unchanged."""
    template, sub = next((t, s) for w, t, s in WRITERS if w == wid)
    names = written["names"][wid]
    for name in names:  # one planted link at a time: each name is checked
        o = tmp_path / f"out-{name}"
        (o / sub).mkdir(parents=True)
        target = _outside(tmp_path, name)
        (o / sub / name).symlink_to(target)
        argv = _argv(template, fixtures, o)
        status, out, err = _run(argv, capsys)
        if wid == "lessons" and name.endswith(".ipynb"):
            assert "changed" in _one_error(status, err)
            status, out, err = _run([*argv, "--force"], capsys)
            assert status == 0, err
            assert not (o / name).is_symlink() and (o / name).is_file()
        elif wid == "lessons":  # the record: replaced, never followed
            assert status == 0, err
            assert not (o / name).is_symlink()
        else:
            assert "symlink" in _one_error(status, err).lower(), (wid, name, err)
        assert target.read_text() == f"keep {name}\n", f"{wid} wrote through {name}"


# ---------------------------------------------------------------- create_file itself
def test_create_file_refuses_a_link_at_the_final_name(tmp_path):
    target = _outside(tmp_path, "x")
    (tmp_path / "f.csv").symlink_to(target)
    with pytest.raises(AggMRFError, match="symlink"):
        files_mod.write_text(tmp_path / "f.csv", "data", "--out")
    assert target.read_text() == "keep x\n"
    files_mod.write_text(tmp_path / "f.csv", "data", "--out", replace_link=True)
    assert not (tmp_path / "f.csv").is_symlink() and (tmp_path / "f.csv").read_text() == "data"
    assert target.read_text() == "keep x\n"


def test_create_file_never_opens_a_guessed_temporary_name(tmp_path, monkeypatch):
    """Even an attacker who guesses the random part (here: forced constant) cannot make
    the write follow a link: the exclusive create fails, nothing outside changes."""
    monkeypatch.setattr(files_mod.secrets, "token_hex", lambda n=8: "0" * (2 * n))
    target = _outside(tmp_path, "guessed")
    (tmp_path / f".f.csv.{'0' * 16}.tmp").symlink_to(target)
    with pytest.raises(AggMRFError, match="temporary file"):
        files_mod.write_text(tmp_path / "f.csv", "data", "--out")
    assert target.read_text() == "keep guessed\n"
    assert not (tmp_path / "f.csv").exists()


def test_create_file_link_planted_during_the_write_is_not_followed(tmp_path):
    """A link planted at the final name while the file is being written (after the first
    check): refused at the second check; the target is unchanged, no temporary remains."""
    target = _outside(tmp_path, "late")
    with pytest.raises(AggMRFError, match="symlink"):
        with files_mod.create_file(tmp_path / "f.csv", "--out") as fh:
            fh.write("data")
            (tmp_path / "f.csv").symlink_to(target)
    assert target.read_text() == "keep late\n"
    assert [p.name for p in tmp_path.iterdir() if TEMP.fullmatch(p.name)] == []


def test_create_file_failure_leaves_the_old_file(tmp_path):
    (tmp_path / "f.csv").write_text("old")
    with pytest.raises(RuntimeError):
        with files_mod.create_file(tmp_path / "f.csv", "--out") as fh:
            fh.write("half")
            raise RuntimeError("disk full")
    assert (tmp_path / "f.csv").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_create_file_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        files_mod.write_bytes(tmp_path / "a.bin", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.bin").stat().st_mode & 0o777 == 0o640


def test_create_file_hard_link_keeps_the_other_name(tmp_path):
    """A hard link planted at the final name: the rename replaces the entry, the other
    name (a file elsewhere) keeps its contents."""
    other = _outside(tmp_path, "hard")
    os.link(other, tmp_path / "f.csv")
    files_mod.write_text(tmp_path / "f.csv", "data", "--out")
    assert other.read_text() == "keep hard\n" and (tmp_path / "f.csv").read_text() == "data"


# ------------------------------------------------------------ names that mean "here"
HERE_DIRS = ["", " ", ".", "./", "sub/..", "{cwd}", "/", "//", "/..", "/dev", "/dev/null", "/proc"]
HERE_FILES = ["", ".", "./", "/", "/dev/null", "/dev/stdout", "/dev/full", "/proc/self/fd/1"]


def _named(template: list[str], name: str, d: Path, cwd: Path) -> list[str]:
    out = _argv(template, d, Path("/unused"))
    flag = out.index("--out") + 1 if "--out" in out else len(out) - 1
    if template[0] == "lessons":
        flag = 1
    out[flag] = name.replace("{cwd}", str(cwd))
    return out


def _named_cases() -> list[tuple[str, list[str], str]]:
    cases = []
    for wid, template, _ in WRITERS:
        export = "--export-model" in template
        names = HERE_DIRS if wid in ("lessons", "aggregate-dir", "import-criteo") else HERE_FILES
        for name in names:
            t = list(template)
            if export:
                t[t.index("--export-model")] = "--out"  # (_named replaces the value)
            cases.append((wid, t, name))
    return cases


@pytest.mark.parametrize(
    "wid,template,name", _named_cases(), ids=[f"{c[0]}:{c[2]!r}" for c in _named_cases()]
)
def test_names_that_mean_here_the_root_or_a_device_are_refused(
    wid, template, name, fixtures, tmp_path, monkeypatch, capsys
):
    """Empty, ".", "/", the current directory by any spelling, and devices: one error line,
    exit 2, and nothing written in the current directory (nor anywhere else)."""
    cwd = tmp_path / "here"
    (cwd / "sub").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    argv = _named(template, name, fixtures, cwd)
    if "--out" in template and template[0] == "run":
        argv[argv.index("--out")] = "--export-model"
    before = sorted(p.name for p in cwd.iterdir())
    status, out, err = _run(argv, capsys)
    _one_error(status, err)
    assert sorted(p.name for p in cwd.iterdir()) == before, (
        f"{wid} wrote into the current directory"
    )


# ------------------------------------------------------------------------ serve's URL
@pytest.mark.parametrize("address,host", [("::1", "[::1]"), ("127.0.0.1", "127.0.0.1")])
def test_serve_prints_a_valid_url_for_an_ipv6_address(address, host, tmp_path):
    """``serve --address ::1`` prints http://[::1]:PORT/explorer (brackets around an IPv6
    host), a URL that parses back to the address and the port it listens on."""
    import signal
    import time
    import urllib.parse

    proc = subprocess.Popen(
        [sys.executable, "-m", "aggmrf_explore.cli", "serve", "--address", address, "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        t0, line = time.monotonic(), ""
        while time.monotonic() - t0 < 120 and "explorer is at" not in line:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "serve ended before printing its URL"
        url = line.split("explorer is at", 1)[1].strip()
        parts = urllib.parse.urlsplit(url)
        assert url.startswith(f"http://{host}:"), url
        assert parts.hostname == address and parts.port and parts.path == "/explorer", url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


# ------------------------------------------------------------- no writable numba cache
def _as_unprivileged() -> list[str]:
    """A command prefix under which the file modes apply as to any user.  The test machine's
    interpreter lives under a directory only root may enter, so (as root) the test drops
    every capability of uid 0 instead of switching user: a read-only directory is then
    read-only for it (no CAP_DAC_OVERRIDE / CAP_FOWNER)."""
    if os.geteuid() != 0:
        return []
    if not Path("/usr/bin/setpriv").exists():
        pytest.skip("setpriv is needed to drop root's capabilities")
    return ["/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]


@pytest.fixture(scope="module")
def read_only_install(tmp_path_factory) -> dict[str, Path]:
    """A copy of the package with no numba cache, every directory read-only, a read-only
    home, and a writable work directory and temporary directory."""
    import shutil

    base = tmp_path_factory.mktemp("ro-install")
    pkg, home, work, tmp = (base / n for n in ("pkg", "home", "work", "tmp"))
    for p in (home, work, tmp):
        p.mkdir()
    shutil.copytree(
        ROOT / "aggmrf_explore",
        pkg / "aggmrf_explore",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    for p in [pkg, *pkg.rglob("*"), home]:
        p.chmod(p.stat().st_mode & ~0o222)
    yield {"pkg": pkg, "home": home, "work": work, "tmp": tmp}
    for p in [pkg, *pkg.rglob("*"), home]:  # (so that pytest can remove them)
        p.chmod(p.stat().st_mode | 0o200)


def _unprivileged(ro: dict[str, Path], argv: list[str], timeout: float = 300, **env_extra):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ro["home"]),
        "TMPDIR": str(ro["tmp"]),
        "PYTHONPATH": str(ro["pkg"]),
        "MPLCONFIGDIR": str(ro["tmp"]),  # (matplotlib's own cache: not this package's)
        **env_extra,
    }
    return subprocess.run(
        [*_as_unprivileged(), sys.executable, *argv],
        cwd=ro["work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _numba_warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("warning:") and "numba" in ln]


def test_read_only_install_really_is_read_only(read_only_install):
    probe = "import pathlib, sys; pathlib.Path(sys.argv[1], 'x').write_text('x')"
    for where in ("home", "pkg"):
        proc = _unprivileged(read_only_install, ["-c", probe, str(read_only_install[where])])
        assert proc.returncode != 0 and "PermissionError" in proc.stderr, where


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "aggmrf_explore.cli", "lessons", "lessons"],
        ["-m", "aggmrf_explore.cli", "aggregate", "--dataset", "toy", "--out", "rel"],
        ["-m", "aggmrf_explore.cli", "run", "--help"],
        ["-c", "import aggmrf_explore.kernels, aggmrf_explore.explorer"],
    ],
    ids=["lessons", "aggregate", "run-help", "import"],
)
def test_without_a_writable_cache_commands_run_with_one_warning(read_only_install, argv):
    """Neither $HOME nor the package directory writable: the command runs (it ended with
    numba's "no locator available" traceback at import) and says once why it may compile
    again and how to fix it."""
    proc = _unprivileged(read_only_install, argv)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    said = _numba_warnings(proc.stderr)
    assert len(said) == 1, proc.stderr
    assert "NUMBA_CACHE_DIR" in said[0] and "python -m aggmrf_explore.kernels" in said[0]


def test_a_writable_numba_cache_dir_means_no_warning(read_only_install, tmp_path):
    cache = read_only_install["tmp"] / "given-cache"
    cache.mkdir(exist_ok=True)
    proc = _unprivileged(
        read_only_install, ["-c", "import aggmrf_explore.kernels"], NUMBA_CACHE_DIR=str(cache)
    )
    assert proc.returncode == 0 and proc.stderr.strip() == "", proc.stderr


_NO_TMP = textwrap.dedent(
    """
    import sys, tempfile
    tempfile.gettempdir = lambda: "/nonexistent-tmp"  # (as if no temporary directory were)
    import aggmrf_explore.kernels
    from aggmrf_explore.kernels import cache
    sys.path.insert(0, sys.argv[1])
    import tiny_kernel
    print(cache.FALLBACK["why"], tiny_kernel.plus_one(41))
    """
)


def test_without_even_a_temporary_directory_kernels_compile_uncached(read_only_install):
    """The last fallback: numba's NullCache (compile in every process), one warning."""
    mod = read_only_install["tmp"] / "mod"
    mod.mkdir(exist_ok=True)
    (mod / "tiny_kernel.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef plus_one(x):\n    return x + 1\n"
    )
    mod.chmod(0o555)
    proc = _unprivileged(read_only_install, ["-c", _NO_TMP, str(mod)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["none", "42"]
    assert len(_numba_warnings(proc.stderr)) == 1, proc.stderr


@pytest.mark.slow
def test_every_command_runs_without_a_writable_cache(read_only_install, fixtures):
    """Every command, as a user who can write neither $HOME nor the package directory
    (compiles the kernels once into the temporary fallback: minutes on 2 cores)."""
    d = fixtures
    fast = ["--iterations", "2", "--gibbs-samples", "200"]
    cli = ["-m", "aggmrf_explore.cli"]
    commands = [
        ["lessons", "l2"],
        ["aggregate", "--csv", f"{d}/good.csv", "--label", "bought", "--out", "r2"],
        ["run", "--tables", f"{d}/release", *fast, "--no-baselines", "--export-model", "m.json"],
        ["predict", "--model", f"{d}/model.json", "--csv", f"{d}/test.csv", "--out", "p.csv"],
        ["xor", "--n", "200", "--iterations", "2"],
        ["sweep", "--dataset", "toy", *SWEEP_FAST, "--out", "sw"],
        ["import-criteo", f"{d}/ch/pairs.csv", f"{d}/ch/singles.csv", "--out", "ch2"],
    ]
    for argv in commands:
        proc = _unprivileged(read_only_install, [*cli, *argv], timeout=900)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (argv, proc.stderr[-3000:])
        assert len(_numba_warnings(proc.stderr)) == 1, (argv, proc.stderr)


# ------------------------------------------------------------------ smaller flag checks
def _earlier_cases(tmp: Path) -> list[tuple[str, str]]:
    """(what --earlier-release is given, the name its error must say) for links to system
    files under every name a release can be given by."""
    cases = []
    for i, system in enumerate(("/etc/passwd", "/etc/hostname", "/proc/self/status")):
        for name in ("link.json", "release.json", "old.csv", "FILE.json"):
            d = tmp / f"s{i}-{name}"
            d.mkdir()
            (d / name).symlink_to(system)
            cases.append((str(d / name), name))
        d = tmp / f"s{i}-dir"
        d.mkdir()
        (d / "release.json").symlink_to(system)
        cases.append((str(d), "release.json"))
    return cases


def test_earlier_release_linked_to_a_system_file_is_named_as_given(fixtures, tmp_path, capsys):
    for given, name in _earlier_cases(tmp_path):
        argv = ["aggregate", "--csv", f"{fixtures}/good.csv", "--label", "bought"]
        argv += ["--mechanism", "laplace", "--epsilon", "1", "--out", str(tmp_path / "o")]
        status, out, err = _run([*argv, "--earlier-release", given], capsys)
        line = _one_error(status, err)
        assert repr(given) in line or name in line, (given, line)
        assert "symlink" in line and "root:" not in line, (given, line)
        assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("seed", ["0", "3", str(2**63 - 1)])
def test_insecure_seed_without_a_mechanism_is_refused(seed, fixtures, tmp_path, capsys):
    argv = ["aggregate", "--csv", f"{fixtures}/good.csv", "--label", "bought"]
    argv += ["--out", str(tmp_path / "o"), "--insecure-seed", seed]
    line = _one_error(*_run([*argv, "--mechanism", "none"], capsys)[::2])
    assert "--insecure-seed" in line and "--mechanism" in line
    assert not (tmp_path / "o").exists()


def test_insecure_seed_with_a_mechanism_is_accepted_with_its_warning(fixtures, tmp_path, capsys):
    argv = ["aggregate", "--csv", f"{fixtures}/good.csv", "--label", "bought"]
    argv += ["--out", str(tmp_path / "o"), "--insecure-seed", "3"]
    status, out, err = _run([*argv, "--mechanism", "laplace", "--epsilon", "1"], capsys)
    assert status == 0, err
    assert any(ln.startswith("warning: --insecure-seed") for ln in err.splitlines()), err


def test_max_modalities_help_states_the_bound_it_enforces(capsys):
    """The help says the range the parser refuses outside of (both ends)."""
    from aggmrf_explore.cli import build_parser

    ic = build_parser()._subparsers._group_actions[0].choices["import-criteo"]
    helps = {a.dest: a.help for a in ic._actions}
    text = " ".join(helps["max_modalities"].split())
    bound = re.search(r"from ([\d,]+) to ([\d,]+)", text)
    assert bound, text
    lo, hi = (int(x.replace(",", "")) for x in bound.groups())
    for value, ok in ((lo - 1, False), (lo, True), (hi, True), (hi + 1, False)):
        argv = ["import-criteo", "p.csv", "s.csv", "--out", "o", "--max-modalities", str(value)]
        if ok:
            assert build_parser().parse_args(argv).max_modalities == value
        else:
            status, out, err = _run(argv, capsys)
            assert f"from {lo:,} to {hi:,}" in _one_error(status, err)


def test_library_writers_write_exclusive_temporary_files(tmp_path):
    """The generator's files (records CSV and Parquet, the challenge-format release) go
    through the same exclusive temporary files as the commands' outputs."""
    import numpy as np

    from aggmrf_explore.datasets.criteo import write_criteo_release, write_records

    card = np.array([3, 4, 2, 5, 3, 2, 4, 3, 2, 3, 2, 4, 3, 2, 3, 2, 4, 3, 2])
    _OPENS.clear()
    _RECORD["on"] = True
    try:
        write_records(tmp_path / "r.csv", 300, seed=1, chunk=100)
        write_records(tmp_path / "r.parquet", 300, seed=1, chunk=100)
        write_criteo_release(
            tmp_path / "rel", n=500, seed=1, n_sample=50, n_test=50, chunk=200, cardinalities=card
        )
    finally:
        _RECORD["on"] = False
    opens = _writes(tmp_path)
    assert len(opens) >= 7, opens
    for path, mode, flags in opens:
        assert mode is None and flags & os.O_EXCL and flags & os.O_NOFOLLOW, (path, mode)
        assert TEMP.fullmatch(os.path.basename(path)), path
    import pandas as pd

    assert len(pd.read_csv(tmp_path / "r.csv")) == 300
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 300


def test_explorer_disk_cache_never_writes_through_a_link(tmp_path):
    """The explorer's disk cache (baselines, figures) writes through files.write_text: a link
    planted at the cache file's name is refused (the write fails, the cache is skipped) and
    the link's target, outside the cache, is untouched; a plain write lands."""
    from aggmrf_explore.explorer.store.caches import read_json, write_json

    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "planted.json").symlink_to(outside)
    assert write_json(cache / "planted.json", {"a": 1}) is False
    assert outside.read_text() == "precious"
    assert write_json(cache / "fine.json", {"a": 1}) is True
    assert read_json(cache / "fine.json") == {"a": 1}
    assert sorted(p.name for p in cache.iterdir()) == ["fine.json", "planted.json"]


@pytest.fixture(scope="module")
def noisy_release(tmp_path_factory):
    """A noisy release as aggregate writes it (XOR, 4 000 records, discrete Gaussian ε = 1)."""
    from aggmrf_explore.cli import main

    out = tmp_path_factory.mktemp("forged") / "rel"
    argv = ["aggregate", "--dataset", "xor", "--n", "4000", "--out", str(out)]
    assert main([*argv, "--mechanism", "gaussian", "--epsilon", "1"]) == 0
    return out


@pytest.mark.parametrize(
    "forge, says",
    [
        (
            {"intercept": {"count": -10_000, "label_sum": 50}},
            "'intercept' count -10000 is negative",
        ),
        ({"intercept": {"count": 4000, "label_sum": 9000}}, "label_sum 9000 > its count"),
        ({"intercept": {"count": 40_000, "label_sum": 2000}}, "'intercept' count 40000"),
        ({"n": 400_000}, "'n' = 400,000"),
        ({"intercept": {"count": "many", "label_sum": 1}}, "intercept"),
        ({"intercept": [1, 2]}, "intercept"),
    ],
    ids=["negative-count", "label-sum-above", "count-10x", "n-100x", "count-text", "not-object"],
)
def test_forged_declarations_of_a_noisy_release_are_refused(
    noisy_release, tmp_path, forge, says, capsys
):
    """Every number release.json declares beside its tables (the intercept's count and label
    sum, n) is checked against the tables and each other, within what the declared noise
    explains: a forged one is one error: line naming it, and nothing trains."""
    import json
    import shutil

    from aggmrf_explore.cli import main

    rel = tmp_path / "rel"
    shutil.copytree(noisy_release, rel)
    meta = json.loads((rel / "release.json").read_text())
    meta.update(forge)
    (rel / "release.json").write_text(json.dumps(meta))
    code = main(["run", "--tables", str(rel), "--iterations", "5", "--json"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and "Traceback" not in err
