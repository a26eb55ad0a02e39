"""The fast path: the same attention as :func:`lib.scaled_dot_product_attention`, tuned for speed.

The `speed` chapter shows it as an exhibit of what a fast implementation does beyond the formula; every
chapter's reference is ``lib.scaled_dot_product_attention``. ``tests/test_attention.py`` runs every
check of the reference on this function too (against PyTorch's own SDPA and autograd), and
``make bench`` times it. What it does differently:

- NumPy: it scales q (L·d_k multiplications) instead of the scores (L·S); it skips subtracting the
  row maximum where the Cauchy–Schwarz inequality proves exp cannot overflow or lose the row; it
  takes the row sums with one matrix product (BLAS); it normalises after the second product (L·d_v
  divisions instead of L·S); it edits the scores in place.
- torch: it presents inputs of any rank as 4-D (batch, heads, L, d), because PyTorch chooses its
  fused CPU kernel for 4-D inputs only (same numbers, less time).
"""
from __future__ import annotations

import math

import numpy as np

from ..infra._backend import torch_module
from .attention import causal_mask, explicit_torch, prepare

__all__ = ["attention_fast"]


def attention_fast(q, k, v, mask=None, *, scale=None, is_causal=False, return_weights=False):
    """:func:`lib.scaled_dot_product_attention` (same arguments, same results to rounding), faster."""
    fam, q, k, v, mask, s = prepare(q, k, v, mask, scale, is_causal)
    if fam == "torch":
        return _attention_torch(q, k, v, mask, s, is_causal, return_weights)
    return _attention_numpy(q, k, v, mask, s, is_causal, return_weights)


# Below this bound on every |score| (float32: e^±30, float64: e^±300) exp(score) can neither overflow
# nor lose the row to underflow, so the softmax may skip subtracting the row maximum (chapter `speed`).
_NO_SHIFT_BOUND = {np.dtype(np.float32): 30.0, np.dtype(np.float64): 300.0}


def _scores_need_shift(qs, k, v, dtype, S) -> bool:
    """True unless Cauchy–Schwarz proves exp(q·k·scale) safe without the max shift.

    |q_i·k_j·scale| ≤ max_i ‖q_i scale‖ · max_j ‖k_j‖; the products with v stay finite as long as
    S · e^bound · max|v| stays far below the largest float.  Costs O((L + S)·d), not O(L·S).
    """
    limit = _NO_SHIFT_BOUND.get(dtype)
    if limit is None or qs.size == 0 or k.size == 0:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        bound = math.sqrt(float(np.max(np.einsum("...i,...i->...", qs, qs))) *
                          float(np.max(np.einsum("...i,...i->...", k, k))))
        vmax = max(float(v.max()), -float(v.min())) if v.size else 0.0
    if not (math.isfinite(bound) and math.isfinite(vmax)) or bound > limit:
        return True
    return bound + math.log(S) + math.log(max(vmax, 1.0)) > math.log(np.finfo(dtype).max) - 8.0


def _attention_numpy(q, k, v, mask, scale, is_causal, return_weights):
    dtype = np.result_type(q, k, v)
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        mask = causal_mask(L, S)
    # Scale q (L·d_k numbers) rather than the scores (L·S numbers): same result, less work.
    qs = q * dtype.type(scale)
    scores = np.matmul(qs, k.swapaxes(-1, -2))  # (..., L, S)
    bool_mask = mask is not None and mask.dtype == np.bool_
    if bool_mask:
        if scores.shape != np.broadcast_shapes(scores.shape, mask.shape):
            scores = np.broadcast_to(scores, np.broadcast_shapes(scores.shape, mask.shape)).copy()
        np.copyto(scores, -np.inf, where=~mask)  # in place: masked keys get weight exactly 0
    elif mask is not None:
        scores = scores + mask.astype(dtype, copy=False)
    # The row maximum is subtracted only where the scores could overflow exp (or where an additive
    # mask could move them anywhere); exp(s - m) / Σ exp(s - m) = exp(s) / Σ exp(s) exactly otherwise.
    if (mask is not None and not bool_mask) or _scores_need_shift(qs, k, v, dtype, S):
        m = scores.max(axis=-1, keepdims=True)
        m[np.isneginf(m)] = 0.0  # a fully masked row: exp(-inf) = 0 everywhere, sum 0
        np.subtract(scores, m, out=scores)
    np.exp(scores, out=scores)  # unnormalised weights
    denom = np.matmul(scores, np.ones((S, 1), dtype=dtype))  # row sums, (..., L, 1); BLAS beats .sum() here
    denom[denom == 0] = 1.0  # that row's weights and output stay 0
    if return_weights:
        np.divide(scores, denom, out=scores)
        return np.matmul(scores, v), scores
    # Normalise after the second product: L·d_v divisions instead of L·S.
    out = np.matmul(scores, v)
    return np.divide(out, denom, out=out)


def _attention_torch(q, k, v, mask, scale, is_causal, return_weights):
    torch = torch_module()
    F = torch.nn.functional
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(q.dtype)
    if return_weights:
        return explicit_torch(q, k, v, mask, scale, is_causal)
    if q.ndim != 4 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and (mask is None or mask.ndim <= 2):
        # PyTorch chooses its fused CPU kernel only for 4-D (batch, heads, L, d) inputs; other ranks
        # fall back to its unfused math path (chapter `speed`). Same numbers, so present them as 4-D.
        batch = q.shape[:-2]
        q4, k4, v4 = (t.reshape(-1, 1, *t.shape[-2:]) for t in (q, k, v))  # (N, 1, L|S, d)
        out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, is_causal=is_causal, scale=scale)
        return out.reshape(*batch, *out.shape[-2:])  # (..., L, d_v)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
