"""How peaked an attention distribution is, and how much gradient its softmax passes.

Shared by chapters 04 (saturation), 05 (training) and 06 (caveats).
"""
from __future__ import annotations

import math

import numpy as np

from .attention import softmax

__all__ = ["attention_entropy", "jacobian_norm", "random_attention_stats"]


def attention_entropy(weights, axis: int = -1):
    """Shannon entropy (in nats) of each distribution along ``axis``; 0·log 0 counts as 0.

    Uniform over n keys gives ln n; one-hot gives 0.  NumPy arrays only.
    """
    w = np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(w), 0.0)
    return terms.sum(axis=axis)


def jacobian_norm(weights):
    """Frobenius norm of the softmax Jacobian diag(p) − ppᵀ for each distribution p (last axis).

    Computed in closed form: ‖J‖_F² = Σ p_i² − 2 Σ p_i³ + (Σ p_i²)², equal to the
    norm of :func:`lib.softmax_jacobian` (see the tests) without building n×n matrices.
    """
    p = np.asarray(weights, dtype=float)
    s2 = np.sum(p * p, axis=-1)
    s3 = np.sum(p * p * p, axis=-1)
    return np.sqrt(np.maximum(s2 - 2 * s3 + s2 * s2, 0.0))


def random_attention_stats(d_k: int, *, n_keys: int = 32, n_queries: int = 2000, scale=None, seed=0,
                           sigma: float = 1.0):
    """Entropy, largest weight and Jacobian norm of attention with random queries and keys.

    Each of ``n_queries`` queries attends over its own ``n_keys`` keys; components are
    independent N(0, sigma²).  ``scale=None`` means 1/√d_k, ``scale=1.0`` unscaled.
    Returns a dict of arrays, one value per query: ``entropy``, ``max_weight``, ``jacobian_norm``.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    q = sigma * rng.standard_normal((n_queries, 1, d_k))
    k = sigma * rng.standard_normal((n_queries, n_keys, d_k))
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    scores = np.matmul(q, k.swapaxes(-1, -2))[:, 0, :] * s  # (n_queries, n_keys)
    w = softmax(scores, axis=-1)
    return {"entropy": attention_entropy(w), "max_weight": w.max(axis=-1), "jacobian_norm": jacobian_norm(w)}


