"""Self-checks for single exercises: the expected answer is computed here, from the exercise's inputs.

A chapter's exercise cell passes the learner's answer and the exercise's *inputs*; the right answer
never appears in any notebook cell (not even a hidden one), so a learner cannot read it off. Each
function returns a :class:`lib.selfcheck.Verdict` and never raises on the learner's answer. Messages
go through :func:`lib.i18n.tr`, so they follow the book's language.

One section per chapter; add a function to your chapter's section, export it in ``__all__``, and test
it in ``tests/test_exercises.py`` against an independent computation.
"""
from __future__ import annotations

import numpy as np

from .i18n import tr
from .selfcheck import Verdict, check_array, check_number

__all__: list[str] = []

# --- chapter 1 -----------------------------------------------------------------------------------


# --- chapter 2 -----------------------------------------------------------------------------------


# --- chapter 3 -----------------------------------------------------------------------------------


# --- chapter 4 -----------------------------------------------------------------------------------


# --- chapter 5 -----------------------------------------------------------------------------------


# --- chapter 6 -----------------------------------------------------------------------------------


# --- chapter 7 -----------------------------------------------------------------------------------


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------
__all__ += ["check_logsumexp"]


def _row_of_numbers(x, what):
    """The exercise's input row as a 1-D float64 array; ValueError/TypeError on bad *inputs*."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"self-check set-up: {what} is not a row of numbers ({exc})") from None
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"self-check set-up: {what} must be a non-empty 1-D row of finite numbers; "
                         f"got shape {a.shape}")
    return a


def check_logsumexp(answer, x, *, block: int = 3) -> Verdict:
    """Exercise 9.4: ``answer`` should be ln Σ_j e^{x_j}, found with the online softmax in blocks.

    The expected value is computed here from ``x`` (two passes, shifted by the maximum). Recognises
    the usual slip of the online version, forgetting to rescale the old sum by e^{m_old - m_new}
    when a block raises the maximum, and the answer m alone (the log of the sum left out).
    """
    x = _row_of_numbers(x, "x")
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"self-check set-up: block must be a positive int; got {block!r}")
    m = float(x.max())
    expected = m + float(np.log(np.exp(x - m).sum()))
    name = tr("log-sum-exp")
    if answer is None or answer is ...:
        return Verdict(False, tr("log-sum-exp: no answer yet. Put your number in my_lse and run the cell "
                                 "again."), "missing")
    verdict = check_number(answer, expected, name=name, rtol=1e-9, atol=1e-9)
    if verdict.ok or not np.isfinite(_float_or_nan(answer)):
        return verdict
    got = _float_or_nan(answer)
    # the slip: the old sum is not rescaled when a block raises the maximum
    m_run, l_run = -np.inf, 0.0
    for j0 in range(0, x.size, int(block)):
        b = x[j0:j0 + int(block)]
        m_new = max(m_run, float(b.max()))
        l_run = l_run + float(np.exp(b - m_new).sum())
        m_run = m_new
    if abs(got - (m_run + np.log(l_run))) < 1e-9 * max(1.0, abs(got)):
        return Verdict(False, tr("log-sum-exp: {got:.6g} is too large. When a block raises the maximum from "
                                 "m_old to m_new, multiply the old l by exp(m_old - m_new) before adding the "
                                 "new terms.", got=got), "no_rescale")
    if abs(got - m) < 1e-9 * max(1.0, abs(m)):
        return Verdict(False, tr("log-sum-exp: {got:.6g} is only the maximum m; add log(l).", got=got), "max_only")
    return Verdict(False, tr("log-sum-exp: you have {got:.6g}; it is not ln of the sum of e^x. Keep m, the "
                             "largest score so far, and l, the sum of exp(x - m) so far; the answer is "
                             "m + log(l).", got=got), None)


def _float_or_nan(answer):
    try:
        a = np.asarray(answer, dtype=np.float64)
        return float(a) if a.shape == () else float("nan")
    except (TypeError, ValueError):
        return float("nan")


# --- chapter 10 ----------------------------------------------------------------------------------
__all__ += ["check_attention_function"]


def check_attention_function(fn, *, expected=None, backend: str = "numpy", batch_dims: tuple = ()) -> Verdict:
    """Exercises 10.x: does the learner's ``fn(q, k, v)`` apply the intended scale?

    Measures the scale with :func:`lib.infer_scale` (probes with known q, k, v) and compares it
    with ``expected(d_k)`` (default 1/√d_k; μP: ``lambda d: 1 / d``). The verdict names the
    mistake the probe recognises (scale after the softmax, scaled twice, from the wrong width, ...).
    Never raises on the learner's function; ``ValueError``/``TypeError`` for bad set-up arguments.
    """
    from .scale_probe import infer_scale  # noqa: PLC0415 - lib.scale_probe imports lib.i18n only

    name = tr("Your attention function")
    if fn is None or fn is ...:
        return Verdict(False, tr("{name}: not defined yet; write it and run the cell again.",
                                 name=name), "missing")
    if not callable(fn):
        return Verdict(False, tr("{name}: expected a function f(q, k, v); got {kind}.", name=name,
                                 kind=type(fn).__name__), "unreadable")
    report = infer_scale(fn, expected=expected, backend=backend, batch_dims=batch_dims)
    return Verdict(report.ok, report.message, None if report.ok else report.verdict)
