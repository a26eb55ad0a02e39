"""How peaked an attention distribution is, and how much gradient its softmax passes.

Shared by the chapters `softmax-saturation`, `training` and `caveats`.
"""
from __future__ import annotations

import math

import numpy as np

from .attention import softmax
from ..infra.checks import generator

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

    Closed form, without building n×n matrices:
    ‖J‖_F² = Σ_i p_i²(1 − p_i)² + Σ_i p_i² Σ_{j≠i} p_j².
    Near saturation the largest p_i is within rounding of 1, so ``1 − p_i`` and
    ``Σ_{j≠i} p_j²`` are summed directly from the other entries instead of
    subtracted: the norm stays accurate down to the smallest floats (chapter `softmax-saturation`).
    Assumes each p sums to 1, as a softmax output does.
    """
    p = np.asarray(weights, dtype=float)
    top = p == np.max(p, axis=-1, keepdims=True)
    top &= np.cumsum(top, axis=-1) == 1  # exactly one top entry per row
    rest = np.where(top, 0.0, p)
    p2 = p * p
    one_minus = np.where(top, rest.sum(axis=-1, keepdims=True), 1.0 - p)
    s2_excl = np.where(top, (rest * rest).sum(axis=-1, keepdims=True), p2.sum(axis=-1, keepdims=True) - p2)
    return np.sqrt(np.sum(p2 * one_minus**2 + p2 * s2_excl, axis=-1))


def random_attention_stats(d_k: int, *, n_keys: int = 32, n_queries: int = 2000, scale=None, seed=0,
                           sigma: float = 1.0):
    """Entropy, largest weight and Jacobian norm of attention with random queries and keys.

    Each of ``n_queries`` queries attends over its own ``n_keys`` keys; components are
    independent N(0, sigma²).  ``scale=None`` means 1/√d_k, ``scale=1.0`` unscaled.
    Returns a dict of arrays, one value per query: ``entropy``, ``max_weight``, ``jacobian_norm``.
    """
    rng = generator(seed)
    q = sigma * rng.standard_normal((n_queries, 1, d_k))
    k = sigma * rng.standard_normal((n_queries, n_keys, d_k))
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    scores = np.matmul(q, k.swapaxes(-1, -2))[:, 0, :] * s  # (n_queries, n_keys)
    w = softmax(scores, axis=-1)
    return {"entropy": attention_entropy(w), "max_weight": w.max(axis=-1), "jacobian_norm": jacobian_norm(w)}


