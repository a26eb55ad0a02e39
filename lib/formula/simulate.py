"""Monte Carlo helpers the chapters share: random dot products and their statistics.

The `test-scores` chapter uses the exam-score simulator; the `variance` chapter checks Var(q·k) = d_k, measures the
sampling noise of a variance and the excess kurtosis of the scaled score; the `caveats` chapter breaks the
assumptions.
"""
from __future__ import annotations

import math

import numpy as np

from ..infra.checks import generator, positive_int, resolve_scale

__all__ = ["sample_dot_products", "exam_totals", "variance_standard_error", "repeated_variances",
           "excess_kurtosis"]


def sample_dot_products(d_k: int, n: int, *, seed=0, sigma_q: float = 1.0, sigma_k: float = 1.0,
                        rho: float = 0.0, scale=1.0, dtype=np.float64):
    """``n`` dot products q·k of random d_k-vectors, multiplied by ``scale``.

    Components are Gaussian with mean 0 and standard deviations ``sigma_q`` and
    ``sigma_k``; the pair (q_i, k_i) has correlation ``rho``, independent
    across i.  Theory: mean d_k·rho·σ_q·σ_k, variance d_k·σ_q²·σ_k²·(1 + rho²).
    ``scale`` means what it means everywhere in lib (:func:`lib.checks.resolve_scale`): the default
    ``1.0`` returns the raw scores, ``scale=None`` multiplies them by 1/√d_k.
    ``seed`` is an int or a ``np.random.Generator``.
    """
    d_k, n = positive_int("d_k", d_k), positive_int("n", n)
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [-1, 1]; got {rho}")
    rng = generator(seed)
    a = rng.standard_normal((n, d_k), dtype=dtype)
    b = rng.standard_normal((n, d_k), dtype=dtype)
    q = sigma_q * a
    k = sigma_k * (rho * a + math.sqrt(1.0 - rho * rho) * b)
    dots = np.einsum("nd,nd->n", q, k)
    return dots * resolve_scale(d_k, scale)


def exam_totals(n_students: int, n_subjects: int, *, mean: float = 50.0, sd: float = 10.0,
                rho: float = 0.0, seed=0, return_scores: bool = False):
    """Total scores of a class of ``n_students`` over ``n_subjects`` subjects (chapter `test-scores`).

    Each subject score is Gaussian with mean ``mean`` and standard deviation ``sd``
    (not clipped to 0-100: the analogy needs only the first two moments).  Two
    subjects of the same student have correlation ``rho`` (a shared "general
    ability" factor: score = mean + sd·(√ρ·g + √(1−ρ)·e)); students are independent.

    Theory for the total T of one student::

        E[T]   = n_subjects · mean
        Var[T] = n_subjects · sd² · (1 + (n_subjects − 1)·rho)

    so with rho = 0 the variance grows like n_subjects and the standard deviation
    like √n_subjects.

    Returns the totals, shape ``(n_students,)``; with ``return_scores=True`` the
    per-subject scores, shape ``(n_students, n_subjects)``, as well.
    ``seed`` is an int or a ``np.random.Generator``.
    """
    n_students, n_subjects = positive_int("n_students", n_students), positive_int("n_subjects", n_subjects)
    if not (isinstance(mean, (int, float, np.floating, np.integer)) and math.isfinite(mean)):
        raise TypeError(f"mean must be a finite number; got {mean!r}")
    if not (isinstance(sd, (int, float, np.floating, np.integer)) and math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be a non-negative finite number; got {sd!r}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [0, 1] (a shared-ability correlation); got {rho}")
    rng = generator(seed)
    g = rng.standard_normal((n_students, 1))
    e = rng.standard_normal((n_students, n_subjects))
    scores = mean + sd * (math.sqrt(rho) * g + math.sqrt(1.0 - rho) * e)
    totals = scores.sum(axis=-1)
    return (totals, scores) if return_scores else totals


def variance_standard_error(variance, n: int, excess_kurtosis: float = 0.0):
    """Standard error of the unbiased sample variance s² of ``n`` independent draws (chapter `variance`).

    For draws with variance σ² and excess kurtosis κ (0 for a normal law),
    the unbiased estimator s² = Σ(xᵢ − x̄)²/(n − 1) has mean σ² and, exactly,

        Var(s²) = σ⁴ · (2/(n − 1) + κ/n),

    so its standard error is σ²·√(2/(n − 1) + κ/n).  Example: q·k with d_k = 2
    has σ² = 2 and κ = 6/2 = 3; with n = 50 draws the standard error is about
    0.63, so an estimate of 1.6 is well within the noise.

    ``variance`` may be an array (broadcast with ``excess_kurtosis``).
    """
    n = positive_int("n", n, minimum=2)          # a sample variance needs two draws
    var = np.asarray(variance, dtype=float)
    kappa = np.asarray(excess_kurtosis, dtype=float)
    if np.any(var < 0):
        raise ValueError(f"variance must be non-negative; got {variance!r}")
    if np.any(kappa < -2):
        raise ValueError(f"excess kurtosis is at least -2 for every distribution; got {excess_kurtosis!r}")
    se = var * np.sqrt(2.0 / (n - 1) + kappa / n)
    return float(se) if se.ndim == 0 else se


def repeated_variances(d_k: int, n: int, repeats: int, *, scale=1.0, seed=0, dtype=np.float64):
    """``repeats`` independent sample variances, each from ``n`` dot products (chapter `variance`).

    Draws ``n · repeats`` scores with :func:`sample_dot_products` (unit-variance
    components, ``scale`` as there) and returns the unbiased sample variance of
    each block of ``n``: shape ``(repeats,)``.  Their spread is the sampling noise
    of a variance measured from ``n`` scores; compare its standard deviation with
    :func:`variance_standard_error` (σ² = d_k or 1, κ = 6/d_k).
    """
    n, repeats = positive_int("n", n, minimum=2), positive_int("repeats", repeats)
    x = sample_dot_products(d_k, n * repeats, seed=seed, scale=scale, dtype=dtype)
    return x.reshape(repeats, n).astype(np.float64).var(axis=-1, ddof=1)


def excess_kurtosis(x, axis: int = -1):
    """Sample excess kurtosis m₄/m₂² − 3 along ``axis`` (chapter `variance`).

    m₂ and m₄ are the central moments with 1/n (the plain plug-in estimate, no
    small-sample correction).  0 for a normal law; 6 for the product of two
    independent N(0, 1); 6/d_k for q·k/√d_k; −1.2 for a uniform law; −2 for ±1 coins.
    """
    a = np.asarray(x, dtype=float)
    if a.ndim == 0 or a.shape[axis] < 2:
        raise ValueError(f"excess_kurtosis needs at least 2 values along axis {axis}; got shape {a.shape}")
    c = a - a.mean(axis=axis, keepdims=True)
    m2 = np.mean(c * c, axis=axis)
    m4 = np.mean(c ** 4, axis=axis)
    if np.any(m2 == 0):
        raise ValueError("excess_kurtosis is undefined for constant data (variance 0)")
    k = m4 / (m2 * m2) - 3.0
    return float(k) if np.ndim(k) == 0 else k
