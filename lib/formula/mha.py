"""Multi-head attention as a ``torch.nn.Module`` built on :mod:`lib.attention`.

This module imports torch, so ``lib/__init__.py`` loads it only when
``lib.MultiHeadAttention`` is first used.  The `multi-head` chapter (multi-head attention) walks through it.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .attention import merge_heads, scaled_dot_product_attention, split_heads

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention: (B, L, d_model) → (B, L, d_model).

    d_model = num_heads · d_k.  Each head attends with its own d_k-wide slice of
    the projected queries and keys, and the scale is 1/√d_k of that slice, not
    1/√d_model.  ``scale`` replaces that factor (``scale=1.0``: the unscaled variant the `training` and
    `multi-head` chapters train).  ``mask`` broadcasts to (B, num_heads, L, S), True = may attend
    (note: the opposite of ``torch.nn.MultiheadAttention``'s boolean mask).
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True, scale=None, device=None, dtype=None):
        super().__init__()
        if num_heads < 1 or d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be a positive multiple of num_heads={num_heads}")
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                                  or not math.isfinite(scale) or scale <= 0):
            raise ValueError(f"scale must be None (1/√d_k) or a finite number > 0; got {scale!r}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.scale = scale
        kw = dict(bias=bias, device=device, dtype=dtype)
        self.q_proj = nn.Linear(d_model, d_model, **kw)
        self.k_proj = nn.Linear(d_model, d_model, **kw)
        self.v_proj = nn.Linear(d_model, d_model, **kw)
        self.out_proj = nn.Linear(d_model, d_model, **kw)

    def forward(self, query, key=None, value=None, mask=None, *, is_causal=False, return_weights=False):
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.ndim != 3 or x.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (B, length, d_model={self.d_model}); got {tuple(x.shape)}")
        q = split_heads(self.q_proj(query), self.num_heads)  # (B, h, L, d_k)
        k = split_heads(self.k_proj(key), self.num_heads)  # (B, h, S, d_k)
        v = split_heads(self.v_proj(value), self.num_heads)  # (B, h, S, d_k)
        res = scaled_dot_product_attention(q, k, v, mask, scale=self.scale, is_causal=is_causal,
                                           return_weights=return_weights)
        out, weights = res if return_weights else (res, None)  # out: (B, h, L, d_k)
        out = self.out_proj(merge_heads(out))  # (B, L, d_model)
        return (out, weights) if return_weights else out

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a ``torch.nn.MultiheadAttention(..., batch_first=True)``."""
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"from_torch expects torch.nn.MultiheadAttention; got {type(m).__name__}")
        if not m.batch_first:
            raise ValueError("from_torch needs batch_first=True (this class is batch-first)")
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise ValueError("from_torch supports only kdim = vdim = embed_dim, without add_bias_kv or add_zero_attn")
        bias = m.in_proj_bias is not None
        new = cls(m.embed_dim, m.num_heads, bias=bias, device=m.in_proj_weight.device, dtype=m.in_proj_weight.dtype)
        d = m.embed_dim
        with torch.no_grad():
            for i, proj in enumerate((new.q_proj, new.k_proj, new.v_proj)):
                proj.weight.copy_(m.in_proj_weight[i * d : (i + 1) * d])
                if bias:
                    proj.bias.copy_(m.in_proj_bias[i * d : (i + 1) * d])
            new.out_proj.weight.copy_(m.out_proj.weight)
            if bias:
                new.out_proj.bias.copy_(m.out_proj.bias)
        return new
