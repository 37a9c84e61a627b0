"""Local differential privacy: randomized response on records, unbiased tables by channel inversion.

Central privacy (``privacy.release``) trusts a curator with the exact records and adds noise
to the tables.  Here each person randomizes their own record before anyone sees it; the
curator aggregates the randomized records and inverts the known channel to get unbiased
tables, which the trainer takes exactly as it takes a central release.

Mechanism (:class:`RandomizedResponse`)
---------------------------------------
Feature f (k = M_f values) is sent through k-ary randomized response at ε_f::

    P(x̃ = x | x) = p_f = e^ε_f / (e^ε_f + k − 1),   P(x̃ = v | x) = q_f = 1 / (e^ε_f + k − 1)  (v ≠ x)

so P(x̃ | x) / P(x̃ | x') ≤ p_f / q_f = e^ε_f, with equality at x̃ = x ≠ x'.  The label gets
binary randomized response at ε_y (keep with e^ε_y / (e^ε_y + 1)).  The fields are
randomized independently, so a record's release is (Σ_f ε_f + ε_y)-locally private
(sequential composition) and the split below makes that sum exactly ε.  A feature with one
value (k = 1) has nothing to randomize: p = 1, q = 0, ε_f = 0, and it takes no share.

A usable channel: every randomized field's probability gap p_f − q_f must be at least
``MIN_GAP`` = 10⁻⁶.  A cell estimate's error grows like √n / Π (p_f − q_f) over its axes, so
below the floor its standard deviation exceeds n for every n ≤ 10¹² (the largest release
the readers accept): the tables would carry no signal, and the variances overflow float64.
:class:`RandomizedResponse` refuses such an ε where it is made (an ``AggMRFError`` that says
the smallest ε that gives every field the floor).

The ε split (``split``), over the m randomized fields (features with k ≥ 2, and the label
when ``protect_label``):

* ``"equal"`` (default): ε/m each;
* ``"log-k"``: ε_f ∝ ln k_f (ln 2 for the label).  With ε_f = a·ln k the keep probability
  k^a / (k^a + k − 1) depends little on k, so wide features are not drowned while narrow
  ones keep far more than they need;
* a sequence of positive weights, one per feature then (if protected) one for the label:
  ε_f ∝ w_f (the weights of k = 1 features are ignored).

Unbiased tables (the linear-moments idea, Raghunathan et al. 2016)
-------------------------------------------------------------------
Feature f's channel is C_f = (p_f − q_f) I + q_f 11ᵀ (k × k, column x = law of x̃ given x).
Fields are randomized independently, so the expected observed table of a table over
features (f1, f2) is E[Õ] = C_f1 T C_f2ᵀ, i.e. vec(E[Õ]) = (C_f1 ⊗ C_f2) vec(T) in the
layout's row-major order: the observed distribution is *linear* in the sufficient statistics
T.  Sherman–Morrison, with p + (k − 1) q = 1::

    C⁻¹ = (I − q 11ᵀ) / (p − q)

so T̂ = C_f1⁻¹ Õ C_f2⁻ᵀ is applied one axis at a time in O(k1·k2) (any arity), never forming
the (k1·k2)² matrix.  Label sums: the label is one more axis of size 2; the observed table
over (x̃, ỹ) is [d̃ − c̃, c̃]; inverting every axis and keeping ỹ = 1 gives::

    d̂ = F(d̃),   ĉ = F(c̃ − q_y d̃) / (p_y − q_y)        (F: the feature inversion)

The intercept row is the arity-0 case: d̂₀ = n (the number of reports is public in the
local model) and ĉ₀ = (c̃₀ − q_y n) / (p_y − q_y).  C⁻¹ preserves column sums, so every
estimated table sums to n and its label sums to ĉ₀: the intercept agrees with every table.
The estimates are unbiased (given the records) and can be negative.

Covariance
----------
Given the records (true table T), Õ is a sum of n independent categorical draws, record i
with law π_i = C e_{x_i}: Cov(Õ | T) = diag(C T) − C diag(T) Cᵀ, hence with A = C⁻¹ = ⊗_f A_f::

    Cov(T̂ | T) = A diag(C T) Aᵀ − diag(T)

(When the records are themselves i.i.d. from a population π, Õ is multinomial(n, Cπ) and
the sampling covariance n(diag π − ππᵀ) adds to this; the privacy noise is the part above.)
The diagonal is Var(T̂_j) = [(A∘A)(C T)]_j − T_j with A_f∘A_f = ((1 − 2q) I + q² 11ᵀ)/(p − q)²,
again O(table size) (:func:`cell_variances`); :func:`cell_covariance` gives the dense matrix
for small tables.  Every record adds O(1) to every cell's variance, so the standard deviation
of a local estimate grows like √n, whereas central noise does not depend on n.

For MRF-N (:class:`CellGaussianNoise`): the estimate is approximated as b_j = A_j + L_j with
independent L_j ~ N(0, σ_j²); the cross-cell covariances (within and across tables) are
ignored.  σ_j² is estimated without knowing T: E[Õ] = C T, so (A∘A) Õ − T̂ is an unbiased
estimate of Var(T̂_j) (floored at 0).  (Plugging the projected max(T̂, 0) into C T instead
overstates σ several-fold at small ε: the projection adds mass.)  Checked in the tests: the
interval T̂_j ± 1.96 σ̂_j covers T_j in ≈ 95 % of cells and seeds.  During training MRF-N
re-evaluates σ_j at the model's expected tables instead (:meth:`CellGaussianNoise.at_model`):
the same closed form with the model's (d̂, ĉ) as T, smoother than the plug-in.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import AggMRFError
from ..tables import AggregatedData, TableLayout, aggregate
from .checks import generator

__all__ = [
    "SPLITS",
    "MIN_GAP",
    "min_local_epsilon",
    "MAX_DENSE_CELLS",
    "Channel",
    "rr_probabilities",
    "split_epsilon",
    "RandomizedResponse",
    "make_local_mechanism",
    "channel_matrix",
    "apply_channel",
    "invert_channel",
    "cell_variances",
    "cell_covariance",
    "CellGaussianNoise",
    "local_variances",
    "unbiased_tables",
    "local_release",
    "records_needed_theory",
]

SPLITS = ("equal", "log-k")
MIN_GAP = 1e-6  # the smallest usable randomized-response gap p − q (module docstring)
MAX_DENSE_CELLS = 4096  # cell_covariance refuses larger tables (a 4096² float64 matrix is 128 MiB)

Channel = tuple[float, float]
"""(p, q) of a k-ary randomized response: keep probability p, probability q of each other value."""


# ---------------------------------------------------------------------- probabilities
def rr_probabilities(epsilon: float, k: int) -> Channel:
    """(p, q) of k-ary randomized response at ε: p = e^ε/(e^ε + k − 1), q = p·e^(−ε).

    k = 1: (1, 0) whatever ε (nothing to randomize).  Computed as p = 1/(1 + (k − 1)e^(−ε)),
    stable for large ε; p/q = e^ε to rounding.
    """
    if not isinstance(k, numbers.Integral) or k < 1:
        raise AggMRFError(f"k (number of values) must be an integer ≥ 1; got {k!r}.")
    if k == 1:
        return 1.0, 0.0
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps > 0.0):
        raise AggMRFError(f"randomized response needs a finite ε > 0; got {epsilon!r}.")
    e = math.exp(-eps)
    p = 1.0 / (1.0 + (int(k) - 1) * e)
    return p, p * e


def _gap(epsilon: float, k: int) -> float:
    """p − q = (1 − e^(−ε)) / (1 + (k − 1) e^(−ε)), accurate for small ε (expm1)."""
    if k == 1:
        return 1.0
    e = math.exp(-epsilon)
    return -math.expm1(-epsilon) / (1.0 + (k - 1) * e)


def _epsilon_for_gap(gap: float, k: int) -> float:
    """The ε at which k-ary randomized response has p − q = ``gap`` (inverse of :func:`_gap`)."""
    return math.log1p((k - 1) * gap) - math.log1p(-gap)


def min_local_epsilon(
    n_modalities: Sequence[int],
    split: str | Sequence[float] = "equal",
    protect_label: bool = True,
) -> float:
    """The smallest person's ε whose split gives every randomized field a probability gap
    p − q ≥ :data:`MIN_GAP` (the shares are linear in ε, so this is exact)."""
    eps_f, eps_y = split_epsilon(1.0, n_modalities, split, protect_label)
    need = [
        _epsilon_for_gap(MIN_GAP, int(k)) / e
        for e, k in zip(eps_f, n_modalities, strict=True)
        if int(k) > 1
    ]
    if protect_label:
        need.append(_epsilon_for_gap(MIN_GAP, 2) / eps_y)
    return max(need)


def split_epsilon(
    epsilon: float,
    n_modalities: Sequence[int],
    split: str | Sequence[float] = "equal",
    protect_label: bool = True,
) -> tuple[np.ndarray, float]:
    """A person's ε split over their fields: (ε_f per feature (D,), ε_y of the label).

    See the module docstring for ``split``.  Features with one value get 0; the label gets 0
    when not protected.  The randomized fields' shares sum to ε (sequential composition).
    """
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps > 0.0):
        raise AggMRFError(f"the local privacy budget ε must be finite and > 0; got {epsilon!r}.")
    m = np.asarray(n_modalities, dtype=np.int64)
    if m.ndim != 1 or m.size == 0 or np.any(m < 1):
        raise AggMRFError(
            f"n_modalities must be a non-empty list of integers ≥ 1; got {m.tolist()}."
        )
    active = np.append(m >= 2, bool(protect_label))  # (D + 1,): features, then label
    if not active.any():
        raise AggMRFError(
            "nothing to randomize: every feature has one value and the label is not protected."
        )
    if isinstance(split, str):
        if split not in SPLITS:
            raise AggMRFError(f"split must be one of {SPLITS} or a list of weights; got {split!r}.")
        if split == "equal":
            w = np.ones(m.size + 1)
        else:
            w = np.log(np.append(np.maximum(m, 1), 2)).astype(np.float64)
    else:
        w = np.asarray(split, dtype=np.float64)
        want = m.size + int(bool(protect_label))
        if w.shape != (want,):
            raise AggMRFError(
                f"split weights: give {want} (one per feature"
                f"{', then one for the label' if protect_label else ''}); got shape {w.shape}."
            )
        if not protect_label:
            w = np.append(w, 0.0)
        if not np.all(np.isfinite(w)) or np.any(w[active] <= 0):
            raise AggMRFError("split weights of randomized fields must be finite and > 0.")
    w = np.where(active, w, 0.0)
    shares = eps * w / w.sum()
    return shares[:-1].copy(), float(shares[-1])


# ---------------------------------------------------------------------- mechanism
@dataclass(frozen=True, eq=False)
class RandomizedResponse:
    """ε-locally-private randomized response on coded records (one report per person): the
    ``local`` mechanism of ``privacy.make_mechanism``, a ``privacy.Mechanism``.

    epsilon : a person's total ε > 0;  n_modalities : M_f of each feature (D,);
    split : "equal", "log-k" or weights (see the module docstring);
    protect_label : randomize the label too (default) or send it as is.

    Derived (read-only): ``feature_epsilons`` (D,), ``label_epsilon``, ``keep`` (D,) = p_f,
    ``other`` (D,) = q_f (probability of each *specific* other value), ``gaps`` (D,) = p_f − q_f
    (computed with expm1, accurate at small ε), ``label_keep``.
    """

    epsilon: float
    n_modalities: tuple[int, ...]
    split: str | tuple[float, ...] = "equal"
    protect_label: bool = True
    feature_epsilons: np.ndarray = field(init=False, repr=False)
    label_epsilon: float = field(init=False)
    keep: np.ndarray = field(init=False, repr=False)
    other: np.ndarray = field(init=False, repr=False)
    gaps: np.ndarray = field(init=False, repr=False)
    label_keep: float = field(init=False)
    name: ClassVar[str] = "randomized-response"
    privacy: ClassVar[str] = "local"
    discrete: ClassVar[bool] = False
    delta: ClassVar[float] = 0.0
    label: ClassVar[str] = "Local"
    color: ClassVar[str] = "#9467bd"
    uses: ClassVar[tuple[str, ...]] = ("epsilon",)

    @classmethod
    def from_settings(cls, epsilon, layout, delta=None, accounting=None, calibration=None):
        """Randomized response at ε per person, split equally (:func:`make_local_mechanism`)."""
        return make_local_mechanism(epsilon, layout)

    def summary(self, names: list[str] | None = None) -> list[str]:
        """Each field's ε share and keep probability (markdown; ``names`` escaped by the caller)."""
        head = (
            "**Local (randomized response)**: each record is randomized before aggregation; "
            f"ε = {self.epsilon:g} per person, split equally over the fields (δ = 0)."
        )
        rows = self.fields(names).itertuples(index=False)
        table = [f"| {r.field} | {r.values} | {r.epsilon:.3g} | {r.keep:.3f} |" for r in rows]
        return [head, "", "| field | values | ε share | keep p |", "|---|---:|---:|---:|", *table]

    def __post_init__(self) -> None:
        m = tuple(int(v) for v in np.asarray(self.n_modalities, dtype=np.int64).ravel())
        split = self.split if isinstance(self.split, str) else tuple(float(w) for w in self.split)
        eps_f, eps_y = split_epsilon(self.epsilon, m, split, self.protect_label)
        pq = [
            rr_probabilities(e, k) if k > 1 else (1.0, 0.0) for e, k in zip(eps_f, m, strict=True)
        ]
        set_ = object.__setattr__
        set_(self, "epsilon", float(self.epsilon))
        set_(self, "n_modalities", m)
        set_(self, "split", split)
        set_(self, "protect_label", bool(self.protect_label))
        set_(self, "feature_epsilons", eps_f)
        set_(self, "label_epsilon", eps_y)
        set_(self, "keep", np.array([p for p, _ in pq]))
        set_(self, "other", np.array([q for _, q in pq]))
        set_(self, "gaps", np.array([_gap(e, k) for e, k in zip(eps_f, m, strict=True)]))
        set_(self, "label_keep", rr_probabilities(eps_y, 2)[0] if self.protect_label else 1.0)
        for a in (self.feature_epsilons, self.keep, self.other, self.gaps):
            a.setflags(write=False)
        self._check_usable()

    def _check_usable(self) -> None:
        """Refuse an ε whose channel leaves a field a gap p − q below :data:`MIN_GAP`."""
        fields = enumerate(zip(self.gaps, self.n_modalities, strict=True))
        gaps = [(g, f"feature #{f + 1} ({k} values)") for f, (g, k) in fields if k > 1]
        if self.protect_label:
            gaps.append((self._label_gap(), "the label"))
        gap, field_name = min(gaps, key=lambda t: t[0])
        if gap >= MIN_GAP:
            return
        need = min_local_epsilon(self.n_modalities, self.split, self.protect_label)
        unit = 10.0 ** (math.floor(math.log10(need)) - 2)
        need = math.ceil(need / unit) * unit  # rounded up to 3 digits: the ε shown works
        raise AggMRFError(
            f"local privacy at ε = {self.epsilon:.3g} leaves {field_name} a randomized-response "
            f"gap p − q = {gap:.3g}, below the usable floor {MIN_GAP:g} (the tables would carry "
            f"no signal for any number of records) — use ε ≥ {need:.3g} per person "
            f"(ε is split over {len(gaps)} fields)."
        )

    @property
    def n_features(self) -> int:
        return len(self.n_modalities)

    def feature_channel(self, f: int) -> Channel:
        """(p_f, q_f) of feature f."""
        return float(self.keep[f]), float(self.other[f])

    @property
    def label_channel(self) -> Channel:
        """(p_y, q_y) of the label ((1, 0) when not protected)."""
        return self.label_keep, 1.0 - self.label_keep

    def _label_gap(self) -> float:
        return _gap(self.label_epsilon, 2) if self.protect_label else 1.0

    def randomize(
        self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each record's randomized report: (X̃ (n, D) int32, ỹ (n,) int8).

        Vectorised; the draws, in this order, are U (n, D) uniforms (keep iff U < p_f), the
        replacement codes (n, D) uniform over the k_f − 1 other values, and V (n,) uniforms
        (keep the label iff V < p_y).  Deterministic for a seed.
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise AggMRFError(f"codes must have shape (n, {self.n_features}); got {X.shape}.")
        if X.size and not np.issubdtype(X.dtype, np.integer):
            raise AggMRFError("codes must be integers; encode the records first.")
        m = np.asarray(self.n_modalities)
        if X.size and (np.any(X < 0) or np.any(X >= m[None, :])):
            raise AggMRFError("codes outside 0..M_f − 1 for this mechanism's n_modalities.")
        y = np.asarray(y)
        if y.shape != (X.shape[0],) or not np.all((y == 0) | (y == 1)):
            raise AggMRFError(f"y must be {X.shape[0]} labels in {{0, 1}}; got shape {y.shape}.")
        g = generator(rng)
        n = X.shape[0]
        keep = g.random((n, self.n_features)) < self.keep[None, :]
        other = g.integers(0, np.maximum(m - 1, 1)[None, :], size=(n, self.n_features))
        other += (other >= X) & (m[None, :] > 1)  # uniform over the k − 1 values ≠ x
        Xt = np.where(keep, X, other).astype(np.int32)
        keep_y = g.random(n) < self.label_keep
        yt = np.where(keep_y, y, 1 - y).astype(np.int8)
        return Xt, yt

    def describe(self) -> dict:
        """JSON-able summary: ε, the split, and per field its ε and keep probability."""
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "split": self.split if isinstance(self.split, str) else list(self.split),
            "protect_label": self.protect_label,
            "feature_epsilons": [float(e) for e in self.feature_epsilons],
            "feature_keep": [float(p) for p in self.keep],
            "label_epsilon": self.label_epsilon,
            "label_keep": self.label_keep,
        }

    def to_dict(self) -> dict:
        """The JSON-able form: :meth:`describe`."""
        return self.describe()

    def release(self, exact: AggregatedData, records=None, seed=None) -> AggregatedData:
        """:func:`local_release` (seeded: a simulation) of ``records`` = (X (n, D) int codes,
        y (n,) labels in {0, 1}) into the layout of ``exact``, their exact aggregates."""
        if records is None or not isinstance(exact, AggregatedData) or exact.n != len(records[1]):
            raise AggMRFError(
                "local privacy randomizes each record before aggregation: give the records "
                "(X, y) with their exact aggregates."
            )
        return local_release(*records, exact.layout, self, seed)

    def fields(self, feature_names: Sequence[str] | None = None):
        """Per-field table (pandas DataFrame): field, values k, ε share, keep probability p,
        probability q of each other value.  The label is the last row."""
        import pandas as pd

        names = (
            list(feature_names)
            if feature_names is not None
            else [f"x{f}" for f in range(self.n_features)]
        )
        return pd.DataFrame(
            {
                "field": names + ["label"],
                "values": list(self.n_modalities) + [2],
                "epsilon": list(self.feature_epsilons) + [self.label_epsilon],
                "keep": list(self.keep) + [self.label_keep],
                "other_each": list(self.other) + [1.0 - self.label_keep],
            }
        )


def make_local_mechanism(
    epsilon: float,
    layout: TableLayout,
    split: str | Sequence[float] = "equal",
    protect_label: bool = True,
) -> RandomizedResponse:
    """RandomizedResponse for the features of ``layout`` (hashed tables are not supported by
    the estimator: their rows are buckets, and the channel does not factor over them)."""
    if not isinstance(layout, TableLayout):
        raise AggMRFError(f"make_local_mechanism needs a TableLayout; got {type(layout).__name__}.")
    return RandomizedResponse(
        epsilon, tuple(int(v) for v in layout.n_modalities), split, protect_label
    )


# ---------------------------------------------------------------------- structured algebra
def channel_matrix(k: int, p: float, q: float) -> np.ndarray:
    """Dense channel (k, k): p on the diagonal, q elsewhere (column x = law of x̃ given x)."""
    return np.full((k, k), q) + (p - q) * np.eye(k)


def _check_block(block: np.ndarray, channels: Sequence[Channel]) -> np.ndarray:
    b = np.asarray(block, dtype=np.float64)
    if b.ndim != len(channels):
        raise AggMRFError(
            f"a table with {b.ndim} axes needs {b.ndim} channels; got {len(channels)}."
        )
    return b


def _axis_op(block: np.ndarray, axis: int, a: float, b: float) -> np.ndarray:
    """(a I + b 11ᵀ) applied along ``axis``: a·v + b·Σ v."""
    return a * block + b * block.sum(axis=axis, keepdims=True)


def _gap_pq(p: float, q: float, gap: float | None) -> float:
    g = p - q if gap is None else gap
    if g <= 0.0:
        raise AggMRFError(f"channel with p = {p} ≤ q = {q} is not invertible (ε must be > 0).")
    if g < MIN_GAP:
        raise AggMRFError(
            f"channel with p − q = {g:.2g} is below the usable floor {MIN_GAP:g} — use a larger ε."
        )
    return g


def apply_channel(block: np.ndarray, channels: Sequence[Channel]) -> np.ndarray:
    """E[Õ] = (⊗ C_a) T along every axis a of ``block`` (shape (k_1, …, k_a)); O(size)."""
    out = _check_block(block, channels)
    for ax, (p, q) in enumerate(channels):
        out = _axis_op(out, ax, p - q, q)
    return out


def invert_channel(
    block: np.ndarray, channels: Sequence[Channel], gaps: Sequence[float] | None = None
) -> np.ndarray:
    """T̂ = (⊗ C_a⁻¹) Õ along every axis, C⁻¹ = (I − q 11ᵀ)/(p − q); O(size), float64.

    ``gaps``: p − q per axis when known more accurately than the difference (small ε).
    """
    out = _check_block(block, channels)
    for ax, (p, q) in enumerate(channels):
        g = _gap_pq(p, q, None if gaps is None else gaps[ax])
        out = _axis_op(out, ax, 1.0 / g, -q / g)
    return out


def cell_variances(
    table: np.ndarray,
    channels: Sequence[Channel],
    gaps: Sequence[float] | None = None,
    observed: np.ndarray | None = None,
) -> np.ndarray:
    """Var(T̂_j | T) = [(A∘A)(C T)]_j − T_j for every cell, shape of ``table``; O(size).

    ``table``: the true table T (or a plug-in), shape (k_1, …, k_a); A_a∘A_a =
    ((1 − 2q) I + q² 11ᵀ)/(p − q)².  ``observed``: use the observed table Õ in place of its
    expectation C T; with ``table`` = T̂ this is the *unbiased* variance estimate
    (A∘A) Õ − T̂ (it can be negative when the channel is close to the identity).
    """
    T = _check_block(table, channels)
    if observed is None:
        out = apply_channel(T, channels)
    else:
        out = np.asarray(observed, dtype=np.float64)
        if out.shape != T.shape:
            raise AggMRFError(f"observed has shape {out.shape}; the table has {T.shape}.")
    for ax, (p, q) in enumerate(channels):
        g = _gap_pq(p, q, None if gaps is None else gaps[ax])
        out = _axis_op(out, ax, (1.0 - 2.0 * q) / g**2, q * q / g**2)
    return out - T


def cell_covariance(table: np.ndarray, channels: Sequence[Channel]) -> np.ndarray:
    """Full Cov(vec T̂ | T) = A diag(C T) Aᵀ − diag(T), (size, size), row-major cells.

    Dense: only for tables of at most ``MAX_DENSE_CELLS`` cells.
    """
    T = _check_block(table, channels)
    if T.size > MAX_DENSE_CELLS:
        raise AggMRFError(
            f"cell_covariance is dense; {T.size} cells > {MAX_DENSE_CELLS}. Use cell_variances."
        )
    C = np.ones((1, 1))
    A = np.ones((1, 1))
    for ax, (p, q) in enumerate(channels):
        k = T.shape[ax]
        C = np.kron(C, channel_matrix(k, p, q))
        g = _gap_pq(p, q, None)
        A = np.kron(A, (np.eye(k) - q) / g)
    t = T.ravel()
    return (A * (C @ t)[None, :]) @ A.T - np.diag(t)


# ---------------------------------------------------------------------- noise description
@dataclass(frozen=True, eq=False)
class CellGaussianNoise:
    """Per-cell Gaussian approximation of the local estimate's error, for MRF-N.

    b_j = A_j + L_j with independent L_j ~ N(0, σ_j²); ``sigma_d`` and ``sigma_c`` (K,) are
    the standard deviations (counts) of the estimated counts and label sums (0 where exact,
    e.g. the intercept's count).  Cross-cell covariances are ignored.  ``mechanism``: the
    local mechanism that made the data; ``evaluated_at`` says which table the variances
    were evaluated at.

    ``refresh`` (default True): MRF-N re-evaluates σ at the model's current expected tables
    at every refresh of its targets (:meth:`at_model`, called by
    ``privacy.noise_aware_targets``).  Var(T̂_j | T) = [(A∘A)(C T)]_j − T_j is linear in the
    true table T; the release's σ plugs in the unbiased but noisy estimate (A∘A)Õ − T̂
    (floored at 0), the model's (d̂, ĉ) is a smoothed T (never negative, and never 0 where
    the channel has mixed mass in).  ``refresh=False`` keeps the release's σ throughout.
    """

    sigma_d: np.ndarray
    sigma_c: np.ndarray
    mechanism: RandomizedResponse
    evaluated_at: str = "unbiased plug-in (A∘A)Õ − T̂"
    refresh: bool = True
    name: ClassVar[str] = "local-gaussian-approx"

    def __post_init__(self) -> None:
        for key in ("sigma_d", "sigma_c"):
            a = np.array(getattr(self, key), dtype=np.float64)
            if a.ndim != 1 or not np.all(np.isfinite(a)) or np.any(a < 0):
                raise AggMRFError(f"{key} must be a 1-d array of finite σ ≥ 0.")
            a.setflags(write=False)
            object.__setattr__(self, key, a)
        if self.sigma_d.shape != self.sigma_c.shape:
            raise AggMRFError("sigma_d and sigma_c must have the same shape.")

    @property
    def epsilon(self) -> float:
        return self.mechanism.epsilon

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def std(self) -> float:
        """Root-mean-square σ over the counts' nonzero cells (a one-number summary)."""
        s = self.sigma_d[self.sigma_d > 0]
        return float(np.sqrt(np.mean(s * s))) if s.size else 0.0

    def take(self, rows: np.ndarray) -> CellGaussianNoise:
        """The σ of a subset of rows (e.g. a sub-layout's)."""
        return CellGaussianNoise(
            self.sigma_d[rows], self.sigma_c[rows], self.mechanism, self.evaluated_at, self.refresh
        )

    def at_model(
        self, layout: TableLayout, d_hat: np.ndarray, c_hat: np.ndarray
    ) -> CellGaussianNoise:
        """σ re-evaluated at the model's expected tables: σ_j² = Var(T̂_j | T = (d̂, ĉ)).

        ``layout``: the release's layout (K rows, the one these σ belong to);
        ``d_hat``, ``c_hat`` (K,): the model's expected counts and label sums (counts), used
        as max(d̂, 0) and clip(ĉ, 0, d̂).  The intercept's count stays exact (σ = 0).  Same
        mechanism and ``refresh``; O(K).
        """
        d = np.asarray(d_hat, dtype=np.float64)
        c = np.asarray(c_hat, dtype=np.float64)
        if d.shape != self.sigma_d.shape or c.shape != self.sigma_d.shape:
            raise AggMRFError(f"d_hat and c_hat must have shape {self.sigma_d.shape}.")
        if not (np.all(np.isfinite(d)) and np.all(np.isfinite(c))):
            raise AggMRFError("d_hat and c_hat must be finite.")
        d = np.maximum(d, 0.0)
        var_d, var_c = local_variances(layout, self.mechanism, d, np.clip(c, 0.0, d))
        if layout.intercept:
            var_d[0] = 0.0
        return CellGaussianNoise(
            np.sqrt(np.maximum(var_d, 0.0)),
            np.sqrt(np.maximum(var_c, 0.0)),
            self.mechanism,
            "the model's expected tables (d̂, ĉ)",
            self.refresh,
        )

    def sample(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Independent draws (2, K): row 0 for the counts, row 1 for the label sums."""
        g = generator(rng)
        return g.normal(0.0, 1.0, (2, self.sigma_d.size)) * np.stack([self.sigma_d, self.sigma_c])

    def describe(self) -> dict:
        out = self.mechanism.describe()
        out.update(
            noise_model=self.name,
            evaluated_at=self.evaluated_at,
            std=self.std,
            sigma_d_max=float(self.sigma_d.max(initial=0.0)),
            refresh=self.refresh,
        )
        return out


# ---------------------------------------------------------------------- tables
def _check_layout(layout: TableLayout, mech: RandomizedResponse) -> None:
    if not isinstance(mech, RandomizedResponse):
        raise AggMRFError(f"expected a RandomizedResponse; got {type(mech).__name__}.")
    if tuple(int(v) for v in layout.n_modalities) != mech.n_modalities:
        raise AggMRFError(
            f"the mechanism's n_modalities {mech.n_modalities} differ from the layout's "
            f"{tuple(int(v) for v in layout.n_modalities)}."
        )
    if layout.has_hashed_tables:
        raise AggMRFError(
            "local privacy does not support hashed tables: a bucket mixes modality combinations, "
            "so the randomization channel does not factor over its rows."
        )


def _table_parts(layout: TableLayout, mech: RandomizedResponse, t: int):
    feats = layout.tables[t]
    shape = tuple(int(layout.n_modalities[f]) for f in feats)
    chans = [mech.feature_channel(f) for f in feats]
    gaps = [float(mech.gaps[f]) for f in feats]
    return slice(layout.offsets[t], layout.offsets[t + 1]), shape, chans, gaps


def local_variances(
    layout: TableLayout,
    mechanism: RandomizedResponse,
    d: np.ndarray,
    c: np.ndarray,
    observed: AggregatedData | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Var(d̂_j), Var(ĉ_j) (each (K,), counts²) of the local estimates when the true tables
    are (d, c) (shape (K,): the exact aggregates, or the model's expectation).  Label sums:
    the (x, y) table [d − c, c] with the label as one more axis.

    ``observed`` (the reports' aggregates d̃, c̃) with (d, c) = the estimates (d̂, ĉ): the
    unbiased variance estimates (A∘A) Õ − T̂ instead (what :func:`unbiased_tables` stores).
    """
    _check_layout(layout, mechanism)
    d = np.asarray(d, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if d.shape != (layout.K,) or c.shape != (layout.K,):
        raise AggMRFError(f"d and c must have shape ({layout.K},).")
    if observed is not None and observed.layout.K != layout.K:
        raise AggMRFError("observed must be the reports' aggregates over the same layout.")
    var_d = np.empty(layout.K)
    var_c = np.empty(layout.K)
    lab = mechanism.label_channel
    lab_gap = mechanism._label_gap()
    for t in range(layout.n_tables):
        sl, shape, chans, gaps = _table_parts(layout, mechanism, t)
        Td = d[sl].reshape(shape)
        Tc = c[sl].reshape(shape)
        Od = Of = None
        if observed is not None:
            Od = observed.d[sl].reshape(shape)
            Of = np.stack([Od - observed.c[sl].reshape(shape), observed.c[sl].reshape(shape)], -1)
        var_d[sl] = cell_variances(Td, chans, gaps, Od).ravel()
        full = np.stack([Td - Tc, Tc], axis=-1)
        var_c[sl] = cell_variances(full, [*chans, lab], [*gaps, lab_gap], Of)[..., 1].ravel()
    return var_d, var_c


def unbiased_tables(
    observed: AggregatedData,
    mechanism: RandomizedResponse,
    true: AggregatedData | None = None,
) -> AggregatedData:
    """Unbiased tables from the exact aggregates of randomized reports (d̃, c̃).

    ``observed = aggregate(X̃, ỹ, layout)``.  Returns an AggregatedData with d̂, ĉ (K,) (can
    be negative), n = the number of reports, ``noise`` = a :class:`CellGaussianNoise` whose
    σ_j² are the unbiased estimates (A∘A) Õ − T̂ floored at 0 (see :func:`local_variances`),
    and ``true_d`` / ``true_c`` from ``true`` (the exact aggregates, for teaching only).
    """
    if not isinstance(observed, AggregatedData) or observed.is_noisy:
        raise AggMRFError("observed must be the exact aggregates of the randomized reports.")
    lay = observed.layout
    _check_layout(lay, mechanism)
    p_y, q_y = mechanism.label_channel
    g_y = mechanism._label_gap()
    d = np.empty(lay.K)
    c = np.empty(lay.K)
    for t in range(lay.n_tables):
        sl, shape, chans, gaps = _table_parts(lay, mechanism, t)
        Od = observed.d[sl].reshape(shape)
        Oc = observed.c[sl].reshape(shape)
        d[sl] = invert_channel(Od, chans, gaps).ravel()
        c[sl] = invert_channel((Oc - q_y * Od) / g_y, chans, gaps).ravel()
    n = observed.n
    if lay.intercept:
        d[0] = float(n)  # exact: the number of reports is public
    var_d, var_c = local_variances(lay, mechanism, d, c, observed)
    if lay.intercept:
        var_d[0] = 0.0
    noise = CellGaussianNoise(
        np.sqrt(np.maximum(var_d, 0.0)), np.sqrt(np.maximum(var_c, 0.0)), mechanism
    )
    meta = dict(observed.meta)
    meta.update(privacy=noise.describe(), true_n=n, model="local")
    if true is not None:
        if true.d.shape != d.shape:
            raise AggMRFError("true aggregates must be over the same layout.")
        true_d, true_c = true.d.copy(), true.c.copy()
    else:
        true_d = true_c = None
    return AggregatedData(lay, d, c, n, true_d=true_d, true_c=true_c, noise=noise, meta=meta)


def local_release(
    X: np.ndarray,
    y: np.ndarray,
    layout: TableLayout,
    mechanism: RandomizedResponse,
    seed: np.random.Generator | int | None = None,
) -> AggregatedData:
    """Every record randomized by ``mechanism`` (seeded), aggregated into ``layout``'s tables,
    and the channel inverted: the local counterpart of ``privacy.release``.

    X : int codes (n, D);  y : labels (n,) in {0, 1}.  The exact aggregates of (X, y) are
    kept in ``true_d`` / ``true_c`` (teaching only; the trainer never reads them).
    """
    _check_layout(layout, mechanism)
    X = layout.check_codes(X)
    Xt, yt = mechanism.randomize(X, y, seed)
    out = unbiased_tables(aggregate(Xt, yt, layout), mechanism, aggregate(X, y, layout))
    out.meta["seed"] = seed if not isinstance(seed, np.random.Generator) else None
    return out


# ---------------------------------------------------------------------- records needed (theory)
def records_needed_theory(
    layout: TableLayout,
    mechanism: RandomizedResponse,
    d: np.ndarray,
    c: np.ndarray,
    n: int,
    central_sd: float,
    n_central: float | np.ndarray,
) -> np.ndarray:
    """Records the local release needs for the same error as a central one with n_c records.

    Error index: the χ² distance between the estimated and the true joint tables,
    E = Σ_t Σ_j Var(T̂_j / n) / π_j over every released table t's cells j of (x_t, y) with
    π_j > 0 (π from ``d``, ``c`` (K,), the exact aggregates of ``n`` records: cells
    [d − c, c] / n).  This is the second-order term of the expected KL divergence of each
    table, the loss a fit to the tables pays for noisy targets.  Records are i.i.d. from π:

    * central at n_c: Var = s_j² + n_c π_j (1 − π_j), s² = σ² for c and 2σ² for d − c
      (``central_sd`` σ on every count and label sum) ⇒ E_c = S / n_c² + Q / n_c,
      S = Σ s_j² / π_j, Q = Σ (1 − π_j);
    * local at n_l: Var = n_l v_j, v_j = [(A∘A)(C π)]_j − π_j² (randomization + sampling)
      ⇒ E_l = V / n_l, V = Σ v_j / π_j.

    E_l = E_c gives n_l = V / (S / n_c² + Q / n_c): quadratic in n_c while central noise
    dominates (n_c ≪ S/Q), then linear with ratio V / Q (per axis ≈ (e^ε_f + k − 1)² /
    (e^ε_f − 1)² times the sampling term) once sampling dominates.  An approximation: the
    MRF shares parameters across tables and regularises, so read it as an order of
    magnitude.  Returns n_l with the shape of ``n_central`` (records, float64).
    """
    _check_layout(layout, mechanism)
    d = np.asarray(d, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if d.shape != (layout.K,) or c.shape != (layout.K,):
        raise AggMRFError(f"d and c must have shape ({layout.K},).")
    if not (isinstance(n, numbers.Integral) and n >= 1):
        raise AggMRFError(f"n must be a positive number of records; got {n!r}.")
    sd = float(central_sd)
    nc = np.asarray(n_central, dtype=np.float64)
    if not (math.isfinite(sd) and sd >= 0) or not np.all(np.isfinite(nc) & (nc > 0)):
        raise AggMRFError("central_sd must be finite ≥ 0 and n_central finite > 0.")
    lab = mechanism.label_channel
    lab_gap = mechanism._label_gap()
    S = Q = V = 0.0
    for t in range(layout.n_tables):
        if not layout.tables[t]:
            continue  # the intercept is not released
        sl, shape, chans, gaps = _table_parts(layout, mechanism, t)
        cc = np.clip(c[sl], 0.0, np.maximum(d[sl], 0.0))
        pi = np.stack([np.maximum(d[sl], 0.0) - cc, cc], axis=-1).reshape(*shape, 2) / n
        v = cell_variances(pi, [*chans, lab], [*gaps, lab_gap]) + pi - pi * pi
        s2 = np.broadcast_to(np.array([2.0, 1.0]) * sd * sd, pi.shape)
        ok = pi > 0
        S += float(np.sum(s2[ok] / pi[ok]))
        Q += float(np.sum(1.0 - pi[ok]))
        V += float(np.sum(np.maximum(v[ok], 0.0) / pi[ok]))
    if V <= 0 or (S <= 0 and Q <= 0):
        raise AggMRFError("the tables have no cell with positive mass.")
    return V / (S / nc**2 + Q / nc)
