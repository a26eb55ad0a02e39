"""Self-checks for exercises: the learner's answer in, a clear verdict with a hint out.

They never raise: a missing answer, a wrong shape or a non-number gets a
sentence, not a traceback.  Chapters call them in exercise cells::

    my_scores = None          # your answer here
    lib.check_array(my_scores, expected, name="scaled scores", hint="divide by √d_k, not d_k")

(an exercise whose expected value must not appear in the notebook gets its own check in
:mod:`lib.exercises`, which computes the expected value from the exercise's inputs and calls these).

The `practice` chapter (practice by hand) uses four specific checks that know the usual mistakes and name
them in the verdict (``Verdict.mistake`` holds a short code, e.g. ``"unscaled"``)::

    lib.check_dot(answer, q, k)                 # raw q·k or Q Kᵀ
    lib.check_scaled_scores(answer, q, k)       # q·k / √d_k
    lib.check_softmax(answer, scores)           # softmax along the last axis
    lib.check_attention_weights(answer, q, k)   # softmax(q kᵀ / √d_k)

They accept numbers, lists, NumPy arrays and torch tensors, and pass answers rounded to three
decimals (``HAND_RTOL``, ``HAND_ATOL``).

Every check has the same three outcomes besides "right": a recognised mistake, **nearly right**
(``mistake == "nearly_right"``: the answer is right when rounded to fewer decimals than the check
needs, e.g. 3.54 for 3.5355 at three decimals; the verdict says to how many decimals it is right and
how many to give), and plainly wrong (``"wrong_value"``, ``"wrong_shape"``, ...).  A wrong verdict
says where the answer is off and in which direction, but never prints the expected value, so that
running the check cannot replace working the exercise.  Every message goes through
:func:`lib.i18n.tr`, so it follows the book's language.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import progress as _progress
from ..infra._backend import is_torch
from .display import MARK_NOT, MARK_OK, Shown, md_escape as _md_escape  # noqa: F401
from ..formula.attention import softmax
from ..infra.i18n import tr

__all__ = ["Verdict", "check_array", "check_number", "check_dot", "check_scaled_scores", "check_softmax",
           "check_attention_weights"]


@dataclass(frozen=True, repr=False)
class Verdict(Shown):
    """The result of a self-check: ``ok``, a message for the learner, and the mistake recognised.

    ``mistake`` is ``None`` for a right answer or an unrecognised wrong one from :func:`check_array`;
    ``"nearly_right"`` for an answer that is right to fewer decimals than the check needs (every
    check); the chapter-4 checks also name specific mistakes, such as ``"unscaled"`` or
    ``"wrong_axis"``.  In a notebook the verdict shows as a line of rich text (HTML, or Markdown
    where HTML is not rendered), with the same words in both.
    """

    ok: bool
    message: str
    mistake: str | None = None

    def _label(self):
        return tr("Correct.") if self.ok else tr("Not yet.")


# ---------------------------------------------------------------------------
# Reading answers and writing numbers
# ---------------------------------------------------------------------------

def as_array(x):
    if is_torch(x):
        x = x.detach().cpu()
        if x.is_floating_point():
            x = x.double()          # float16/bfloat16 tensors have no NumPy equivalent for .numpy()
        x = x.numpy()
    return np.asarray(x, dtype=float)


def _is_whole(v) -> bool:
    return bool(np.isfinite(v)) and float(v).is_integer() and abs(float(v)) < 1e15


def _num(v, digits: int = 4) -> str:
    """One number for a message: whole numbers as integers with thousands separators (2,362,368),
    others with ``digits`` significant digits (3.536, 4.54e-05)."""
    v = float(v)
    if _is_whole(v):
        return f"{int(v):,d}"
    return f"{v:.{digits}g}"


def _fmt(x, digits: int = 4):
    """Numbers for a message, on one line: 5, 2,362,368, 3.536, [7, -1], [0.6652, 0.2447, 0.09].

    Inside a list, whole numbers have no thousands separator (the comma separates the entries).
    """
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        return _num(a, digits)
    return np.array2string(a, separator=", ", max_line_width=10_000,
                           formatter={"float_kind": lambda v: (f"{int(v):d}" if _is_whole(v)
                                                               else f"{v:.{digits}g}")}).replace("\n", "")


def _join(*parts) -> str:
    return " ".join(p for p in parts if p)


def _hint(hint: str) -> str:
    return tr("Hint: {hint}", hint=hint) if hint else ""


def _tolerance(e, rtol, atol):
    return atol + rtol * np.abs(e)


def _decimals_needed(e, rtol, atol) -> int:
    """How many decimals an answer needs so that rounding alone always passes the check."""
    tol = float(np.min(_tolerance(e, rtol, atol))) if np.size(e) else atol
    if tol <= 0:
        return 16
    return max(0, math.ceil(-math.log10(2 * tol) - 1e-9))


def _decimals_given(a) -> int:
    """How many decimals the answer was written with: 3.54 -> 2, [0.67, 0.2, 0.09] -> 2, 5 -> 0.

    A value computed at full precision counts as 16 (never "rounded too early").  The tolerance of
    1e-7 relative lets a float32 tensor of typed numbers (0.665 -> 0.66500002) count as written.
    """
    for k in range(16):
        if np.all(_same(a, np.round(a, k))):
            return k
    return 16


def _same(a, b):
    """Entrywise: ``a`` is the decimal number ``b`` (up to float32 storage of typed numbers)."""
    return np.abs(a - b) <= 1e-7 * np.maximum(1.0, np.abs(a))


def _nearly_right(a, e, *, name, rtol, atol):
    """A "nearly right" Verdict if ``a`` was rounded to fewer decimals than the check needs and is
    right to the decimals it has (or has the right digits, cut off instead of rounded), else None.

    "Right to d decimals" is the usual |a − e| ≤ ½·10⁻ᵈ: the answer agrees with the expected value
    rounded to d decimals (3.54 for 3.5355 is right to 2 decimals; 3.53 has its digits cut off
    instead of rounded).  A value computed at full precision is never "nearly right",
    so a measured value outside a statistical tolerance is not sent to look for more decimals.
    """
    if a.shape != e.shape or not np.all(np.isfinite(a)) or not a.size:
        return None
    need = _decimals_needed(e, rtol, atol)
    d = _decimals_given(a)
    if d >= need:
        return None
    diff = float(np.max(np.abs(a - e)))
    unit = 10.0 ** -d
    one = a.size == 1
    value = _fmt(a.reshape(())) if one else ""
    if diff <= 0.5 * unit * (1 + 1e-9):
        if d == 0:
            msg = (tr("{name} = {value} is right when rounded to a whole number.", name=name, value=value)
                   if one else tr("{name}: every entry is right when rounded to a whole number.", name=name))
        elif d == 1:
            msg = (tr("{name} = {value} is right to 1 decimal.", name=name, value=value)
                   if one else tr("{name}: every entry is right to 1 decimal.", name=name))
        else:
            msg = (tr("{name} = {value} is right to {d} decimals.", name=name, value=value, d=d)
                   if one else tr("{name}: every entry is right to {d} decimals.", name=name, d=d))
        advice = tr("Give at least {need} decimals: keep more digits in the intermediate steps and round "
                    "only at the end.", need=need)
    elif d >= 1 and np.all(_same(a, np.round(e, d)) | _same(a, np.trunc(e * 10.0 ** d) / 10.0 ** d)):
        msg = (tr("{name} = {value} looks like the right value with its digits cut off instead of "
                  "rounded.", name=name, value=value) if one else
               tr("{name}: some entries look like the right values with their digits cut off instead of "
                  "rounded.", name=name))
        advice = tr("Give at least {need} decimals, rounded: the last digit goes up by one when the next "
                    "digit is 5 or more.", need=need)
    else:
        return None
    return Verdict(False, _join(msg, advice), "nearly_right")


def _largest_difference(a, e, *, name, digits):
    """The wrong-value sentence: where the answer is furthest off and in which direction.

    It names the learner's value, never the expected one.
    """
    worst = np.unravel_index(np.argmax(np.abs(a - e)), a.shape) if a.ndim else ()
    got, want = (float(a[worst]), float(e[worst])) if a.ndim else (float(a), float(e))
    value = _num(got, digits)
    if a.ndim:
        where = str(tuple(int(i) for i in worst))
        if got > want:
            return tr("{name}: not yet. The largest difference is at index {where}: you have {value}, "
                      "which is too large.", name=name, where=where, value=value)
        return tr("{name}: not yet. The largest difference is at index {where}: you have {value}, "
                  "which is too small.", name=name, where=where, value=value)
    if got > want:
        return tr("{name}: not yet. You have {value}, which is too large.", name=name, value=value)
    return tr("{name}: not yet. You have {value}, which is too small.", name=name, value=value)


# ---------------------------------------------------------------------------
# General checks: an array or a single number
# ---------------------------------------------------------------------------

def check_array(answer, expected, *, name: str | None = None, rtol: float = 1e-6, atol: float = 1e-9,
                hint: str = "") -> Verdict:
    """Compare an array-like answer with the expected one; explain any difference.

    Passes if ``np.allclose(answer, expected, rtol, atol)``.  A wrong answer gets the reason: no
    answer, unreadable, wrong shape (a transpose?), NaN, nearly right (right to fewer decimals than
    ``rtol``/``atol`` need; ``mistake == "nearly_right"``), off by a factor of √2 or 2, or where the
    largest difference is.  ``name`` defaults to "your answer" in the book's language.
    """
    name = name or tr("your answer")
    a, unread = read_answer(answer, name)
    if unread is not None:
        return unread
    e = as_array(expected)
    if a.shape != e.shape:
        if a.size == e.size:
            return Verdict(False, tr("{name}: the numbers may be right but the shape is {shape}; expected "
                                     "{expected}. Check rows versus columns (a transpose?).",
                                     name=name, shape=a.shape, expected=e.shape))
        return Verdict(False, _join(tr("{name}: shape {shape}, expected {expected}.",
                                       name=name, shape=a.shape, expected=e.shape),
                                    hint or tr("Check which dimensions the product runs over.")))
    if not np.all(np.isfinite(a)):
        return Verdict(False, tr("{name}: contains NaN or infinity. If you used `exp`, subtract the "
                                 "maximum first.", name=name))
    if np.allclose(a, e, rtol=rtol, atol=atol):
        if a.size == 1:
            return Verdict(True, tr("{name} = {value} matches.", name=name, value=_fmt(a.reshape(()), 6)))
        return Verdict(True, tr("{name} matches.", name=name))
    nearly = _nearly_right(a, e, name=name, rtol=rtol, atol=atol)
    if nearly is not None:
        return nearly
    msg = _largest_difference(a, e, name=name, digits=6)
    worst = np.unravel_index(np.argmax(np.abs(a - e)), a.shape) if a.ndim else ()
    got, want = (a[worst], e[worst]) if a.ndim else (a, e)
    ratio = float(got) / float(want) if float(want) != 0 else np.nan
    factor = ""
    for label, r in (("√2", 2 ** 0.5), ("2", 2.0)):
        if np.isfinite(ratio) and (np.isclose(ratio, r, rtol=1e-3) or np.isclose(ratio, 1 / r, rtol=1e-3)):
            factor = tr("Your value is off by a factor of {factor}: check the scale.", factor=label)
            break
    return Verdict(False, _join(msg, factor, _hint(hint)))


def check_number(answer, expected, *, name: str | None = None, rtol: float = 1e-6, atol: float = 1e-9,
                 hint: str = "") -> Verdict:
    """Like :func:`check_array` for a single number.

    Whole numbers (a parameter count, a number of steps) show as integers in the verdict:
    ``2,359,296``, never ``2.3593e+06``.
    """
    name = name or tr("your answer")
    if answer is not None and answer is not ...:
        try:
            shape = as_array(answer).shape
        except Exception:  # noqa: BLE001 - check_array below explains unreadable answers
            shape = ()
        if shape != ():
            return Verdict(False, tr("{name}: expected a single number; got something of shape {shape}.",
                                     name=name, shape=shape))
    return check_array(answer, expected, name=name, rtol=rtol, atol=atol, hint=hint)


# ---------------------------------------------------------------------------
# Specific self-checks for the `practice` chapter (practice by hand): dot products, scaled
# scores, softmax and attention weights.  Each one knows the usual mistakes and
# names the one it recognises.  None of them raises on the learner's answer.
# ---------------------------------------------------------------------------

#: Tolerances of the hand-computation checks: answers rounded to three decimals pass.
HAND_RTOL = 1e-3
HAND_ATOL = 6e-4


def read_answer(answer, name, *, finite=False):
    """The one reader of a learner's answer: ``(float array, None)`` if it reads as numbers, else
    ``(None, Verdict)`` with a sentence saying what to type; never raises. ``finite=True`` also turns
    NaN and infinity away. Every self-check in lib reads its answers through it."""
    if answer is None or answer is ...:
        return None, Verdict(False, tr("{name}: no answer yet. Replace `None` with your result and run the "
                                       "cell again.", name=name), "missing")
    if isinstance(answer, (str, bytes)):
        return None, Verdict(False, tr("{name}: your answer is text; give numbers (without quotes).",
                                       name=name), "unreadable")
    try:
        a = as_array(answer)
    except Exception as exc:  # noqa: BLE001 - anything a learner types must give a sentence
        if "inhomogeneous" in str(exc):
            return None, Verdict(False, tr("{name}: the rows of your answer have different lengths; every "
                                           "row needs the same number of entries.", name=name), "unreadable")
        return None, Verdict(False, tr("{name}: could not read your answer as numbers ({error}). Type "
                                       "numbers, a list of numbers, or a NumPy array.",
                                       name=name, error=f"{type(exc).__name__}: {exc}"), "unreadable")
    if finite and not np.all(np.isfinite(a)):
        return None, Verdict(False, tr("{name}: contains NaN or infinity.", name=name), "not_finite")
    return a, None


def read_scalar(answer, name, *, integer=False):
    """:func:`read_answer` for an answer that is one finite number: ``(float, None)``, else ``(None,
    Verdict)``; the verdict for an array names its shape (``wrong_shape``). ``integer=True`` words it
    for a whole number (a step, a count); whether the number is whole is the caller's check."""
    a, bad = read_answer(answer, name, finite=True)
    if bad is not None:
        return None, bad
    if a.shape != ():
        message = (tr("{name}: expected a single integer; got something of shape {shape}.", name=name, shape=a.shape)
                   if integer else
                   tr("{name}: expected a single number; got something of shape {shape}.", name=name, shape=a.shape))
        return None, Verdict(False, message, "wrong_shape")
    return float(a), None



def _reference(x, what):
    """The chapter's own inputs (not the learner's): must be real numbers, else ValueError."""
    try:
        a = as_array(x)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"self-check set-up: {what} is not an array of numbers ({exc})") from exc
    if not np.all(np.isfinite(a)):
        raise ValueError(f"self-check set-up: {what} contains NaN or infinity")
    return a


def _close(a, e, rtol, atol):
    return a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol))


def _diagnose(answer, expected, mistakes, *, name, rtol, atol, hint, overflow_risk=False):
    """Compare ``answer`` with ``expected`` and, if it differs, look for a known mistake.

    ``mistakes`` is a list of ``(code, wrong_array, explanation)``: what the answer would be if the
    learner made that mistake.  The right answer is tested first, so a mistake that happens to give the
    right numbers (d_k = 1, a symmetric matrix) never turns a right answer into a wrong one.  Then the
    known mistakes, then "nearly right" (right to fewer decimals), then shape and value.
    """
    a, bad = read_answer(answer, name)
    if bad is not None:
        return bad
    e = np.asarray(expected, dtype=float)
    if e.ndim == 0 and a.size == 1:          # [4.0] or np.array([[4.0]]) for a single number is fine
        a = a.reshape(())
    if a.shape == e.shape and not np.all(np.isfinite(a)):
        if overflow_risk:
            return Verdict(False, tr("{name}: contains NaN or infinity. `exp` of a large score overflows "
                                     "(e^710 is already too big for float64, e^89 for float32). Subtract "
                                     "the row's largest score first: softmax(z) = softmax(z − max z).",
                                     name=name), "overflow")
        return Verdict(False, tr("{name}: contains NaN or infinity. Check for a division by zero or an "
                                 "`exp` of a very large number.", name=name), "not_finite")
    if _close(a, e, rtol, atol):
        if a.size <= 6:
            return Verdict(True, tr("{name} = {value} matches (to about three decimals).",
                                    name=name, value=_fmt(a)), None)
        return Verdict(True, tr("{name} matches (to about three decimals).", name=name), None)
    for code, wrong, why in mistakes:
        wrong = np.asarray(wrong, dtype=float)
        a2 = a.reshape(()) if wrong.ndim == 0 and a.size == 1 else a
        if np.all(np.isfinite(wrong)) and _close(a2, wrong, rtol, atol):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    nearly = _nearly_right(a, e, name=name, rtol=rtol, atol=atol)
    if nearly is not None:
        return nearly
    if a.shape != e.shape:
        msg = tr("{name}: shape {shape}, expected {expected}.", name=name, shape=a.shape, expected=e.shape)
        if a.size == e.size and a.ndim == 2 and a.shape == e.shape[::-1]:
            return Verdict(False, _join(msg, tr("The numbers may be right but rows and columns are swapped "
                                                "(a transpose?)."), _hint(hint)), "transposed")
        return Verdict(False, _join(msg, _hint(hint)), "wrong_shape")
    return Verdict(False, _join(_largest_difference(a, e, name=name, digits=4), _hint(hint)), "wrong_value")


def _scores_setup(q, k):
    qa, ka = _reference(q, "q"), _reference(k, "k")
    if qa.ndim not in (1, 2) or ka.ndim not in (1, 2):
        raise ValueError(f"self-check set-up: q and k must be vectors or matrices; got shapes {qa.shape}, "
                         f"{ka.shape}")
    if qa.shape[-1] != ka.shape[-1]:
        raise ValueError(f"self-check set-up: q has {qa.shape[-1]} components and k has {ka.shape[-1]}; "
                         "a dot product needs the same d_k")
    raw = qa @ ka.T if ka.ndim == 2 else qa @ ka
    return qa, ka, np.asarray(raw, dtype=float), qa.shape[-1]


def _score_mistakes(qa, ka, raw, d_k, *, scaled):
    """Wrong answers a learner typically gives for raw (scaled=False) or scaled scores."""
    r = np.sqrt(d_k)
    m = []
    if scaled:
        m.append(("unscaled", raw, tr("these are the raw dot products: you forgot to divide by "
                                      "√d_k = √{d_k} ≈ {r:.3f}.", d_k=d_k, r=r)))
        m.append(("divided_by_dk", raw / d_k,
                  tr("you divided by d_k = {d_k}; divide by its square root, √d_k ≈ {r:.3f}. (Dividing by "
                     "d_k shrinks the scores too much: their variance becomes 1/d_k, not 1.)", d_k=d_k, r=r)))
        m.append(("multiplied_by_sqrt_dk", raw * r, tr("you multiplied by √d_k ≈ {r:.3f}; divide by it.",
                                                       r=r)))
        if ka.ndim == 2 and ka.shape[0] not in (d_k, 1):
            n = ka.shape[0]
            m.append(("divided_by_sqrt_n_keys", raw / np.sqrt(n),
                      tr("you divided by √{n}, the square root of the number of keys; d_k is the length of "
                         "each vector, here {d_k}.", n=n, d_k=d_k)))
    else:
        m.append(("scaled", raw / r, tr("you divided by √d_k ≈ {r:.3f}; this question asks for the raw, "
                                        "unscaled dot product q·k.", r=r)))
        m.append(("divided_by_dk", raw / d_k, tr("you divided by d_k = {d_k}; this question asks for the "
                                                 "raw dot product q·k.", d_k=d_k)))
    target = raw / r if scaled else raw
    if qa.ndim == 1 and ka.ndim == 1:
        m.append(("not_summed", qa * ka / (r if scaled else 1.0),
                  tr("you multiplied the components pairwise but did not add the products up: "
                     "q·k = q₁k₁ + q₂k₂ + … is one number.")))
    elif qa.ndim == 2 and ka.ndim == 2:
        if target.shape[0] == target.shape[1]:
            m.append(("transposed", target.T, tr("rows and columns are swapped: row i should hold query i's "
                                                 "scores against every key (Q Kᵀ, not K Qᵀ).")))
        if qa.shape == ka.shape:
            m.append(("not_summed", qa * ka / (r if scaled else 1.0),
                      tr("you multiplied Q and K entry by entry; the scores are the matrix product Q Kᵀ "
                         "(each entry a dot product of a query row with a key row).")))
    elif ka.ndim == 2 and qa.ndim == 1:
        m.append(("not_summed", qa[None, :] * ka / (r if scaled else 1.0),
                  tr("you multiplied the components pairwise but did not add them up: each key gives one "
                     "number, q·kⱼ = Σᵢ qᵢ kⱼᵢ.")))
    return target, m


def check_dot(answer, q, k, *, name: str | None = None, hint: str = "") -> Verdict:
    """Check the learner's **unscaled** dot product(s) of ``q`` and ``k`` (chapter `practice`).

    ``q`` is a vector ``(d_k,)`` or a matrix ``(L, d_k)``; ``k`` a vector ``(d_k,)`` or a matrix
    ``(S, d_k)`` of keys, one per row.  Expected: ``q @ k`` (a number), ``q @ k.T`` (``(S,)``) or
    ``Q @ K.T`` (``(L, S)``).  Recognised mistakes (``Verdict.mistake``): ``scaled``,
    ``divided_by_dk``, ``not_summed``, ``transposed``, ``nearly_right``, ``wrong_shape``.  Answers
    rounded to three decimals pass.  Never raises on the answer; raises ``ValueError`` if ``q``/``k``
    do not fit.
    """
    qa, ka, raw, d_k = _scores_setup(q, k)
    target, mistakes = _score_mistakes(qa, ka, raw, d_k, scaled=False)
    return _diagnose(answer, target, mistakes, name=name or "q·k", rtol=HAND_RTOL, atol=HAND_ATOL,
                     hint=hint or tr("q·k = Σᵢ qᵢ kᵢ: multiply matching components and add."))


def check_scaled_scores(answer, q, k, *, name: str | None = None, hint: str = "") -> Verdict:
    """Check the learner's **scaled** scores ``q·k/√d_k`` (chapter `practice`).

    Shapes as in :func:`check_dot`.  Recognised mistakes: ``unscaled`` (forgot the scale),
    ``divided_by_dk`` (divided by d_k instead of √d_k), ``multiplied_by_sqrt_dk``,
    ``divided_by_sqrt_n_keys``, ``not_summed``, ``transposed``, ``nearly_right``, ``wrong_shape``.
    """
    qa, ka, raw, d_k = _scores_setup(q, k)
    target, mistakes = _score_mistakes(qa, ka, raw, d_k, scaled=True)
    return _diagnose(answer, target, mistakes, name=name or tr("scaled scores"), rtol=HAND_RTOL,
                     atol=HAND_ATOL,
                     hint=hint or tr("compute q·k, then divide by √d_k = √{d_k} ≈ {r:.3f}.",
                                     d_k=d_k, r=np.sqrt(d_k)))


def _softmax_mistakes(s, axis):
    """Wrong answers for softmax(s, axis) that a learner typically gives."""

    m = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ex = np.exp(s - s.max())  # overall shift keeps the ratios; finite for the exercises' numbers
        if s.ndim == 2:
            other = 0 if axis in (-1, 1) else 1
            if other == 0:
                why = tr("you normalised along the wrong axis: each column of your answer sums to 1. "
                         "Softmax runs along each query's row of scores (axis={axis}), so that every row "
                         "sums to 1.", axis=axis)
            else:
                why = tr("you normalised along the wrong axis: each row of your answer sums to 1. This "
                         "softmax runs along axis={axis}.", axis=axis)
            m.append(("wrong_axis", softmax(s, axis=other), why))
            m.append(("normalised_whole_matrix", ex / ex.sum(),
                      tr("you divided by the sum over the whole matrix; divide each row by its own sum, so "
                         "that every row sums to 1.")))
        m.append(("not_normalised", np.exp(s),
                  tr("these are e^z, not yet divided by their sum; the weights must sum to 1.")))
        m.append(("not_normalised", np.exp(s - s.max(axis=axis, keepdims=True)),
                  tr("these are e^(z − max z), not yet divided by their sum; the weights must sum to 1.")))
        lin = s / s.sum(axis=axis, keepdims=True)
        m.append(("no_exp", lin, tr("you divided the scores by their sum without taking e^z first. Softmax "
                                    "is e^(zⱼ) / Σₘ e^(zₘ): exponentiate, then normalise.")))
        m.append(("no_softmax", s, tr("these are the scores themselves; apply the softmax to them.")))
    return m


def _rows_hint(a, axis):
    try:
        sums = a.sum(axis=axis)
    except Exception:  # noqa: BLE001
        return ""
    if np.all(np.isfinite(sums)) and not np.allclose(sums, 1, atol=2e-3):
        return tr("Your weights sum to {sums}, not 1.", sums=_fmt(sums))
    return ""


def check_softmax(answer, scores, *, axis: int = -1, name: str | None = None, hint: str = "") -> Verdict:
    """Check the learner's softmax of ``scores`` along ``axis`` (chapter `practice`).

    ``scores`` is a vector ``(S,)`` or a matrix ``(L, S)``; the answer has the same shape.  Recognised
    mistakes: ``overflow`` (NaN/inf from ``exp`` of large scores: subtract the maximum),
    ``wrong_axis``, ``normalised_whole_matrix``, ``not_normalised`` (forgot to divide by the sum),
    ``no_exp``, ``no_softmax``, ``nearly_right``, ``transposed``, ``wrong_shape``; any other wrong
    answer whose weights do not sum to 1 is told so.  Never raises on the answer.
    """

    s = _reference(scores, "scores")
    if s.ndim not in (1, 2) or s.shape[axis] == 0:
        raise ValueError(f"self-check set-up: scores must be a non-empty vector or matrix; got {s.shape}")
    expected = softmax(s, axis=axis)
    v = _diagnose(answer, expected, _softmax_mistakes(s, axis), name=name or tr("softmax weights"),
                  rtol=HAND_RTOL, atol=HAND_ATOL,
                  hint=hint or tr("e^(zⱼ) / Σₘ e^(zₘ); subtract the largest score first."),
                  overflow_risk=bool(np.max(np.abs(s)) > 80))
    if v.mistake == "wrong_value":
        return Verdict(False, _join(v.message, _rows_hint(as_array(answer), axis)), "wrong_value")
    return v


def check_attention_weights(answer, q, k, *, name: str | None = None, hint: str = "") -> Verdict:
    """Check the learner's attention weights ``softmax(q kᵀ/√d_k)`` along the keys (chapter `practice`).

    ``q`` is ``(d_k,)`` or ``(L, d_k)``, ``k`` is ``(S, d_k)``; the answer is ``(S,)`` or ``(L, S)``.
    Recognised mistakes: ``unscaled`` (softmax of the raw scores), ``divided_by_dk``, ``wrong_axis``,
    ``normalised_whole_matrix``, ``not_normalised``, ``no_softmax`` (the scores themselves),
    ``overflow``, ``nearly_right``, ``transposed``, ``wrong_shape``.
    """

    qa, ka, raw, d_k = _scores_setup(q, k)
    if ka.ndim != 2:
        raise ValueError(f"self-check set-up: k must be a matrix of keys (S, d_k); got shape {ka.shape}")
    r = np.sqrt(d_k)
    s = raw / r
    expected = softmax(s, axis=-1)
    mistakes = [
        ("unscaled", softmax(raw, axis=-1),
         tr("this is the softmax of the raw scores q·k: divide them by √d_k ≈ {r:.3f} before the "
            "softmax.", r=r)),
        ("divided_by_dk", softmax(raw / d_k, axis=-1),
         tr("you divided the scores by d_k = {d_k}; divide by √d_k ≈ {r:.3f}. Dividing by d_k flattens "
            "the weights towards uniform.", d_k=d_k, r=r)),
    ]
    mistakes += [(c, w, why) for c, w, why in _softmax_mistakes(s, -1) if c != "no_exp"]
    mistakes.append(("no_softmax", raw, tr("these are the raw scores q·k; scale them by 1/√d_k and apply "
                                           "the softmax along each row.")))
    v = _diagnose(answer, expected, mistakes, name=name or tr("attention weights"), rtol=HAND_RTOL,
                  atol=HAND_ATOL,
                  hint=hint or tr("scores q·k, divide by √d_k ≈ {r:.3f}, then softmax along the keys.",
                                  r=r),
                  overflow_risk=bool(np.max(np.abs(raw)) > 80))
    if v.mistake == "wrong_value":
        return Verdict(False, _join(v.message, _rows_hint(as_array(answer), -1)), "wrong_value")
    return v


# Every public check tags its verdict with its name, so that an opt-in record (lib.progress) knows
# which check a shown verdict came from.
for _n in [n for n in __all__ if n.startswith("check_")]:
    globals()[_n] = _progress.recorded(globals()[_n])
del _n
