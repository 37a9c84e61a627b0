"""The committed classroom notebooks are exactly what their generators write (no drift).

Each ``notebooks/tools/nbNN.py`` defines ``NAME`` and ``cells``; ``nbtools.build`` turns them into
the notebook (``aggmrf_explore/lessons/NAME``, shipped in the wheel) without running it. Cell types, sources and nbval tags must equal the committed
``.ipynb``; an answer block is compared up to its stored output (which only a run produces).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "notebooks" / "tools"
LESSONS = ROOT / "aggmrf_explore" / "lessons"  # where the generators write (package data)
GENERATORS = sorted(p.stem for p in TOOLS.glob("nb[0-9][0-9].py"))


def _generated(stem: str):
    sys.path.insert(0, str(TOOLS))
    try:
        nbtools = importlib.import_module("nbtools")
        module = importlib.import_module(stem)
        return nbtools, nbtools.build(module.NAME, module.cells), module.NAME
    finally:
        sys.path.remove(str(TOOLS))


def _comparable(nbtools, cell) -> tuple[str, str, tuple[str, ...]]:
    source = cell.source
    if cell.cell_type == "markdown" and nbtools.OUTPUT_MARK in source:
        source = source.split(nbtools.OUTPUT_MARK)[0]
    return cell.cell_type, source, tuple(cell.get("metadata", {}).get("tags", []))


def test_every_lesson_has_a_generator() -> None:
    assert {"nb01", "nb02", "nb03", "nb04", "nb05"} <= set(GENERATORS)
    notebooks = sorted(p.name[:2] for p in LESSONS.glob("[0-9][0-9]_*.ipynb"))
    assert notebooks == [g[2:] for g in GENERATORS], (
        "a notebook without a generator (or the reverse)"
    )


@pytest.mark.parametrize("stem", GENERATORS)
def test_committed_notebook_equals_generator(stem: str) -> None:
    nbtools, generated, name = _generated(stem)
    committed = nbformat.read(LESSONS / name, as_version=4)
    got = [_comparable(nbtools, c) for c in committed.cells]
    want = [_comparable(nbtools, c) for c in generated.cells]
    assert len(got) == len(want), f"{name}: {len(got)} cells committed, generator makes {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"{name} cell {i} differs from notebooks/tools/{stem}.py; regenerate it"


@pytest.mark.parametrize("stem", GENERATORS)
def test_no_marker_comments_and_no_visible_answers(stem: str) -> None:
    nbtools, generated, name = _generated(stem)
    committed = nbformat.read(LESSONS / name, as_version=4)
    for cell in committed.cells:
        assert "NBVAL_" not in cell.source, f"{name}: nbval markers belong in the cell tags"
        if cell.cell_type == "code":
            assert "answer" not in cell.get("metadata", {}).get("tags", []), (
                f"{name}: an answer cell runs on Run All"
            )
    assert any(nbtools.is_checked(c) and c.outputs for c in committed.cells), (
        f"{name}: no checked output stored"
    )
