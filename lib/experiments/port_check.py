"""Check a port of a model's attention against the recipe it was trained with (chapter `porting`).

A model's attention is more than ``softmax(q kᵀ / √d_k) v``: its checkpoint fixes a *recipe*, the
factors its scores were multiplied by, added to or capped with during training.  A port (a
re-implementation in another framework, a fused kernel call, a quantised runtime) must reproduce
each of them.  :class:`Recipe` names them, :func:`reference_attention` computes attention under a
recipe (NumPy, float64, written from the definitions), and :func:`check_port` runs a candidate
attention function on inputs built to expose each class of mistake and names the factor that is off.
What a recipe can say (each field is tested against PyTorch's SDPA with an explicit ``scale`` and
``attn_mask``, FlexAttention, or the model's own code transcribed in ``tests/test_port_check.py``):

- a scale that is a config value, not ``1/√d_k`` (Gemma 2's ``query_pre_attn_scalar``, Grok-1's
  ``attn_output_multiplier``, T5's 1);
- a factor ``m`` applied to q *and* k (DeepSeek-V3's YaRN ``mscale``; Hugging Face's Llama and Qwen 3
  multiply RoPE's cos and sin by it): ``m²`` in the logit;
- RMS or L2 normalisation of q and k, per head (Qwen 3, Gemma 3) or over the whole projection
  (OLMo 2, Hugging Face transformers ``models/olmo2/modeling_olmo2.py`` at 000c33f), with the
  checkpoint's learned weight if it has one (Gemma 3's ``1 + w`` is passed as the weight itself);
- a cap on the logits ``c·tanh(s/c)`` (Gemma 2, Grok-1), applied after the scale and before the mask;
- ALiBi, added after the scale (BLOOM, MPT) or inside the scaled sum, ``(q·k + bias)·scale``
  (Falcon-RW in Hugging Face transformers, ``models/falcon/modeling_falcon.py`` at 4427208);
- sinks: one extra logit per head in the softmax's denominator, in scaled units (gpt-oss,
  ``models/gpt_oss/modeling_gpt_oss.py`` at 00d4b3d);
- the causal mask with queries as the *last* positions (bottom-right, as with a KV cache), and a
  sliding window of ``W`` keys, the query's own included (transformers' ``kv_idx > q_idx - W``);
- grouped-query heads: ``q_per_kv`` query heads share each key/value head, query head ``i`` reading
  key head ``i // q_per_kv`` (transformers' ``repeat_kv``);
- the checkpoint's own head width and head count (``head_dim``, ``n_heads``), so that a kernel built
  for them is checked at them.

- a factor on q that depends on the query's position (Llama 4's temperature on its NoPE layers,
  ``log(floor((pos + 1) / 8192) + 1) · 0.1 + 1``, Hugging Face transformers
  ``models/llama4/modeling_llama4.py`` at 63210d0); :func:`check_port` exercises it with ``cache=True``.

Not expressible, so check such a port against the model's own code on real inputs: a window that
changes from layer to layer (write one recipe per kind of layer), chunked attention, relative-position
scores other than ALiBi, and anything applied after the softmax.

The probe inputs have a batch axis and a head axis (B, h, L, d) with B and h greater than one; the
layout cases share their inputs (common random numbers), so a finding that the output changes with
the batch or the heads is a fact about the candidate, not about the draw.  The same runner reads the
scale a function applies: :func:`lib.infer_scale` (the `real-code` chapter) is built on ``probe``, and
``measure_scale`` is the one-reading form of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Callable

import numpy as np

from ..infra.checks import positive_int
from ..infra.i18n import tr
from ..feedback.display import Shown

__all__ = ["Recipe", "PortReport", "reference_attention", "alibi_slopes", "check_port",
           "check_logit_factor"]

# ---------------------------------------------------------------------------
# The recipe and its reference
# ---------------------------------------------------------------------------

_DTYPES = ("float64", "float32", "float16", "bfloat16")
_NORMS = (None, "rms", "l2")
_NORM_AXES = ("head", "projection")
_LAYOUTS = ("BHLD", "BLHD")


def _weights(name, w):
    if w is None:
        return None
    a = np.asarray(w, dtype=float)
    if a.ndim != 1 or a.size == 0 or not np.isfinite(a).all():
        raise ValueError(f"Recipe.{name} must be None or a 1-D sequence of finite numbers; got shape {a.shape}")
    return tuple(float(x) for x in a)


@dataclass(frozen=True)
class Recipe:
    """What a checkpoint's attention multiplies, adds to and caps its scores with.

    ``scale``: the factor on q·k: ``None`` means ``1/√d_k`` of the head width; a number is a fixed
    config value (Gemma 2 27B: ``144 ** -0.5``); a function of d_k gives a rule (μP: ``lambda d: 1/d``).
    ``qk_factor``: a factor applied to q and to k each (YaRN's mscale): the logit gets its square.
    ``qk_norm``: ``None``, ``"rms"`` (RMSNorm) or ``"l2"`` (unit length), over ``qk_norm_axis``:
    ``"head"`` (each head's d_k values) or ``"projection"`` (all heads of a position together, as
    OLMo 2); ``q_norm_weight`` / ``k_norm_weight``: the learned weights (length ``head_dim``, or
    heads × ``head_dim`` for the projection; need ``head_dim``, and ``n_heads`` for the projection).
    ``softcap``: ``c`` in ``c·tanh(s/c)``, applied to the scaled scores before the mask (or ``None``).
    ``alibi``: add ``-slope_h·(i - j)`` with the standard slopes (:func:`alibi_slopes`), after the
    scale, or inside the scaled sum with ``bias_scaled=True`` (Falcon-RW).
    ``sinks``: ``None``, one number, or one per query head (needs ``n_heads``): an extra logit in the
    denominator of each softmax, in the units of the scaled scores (gpt-oss).
    ``causal``: mask keys after the query; queries are the *last* positions when there are fewer
    queries than keys. ``window``: a query sees ``window`` keys, itself included.
    ``q_per_kv``: query heads per key/value head (GQA; MQA when it equals the head count).
    ``q_position_factor``: a function of the queries' positions (an int array, 0 for the first position)
    giving a factor on each query (Llama 4's temperature), or ``None``.
    ``head_dim``, ``n_heads``: the checkpoint's head width and query head count; when given,
    :func:`check_port` uses them instead of its synthetic widths and head counts.
    ``dtypes``: the dtypes the model runs in; :func:`check_port` also runs the candidate in each
    (torch backend).
    """

    scale: float | Callable[[int], float] | None = None
    qk_factor: float = 1.0
    qk_norm: str | None = None
    qk_norm_axis: str = "head"
    q_norm_weight: tuple | None = None
    k_norm_weight: tuple | None = None
    softcap: float | None = None
    alibi: bool = False
    bias_scaled: bool = False
    sinks: float | tuple | None = None
    causal: bool = True
    window: int | None = None
    q_per_kv: int = 1
    q_position_factor: Callable[[np.ndarray], np.ndarray] | None = None
    head_dim: int | None = None
    n_heads: int | None = None
    dtypes: tuple = ("float32",)

    def __post_init__(self):
        s = self.scale
        if not (s is None or callable(s) or (isinstance(s, (int, float)) and not isinstance(s, bool)
                                              and math.isfinite(s) and s != 0)):
            raise ValueError(f"Recipe.scale must be None, a non-zero number or a function of d_k; got {s!r}")
        if not (isinstance(self.qk_factor, (int, float)) and self.qk_factor > 0):
            raise ValueError(f"Recipe.qk_factor must be a positive number; got {self.qk_factor!r}")
        if self.qk_norm not in _NORMS:
            raise ValueError(f"Recipe.qk_norm must be one of {_NORMS}; got {self.qk_norm!r}")
        if self.qk_norm_axis not in _NORM_AXES:
            raise ValueError(f"Recipe.qk_norm_axis must be one of {_NORM_AXES}; got {self.qk_norm_axis!r}")
        if self.softcap is not None and not (isinstance(self.softcap, (int, float)) and self.softcap > 0):
            raise ValueError(f"Recipe.softcap must be None or a positive number; got {self.softcap!r}")
        for name in ("alibi", "bias_scaled", "causal"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Recipe.{name} must be True or False")
        if self.bias_scaled and not self.alibi:
            raise ValueError("Recipe.bias_scaled says where the ALiBi bias enters; it needs alibi=True")
        if self.window is not None and not (isinstance(self.window, int) and self.window >= 1):
            raise ValueError(f"Recipe.window must be None or a positive int; got {self.window!r}")
        for name in ("head_dim", "n_heads"):
            val = getattr(self, name)
            if val is not None and not (isinstance(val, int) and not isinstance(val, bool) and val >= 1):
                raise ValueError(f"Recipe.{name} must be None or a positive int; got {val!r}")
        if self.q_position_factor is not None and not callable(self.q_position_factor):
            raise TypeError("Recipe.q_position_factor must be None or a function of the positions")
        if not (isinstance(self.q_per_kv, int) and self.q_per_kv >= 1):
            raise ValueError(f"Recipe.q_per_kv must be a positive int; got {self.q_per_kv!r}")
        if self.n_heads is not None and self.n_heads % self.q_per_kv:
            raise ValueError(f"Recipe.n_heads ({self.n_heads}) must be a multiple of q_per_kv ({self.q_per_kv})")
        for name in ("q_norm_weight", "k_norm_weight"):
            w = _weights(name, getattr(self, name))
            object.__setattr__(self, name, w)
            if w is None:
                continue
            if self.qk_norm is None:
                raise ValueError(f"Recipe.{name} is the weight of a q/k norm; set qk_norm too")
            if self.head_dim is None or (self.qk_norm_axis == "projection" and self.n_heads is None):
                raise ValueError(f"Recipe.{name} fixes the widths: give head_dim (and n_heads for the projection)")
            heads = 1 if self.qk_norm_axis == "head" else (
                self.n_heads if name == "q_norm_weight" else self.n_heads // self.q_per_kv)
            if len(w) != heads * self.head_dim:
                raise ValueError(f"Recipe.{name} has {len(w)} values; the {self.qk_norm_axis} norm needs "
                                 f"{heads * self.head_dim}")
        sk = self.sinks
        if sk is not None:
            if isinstance(sk, (int, float)) and not isinstance(sk, bool):
                if not math.isfinite(sk):
                    raise ValueError(f"Recipe.sinks must be finite; got {sk!r}")
            else:
                sk = _weights("sinks", sk)
                if self.n_heads is None or len(sk) != self.n_heads:
                    raise ValueError("Recipe.sinks per head needs n_heads and one value per query head; "
                                     f"got {len(sk)} values and n_heads = {self.n_heads}")
                object.__setattr__(self, "sinks", sk)
        dts = self.dtypes
        if isinstance(dts, str) or not all(d in _DTYPES for d in dts):
            raise ValueError(f"Recipe.dtypes must be a tuple of {_DTYPES}; got {dts!r}")
        object.__setattr__(self, "dtypes", tuple(dts))

    @classmethod
    def from_config(cls, config: dict) -> "Recipe":
        """A recipe from a dict; unknown keys raise ValueError (a typo must not pass silently)."""
        if not isinstance(config, dict):
            raise TypeError(f"Recipe.from_config needs a dict; got {type(config).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"unknown recipe field(s) {unknown}; a recipe has {sorted(known)}")
        return cls(**config)

    def scale_at(self, d_k: int) -> float:
        """The factor on q·k at head width ``d_k`` (before ``qk_factor``'s square)."""
        if self.scale is None:
            return 1.0 / math.sqrt(d_k)
        if callable(self.scale):
            return float(self.scale(d_k))
        return float(self.scale)

    def logit_factor(self, d_k: int) -> float:
        """Everything that multiplies q·k in the logit: the scale times ``qk_factor²``."""
        return self.scale_at(d_k) * self.qk_factor ** 2


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi's head slopes: ``2^(-8h/n)`` for h = 1..n when n is a power of two; otherwise the
    closest power of two below n, then every other slope of twice as many heads (BLOOM's rule)."""
    n_heads = positive_int("n_heads", n_heads)
    p = 2 ** int(math.floor(math.log2(n_heads)))
    base = 2.0 ** (-8.0 / p)
    slopes = [base ** (h + 1) for h in range(p)]
    if p < n_heads:
        extra = 2.0 ** (-4.0 / p)
        slopes += [extra ** (2 * h + 1) for h in range(n_heads - p)]
    return np.array(slopes)


# variants of the reference: the mistakes that are not a change of a recipe field
_VARIANTS = ("softcap_after_mask", "softcap_no_rescale", "scale_after_cap", "alibi_reversed",
             "alibi_one_slope", "causal_top_left", "gqa_tiled", "qk_norm_other_axis")


def _as_float_array(x, name):
    a = np.asarray(x, dtype=float)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has values that are not finite")
    return a


def _normalise(x, recipe, weight, other_axis=False):
    """RMS or L2 normalisation of q or k (..., h, L, d) over the recipe's axis (the other one with
    ``other_axis``: a port's mistake), times its weight."""
    per_head = (recipe.qk_norm_axis == "head") != other_axis
    axes = (-1,) if per_head else (-3, -1)
    if recipe.qk_norm == "rms":
        x = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + 1e-6)
    else:
        x = x / np.maximum(np.sqrt(np.sum(x * x, axis=axes, keepdims=True)), 1e-12)
    if weight is not None:
        w = np.asarray(weight)
        if recipe.qk_norm_axis == "projection":
            w = w.reshape(x.shape[-3], 1, x.shape[-1])
        x = x * w
    return x


def reference_attention(q, k, v, recipe: Recipe | dict | None = None, *, variant: str | None = None):
    """Attention under ``recipe``, in float64 NumPy, written from the definitions (see :class:`Recipe`).

    q (..., L, d_k), k (..., S, d_k), v (..., S, d_v); queries are the last L of the S positions (as
    with a cache). ALiBi, sinks per head, grouped heads and a norm over the projection need a head
    axis: q (..., h, L, d_k), k and v (..., h / q_per_kv, S, d). Returns (..., L, d_v).
    ``variant`` computes a known mistake instead (used by :func:`check_port` to name it).
    """
    recipe = _recipe(recipe)
    if variant is not None and variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS}; got {variant!r}")
    q, k, v = (_as_float_array(a, n) for a, n in ((q, "q"), (k, "k"), (v, "v")))
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"q, k, v need the same number of axes (at least 2); got shapes {q.shape}, {k.shape}, "
                         f"{v.shape}")
    g = recipe.q_per_kv
    heads_needed = recipe.alibi or isinstance(recipe.sinks, tuple) or g > 1 or (
        recipe.qk_norm is not None and recipe.qk_norm_axis == "projection")
    if heads_needed and q.ndim < 3:
        raise ValueError(f"this recipe (ALiBi, sinks per head, grouped heads or a projection norm) needs a "
                         f"head axis: q (..., h, L, d_k); got shape {q.shape}")
    kv_lead = k.shape[:-2]
    if g > 1:
        kv_lead = (*k.shape[:-3], k.shape[-3] * g)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] or q.shape[:-2] != kv_lead \
            or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"shapes do not fit: q {q.shape} (..., h, L, d_k), k {k.shape} (..., h/{g}, S, d_k), "
                         f"v {v.shape} (..., h/{g}, S, d_v)")
    L, S = q.shape[-2], k.shape[-2]
    if L > S:
        raise ValueError(f"more queries (L = {L}) than keys (S = {S}): queries are the last L positions")
    if recipe.n_heads is not None and q.shape[-3] != recipe.n_heads:
        raise ValueError(f"the recipe has n_heads = {recipe.n_heads}; q has {q.shape[-3]} heads")
    rows = max(1, (1 << 21) // S)  # long cases in blocks of query rows: memory stays O(rows · S)
    first = 0 if variant == "causal_top_left" else S - L
    out = [_reference(q[..., a:a + rows, :], k, v, recipe, variant, first + a) for a in range(0, L, rows)]
    return out[0] if len(out) == 1 else np.concatenate(out, axis=-2)


def _reference(q, k, v, recipe, variant, first):
    """:func:`reference_attention` for the queries at positions ``first``, ``first + 1``, ..."""
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    g = recipe.q_per_kv
    if recipe.qk_norm is not None:
        other = variant == "qk_norm_other_axis"
        q = _normalise(q, recipe, recipe.q_norm_weight, other)
        k = _normalise(k, recipe, recipe.k_norm_weight, other)
    if g > 1:  # query head i reads key/value head i // g (or i % h_kv: the mistake)
        if variant == "gqa_tiled":
            reps = [1] * k.ndim
            reps[-3] = g
            k, v = np.tile(k, reps), np.tile(v, reps)
        else:
            k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    if recipe.q_position_factor is not None:
        q = q * position_factors(recipe, np.arange(first, first + L))[:, None]
    m = recipe.qk_factor
    raw = (q * m) @ np.swapaxes(k * m, -1, -2)
    scale = recipe.scale_at(d)
    i = np.arange(first, first + L)[:, None]
    j = np.arange(S)[None, :]
    masked = np.zeros((L, S), dtype=bool)
    if recipe.causal:
        masked |= j > i
    if recipe.window is not None:
        masked |= j <= i - recipe.window
    bias = 0.0
    if recipe.alibi:
        h = q.shape[-3]
        slopes = alibi_slopes(h)
        if variant == "alibi_reversed":
            slopes = slopes[::-1]
        elif variant == "alibi_one_slope":
            slopes = np.full(h, slopes[0])
        bias = -slopes[:, None, None] * np.abs(i - j)[None]
    if recipe.bias_scaled:
        s = (raw + bias) * scale
    else:
        s = raw * scale
    c = recipe.softcap
    if c is not None and variant != "softcap_after_mask":
        if variant == "softcap_no_rescale":
            s = np.tanh(s / c)
        elif variant == "scale_after_cap":
            s = scale * c * np.tanh(raw / c)
        else:
            s = c * np.tanh(s / c)
    if not recipe.bias_scaled:
        s = s + bias
    if variant == "softcap_after_mask":  # the mask becomes a finite -c: masked keys get weight
        s = np.where(masked, -1e30, s)
        s = c * np.tanh(s / c)
    else:
        s = np.where(masked, -np.inf, s)
    if recipe.sinks is not None:
        sink = np.asarray(recipe.sinks, dtype=float)
        sink = sink.reshape(-1, 1, 1) if sink.ndim else sink
        sink = np.broadcast_to(sink, (*s.shape[:-1], 1))
        s = np.concatenate([s, sink], axis=-1)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    if recipe.sinks is not None:
        w = w[..., :-1]
    return w @ v


def position_factors(recipe, positions):
    """``recipe.q_position_factor`` at ``positions``, checked: one finite number per position."""
    f = np.asarray(recipe.q_position_factor(np.asarray(positions)), dtype=float)
    f = np.broadcast_to(f, np.shape(positions)) if f.ndim == 0 else f
    if f.shape != np.shape(positions) or not np.isfinite(f).all():
        raise ValueError(f"Recipe.q_position_factor must return one finite number per position; got shape {f.shape}")
    return f


def _first_change(recipe, horizon=1 << 17):
    """The first position whose factor differs from position 0's (None: none up to ``horizon``)."""
    f = position_factors(recipe, np.arange(horizon))
    moved = np.nonzero(np.abs(f - f[0]) > 1e-9 * max(1.0, abs(f[0])))[0]
    return int(moved[0]) if moved.size else None


def _recipe(recipe):
    if recipe is None:
        return Recipe()
    if isinstance(recipe, Recipe):
        return recipe
    if isinstance(recipe, dict):
        return Recipe.from_config(recipe)
    raise TypeError(f"recipe must be a Recipe or a dict; got {type(recipe).__name__}")


# ---------------------------------------------------------------------------
# Running a candidate (shared with lib.infer_scale)
# ---------------------------------------------------------------------------

def _torch_dtype(name):
    import torch  # noqa: PLC0415 - only for torch functions

    return getattr(torch, name)


def _swap(a, layout):
    """(B, h, L, d) <-> (B, L, h, d) for ``layout="BLHD"``; unchanged for "BHLD" or fewer than 3 axes."""
    if layout == "BLHD" and a.ndim >= 3:
        return np.swapaxes(a, -3, -2)
    return a


def call(attn, arrays, backend, dtype="float64", layout="BHLD", with_dtype=False):
    """``attn(q, k, v)`` on NumPy arrays (given as (..., h, L, d)), as NumPy (``backend="numpy"``) or
    torch tensors of ``dtype``, in ``layout`` ("BLHD": (..., L, h, d), as flash-attn takes them);
    the output (or the first element of a returned tuple) as a float64 NumPy array in (..., h, L, d),
    and with ``with_dtype`` also the name of the output's dtype."""
    arrays = [np.ascontiguousarray(_swap(a, layout)) for a in arrays]
    if backend == "torch":
        import torch  # noqa: PLC0415

        out = attn(*(torch.from_numpy(a).to(_torch_dtype(dtype)) for a in arrays))
        if isinstance(out, tuple):
            out = out[0]
        if isinstance(out, torch.Tensor):
            out_dtype = str(out.dtype).replace("torch.", "")
            out = out.detach().cpu().double().numpy()
        else:
            out_dtype = str(np.asarray(out).dtype)
    else:
        out = attn(*(np.asarray(a, dtype=dtype) for a in arrays))
        if isinstance(out, tuple):
            out = out[0]
        out_dtype = str(np.asarray(out).dtype)
    out = _swap(np.asarray(out, dtype=float), layout)
    return (out, out_dtype) if with_dtype else out


def check_backend(backend):
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch'; got {backend!r}")


def check_layout(layout):
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}; got {layout!r}")


def _probe_arrays(d_k, d_v, S, x, batch_dims):
    """The scale probe's q, k, v: every query x·e₁, key 0 = e₁, other keys 0; value 0 = (1, 1, 0...),
    other values (0, 1, 0...): output component 0 is the weight of key 0, component 1 the weights' sum."""
    q = np.zeros((S, d_k))
    q[:, 0] = x
    k = np.zeros((S, d_k))
    k[0, 0] = 1.0
    v = np.zeros((S, d_v))
    v[0, 0] = 1.0
    v[:, 1] = 1.0
    shape = tuple(batch_dims)
    return tuple(np.broadcast_to(a, (*shape, *a.shape)).copy() for a in (q, k, v))


def probe(attn, d_k, d_v, S, x, batch_dims, backend, dtype="float64", layout="BHLD"):
    """One reading of the probe: (log-odds of key 0 against another key, sum of the weights, x used,
    output dtype) for the last query of the first (batch, head) slice, and the same log-odds of every
    slice (an array).

    For a softmax of ``τ·q·k`` the log-odds are ``τ·x``. If the softmax saturates (key 0 takes
    everything, or nothing) the raw score x is divided by 32 and the probe runs again.
    """
    for _ in range(4):
        arrays = _probe_arrays(d_k, d_v, S, x, batch_dims)
        out, out_dtype = call(attn, arrays, backend, dtype=dtype, layout=layout, with_dtype=True)
        want = (*batch_dims, S, d_v)
        if out.shape != want:
            raise ValueError(tr("The output has shape {got}; for q {q}, k {k}, v {v} it should be {want}",
                                got=tuple(out.shape), q=arrays[0].shape, k=arrays[1].shape,
                                v=arrays[2].shape, want=want))
        rows = out.reshape(-1, S, d_v)[:, -1]  # the last query sees every key, also under a causal mask
        total = rows[:, 1]
        if not np.isfinite(rows[:, :2]).all() or (total == 0).any():
            raise ValueError(tr("The output is not finite or its weights sum to 0"))
        w0 = rows[:, 0] / total  # the softmax weight of key 0, whatever multiplies the weights afterwards
        if ((1e-9 < w0) & (w0 < 1 - 1e-9)).all() or x < 1e-6:
            break
        x = x / 32  # saturated: a large scale; probe with a smaller raw score
    w0 = np.clip(w0, 1e-300, 1 - 1e-16)
    odds = np.log(w0 * (S - 1) / (1 - w0))
    return float(odds[0]), float(total[0]), x, out_dtype, odds


def measure_scale(attn, d_k, d_v, S, x, batch_dims, backend, dtype="float64", layout="BHLD"):
    """(scale inside the softmax, sum of the weights) that ``attn`` applies, read off the probe.

    For a softmax of scaled scores the last query's weight of key 0 is ``w₀ = e^{τx}/(e^{τx} + S - 1)``,
    so ``τ = ln(w₀ (S - 1)/(1 - w₀))/x``. Every leading (batch, head) slice is read; if they differ,
    ``ValueError`` says so (a scale or bias that depends on the head, or slices mixed up).
    """
    odds, total, x, _, every = probe(attn, d_k, d_v, S, x, batch_dims, backend, dtype, layout)
    if every.size > 1 and np.ptp(every) > 1e-6 * max(1.0, float(np.max(np.abs(every)))):
        raise ValueError(tr("the (batch, head) slices read different scales ({lo:.4g} to {hi:.4g}): the scale "
                            "or a bias depends on the head, or the slices are mixed",
                            lo=float(every.min()) / x, hi=float(every.max()) / x))
    return odds / x, total


#: Leading (batch, heads) layouts the probes use: a base layout, then more heads, then a larger batch.
LAYOUTS = {"base": (2, 3), "more heads": (2, 5), "larger batch": (4, 3)}


def accepts_layout(attn, backend, batch_dims=LAYOUTS["base"], layout="BHLD") -> bool:
    """Whether ``attn`` runs on (B, h, L, d) inputs (in ``layout``) and returns them in the same layout."""
    try:
        arrays = _probe_arrays(8, 3, 4, 1.0, batch_dims)
        out = call(attn, arrays, backend, layout=layout)
    except Exception:  # noqa: BLE001 - a function written for 2-D inputs fails here
        return False
    return out.shape == (*batch_dims, 4, 3)


# ---------------------------------------------------------------------------
# The port check
# ---------------------------------------------------------------------------

#: Tolerance of the output (max abs error; outputs are O(1)) per dtype the candidate runs in. float64
#: inputs get float32's: a port may compute its scores in float32 (Grok-1 and BLOOM do), and every
#: mistake the check names moves the output by far more (the `porting` chapter measures by how much).
ATOL = {"float64": 2e-4, "float32": 2e-4, "float16": 2e-2, "bfloat16": 8e-2}

#: The synthetic shapes of the cases: head width (and a wider one), key/value heads (one, more),
#: batch (larger), length (longer), and the cache case's queries and keys.
BASE_D, WIDE_D, BASE_H, MORE_H, BASE_B, BIG_B, BASE_L, LONG_L = 16, 64, 3, 5, 2, 4, 12, 40
CACHE_L, CACHE_S = 5, 20
#: The longest window the check runs past: query heads × length² of that case stay below this.
MAX_WINDOW_CELLS = 1 << 26


def _draw(recipe, B, hk, L, S, d, kind, rng):
    """q (B, hk·q_per_kv, L, d), k and v (B, hk, S, d) for one case: Gaussian, scaled so that the
    recipe's logits are O(2) ("plain"), or with a shared direction so that every logit sits near the cap
    (or near 20 without a cap) with an O(1) spread ("large"), or far below zero ("negative")."""
    g = recipe.q_per_kv
    q = rng.standard_normal((B, hk * g, L, d))
    k = rng.standard_normal((B, hk, S, d))
    v = rng.standard_normal((B, hk, S, d))
    f = abs(recipe.logit_factor(d))
    normed = recipe.qk_norm is not None
    if kind == "plain":
        if not normed:  # logit std = f · σ² · √d  → 2
            sigma2 = 2.0 / (f * math.sqrt(d))
            q, k = q * math.sqrt(sigma2), k * math.sqrt(sigma2)
        return q, k, v
    target = recipe.softcap if recipe.softcap is not None else 20.0
    if kind == "negative":  # every logit far below 0: where a cap applied after the mask leaks
        target = -3.0 * target
    u = rng.standard_normal((B, hk, 1, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    uq = np.repeat(u, g, axis=1)
    if normed:  # after the norm |q| = |k| = unit; put most of each on u
        q = (-0.9 if kind == "negative" else 0.9) * uq + 0.3 * q / math.sqrt(d)
        k = 0.9 * u + 0.3 * k / math.sqrt(d)
        return q * 3.0, k * 3.0, v  # the norm removes the 3; a port without it sees larger logits
    mu = math.sqrt(abs(target) / f)  # f · μ² = |target|: the shared part of every logit
    sign = -1.0 if target < 0 else 1.0
    return sign * mu * uq + 0.5 * q, mu * u + 0.5 * k, v


def _cases(recipe, seed, cache):
    """The float cases: name -> (q, k, v). The layout cases ("one head", "more heads", "larger batch")
    are cut from or tiled out of "base" (common random numbers), so their outputs can be compared slice
    by slice."""
    rng = np.random.default_rng(seed)
    g = recipe.q_per_kv
    d = recipe.head_dim or BASE_D
    hk = recipe.n_heads // g if recipe.n_heads else BASE_H
    cases = {"base": _draw(recipe, BASE_B, hk, BASE_L, BASE_L, d, "plain", rng)}
    q, k, v = cases["base"]
    if recipe.n_heads is None:
        cases["one head"] = (q[:1, :g], k[:1, :1], v[:1, :1])
        extra = MORE_H - hk
        cases["more heads"] = (np.concatenate([q, q[:, :extra * g]], 1), np.concatenate([k, k[:, :extra]], 1),
                               np.concatenate([v, v[:, :extra]], 1))
    cases["larger batch"] = tuple(np.concatenate([a, a], 0) for a in (q, k, v))
    if recipe.head_dim is None:
        cases["wide heads"] = _draw(recipe, BASE_B, hk, BASE_L, BASE_L, WIDE_D, "plain", rng)
    cases["long"] = _draw(recipe, BASE_B, hk, LONG_L, LONG_L, d, "plain", rng)
    cases["large logits"] = _draw(recipe, BASE_B, hk, BASE_L, BASE_L, d, "large", rng)
    cases["negative logits"] = _draw(recipe, BASE_B, hk, BASE_L, BASE_L, d, "negative", rng)
    w = recipe.window
    hw = hk if recipe.n_heads else 1  # one key/value head unless the recipe fixes the heads
    if w is not None and w + 8 > LONG_L and hw * g * (w + 8) ** 2 <= MAX_WINDOW_CELLS:
        cases["beyond the window"] = _draw(recipe, 1, hw, w + 8, w + 8, d, "plain", rng)
    if cache:
        cases["cache"] = _draw(recipe, BASE_B, hk, CACHE_L, CACHE_S, d, "plain", rng)
        p = _first_change(recipe) if recipe.q_position_factor is not None else None
        if p is not None and p + 8 > LONG_L:   # queries past the position where the factor changes
            cases["late positions"] = _draw(recipe, 1, hw, CACHE_L, p + 8, d, "plain", rng)
        if w is not None and w + 8 > CACHE_S:
            cases["cache beyond the window"] = _draw(recipe, 1, hw, CACHE_L, w + 8, d, "plain", rng)
    return cases


#: The cases too long to recompute for every candidate mistake (the diagnosis uses them last).
_LONG_CASES = ("beyond the window", "cache beyond the window", "late positions")


def _mutations(recipe):
    """Single mistakes a port makes, for this recipe: (name, change of the recipe, variant or None)."""
    r = recipe
    out = []
    if r.scale is not None:
        out.append(("default_scale", lambda x: replace(x, scale=None), None))
    out.append(("no_scale", lambda x: replace(x, scale=1.0), None))
    out.append(("scale_twice", lambda x: replace(x, scale=lambda d, s=x.scale_at: s(d) ** 2), None))
    if r.qk_factor != 1.0:
        out.append(("qk_factor_once", lambda x: replace(x, qk_factor=math.sqrt(x.qk_factor)), None))
        out.append(("qk_factor_missing", lambda x: replace(x, qk_factor=1.0), None))
    if r.qk_norm is not None:
        out.append(("qk_norm_missing", lambda x: replace(x, qk_norm=None, q_norm_weight=None,
                                                         k_norm_weight=None), None))
        if r.scale is None:
            out.append(("qk_norm_scale_dropped", lambda x: replace(x, scale=1.0), None))
        out.append(("qk_norm_per_head" if r.qk_norm_axis == "projection" else "qk_norm_projection",
                    lambda x: x, "qk_norm_other_axis"))
        if r.q_norm_weight is not None or r.k_norm_weight is not None:
            out.append(("qk_norm_weight_missing", lambda x: replace(x, q_norm_weight=None, k_norm_weight=None),
                        None))
    if r.softcap is not None:
        out.append(("softcap_missing", lambda x: replace(x, softcap=None), None))
        for var in ("softcap_after_mask", "softcap_no_rescale", "scale_after_cap"):
            out.append((var, lambda x: x, var))
    if r.alibi:
        out.append(("alibi_missing", lambda x: replace(x, alibi=False, bias_scaled=False), None))
        flip = "alibi_not_scaled" if r.bias_scaled else "alibi_scaled"
        out.append((flip, lambda x: replace(x, bias_scaled=not x.bias_scaled), None))
        for var in ("alibi_reversed", "alibi_one_slope"):
            out.append((var, lambda x: x, var))
    if r.sinks is not None:
        out.append(("sink_missing", lambda x: replace(x, sinks=None), None))
        # a sink added to the denominator twice is a sink larger by ln 2; a natural-log sink
        # exponentiated in base 2 (or the reverse) is a sink multiplied by ln 2 (or by log2 e)
        out.append(("sink_twice", lambda x: replace(x, sinks=_sinks_map(x.sinks, lambda s: s + math.log(2))), None))
        out.append(("sink_units", lambda x: replace(x, sinks=_sinks_map(x.sinks, lambda s: s * math.log(2))), None))
        out.append(("sink_units", lambda x: replace(x, sinks=_sinks_map(x.sinks, lambda s: s / math.log(2))), None))
    if r.q_position_factor is not None:
        out.append(("position_factor_missing", lambda x: replace(x, q_position_factor=None), None))
    if r.q_per_kv > 1:
        out.append(("gqa_mapping", lambda x: x, "gqa_tiled"))
    if r.causal:
        out.append(("mask_missing", lambda x: replace(x, causal=False, window=None), None))
        out.append(("causal_top_left", lambda x: x, "causal_top_left"))
    if r.window is not None:
        out.append(("window_missing", lambda x: replace(x, window=None), None))
        out.append(("window_off_by_one", lambda x: replace(x, window=x.window + 1), None))
        if r.window > 1:
            out.append(("window_off_by_one", lambda x: replace(x, window=x.window - 1), None))
    return out


def _sinks_map(sinks, f):
    """``f`` applied to one sink or to each sink of a tuple."""
    return tuple(f(s) for s in sinks) if isinstance(sinks, tuple) else f(sinks)


_SAME_SCALE = {"default_scale", "no_scale", "scale_twice", "qk_norm_scale_dropped"}
_SAME_SINK = {"sink_missing", "sink_twice", "sink_units"}
_SAME_CAP = {"softcap_missing", "softcap_after_mask", "softcap_no_rescale", "scale_after_cap"}


def _combinations(recipe):
    """The single mistakes, then every pair of them (at most one of a pair a variant of the reference):
    (names, recipe, variant)."""
    singles = _mutations(recipe)
    yield from (((n,), f(recipe), v) for n, f, v in singles)
    for i, (n1, f1, v1) in enumerate(singles):
        for n2, f2, v2 in singles[i + 1:]:
            if v1 is not None and v2 is not None:
                continue
            if {n1, n2} <= _SAME_SCALE or {n1, n2} <= _SAME_CAP or {n1, n2} <= _SAME_SINK or n1 == n2:
                continue  # two changes of the same factor are one change
            try:
                both = f2(f1(recipe))
            except (ValueError, TypeError):  # cannot go together (a window change after removing the mask)
                continue
            yield (n1, n2), both, v1 or v2


def _text(code, **f):
    """The sentence naming mistake ``code`` (in the book's language)."""
    texts = {
        "default_scale": lambda: tr("the scale is the default 1/√d_k, not the recipe's {scale:.4g} (at d_k = {d})", **f),
        "no_scale": lambda: tr("no scale: q·k reaches the softmax unscaled (the recipe multiplies it by {scale:.4g} at d_k = {d})", **f),
        "scale_twice": lambda: tr("the scale is applied twice (once to q, again by the kernel)", **f),
        "qk_factor_once": lambda: tr("the factor on q and k is applied once (m), not to both (m² in the logit)", **f),
        "qk_factor_missing": lambda: tr("the factor on q and k (m² = {m2:.4g} in the logit) is missing", **f),
        "qk_norm_missing": lambda: tr("q and k are not normalised", **f),
        "qk_norm_scale_dropped": lambda: tr("the 1/√d_k after the q/k norm is dropped", **f),
        "qk_norm_per_head": lambda: tr("q and k are normalised per head; the recipe normalises the whole projection", **f),
        "qk_norm_projection": lambda: tr("q and k are normalised over the whole projection; the recipe normalises each head", **f),
        "qk_norm_weight_missing": lambda: tr("the learned weight of the q/k norm is missing", **f),
        "softcap_missing": lambda: tr("the logit cap c·tanh(s/c) (c = {cap:g}) is missing", **f),
        "softcap_after_mask": lambda: tr("the cap is applied after the mask: tanh turns -inf into -c, so masked keys get weight "
                                          "where every visible logit is far below zero", **f),
        "softcap_no_rescale": lambda: tr("the cap computes tanh(s/c) without the final multiplication by c (c = {cap:g})", **f),
        "scale_after_cap": lambda: tr("the cap acts on the raw q·k and the scale comes after it; the recipe caps the scaled scores", **f),
        "softcap_value": lambda: tr("the cap value is {got:.4g}, not the recipe's {cap:g}", **f),
        "alibi_missing": lambda: tr("the ALiBi bias is missing", **f),
        "alibi_scaled": lambda: tr("the ALiBi bias is multiplied by the scale; the recipe adds it after the scale", **f),
        "alibi_not_scaled": lambda: tr("the ALiBi bias is added after the scale; the recipe puts it inside the scaled sum", **f),
        "alibi_reversed": lambda: tr("the ALiBi slopes are in the reverse head order", **f),
        "alibi_one_slope": lambda: tr("every head uses the first ALiBi slope", **f),
        "sink_missing": lambda: tr("the sink logit is missing from the softmax's denominator", **f),
        "sink_twice": lambda: tr("the sink is counted twice in the softmax's denominator (a sink counted n times acts "
                                 "as one larger by ln n)", **f),
        "sink_units": lambda: tr("the sink is in the wrong units: a natural-log logit exponentiated in base 2, or "
                                 "a base-2 one in base e (off by a factor ln 2)", **f),
        "position_factor_missing": lambda: tr("the factor that depends on the query's position is missing", **f),
        "gqa_mapping": lambda: tr("query heads read the wrong key/value head: head i uses i mod (key heads), "
                                  "not i // {g} (repeat instead of repeat_interleave)", **f),
        "mask_missing": lambda: tr("the causal mask is missing: queries see later keys", **f),
        "causal_top_left": lambda: tr("with fewer queries than keys the causal mask is aligned top-left (is_causal); "
                                      "the queries are the last positions (bottom-right)", **f),
        "window_missing": lambda: tr("the sliding window is missing: queries see keys beyond it", **f),
        "window_off_by_one": lambda: tr("the sliding window is off by one: the recipe's window of {w} keys includes the query itself", **f),
        "heads_or_batch": lambda: tr("on the same inputs the output changes with the number of heads or the batch size: an axis read "
                                     "from the wrong place (such as x.size(1) of a (B, h, L, d) tensor), or slices mixed up", **f),
        "scale_factor": lambda: tr("the scores are multiplied by {c:.4g} times the recipe's factor", **f),
        "width_rule": lambda: tr("the factor on the scores changes with the head width unlike the recipe's ({c:.4g} times the recipe's at d_k = {d}, {cw:.4g} times at d_k = {dw})", **f),
        "sequence_length": lambda: tr("the factor on the scores changes with the sequence length", **f),
        "not_finite": lambda: tr("the output is not finite in {dtype}", **f),
        "shape": lambda: tr("the output has the wrong shape", **f),
        "error": lambda: tr("the function failed", **f),
        "unknown": lambda: tr("no single factor or pair of the recipe explains the difference", **f),
    }
    return texts[code]()


@dataclass(frozen=True, repr=False)
class PortReport(Shown):
    """What :func:`check_port` found.

    ``ok``: every case within tolerance. ``mistake``: ``None`` or a code naming the factor that is off
    (``"default_scale"``, ``"no_scale"``, ``"scale_twice"``, ``"qk_factor_once"``, ``"qk_factor_missing"``,
    ``"qk_norm_missing"``, ``"qk_norm_scale_dropped"``, ``"qk_norm_per_head"``, ``"qk_norm_projection"``,
    ``"qk_norm_weight_missing"``, ``"softcap_missing"``, ``"softcap_after_mask"``, ``"softcap_no_rescale"``,
    ``"scale_after_cap"``, ``"softcap_value"``, ``"alibi_missing"``, ``"alibi_scaled"``,
    ``"alibi_not_scaled"``, ``"alibi_reversed"``, ``"alibi_one_slope"``, ``"sink_missing"``, ``"sink_twice"``,
    ``"sink_units"``,
    ``"position_factor_missing"``,
    ``"gqa_mapping"``, ``"mask_missing"``, ``"causal_top_left"``, ``"window_missing"``,
    ``"window_off_by_one"``, ``"heads_or_batch"``, ``"width_rule"``, ``"sequence_length"``,
    ``"scale_factor"`` (with ``factor``), ``"not_finite"``, ``"shape"``, ``"error"`` or ``"unknown"``);
    two mistakes at once show as their codes joined by ``"+"`` (``"default_scale+softcap_missing"``).
    ``errors``: case -> max abs error of the output against the reference; ``max_error``: the largest;
    ``failed``: the cases over tolerance; ``factor``: for ``"scale_factor"``, the measured ratio of the
    candidate's logit factor to the recipe's (for ``"softcap_value"``, the measured cap); ``untested``:
    what this run could not exercise (a window too long, fewer queries than keys without ``cache``).
    """

    ok: bool
    message: str
    mistake: str | None
    max_error: float
    errors: dict = field(default_factory=dict, compare=False)
    failed: tuple = ()
    factor: float = float("nan")
    untested: tuple = ()

    def _label(self):
        return tr("Port matches the recipe.") if self.ok else tr("Port differs from the recipe.")


def _max_err(a, b):
    if a.shape != b.shape:
        return float("inf")
    with np.errstate(invalid="ignore"):
        e = np.abs(a - b)
    return float(np.nanmax(np.where(np.isfinite(e), e, np.inf))) if e.size else 0.0


def _golden(err, lo, hi, n=25):
    """The x in [lo, hi] minimising ``err`` (a grid of n, then golden section): (x, err(x))."""
    grid = np.linspace(lo, hi, n)
    vals = [err(x) for x in grid]
    i = int(np.argmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(30):
        c1, c2 = b - g * (b - a), a + g * (b - a)
        if err(c1) < err(c2):
            b = c2
        else:
            a = c1
    x = (a + b) / 2
    return x, err(x)


def _fit_factor(outputs, inputs, recipe, names):
    """The c for which the recipe with its logit factor × c reproduces the candidate best on the cases
    ``names`` (ln c in [-6, 6]); (c, its max error)."""
    def err(lc):
        c = math.exp(lc)
        rec = replace(recipe, scale=lambda d, s=recipe.scale_at: s(d) * c)
        return max(_max_err(outputs[n], reference_attention(*inputs[n], rec)) for n in names)

    lc, e = _golden(err, -6.0, 6.0)
    return math.exp(lc), e


def _fit_cap(outputs, inputs, recipe, names):
    """The cap c' (within e^±3 of the recipe's) that reproduces the candidate best: (c', max error)."""
    def err(lc):
        rec = replace(recipe, softcap=math.exp(lc))
        return max(_max_err(outputs[n], reference_attention(*inputs[n], rec)) for n in names)

    lc0 = math.log(recipe.softcap)
    lc, e = _golden(err, lc0 - 3.0, lc0 + 3.0)
    return math.exp(lc), e


def _layout_differs(outputs, recipe, tol):
    """Whether the candidate's output on the same inputs changes with the heads or the batch: the
    layout cases are cut from or tiled out of "base", so their outputs must agree slice by slice
    (ALiBi's slopes depend on the head count, so then only the batch is compared)."""
    base = outputs["base"]
    pairs = [(outputs["larger batch"][:BASE_B], base), (outputs["larger batch"][BASE_B:], base)]
    if "one head" in outputs and not recipe.alibi:
        g = recipe.q_per_kv
        pairs += [(outputs["one head"], base[:1, :g]), (outputs["more heads"][:, :base.shape[1]], base)]
    return any(_max_err(a, b) > 10 * tol for a, b in pairs)


def _diagnose(outputs, inputs, recipe, tol, failed):
    """(code, text, factor) for a candidate that differs from ``recipe`` in float precision."""
    d0 = recipe.head_dim or BASE_D
    fields_ = dict(scale=recipe.logit_factor(d0), d=d0, m2=recipe.qk_factor ** 2, cap=recipe.softcap or 0,
                   g=recipe.q_per_kv, w=recipe.window or 0)
    short = [n for n in outputs if n not in _LONG_CASES]
    names = short if any(n in short for n in failed) else [n for n in failed]
    refs = {n: reference_attention(*inputs[n], recipe) for n in names}
    best, best_err, singles_done = None, float("inf"), False
    for combo, rec, var in _combinations(recipe):
        if len(combo) == 2 and not singles_done:
            if best is not None and best_err <= 10 * tol:
                break  # a single mistake explains it: do not look for pairs
            singles_done = True
        if names != short and not ({"window_missing", "window_off_by_one", "position_factor_missing"} & set(combo)):
            continue  # only the long cases fail: only the window or a position factor can explain it
        mine = {n: reference_attention(*inputs[n], rec, variant=var) for n in names}
        if max(_max_err(mine[n], refs[n]) for n in names) <= 10 * tol:
            continue  # this change does not change these cases: it cannot be told apart
        e = max(_max_err(outputs[n], mine[n]) for n in names)
        if e < best_err:
            best, best_err = combo, e
    if best is not None and best_err <= 10 * tol:
        text = _text(best[0], **fields_)
        if len(best) == 2:
            text = tr("{a}; and {b}", a=text, b=_text(best[1], **fields_))
        return "+".join(best), text, float("nan")
    if names != short:
        return "unknown", _text("unknown"), float("nan")
    if _layout_differs(outputs, recipe, tol):  # no named mistake, and the same inputs give another output
        return "heads_or_batch", _text("heads_or_batch"), float("nan")
    if recipe.softcap is not None:
        cap, e = _fit_cap(outputs, inputs, recipe, short)
        if e <= 10 * tol and abs(cap / recipe.softcap - 1) > 1e-2:
            return "softcap_value", _text("softcap_value", got=cap, **fields_), cap
    # one factor on the logits, case by case: does it change with the width or the length?
    fits = {n: _fit_factor(outputs, inputs, recipe, [n]) for n in ("base", "wide heads", "long") if n in outputs}
    if all(e <= 10 * tol for _, e in fits.values()):
        c0 = fits["base"][0]
        if "wide heads" in fits and abs(fits["wide heads"][0] / c0 - 1) > 1e-3:
            return "width_rule", _text("width_rule", c=c0, cw=fits["wide heads"][0], d=d0, dw=WIDE_D), c0
        if abs(fits["long"][0] / c0 - 1) > 1e-3:
            return "sequence_length", _text("sequence_length"), c0
        c, e = _fit_factor(outputs, inputs, recipe, short)
        if e <= 10 * tol:
            return "scale_factor", _text("scale_factor", c=c), c
    return "unknown", _text("unknown"), float("nan")


def check_port(candidate: Callable, recipe: Recipe | dict | None = None, *, backend: str = "numpy",
               seed: int = 0, atol: float | None = None, cache: bool = False,
               layout: str = "BHLD") -> PortReport:
    """Compare ``candidate(q, k, v)`` with :func:`reference_attention` under ``recipe`` and name the
    factor that is off.

    The candidate gets (B, h, L, d) arrays (``layout="BLHD"``: (B, L, h, d)), NumPy float64 or torch
    tensors with ``backend="torch"``; k and v have h / ``recipe.q_per_kv`` heads. It returns the output
    in the same layout, or a tuple whose first element is that. The cases vary the batch and the heads
    on common inputs, the head width (unless the recipe fixes ``head_dim``) and the length, put logits
    near the cap and far below zero, run past the recipe's window, and with ``cache=True`` give fewer
    queries than keys (decoding with a KV cache: the queries are the last positions). With
    ``backend="torch"`` the candidate also runs in each of ``recipe.dtypes`` (inputs rounded to the
    dtype first, tolerance ``ATOL[dtype]``). When it differs, the report names the mistake (one or two
    of ``_mutations``) the candidate matches, or measures the factor its logits are off by, or says
    that nothing named fits and which cases differ. Never raises because of what the candidate does.
    """
    if not callable(candidate):
        raise TypeError(f"check_port needs a function candidate(q, k, v); got {type(candidate).__name__}")
    recipe = _recipe(recipe)
    check_backend(backend)
    check_layout(layout)
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False; got {cache!r}")
    if recipe.scale is not None and callable(recipe.scale):
        for d in (16, 64):
            val = float(recipe.scale(d))
            if not (math.isfinite(val) and val != 0):
                raise ValueError(f"recipe.scale(d_k) must be a finite non-zero number; got {val!r} at d_k = {d}")
    if atol is not None and not (isinstance(atol, (int, float)) and 0 < atol < 1):
        raise ValueError(f"atol must be a number in (0, 1); got {atol!r}")
    tol64 = atol if atol is not None else ATOL["float64"]
    inputs, outputs, errors = _cases(recipe, seed, cache), {}, {}
    untested = []
    if recipe.window is not None and recipe.window + 8 > LONG_L and "beyond the window" not in inputs:
        untested.append(tr("the window of {w} keys (too long to run past here)", w=recipe.window))
    if recipe.q_position_factor is not None:
        p = _first_change(recipe)
        if p is not None and "late positions" not in inputs:
            untested.append(tr("the factor on q past position {p} (pass cache=True)", p=p))
    if not cache:
        untested.append(tr("fewer queries than keys (pass cache=True)"))
    try:
        for n, arrays in inputs.items():
            outputs[n] = call(candidate, arrays, backend, layout=layout)
    except Exception as exc:  # noqa: BLE001 - a failing candidate is a finding, not a crash
        msg = tr("The candidate failed on the case '{case}' ({kind}: {err}).", case=_case_label(n), kind=type(exc).__name__,
                 err=exc)
        return PortReport(False, msg, "error", float("inf"), errors, (n,), untested=tuple(untested))
    for n, out in outputs.items():
        want = (*inputs[n][0].shape[:-1], inputs[n][2].shape[-1])
        if out.shape != want:
            msg = tr("On the case '{case}' the output has shape {got}; it should be {want}.", case=_case_label(n),
                     got=tuple(_swap(out, layout).shape), want=tuple(_swap(np.empty(want), layout).shape))
            return PortReport(False, msg, "shape", float("inf"), errors, (n,), untested=tuple(untested))
        errors[n] = _max_err(out, reference_attention(*inputs[n], recipe))
    low = [dt for dt in recipe.dtypes if dt != "float64"] if backend == "torch" else []
    low_fail, tols = None, {}
    for dt in low:
        for n in ("base", "large logits"):
            rounded = tuple(_round_to(a, dt) for a in inputs[n])
            key = f"{n} ({dt})"
            try:
                out = call(candidate, rounded, backend, dtype=dt, layout=layout)
            except Exception as exc:  # noqa: BLE001
                msg = tr("The candidate failed in {dtype} ({kind}: {err}).", dtype=dt, kind=type(exc).__name__,
                         err=exc)
                return PortReport(False, msg, "error", float("inf"), errors, (key,), untested=tuple(untested))
            errors[key] = _max_err(out, reference_attention(*rounded, recipe))
            tols[key] = max(_low_tolerance(rounded, recipe, dt), atol or 0.0)
            if (not np.isfinite(out).all() or errors[key] > tols[key]) and low_fail is None:
                low_fail = (key, dt)
    failed = tuple(n for n, e in errors.items() if e > tols.get(n, tol64))
    worst = max(errors.values())
    not_run = tr(" Not exercised: {what}.", what="; ".join(untested)) if untested else ""
    if not failed:
        msg = tr("Every case matches the recipe (largest error {err:.1e}; {n} cases: batch and heads > 1 on "
                 "the same inputs, {widths}, lengths up to {L}, large and negative logits{dt}).",
                 err=worst, n=len(errors), L=max(inputs[n][1].shape[-2] for n in inputs),
                 widths=(tr("head width {d} (the recipe's)", d=recipe.head_dim) if recipe.head_dim
                         else tr("head widths {a} and {b}", a=BASE_D, b=WIDE_D)),
                 dt="" if not low else tr(", dtypes {dts}", dts=", ".join(low))) + not_run
        return PortReport(True, msg, None, worst, errors, (), untested=tuple(untested))
    float_failed = tuple(n for n in failed if "(" not in n)
    if not float_failed:  # right in float64, wrong only in low precision
        key, dt = low_fail
        finite = np.isfinite(errors[key])
        code = "not_finite" if not finite else "unknown"
        text = _text(code, dtype=dt) if code == "not_finite" else tr(
            "right in float64 but off by {err:.2g} in {dtype} (tolerance {tol:.2g}): a step computed in too low "
            "a precision, or a mask value that does not survive it", err=errors[key], dtype=dt, tol=tols[key])
        return PortReport(False, tr("Differs from the recipe: {what}.", what=text), code, worst, errors, failed,
                          untested=tuple(untested))
    code, text, factor = _diagnose(outputs, inputs, recipe, tol64, float_failed)
    shown = ", ".join(_case_label(n) for n in failed[:3]) + (", …" if len(failed) > 3 else "")
    msg = tr("Differs from the recipe: {what}. Largest error {err:.2g} (case '{case}'); {n} of {total} cases "
             "fail ({cases}).", what=text, err=worst, case=_case_label(max(errors, key=errors.get)), n=len(failed),
             total=len(errors), cases=shown)
    return PortReport(False, msg, code, worst, errors, failed, factor, tuple(untested))


def _case_label(name: str) -> str:
    """A case's name as the verdict shows it, in the reader's language (``"base (bfloat16)"``: the
    dtype stays as it is). The names in ``PortReport.errors`` stay English: they are keys."""
    head, sep, rest = name.partition(" (")
    labels = {"base": tr("base"), "one head": tr("one head"), "more heads": tr("more heads"),
              "larger batch": tr("larger batch"), "wide heads": tr("wide heads"), "long": tr("long"),
              "large logits": tr("large logits"), "negative logits": tr("negative logits"),
              "beyond the window": tr("beyond the window"), "cache": tr("cache"),
              "late positions": tr("late positions"),
              "cache beyond the window": tr("cache beyond the window")}
    return labels.get(head, head) + sep + rest


#: Unit roundoff of the low-precision dtypes.
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _low_tolerance(arrays, recipe, dtype):
    """The output tolerance in ``dtype``: ``ATOL[dtype]``, or more where the logits are large. A logit s
    stored in the dtype is off by up to u·|s| (u its unit roundoff); a weight moves by about that
    relative amount, the output by that times max|v|: tolerance 2·u·(1 + max|s|)·max|v|."""
    q, k, v = arrays
    k = np.repeat(k, recipe.q_per_kv, axis=-3) if recipe.q_per_kv > 1 else k
    f = abs(recipe.logit_factor(q.shape[-1]))
    smax = float(np.max(np.abs(q @ np.swapaxes(k, -1, -2)))) * f
    if recipe.qk_norm is not None:  # |q̂_h|·|k̂_h| ≤ d per head (rms), h·d over the projection, 1 (l2)
        bound = q.shape[-1] * (q.shape[-3] if recipe.qk_norm_axis == "projection" else 1)
        wq = max(map(abs, recipe.q_norm_weight or (1.0,)))
        wk = max(map(abs, recipe.k_norm_weight or (1.0,)))
        smax = f * (bound if recipe.qk_norm == "rms" else 1.0) * wq * wk
    if recipe.softcap is not None:
        smax = min(smax, recipe.softcap)
    return max(ATOL[dtype], 2 * UNIT_ROUNDOFF[dtype] * (1 + smax) * float(np.max(np.abs(v))))


def _round_to(a, dtype):
    """``a`` rounded to ``dtype`` and back to float64 (via torch for bfloat16)."""
    if dtype in ("float64", "float32", "float16"):
        return np.asarray(a, dtype=dtype).astype(float)
    import torch  # noqa: PLC0415

    return torch.from_numpy(np.ascontiguousarray(a)).to(torch.bfloat16).double().numpy()


# ---------------------------------------------------------------------------
# The `porting` chapter's exercise check whose answer must not appear in the notebook
# ---------------------------------------------------------------------------

def check_logit_factor(answer, *, head_dim: int, query_pre_attn_scalar: float):
    """Exercise 11: by what factor does a port that uses ``1/√head_dim`` multiply a model's logits, when
    the checkpoint was trained with ``query_pre_attn_scalar ** -0.5``? Never prints the answer."""
    from ..feedback.selfcheck import check_number  # noqa: PLC0415

    if not (isinstance(head_dim, int) and head_dim > 0 and query_pre_attn_scalar > 0):
        raise ValueError("head_dim must be a positive int and query_pre_attn_scalar positive")
    expected = math.sqrt(query_pre_attn_scalar / head_dim)
    return check_number(answer, expected, name=tr("factor on the logits"), rtol=2e-3, atol=0.0,
                        hint=tr("divide the port's scale by the checkpoint's"))
