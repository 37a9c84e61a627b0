"""One place per dataset: :data:`datasets.DATASETS` drives loading, ``--dataset`` and releases.

The Criteo-shaped teaching dataset, which only the explorer knew, is a spec like the others,
so ``run --dataset criteo`` trains on its suppressed release; a new dataset is one spec.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from aggmrf_explore import datasets
from aggmrf_explore.cli import main
from aggmrf_explore.cli.parser import build_parser
from aggmrf_explore.datasets import DATASETS, DatasetSpec, load_dataset
from aggmrf_explore.errors import AggMRFError


def test_every_spec_loads_and_the_cli_lists_it():
    help_text = build_parser().format_help() + " ".join(
        a.help or "" for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions
    )
    for name, spec in DATASETS.items():
        ds = (
            load_dataset(name, n=300)
            if spec.seeded and name != "adult" and name != "bank"
            else None
        )
        if ds is not None:
            assert len(ds.train) > 0 and ds.label in ds.train.columns
        assert name in help_text
    with pytest.raises(AggMRFError, match="valid names: toy, xor, synthetic, criteo"):
        load_dataset("criteo2")


def test_run_dataset_criteo_trains_on_its_suppressed_release(capsys):
    """``run --dataset criteo`` exists: its pair cells of count ≤ 10 are left out, as the
    explorer's Criteo-shaped release shows them, and the MRF trains on the boxes."""
    code = main(
        [
            "run",
            "--dataset",
            "criteo",
            "--n",
            "2000",
            "--iterations",
            "60",
            "--no-baselines",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["suppression"]["threshold"] == 10.0
    assert out["suppression"]["rows_left_out"] > 0
    assert 0 < out["models"]["mrf"]["nllh_test"] < 1


def test_a_new_dataset_is_one_spec(monkeypatch, capsys):
    """A newcomer's dataset: one DatasetSpec (and its loader) and the loader, ``--dataset``
    and ``run`` take it, with nothing else edited."""

    def tiny(n: int = 400, seed: int = 0) -> datasets.Dataset:
        ds = load_dataset("xor", n=n, seed=seed)
        return datasets.Dataset(name="tiny", train=ds.train, test=ds.test, label=ds.label)

    spec = DatasetSpec("tiny", "a tiny XOR", "Tiny XOR", tiny, "generated")
    monkeypatch.setitem(DATASETS, "tiny", spec)
    monkeypatch.setattr(datasets.catalog, "DATASET_NAMES", tuple(DATASETS))
    monkeypatch.setattr(datasets, "DATASET_NAMES", tuple(DATASETS))
    assert isinstance(load_dataset("tiny", n=200).train, pd.DataFrame)
    code = main(["run", "--dataset", "tiny", "--iterations", "20", "--no-baselines", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["n_train"] == 400
