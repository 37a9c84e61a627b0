"""``load_offline`` publishes BokehJS inline in full, whatever ``pn.extension`` call came first.

Run in a real kernel (nbclient), without a browser: a cell that calls
``pn.extension("tabulator")`` (Panel's CDN loader) and then builds the explorer must still
publish the libraries themselves.  Panel and HoloViews publish them only at the first
extension call of a cell; a later call in the same cell sends an "already loaded" stub of
a few kB, which left JupyterLab offline with "Failed to create view" (a red error box).
The browser test of the lessons (``test_lessons_jupyterlab.py``) checks what a student sees.
"""

from __future__ import annotations

import nbformat
import pytest

INLINE_BOKEHJS = 2_000_000  # characters: BokehJS inline is ≈ 3.5 MB; the reload scripts ≤ 0.9 MB


def run_cell(source: str) -> list:
    """The outputs of ``source`` run as the only cell of a fresh kernel."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    return nb.cells[0].outputs


def javascript(outputs) -> list[str]:
    return [
        o["data"]["application/javascript"]
        for o in outputs
        if o.get("output_type") == "display_data" and "application/javascript" in o["data"]
    ]


@pytest.mark.parametrize("first", ['pn.extension("tabulator")', "pn.extension()"])
def test_libraries_are_inline_after_a_cdn_extension_in_the_same_cell(first):
    outputs = run_cell(
        "import panel as pn\n"
        "from aggmrf_explore.explorer.notebook.widget import load_offline\n"
        f"{first}\n"
        "load_offline()\n"
    )
    scripts = javascript(outputs)
    assert scripts and "cdn.bokeh.org" in scripts[0], "the CDN call published no CDN loader"
    after = scripts[1:]
    assert any(len(js) > INLINE_BOKEHJS for js in after), (
        "load_offline published no inline BokehJS after the CDN call: script sizes "
        f"{[len(js) for js in after]}"
    )
    warned = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert "inline=True" in warned, f"no warning about the CDN call: {warned!r}"


def test_no_warning_and_one_inline_bundle_without_a_cdn_call():
    outputs = run_cell(
        "from aggmrf_explore.explorer.notebook.widget import load_offline\nload_offline()\n"
    )
    sizes = [len(js) for js in javascript(outputs)]
    assert sum(size > INLINE_BOKEHJS for size in sizes) == 1, sizes
    assert not [o for o in outputs if o.get("name") == "stderr" and "inline=True" in o["text"]]
