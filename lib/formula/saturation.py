"""Softmax saturation: how much gradient a softmax passes as its inputs grow (chapter `softmax-saturation`).

NumPy only (no torch, no matplotlib at import).  The softmax and its Jacobian live
in :mod:`lib.attention`, the entropy and the Jacobian norm in :mod:`lib.metrics`;
this module adds what the `softmax-saturation` chapter builds on them:

- :func:`jacobian_gap_bound`: a bound on every Jacobian entry from the gap between
  the two largest inputs, the reason J → 0 as one input dominates;
- :func:`logit_scale_sweep`: the Jacobian norm of softmax(c·z) for random z as the
  logit scale c grows (it rises, then collapses);
- :func:`one_query_attention`: one query's attention weights and their Jacobian at a
  given d_k, scaled or not (the chapter's widget and its static figure).
"""
from __future__ import annotations

import math

import numpy as np

from .attention import scaled_dot_product_attention, softmax, softmax_jacobian
from ..infra.checks import generator, positive_int
from .metrics import jacobian_norm

__all__ = ["jacobian_gap_bound", "logit_scale_sweep", "one_query_attention"]


def jacobian_gap_bound(z, axis: int = -1):
    """Upper bound on max_ij |∂softmax(z)_i/∂z_j| from the gap Δ between the two largest inputs.

    Returns ``min(1/4, (n − 1)·exp(−Δ))`` for each vector along ``axis`` (n entries).
    Every entry of J = diag(p) − ppᵀ is at most 1/4 in size, and at most 1 − p_max,
    which is at most (n − 1)e^{−Δ} (the `softmax-saturation` chapter proves both).  So J vanishes
    exponentially fast as one input pulls ahead.  ``z`` needs n ≥ 2 finite entries.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim < 1 or z.shape[axis] < 2:
        raise ValueError(f"jacobian_gap_bound needs at least 2 entries along axis {axis}; got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("jacobian_gap_bound needs finite inputs (no NaN or inf)")
    z = np.moveaxis(z, axis, -1)
    n = z.shape[-1]
    top2 = np.sort(z, axis=-1)[..., -2:]
    gap = top2[..., 1] - top2[..., 0]
    return np.minimum(0.25, (n - 1) * np.exp(-gap))


def logit_scale_sweep(scales, *, n_keys: int = 32, n_samples: int = 2000, seed=0):
    """Frobenius norm of the softmax Jacobian at logits c·z, for each scale c in ``scales``.

    z has independent N(0, 1) entries (``n_samples`` vectors of ``n_keys``), the same z
    for every c, so the curves differ only by the scale.  Returns an array of shape
    (len(scales), n_samples).  The scaled attention scores of the `variance` chapter have c ≈ 1;
    unscaled scores have c ≈ √d_k.
    """
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size == 0:
        raise ValueError(f"scales must be a non-empty 1-d sequence; got shape {scales.shape}")
    if not np.all(np.isfinite(scales)) or np.any(scales < 0):
        raise ValueError(f"scales must be finite and ≥ 0; got {scales}")
    n_keys, n_samples = positive_int("n_keys", n_keys), positive_int("n_samples", n_samples)
    rng = generator(seed)
    z = rng.standard_normal((n_samples, n_keys))
    return np.stack([jacobian_norm(softmax(c * z, axis=-1)) for c in scales])


def one_query_attention(d_k: int, *, n_keys: int = 16, scaled: bool = True, seed: int = 0):
    """One random query against ``n_keys`` random keys: its attention weights and their Jacobian.

    q and the keys have independent N(0, 1) components (drawn from ``seed`` and ``d_k``,
    so the scaled and unscaled variants see the same vectors).  Returns a dict with
    ``scores`` (n_keys,) after scaling, ``weights`` (n_keys,), ``jacobian`` (n_keys, n_keys)
    = diag(p) − ppᵀ, and ``jacobian_norm`` (its Frobenius norm, a float).
    """
    d_k, n_keys = positive_int("d_k", d_k), positive_int("n_keys", n_keys, minimum=2)
    rng = np.random.default_rng([int(seed), int(d_k)])
    q = rng.standard_normal((1, d_k))          # (1, d_k)
    k = rng.standard_normal((n_keys, d_k))     # (S, d_k)
    v = np.eye(n_keys)                         # values are not needed; identity keeps shapes simple
    scale = None if scaled else 1.0
    _, w = scaled_dot_product_attention(q, k, v, scale=scale, return_weights=True)
    s = (q @ k.T)[0] * (1.0 / math.sqrt(d_k) if scaled else 1.0)
    p = w[0]
    J = softmax_jacobian(p)
    return {"scores": s, "weights": p, "jacobian": J, "jacobian_norm": float(np.linalg.norm(J))}
