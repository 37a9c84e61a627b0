"""The first screens' figure structures ship with the package (``data/figures.json.gz``):
a first start copies them instead of drawing with HoloViews, and each copy shows its own
session's data; a structure is used only under the digest it was drawn for."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from bokeh.core.serialization import Deserializer, Serialized
from bokeh.models import GlyphRenderer

from aggmrf_explore.explorer.notebook.widget import notebook_explorer
from aggmrf_explore.explorer.views import liveplots


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A first start: no figure in memory, an empty disk cache, none shipped."""
    monkeypatch.setenv("AGGMRF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(liveplots, "SHIPPED_FIGURES", tmp_path / "none.json.gz")
    liveplots.clear_figure_cache()
    liveplots.shipped_figures.cache_clear()
    yield tmp_path
    liveplots.clear_figure_cache()
    liveplots.shipped_figures.cache_clear()


def _ship(files, path) -> None:
    content = {p.stem: json.loads(p.read_text()) for p in files}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(content, f)


def test_a_first_start_copies_shipped_structures_and_draws_nothing(empty_cache, monkeypatch):
    drawn = notebook_explorer(dataset="toy", n_gibbs=200)  # draws, filling the disk cache
    files = liveplots.figure_cache_files()
    assert len(files) >= 4  # (the Training tab's four plots)
    shipped = empty_cache / "figures.json.gz"
    _ship(files, shipped)
    # a fresh machine: nothing cached, HoloViews must not be asked to draw
    monkeypatch.setenv("AGGMRF_CACHE_DIR", str(empty_cache / "fresh"))
    liveplots.clear_figure_cache()
    monkeypatch.setattr(liveplots, "SHIPPED_FIGURES", shipped)
    liveplots.shipped_figures.cache_clear()

    def refuse(build):
        raise AssertionError("drew a figure whose structure is shipped")

    monkeypatch.setattr(liveplots, "render", refuse)
    ex = notebook_explorer(dataset="toy", n_gibbs=300)
    ex.session.step(4)
    for name in ("p_nllh", "p_conv", "p_pred", "p_dhat"):
        a, b = getattr(drawn.training_tab, name), getattr(ex.training_tab, name)
        assert b.fig is not None and b.renderers
        assert not {m.id for m in a.fig.references()} & {m.id for m in b.fig.references()}
    # the copy shows this session's data, not the data it was shipped with
    it = ex.training_tab.p_nllh.renderers[0].data_source.data["iteration"]
    assert it[-1] == 4 and not ex.message.visible, ex.message.object
    assert not liveplots.figure_cache_files()  # (nothing drawn, so nothing written)


def test_a_structure_under_another_digest_is_drawn_not_copied(empty_cache, monkeypatch):
    """Other versions or another plots.py: the shipped names do not match, HoloViews draws."""
    notebook_explorer(dataset="toy", n_gibbs=200)
    files = liveplots.figure_cache_files()
    shipped = empty_cache / "figures.json.gz"
    content = {"0" * 24 + p.stem[24:]: json.loads(p.read_text()) for p in files}
    with gzip.open(shipped, "wt", encoding="utf-8") as f:
        json.dump(content, f)
    monkeypatch.setenv("AGGMRF_CACHE_DIR", str(empty_cache / "fresh"))
    liveplots.clear_figure_cache()
    monkeypatch.setattr(liveplots, "SHIPPED_FIGURES", shipped)
    liveplots.shipped_figures.cache_clear()
    notebook_explorer(dataset="toy", n_gibbs=300)
    assert len(liveplots.figure_cache_files()) == len(files)  # drawn again, and cached


def test_the_shipped_file_holds_figures_with_glyphs():
    """Every shipped structure deserializes to a Bokeh figure with glyph renderers."""
    liveplots.shipped_figures.cache_clear()
    shipped = liveplots.shipped_figures()
    assert len(shipped) >= 10, "run python notebooks/tools/ship_figures.py"
    for content in shipped.values():
        fig = Deserializer().deserialize(Serialized(content, []))
        glyphs = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
        assert glyphs and np.isfinite(fig.height)


def test_the_shipped_file_was_drawn_from_todays_plot_code():
    """A change to plots.py or privacy_plots.py without a new file would make every first
    start draw again (silently slower): run ``python notebooks/tools/ship_figures.py``."""
    with gzip.open(liveplots.SHIPPED_FIGURES, "rt", encoding="utf-8") as f:
        content = json.load(f)
    assert content.get(liveplots.SOURCES_KEY) == liveplots.plot_sources_digest(), (
        "the shipped first-screen figures are stale: run python notebooks/tools/ship_figures.py"
    )
