"""The explorer is served by one process and one event loop: ``--num-procs`` other than 1
and Panel's callback threads (``--num-threads``, ``PANEL_NUM_THREADS``) are refused.

The explorer keeps its class in process-wide state (:mod:`.runtime`: the open sessions and
their cap, the shared pool of training workers, the warm-up of the kernels, the memory
bookkeeping) and trains on every core from that one process.  Forked server processes
(``panel serve --num-procs N``) would each keep a class of their own, and a page's websocket
may reach another process than its page, which then builds the session anew.  So
``aggmrf-explore serve --num-procs N`` stops with one ``error:`` line
(:func:`check_num_procs`), and under ``panel serve apps/explorer.py --num-procs N`` every
page says the same instead of building the explorer (:func:`forked_server`, used by
:func:`aggmrf_explore.explorer.server.serve.explorer_document`).

Panel's callback threads (``panel serve --num-threads N``, or the environment variable
``PANEL_NUM_THREADS`` that Panel reads in every server) would run a session's widget
callbacks in a thread pool, beside the event loop that runs its training loop: Play found no
event loop there and did nothing.  The explorer never blocks the loop (it trains in worker
processes of its own, one per core), so the threads would buy nothing; ``aggmrf-explore
serve`` refuses ``PANEL_NUM_THREADS`` with one ``error:`` line (:func:`check_num_threads`)
and ``panel serve apps/explorer.py`` with either shows the refusal page
(:func:`threaded_server`).

Light on purpose: the command line checks its arguments with it before importing Panel.
"""

from __future__ import annotations

__all__ = [
    "ONE_PROCESS",
    "PANEL_COMMAND",
    "one_process_message",
    "check_num_procs",
    "forked_server",
    "ONE_LOOP",
    "check_num_threads",
    "threaded_server",
]

ONE_PROCESS = (
    "the explorer runs as one server process that trains its sessions on every core of the "
    "machine itself (one shared pool of training workers, one per core); with several "
    "processes each would keep its own sessions, session cap and training pool, and a "
    "page's websocket could reach another process than the one that built the page"
)
ONE_LOOP = (
    "the explorer runs each session's callbacks on the server's event loop and trains on "
    "every core in worker processes of its own; Panel's callback threads would run them "
    "away from that loop, and Play would do nothing"
)
PANEL_COMMAND = "panel serve apps/explorer.py"


def one_process_message(option: str, fix: str, why: str = ONE_PROCESS) -> str:
    """The refusal of a server option, ``<option>: <why> — <fix>.`` (``why``: :data:`ONE_PROCESS`
    or :data:`ONE_LOOP`): the same words on the command line, in the server's log and on the
    page."""
    return f"{option}: {why} — {fix}."


def check_num_procs(num_procs: int) -> None:
    """Raise :class:`~aggmrf_explore.errors.AggMRFError` unless ``num_procs`` is 1."""
    if num_procs == 1:
        return
    from ...errors import AggMRFError

    raise AggMRFError(
        one_process_message(f"--num-procs {num_procs}", "drop --num-procs (or give --num-procs 1)")
    )


def forked_server() -> bool:
    """Whether this process is one of several that a server forked to share its port.

    ``panel serve --num-procs N`` (N ≠ 1; 0 means one per core) has Bokeh's ``Server`` call
    ``HTTPServer.start(num_procs)``, which calls ``tornado.process.fork_processes`` for any
    value but 1; that sets the task id of each child (``_task_id = i``), and
    ``tornado.process.task_id()`` returns None in a process that no such call forked.  The
    children are forked before any session exists (Bokeh refuses to fork once application
    code has run), so every session of a forked server sees it.
    """
    from tornado.process import task_id

    return task_id() is not None


def check_num_threads(environ: dict[str, str]) -> None:
    """Raise :class:`~aggmrf_explore.errors.AggMRFError` if ``environ`` sets
    ``PANEL_NUM_THREADS`` (any value: Panel takes 0 as one thread per core)."""
    value = environ.get("PANEL_NUM_THREADS")
    if value is None:
        return
    from ...errors import AggMRFError

    raise AggMRFError(
        one_process_message(
            f"PANEL_NUM_THREADS={value}",
            "unset it for the explorer: env -u PANEL_NUM_THREADS aggmrf-explore serve",
            ONE_LOOP,
        )
    )


def threaded_server() -> tuple[str, str, str] | None:
    """How this server got Panel's callback threads, or None if it has none: (what it was
    started with, as the user wrote it; the option to drop; the command without it), e.g.
    ``("PANEL_NUM_THREADS=4", "PANEL_NUM_THREADS", "env -u PANEL_NUM_THREADS panel serve
    apps/explorer.py")``.  Reads Panel's ``config.nthreads`` (None unless ``--num-threads``
    or ``PANEL_NUM_THREADS`` is given)."""
    import os

    import panel as pn

    if pn.config.nthreads is None:
        return None
    value = os.environ.get("PANEL_NUM_THREADS")
    if value is None:
        return "--num-threads", "--num-threads", PANEL_COMMAND
    return (
        f"PANEL_NUM_THREADS={value}",
        "PANEL_NUM_THREADS",
        f"env -u PANEL_NUM_THREADS {PANEL_COMMAND}",
    )
