from __future__ import annotations

import numpy as np
import pytest

from aggmrf_explore import AggMRFError
from aggmrf_explore.metrics import log_loss, nllh, relative_l1


def test_nllh_reference_points():
    y = np.array([0, 0, 0, 1])
    assert nllh(y, np.full(4, 0.25)) == pytest.approx(0.0, abs=1e-12)
    assert nllh(y, np.array([0.0, 0.0, 0.0, 1.0])) == pytest.approx(1.0, abs=1e-9)
    worse = nllh(y, np.full(4, 0.5))
    entropy = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    assert worse == pytest.approx(1 - np.log(2) / entropy)
    assert log_loss(y, np.column_stack([1 - np.full(4, 0.5), np.full(4, 0.5)])) == pytest.approx(
        np.log(2)
    )


def test_metric_errors():
    with pytest.raises(AggMRFError, match="both classes"):
        nllh(np.ones(3), np.full(3, 0.5))
    with pytest.raises(AggMRFError, match="finite probabilities"):
        nllh(np.array([0, 1]), np.array([0.5, np.nan]))
    with pytest.raises(AggMRFError, match="differ in length"):
        nllh(np.array([0, 1]), np.array([0.5]))
    assert relative_l1(np.array([1.0, 3.0]), np.array([2.0, 2.0])) == pytest.approx(0.5)
