"""A cluster gives the user's own numbers: the same ``aggmrf-explore run`` with and without
``--scheduler local:2`` (default sampler, same seed) exports the same model, number for
number.  The sampler is resolved by one rule with and without a cluster (on Adult, the
full-conditional chain, which runs whole on one worker)."""

from __future__ import annotations

import json

import pytest

from aggmrf_explore.cli import main


def _numbers(obj, path=""):
    """Every number of an exported model, keyed by where it sits."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield path, obj


@pytest.mark.parametrize("sampler", [[], ["--sampler", "mh"]], ids=["default", "mh"])
def test_run_with_and_without_a_cluster_exports_the_same_model(tmp_path, capsys, sampler):
    base = ["run", "--dataset", "adult", "--iterations", "40", "--no-baselines", *sampler]
    assert main([*base, "--export-model", str(tmp_path / "one.json")]) == 0
    assert (
        main([*base, "--scheduler", "local:2", "--export-model", str(tmp_path / "dask.json")]) == 0
    )
    err = capsys.readouterr().err
    if not sampler:  # the user is told where the chain runs
        assert "runs whole on one Dask worker" in err
    one = json.loads((tmp_path / "one.json").read_text())
    dask = json.loads((tmp_path / "dask.json").read_text())
    a, b = dict(_numbers(one)), dict(_numbers(dask))
    assert a.keys() == b.keys()
    assert len(a) > 100  # (μ and θ of Adult's tables)
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, f"{len(differ)} numbers differ, e.g. {differ[:3]}"
