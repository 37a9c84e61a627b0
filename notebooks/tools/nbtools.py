"""Tiny helpers to write the classroom notebooks with nbformat.

``python nbNN.py`` builds the notebook (:func:`build`), executes it once in a fresh kernel
(nbclient) and keeps the outputs of the checked cells only (tag ``nbval-check-output``, which
``pytest --nbval-lax`` reads from the cell metadata, so students never see a marker comment):
they are the reference nbval compares against. Every other output is stripped, so the stored
files are small and never stale. Checked cells must print text only (no plots, no HTML tables).

Exercise answers are written with :func:`answer`: the generator runs the answer's code in the
same kernel, after the lesson, and stores code and printed output inside a collapsed
``<details>`` Markdown block. "Run All" therefore prints no answer under a question; a student
who wants to re-run an answer copies its code into a new cell.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

# the lessons ship inside the package (``aggmrf-explore lessons DIR`` copies them out)
HERE = Path(__file__).resolve().parents[2] / "aggmrf_explore" / "lessons"

CHECK_TAG = "nbval-check-output"  # nbval ≥ 0.9 reads these tags from the cell metadata
IGNORE_TAG = "nbval-ignore-output"
ANSWER_KEY = "aggmrf_answer"  # placeholder metadata: replaced by a <details> block in write()
OUTPUT_MARK = "Output (from the generator's run):"

SETUP = """\
# Set-up (run me first): plotting in the page, and the numba kernels compiled (or loaded
# from numba's cache) once, so that the timings below are the maths, not the compiler.
%matplotlib inline
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

import numba

import aggmrf_explore.kernels

# One numba thread: on these small problems a parallel Gibbs sweep spends more time
# synchronising threads than sampling (and much more on a busy machine). The results do
# not depend on the number of threads: the sampler is seeded per Gibbs sample.
numba.set_num_threads(1)
aggmrf_explore.kernels.warm_up(say=print)
plt.rcParams.update({"figure.dpi": 90, "axes.grid": True, "grid.alpha": 0.3})
pd.set_option("display.precision", 3)
"""


def md(text: str):
    """A Markdown cell (the text is dedented)."""
    return nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str, check: bool = False, ignore: bool = False):
    """A code cell; ``check=True`` tags it for nbval (its stdout is the stored reference)."""
    cell = nbformat.v4.new_code_cell(textwrap.dedent(text).strip("\n"))
    tags = [CHECK_TAG] if check else [IGNORE_TAG] if ignore else []
    if tags:
        cell.metadata["tags"] = tags
    return cell


def answer(explanation: str, src: str = ""):
    """An exercise answer: explanation (Markdown) and optional code whose output is stored.

    Returns a placeholder; :func:`write` turns it into a collapsed ``<details>`` Markdown cell.
    """
    cell = nbformat.v4.new_code_cell(textwrap.dedent(src).strip("\n"))
    cell.metadata[ANSWER_KEY] = textwrap.dedent(explanation).strip("\n")
    return cell


def _answer_markdown(cell, output: str | None) -> str:
    text = f"<details><summary><b>Answer</b> (click to open)</summary>\n\n{cell.metadata[ANSWER_KEY]}\n"
    if cell.source:
        text += f"\n```python\n{cell.source}\n```\n"
        text += f"\n{OUTPUT_MARK}\n\n```text\n{(output or '').rstrip()}\n```\n"
    return text + "\n</details>"


def is_checked(cell) -> bool:
    return CHECK_TAG in cell.get("metadata", {}).get("tags", [])


def build(name: str, cells: list, outputs: dict[int, str] | None = None):
    """The notebook of ``cells`` (answers as <details> blocks holding ``outputs[i]``), not run."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    out = []
    for i, c in enumerate(code(SETUP, ignore=True) if c == "SETUP" else c for c in cells):
        if c.cell_type == "code" and ANSWER_KEY in c.metadata:
            c = nbformat.v4.new_markdown_cell(_answer_markdown(c, (outputs or {}).get(i)))
        c["id"] = f"{Path(name).stem[:2]}-{i:02d}"
        out.append(c)
    nb.cells = out
    return nb


def write(name: str, cells: list) -> Path:
    """Run the notebook once (lesson, then answers), keep the checked outputs, write it."""
    path = HERE / name
    cells = [code(SETUP, ignore=True) if c == "SETUP" else c for c in cells]
    run = build(name, [c for c in cells])  # answers as Markdown: the lesson alone
    answers = [
        (i, c) for i, c in enumerate(cells) if c.cell_type == "code" and ANSWER_KEY in c.metadata
    ]
    run.cells += [nbformat.v4.new_code_cell(c.source) for _, c in answers if c.source]
    run = nbformat.reads(nbformat.writes(run), as_version=4)
    from nbclient import NotebookClient

    NotebookClient(
        run, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    n_lesson = len(cells)
    outputs, extra = {}, iter(run.cells[n_lesson:])
    for i, c in answers:
        if c.source:
            done = next(extra)
            outputs[i] = "".join(
                o.get("text", "") for o in done.outputs if o.output_type == "stream"
            )
    nb = build(name, cells, outputs)
    for cell, done in zip(nb.cells, run.cells[:n_lesson], strict=True):
        if cell.cell_type != "code":
            continue
        cell.execution_count = done.execution_count  # nbval refuses outputs of "unrun" cells
        cell.outputs = []
        if is_checked(cell):
            bad = [
                o for o in done.outputs if o.output_type != "stream" or o.get("name") != "stdout"
            ]
            if bad:
                raise RuntimeError(
                    f"{path.name}: a checked cell must print to stdout only:\n{cell.source[:200]}\n{bad}"
                )
            cell.outputs = list(done.outputs)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path
