"""Scores of a model against held-out *tables*, without records: two aggregated-only metrics.

**Cell-level (aggregated NLLH)** — ``aggregated_nllh``.  A held-out table t (a second release,
a table left out of training, or the other half of a thinned release) gives, for each row k, a
count d_k and a label sum c_k.  The model predicts, for the records of row k, the rate
r_k = E_π[σ(φ(x)·θ) | x in row k], estimated from the model's own Gibbs samples x̃ (the
trainer's persistent chain plus ``EXTRA_SWEEPS`` = 4 sweeps at the final parameters)::

    r_k = (Σ_{i: x̃_i in k} σ(φ(x̃_i)·θ) + a·r̄) / (#{i: x̃_i in k} + a)      (a = 1 sample)

shrunk towards the samples' mean rate r̄ so that rows without samples get a defined rate.
The label sums are scored under c_k ~ Binomial(d_k, r_k) and normalised like NLLH against
the base rate p₀ = Σc/Σd of the same tables::

    aggregated NLLH = 1 − Σ_k [c_k log r_k + (d_k − c_k) log(1 − r_k)]
                        / Σ_k [c_k log p₀ + (d_k − c_k) log(1 − p₀)]

(the binomial coefficients cancel).  Noisy held-out tables are projected first
(d⁺ = max(d, 0), c⁺ = clip(c, 0, d⁺)).

This metric ranks *over*-regularised models correctly but is blind to
*under*-regularisation: the noise of overconfident record-level logits averages out
within the cells of the tables (docs/lambda_auto.md shows it on Adult and Bank).

**Record-level, cross-fit (cross-fit NLLH)** — ``cross_fit_nllh``.  Fit a *reference* model on
independent tables (the other half of a thinned release, or a second release) with the least
regularisation of the grid; it stands in for the unknown P(Y = 1 | x), its Gibbs samples for
the records.  A model with logits z is scored on the reference's samples x̃_i against the
reference's soft labels q_i = σ(z_ref(x̃_i))::

    cross-fit NLLH = 1 − mean_i [−q_i log σ(z(x̃_i)) − (1 − q_i) log(1 − σ(z(x̃_i)))] / h(p₀)

with h the binary entropy.  The loss is linear in q, so the reference's own estimation noise
(independent of the scored model) cancels in expectation: what remains is the scored model's
record-level log loss where the reference is unbiased, and the least-regularised reference is
the least shrunk.  Only tables were used to fit both models.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import AggMRFError
from ..kernels import sample_logits
from ..mrf import MRFModel, PCDTrainer, sigmoid
from ..tables import AggregatedData, TableLayout

__all__ = [
    "EXTRA_SWEEPS",
    "PRIOR_SAMPLES",
    "AggregatedScore",
    "Reference",
    "aggregated_nllh",
    "binary_entropy",
    "check_same_features",
    "cross_fit_losses",
    "cross_fit_nllh",
    "predicted_rates",
    "release_rate",
    "sample_codes",
    "soft_log_loss",
]

EXTRA_SWEEPS = 4
PRIOR_SAMPLES = 1.0
_CLIP = 1e-6


# ---------------------------------------------------------------------- samples and rates
def sample_codes(trainer: PCDTrainer, extra_sweeps: int = EXTRA_SWEEPS) -> np.ndarray:
    """The chain's samples plus ``extra_sweeps`` more sweeps at the current (μ, θ), int32 (m, D).

    The extra sweeps run on a copy of the chain: the trainer is left untouched.
    """
    if not isinstance(trainer, PCDTrainer):
        raise AggMRFError("sample_codes needs a PCDTrainer.")
    out = [trainer.chain.codes.copy()]
    if extra_sweeps > 0:
        chain = copy.deepcopy(trainer.chain)
        for _ in range(int(extra_sweeps)):
            chain.sweep(trainer.mu, trainer.theta, statistics=False)
            out.append(chain.codes.copy())
    return np.concatenate(out, axis=0)


def check_same_features(a: TableLayout, b: TableLayout) -> None:
    """Refuse (``AggMRFError``) two layouts whose features or modality counts differ."""
    if list(a.feature_names) != list(b.feature_names) or not np.array_equal(
        a.n_modalities, b.n_modalities
    ):
        raise AggMRFError(
            "the held-out tables and the model have different features or modalities "
            f"({a.feature_names} with {a.n_modalities.tolist()} vs {b.feature_names} with "
            f"{b.n_modalities.tolist()}); a second release must use the training release's schema "
            "(aggregate --schema release.json)."
        )


def _same_tables(a: TableLayout, b: TableLayout) -> bool:
    return a is b or (
        a.tables == b.tables
        and a.intercept == b.intercept
        and np.array_equal(a.n_modalities, b.n_modalities)
    )


def _logits(model: MRFModel, codes: np.ndarray, layout: TableLayout, rows: np.ndarray):
    """φ(x)·θ of ``model`` on ``codes``, reusing ``rows`` (= layout.rows(codes)) if it fits."""
    if _same_tables(model.layout, layout):
        return sample_logits(rows, model.theta)
    return model.decision_function(codes)


def predicted_rates(
    model: MRFModel,
    codes: np.ndarray,
    layout: TableLayout,
    tables: Sequence[int],
    prior_samples: float = PRIOR_SAMPLES,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Model rate and number of samples per row of each table of ``layout`` in ``tables``.

    ``codes``: Gibbs samples of the model (n', D); returns {t: (rates (size_t,), samples (size_t,))}.
    """
    check_same_features(model.layout, layout)
    R = layout.rows(codes)  # (n, n_tables) global rows of every table, one pass
    p = sigmoid(_logits(model, codes, layout, R))
    mean = float(p.mean()) if p.size else 0.5
    T = R.shape[1]
    cnt_all = np.bincount(R.ravel(), minlength=layout.K).astype(np.float64)
    sum_all = np.bincount(R.ravel(), weights=np.repeat(p, T), minlength=layout.K)
    out = {}
    for ti in tables:
        sl = slice(layout.offsets[ti], layout.offsets[ti + 1])
        cnt, s = cnt_all[sl], sum_all[sl]
        out[ti] = ((s + prior_samples * mean) / (cnt + prior_samples), cnt)
    return out


@dataclass
class AggregatedScore:
    """Aggregated NLLH (pooled over the scored tables) and one row per table."""

    score: float
    per_table: pd.DataFrame
    loglik: float = 0.0
    base_loglik: float = 0.0


def _binomial_ll(d: np.ndarray, c: np.ndarray, r: np.ndarray) -> float:
    r = np.clip(r, _CLIP, 1.0 - _CLIP)
    return float(np.sum(c * np.log(r) + (d - c) * np.log1p(-r)))


def aggregated_nllh(
    model: MRFModel,
    codes: np.ndarray,
    heldout: AggregatedData,
    tables: Sequence[int | str | Sequence] | None = None,
    prior_samples: float = PRIOR_SAMPLES,
) -> AggregatedScore:
    """The aggregated-only validation metric of ``model`` on tables of ``heldout``.

    ``codes``: the model's Gibbs samples (``sample_codes(trainer)``); ``tables``: indices (or
    features) of ``heldout``'s tables to score (default: every released table).
    """
    if not isinstance(heldout, AggregatedData):
        raise AggMRFError("heldout must be an AggregatedData (e.g. a second release).")
    lay = heldout.layout
    if tables is None:
        idx = [ti for ti, t in enumerate(lay.tables) if t]
    else:
        idx = [
            int(t)
            if isinstance(t, int | np.integer)
            else lay.table_index(t if not isinstance(t, str) else [t])
            for t in tables
        ]
    if not idx:
        raise AggMRFError("no table to score.")
    rates = predicted_rates(model, codes, lay, idx, prior_samples)
    projected = heldout.projected()  # noisy tables: d⁺, c⁺
    d_all, c_all = projected.d, projected.c
    D = sum(float(d_all[lay.offsets[ti] : lay.offsets[ti + 1]].sum()) for ti in idx)
    C = sum(float(c_all[lay.offsets[ti] : lay.offsets[ti + 1]].sum()) for ti in idx)
    if D <= 0 or not 0 < C < D:
        raise AggMRFError(
            "the held-out tables need records of both classes (0 < total label sum < total count)."
        )
    p0 = C / D
    rows = []
    ll_sum = base_sum = 0.0
    for ti in idx:
        sl = slice(lay.offsets[ti], lay.offsets[ti + 1])
        d, c = d_all[sl], c_all[sl]
        r, cnt = rates[ti]
        ll = _binomial_ll(d, c, r)
        base = _binomial_ll(d, c, np.full_like(r, p0))
        ll_sum += ll
        base_sum += base
        rows.append(
            {
                "table": lay.table_name(lay.tables[ti]),
                "aggregated_nllh": 1.0 - ll / base if base < 0 else 0.0,
                "records": float(d.sum()),
                "rows": int(d.size),
                "rows_without_samples": int(np.sum((cnt == 0) & (d > 0))),
                "loglik": ll,
                "base_loglik": base,
            }
        )
    return AggregatedScore(1.0 - ll_sum / base_sum, pd.DataFrame(rows), ll_sum, base_sum)


def binary_entropy(rate: float) -> float:
    """h(rate) = −rate·log(rate) − (1 − rate)·log(1 − rate), in nats; rate in (0, 1)."""
    if not 0 < rate < 1:
        raise AggMRFError(f"the base rate must be in (0, 1); got {rate!r}.")
    return -(rate * np.log(rate) + (1.0 - rate) * np.log1p(-rate))


def release_rate(data: AggregatedData) -> float:
    """The base rate Σc / Σd of a release's projected tables (d⁺, c⁺)."""
    projected = data.projected()
    return float(projected.c.sum() / max(projected.d.sum(), 1e-300))


def cross_fit_losses(model: MRFModel, reference: MRFModel, codes: np.ndarray) -> np.ndarray:
    """Per-sample log loss of ``model`` against the soft labels q = σ(z_ref) of ``reference``.

    ``codes``: the reference's Gibbs samples.  ℓ_i = −q_i log p_i − (1 − q_i) log(1 − p_i),
    p = σ(z_model); shape (len(codes),).
    """
    return soft_log_loss(
        sigmoid(reference.decision_function(codes)), model.decision_function(codes)
    )


def soft_log_loss(q: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Elementwise −q log σ(z) − (1 − q) log(1 − σ(z)) for soft labels q and logits z."""
    return q * np.logaddexp(0.0, -z) + (1.0 - q) * np.logaddexp(0.0, z)


def cross_fit_nllh(
    model: MRFModel, reference: MRFModel, codes: np.ndarray, base_rate: float
) -> float:
    """Records-free estimate of ``model``'s record-level NLLH (see the module docstring).

    1 − mean(:func:`cross_fit_losses`) / h(base_rate): the reference, fitted on independent
    tables, stands in for the unknown P(Y=1 | x), its samples for the records.
    """
    return 1.0 - float(cross_fit_losses(model, reference, codes).mean()) / binary_entropy(base_rate)


@dataclass
class Reference:
    """A model fitted on independent tables, its Gibbs samples and its release's base rate:
    what :func:`cross_fit_nllh` scores other models against."""

    model: MRFModel
    codes: np.ndarray
    base_rate: float

    def score(self, model: MRFModel) -> float:
        """Cross-fit NLLH of ``model`` against this reference."""
        return cross_fit_nllh(model, self.model, self.codes, self.base_rate)
