"""The bundled UCI datasets, Adult and Bank, read from the gzip copies in ``aggmrf_explore/data``.

Never from the network: the md5 of the decompressed bytes and the record counts are
checked against ``data/checksums.json`` on first load, and the parsed frames are cached
in-process (callers get shallow copies, safe under pandas copy-on-write);
:func:`clear_cache` forgets them.

Rare / unseen categories: the default encoding of both is ``unseen="other",
min_count=5``: every categorical feature gets an extra ``"(other)"`` modality, holding
the categories seen fewer than 5 times in the training split and any value that only
occurs in the test split.  Override with ``Dataset.encode(unseen=..., min_count=...)``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import zlib
from importlib import resources

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from .dataset import Dataset
from .splits import check_fraction, stratified_split

__all__ = ["adult", "bank", "clear_cache", "ADULT_CITATION", "BANK_CITATION", "ADULT_COLUMNS"]

ADULT_CITATION = (
    "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20 (CC BY 4.0)"
)
BANK_CITATION = (
    "Moro, S., Rita, P. & Cortez, P. (2014). Bank Marketing [Dataset]. UCI Machine Learning "
    "Repository. https://doi.org/10.24432/C5K306 ; S. Moro, P. Cortez and P. Rita. A Data-Driven "
    "Approach to Predict the Success of Bank Telemarketing. Decision Support Systems, 2014. "
    "(CC BY 4.0)"
)

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]

_REAL_ENCODING = {"unseen": "other", "min_count": 5}


# ====================================================================== verified reading
def _data_file(name: str):
    """The bundled file ``name`` (a Traversable / Path); tests monkeypatch this."""
    return resources.files("aggmrf_explore") / "data" / name


@functools.lru_cache(maxsize=1)
def _manifest() -> dict:
    return json.loads(_data_file("checksums.json").read_text(encoding="utf-8"))


def _read_verified(name: str) -> bytes:
    """Decompressed bytes of bundled ``name`` (e.g. "adult.data.gz"), md5-checked."""
    expected = _manifest()[name]
    f = _data_file(name)
    reinstall = "reinstall the package (pip install --force-reinstall aggmrf-explore)."
    try:
        raw = f.read_bytes()
    except (FileNotFoundError, OSError) as e:
        raise AggMRFError(f"bundled data file {name} is missing ({e}); {reinstall}") from None
    try:
        data = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise AggMRFError(
            f"bundled data file {name} is not a valid gzip file ({e}); {reinstall}"
        ) from None
    md5 = hashlib.md5(data).hexdigest()
    if md5 != expected["md5"]:
        raise AggMRFError(
            f"bundled data file {name} is corrupted: md5 checksum of its content is {md5}, "
            f"expected {expected['md5']}; {reinstall}"
        )
    return data


def _check_rows(name: str, df: pd.DataFrame) -> None:
    want = _manifest()[name]["rows"]
    if len(df) != want:
        raise AggMRFError(
            f"bundled data file {name} parsed to {len(df)} rows, expected {want}; "
            "reinstall the package."
        )


def _strip_strings(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c].dtype):
            df[c] = df[c].astype(str).str.strip()
    return df


@functools.cache
def _adult_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    out = []
    for fname, skip in (("adult.data.gz", 0), ("adult.test.gz", 1)):
        df = pd.read_csv(
            io.BytesIO(_read_verified(fname)),
            header=None,
            names=ADULT_COLUMNS,
            skiprows=skip,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=[],
        )
        df = _strip_strings(df)
        df["income"] = df["income"].str.rstrip(".")
        _check_rows(fname, df)
        out.append(df)
    return out[0], out[1]


@functools.cache
def _bank_frame() -> pd.DataFrame:
    fname = "bank-additional-full.csv.gz"
    df = pd.read_csv(
        io.BytesIO(_read_verified(fname)), sep=";", keep_default_na=False, na_values=[]
    )
    df = _strip_strings(df)
    _check_rows(fname, df)
    return df


def clear_cache() -> None:
    """Forget the parsed bundled files (the next load re-reads and re-verifies them)."""
    _manifest.cache_clear()
    _adult_frames.cache_clear()
    _bank_frame.cache_clear()


# ====================================================================== the datasets
def _subsample(df: pd.DataFrame, n: int | None, seed: int, what: str) -> pd.DataFrame:
    if n is None:
        return df
    if not isinstance(n, int | np.integer) or n < 1:
        raise AggMRFError(f"n must be a positive integer; got {n!r}.")
    if n > len(df):
        raise AggMRFError(f"n={n} is larger than the {what} ({len(df)} rows).")
    idx = np.sort(np.random.default_rng(seed).choice(len(df), size=n, replace=False))
    return df.iloc[idx].reset_index(drop=True)


def adult(n: int | None = None, seed: int = 0) -> Dataset:
    """UCI Adult, official split: 32,561 train / 16,281 test, 14 features, label ``income``.

    ``n`` takes a seeded random subsample of n training records (the test split is kept).
    """
    train, test = _adult_frames()
    train = _subsample(train.copy(deep=False), n, seed, "Adult train split")
    return Dataset(
        name="adult",
        train=train,
        test=test.copy(deep=False),
        label="income",
        description=(
            "UCI Adult (census income), official split: 32,561 train / 16,281 test records, "
            "14 features, label income (positive '>50K'). '?' (unknown) is kept as a category."
        ),
        citation=ADULT_CITATION,
        positive=">50K",
        encoding=dict(_REAL_ENCODING),
    )


def bank(n: int | None = None, seed: int = 0, test_fraction: float = 0.3) -> Dataset:
    """UCI Bank marketing (bank-additional-full, 41,188 records, 20 features, label ``y``).

    Seeded stratified split, 70 % train / 30 % test.  ``n`` subsamples the train split.
    Note: ``duration`` is only known after the call (it leaks the outcome); drop it with
    ``drop_features=["duration"]`` for a realistic model.
    """
    check_fraction(test_fraction)
    df = _bank_frame()
    y = (df["y"] == "yes").to_numpy()
    tr, te = stratified_split(y, test_fraction, seed)
    train = _subsample(df.iloc[tr].reset_index(drop=True), n, seed, "Bank train split")
    return Dataset(
        name="bank",
        train=train,
        test=df.iloc[te].reset_index(drop=True),
        label="y",
        description=(
            f"UCI Bank marketing (bank-additional-full): 41,188 records, 20 features, label y "
            f"(positive 'yes'); seeded stratified split {1 - test_fraction:.0%} / "
            f"{test_fraction:.0%} (seed {seed})."
        ),
        citation=BANK_CITATION,
        positive="yes",
        encoding=dict(_REAL_ENCODING),
    )
