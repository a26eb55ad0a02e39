"""Scaled dot-product attention, softmax and its Jacobian, in NumPy and PyTorch.

One function per idea, each taking NumPy arrays (the NumPy path) or torch
tensors (the torch path, on the tensors' own device, keeping autograd).  The
book's chapters call these; ``tests/`` proves them against PyTorch's own
``softmax``, ``scaled_dot_product_attention`` and autograd.

Chapter 01 explains the formula; chapter 05 the softmax Jacobian.
"""
from __future__ import annotations

import math

import numpy as np

from ._backend import check_same_family, dtype_kind, is_torch, torch_module

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
    Chapter 05 shows why every entry lies in [-1/4, 1/4] and why J → 0 as p
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
    if not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive int; got {num_heads!r}")
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
def _shape(x):
    return tuple(x.shape)


def _check_qkv(q, k, v, mask):
    """Validate kinds, dtypes and shapes; return the batch shape of the output."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        kind = dtype_kind(a)
        if kind != "float":
            raise TypeError(
                f"{name} has dtype {a.dtype} ({kind}); attention needs floating-point q, k, v "
                f"(convert with .astype(np.float64) or .float())"
            )
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., length, features); got shape {_shape(a)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"d_k differs: q has shape {_shape(q)} and k has shape {_shape(k)}; "
            f"their last dimensions ({q.shape[-1]} and {k.shape[-1]}) must be equal"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"key and value lengths differ: k has shape {_shape(k)} and v has shape {_shape(v)}; "
            f"their second-to-last dimensions ({k.shape[-2]} and {v.shape[-2]}) must be equal"
        )
    try:
        batch = np.broadcast_shapes(_shape(q)[:-2], _shape(k)[:-2], _shape(v)[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions do not broadcast: q {_shape(q)}, k {_shape(k)}, v {_shape(v)}"
        ) from None
    L, S = q.shape[-2], k.shape[-2]
    scores_shape = (*batch, L, S)
    if mask is not None:
        kind = dtype_kind(mask)
        if kind not in ("bool", "float"):
            raise TypeError(
                f"mask has dtype {mask.dtype}; use a boolean mask (True = may attend) "
                "or a floating additive mask (0 or -inf)"
            )
        try:
            ok = np.broadcast_shapes(_shape(mask), scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask of shape {_shape(mask)} does not broadcast to the scores' shape "
                f"(..., L, S) = {scores_shape} (q {_shape(q)}, k {_shape(k)})"
            )
    return batch, L, S


def _default_scale(d_k: int, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


def scaled_dot_product_attention(q, k, v, mask=None, *, scale=None, is_causal=False, return_weights=False):
    r"""Attention(Q, K, V) = softmax(Q Kᵀ · scale) V, with scale = 1/√d_k by default.

    Shapes: q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) → out (..., L, d_v);
    with ``return_weights=True`` returns ``(out, weights)``, weights (..., L, S).

    - NumPy arrays take the NumPy path; torch tensors the torch path on their own
      device (autograd kept).  Without weights the torch path calls
      ``torch.nn.functional.scaled_dot_product_attention``; with weights it
      computes the same math explicitly.
    - ``mask`` follows PyTorch's ``attn_mask``: boolean (True = may attend) or a
      float mask added to the scores, broadcastable to (..., L, S).
    - ``is_causal=True`` lets query i see keys j ≤ i (top-left aligned).
    - ``scale=1.0`` is the unscaled variant that the experiments compare against.
    - A query row with nothing to attend to gives zeros, as PyTorch does.

    Raises ``ValueError`` for disagreeing shapes and ``TypeError`` for integer or
    boolean q, k, v or for NumPy and torch mixed in one call.
    """
    fam = check_same_family(q=q, k=k, v=v, mask=mask)
    if fam == "numpy":
        q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
        mask = None if mask is None else np.asarray(mask)
    _check_qkv(q, k, v, mask)
    if is_causal and mask is not None:
        raise ValueError("give either mask or is_causal=True, not both (combine them into one mask)")
    s = _default_scale(q.shape[-1], scale)
    if fam == "torch":
        return _attention_torch(q, k, v, mask, s, is_causal, return_weights)
    return _attention_numpy(q, k, v, mask, s, is_causal, return_weights)


# Below this bound on every |score| (float32: e^±30, float64: e^±300) exp(score) can neither overflow
# nor lose the row to underflow, so the softmax may skip subtracting the row maximum (chapter 09).
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
    if not return_weights:
        if q.ndim != 4 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and (mask is None or mask.ndim <= 2):
            # PyTorch chooses its fused CPU kernel only for 4-D (batch, heads, L, d) inputs; other ranks
            # fall back to its unfused math path (chapter 09). Same numbers, so present them as 4-D.
            batch = q.shape[:-2]
            q4, k4, v4 = (t.reshape(-1, 1, *t.shape[-2:]) for t in (q, k, v))  # (N, 1, L|S, d)
            out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, is_causal=is_causal, scale=scale)
            return out.reshape(*batch, *out.shape[-2:])  # (..., L, d_v)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        mask = causal_mask(L, S, like=q)
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., L, S); scaling q is L·d_k multiplications, not L·S
    dead = None  # rows with nothing to attend to: torch.softmax would give NaN there, lib gives 0
    if mask is not None:
        if mask.dtype == torch.bool:
            dead = ~mask.any(dim=-1, keepdim=True)
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            dead = torch.isneginf(mask).all(dim=-1, keepdim=True)
            scores = scores + mask
        if bool(dead.any()):
            # a finite row in, zeros out: no NaN in the output or in the gradient
            scores = scores.masked_fill(dead, 0.0)
        else:
            dead = None
    weights = torch.softmax(scores, dim=-1)  # one fused kernel, max-shifted inside
    if dead is not None:
        weights = weights.masked_fill(dead, 0.0)
    return weights @ v, weights
