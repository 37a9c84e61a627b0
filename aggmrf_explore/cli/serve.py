"""``aggmrf-explore serve``: the live explorer from the installed package (Panel's server).

The same page as ``panel serve apps/explorer.py`` in a clone
(:func:`aggmrf_explore.explorer.server.serve.explorer_document`), with the options a class needs:
the port and address, the origins a browser may open it from, a path prefix for a reverse
proxy, and opening a browser.  ``--num-procs`` other than 1 is refused with one ``error:``
line before anything starts (:func:`check_num_procs`): the explorer is one server process
that trains on every core itself.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = [
    "cmd_serve",
    "check_prefix",
    "check_num_procs",
    "check_num_threads",
    "restart_with_system_allocator",
]


def restart_with_system_allocator(argv: list[str]) -> None:
    """Run this command again as ``python -m aggmrf_explore.cli *argv`` with
    ``PYTHONMALLOC=malloc``, unless ``PYTHONMALLOC`` is already set (then return).

    Why: Python's own allocator keeps each 1 MiB arena of small objects until every
    object in it is freed.  A class's sessions allocate millions of small objects,
    and the few that outlive them (caches, interned names) pin their arenas, so after
    the class the server stayed ≈ 30 % above its one-session size.  Under the C
    allocator the explorer's ``malloc_trim`` after the last close hands back every free
    page instead (docs/explorer.md, "Sessions and memory").  Only on POSIX; the
    variable must be set before Python starts, hence the restart.
    """
    if os.environ.get("PYTHONMALLOC") or os.name != "posix":
        return
    env = {**os.environ, "PYTHONMALLOC": "malloc"}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "aggmrf_explore.cli", *argv], env)


def check_prefix(prefix: str) -> str:
    """``prefix`` as ``/a/b`` ("" for none); a prefix that is not a plain URL path raises
    :class:`AggMRFError` (a proxy's path holds letters, digits and ``/ . _ - ~`` only)."""
    from ..errors import AggMRFError

    path = prefix.strip("/")
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-~")
    if not set(path) <= allowed or "//" in path or ".." in path.split("/"):
        raise AggMRFError(
            f"--prefix {prefix!r} is not a plain URL path — give one like /user/alice/proxy/5006."
        )
    return "/" + path if path else ""


def check_num_procs(num_procs: int) -> None:
    """``--num-procs`` other than 1 raises :class:`AggMRFError` (one ``error:`` line, exit 2):
    the explorer runs as one server process that trains on every core itself (the words of
    :mod:`aggmrf_explore.explorer.server.one_process`, also on the page of ``panel serve
    apps/explorer.py --num-procs N``)."""
    if num_procs == 1:
        return  # (without importing the explorer's package)
    from ..explorer.server.one_process import check_num_procs as check

    check(num_procs)


def check_num_threads() -> None:
    """``PANEL_NUM_THREADS`` in the environment raises :class:`AggMRFError` (one ``error:``
    line, exit 2): Panel would run the sessions' callbacks in threads, beside the event loop
    that trains them (:mod:`aggmrf_explore.explorer.server.one_process`)."""
    if "PANEL_NUM_THREADS" not in os.environ:
        return  # (without importing the explorer's package)
    from ..explorer.server.one_process import check_num_threads as check

    check(os.environ)


def cmd_serve(args: argparse.Namespace) -> int:
    """``serve``: print the page's URL, then serve until Ctrl-C; returns the exit status."""
    from ..explorer.server import serve as served

    check_num_procs(args.num_procs)
    check_num_threads()
    prefix = check_prefix(args.prefix)

    def started(url: str) -> None:
        print(f"The explorer is at {url}", flush=True)
        print("Press Ctrl-C to stop it.", flush=True)

    served.serve(
        port=args.port,
        address=args.address,
        allow_websocket_origin=args.allow_websocket_origin,
        prefix=prefix,
        num_procs=args.num_procs,
        show=args.show,
        on_start=started,
    )
    return 0
