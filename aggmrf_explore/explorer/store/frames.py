"""The frames the explorer's plots and downloads show, as pure functions of what a session
holds: the training history, the baselines' scores, the test-set predictions, one table,
d̂ vs d, the noise of the release, the XOR comparison and the privacy curve's points.

Each takes the values it reads (a trainer, the data, the baselines…), changes none of
them and returns a new frame (NaN where a value is missing).  The store
(:class:`~.store.ExplorerSession`) keeps what is worth keeping between calls: the
history frame so far and the test records' table rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .problems import BASELINE_LABELS

__all__ = [
    "HISTORY_COLUMNS",
    "history_frame",
    "references",
    "predictions",
    "table_frame",
    "dhat_frame",
    "noise_frame",
    "xor_frame",
    "privacy_point",
]

HISTORY_COLUMNS = ("iteration", "d_error", "c_error", "nllh_eval", "seconds", "theta_norm")


def history_frame(history: Sequence, previous: pd.DataFrame | None = None) -> pd.DataFrame:
    """The training history (``IterationStats``, oldest first) as a frame, one row per
    iteration (an empty frame before the first one).

    ``previous``: the frame of an earlier call on the same history; its rows are reused
    (only the iterations since are converted, so a refresh costs the same after 10
    iterations as after 10 000) and it is not changed.
    """
    cols = list(HISTORY_COLUMNS)
    empty = pd.DataFrame({c: np.zeros(0) for c in cols})
    frame = empty if previous is None or len(previous) > len(history) else previous
    if len(frame) < len(history):
        new = pd.DataFrame({c: [getattr(h, c) for h in history[len(frame) :]] for c in cols})
        frame = new if frame.empty else pd.concat([frame, new], ignore_index=True)
        for c in cols[1:]:
            frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    return frame


def references(baselines: dict) -> dict[str, float]:
    """Test NLLH of each available baseline ({name: result}), keyed by display label."""
    return {
        BASELINE_LABELS[k]: float(baselines[k].nllh_test)
        for k in ("logistic_pairs", "naive_bayes", "best_pair")
        if k in baselines and math.isfinite(baselines[k].nllh_test)
    }


def predictions(model, rows: np.ndarray, baselines: dict, labels) -> pd.DataFrame:
    """Test-set P(Y=1|x) of the MRF ``model`` (from the test records' table ``rows``, int32
    (n, T)) and of the skyline logistic (NaN until it is fitted), with the ``labels``."""
    p_mrf = model.proba_of_rows(rows)
    base = baselines.get("logistic_pairs") or baselines.get("logistic")
    p_log = base.proba_test if base is not None else np.full(p_mrf.shape, np.nan)
    return pd.DataFrame({"mrf": p_mrf, "logistic": p_log, "label": np.asarray(labels)})


def table_frame(data, trainer, table: str) -> pd.DataFrame:
    """Rows of one table of ``data`` (the first if ``table`` is not one): modalities,
    count, label sum, noisy/true values, and the ``trainer``'s d̂ and ĉ."""
    names = data.layout.table_names
    ti = names.index(table) if table in names else 0
    extra = {"d_hat": trainer.d_hat, "c_hat": trainer.c_hat}
    return data.table_frame(int(ti), extra=extra)


def dhat_frame(data, trainer) -> pd.DataFrame:
    """Target d vs the ``trainer``'s d̂ for every released row, with each row's table and
    its kind (single, pair, triple)."""
    lay = data.layout
    rel = lay.released
    rt = lay.row_table()[rel]
    names = np.asarray(lay.table_names, dtype=object)
    arity = np.asarray([len(t) for t in lay.tables])[rt]
    kind = np.where(arity == 1, "single", np.where(arity == 2, "pair", "triple"))
    return pd.DataFrame(
        {
            "d": np.maximum(data.d[rel], 0.0),
            "d_hat": trainer.d_hat[rel],
            "table": names[rt],
            "kind": kind,
        }
    )


def noise_frame(data, mechanism: str, mechanism_obj) -> pd.DataFrame | None:
    """True vs released counts of every released row of ``data`` (None without noise:
    no ``mechanism_obj``); under local privacy also each count's own σ (channel
    inversion: from a few records to millions), whose mixture is the plot's density."""
    if mechanism_obj is None or data.true_d is None:
        return None
    rel = data.layout.released
    frame = pd.DataFrame(
        {
            "true": data.true_d[rel],
            "noisy": data.d[rel],
            "noise": data.d[rel] - data.true_d[rel],
        }
    )
    sigma = getattr(data.noise, "sigma_d", None) if mechanism == "local" else None
    if sigma is not None and len(sigma) == len(data.d):
        frame["sigma"] = sigma[rel]
    return frame


def xor_frame(bundle, trainer, baselines: dict) -> pd.DataFrame | None:
    """XOR only (None otherwise): per state P(Y=1|x) for the truth, the exact max-ent, the
    ``trainer``'s MRF and the skyline logistic (NaN until it is fitted)."""
    if bundle is None or bundle.xor is None:
        return None
    frame = bundle.xor.copy()
    codes = bundle.xor.attrs["codes"]
    frame["live MRF"] = trainer.predict_proba(codes)[:, 1]
    base = baselines.get("logistic_pairs")
    if base is not None:
        X = bundle.encoded.X_test
        frame["logistic"] = [
            float(np.mean(base.proba_test[np.all(X == c, axis=1)]))
            if np.any(np.all(X == c, axis=1))
            else np.nan
            for c in codes
        ]
    else:
        frame["logistic"] = np.nan
    return frame


def privacy_point(run_info: dict | None, trainer, least: int = 0) -> dict | None:
    """A run as a point of the privacy curve: its dataset and privacy settings
    (``run_info``) with its test NLLH and iterations; None without a mechanism, a finite
    NLLH or at least ``least`` iterations."""
    if run_info is None or trainer is None or run_info["mechanism"] == "none":
        return None
    nl = trainer.last_nllh
    if nl is None or not math.isfinite(nl) or trainer.iteration < least:
        return None
    return {**run_info, "nllh": float(nl), "iterations": int(trainer.iteration)}
