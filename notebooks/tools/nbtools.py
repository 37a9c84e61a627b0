"""Tiny helpers to write the classroom notebooks with nbformat.

``python nbNN.py`` writes the notebook, executes it once in a fresh kernel (nbclient) and keeps
the outputs of the ``# NBVAL_CHECK_OUTPUT`` cells only: they are the reference that
``pytest --nbval-lax`` compares against. Every other output is stripped, so the stored files are
small and never stale. Checked cells must print text only (no plots, no HTML tables).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent.parent

SETUP = """\
# NBVAL_IGNORE_OUTPUT
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
aggmrf_explore.kernels.warm_up()
plt.rcParams.update({"figure.dpi": 90, "axes.grid": True, "grid.alpha": 0.3})
pd.set_option("display.precision", 3)
"""


def md(text: str):
    return nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str, check: bool = False, hidden: bool = False):
    src = textwrap.dedent(text).strip("\n")
    if check:
        src = "# NBVAL_CHECK_OUTPUT\n" + src
    cell = nbformat.v4.new_code_cell(src)
    if hidden:  # an answer: collapsed in JupyterLab / Notebook until the student opens it
        cell.metadata["jupyter"] = {"source_hidden": True}
        cell.metadata["tags"] = ["answer"]
    return cell


def answer(text: str):
    return code(text, hidden=True)


def write(name: str, cells: list) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [code(SETUP) if c == "SETUP" else c for c in cells]
    for i, c in enumerate(nb.cells):
        c["id"] = f"{Path(name).stem[:2]}-{i:02d}"
    path = HERE / name
    _keep_checked_outputs(nb, path)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


def _keep_checked_outputs(nb, path: Path) -> None:
    from nbclient import NotebookClient

    run = nbformat.reads(nbformat.writes(nb), as_version=4)
    NotebookClient(run, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell, done in zip(nb.cells, run.cells):
        if cell.cell_type != "code":
            continue
        cell.execution_count = done.execution_count  # nbval refuses outputs of "unrun" cells
        cell.outputs = []
        if cell.source.startswith("# NBVAL_CHECK_OUTPUT"):
            outs = [o for o in done.outputs]
            bad = [o for o in outs if o.output_type != "stream" or o.get("name") != "stdout"]
            if bad:
                raise RuntimeError(f"{path.name}: a checked cell must print to stdout only:\n{cell.source[:200]}\n{bad}")
            cell.outputs = outs
