"""``aggmrf-explore lessons DIR``: copy the six classroom lessons (notebooks) into DIR.

The copying and the protection of edited lessons are :func:`aggmrf_explore.lessons.write_lessons`;
this prints what was done and how to open the lessons.
"""

from __future__ import annotations

import argparse

__all__ = ["cmd_lessons"]


def cmd_lessons(args: argparse.Namespace) -> int:
    """``lessons``: write the lessons, one line per file; returns the exit status."""
    from ..lessons import write_lessons

    done = write_lessons(args.directory, force=args.force)
    for name in done.written:
        print(f"wrote      {done.directory / name}")
    for name in done.overwritten_changes:
        print(f"overwrote  {done.directory / name} (it had been changed; --force)")
    for name in done.unchanged:
        print(f"up to date {done.directory / name}")
    print(f"Open them with: jupyter lab {done.directory}")
    return 0
