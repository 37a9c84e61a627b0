"""MRF-N's noise model: posterior means of the exact counts given a noisy release.

Negative and zero noisy counts (trainer policy)
-----------------------------------------------
Noisy d̃, c̃ can be negative, zero, or have c̃ > d̃.  The plain MRF trainer fits the
projected targets ``AggregatedData.projected()``: d⁺ = max(d̃, 0), c⁺ = clip(c̃, 0, d⁺)
(post-processing, no privacy cost).  MRF-N instead replaces the targets by the posterior
means E[A_j | A_j + L_j = b_j] from ``posterior_mean_counts`` (always in [0, n]); the
paper's gradient term is then E[L_j | ·] = b_j − E[A_j | ·] (``expected_noise``).

Prior for MRF-N.  Under the model, each of the n i.i.d. records falls in row j with
probability d̂_j/n, so A_j ~ Binomial(n, d̂_j/n) exactly; the label sum C_j counts the
records in row j with y = 1, each with probability ĉ_j/n, so C_j ~ Binomial(n, ĉ_j/n)
exactly too.  Hence the recommended call for both columns is
``posterior_mean_counts(b, model_expectation, agg.n, mechanism)``.  (Conditioning C_j on
the row's count, Binomial(round(d⁺_j), ĉ_j/d̂_j), is possible by passing an array ``n``.)
Discrete mechanisms.  The discrete Gaussian and discrete Laplace have the masses
exp(−x²/(2σ²)) and exp(−|x|/t) at the integers, up to a constant that cancels in the
posterior: the same weights the kernel evaluates for the continuous densities.  With an
integer release b the posterior is exact where the kernel sums every integer; where it
strides (posterior sd ≥ 4) it is the same quadrature as for continuous noise.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np

from ..errors import AggMRFError
from ..tables import AggregatedData
from .checks import choice as _choice
from .checks import positive_finite as _positive_finite
from .mechanisms import NoiseMechanism, check_mechanism

__all__ = [
    "PRIORS",
    "posterior_mean_counts",
    "expected_noise",
    "noise_aware_targets",
    "scaled_noise",
]

PRIORS = ("binomial", "poisson")


@functools.lru_cache(maxsize=4)
def _log_factorials(n_max: int) -> np.ndarray:
    """Cached log k! table (k ≤ n_max, capped) for the posterior kernel's fast path."""
    from ..kernels.noise import log_factorials

    table = log_factorials(n_max)
    table.setflags(write=False)
    return table


def posterior_mean_counts(
    b: np.ndarray,
    prior_mean: np.ndarray,
    n: int | np.ndarray,
    mechanism: NoiseMechanism | np.ndarray | None,
    prior: Literal["binomial", "poisson"] = "binomial",
) -> np.ndarray:
    """E[A_j | A_j + L_j = b_j] for every coordinate j independently, shape of ``b``.

    ``mechanism`` may also be an array of per-coordinate Gaussian σ_j ≥ 0 (counts,
    broadcastable to b): L_j ~ N(0, σ_j²) independently (a local release's
    ``CellGaussianNoise``); where σ_j = 0 the value is exact and the result is clip(b_j, 0, n_j).

    b : noisy values, shape (K,);  prior_mean : E[A_j] under the model, shape (K,)
    (clipped to [0, n_j]);  n : trials (int or integer-valued array broadcastable to b);
    A_j ~ Binomial(n_j, prior_mean_j/n_j) or Poisson(prior_mean_j) truncated to [0, n_j];
    L_j ~ the mechanism's noise.  Sum over the integers a ∈ [0, n_j] (numba, parallel over
    coordinates): where the posterior sd s ≥ 4 and its ±6.5 s window is inside [0, n_j]
    (and, for Laplace noise, away from the kink a = b_j), every h-th integer, h = ⌊s⌋, with
    a log-factorial table; elsewhere an exact walk out from the posterior mode.  Accurate
    to ~1e-8·s (tested against brute force at 1e-6·s); results are finite and in [0, n_j]
    for any finite b.  ``mechanism=None`` (no noise) returns clip(b, 0, n).
    """
    kind = _choice("prior", prior, PRIORS)
    b_arr = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(b_arr)):
        raise AggMRFError("b (noisy values) must be finite; got NaN or inf.")
    mu = np.asarray(prior_mean, dtype=np.float64)
    if not np.all(np.isfinite(mu)):
        raise AggMRFError("prior_mean must be finite; got NaN or inf.")
    n_arr = np.asarray(n, dtype=np.float64)
    if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 0):
        raise AggMRFError(f"n must be a non-negative integer (or array of them); got {n!r}.")
    n_int = np.round(n_arr)
    if np.any(np.abs(n_int - n_arr) > 1e-9 * np.maximum(1.0, n_arr)):
        raise AggMRFError(f"n must be integer-valued (a number of trials); got {n!r}.")
    try:
        b_b, mu_b, n_b = np.broadcast_arrays(b_arr, mu, n_int)
    except ValueError:
        raise AggMRFError(
            f"b, prior_mean and n must have broadcastable shapes; got {b_arr.shape}, {mu.shape}, {n_arr.shape}."
        ) from None
    if b_b.shape != b_arr.shape:
        raise AggMRFError(f"prior_mean and n must broadcast to b's shape {b_arr.shape}.")
    if mechanism is None:
        return np.clip(b_arr, 0.0, n_b)
    from ..kernels.noise import (
        NOISE_GAUSS,
        NOISE_LAPLACE,
        PRIOR_BINOMIAL,
        PRIOR_POISSON,
        posterior_mean_kernel,
    )

    shape = b_arr.shape
    bb = np.ascontiguousarray(b_b, dtype=np.float64).ravel()
    nn = np.ascontiguousarray(n_b, dtype=np.float64).ravel()
    mm = np.clip(np.ascontiguousarray(mu_b, dtype=np.float64).ravel(), 0.0, nn)
    if isinstance(mechanism, NoiseMechanism):
        scale = np.full(bb.size, float(check_mechanism(mechanism).scale))
        noise = NOISE_GAUSS if mechanism.density == "gauss" else NOISE_LAPLACE
    elif isinstance(mechanism, np.ndarray):
        sig = np.asarray(mechanism, dtype=np.float64)
        if not np.all(np.isfinite(sig)) or np.any(sig < 0):
            raise AggMRFError("per-coordinate σ must be finite and ≥ 0.")
        try:
            scale = np.ascontiguousarray(np.broadcast_to(sig, shape), dtype=np.float64).ravel()
        except ValueError:
            raise AggMRFError(
                f"σ of shape {sig.shape} does not broadcast to b's {shape}."
            ) from None
        noise = NOISE_GAUSS
    else:
        check_mechanism(mechanism)  # raises
    exact = scale <= 0.0
    out = posterior_mean_kernel(
        bb,
        mm,
        nn,
        np.where(exact, 1.0, scale),
        PRIOR_BINOMIAL if kind == "binomial" else PRIOR_POISSON,
        noise,
        _log_factorials(int(nn.max()) if nn.size else 0),
    )
    if exact.any():
        out[exact] = np.clip(bb[exact], 0.0, nn[exact])
    return out.reshape(shape)


def expected_noise(
    b: np.ndarray,
    prior_mean: np.ndarray,
    n: int | np.ndarray,
    mechanism: NoiseMechanism | None,
    prior: Literal["binomial", "poisson"] = "binomial",
) -> np.ndarray:
    """E[L_j | A_j + L_j = b_j] = b_j − E[A_j | ·] (the paper's MRF-N gradient term), shape of b."""
    return np.asarray(b, dtype=np.float64) - posterior_mean_counts(
        b, prior_mean, n, mechanism, prior
    )


def noise_aware_targets(
    data: AggregatedData,
    d_hat: np.ndarray,
    c_hat: np.ndarray,
    prior_floor: float = 0.0,
    row_sd: np.ndarray | None = None,
    label_floor: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MRF-N's targets (d_t, c_t), each shape (K,): the posterior means of the exact counts.

    On the released rows j, with b the noisy release ``data.d`` (``data.c``) and n = ``data.n``:
    d_t,j = E[A_j | A_j + L_j = b_j] with A_j ~ Binomial(n, max(d̂_j, f)/n), and
    c_t,j = E[C_j | C_j + L'_j = b'_j] with C_j ~ Binomial(n, max(ĉ_j, f_c)/n) (the label
    sums' own prior, the model's ĉ, never d̂), L ~ ``data.noise``; then c_t = min(c_t, d_t).
    The derived intercept row keeps its projected value.  ``prior_floor`` f (counts, ≥ 0):
    where the Monte-Carlo estimate d̂_j (ĉ_j) is 0 the binomial prior is a point mass at 0
    and the posterior ignores b_j ("absorption at zero"); a floor of one Gibbs sample's
    weight s = n / n' lets a large released value pull the target up.  ``label_floor`` f_c
    (counts, ≥ 0; None: f): the label sums' floor.  The chain's ĉ is marginalised (a sum of
    P(y=1|x̃) over the samples), so it is 0 only where d̂ is, and one sample's expected
    label sum is s·p, not s: a floor of s on ĉ raises the prior of every cell expecting
    fewer than s positives (most pair cells of a rare label) and biases their targets up.
    d_hat, c_hat : the model's expected counts and label sums (counts), shape (K,).

    A local release (``privacy.local.local_release``; ``data.noise`` a ``CellGaussianNoise``)
    is treated with the approximation b_j = A_j + L_j, L_j ~ N(0, σ_j²) independent per cell
    (σ_j = ``sigma_d[j]`` / ``sigma_c[j]``): the channel-inversion error is a sum over the
    records, so near-Gaussian, but its cross-cell covariances are ignored.  σ_j is
    re-evaluated at (d_hat, c_hat) on every call (``CellGaussianNoise.at_model``: the
    closed-form Var(T̂_j | T) with the model's expectation as T) unless the release's noise
    has ``refresh=False``, which keeps its plug-in σ.  Central releases are unaffected.

    ``row_sd`` (K,) or None: rows whose released value sums several noisy source rows
    (values folded into "(other)", ``tables.suppression.row_noise_sd``: σ·√s_r where > 0)
    get the posterior under Gaussian noise of that sd instead of the mechanism's own (the
    sum of s_r independent noises; exact for Gaussian noise, the central-limit
    approximation for Laplace-type noise).  Rows where it is 0 are unaffected.
    """
    if not isinstance(data, AggregatedData) or data.noise is None:
        raise AggMRFError("noise_aware_targets needs a noisy release (privacy.release).")
    floor = float(prior_floor)
    if not (math.isfinite(floor) and floor >= 0.0):
        raise AggMRFError(f"prior_floor must be a finite number ≥ 0; got {prior_floor!r}.")
    c_floor = floor if label_floor is None else float(label_floor)
    if not (math.isfinite(c_floor) and c_floor >= 0.0):
        raise AggMRFError(f"label_floor must be a finite number ≥ 0; got {label_floor!r}.")
    K = data.layout.K
    d_hat = np.asarray(d_hat, dtype=np.float64)
    c_hat = np.asarray(c_hat, dtype=np.float64)
    if d_hat.shape != (K,) or c_hat.shape != (K,):
        raise AggMRFError(f"d_hat and c_hat must have shape ({K},).")
    rel = data.layout.released
    projected = data.projected()
    d_t = projected.d.copy()
    c_t = projected.c.copy()
    prior_d = np.maximum(d_hat[rel], floor) if floor > 0.0 else d_hat[rel]
    prior_c = np.maximum(c_hat[rel], c_floor) if c_floor > 0.0 else c_hat[rel]
    noise_d = noise_c = data.noise
    if hasattr(data.noise, "sigma_d"):  # privacy.local.CellGaussianNoise: one σ per row
        cell = data.noise.at_model(data.layout, d_hat, c_hat) if data.noise.refresh else data.noise
        noise_d = np.asarray(cell.sigma_d, dtype=np.float64)[rel]
        noise_c = np.asarray(cell.sigma_c, dtype=np.float64)[rel]
    d_t[rel] = posterior_mean_counts(data.d[rel], prior_d, data.n, noise_d)
    c_t[rel] = posterior_mean_counts(data.c[rel], prior_c, data.n, noise_c)
    if row_sd is not None:
        sd = np.asarray(row_sd, dtype=np.float64)
        if sd.shape != (K,) or not np.all(np.isfinite(sd)) or np.any(sd < 0):
            raise AggMRFError(f"row_sd must be finite numbers ≥ 0 of shape ({K},).")
        r = np.flatnonzero(rel & (sd > 0))
        if r.size:
            pd_r = np.maximum(d_hat[r], floor) if floor > 0.0 else d_hat[r]
            pc_r = np.maximum(c_hat[r], c_floor) if c_floor > 0.0 else c_hat[r]
            d_t[r] = posterior_mean_counts(data.d[r], pd_r, data.n, sd[r])
            c_t[r] = posterior_mean_counts(data.c[r], pc_r, data.n, sd[r])
    return d_t, np.minimum(c_t, d_t)


def scaled_noise(mechanism: NoiseMechanism, factor: float) -> NoiseMechanism:
    """The same mechanism with its noise multiplied by ``factor`` > 0 (ε, δ and calibration
    kept, sensitivity × factor; every calibration's σ, and Laplace's b, is linear in it).

    Used for what a release's noise becomes after post-processing, e.g. the halves of a
    thinned release (``selection.releases.split_release``) carry the noise L/2: ``factor`` ½.
    """
    return check_mechanism(mechanism).scaled(_positive_finite("factor", factor))
