"""`aggmrf-explore`: train and evaluate from the command line (a stable, scriptable surface).

Subcommands (one module each)
-----------------------------
run        train the MRF (optionally on a noisy release) and the baselines, print a table or
           JSON; ``run --tables`` trains on a release without records (:mod:`.run`)
aggregate  records → a release: tables + release.json (:mod:`.aggregate`)
predict    probabilities of records under an exported model (:mod:`.predict`)
xor        the XOR counterexample: truth, exact max-ent, PCD and logistic per state (:mod:`.xor`)
import-criteo  the AdKDD'21 challenge files → a release with two labels (:mod:`.import_criteo`)
sweep      what-if over ε: MRF and noise-aware MRF-N at each ε, CSV + PNG of test NLLH vs ε
           (:mod:`.sweep`)
serve      the live explorer on Panel's server, from the installed package (:mod:`.serve`)
lessons    copy the six classroom notebooks into a directory (:mod:`.lessons`)

The parser is :mod:`.parser`, the shared argument handling :mod:`.args`, what is printed
:mod:`.report`.  Every error the user can cause prints one line ``error: …`` and exits with
status 2 (:func:`main` is the one place that turns errors into that line).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..files import command_inputs
from . import report
from .aggregate import cmd_aggregate
from .channel import run_guarded
from .import_criteo import cmd_import_criteo
from .lessons import cmd_lessons
from .parser import build_parser, input_paths
from .predict import cmd_predict
from .run import cmd_run
from .serve import check_num_procs, check_num_threads, cmd_serve, restart_with_system_allocator
from .sweep import cmd_sweep
from .xor import cmd_xor

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS: dict[str, Callable[..., int]] = {
    "run": cmd_run,
    "xor": cmd_xor,
    "sweep": cmd_sweep,
    "aggregate": cmd_aggregate,
    "predict": cmd_predict,
    "import-criteo": cmd_import_criteo,
    "serve": cmd_serve,
    "lessons": cmd_lessons,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `aggmrf-explore` console script; returns the exit status.

    ``argv``: the arguments (default: ``sys.argv[1:]``).  0 on success; 2 with one
    ``error: <what is wrong> — <how to fix>`` line for every expected failure, parsing
    included (:mod:`.channel`); 1 with a traceback and a request to report it for a bug;
    130 on Ctrl-C.  ``--help`` prints the help and exits 0 (SystemExit).
    """

    def command() -> int:
        args = build_parser().parse_args(argv)
        if args.command == "serve":
            check_num_procs(args.num_procs)  # refused before the restart below
            check_num_threads()
        if argv is None and args.command == "serve":  # a server process of its own
            restart_with_system_allocator(sys.argv[1:])
        report.QUIET["on"] = bool(getattr(args, "quiet", False))
        with command_inputs(input_paths(args)):  # no output may overwrite an input
            return COMMANDS[args.command](args)

    return run_guarded(command)
