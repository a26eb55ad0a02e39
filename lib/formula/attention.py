"""Scaled dot-product attention, softmax and its Jacobian, in NumPy and PyTorch.

One function per idea, each taking NumPy arrays (the NumPy path) or torch
tensors (the torch path, on the tensors' own device, keeping autograd).  The
book's chapters call these; ``tests/`` proves them against PyTorch's own
``softmax``, ``scaled_dot_product_attention`` and autograd.

The `formula` chapter explains the formula; the `softmax-saturation` chapter the softmax Jacobian. Each function here is the
reference: it reads like the formula. The speed-ups the `speed` chapter shows are in ``lib.fast``.
"""
from __future__ import annotations

import numpy as np

from ..infra._backend import check_same_family, dtype_kind, is_torch, torch_module
from ..infra.checks import check_qkv, positive_int, resolve_scale

__all__ = [
    "softmax",
    "softmax_jacobian",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "causal_mask",
]


# --------------------------------------------------------------------------- softmax
def softmax(x, axis: int = -1):
    """Softmax along ``axis``: ``exp(x - max) / sum(exp(x - max))``.

    NumPy in, NumPy out; torch in, torch out (autograd kept).  Subtracting the
    maximum makes it stable for inputs of any magnitude (``[1e4, 0]`` is fine).
    Integer or boolean input is promoted to floating point.  A slice that is all
    ``-inf`` (every position masked) gives zeros instead of NaN, which is what
    attention needs for a query with nothing to attend to.
    """
    if is_torch(x):
        torch = torch_module()
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        m = x.amax(dim=axis, keepdim=True)
        m = torch.where(torch.isneginf(m), torch.zeros_like(m), m).detach()
        e = torch.exp(x - m)
        s = e.sum(dim=axis, keepdim=True)
        return e / torch.where(s == 0, torch.ones_like(s), s)
    x = np.asarray(x)
    if dtype_kind(x) != "float":
        x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(s == 0, 1.0, s)


def softmax_jacobian(p):
    """The Jacobian of softmax given its output ``p``: ``diag(p) - p pᵀ``.

    Works along the last axis: ``p`` of shape (..., n) gives (..., n, n) with
    ``J[..., i, j] = ∂p_i/∂z_j = p_i (δ_ij - p_j)``.  NumPy or torch.
    The `softmax-saturation` chapter shows why every entry lies in [-1/4, 1/4] and why J → 0 as p
    approaches one-hot.
    """
    if is_torch(p):
        torch = torch_module()
        if p.ndim < 1:
            raise ValueError(f"softmax_jacobian needs at least one axis; got shape {tuple(p.shape)}")
        eye = torch.eye(p.shape[-1], dtype=p.dtype, device=p.device)
        return p.unsqueeze(-1) * eye - p.unsqueeze(-1) * p.unsqueeze(-2)
    p = np.asarray(p, dtype=np.result_type(np.asarray(p).dtype, np.float32))
    if p.ndim < 1:
        raise ValueError(f"softmax_jacobian needs at least one axis; got shape {p.shape}")
    eye = np.eye(p.shape[-1], dtype=p.dtype)
    return p[..., :, None] * eye - p[..., :, None] * p[..., None, :]


# --------------------------------------------------------------------------- heads
def split_heads(x, num_heads: int):
    """(..., L, d_model) → (..., num_heads, L, d_k) with d_k = d_model / num_heads.

    Head ``h`` takes columns ``h*d_k`` to ``(h+1)*d_k`` of the model dimension,
    the same layout as ``torch.nn.MultiheadAttention``.  NumPy or torch.
    """
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"split_heads needs (..., L, d_model); got shape {shape}")
    num_heads = positive_int("num_heads", num_heads)
    d_model = shape[-1]
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} (shape {shape}) is not divisible by num_heads={num_heads}")
    d_k = d_model // num_heads
    return x.reshape(*shape[:-1], num_heads, d_k).swapaxes(-2, -3)  # (..., h, L, d_k)


def merge_heads(x):
    """(..., num_heads, L, d_k) → (..., L, num_heads * d_k); the inverse of :func:`split_heads`."""
    shape = tuple(x.shape)
    if len(shape) < 3:
        raise ValueError(f"merge_heads needs (..., num_heads, L, d_k); got shape {shape}")
    h, L, d_k = shape[-3:]
    return x.swapaxes(-2, -3).reshape(*shape[:-3], L, h * d_k)  # (..., L, h*d_k)


# --------------------------------------------------------------------------- masks
def causal_mask(L: int, S: int | None = None, *, like=None):
    """Boolean (L, S) mask, True where query i may attend to key j (j ≤ i).

    Aligned to the top-left corner, as PyTorch's ``is_causal=True``.  Returns a
    torch tensor on ``like``'s device if ``like`` is a tensor, else NumPy.
    """
    S = L if S is None else S
    if is_torch(like):
        torch = torch_module()
        return torch.ones(L, S, dtype=torch.bool, device=like.device).tril()
    return np.tril(np.ones((L, S), dtype=bool))


# --------------------------------------------------------------------------- attention
def scaled_dot_product_attention(q, k, v, mask=None, *, scale=None, is_causal=False, return_weights=False):
    r"""Attention(Q, K, V) = softmax(Q Kᵀ · scale) V, with scale = 1/√d_k by default.

    Shapes: q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) → out (..., L, d_v);
    with ``return_weights=True`` returns ``(out, weights)``, weights (..., L, S).

    This is the reference: the formula as written, step by step (chapter `formula`). The speed-ups of
    the `speed` chapter live in :func:`lib.fast.attention_fast`, tested against this function and PyTorch.

    - NumPy arrays take the NumPy path; torch tensors the torch path on their own
      device (autograd kept).  Without weights the torch path calls
      ``torch.nn.functional.scaled_dot_product_attention``; with weights it
      computes the same math explicitly.
    - ``mask`` follows PyTorch's ``attn_mask``: boolean (True = may attend) or a
      float mask added to the scores, broadcastable to (..., L, S).
    - ``is_causal=True`` lets query i see keys j ≤ i (top-left aligned).
    - ``scale=None`` is 1/√d_k; ``scale=1.0`` is the unscaled variant the experiments compare against.
    - A query row with nothing to attend to gives zeros, as PyTorch does.

    Raises ``ValueError`` for disagreeing shapes and ``TypeError`` for integer or
    boolean q, k, v, for a scale that is not a number, or for NumPy and torch mixed in one call.
    """
    fam, q, k, v, mask, s = prepare(q, k, v, mask, scale, is_causal)
    if fam == "torch":
        return _attention_torch(q, k, v, mask, s, is_causal, return_weights)
    return _attention_numpy(q, k, v, mask, s, is_causal, return_weights)


def prepare(q, k, v, mask, scale, is_causal):
    """Validate one attention call; return (family, q, k, v, mask, scale as a float)."""
    fam = check_same_family(q=q, k=k, v=v, mask=mask)
    if fam == "numpy":
        q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
        mask = None if mask is None else np.asarray(mask)
    check_qkv(q, k, v, mask)
    if is_causal and mask is not None:
        raise ValueError("give either mask or is_causal=True, not both (combine them into one mask)")
    return fam, q, k, v, mask, resolve_scale(q.shape[-1], scale)


def _attention_numpy(q, k, v, mask, scale, is_causal, return_weights):
    if is_causal:
        mask = causal_mask(q.shape[-2], k.shape[-2])
    scores = (q @ k.swapaxes(-1, -2)) * scale           # (..., L, S)
    if mask is not None and mask.dtype == np.bool_:
        scores = np.where(mask, scores, -np.inf)        # masked keys get weight exactly 0
    elif mask is not None:
        scores = scores + mask.astype(scores.dtype, copy=False)
    weights = softmax(scores)                           # (..., L, S); a fully masked row gives zeros
    out = weights @ v                                   # (..., L, d_v)
    return (out, weights) if return_weights else out


def _attention_torch(q, k, v, mask, scale, is_causal, return_weights):
    torch = torch_module()
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(q.dtype)
    if not return_weights:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                                is_causal=is_causal, scale=scale)
    return explicit_torch(q, k, v, mask, scale, is_causal)


def explicit_torch(q, k, v, mask, scale, is_causal):
    """softmax(q kᵀ · scale + mask) v on tensors, returning (out, weights); rows with nothing to
    attend to give zeros (``torch.softmax`` alone would give NaN there, in the output and the gradient)."""
    torch = torch_module()
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        mask = causal_mask(L, S, like=q)
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., L, S); scaling q is L·d_k multiplications, not L·S
    dead = None
    if mask is not None:
        if mask.dtype == torch.bool:
            dead = ~mask.any(dim=-1, keepdim=True)
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            dead = torch.isneginf(mask).all(dim=-1, keepdim=True)
            scores = scores + mask
        if bool(dead.any()):
            scores = scores.masked_fill(dead, 0.0)      # a finite row in, zeros out
        else:
            dead = None
    weights = torch.softmax(scores, dim=-1)  # one fused kernel, max-shifted inside
    if dead is not None:
        weights = weights.masked_fill(dead, 0.0)
    return weights @ v, weights
