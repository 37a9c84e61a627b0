"""Hostile input, fourth corpus: files written through planted links, names that mean
"here", an unwritable numba cache, an IPv6 address, the DuckDB path's address space and the
smaller flag checks.  Each case ends in one ``error:`` line and exit status 2, or in a
documented acceptance; never a traceback, a file written where the user did not say, or
a file outside the target directory replaced."""

from __future__ import annotations

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
