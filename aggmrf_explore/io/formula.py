"""Formula neutralisation of the CSV files the project writes (OWASP's "CSV injection" rule).

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return as a formula (``=cmd|' /C calc'!A0``).  Every CSV writer of the package
(releases, models, predictions, sweeps) passes its cells and header through
:func:`neutralise_cell` / :func:`neutralise_frame`, which prefix such a cell with ``'``
unless it is a plain number (``-4``, ``+1.5e3``).  Every reader passes them back through
:func:`restore_cell` / :func:`restore_frame`, so reading a written file gives the original
values exactly.

The rule is a bijection: a cell that starts with ``'`` followed by something that would be
neutralised is itself neutralised (``'=x`` is written ``''=x``), so ``restore`` never strips
a quote that a label really has; a hand-written ``'abc`` reads as ``'abc``.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["FORMULA_STARTS", "neutralise_cell", "restore_cell", "neutralise_frame", "restore_frame"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FIRST = [*FORMULA_STARTS, "'"]
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _needs(cell: str) -> bool:
    i = 0
    while i < len(cell) and cell[i] == "'":
        i += 1
    rest = cell[i:]
    if not rest or rest[0] not in FORMULA_STARTS:
        return False
    return _NUMBER.fullmatch(rest) is None


def _map_frame(frame: pd.DataFrame, fn) -> pd.DataFrame:
    cols = []
    for j in range(frame.shape[1]):
        s = frame.iloc[:, j]
        textual = s.dtype == object or pd.api.types.is_string_dtype(s.dtype)
        if textual:
            mask = s.astype(str).str[:1].isin(_FIRST).to_numpy()
            if mask.any():
                s = s.astype(object)
                s[mask] = s[mask].map(fn)
        cols.append(s)
    out = pd.concat(cols, axis=1) if cols else frame.copy()
    out.columns = [fn(str(c)) for c in frame.columns]
    out.index = frame.index
    return out


def neutralise_cell(cell: object) -> object:
    """``cell`` as written to a CSV: a string starting like a formula gets a leading ``'``
    (numbers and non-strings are returned unchanged)."""
    if isinstance(cell, str) and _needs(cell):
        return "'" + cell
    return cell


def restore_cell(cell: object) -> object:
    """Inverse of :func:`neutralise_cell`: the original value of a cell read from a CSV."""
    if isinstance(cell, str) and cell.startswith("'") and _needs(cell[1:]):
        return cell[1:]
    return cell


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every string cell and column name neutralised."""
    return _map_frame(frame, neutralise_cell)


def restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` (read with ``dtype=str``) with every string cell and column name
    restored."""
    return _map_frame(frame, restore_cell)
