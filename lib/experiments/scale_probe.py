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

NumPy functions get NumPy arrays (``backend="numpy"``); PyTorch functions get float64 tensors
(``backend="torch"``).  By default (``batch_dims=None``) the probe gives (B, h, L, d) inputs with
B = 2 and h = 3, and reads the scale again with 5 heads and with a batch of 4: a scale read from
the wrong axis (``x.size(1)`` of a (B, h, L, d) tensor is h) changes with them (verdict
``"batch_axes"``).  A function that takes only 2-D inputs is probed with 2-D inputs (the report's
``batch_dims`` is then ``()``).  An explicit ``batch_dims`` such as ``(1, 1)`` probes that layout only.

The runner and the reading are :mod:`lib.port_check`'s (``call``, ``measure_scale``): this is the
port check's scale reading, with verdicts for the mistakes of the `real-code` chapter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ..infra.i18n import tr
from .port_check import LAYOUTS, accepts_layout, measure_scale
from .port_check import check_backend
from ..feedback.display import Shown

__all__ = ["ScaleReport", "infer_scale"]

#: The probe's reference shapes: key width, value width, sequence length (queries = keys).
BASE_D_K, BASE_D_V, BASE_S = 16, 4, 6
#: The other widths and lengths it tries, one change at a time.
WIDE_D_K, WIDE_D_V, LONG_S = 64, 9, 24
#: Default relative tolerance of the probe's readings: float64 and float32 code read to about 1e-6,
#: float16/bfloat16 code to about 1e-2 (pass ``rtol=0.02`` there); the laws it tells apart differ by 2x.
RTOL = 1e-3
#: Laws the probe names: scale = c · d_k^p.  2/d_k and 1/(2 d_k) are what ``d ** 1 / 2`` gives.
LAWS = {"1/sqrt(d_k)": (-0.5, 1.0), "1/d_k": (-1.0, 1.0), "2/d_k": (-1.0, 2.0), "1/(2d_k)": (-1.0, 0.5),
        "1": (0.0, 1.0)}


@dataclass(frozen=True, repr=False)
class ScaleReport(Shown):
    """What :func:`infer_scale` measured.

    ``verdict`` is ``"ok"`` when the function applies the expected scale, else one of
    ``"after_softmax"`` (the weights do not sum to 1), ``"value_width"`` / ``"sequence_length"``
    (the scale changes with d_v or with the length), ``"double"`` (1/d_k: 1/√d_k applied twice),
    ``"precedence"`` (2/d_k or 1/(2 d_k), as ``d ** 1 / 2`` gives), ``"batch_axes"`` (the scale changes
    with the number of heads or the batch size), ``"missing"`` (no scale), ``"default"``
    (1/√d_k where another scale was expected), ``"custom"`` (anything else) or ``"error"`` (the
    function failed on the probe).  ``scale`` is the scale inside the softmax at ``d_k``;
    ``law`` names how it changes with d_k (``"1/sqrt(d_k)"``, ``"1/d_k"``, ``"2/d_k"``, ``"1"`` or
    ``"other"``); ``weight_sum`` is the sum of one query's weights (1 for a softmax); ``batch_dims``
    is the leading layout probed (``()``: 2-D inputs).
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


def infer_scale(attn: Callable, *, expected: Callable[[int], float] | None = None, backend: str = "numpy",
                batch_dims: tuple[int, ...] | None = None, rtol: float = RTOL) -> ScaleReport:
    """Measure the scale that ``attn(q, k, v)`` applies to q·k before its softmax.

    ``attn`` takes q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) and returns the output
    (..., L, d_v), or a tuple whose first element is the output.  ``expected(d_k)`` is the scale
    the function should apply (default ``1/√d_k``; μP's would be ``lambda d: 1 / d``).
    ``backend`` is ``"numpy"`` (NumPy float64 arrays) or ``"torch"`` (float64 tensors).
    ``rtol`` is the relative tolerance of a reading (0.02 for code that computes in float16).
    ``batch_dims=None`` (the default) probes (2, 3, L, d) inputs and again with 5 heads and a batch
    of 4 (a function that takes only 2-D inputs gets 2-D inputs); a tuple probes that layout only.
    Returns a :class:`ScaleReport`; it never raises because of what ``attn`` does (a failing
    function gives the verdict ``"error"``).  The `real-code` chapter runs it on correct and buggy functions.
    """
    if not callable(attn):
        raise TypeError(f"infer_scale needs a function attn(q, k, v); got {type(attn).__name__}")
    check_backend(backend)
    if batch_dims is not None and (not isinstance(batch_dims, tuple)
                                   or not all(isinstance(b, int) and b >= 1 for b in batch_dims)):
        raise ValueError(f"batch_dims must be None or a tuple of positive ints such as (1, 1); got {batch_dims!r}")
    if not (isinstance(rtol, (int, float)) and 0 < rtol < 0.1):
        raise ValueError(f"rtol must be a number in (0, 0.1); got {rtol!r}")
    exp_fn = expected if expected is not None else (lambda d: 1.0 / math.sqrt(d))
    if not callable(exp_fn):
        raise TypeError("expected must be a function of d_k, such as lambda d: 1 / d")
    exp_base = float(exp_fn(BASE_D_K))
    exp_wide = float(exp_fn(WIDE_D_K))
    if not (exp_base > 0 and exp_wide > 0):
        raise ValueError(f"expected(d_k) must be positive; got {exp_base!r} at d_k = {BASE_D_K}")
    shapes = {"base": (BASE_D_K, BASE_D_V, BASE_S), "wide d_k": (WIDE_D_K, BASE_D_V, BASE_S),
              "wide d_v": (BASE_D_K, WIDE_D_V, BASE_S), "long": (BASE_D_K, BASE_D_V, LONG_S)}
    layouts = {"base": batch_dims}
    if batch_dims is None:  # batch and heads > 1, then each changed (the x.size(1) bug of the `real-code` chapter)
        layouts = dict(LAYOUTS) if accepts_layout(attn, backend) else {"base": ()}
    base_dims = layouts["base"]
    scales, sums = {}, {}
    try:
        for name, (dk, dv, S) in shapes.items():
            x = 1.0 / float(exp_fn(dk))  # expected scale · x = 1: a softmax far from saturation
            scales[name], sums[name] = measure_scale(attn, dk, dv, S, x, base_dims, backend)
        for name, dims in layouts.items():
            if name != "base":
                scales[name], _ = measure_scale(attn, BASE_D_K, BASE_D_V, BASE_S, 1.0 / exp_base, dims, backend)
    except Exception as exc:  # noqa: BLE001 - any failure of the probed function becomes a verdict
        msg = tr("The function failed on the probe inputs ({kind}: {err})", kind=type(exc).__name__, err=exc)
        return ScaleReport("error", float("nan"), exp_base, "other", float("nan"), float("nan"),
                           BASE_D_K, msg, scales, base_dims)
    tau, total = scales["base"], sums["base"]
    p_dk = _exponent(tau, scales["wide d_k"], BASE_D_K, WIDE_D_K)
    law = _law(p_dk, tau, BASE_D_K, rtol)
    matches = not _differ(tau, exp_base, rtol) and not _differ(scales["wide d_k"], exp_wide, rtol)
    fields = dict(tau=tau, d=BASE_D_K, exp=exp_base, law=law, p=p_dk, total=total)
    if abs(total - 1) > rtol:
        verdict = "after_softmax"
        msg = tr("The weights of a query sum to {total:.4g}, not 1: something multiplies the weights after "
                 "the softmax (a scale applied after it?). Inside the softmax the scale is {tau:.4g}.", **fields)
    elif any(_differ(tau, scales[n], rtol) for n in layouts if n != "base"):
        verdict = "batch_axes"
        other = next(n for n in layouts if n != "base" and _differ(tau, scales[n], rtol))
        msg = tr("The scale changes with the number of heads or the batch size ({a:.4g} with (batch, heads) = "
                 "{da}, {b:.4g} with {db}): it is read from the wrong axis, such as x.size(1) of a (B, h, L, d) "
                 "tensor (d_k is the last axis), or the function adds a bias that depends on the head, such "
                 "as ALiBi, which this probe cannot measure: read the code.", a=tau, da=layouts["base"],
                 b=scales[other], db=layouts[other])
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
    return ScaleReport(verdict, tau, exp_base, law, p_dk, total, BASE_D_K, msg, dict(scales), base_dims)
