"""Numba kernels behind plain functions: the only place in the package that uses numba.

Everything here takes and returns numpy arrays; callers never see numba types.
"""

from __future__ import annotations

import numpy as np

from . import gibbs as _g

__all__ = ["GibbsChain", "warm_up"]


class GibbsChain:
    """The persistent Gibbs samples of a PCD trainer.

    codes : int32 (n', D) feature codes;  rows : int32 (n', T) row of each sample in each table.
    """

    def __init__(self, layout, n_samples: int, marginals: list[np.ndarray], seed: int) -> None:
        arrays = layout.kernel_arrays()
        self._n_modalities = arrays["n_modalities"]
        self._feat_ptr = arrays["feat_ptr"]
        self._feat_tables = arrays["feat_tables"]
        self._feat_strides = arrays["feat_strides"]
        self._offsets = arrays["offsets"]
        self._strides = arrays["strides"]
        self.K = layout.K
        self.seed = int(seed)
        cdfs = []
        for p in marginals:
            p = np.asarray(p, dtype=np.float64)
            p = p / p.sum()
            cdfs.append(np.cumsum(p))
        cdf_ptr = np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64)
        self.codes = _g.init_samples(np.concatenate(cdfs), cdf_ptr, int(n_samples), self.seed)
        self.rows = self._rows_of(self.codes)
        self.sweeps = 0

    def _rows_of(self, codes: np.ndarray) -> np.ndarray:
        rows = self._offsets[None, :] + codes.astype(np.int64) @ self._strides.T
        if self.K >= 2**31:
            raise ValueError("more than 2^31 table rows; use feature hashing to reduce K")
        return np.ascontiguousarray(rows, dtype=np.int32)

    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[0])

    def sweep(self, mu: np.ndarray, theta: np.ndarray) -> None:
        """One Gibbs sweep of every sample under (μ, θ), both float64 (K,)."""
        _g.gibbs_sweep(
            self.codes, self.rows,
            np.ascontiguousarray(mu, dtype=np.float64), np.ascontiguousarray(theta, dtype=np.float64),
            self._n_modalities, self._feat_ptr, self._feat_tables, self._feat_strides,
            np.uint64(self.seed), np.uint64(self.sweeps),
        )  # fmt: skip
        self.sweeps += 1

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """φ(x̃_i)·θ for every sample, float64 (n',)."""
        return _g.sample_logits(self.rows, np.ascontiguousarray(theta, dtype=np.float64))

    def statistics(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unscaled d̂ = Σ_i φ(x̃_i) and marginalised ĉ = Σ_i σ(φ(x̃_i)·θ) φ(x̃_i), (K,) each."""
        z = self.logits(theta)
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # σ(z), overflow-free
        return _g.accumulate(self.rows, p, self.K)


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny problem."""
    from ..tables import TableLayout

    lay = TableLayout.all_pairs([2, 3])
    chain = GibbsChain(lay, 8, [np.ones(2), np.ones(3)], seed=0)
    chain.sweep(np.zeros(lay.K), np.zeros(lay.K))
    chain.statistics(np.zeros(lay.K))
