"""Monte Carlo helpers the chapters share: random dot products and their statistics.

Chapter 03 uses them to check Var(q·k) = d_k; chapter 06 to break its assumptions.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sample_dot_products"]


def sample_dot_products(d_k: int, n: int, *, seed=0, sigma_q: float = 1.0, sigma_k: float = 1.0,
                        rho: float = 0.0, scale=None, dtype=np.float64):
    """``n`` dot products q·k of random d_k-vectors, multiplied by ``scale``.

    Components are Gaussian with mean 0 and standard deviations ``sigma_q`` and
    ``sigma_k``; the pair (q_i, k_i) has correlation ``rho``, independent
    across i.  Theory: mean d_k·rho·σ_q·σ_k, variance d_k·σ_q²·σ_k²·(1 + rho²).
    ``scale=None`` returns raw scores; ``scale='sqrt'`` divides by √d_k.
    ``seed`` is an int or a ``np.random.Generator``.
    """
    if not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"d_k must be a positive int; got {d_k!r}")
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [-1, 1]; got {rho}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    a = rng.standard_normal((n, d_k), dtype=dtype)
    b = rng.standard_normal((n, d_k), dtype=dtype)
    q = sigma_q * a
    k = sigma_k * (rho * a + math.sqrt(1.0 - rho * rho) * b)
    dots = np.einsum("nd,nd->n", q, k)
    if scale is None:
        return dots
    if isinstance(scale, str):
        if scale != "sqrt":
            raise ValueError(f"scale must be None, 'sqrt' or a number; got {scale!r}")
        scale = 1.0 / math.sqrt(d_k)
    return dots * scale
