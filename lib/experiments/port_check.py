"""Check a port of a model's attention against the recipe it was trained with (chapter `porting`).

A model's attention is more than ``softmax(q kᵀ / √d_k) v``: its checkpoint fixes a *recipe*, the
factors its scores were multiplied by, added to or capped with during training.  A port (a
re-implementation in another framework, a fused kernel call, a quantised runtime) must reproduce
each of them.  :class:`Recipe` names them, :func:`reference_attention` computes attention under a
recipe (NumPy, float64, written from the definitions), and :func:`check_port` runs a candidate
attention function on inputs built to expose each class of mistake and names the factor that is off:

- a scale that is a config value, not ``1/√d_k`` (Gemma 2's ``query_pre_attn_scalar``, Grok-1's
  ``attn_output_multiplier``, T5's 1);
- a factor ``m`` applied to q *and* k (DeepSeek-V3's YaRN ``mscale``): ``m²`` in the logit;
- RMS or L2 normalisation of each head's q and k, without a learned weight, with or without a separate
  scale (not expressible: a learned per-head weight, as Qwen 3's and Gemma 3's norms have after training,
  and OLMo 2's RMSNorm over the whole projection with a learned weight, Hugging Face transformers
  ``models/olmo2/modeling_olmo2.py``; check such a port against the model's own code);
- a cap on the logits ``c·tanh(s/c)`` (Gemma 2, Grok-1), applied after the scale and before the mask;
- ALiBi as BLOOM and MPT add it: ``-slope_h · (i - j)`` added after the scale, not multiplied by it
  (Falcon-RW in Hugging Face transformers adds it *before* multiplying by ``inv_norm_factor``,
  ``models/falcon/modeling_falcon.py`` at 00dcc6d: not expressible here);
- the causal mask and a sliding window.

The probe inputs have a batch axis and a head axis (B, h, L, d) with B and h greater than one, at
two head widths, at two sequence lengths (the longer one is past the base length), with logits
near the cap (if any), and in the low-precision dtypes the recipe lists (``backend="torch"``).
The same runner measures the scale a function applies (:func:`lib.infer_scale`, the `real-code` chapter, is
built on it: ``measure_scale``).
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


@dataclass(frozen=True)
class Recipe:
    """What a checkpoint's attention multiplies, adds to and caps its scores with.

    ``scale``: the factor on q·k: ``None`` means ``1/√d_k`` of the head width; a number is a fixed
    config value (Gemma 2 27B: ``144 ** -0.5``); a function of d_k gives a rule (μP: ``lambda d: 1/d``).
    ``qk_factor``: a factor applied to q and to k each (YaRN's mscale): the logit gets its square.
    ``qk_norm``: ``None``, ``"rms"`` (RMSNorm without a learned weight, per head) or ``"l2"`` (unit length).
    ``softcap``: ``c`` in ``c·tanh(s/c)``, applied to the scaled scores before the mask (or ``None``).
    ``alibi``: add ``-slope_h·(i - j)`` with the standard slopes (:func:`alibi_slopes`), after the scale.
    ``causal``: mask keys after the query; ``window``: also mask keys ``window`` or more positions back.
    ``dtypes``: the dtypes the model runs in; :func:`check_port` also runs the candidate in each
    (torch backend).
    """

    scale: float | Callable[[int], float] | None = None
    qk_factor: float = 1.0
    qk_norm: str | None = None
    softcap: float | None = None
    alibi: bool = False
    causal: bool = True
    window: int | None = None
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
        if self.softcap is not None and not (isinstance(self.softcap, (int, float)) and self.softcap > 0):
            raise ValueError(f"Recipe.softcap must be None or a positive number; got {self.softcap!r}")
        if not isinstance(self.alibi, bool) or not isinstance(self.causal, bool):
            raise TypeError("Recipe.alibi and Recipe.causal must be True or False")
        if self.window is not None and not (isinstance(self.window, int) and self.window >= 1):
            raise ValueError(f"Recipe.window must be None or a positive int; got {self.window!r}")
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
_VARIANTS = ("softcap_after_mask", "alibi_scaled", "alibi_reversed", "alibi_one_slope")


def _as_float_array(x, name):
    a = np.asarray(x, dtype=float)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has values that are not finite")
    return a


def reference_attention(q, k, v, recipe: Recipe | dict | None = None, *, variant: str | None = None):
    """Attention under ``recipe``, in float64 NumPy, written from the definitions (see :class:`Recipe`).

    q (..., L, d_k), k (..., S, d_k), v (..., S, d_v); queries are the last L of the S positions (as
    with a cache). ALiBi needs a head axis: q (..., h, L, d_k). Returns (..., L, d_v).
    ``variant`` computes a known mistake instead (used by :func:`check_port` to name it).
    """
    recipe = _recipe(recipe)
    if variant is not None and variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS}; got {variant!r}")
    q, k, v = (_as_float_array(a, n) for a, n in ((q, "q"), (k, "k"), (v, "v")))
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"q, k, v need the same number of axes (at least 2); got shapes {q.shape}, {k.shape}, "
                         f"{v.shape}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] or q.shape[:-2] != k.shape[:-2] \
            or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"shapes do not fit: q {q.shape} (..., L, d_k), k {k.shape} (..., S, d_k), "
                         f"v {v.shape} (..., S, d_v)")
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if L > S:
        raise ValueError(f"more queries (L = {L}) than keys (S = {S}): queries are the last L positions")
    if recipe.alibi and q.ndim < 3:
        raise ValueError(f"ALiBi needs a head axis: q (..., h, L, d_k); got shape {q.shape}")
    if recipe.qk_norm == "rms":
        q = q / np.sqrt(np.mean(q * q, axis=-1, keepdims=True) + 1e-6)
        k = k / np.sqrt(np.mean(k * k, axis=-1, keepdims=True) + 1e-6)
    elif recipe.qk_norm == "l2":
        q = q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), 1e-12)
        k = k / np.maximum(np.linalg.norm(k, axis=-1, keepdims=True), 1e-12)
    m = recipe.qk_factor
    s = (q * m) @ np.swapaxes(k * m, -1, -2) * recipe.scale_at(d)
    i = np.arange(S - L, S)[:, None]
    j = np.arange(S)[None, :]
    masked = np.zeros((L, S), dtype=bool)
    if recipe.causal:
        masked |= j > i
    if recipe.window is not None:
        masked |= j <= i - recipe.window
    if recipe.softcap is not None and variant != "softcap_after_mask":
        s = recipe.softcap * np.tanh(s / recipe.softcap)
    if recipe.alibi:
        h = q.shape[-3]
        slopes = alibi_slopes(h)
        if variant == "alibi_reversed":
            slopes = slopes[::-1]
        elif variant == "alibi_one_slope":
            slopes = np.full(h, slopes[0])
        bias = -slopes[:, None, None] * np.abs(i - j)[None]
        if variant == "alibi_scaled":
            bias = bias * recipe.scale_at(d)
        s = s + bias
    if variant == "softcap_after_mask":  # the mask becomes a finite -c: masked keys get weight
        s = np.where(masked, -1e30, s)
        s = recipe.softcap * np.tanh(s / recipe.softcap)
    else:
        s = np.where(masked, -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v


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


def call(attn, arrays, backend, dtype="float64"):
    """``attn(q, k, v)`` on NumPy arrays, as NumPy (``backend="numpy"``) or torch tensors of ``dtype``;
    the output (or the first element of a returned tuple) as a float64 NumPy array."""
    if backend == "torch":
        import torch  # noqa: PLC0415

        out = attn(*(torch.from_numpy(np.ascontiguousarray(a)).to(_torch_dtype(dtype)) for a in arrays))
        if isinstance(out, tuple):
            out = out[0]
        if isinstance(out, torch.Tensor):
            out = out.detach().cpu().double().numpy()
    else:
        out = attn(*(np.asarray(a, dtype=dtype) for a in arrays))
        if isinstance(out, tuple):
            out = out[0]
    return np.asarray(out, dtype=float)


def check_backend(backend):
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch'; got {backend!r}")


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


def measure_scale(attn, d_k, d_v, S, x, batch_dims, backend):
    """(scale inside the softmax, sum of the weights) that ``attn`` applies, read off the probe.

    For a softmax of scaled scores the last query's weight of key 0 is ``w₀ = e^{τx}/(e^{τx} + S - 1)``,
    so ``τ = ln(w₀ (S - 1)/(1 - w₀))/x``. Every leading (batch, head) slice is read; if they differ
    the function mixes the slices and ``ValueError`` says so.
    """
    for _ in range(4):
        arrays = _probe_arrays(d_k, d_v, S, x, batch_dims)
        out = call(attn, arrays, backend)
        want = (*batch_dims, S, d_v)
        if out.shape != want:
            raise ValueError(tr("The output has shape {got}; for q {q}, k {k}, v {v} it should be {want}",
                                got=tuple(out.shape), q=arrays[0].shape, k=arrays[1].shape,
                                v=arrays[2].shape, want=want))
        rows = out.reshape(-1, S, d_v)[:, -1]  # the last query sees every key, also under a causal mask
        total, w0 = float(rows[0, 1]), float(rows[0, 0])
        if not np.isfinite(rows[:, :2]).all() or total == 0:
            raise ValueError(tr("The output is not finite or its weights sum to 0"))
        w0 = w0 / total  # the softmax weight of key 0, whatever multiplies the weights afterwards
        if 1e-9 < w0 < 1 - 1e-9 or x < 1e-6:
            break
        x = x / 32  # saturated: a large scale; probe with a smaller raw score
    w0 = min(max(w0, 1e-300), 1 - 1e-16)
    return math.log(w0 * (S - 1) / (1 - w0)) / x, total


#: Leading (batch, heads) layouts the probes use: a base layout, then more heads, then a larger batch.
LAYOUTS = {"base": (2, 3), "more heads": (2, 5), "larger batch": (4, 3)}


def accepts_layout(attn, backend, batch_dims=LAYOUTS["base"]) -> bool:
    """Whether ``attn`` runs on (B, h, L, d) inputs and returns (B, h, L, d_v)."""
    try:
        arrays = _probe_arrays(8, 3, 4, 1.0, batch_dims)
        out = call(attn, arrays, backend)
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

#: The float cases: (batch, heads, length, head width, "plain" or "near the cap").
CASES = {
    "base": (2, 3, 12, 16, "plain"),
    "one head": (1, 1, 12, 16, "plain"),
    "more heads": (2, 5, 12, 16, "plain"),
    "larger batch": (4, 3, 12, 16, "plain"),
    "wide heads": (2, 3, 12, 64, "plain"),
    "long": (2, 3, 40, 16, "plain"),
    "large logits": (2, 3, 12, 16, "large"),
    "negative logits": (2, 3, 12, 16, "negative"),
}


def _case_inputs(recipe, B, h, L, d, kind, seed):
    """q, k, v for one case: Gaussian, scaled so that the recipe's logits are O(2) ("plain"), or with a
    shared direction so that every logit sits near the cap (or near 20 without a cap) with an O(1)
    spread ("large": a cap compresses that spread, which a monotone-blind one-hot cannot show)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, h, L, d))
    k = rng.standard_normal((B, h, L, d))
    v = rng.standard_normal((B, h, L, d))
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
    u = rng.standard_normal((B, h, 1, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    if normed:  # after the norm |q| = |k| = unit; put most of each on u
        q = (-0.9 if kind == "negative" else 0.9) * u + 0.3 * q / math.sqrt(d)
        k = 0.9 * u + 0.3 * k / math.sqrt(d)
        return q * 3.0, k * 3.0, v  # the norm removes the 3; a port without it sees larger logits
    mu = math.sqrt(abs(target) / f)  # f · μ² = |target|: the shared part of every logit
    sign = -1.0 if target < 0 else 1.0
    return sign * mu * u + 0.5 * q, mu * u + 0.5 * k, v


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
        out.append(("qk_norm_missing", lambda x: replace(x, qk_norm=None), None))
        if r.scale is None:
            out.append(("qk_norm_scale_dropped", lambda x: replace(x, scale=1.0), None))
    if r.softcap is not None:
        out.append(("softcap_missing", lambda x: replace(x, softcap=None), None))
        out.append(("softcap_after_mask", lambda x: x, "softcap_after_mask"))
    if r.alibi:
        out.append(("alibi_missing", lambda x: replace(x, alibi=False), None))
        for v in ("alibi_scaled", "alibi_reversed", "alibi_one_slope"):
            out.append((v, lambda x: x, v))
    if r.causal:
        out.append(("mask_missing", lambda x: replace(x, causal=False, window=None), None))
    if r.window is not None:
        out.append(("window_missing", lambda x: replace(x, window=None), None))
    return out


def _combinations(recipe):
    """The single mistakes, then every pair of them (at most one of a pair a variant of the reference):
    (names, recipe, variant)."""
    singles = _mutations(recipe)
    yield from (((n,), f(recipe), v) for n, f, v in singles)
    for i, (n1, f1, v1) in enumerate(singles):
        for n2, f2, v2 in singles[i + 1:]:
            if v1 is not None and v2 is not None:
                continue
            if {n1, n2} <= {"default_scale", "no_scale", "scale_twice", "qk_norm_scale_dropped"}:
                continue  # two changes of the same scale are one change
            if "softcap_missing" in (n1, n2) and "softcap_after_mask" in (n1, n2):
                continue
            yield (n1, n2), f2(f1(recipe)), v1 or v2


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
        "softcap_missing": lambda: tr("the logit cap c·tanh(s/c) (c = {cap:g}) is missing", **f),
        "softcap_after_mask": lambda: tr("the cap is applied after the mask: tanh turns -inf into -c, so masked keys get weight "
                                          "where every visible logit is far below zero", **f),
        "alibi_missing": lambda: tr("the ALiBi bias is missing", **f),
        "alibi_scaled": lambda: tr("the ALiBi bias is multiplied by the scale (it is added after the scale)", **f),
        "alibi_reversed": lambda: tr("the ALiBi slopes are in the reverse head order", **f),
        "alibi_one_slope": lambda: tr("every head uses the first ALiBi slope", **f),
        "mask_missing": lambda: tr("the causal mask is missing: queries see later keys", **f),
        "window_missing": lambda: tr("the sliding window is missing: queries see keys beyond it", **f),
        "heads_or_batch": lambda: tr("the result depends on the number of heads or the batch size: an axis read from the wrong place (such as x.size(1) of a (B, h, L, d) tensor)", **f),
        "scale_factor": lambda: tr("the scores are multiplied by {c:.4g} times the recipe's factor", **f),
        "width_rule": lambda: tr("the factor on the scores changes with the head width unlike the recipe's ({c:.4g} times the recipe's at d_k = {d}, {cw:.4g} times at d_k = {dw})", **f),
        "sequence_length": lambda: tr("the factor on the scores changes with the sequence length", **f),
        "not_finite": lambda: tr("the output is not finite in {dtype}", **f),
        "shape": lambda: tr("the output has the wrong shape", **f),
        "error": lambda: tr("the function failed", **f),
        "unknown": lambda: tr("something else differs from the recipe", **f),
    }
    return texts[code]()




@dataclass(frozen=True, repr=False)
class PortReport(Shown):
    """What :func:`check_port` found.

    ``ok``: every case within tolerance. ``mistake``: ``None`` or a code naming the factor that is off
    (``"default_scale"``, ``"no_scale"``, ``"scale_twice"``, ``"qk_factor_once"``, ``"qk_factor_missing"``,
    ``"qk_norm_missing"``, ``"qk_norm_scale_dropped"``, ``"softcap_missing"``, ``"softcap_after_mask"``,
    ``"alibi_missing"``, ``"alibi_scaled"``, ``"alibi_reversed"``, ``"alibi_one_slope"``,
    ``"mask_missing"``, ``"window_missing"``, ``"heads_or_batch"``, ``"width_rule"``,
    ``"sequence_length"``, ``"scale_factor"`` (with ``factor``), ``"not_finite"``, ``"shape"``, ``"error"`` or ``"unknown"``). ``errors``: case -> max abs
    error of the output against the reference; two mistakes at once show as their codes joined by
    ``"+"`` (``"default_scale+softcap_missing"``); ``max_error``: the largest; ``failed``: the cases over
    tolerance; ``factor``: for ``"scale_factor"``, the measured ratio of the candidate's logit factor to
    the recipe's.
    """

    ok: bool
    message: str
    mistake: str | None
    max_error: float
    errors: dict = field(default_factory=dict, compare=False)
    failed: tuple = ()
    factor: float = float("nan")

    def _label(self):
        return tr("Port matches the recipe.") if self.ok else tr("Port differs from the recipe.")


def _max_err(a, b):
    if a.shape != b.shape:
        return float("inf")
    with np.errstate(invalid="ignore"):
        e = np.abs(a - b)
    return float(np.nanmax(np.where(np.isfinite(e), e, np.inf))) if e.size else 0.0


def _fit_factor(outputs, inputs, recipe, names):
    """The c for which the recipe with its logit factor × c reproduces the candidate best on the cases
    ``names`` (a grid, then golden section, on ln c in [-6, 6]); (c, its max error)."""
    def err(lc):
        c = math.exp(lc)
        rec = replace(recipe, scale=lambda d, s=recipe.scale_at: s(d) * c)
        return max(_max_err(outputs[n], reference_attention(*inputs[n], rec)) for n in names)

    grid = np.linspace(-6, 6, 25)
    vals = [err(g) for g in grid]
    i = int(np.argmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(30):
        c1, c2 = b - g * (b - a), a + g * (b - a)
        if err(c1) < err(c2):
            b = c2
        else:
            a = c1
    lc = (a + b) / 2
    return math.exp(lc), err(lc)


def _diagnose(outputs, inputs, recipe, tol):
    """(code, text, factor) for a candidate that differs from ``recipe`` in float precision."""
    d0 = CASES["base"][3]
    fields_ = dict(scale=recipe.logit_factor(d0), d=d0, m2=recipe.qk_factor ** 2, cap=recipe.softcap or 0)
    refs = {n: reference_attention(*inputs[n], recipe) for n in outputs}
    best, best_err, singles_done = None, float("inf"), False
    for names, rec, var in _combinations(recipe):
        if len(names) == 2 and not singles_done:
            if best is not None and best_err <= 10 * tol:
                break  # a single mistake explains it: do not look for pairs
            singles_done = True
        mine = {n: reference_attention(*inputs[n], rec, variant=var) for n in outputs}
        if max(_max_err(mine[n], refs[n]) for n in outputs) <= 10 * tol:
            continue  # this change does not change these cases: it cannot be told apart
        e = max(_max_err(outputs[n], mine[n]) for n in outputs)
        if e < best_err:
            best, best_err = names, e
    if best is not None and best_err <= 10 * tol:
        text = _text(best[0], **fields_)
        if len(best) == 2:
            text = tr("{a}; and {b}", a=text, b=_text(best[1], **fields_))
        return "+".join(best), text, float("nan")
    # one factor on the logits, case by case: does it change with the heads, the batch, the width, the length?
    fits = {n: _fit_factor(outputs, inputs, recipe, [n]) for n in ("base", "one head", "more heads",
                                                                     "larger batch", "wide heads", "long")}
    if all(e <= 10 * tol for _, e in fits.values()):
        c0 = fits["base"][0]
        off = lambda n: abs(fits[n][0] / c0 - 1) > 1e-3  # noqa: E731
        if any(off(n) for n in ("one head", "more heads", "larger batch")):
            return "heads_or_batch", _text("heads_or_batch"), c0
        if off("wide heads"):
            return "width_rule", _text("width_rule", c=c0, cw=fits["wide heads"][0], d=d0,
                                       dw=CASES["wide heads"][3]), c0
        if off("long"):
            return "sequence_length", _text("sequence_length"), c0
        c, e = _fit_factor(outputs, inputs, recipe, list(outputs))
        if e <= 10 * tol:
            return "scale_factor", _text("scale_factor", c=c), c
    return "unknown", _text("unknown"), float("nan")


def check_port(candidate: Callable, recipe: Recipe | dict | None = None, *, backend: str = "numpy",
               seed: int = 0, atol: float | None = None) -> PortReport:
    """Compare ``candidate(q, k, v)`` with :func:`reference_attention` under ``recipe`` and name the
    factor that is off.

    The candidate gets (B, h, L, d) arrays (NumPy float64, or torch tensors with ``backend="torch"``;
    queries and keys cover the same L positions) and returns (B, h, L, d_v), or a tuple whose first
    element is that. The cases (``CASES``) vary the batch, the heads, the head width and the length and
    put logits near the cap; with ``backend="torch"`` the candidate also runs in each of
    ``recipe.dtypes`` (inputs rounded to the dtype first, tolerance ``ATOL[dtype]``). When it differs,
    the report names the single mistake (``_mutations``) the candidate matches, or measures the factor
    its logits are off by. Never raises because of what the candidate does.
    """
    if not callable(candidate):
        raise TypeError(f"check_port needs a function candidate(q, k, v); got {type(candidate).__name__}")
    recipe = _recipe(recipe)
    check_backend(backend)
    if recipe.scale is not None and callable(recipe.scale):
        for d in (16, 64):
            val = float(recipe.scale(d))
            if not (math.isfinite(val) and val != 0):
                raise ValueError(f"recipe.scale(d_k) must be a finite non-zero number; got {val!r} at d_k = {d}")
    if atol is not None and not (isinstance(atol, (int, float)) and 0 < atol < 1):
        raise ValueError(f"atol must be a number in (0, 1); got {atol!r}")
    tol64 = atol if atol is not None else ATOL["float64"]
    inputs, outputs, errors = {}, {}, {}
    for n, (B, h, L, d, kind) in CASES.items():
        inputs[n] = _case_inputs(recipe, B, h, L, d, kind, seed + len(inputs))
    try:
        for n, arrays in inputs.items():
            outputs[n] = call(candidate, arrays, backend)
    except Exception as exc:  # noqa: BLE001 - a failing candidate is a finding, not a crash
        msg = tr("The candidate failed on the case '{case}' ({kind}: {err}).", case=n, kind=type(exc).__name__,
                 err=exc)
        return PortReport(False, msg, "error", float("inf"), errors, (n,))
    for n, out in outputs.items():
        want = inputs[n][2].shape
        if out.shape != want:
            msg = tr("On the case '{case}' the output has shape {got}; it should be {want}.", case=n,
                     got=tuple(out.shape), want=want)
            return PortReport(False, msg, "shape", float("inf"), errors, (n,))
        errors[n] = _max_err(out, reference_attention(*inputs[n], recipe))
    low = [dt for dt in recipe.dtypes if dt != "float64"] if backend == "torch" else []
    low_fail, tols = None, {}
    for dt in low:
        for n in ("base", "large logits"):
            B, h, L, d, kind = CASES[n]
            rounded = tuple(_round_to(a, dt) for a in inputs[n])
            key = f"{n} ({dt})"
            try:
                out = call(candidate, rounded, backend, dtype=dt)
            except Exception as exc:  # noqa: BLE001
                msg = tr("The candidate failed in {dtype} ({kind}: {err}).", dtype=dt, kind=type(exc).__name__,
                         err=exc)
                return PortReport(False, msg, "error", float("inf"), errors, (key,))
            errors[key] = _max_err(out, reference_attention(*rounded, recipe))
            tols[key] = max(_low_tolerance(rounded, recipe, dt), atol or 0.0)
            if (not np.isfinite(out).all() or errors[key] > tols[key]) and low_fail is None:
                low_fail = (key, dt)
    failed = tuple(n for n, e in errors.items() if e > tols.get(n, tol64))
    worst = max(errors.values())
    if not failed:
        msg = tr("Every case matches the recipe (largest error {err:.1e}; {n} cases, batch and heads > 1, "
                 "two head widths, two lengths, large and negative logits{dt}).", err=worst, n=len(errors),
                 dt="" if not low else tr(", dtypes {dts}", dts=", ".join(low)))
        return PortReport(True, msg, None, worst, errors, ())
    float_failed = tuple(n for n in failed if "(" not in n)
    if not float_failed:  # right in float64, wrong only in low precision
        key, dt = low_fail
        finite = np.isfinite(errors[key])
        code = "not_finite" if not finite else "unknown"
        text = _text(code, dtype=dt) if code == "not_finite" else tr(
            "right in float64 but off by {err:.2g} in {dtype} (tolerance {tol:.2g}): a step computed in too low "
            "a precision, or a mask value that does not survive it", err=errors[key], dtype=dt, tol=tols[key])
        return PortReport(False, tr("Differs from the recipe: {what}.", what=text), code, worst, errors, failed)
    code, text, factor = _diagnose(outputs, inputs, recipe, tol64)
    shown = ", ".join(failed[:3]) + (", …" if len(failed) > 3 else "")
    msg = tr("Differs from the recipe: {what}. Largest error {err:.2g} (case '{case}'); {n} of {total} cases "
             "fail ({cases}).", what=text, err=worst, case=max(errors, key=errors.get), n=len(failed),
             total=len(errors), cases=shown)
    return PortReport(False, msg, code, worst, errors, failed, factor)


#: Unit roundoff of the low-precision dtypes.
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _low_tolerance(arrays, recipe, dtype):
    """The output tolerance in ``dtype``: ``ATOL[dtype]``, or more where the logits are large. A logit s
    stored in the dtype is off by up to u·|s| (u its unit roundoff); a weight moves by about that
    relative amount, the output by that times max|v|: tolerance 2·u·(1 + max|s|)·max|v|."""
    q, k, v = arrays
    smax = float(np.max(np.abs(q @ np.swapaxes(k, -1, -2)))) * abs(recipe.logit_factor(q.shape[-1]))
    if recipe.qk_norm is not None:
        smax = abs(recipe.logit_factor(q.shape[-1])) * (q.shape[-1] if recipe.qk_norm == "rms" else 1.0)
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
