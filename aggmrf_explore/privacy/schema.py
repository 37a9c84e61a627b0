"""The schema a release publishes: declared in public, or chosen with differential privacy.

A release's schema (the features, their bin edges and categories) is printed in
release.json and fixes which rows the tables list.  Fitted on the records as they are
(``Encoder.fit``), it depends on single records, deterministically: a bin label prints the
data's minimum, a category held by one person appears because that person is in.  The
noise on the counts does not cover that.  This module gives the two schemas a private
release may have:

* a **declared** schema (:func:`declared_schema`): the data owner states each feature's
  categories and bin edges (or bounds and a number of equal-width bins) from public
  knowledge, e.g. a codebook.  It costs no privacy and does not depend on the records.
  The bundled datasets carry one each (:func:`bundled_schema`, written from the UCI
  codebooks).  The file format is the ``features`` list of :func:`declared_schema`.
* a **DP** schema (:func:`private_schema`): chosen from the records at a stated (ε, δ):
  a numeric feature's bin edges are quantiles of a noisy histogram on a fixed grid of
  round numbers (:data:`GRID`; discrete Laplace noise from OpenDP, secure), a categorical
  feature's categories those whose noisy count passes a threshold (OpenDP's Laplace
  partition selection, ``make_laplace_threshold``); every other value maps to "(other)".
  Its (ε, δ) is added to the release's total (:func:`total_privacy`).

Edges are grid points or declared numbers and categories are declared or selected with
noise, so no label prints a value because a record holds it: labels read "< 25",
"[25, 35)", "≥ 65".
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from importlib import resources

import numpy as np
import pandas as pd

from ..encoding import OTHER, Schema
from ..errors import AggMRFError
from ..values import format_number, natural_key
from .checks import delta_value, opendp, positive_finite
from .sampling import secure_integer_noise

__all__ = [
    "GRID",
    "SCHEMA_SOURCES",
    "declared_schema",
    "bundled_schema",
    "private_schema",
    "bin_labels",
    "total_privacy",
]

# what release.json says of where its schema came from
SCHEMA_SOURCES = {
    "declared": "declared by the data owner (public; costs no privacy)",
    "dp": "chosen from the records with differential privacy (its ε, δ included in the total)",
    "records": "fitted on the records without privacy: NOT private (bin edges and categories "
    "depend on single records)",
}


def _grid() -> np.ndarray:
    """0 and ±m·10^e for m = 1.0, 1.1, …, 9.9 and e = −2 … 9: 2 161 round numbers."""
    mant = np.round(np.arange(10, 100) / 10.0, 1)
    pos = np.unique(np.round(np.concatenate([mant * 10.0**e for e in range(-2, 10)]), 12))
    return np.concatenate([-pos[::-1], [0.0], pos])


GRID = _grid()
"""The fixed, data-independent candidate edges of a DP schema's numeric bins (sorted)."""

_MAX_SCHEMA_BYTES = 10_000_000


# ---------------------------------------------------------------------- labels
def bin_labels(edges: Sequence[float]) -> list[str]:
    """Modality labels of the bins cut at ``edges`` (increasing): "< e1", "[e1, e2)", …,
    "≥ ek"; a single "all" bin without edges.  Only the edges are printed."""
    e = [format_number(v) for v in edges]
    if not e:
        return ["all"]
    return [f"< {e[0]}", *(f"[{a}, {b})" for a, b in zip(e[:-1], e[1:], strict=True)), f"≥ {e[-1]}"]


# ---------------------------------------------------------------------- declared schema
def _declared_feature(i: int, f: object) -> dict:
    """One feature of a declaration → Schema keyword lists (kind, labels, edges, known…)."""
    if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
        raise AggMRFError(f"schema feature #{i + 1} needs a non-empty 'name'.")
    name = f["name"]
    kind = f.get("kind", "numeric" if ("edges" in f or "bounds" in f) else "categorical")
    if kind == "numeric":
        if "edges" in f:
            edges = f["edges"]
        elif "bounds" in f and "bins" in f:
            lo, hi = (
                f["bounds"]
                if isinstance(f["bounds"], list) and len(f["bounds"]) == 2
                else (None, None)
            )
            k = f["bins"]
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
                raise AggMRFError(
                    f"schema feature {name!r}: 'bins' must be a whole number 1 … 1000."
                )
            lo = positive_or_any(name, "bounds", lo)
            hi = positive_or_any(name, "bounds", hi)
            if not hi > lo:
                raise AggMRFError(
                    f"schema feature {name!r}: 'bounds' must be [low, high] with low < high."
                )
            edges = list(np.linspace(lo, hi, k + 1)[1:-1])
        else:
            raise AggMRFError(
                f"schema feature {name!r} (numeric) needs 'edges' (increasing numbers) or "
                "'bounds': [low, high] with 'bins': k."
            )
        if not isinstance(edges, list) or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in edges
        ):
            raise AggMRFError(f"schema feature {name!r}: 'edges' must be a list of numbers.")
        return {"name": name, "kind": "numeric", "edges": [float(v) for v in edges]}
    if kind != "categorical":
        raise AggMRFError(f"schema feature {name!r}: kind must be 'numeric' or 'categorical'.")
    cats = f.get("categories", [])
    groups = f.get("groups", {})
    if (
        not isinstance(cats, list)
        or not isinstance(groups, dict)
        or not (cats or groups)
        or any(not isinstance(c, str | int | float) or isinstance(c, bool) for c in cats)
        or any(
            not isinstance(g, list) or not g or any(not isinstance(v, str) for v in g)
            for g in groups.values()
        )
    ):
        raise AggMRFError(
            f"schema feature {name!r} (categorical) needs 'categories' (a list of values, each "
            "its own modality) and/or 'groups' ({modality: [values]}, several values as one)."
        )
    unseen = f.get("unseen", "other")
    if unseen not in ("other", "error"):
        raise AggMRFError(f"schema feature {name!r}: 'unseen' must be 'other' or 'error'.")
    numbers = not groups and all(isinstance(c, int | float) for c in cats)
    labels = [format_number(c) if numbers else str(c) for c in cats] + [str(g) for g in groups]
    known = [float(c) for c in cats] if numbers else [str(c) for c in cats]
    codes = list(range(len(cats)))
    for k, values in enumerate(groups.values()):
        known += values
        codes += [len(cats) + k] * len(values)
    if len(set(labels)) != len(labels) or len(set(map(str, known))) != len(known):
        raise AggMRFError(f"schema feature {name!r} lists a category or a value twice.")
    return {
        "name": name,
        "kind": "categorical",
        "known": known,
        "codes": codes,
        "labels": labels,
        "values": "number" if numbers else "string",
        "unseen": unseen,
    }


def positive_or_any(name: str, what: str, v: object) -> float:
    """``v`` as a finite float (a bound may be any finite number)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise AggMRFError(f"schema feature {name!r}: {what!r} must hold finite numbers.")
    return float(v)


def _schema_of(features: list[dict], label: dict | None = None) -> Schema:
    """A :class:`Schema` from the per-feature lists of :func:`_declared_feature`."""
    names, mods, kinds, edges, known, codes, values, unseen = ([] for _ in range(8))
    for f in features:
        names.append(f["name"])
        kinds.append(f["kind"])
        if f["kind"] == "numeric":
            mods.append(bin_labels(f["edges"]))
            edges.append(f["edges"])
            known.append(None)
            codes.append(None)
            values.append("number")
            unseen.append("error")
        else:
            other = [OTHER] if f["unseen"] == "other" and OTHER not in f["labels"] else []
            mods.append([*f["labels"], *other])
            edges.append(None)
            known.append(list(f["known"]))
            codes.append(list(f.get("codes", range(len(f["known"])))))
            values.append(f["values"])
            unseen.append(f["unseen"])
    schema = Schema(names, mods, kinds, edges, known, codes, values, unseen)
    label = label or {}
    schema.label = label.get("label")
    schema.positive_label = label.get("positive_label")
    schema.classes = label.get("classes")
    return schema


def declared_schema(declaration: dict | str) -> Schema:
    """The :class:`Schema` a data owner declares (a dict, or the path of a JSON file).

    Format (JSON)::

        {"label": "income", "positive_label": ">50K", "classes": ["<=50K", ">50K"],
         "features": [
           {"name": "age", "kind": "numeric", "edges": [25, 35, 45, 55, 65]},
           {"name": "hours", "kind": "numeric", "bounds": [0, 100], "bins": 5},
           {"name": "sex", "kind": "categorical", "categories": ["Female", "Male"],
            "unseen": "other"}]}

    A numeric feature has bins [e_k, e_{k+1}) between its ``edges`` (or ``bins`` equal-width
    bins between ``bounds``; values below or above fall in the first or last bin); a
    categorical one its ``categories`` in the order given, then its ``groups`` ({modality:
    [values]}: several raw values as one modality, e.g. countries by world region), and,
    with ``unseen`` "other" (the default), one "(other)" modality for any value it does not
    list ("error": such a value is refused).  A full schema as release.json stores it (features with ``modalities``) is
    accepted too.
    """
    if isinstance(declaration, str):
        declaration = read_declaration(declaration)
    if not isinstance(declaration, dict) or not isinstance(declaration.get("features"), list):
        raise AggMRFError("a declared schema is an object with a 'features' list.")
    feats = declaration["features"]
    if not feats:
        raise AggMRFError("a declared schema needs at least one feature.")
    if all(isinstance(f, dict) and "modalities" in f for f in feats):
        return Schema.from_dict(declaration)  # a release's own schema
    return _schema_of([_declared_feature(i, f) for i, f in enumerate(feats)], declaration)


def read_declaration(path: str) -> dict:
    """A declared schema's JSON file → dict (one AggMRFError naming the file otherwise)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_SCHEMA_BYTES + 1)
    except OSError as e:
        raise AggMRFError(f"cannot read the schema {path!r}: {e.strerror or e}.") from None
    if len(raw) > _MAX_SCHEMA_BYTES:
        raise AggMRFError(f"the schema {path!r} is larger than 10 MB; a schema is small.")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AggMRFError(f"the schema {path!r} is not valid UTF-8 JSON: {e}.") from None


def bundled_schema(dataset: str) -> Schema | None:
    """The declared public schema of a bundled dataset ("adult", "bank"), written from its
    UCI codebook (``aggmrf_explore/data/NAME.schema.json``); None for other datasets."""
    ref = resources.files("aggmrf_explore") / "data" / f"{dataset}.schema.json"
    if not ref.is_file():
        return None
    return declared_schema(json.loads(ref.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------- DP schema
def _dp_edges(x: np.ndarray, n_bins: int, scale: float) -> list[float]:
    """Bin edges (grid points) at the k/n_bins quantiles of a noisy histogram of ``x`` on
    :data:`GRID`: discrete Laplace noise of ``scale`` from OpenDP's secure sampler on every
    cell (ε = 1/scale under add/remove-one: a record is in one cell).

    Post-processing, to keep the thousands of empty cells' noise out of the quantiles: the
    data's range is the first to the last cell whose noisy count passes
    ``scale``·ln(100·cells) (an empty cell does so with probability < 1 % over the whole
    grid), and the quantiles are those of the noisy counts in that range, clipped at 0.
    Records outside the range fall in the first or last bin, as any value does."""
    cells = np.searchsorted(GRID, x, side="right")  # cell j holds [GRID[j-1], GRID[j])
    counts = np.bincount(cells, minlength=GRID.size + 1).astype(np.float64)
    noisy = counts + secure_integer_noise("discrete_laplace", scale, counts.size)
    big = np.flatnonzero(noisy >= scale * math.log(100.0 * counts.size))
    if big.size == 0:
        return []
    inside = np.clip(noisy[big[0] : big[-1] + 1], 0.0, None)
    cdf = np.cumsum(inside)
    edges = []
    for k in range(1, n_bins):
        j = big[0] + int(np.searchsorted(cdf, k / n_bins * cdf[-1], side="left"))
        if j < GRID.size:
            edges.append(float(GRID[j]))
    return sorted(set(edges))


def _threshold(
    scale: float, delta: float, distance: tuple[int, int, int]
) -> tuple[int, float, float]:
    """(threshold, ε, δ) of OpenDP's Laplace partition selection at ``scale``: the smallest
    threshold whose privacy map at ``distance`` (l0, l1, l∞) gives δ ≤ ``delta``."""
    dp = opendp()
    dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    met = dp.l01inf_distance(dp.absolute_distance(T=int))
    t = int(math.ceil(1 + scale * math.log(1.0 / (2.0 * delta))))
    for _ in range(64):
        meas = dp.m.make_laplace_threshold(dom, met, scale=scale, threshold=t)
        eps, dl = meas.map(distance)
        if dl <= delta:
            return t, float(eps), float(dl)
        t = int(math.ceil(t * 1.05)) + 1
    raise AggMRFError(f"no partition-selection threshold reaches δ = {delta:g}.")


def _dp_categories(
    s: pd.Series, epsilon: float, delta: float, replace: bool
) -> tuple[list[str], float, float]:
    """(categories kept, ε, δ spent): the values of ``s`` whose noisy count passes
    OpenDP's Laplace partition selection, in natural order."""
    dp = opendp()
    distance = (2, 2, 1) if replace else (1, 1, 1)  # keys changed, total change, per key
    scale = distance[1] / epsilon
    t, eps, dl = _threshold(scale, delta, distance)
    dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    met = dp.l01inf_distance(dp.absolute_distance(T=int))
    meas = dp.m.make_laplace_threshold(dom, met, scale=scale, threshold=t)
    counts = {str(k): int(v) for k, v in s.astype(str).value_counts().items()}
    kept = sorted(meas(counts), key=natural_key) if counts else []
    return kept, eps, dl


def private_schema(
    df: pd.DataFrame,
    features: Sequence[str],
    *,
    epsilon: float,
    delta: float,
    n_bins: int = 10,
    neighbours: str = "add/remove",
) -> tuple[Schema, dict]:
    """A schema chosen from the records ``df`` at (``epsilon``, ``delta``), and what it spent.

    ``features``: the feature columns (numeric dtypes are binned, every other column is
    categorical with "(other)" for values not selected);  ``epsilon`` split equally over
    the features;  ``delta`` split over the categorical ones (partition selection);
    ``neighbours``: "add/remove" or "replace" (a replaced record moves two cells: the
    noise doubles).  Noise from OpenDP's secure samplers; no seed.  Returns (schema
    without its label fields, ``{"source": "dp", "epsilon", "delta", …}``).
    """
    epsilon = positive_finite("schema epsilon", epsilon)
    delta = delta_value(delta)
    if neighbours not in ("add/remove", "replace"):
        raise AggMRFError(f"neighbours must be 'add/remove' or 'replace'; got {neighbours!r}.")
    features = list(features)
    if not features:
        raise AggMRFError("a DP schema needs at least one feature.")
    replace = neighbours == "replace"
    numeric = [
        pd.api.types.is_numeric_dtype(df[f]) and not pd.api.types.is_bool_dtype(df[f])
        for f in features
    ]
    eps_f = epsilon / len(features)
    n_cat = max(1, len(features) - sum(numeric))
    spent_eps, spent_delta, out = 0.0, 0.0, []
    for f, is_num in zip(features, numeric, strict=True):
        if is_num:
            x = pd.to_numeric(df[f], errors="coerce").to_numpy(dtype=np.float64)
            x = x[np.isfinite(x)]
            edges = _dp_edges(x, n_bins, (2.0 if replace else 1.0) / eps_f)
            out.append({"name": f, "kind": "numeric", "edges": edges})
            spent_eps += eps_f
        else:
            kept, e, dl = _dp_categories(df[f], eps_f, delta / n_cat, replace)
            out.append(
                {
                    "name": f,
                    "kind": "categorical",
                    "known": kept,
                    "labels": kept,
                    "values": "string",
                    "unseen": "other",
                }
            )
            spent_eps += e
            spent_delta += dl
    spend = {
        "source": "dp",
        "about": SCHEMA_SOURCES["dp"],
        "epsilon": spent_eps,
        "delta": spent_delta,
        "neighbouring": neighbours,
        "method": "numeric: quantiles of a noisy histogram on a fixed grid of round numbers "
        "(discrete Laplace); categorical: Laplace partition selection (OpenDP)",
    }
    return _schema_of(out), spend


def total_privacy(
    counts: tuple[float, float], schema: tuple[float, float] | None
) -> tuple[float, float]:
    """(ε, δ) of the whole release: the counts' and the schema's, added (basic composition)."""
    if schema is None:
        return float(counts[0]), float(counts[1])
    return float(counts[0] + schema[0]), float(counts[1] + schema[1])
