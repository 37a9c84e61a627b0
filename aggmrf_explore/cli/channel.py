"""The one error channel of the command line: every expected failure becomes one line.

:func:`run_guarded` runs a command and turns what can go wrong with the user's input or
machine into ``error: <what is wrong> — <how to fix>`` on stderr and exit status 2:
our :class:`~aggmrf_explore.errors.AggMRFError` (argparse's errors included, see
:class:`~aggmrf_explore.cli.parser.UsageError`), file-system errors (missing file,
directory, permission, disk full), text that cannot be decoded, JSON that cannot be parsed,
and running out of memory.  Anything else is a bug: its traceback is printed, followed by a
line asking to report it, and the exit status is 1.  Python warnings raised during the
command are printed as one ``warning: …`` line each.
"""

from __future__ import annotations

import errno
import json
import sys
import traceback
import warnings
from collections.abc import Callable

from ..errors import AggMRFError

__all__ = ["one_line", "describe", "run_guarded", "MAX_LINE", "BUG_LINE"]

MAX_LINE = 500  # characters of an error line (the fix at its end is kept)
BUG_LINE = (
    "this is a bug in aggmrf-explore, not a problem with your input: please report it with "
    "the command line and the traceback above."
)


def one_line(message: object, limit: int = MAX_LINE) -> str:
    """``message`` as one line of at most ``limit`` characters: list items joined with
    "; ", other line breaks as spaces; a long middle is cut ("…"), keeping the end (the fix)."""
    text = str(message).replace("\r", " ")
    text = text.replace(":\n  - ", ": ").replace("\n  - ", "; ").replace("\n- ", "; ")
    text = text.replace("\n", " ")
    text = " ".join(text.split())
    if len(text) > limit:
        tail = min(160, limit // 3)
        text = text[: limit - tail - 3] + " … " + text[-tail:]
    return text


def _where(exc: OSError) -> str:
    name = exc.filename if exc.filename is not None else ""
    return f" {str(name)!r}" if name != "" else ""


def describe(exc: BaseException) -> str | None:
    """The ``<what is wrong> — <how to fix>`` text of an expected failure (None: a bug)."""
    if isinstance(exc, AggMRFError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return (
            "out of memory — make the tables smaller (--features, fewer --bins, --min-count, "
            "a lower --max-rows) or use fewer --gibbs-samples."
        )
    if isinstance(exc, UnicodeError):
        return (
            f"a file is not valid text ({type(exc).__name__}: {str(exc)[:120]}) — save it as "
            "UTF-8 text (CSV UTF-8)."
        )
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}) — check the file."
    if isinstance(exc, IsADirectoryError):
        return f"{_where(exc).strip() or 'a path'} is a directory — give the path of a file."
    if isinstance(exc, NotADirectoryError):
        return f"a part of{_where(exc)} is not a directory — check the path."
    if isinstance(exc, FileNotFoundError):
        return f"no such file or directory:{_where(exc)} — check the path (directories are never created)."
    if isinstance(exc, PermissionError):
        return f"permission denied:{_where(exc)} — check the file's permissions or choose another path."
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOSPC:
            return f"no space left on the device{_where(exc)} — free some space or write elsewhere."
        return f"cannot access{_where(exc)}: {exc.strerror or exc} — check the path."
    return None


class _WarningLines:
    """Python warnings as ``warning: …`` lines (ReleaseWarning: printed by the command)."""

    def __enter__(self):
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("default")

        def show(message, category, filename, lineno, file=None, line=None):
            if category.__name__ == "ReleaseWarning":
                return
            print(f"warning: {one_line(message)}", file=sys.stderr)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def run_guarded(command: Callable[[], int]) -> int:
    """Run ``command()`` (returns the exit status) through the one error channel."""
    try:
        with _WarningLines():
            return command()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place that sorts every failure
        text = describe(exc)
        if text is None:
            traceback.print_exc()
            print(BUG_LINE, file=sys.stderr)
            return 1
        print(f"error: {one_line(text)}", file=sys.stderr)
        return 2
