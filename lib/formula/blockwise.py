"""Memory-efficient attention: one block of keys at a time, with the online softmax (chapter `speed`).

The plain path (:func:`lib.scaled_dot_product_attention`) builds the whole (L, S) score matrix.
Here the keys and values are visited in blocks of ``block_size``; each query keeps three running
quantities, updated block by block as FlashAttention does on chip (Dao et al. 2022,
Algorithm 2 in their Appendix B; the online softmax of Milakov and Gimelshein 2018):

- ``m``: the largest scaled score seen so far, (..., L, 1);
- ``l``: the sum of ``exp(score - m)`` so far, (..., L, 1);
- ``acc``: the sum of ``exp(score - m) · v`` so far, (..., L, d_v).

When a block raises the maximum from ``m`` to ``m_new``, the old sums are rescaled by
``exp(m - m_new)``.  By default the scale ``1/√d_k`` is applied to the scores *before* the running
maximum (the shift must be the maximum of the numbers that are exponentiated; shifting scaled scores
by an unscaled maximum can underflow a whole row).  At the end ``out = acc / l``.

``exp2=True`` computes the same result the way FlashAttention-2's CUDA kernel does (chapter `real-code`):
``m`` is then the running maximum of the *raw* scores q·k, and every exponential is
``2 ** (s · c - m · c)`` with ``c = scale · log2(e)``, one multiply-add per score.  That is exact
because ``e**x = 2**(x · log2 e)`` and, for a positive scale, ``max(scale · s) = scale · max(s)``;
it needs ``scale > 0``.  :func:`softmax_exp2` is the same idea for one softmax.

float16/bfloat16 tensors: each block's scores, the running statistics and the accumulator are kept in
float32 (as FlashAttention does), so q·k cannot overflow float16's 65504 (chapter `real-code`).

The extra memory is one (L, block_size) block of scores plus the (L, d_v) accumulator: it grows
with L, not with L·S.  NumPy in, NumPy out; torch in, torch out (autograd works, but it keeps
every block for the backward pass, so only the forward pass is memory-efficient here; FlashAttention
recomputes the blocks instead).
"""
from __future__ import annotations

import numpy as np

from ..infra.checks import check_qkv, positive_int, resolve_scale
from ..infra.i18n import tr
from ..infra._backend import check_same_family, is_torch, torch_module

__all__ = ["blockwise_attention", "softmax_exp2"]

DEFAULT_BLOCK_SIZE = 512
#: log2(e): e**x = 2**(x * LOG2E).  The Triton tutorial writes it as 1.44269504, FlashAttention-2 as M_LOG2E.
LOG2E = 1.4426950408889634


def _check_exp2_scale(scale):
    if not scale > 0:
        raise ValueError(tr("the exp2 form needs a positive scale (max(scale·s) = scale·max(s) only holds "
                            "for scale > 0); got scale={scale!r}", scale=scale))


def softmax_exp2(raw_scores, scale, axis: int = -1):
    r"""softmax(raw_scores · scale) along ``axis``, computed as FlashAttention-2 and Triton do.

    The maximum is taken over the *raw* scores and the scale is folded, with log₂e, into one
    factor ``c = scale · log2(e)``: ``p = 2 ** (raw · c - max(raw) · c)``, then ``p / sum(p)``.
    Exact because e**x = 2**(x·log₂e) and max(scale·s) = scale·max(s) for ``scale > 0``
    (``ValueError`` otherwise).  NumPy in, NumPy out; torch in, torch out.  A slice that is all
    ``-inf`` gives zeros, as :func:`lib.softmax` does.  The `real-code` chapter compares it with the plain form.
    """
    scale = float(scale)
    _check_exp2_scale(scale)
    if is_torch(raw_scores):
        torch = torch_module()
        x = raw_scores if raw_scores.is_floating_point() else raw_scores.to(torch.get_default_dtype())
        m = x.amax(dim=axis, keepdim=True)
        m = torch.where(torch.isneginf(m), torch.zeros_like(m), m).detach()
        c = scale * LOG2E
        p = torch.exp2(x * c - m * c)
        s = p.sum(dim=axis, keepdim=True)
        return p / torch.where(s == 0, torch.ones_like(s), s)
    x = np.asarray(raw_scores)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    c = x.dtype.type(scale * LOG2E)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), x.dtype.type(0), m)
    p = np.exp2(x * c - m * c)
    s = np.sum(p, axis=axis, keepdims=True)
    return p / np.where(s == 0, x.dtype.type(1), s)


def blockwise_attention(q, k, v, mask=None, *, scale=None, is_causal=False, block_size=DEFAULT_BLOCK_SIZE,
                        exp2=False):
    r"""softmax(Q Kᵀ · scale) V computed over blocks of keys with the online softmax.

    Same conventions, shapes and errors as :func:`lib.scaled_dot_product_attention` (no
    ``return_weights``: the point is never to hold the (L, S) weights):
    q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) → out (..., L, d_v); ``scale=None`` is
    1/√d_k; ``mask`` boolean (True = may attend) or additive float, broadcastable to (..., L, S);
    ``is_causal=True`` lets query i see keys j ≤ i; a query with nothing to attend to gives zeros.

    ``block_size`` keys are processed at a time (the last block may be shorter).  With
    ``is_causal`` a key block starting at j0 only updates the queries i ≥ j0: the blocks above
    the diagonal are skipped, as fused kernels do.  The `speed` chapter walks through the update.

    ``exp2=False`` (default): the scale multiplies q before each block's scores, and the running
    maximum is that of the scaled scores (the FlashAttention paper's Algorithm, PyTorch's CPU
    kernel).  ``exp2=True``: the running maximum is that of the raw scores q·k (plus an additive
    mask divided by the scale) and the exponentials are ``2 ** (s·c - m·c)`` with
    ``c = scale·log2(e)`` (FlashAttention-2's CUDA kernel; the `real-code` chapter).  Both are exact; ``exp2``
    needs ``scale > 0``.
    """

    fam = check_same_family(q=q, k=k, v=v, mask=mask)
    if fam == "numpy":
        q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
        mask = None if mask is None else np.asarray(mask)
    batch, L, S = check_qkv(q, k, v, mask)
    if is_causal and mask is not None:
        raise ValueError("give either mask or is_causal=True, not both (combine them into one mask)")
    block_size = positive_int("block_size", block_size)
    if not isinstance(exp2, (bool, np.bool_)):
        raise TypeError(f"exp2 must be True or False; got {exp2!r}")
    s = resolve_scale(q.shape[-1], scale)
    if exp2:
        _check_exp2_scale(s)
    if mask is not None and mask.ndim == 1:
        mask = mask[None, :]  # (S,) → (1, S), so that the key axis is always the last one
    if fam == "torch":
        return _blockwise_torch(q, k, v, mask, s, is_causal, int(block_size), batch, L, S, bool(exp2))
    return _blockwise_numpy(q, k, v, mask, s, is_causal, int(block_size), batch, L, S, bool(exp2))


def _key_block(mask, j0, j1):
    """The columns j0:j1 of a mask whose key axis may be broadcast (length 1)."""
    return mask if mask.shape[-1] == 1 else mask[..., j0:j1]


def _blockwise_numpy(q, k, v, mask, scale, is_causal, block, batch, L, S, exp2=False):
    dtype = np.result_type(q, k, v)
    if exp2:
        qs = q.astype(dtype, copy=False)  # raw scores: the scale is folded into the exponent below
        c = dtype.type(scale * LOG2E)
    else:
        qs = q.astype(dtype, copy=False) * dtype.type(scale)  # the scale enters here, before any max
    k, v = k.astype(dtype, copy=False), v.astype(dtype, copy=False)
    d_v = v.shape[-1]
    m = np.full((*batch, L, 1), -np.inf, dtype=dtype)  # running max of the scaled (exp2: raw) scores
    l = np.zeros((*batch, L, 1), dtype=dtype)  # running sum of exp(score - m)
    acc = np.zeros((*batch, L, d_v), dtype=dtype)  # running sum of exp(score - m) · v
    qs = np.broadcast_to(qs, (*batch, L, qs.shape[-1]))
    for j0 in range(0, S, block):
        j1 = min(j0 + block, S)
        i0 = min(j0, L) if is_causal else 0  # causal: queries above j0 see none of these keys
        if i0 >= L:
            break
        s = np.matmul(qs[..., i0:, :], k[..., j0:j1, :].swapaxes(-1, -2))  # (..., L - i0, j1 - j0)
        if is_causal:
            s[..., np.arange(i0, L)[:, None] < np.arange(j0, j1)[None, :]] = -np.inf
        elif mask is not None:
            mb = _key_block(mask, j0, j1)  # i0 = 0 here: a mask and is_causal never come together
            if mb.dtype == np.bool_:
                s = np.where(mb, s, dtype.type(-np.inf))
            elif exp2:
                s = s + mb.astype(dtype, copy=False) / dtype.type(scale)  # the mask in raw-score units
            else:
                s = s + mb.astype(dtype, copy=False)
        m_old = m[..., i0:, :]
        m_new = np.maximum(m_old, s.max(axis=-1, keepdims=True))
        m_safe = np.where(np.isneginf(m_new), dtype.type(0), m_new)  # nothing seen yet: shift by 0
        if exp2:
            alpha = np.exp2((m_old - m_safe) * c)  # 2^(-inf) = 0 when there was nothing before
            np.multiply(s, c, out=s)
            np.subtract(s, m_safe * c, out=s)  # s·c - m·c: one multiply-add per score on a GPU
            np.exp2(s, out=s)
        else:
            alpha = np.exp(m_old - m_safe)  # rescales the old sums; exp(-inf) = 0 when there were none
            np.subtract(s, m_safe, out=s)
            np.exp(s, out=s)
        l[..., i0:, :] = alpha * l[..., i0:, :] + s.sum(axis=-1, keepdims=True)
        acc[..., i0:, :] = alpha * acc[..., i0:, :] + np.matmul(s, v[..., j0:j1, :])
        m[..., i0:, :] = m_new
        del s  # free this block before the next one is computed: one block alive at a time
    l[l == 0] = 1.0  # a fully masked row: acc is 0, and so is its output
    return acc / l


def _blockwise_torch(q, k, v, mask, scale, is_causal, block, batch, L, S, exp2=False):
    torch = torch_module()
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    # float16/bfloat16 in: the scores, the running statistics and the accumulator in float32, as
    # FlashAttention does (its q·kᵀ accumulates in float32, so a block of scores cannot overflow 65504)
    acc_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    # exp2: raw scores, the scale folded into the exponent; otherwise the scale enters here, before any max
    qs = q.to(acc_dtype) if exp2 else q.to(acc_dtype) * scale
    c = scale * LOG2E
    k, v = k.to(dtype), v.to(dtype)
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(acc_dtype)
    d_v = v.shape[-1]
    opts = dict(dtype=acc_dtype, device=q.device)
    m = torch.full((*batch, L, 1), float("-inf"), **opts)
    l = torch.zeros((*batch, L, 1), **opts)
    acc = torch.zeros((*batch, L, d_v), **opts)
    qs = qs.expand(*batch, L, qs.shape[-1])
    rows = torch.arange(L, device=q.device)
    for j0 in range(0, S, block):
        j1 = min(j0 + block, S)
        i0 = min(j0, L) if is_causal else 0
        if i0 >= L:
            break
        s = qs[..., i0:, :] @ k[..., j0:j1, :].to(acc_dtype).transpose(-2, -1)  # (..., L - i0, j1 - j0)
        if is_causal:
            cols = torch.arange(j0, j1, device=q.device)
            s = s.masked_fill(rows[i0:, None] < cols[None, :], float("-inf"))
        elif mask is not None:
            mb = _key_block(mask, j0, j1)  # i0 = 0 here: a mask and is_causal never come together
            if mb.dtype == torch.bool:
                s = s.masked_fill(~mb, float("-inf"))
            else:
                s = s + (mb / scale if exp2 else mb)  # exp2: the mask in raw-score units
        m_old = m[..., i0:, :]
        m_new = torch.maximum(m_old, s.amax(dim=-1, keepdim=True))
        # the shift is a constant that cancels in acc / l: no gradient through it
        m_safe = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new).detach()
        if exp2:
            alpha = torch.exp2((m_old - m_safe) * c)
            p = torch.exp2(s * c - m_safe * c)
        else:
            alpha = torch.exp(m_old - m_safe)
            p = torch.exp(s - m_safe)
        pv = (p.to(dtype) @ v[..., j0:j1, :]).to(acc_dtype)
        # out-of-place updates (autograd needs the old values); rows above i0 are unchanged
        l = torch.cat([l[..., :i0, :], alpha * l[..., i0:, :] + p.sum(dim=-1, keepdim=True)], dim=-2)
        acc = torch.cat([acc[..., :i0, :], alpha * acc[..., i0:, :] + pv], dim=-2)
        m = torch.cat([m[..., :i0, :], m_new], dim=-2).detach()
        del s, p
    return (acc / torch.where(l == 0, torch.ones_like(l), l)).to(dtype)
