"""Which scale does an attention function apply?  Measure it by probing with known q, k, v (chapter `real-code`).

:func:`infer_scale` calls an attention function ``attn(q, k, v)`` on inputs built so that the
answer can be read off the output:

- every query is ``x·e₁``; key 0 is ``e₁`` and every other key is 0, so the raw scores of a
  query are ``(x, 0, ..., 0)``;
- value 0 is ``(1, 1, 0, ...)`` and every other value is ``(0, 1, 0, ...)``, so the first output
  component is the weight ``w₀`` of key 0 and the second is the sum of all the weights.

For a softmax of scaled scores, ``w₀ = e^{τx} / (e^{τx} + S - 1)``, hence
``τ = ln(w₀ (S - 1) / (1 - w₀)) / x``.  The probe reads the *last* query, which sees every key
even under a causal mask.  It does this at two key widths d_k (how τ changes with d_k: 1/√d_k,
1/d_k, ...), at two value widths and at two sequence lengths (τ must not depend on either), and
checks that the weights sum to 1 (a scale applied after the softmax breaks that).

What it assumes, and what it does when an assumption fails:

- the scores are ``τ·q·k`` and nothing else: the probe reads the log-odds at x and at 2x, which a
  pure scale doubles. An added bias (ALiBi, relative positions) does not double them (verdict
  ``"additive"``); a norm on q and k makes them independent of x (verdict ``"normalised"``). The
  probe then says that it cannot read the scale, instead of giving one;
- the weights are a softmax: if they sum to less than 1 by an amount that changes with the scores,
  the softmax has an extra term in its denominator (a sink, as gpt-oss has); the scale is still read,
  from the ratio of two weights, and the report says ``sink=True``;
- the layout is (B, h, L, d): with ``layout=None`` (the default), a function that does not read
  consistently in that layout is probed again in (B, L, h, d), the layout of flash-attn, xformers and
  JAX, and the report says which layout it read;
- the precision: the tolerance of a reading follows the output's dtype (``RTOL``), unless ``rtol``
  is given.

NumPy functions get NumPy arrays (``backend="numpy"``); PyTorch functions get tensors of ``dtype``
(``backend="torch"``, float64 by default).  By default (``batch_dims=None``) the probe gives
(B, h, L, d) inputs with B = 2 and h = 3, and reads the scale again with 5 heads and with a batch of
4: a scale read from the wrong axis (``x.size(1)`` of a (B, h, L, d) tensor is h) changes with them
(verdict ``"batch_axes"``).  A function that takes only 2-D inputs is probed with 2-D inputs (the
report's ``batch_dims`` is then ``()``).  An explicit ``batch_dims`` such as ``(1, 1)`` probes that
layout only.

The runner is :mod:`lib.port_check`'s (``call``, ``probe``): this is the port check's scale reading,
with verdicts for the mistakes of the `real-code` chapter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..infra.i18n import tr
from .port_check import LAYOUTS, accepts_layout, probe
from .port_check import check_backend, check_layout
from ..feedback.display import Shown

__all__ = ["ScaleReport", "infer_scale"]

#: The probe's reference shapes: key width, value width, sequence length (queries = keys).
BASE_D_K, BASE_D_V, BASE_S = 16, 4, 6
#: The other widths and lengths it tries, one change at a time.
WIDE_D_K, WIDE_D_V, LONG_S = 64, 9, 24
#: Relative tolerance of a reading by the output's dtype: float64 and float32 code reads to about
#: 1e-6, float16 and bfloat16 code to about 1e-2; the laws it tells apart differ by 2x.
RTOL = {"float64": 1e-3, "float32": 1e-3, "float16": 0.02, "bfloat16": 0.02}
#: Laws the probe names: scale = c · d_k^p.  2/d_k and 1/(2 d_k) are what ``d ** 1 / 2`` gives.
LAWS = {"1/sqrt(d_k)": (-0.5, 1.0), "1/d_k": (-1.0, 1.0), "2/d_k": (-1.0, 2.0), "1/(2d_k)": (-1.0, 0.5),
        "1": (0.0, 1.0)}
#: Verdicts that read a scale in a consistent way (a layout that gives one of these is the right one).
_CLEAN = ("ok", "double", "precedence", "missing", "default")


@dataclass(frozen=True, repr=False)
class ScaleReport(Shown):
    """What :func:`infer_scale` measured.

    ``verdict`` is ``"ok"`` when the function applies the expected scale, else one of
    ``"after_softmax"`` (the weights sum to a constant other than 1), ``"additive"`` (something is
    added to the scores: the probe cannot read a scale), ``"normalised"`` (the scores do not grow
    with q: q and k are normalised, and the probe cannot read a scale), ``"value_width"`` /
    ``"sequence_length"`` (the scale changes with d_v or with the length), ``"double"`` (1/d_k:
    1/√d_k applied twice), ``"precedence"`` (2/d_k or 1/(2 d_k), as ``d ** 1 / 2`` gives),
    ``"batch_axes"`` (the reading changes with the head or the batch), ``"missing"`` (no scale),
    ``"default"`` (1/√d_k where another scale was expected), ``"custom"`` (anything else) or
    ``"error"`` (the function failed on the probe).  ``scale`` is the scale inside the softmax at
    ``d_k``; ``law`` names how it changes with d_k (``"1/sqrt(d_k)"``, ``"1/d_k"``, ``"2/d_k"``,
    ``"1"`` or ``"other"``); ``weight_sum`` is the sum of one query's weights (1 for a softmax);
    ``sink``: the weights sum to less than 1 by an amount that changes with the scores;
    ``batch_dims`` is the leading layout probed (``()``: 2-D inputs), ``layout`` the axis order
    ("BHLD" or "BLHD") and ``rtol`` the tolerance used.
    """

    verdict: str
    scale: float
    expected: float
    law: str
    exponent: float
    weight_sum: float
    d_k: int
    message: str
    scales: dict = field(default_factory=dict, compare=False)
    batch_dims: tuple = ()
    layout: str = "BHLD"
    sink: bool = False
    rtol: float = RTOL["float64"]

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def _exponent(t1, t2, n1, n2):
    if t1 > 0 and t2 > 0:
        return math.log(t2 / t1) / math.log(n2 / n1)
    return 0.0 if t1 == t2 else float("nan")


def _differ(a, b, rtol):
    """True if two measured scales differ by more than the probe's rounding."""
    return abs(a - b) > rtol * max(abs(a), abs(b), 1e-12)


def _law(exponent, scale, d_k, rtol):
    for name, (p, c) in LAWS.items():
        if abs(exponent - p) < 2 * rtol + 1e-3 and not _differ(scale, c * d_k ** p, rtol):
            return name
    return "other"


def _fail(msg, exp_base, scales, dims, layout, rtol):
    return ScaleReport("error", float("nan"), exp_base, "other", float("nan"), float("nan"), BASE_D_K, msg,
                       scales, dims, layout, False, rtol)


def _analyse(attn, exp_fn, backend, batch_dims, rtol, dtype, layout):
    """One probe of ``attn`` in ``layout``: the ScaleReport (``verdict="error"`` if it failed)."""
    exp_base, exp_wide = float(exp_fn(BASE_D_K)), float(exp_fn(WIDE_D_K))
    shapes = {"base": (BASE_D_K, BASE_D_V, BASE_S), "wide d_k": (WIDE_D_K, BASE_D_V, BASE_S),
              "wide d_v": (BASE_D_K, WIDE_D_V, BASE_S), "long": (BASE_D_K, BASE_D_V, LONG_S)}
    layouts = {"base": batch_dims}
    if batch_dims is None:  # batch and heads > 1, then each changed (the x.size(1) bug of the `real-code` chapter)
        layouts = dict(LAYOUTS) if accepts_layout(attn, backend, layout=layout) else {"base": ()}
    base_dims = layouts["base"]
    scales, sums, slices = {}, {}, {}
    try:
        x0 = 1.0 / exp_base  # expected scale · x = 1: a softmax far from saturation
        odds1, sum1, x1, out_dtype, every1 = probe(attn, BASE_D_K, BASE_D_V, BASE_S, x0, base_dims, backend,
                                                   dtype, layout)
        odds2, sum2, x2, _, _ = probe(attn, BASE_D_K, BASE_D_V, BASE_S, 2 * x1, base_dims, backend, dtype, layout)
        if rtol is None:
            rtol = max(RTOL.get(out_dtype, RTOL["float64"]), RTOL.get(dtype, RTOL["float64"]))
        scales["base"], sums["base"], slices["base"] = odds1 / x1, sum1, every1 / x1
        for name, (dk, dv, S) in shapes.items():
            if name != "base":
                o, sums[name], xx, _, every = probe(attn, dk, dv, S, 1.0 / float(exp_fn(dk)), base_dims, backend,
                                                    dtype, layout)
                scales[name], slices[name] = o / xx, every / xx
        for name, dims in layouts.items():
            if name != "base":
                o, _, xx, _, every = probe(attn, BASE_D_K, BASE_D_V, BASE_S, x0, dims, backend, dtype, layout)
                scales[name], slices[name] = o / xx, every / xx
    except Exception as exc:  # noqa: BLE001 - any failure of the probed function becomes a verdict
        msg = tr("The function failed on the probe inputs ({kind}: {err})", kind=type(exc).__name__, err=exc)
        return _fail(msg, exp_base, scales, base_dims, layout, rtol or RTOL["float64"])
    tau, total = scales["base"], sums["base"]
    p_dk = _exponent(tau, scales["wide d_k"], BASE_D_K, WIDE_D_K)
    law = _law(p_dk, tau, BASE_D_K, rtol)
    matches = not _differ(tau, exp_base, rtol) and not _differ(scales["wide d_k"], exp_wide, rtol)
    sink = abs(sum1 - 1) > rtol and _differ(sum1, sum2, rtol) and sum1 < 1 and sum2 < 1
    fields = dict(tau=tau, d=BASE_D_K, exp=exp_base, law=law, p=p_dk, total=total, a=sum1, b=sum2)
    tau2 = odds2 / x2
    spread = [(n, float(np.min(v)), float(np.max(v))) for n, v in slices.items() if v.size > 1]
    mixed = next(((n, lo, hi) for n, lo, hi in spread if _differ(lo, hi, rtol)), None)
    if abs(total - 1) > rtol and not sink:
        verdict = "after_softmax"
        msg = tr("The weights of a query sum to {total:.4g}, not 1, at every size of the scores: something "
                 "multiplies the weights after the softmax (a scale applied after it?). Inside the softmax "
                 "the scale is {tau:.4g}.", **fields)
    elif _differ(tau, tau2, rtol):
        if abs(odds2 - odds1) <= rtol * max(abs(odds1), abs(odds2), 1e-12):
            verdict = "normalised"
            msg = tr("The scores do not grow with q (the same weights at q and at 2q): q and k are normalised "
                     "before their product (a QK norm), so this probe cannot read the scale. Read it from the "
                     "code, or probe the function that runs after the norm.")
        else:
            verdict = "additive"
            msg = tr("Doubling q does not double the scores ({a:.4g} and {b:.4g} per unit of q·k): something is "
                     "added to them (a bias such as ALiBi or relative positions), so this probe cannot read the "
                     "scale. Read the code, or probe the function without its bias.", a=tau, b=tau2)
    elif mixed is not None or any(_differ(tau, scales[n], rtol) for n in layouts if n != "base"):
        verdict = "batch_axes"
        if mixed is not None:
            msg = tr("The reading differs between the (batch, head) slices of one call ({a:.4g} to {b:.4g}): the "
                     "scale depends on the head, or the slices are mixed up.", a=mixed[1], b=mixed[2])
        else:
            other = next(n for n in layouts if n != "base" and _differ(tau, scales[n], rtol))
            msg = tr("The reading changes with the number of heads or the batch size ({a:.4g} with (batch, "
                     "heads) = {da}, {b:.4g} with {db}): a width read from the wrong axis, such as x.size(1) "
                     "of a (B, h, L, d) tensor (d_k is the last axis), or a term that depends on the head "
                     "count: read the code.", a=tau, da=layouts["base"], b=scales[other], db=layouts[other])
    elif _differ(tau, scales["wide d_v"], rtol):
        verdict = "value_width"
        msg = tr("The scale changes with the value width d_v ({a:.4g} at d_v = {da}, {b:.4g} at d_v = {db}): "
                 "it must come from the key width d_k.", a=tau, da=BASE_D_V, b=scales["wide d_v"], db=WIDE_D_V)
    elif _differ(tau, scales["long"], rtol):
        verdict = "sequence_length"
        msg = tr("The scale changes with the sequence length ({a:.4g} at L = {la}, {b:.4g} at L = {lb}): "
                 "it must come from the key width d_k.", a=tau, la=BASE_S, b=scales["long"], lb=LONG_S)
    elif matches:
        verdict = "ok"
        msg = tr("Scale {tau:.4g} at d_k = {d} ({law}), as expected.", **fields)
    else:
        verdict = {"1/d_k": "double", "2/d_k": "precedence", "1/(2d_k)": "precedence", "1": "missing",
                   "1/sqrt(d_k)": "default"}.get(law, "custom")
        msg = {
            "double": tr("Scale {tau:.4g} at d_k = {d}, that is 1/d_k: 1/√d_k applied twice? (expected {exp:.4g})",
                         **fields),
            "precedence": tr("Scale {tau:.4g} at d_k = {d}, that is {law}: `d ** 1 / 2` is (d ** 1) / 2, "
                             "not the square root (write d ** 0.5). Expected {exp:.4g}.", **fields),
            "missing": tr("Scale 1 at every d_k: no scale is applied (expected {exp:.4g} at d_k = {d}).", **fields),
            "default": tr("Scale {tau:.4g} at d_k = {d}, the default 1/√d_k, where {exp:.4g} was expected: "
                          "a custom scale was replaced by the default?", **fields),
            "custom": tr("Scale {tau:.4g} at d_k = {d} (it changes like d_k^{p:.2f}); expected {exp:.4g}.",
                         **fields),
        }[verdict]
    if sink and verdict not in ("normalised", "additive"):
        msg = msg + " " + tr("The weights sum to {a:.4g} and {b:.4g} at two sizes of the scores: the softmax has "
                             "an extra term in its denominator (a sink, as gpt-oss has). The scale is read from "
                             "the ratio of two weights, which a sink does not change.", **fields)
    return ScaleReport(verdict, tau, exp_base, law, p_dk, total, BASE_D_K, msg, dict(scales), base_dims, layout,
                       sink, rtol)


def infer_scale(attn: Callable, *, expected: Callable[[int], float] | None = None, backend: str = "numpy",
                batch_dims: tuple[int, ...] | None = None, rtol: float | None = None, dtype: str = "float64",
                layout: str | None = None) -> ScaleReport:
    """Measure the scale that ``attn(q, k, v)`` applies to q·k before its softmax.

    ``attn`` takes q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) and returns the output
    (..., L, d_v), or a tuple whose first element is the output.  ``expected(d_k)`` is the scale
    the function should apply (default ``1/√d_k``; μP's would be ``lambda d: 1 / d``).
    ``backend`` is ``"numpy"`` (NumPy arrays of ``dtype``) or ``"torch"`` (tensors of ``dtype``).
    ``rtol``: the relative tolerance of a reading; by default it follows the dtype of the inputs and of
    the output (``RTOL``: 0.02 for float16 and bfloat16).  ``layout``: ``"BHLD"`` (B, h, L, d),
    ``"BLHD"`` (B, L, h, d), or ``None`` to try the first, then the second.
    ``batch_dims=None`` (the default) probes (2, 3, L, d) inputs and again with 5 heads and a batch
    of 4 (a function that takes only 2-D inputs gets 2-D inputs); a tuple probes that layout only.
    Returns a :class:`ScaleReport`; it never raises because of what ``attn`` does (a failing
    function gives the verdict ``"error"``).  The module's docstring lists what the probe assumes.
    """
    if not callable(attn):
        raise TypeError(f"infer_scale needs a function attn(q, k, v); got {type(attn).__name__}")
    check_backend(backend)
    if layout is not None:
        check_layout(layout)
    if dtype not in RTOL or (backend == "numpy" and dtype == "bfloat16"):
        raise ValueError(f"dtype must be one of {tuple(RTOL)} (bfloat16 with backend='torch'); got {dtype!r}")
    if batch_dims is not None and (not isinstance(batch_dims, tuple)
                                   or not all(isinstance(b, int) and b >= 1 for b in batch_dims)):
        raise ValueError(f"batch_dims must be None or a tuple of positive ints such as (1, 1); got {batch_dims!r}")
    if rtol is not None and not (isinstance(rtol, (int, float)) and 0 < rtol < 0.1):
        raise ValueError(f"rtol must be None or a number in (0, 0.1); got {rtol!r}")
    exp_fn = expected if expected is not None else (lambda d: 1.0 / math.sqrt(d))
    if not callable(exp_fn):
        raise TypeError("expected must be a function of d_k, such as lambda d: 1 / d")
    exp_base = float(exp_fn(BASE_D_K))
    exp_wide = float(exp_fn(WIDE_D_K))
    if not (exp_base > 0 and exp_wide > 0):
        raise ValueError(f"expected(d_k) must be positive; got {exp_base!r} at d_k = {BASE_D_K}")
    first = _analyse(attn, exp_fn, backend, batch_dims, rtol, dtype, layout or "BHLD")
    if layout is not None or first.verdict in _CLEAN or first.batch_dims == ():
        return first
    second = _analyse(attn, exp_fn, backend, batch_dims, rtol, dtype, "BLHD")
    if second.verdict in _CLEAN:
        note = tr("(Read in the (B, L, h, d) layout of flash-attn, xformers and JAX: the function takes the "
                  "heads on axis 2.)")
        return ScaleReport(**{**second.__dict__, "message": second.message + " " + note})
    return first
