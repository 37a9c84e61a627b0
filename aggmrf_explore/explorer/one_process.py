"""The explorer is served by one process: ``--num-procs`` other than 1 is refused.

The explorer keeps its class in process-wide state (:mod:`.runtime`: the open sessions and
their cap, the shared pool of training workers, the warm-up of the kernels, the memory
bookkeeping) and trains on every core from that one process.  Forked server processes
(``panel serve --num-procs N``) would each keep a class of their own, and a page's websocket
may reach another process than its page, which then builds the session anew.  So
``aggmrf-explore serve --num-procs N`` stops with one ``error:`` line
(:func:`check_num_procs`), and under ``panel serve apps/explorer.py --num-procs N`` every
page says the same instead of building the explorer (:func:`forked_server`, used by
:func:`aggmrf_explore.explorer.serve.explorer_document`).

Light on purpose: the command line checks its arguments with it before importing Panel.
"""

from __future__ import annotations

__all__ = [
    "ONE_PROCESS",
    "PANEL_COMMAND",
    "one_process_message",
    "check_num_procs",
    "forked_server",
]

ONE_PROCESS = (
    "the explorer runs as one server process that trains its sessions on every core of the "
    "machine itself (one shared pool of training workers, one per core); with several "
    "processes each would keep its own sessions, session cap and training pool, and a "
    "page's websocket could reach another process than the one that built the page"
)
PANEL_COMMAND = "panel serve apps/explorer.py"


def one_process_message(option: str, fix: str) -> str:
    """The refusal of several server processes, ``<option>: <why> — <fix>.``: the same words
    on the command line, in the server's log and on the page."""
    return f"{option}: {ONE_PROCESS} — {fix}."


def check_num_procs(num_procs: int) -> None:
    """Raise :class:`~aggmrf_explore.errors.AggMRFError` unless ``num_procs`` is 1."""
    if num_procs == 1:
        return
    from ..errors import AggMRFError

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
