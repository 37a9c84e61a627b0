"""Read-only views of a session's state for the plots and downloads: the training
history, the baselines' scores, the test-set predictions, one table, d̂ vs d, the noise
of the release and the XOR comparison.

:class:`SessionViews` is mixed into :class:`~.store.ExplorerSession`; its methods read the
session (``trainer``, ``bundle``, ``data``, ``baselines``, ``mechanism_obj``) and change
nothing but their own caches.  Each returns a new frame (NaN where a value is missing).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from .problems import BASELINE_LABELS

__all__ = ["SessionViews"]


class SessionViews:
    """Frames derived from a session's trainer and data (see the module docstring)."""

    _history_cache: tuple = (None, None)  # (trainer, its history frame so far)
    _test_rows: tuple = (None, None)  # (trainer, the test records' table rows)

    def history(self) -> pd.DataFrame:
        """The training history (one row per iteration), empty frame before the first one.

        Built incrementally (only the iterations since the last call are converted), so
        a refresh costs the same after 10 iterations as after 10 000.
        """
        cols = ["iteration", "d_error", "c_error", "nllh_eval", "seconds", "theta_norm"]
        if self.trainer is None or not self.trainer.history:
            return pd.DataFrame({c: np.zeros(0) for c in cols})
        hist = self.trainer.history
        owner, frame = self._history_cache
        if owner is not self.trainer or len(frame) > len(hist):
            frame = pd.DataFrame({c: np.zeros(0) for c in cols})
        if len(frame) < len(hist):
            new = pd.DataFrame({c: [getattr(h, c) for h in hist[len(frame) :]] for c in cols})
            frame = new if frame.empty else pd.concat([frame, new], ignore_index=True)
            for c in cols[1:]:
                frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
        self._history_cache = (self.trainer, frame)
        return frame

    def history_csv(self) -> str:
        buf = io.StringIO()
        self.history().to_csv(buf, index=False)
        return buf.getvalue()

    def references(self) -> dict[str, float]:
        """Test NLLH of each available baseline, keyed by display label."""
        return {
            BASELINE_LABELS[k]: float(self.baselines[k].nllh_test)
            for k in ("logistic_pairs", "naive_bayes", "best_pair")
            if k in self.baselines and math.isfinite(self.baselines[k].nllh_test)
        }

    def predictions(self) -> pd.DataFrame:
        """Test-set P(Y=1|x) of the live MRF and of the skyline logistic (if ready), with labels.

        The test records' table rows are computed once per trainer (a refresh then costs
        one gather of θ, not the row kernel: a third of the heavy refresh on Adult)."""
        enc = self.bundle.encoded
        owner, rows = self._test_rows
        if owner is not self.trainer:
            rows = self.bundle.layout.rows(enc.X_test).astype(np.int32)
            self._test_rows = (self.trainer, rows)
        p_mrf = self.trainer.model.proba_of_rows(rows)
        base = self.baselines.get("logistic_pairs") or self.baselines.get("logistic")
        p_log = base.proba_test if base is not None else np.full(p_mrf.shape, np.nan)
        return pd.DataFrame({"mrf": p_mrf, "logistic": p_log, "label": np.asarray(enc.y_test)})

    def table_view(self, table: str | None = None) -> pd.DataFrame:
        """Rows of one table: modalities, count, label sum, (noisy/true values), d̂ and ĉ."""
        lay = self.bundle.layout
        name = table or self.table
        ti = lay.table_names.index(name) if name in lay.table_names else 0
        extra = {"d_hat": self.trainer.d_hat, "c_hat": self.trainer.c_hat}
        return self.data.table_frame(int(ti), extra=extra)

    def dhat_frame(self) -> pd.DataFrame:
        """Target d vs current d̂ for every released row, with the table of each row."""
        lay = self.bundle.layout
        rel = lay.released
        rt = lay.row_table()[rel]
        names = np.asarray(lay.table_names, dtype=object)
        arity = np.asarray([len(t) for t in lay.tables])[rt]
        kind = np.where(arity == 1, "single", np.where(arity == 2, "pair", "triple"))
        return pd.DataFrame(
            {
                "d": np.maximum(self.data.d[rel], 0.0),
                "d_hat": self.trainer.d_hat[rel],
                "table": names[rt],
                "kind": kind,
            }
        )

    def noise_frame(self) -> pd.DataFrame | None:
        """True vs released counts of every released row (None without noise)."""
        if self.mechanism_obj is None or self.data.true_d is None:
            return None
        rel = self.bundle.layout.released
        frame = pd.DataFrame(
            {
                "true": self.data.true_d[rel],
                "noisy": self.data.d[rel],
                "noise": self.data.d[rel] - self.data.true_d[rel],
            }
        )
        # local privacy: each count's own σ (channel inversion: from a few records to
        # millions), the noise plot's density is their mixture
        sigma = getattr(self.data.noise, "sigma_d", None) if self.mechanism == "local" else None
        if sigma is not None and len(sigma) == len(self.data.d):
            frame["sigma"] = sigma[rel]
        return frame

    def xor_frame(self) -> pd.DataFrame | None:
        """XOR only: per-state P(Y=1|x) for truth, exact max-ent, live MRF and logistic."""
        if self.bundle is None or self.bundle.xor is None:
            return None
        frame = self.bundle.xor.copy()
        codes = self.bundle.xor.attrs["codes"]
        frame["live MRF"] = self.trainer.predict_proba(codes)[:, 1]
        base = self.baselines.get("logistic_pairs")
        if base is not None:
            X = self.bundle.encoded.X_test
            frame["logistic"] = [
                float(np.mean(base.proba_test[np.all(X == c, axis=1)]))
                if np.any(np.all(X == c, axis=1))
                else np.nan
                for c in codes
            ]
        else:
            frame["logistic"] = np.nan
        return frame
