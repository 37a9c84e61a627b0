"""The two containers of a dataset: :class:`Dataset` (raw records) and :class:`EncodedData` (codes).

``Dataset.encode()`` fits an :class:`~aggmrf_explore.encoding.Encoder` on the TRAIN split
only and returns :class:`EncodedData` (int32 codes, int8 labels, and a ``layout()`` helper
building the :class:`~aggmrf_explore.tables.TableLayout`).  :func:`select_features` keeps or
drops feature columns of a Dataset, with the errors every loader shares;
:func:`target_encode` maps high-cardinality columns to few buckets (fit on held-out rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import Encoder
from ..errors import AggMRFError
from ..high_cardinality import TargetEncoder
from ..tables import TableLayout
from ..values import encode_label, label_strings

__all__ = ["Dataset", "EncodedData", "other_class", "select_features", "target_encode"]


@dataclass
class EncodedData:
    """A dataset as codes: X int32 (n, D) with feature f in 0..M_f-1, y int8 (n,) in {0, 1}."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    encoder: Encoder
    feature_names: list[str]
    n_modalities: np.ndarray
    modality_labels: list[list[str]]
    positive_label: str
    true_proba_test: np.ndarray | None = None
    true_proba_train: np.ndarray | None = None
    name: str = ""

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    def layout(
        self,
        singles: bool = True,
        pairs: bool = True,
        triples: bool = False,
        intercept: bool = True,
    ) -> TableLayout:
        """``TableLayout.all_pairs`` over these features (names and modality labels attached)."""
        return TableLayout.all_pairs(
            self.n_modalities,
            self.feature_names,
            singles=singles,
            pairs=pairs,
            triples=triples,
            intercept=intercept,
            modality_labels=self.modality_labels,
        )


@dataclass
class Dataset:
    """Raw records: ``train`` / ``test`` DataFrames holding the feature columns and ``label``.

    ``true_proba_*`` (shape (n,)) hold the true P(Y=1|x) for generated data; ``truth``
    holds the generating model (synthetic data).  ``encoding`` holds the default
    keyword arguments of :meth:`encode` (e.g. ``{"unseen": "other", "min_count": 5}``).
    """

    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    label: str
    description: str = ""
    citation: str = ""
    true_proba_train: np.ndarray | None = None
    true_proba_test: np.ndarray | None = None
    truth: dict[str, Any] | None = None
    positive: str | None = None
    encoding: dict[str, Any] = field(default_factory=dict)

    @property
    def feature_columns(self) -> list[str]:
        return [c for c in self.train.columns if c != self.label]

    @property
    def n_train(self) -> int:
        return len(self.train)

    @property
    def n_test(self) -> int:
        return len(self.test)

    def encode(
        self,
        n_bins: int = 10,
        unseen: str | None = None,
        *,
        min_count: int | None = None,
        max_modalities: int | None = None,
    ) -> EncodedData:
        """Fit the encoder on the train split, encode both splits.

        ``unseen`` / ``min_count`` default to the dataset's ``encoding`` settings
        ("error" / 1 unless the loader says otherwise).
        """
        opts = {"unseen": "error", "min_count": 1, **self.encoding}
        if unseen is not None:
            opts["unseen"] = unseen
        if min_count is not None:
            opts["min_count"] = min_count
        feats = self.feature_columns
        if not feats:
            raise AggMRFError(f"dataset {self.name!r} has no feature columns left to encode.")
        enc = Encoder(n_bins=n_bins, max_modalities=max_modalities, **opts)
        X_train = enc.fit_transform(self.train[feats])
        X_test = enc.transform(self.test[feats])
        y_train, pos = encode_label(self.train[self.label], positive=self.positive)
        neg = other_class(self.train[self.label], pos)
        y_test, _ = encode_label(self.test[self.label], positive=pos, classes=[neg, pos])
        return EncodedData(
            X_train=X_train,
            y_train=y_train,
            X_test=X_test,
            y_test=y_test,
            encoder=enc,
            feature_names=list(enc.feature_names),
            n_modalities=enc.n_modalities.copy(),
            modality_labels=[list(lab) for lab in enc.modality_labels],
            positive_label=pos,
            true_proba_test=self.true_proba_test,
            true_proba_train=self.true_proba_train,
            name=self.name,
        )

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train={self.train.shape}, test={self.test.shape}, "
            f"label={self.label!r})"
        )


def other_class(labels: pd.Series, positive: str) -> str:
    """The label value of a two-class column ``labels`` (n,) that is not ``positive``.

    Values are compared as :func:`~aggmrf_explore.encoding.label_strings` writes them;
    ``labels`` must hold exactly two classes (``encode_label`` checks that first).
    """
    vals = set(label_strings(labels).astype(str).tolist())
    vals.discard(positive)
    return vals.pop()


def select_features(
    ds: Dataset,
    features: str | Sequence[str] | None,
    drop_features: str | Sequence[str] | None,
) -> Dataset:
    """Keep ``features`` (all when None) minus ``drop_features`` of ``ds``, in place.

    Unknown names, the label column and an empty selection raise AggMRFError naming the
    available feature columns.  Returns ``ds`` (its ``train`` / ``test`` narrowed).
    """
    if features is None and drop_features is None:
        return ds
    available = ds.feature_columns

    def _check(cols, what):
        if isinstance(cols, str):
            cols = [cols]
        cols = list(cols)
        unknown = [c for c in cols if c not in available]
        if unknown:
            hint = " (that is the label column)" if ds.label in unknown else ""
            raise AggMRFError(
                f"unknown {what} {unknown}{hint}; available feature columns of "
                f"{ds.name!r}: {available}."
            )
        return cols

    keep = available if features is None else _check(features, "features")
    if drop_features is not None:
        drop = set(_check(drop_features, "drop_features"))
        keep = [c for c in keep if c not in drop]
    if not keep:
        raise AggMRFError(f"no feature left after selection; available columns: {available}.")
    cols = [*keep, ds.label]
    ds.train = ds.train[cols]
    ds.test = ds.test[cols]
    return ds


def target_encode(
    ds: Dataset,
    columns: Sequence[str],
    holdout_fraction: float = 0.3,
    seed: int = 0,
    **encoder_kwargs: Any,
) -> tuple[Dataset, dict[str, TargetEncoder]]:
    """Target-encode ``columns`` of ``ds`` with encoders fitted on a held-out part of ds.train.

    Returns (dataset, encoders): the dataset's train split holds only the rows that were
    *not* held out (the rows that get aggregated), its test split is transformed with the
    same encoders; the encoded columns hold bucket labels (categorical, the encoder's
    ``labels``).  ``encoder_kwargs`` go to :class:`~aggmrf_explore.high_cardinality.TargetEncoder`.
    Fitting on held-out rows is what keeps the released aggregates and the encoding from
    leaking each other's noise (Win-Vector's "split training" of impact codes).
    """
    if not 0 < holdout_fraction < 1:
        raise AggMRFError(f"holdout_fraction must be in (0, 1); got {holdout_fraction!r}.")
    missing = [c for c in columns if c not in ds.feature_columns]
    if missing:
        raise AggMRFError(f"unknown columns {missing}; feature columns: {ds.feature_columns}.")
    rng = np.random.default_rng(seed)
    n = len(ds.train)
    held = np.zeros(n, dtype=bool)
    held[rng.permutation(n)[: int(round(holdout_fraction * n))]] = True
    y_all, _ = encode_label(ds.train[ds.label], positive=ds.positive)
    train = ds.train.loc[~held].reset_index(drop=True).copy()
    test = ds.test.copy()
    encoders = {}
    for col in columns:
        enc = TargetEncoder(**encoder_kwargs).fit(ds.train[col].to_numpy()[held], y_all[held])
        labels = np.asarray(enc.labels, dtype=object)
        cats = pd.CategoricalDtype(enc.labels)
        train[col] = pd.Categorical(labels[enc.transform(train[col].to_numpy())], dtype=cats)
        test[col] = pd.Categorical(labels[enc.transform(test[col].to_numpy())], dtype=cats)
        encoders[col] = enc
    out = Dataset(
        name=f"{ds.name}-target-encoded",
        train=train,
        test=test,
        label=ds.label,
        description=f"{ds.description} Target-encoded {list(columns)} on {held.sum()} held-out rows.",
        citation=ds.citation,
        true_proba_train=None if ds.true_proba_train is None else ds.true_proba_train[~held],
        true_proba_test=ds.true_proba_test,
        truth=ds.truth,
        positive=ds.positive,
        encoding={"unseen": "other"},
    )
    return out, encoders
