"""What current models do instead of, or on top of, a fixed 1/√d_k.

Small, exact versions of the ideas the `caveats` chapter demonstrates:

- QK-normalisation comes in two families, and they treat 1/√d_k differently:

  - :func:`l2_normalize`, :func:`qk_norm_scores`: the cosine family (Henry et al. 2020): q and k are
    divided by their lengths and the cosine is multiplied by a learned gain, which **replaces**
    1/√d_k; the scores lie in [-gain, gain] whatever d_k and the input scale.
  - :func:`qk_layer_norm_scores`: LayerNorm (ViT-22B, Flax's ``normalize_qk``) or RMSNorm (e.g.
    Qwen3) on q and k. The norm does not decide the scale: each model passes its own (the `real-code`
    chapter's table). With unit gains each normalised vector has length √d_k, so q·k still adds d_k
    unit-size terms, and a model that keeps 1/√d_k keeps scores of the usual size.

- :func:`mup_scale`: μP's 1/d attention scale, c/d_k with c chosen to agree with 1/√d_k at a base width.
- :func:`length_scaled_softmax`: softmax(s·ln(n)·z), the log-n length scaling of Chiang & Cholak 2022
  and Scalable-Softmax (Nakanishi 2025).
- :func:`sigma_reparam`: σReparam, W·γ/σ_max(W) (Zhai et al. 2023), against attention entropy collapse.
- :func:`correlated_projections`: W_Q, W_K whose entries have correlation ρ, to break the independence
  assumption on purpose.

NumPy first; the functions marked so also take torch tensors (autograd kept, so a torch
``gain`` or norm weight can be an ``nn.Parameter``).  No torch import at module level.
"""
from __future__ import annotations

import math

import numpy as np

from ..infra._backend import check_same_family, is_torch, torch_module
from .attention import softmax
from ..infra.checks import generator, positive_int

__all__ = [
    "l2_normalize",
    "qk_norm_scores",
    "qk_layer_norm_scores",
    "mup_scale",
    "length_scaled_softmax",
    "sigma_reparam",
    "correlated_projections",
]


def l2_normalize(x, *, axis: int = -1, eps: float = 1e-12):
    """``x / max(‖x‖₂, eps)`` along ``axis``; the same convention as ``torch.nn.functional.normalize``.

    NumPy or torch (shape kept).  The `caveats` chapter uses it for QK-normalisation (cosine family).
    """
    if is_torch(x):
        torch = torch_module()
        n = torch.linalg.vector_norm(x, dim=axis, keepdim=True)
        return x / n.clamp_min(eps)
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    n = np.linalg.norm(x, axis=axis, keepdims=True)
    return x / np.maximum(n, eps)


def qk_norm_scores(q, k, gain, *, eps: float = 1e-12):
    """Cosine-family QK-normalised scores ``gain · q̂ k̂ᵀ``, q̂, k̂ the ℓ2-normalised rows (Henry et al. 2020).

    Shapes: q (..., L, d_k), k (..., S, d_k) → (..., L, S).  Each score is ``gain`` times a cosine
    similarity, so it lies in [-gain, gain] for any d_k and any size of q and k.  ``gain`` replaces
    1/√d_k (the authors' code learns it, starting from log2(L² − L) for a typical length L); it is a
    number, or (torch path) a tensor such as a learnable ``nn.Parameter``.
    Feed the result to a softmax, or pass q̂·gain and k̂ to attention with ``scale=1.0``.
    For the other family (LayerNorm or RMSNorm on q and k, 1/√d_k kept) see :func:`qk_layer_norm_scores`.
    NumPy or torch.  The `caveats` chapter.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"d_k differs: q has shape {tuple(q.shape)} and k has shape {tuple(k.shape)}")
    if not is_torch(gain) and not np.isfinite(float(gain)):
        raise ValueError(f"gain must be a finite number; got {gain!r}")
    qh, kh = l2_normalize(q, eps=eps), l2_normalize(k, eps=eps)
    return gain * (qh @ kh.swapaxes(-1, -2))  # (..., L, S)


def _norm_rows(x, rms: bool, eps: float):
    """LayerNorm (``rms=False``: subtract the mean, divide by the SD) or RMSNorm over the last axis, no gain."""
    if is_torch(x):
        torch = torch_module()
        if not rms:
            x = x - x.mean(dim=-1, keepdim=True)
        return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    if not rms:
        x = x - x.mean(axis=-1, keepdims=True)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def qk_layer_norm_scores(q, k, *, rms: bool = False, weight_q=None, weight_k=None, scale=None,
                         eps: float = 1e-6):
    """Scores ``scale · norm(q) norm(k)ᵀ`` with LayerNorm (or, ``rms=True``, RMSNorm) on each q and k row.

    The second family of QK-normalisation: ViT-22B applies LayerNorm to the queries and keys (Flax's
    ``MultiHeadDotProductAttention(normalize_qk=True)``: LayerNorm without bias on each head's q and k,
    then its usual division by √depth); language models such as Qwen3 apply RMSNorm per head, and timm's
    ``qk_norm`` the model's norm layer.  The norm does not decide the scale; each passes its own (Flax
    and Qwen3: 1/√d_k).  With unit gains each normalised vector has length √d_k, so
    ``norm(q)·norm(k) = d_k·cos`` still grows with d_k, and 1/√d_k brings it back to √d_k·cos.

    - Shapes: q (..., L, d_k), k (..., S, d_k) → (..., L, S).
    - ``weight_q``, ``weight_k``: the norms' learned per-component gains, shape (d_k,); ``None`` means
      ones, their value at initialisation.  No bias (Flax's ``use_bias=False``; RMSNorm has none).
    - ``scale``: ``None`` is 1/√d_k, as in the models above; ``1.0`` gives the unscaled variant.
    - ``eps`` is added to the variance (mean square) before the square root.

    NumPy or torch (all array arguments of one kind; autograd kept, so the weights can be
    ``nn.Parameter``).  Raises ``ValueError`` for disagreeing shapes or a bad ``scale``/``eps``,
    ``TypeError`` for NumPy and torch mixed.  The `caveats` chapter.
    """
    fam = check_same_family(q=q, k=k, weight_q=weight_q, weight_k=weight_k)
    if fam == "numpy":
        q, k = np.asarray(q), np.asarray(k)
        weight_q = None if weight_q is None else np.asarray(weight_q, dtype=float)
        weight_k = None if weight_k is None else np.asarray(weight_k, dtype=float)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"d_k differs: q has shape {tuple(q.shape)} and k has shape {tuple(k.shape)}")
    d_k = q.shape[-1]
    for name, w in (("weight_q", weight_q), ("weight_k", weight_k)):
        if w is not None and tuple(w.shape) != (d_k,):
            raise ValueError(f"{name} must have shape ({d_k},), one gain per component; got {tuple(w.shape)}")
    if scale is not None and not (isinstance(scale, (int, float, np.floating)) and math.isfinite(scale)
                                  and scale > 0):
        raise ValueError(f"scale must be None (1/√d_k) or a finite number > 0; got {scale!r}")
    if not (isinstance(eps, (int, float, np.floating)) and math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite number > 0; got {eps!r}")
    qh, kh = _norm_rows(q, rms, eps), _norm_rows(k, rms, eps)
    if weight_q is not None:
        qh = qh * weight_q
    if weight_k is not None:
        kh = kh * weight_k
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    return (qh @ kh.swapaxes(-1, -2)) * s  # (..., L, S)


def mup_scale(d_k: int, *, base_d_k: int = 64) -> float:
    """μP's attention scale ``c / d_k`` with ``c = √base_d_k``, so it equals 1/√d_k at ``d_k = base_d_k``.

    With the default base of 64 this is 8/d_k, the constant the microsoft/mup README suggests for
    matching 1/√d at d = 64 ("use 1/d instead of 1/sqrt(d) attention scaling").  Pass it as ``scale=``
    to :func:`lib.scaled_dot_product_attention`.  The `caveats` chapter.
    """
    d_k, base_d_k = positive_int("d_k", d_k), positive_int("base_d_k", base_d_k)
    return math.sqrt(base_d_k) / d_k


def length_scaled_softmax(z, *, s: float = 1.0, axis: int = -1):
    """``softmax(s · ln(n) · z)`` along ``axis``, with n the number of entries on that axis.

    The log-n length scaling of Chiang & Cholak (2022) and Scalable-Softmax (Nakanishi 2025), in which
    ``s`` is learned.  With it, a key that leads the others by a margin m keeps a weight of
    n^{sm}/(n^{sm} + n − 1) instead of e^m/(e^m + n − 1), which fades as n grows.  n = 1 gives 1.
    NumPy or torch.  The `caveats` chapter.
    """
    n = z.shape[axis]
    if n < 1:
        raise ValueError(f"length_scaled_softmax needs at least one entry along axis {axis}; got shape {tuple(z.shape)}")
    return softmax(z * (s * math.log(n)), axis=axis)


def sigma_reparam(w, gamma: float = 1.0):
    """σReparam (Zhai et al. 2023): ``W · gamma / σ_max(W)``, so the spectral norm becomes ``gamma``.

    ``w`` is a 2-D NumPy array; σ_max is computed exactly (largest singular value), where the authors'
    code takes one power-iteration step per forward pass.  There ``gamma`` is a learned parameter
    (initialised to the weight's first spectral norm); here it is a number you choose.  The `caveats` chapter.
    """
    w = np.asarray(w, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"sigma_reparam needs a 2-D weight matrix; got shape {w.shape}")
    s = np.linalg.norm(w, 2)
    if s == 0:
        raise ValueError("sigma_reparam: the weight matrix is all zeros (spectral norm 0)")
    return w * (gamma / s)


def correlated_projections(d_model: int, d_k: int, rho: float, *, seed=0):
    """Random W_Q, W_K of shape (d_model, d_k) whose matching entries have correlation ``rho``.

    Entries are N(0, 1/d_model), so for unit-variance inputs each query and key component has variance
    about 1; ``W_K = rho·W_Q + √(1 − rho²)·W_noise``.  With one input x, the pair (q_i, k_i) =
    ((xW_Q)_i, (xW_K)_i) then has correlation ``rho``: the self-score q·k has mean about rho·d_k.
    ``seed`` is an int or a ``np.random.Generator``.  The `caveats` chapter.
    """
    d_model, d_k = positive_int("d_model", d_model), positive_int("d_k", d_k)
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [-1, 1]; got {rho}")
    rng = generator(seed)
    std = 1.0 / math.sqrt(d_model)
    w_q = std * rng.standard_normal((d_model, d_k))
    noise = std * rng.standard_normal((d_model, d_k))
    w_k = rho * w_q + math.sqrt(1.0 - rho * rho) * noise
    return w_q, w_k
