"""Regenerate ``aggmrf_explore/data/figures.json.gz``: the figure structures of the
explorer's first screens (every dataset at its defaults, every tab), so that a first start
copies them instead of drawing each with HoloViews (~0.4 s a figure on a quiet machine,
several seconds on a loaded one).

    python notebooks/tools/ship_figures.py

Run it after a change to ``aggmrf_explore/explorer/views/plots.py`` or ``privacy_plots.py``, or
to the package, Bokeh or HoloViews versions: a shipped structure is found by the digest of
them all, so a stale file is simply not used (``tests/test_shipped_figures.py`` checks the lookup, and this
script prints what it wrote).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from pathlib import Path

DATASETS = ("xor", "toy", "synthetic", "criteo", "adult", "bank")


def draw_first_screens() -> None:
    """Every tab of every dataset's first screen into the (empty) figure cache."""
    from aggmrf_explore.explorer import notebook_explorer
    from aggmrf_explore.explorer.views.plots import MAX_PINS

    for dataset in DATASETS:
        t0 = time.perf_counter()
        ex = notebook_explorer(dataset=dataset)  # draws the Training tab at iteration 0
        ex.session.step(3)  # (a step redraws the visible tab)
        for tab in range(1, len(ex.tabs)):
            ex.tabs.active = tab  # (a tab shown is drawn)
        print(f"{dataset}: drawn in {time.perf_counter() - t0:.1f} s", flush=True)
    # what a class does next on the first screen: pin runs, release the triplet table; and
    # the predictions plot while a large dataset's logistic is still fitting
    ex = notebook_explorer(dataset="xor")
    for _ in range(MAX_PINS):
        ex.session.step(2)
        ex.training_tab.pin()
    ex.session.propose("triples", True)
    ex.tabs.active = 3
    pred = ex.session.predictions()
    ex.training_tab.p_pred.update({"frame": pred, "mode": "waiting"}, key="waiting")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="aggmrf-figures-") as tmp:
        os.environ["AGGMRF_CACHE_DIR"] = tmp
        from aggmrf_explore.explorer.views import liveplots

        target = liveplots.SHIPPED_FIGURES
        liveplots.SHIPPED_FIGURES = Path(tmp) / "none"  # draw every structure anew
        liveplots.shipped_figures.cache_clear()
        liveplots.clear_figure_cache()
        draw_first_screens()
        files = liveplots.figure_cache_files()
        content = {p.stem: json.loads(p.read_text()) for p in files}
        content[liveplots.SOURCES_KEY] = liveplots.plot_sources_digest()
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(content, f, separators=(",", ":"))
    print(f"wrote {len(content) - 1} figures to {target} ({target.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
