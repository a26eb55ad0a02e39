"""Self-checks for exercises: the learner's answer in, a clear verdict with a hint out.

They never raise: a missing answer, a wrong shape or a non-number gets a
sentence, not a traceback.  Chapters call them in exercise cells::

    my_scores = None          # your answer here
    lib.check_array(my_scores, expected, name="scaled scores", hint="divide by √d_k, not d_k")

Chapter 04 (practice by hand) uses four specific checks that know the usual mistakes and name
them in the verdict (``Verdict.mistake`` holds a short code, e.g. ``"unscaled"``)::

    lib.check_dot(answer, q, k)                 # raw q·k or Q Kᵀ
    lib.check_scaled_scores(answer, q, k)       # q·k / √d_k
    lib.check_softmax(answer, scores)           # softmax along the last axis
    lib.check_attention_weights(answer, q, k)   # softmax(q kᵀ / √d_k)

They accept numbers, lists, NumPy arrays and torch tensors, and pass answers rounded to three
decimals (``HAND_RTOL``, ``HAND_ATOL``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._backend import is_torch

__all__ = ["Verdict", "check_array", "check_number", "check_dot", "check_scaled_scores", "check_softmax",
           "check_attention_weights"]


@dataclass(frozen=True)
class Verdict:
    """The result of a self-check: ``ok``, a message for the learner, and the mistake recognised.

    ``mistake`` is ``None`` for a right answer or an unrecognised wrong one from :func:`check_array`;
    the chapter-08 checks set it to a short code such as ``"unscaled"`` or ``"wrong_axis"``.
    """

    ok: bool
    message: str
    mistake: str | None = None

    def __bool__(self):
        return self.ok

    def __str__(self):
        return ("✅ " if self.ok else "❌ ") + self.message

    __repr__ = __str__

    def _repr_markdown_(self):
        return ("**✅ Correct.** " if self.ok else "**❌ Not yet.** ") + self.message


def _as_array(x):
    if is_torch(x):
        x = x.detach().cpu()
        if x.is_floating_point():
            x = x.double()          # float16/bfloat16 tensors have no NumPy equivalent for .numpy()
        x = x.numpy()
    return np.asarray(x, dtype=float)


def check_array(answer, expected, *, name: str = "your answer", rtol: float = 1e-6, atol: float = 1e-9,
                hint: str = "") -> Verdict:
    """Compare an array-like answer with the expected one; explain any difference."""
    if answer is None or answer is ...:
        return Verdict(False, f"{name}: no answer yet. Replace `None` with your result and run the cell again.")
    try:
        a = _as_array(answer)
    except Exception as exc:  # noqa: BLE001 - anything a learner types must give a sentence
        return Verdict(False, f"{name}: could not read your answer as numbers ({exc}).")
    e = _as_array(expected)
    if a.shape != e.shape:
        if a.size == e.size:
            return Verdict(False, f"{name}: the numbers may be right but the shape is {a.shape}; "
                                  f"expected {e.shape}. Check rows versus columns (a transpose?).")
        return Verdict(False, f"{name}: shape {a.shape}, expected {e.shape}. "
                              + (hint or "Check which dimensions the product runs over."))
    if not np.all(np.isfinite(a)):
        return Verdict(False, f"{name}: contains NaN or infinity. "
                              "If you used exp, subtract the maximum first.")
    if np.allclose(a, e, rtol=rtol, atol=atol):
        return Verdict(True, f"{name} matches" + (f" (to {rtol:g} relative)." if a.size else "."))
    worst = np.unravel_index(np.argmax(np.abs(a - e)), a.shape) if a.ndim else ()
    at = f" at index {tuple(int(i) for i in worst)}" if a.ndim else ""
    got, want = (a[worst], e[worst]) if a.ndim else (a, e)
    msg = f"{name}: the largest difference is{at}: you have {float(got):.6g}, expected {float(want):.6g}."
    ratio = float(got) / float(want) if float(want) != 0 else np.nan
    for label, r in (("√2", 2 ** 0.5), ("2", 2.0)):
        if np.isfinite(ratio) and (np.isclose(ratio, r, rtol=1e-3) or np.isclose(ratio, 1 / r, rtol=1e-3)):
            msg += f" Your value is off by a factor of {label}: check the scale."
            break
    return Verdict(False, msg + (f" Hint: {hint}" if hint else ""))


def check_number(answer, expected, *, name: str = "your answer", rtol: float = 1e-6, atol: float = 1e-9,
                 hint: str = "") -> Verdict:
    """Like :func:`check_array` for a single number."""
    if answer is not None and answer is not ...:
        try:
            shape = _as_array(answer).shape
        except Exception:  # noqa: BLE001 - check_array below explains unreadable answers
            shape = ()
        if shape != ():
            return Verdict(False, f"{name}: expected a single number; got something of shape {shape}.")
    return check_array(answer, expected, name=name, rtol=rtol, atol=atol, hint=hint)


# ---------------------------------------------------------------------------
# Specific self-checks for chapter 04 (practice by hand): dot products, scaled
# scores, softmax and attention weights.  Each one knows the usual mistakes and
# names the one it recognises.  None of them raises on the learner's answer.
# ---------------------------------------------------------------------------

#: Tolerances of the hand-computation checks: answers rounded to three decimals pass.
HAND_RTOL = 1e-3
HAND_ATOL = 6e-4


def _read_answer(answer, name):
    """(array, None) if the answer reads as finite-or-not numbers, else (None, Verdict)."""
    if answer is None or answer is ...:
        return None, Verdict(False, f"{name}: no answer yet. Replace `None` with your result and run the "
                                    "cell again.", "missing")
    try:
        return _as_array(answer), None
    except Exception as exc:  # noqa: BLE001 - anything a learner types must give a sentence
        if "inhomogeneous" in str(exc):
            return None, Verdict(False, f"{name}: the rows of your answer have different lengths; every row "
                                        "needs the same number of entries.", "unreadable")
        return None, Verdict(False, f"{name}: could not read your answer as numbers "
                                    f"({type(exc).__name__}: {exc}). Type numbers, a list of numbers, "
                                    "or a NumPy array.", "unreadable")


def _reference(x, what):
    """The chapter's own inputs (not the learner's): must be real numbers, else ValueError."""
    try:
        a = _as_array(x)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"self-check set-up: {what} is not an array of numbers ({exc})") from exc
    if not np.all(np.isfinite(a)):
        raise ValueError(f"self-check set-up: {what} contains NaN or infinity")
    return a


def _close(a, e, rtol, atol):
    return a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol))


def _fmt(x):
    """Numbers for a message, on one line: 5, 3.536, [0.6652, 0.2447, 0.09]."""
    return np.array2string(np.asarray(x, dtype=float), separator=", ", max_line_width=10_000,
                           formatter={"float_kind": lambda v: f"{v:.4g}"}).replace("\n", "")


def _diagnose(answer, expected, mistakes, *, name, rtol, atol, hint, overflow_risk=False):
    """Compare ``answer`` with ``expected`` and, if it differs, look for a known mistake.

    ``mistakes`` is a list of ``(code, wrong_array, explanation)``: what the answer would be if the
    learner made that mistake.  The right answer is tested first, so a mistake that happens to give the
    right numbers (d_k = 1, a symmetric matrix) never turns a right answer into a wrong one.
    """
    a, bad = _read_answer(answer, name)
    if bad is not None:
        return bad
    e = np.asarray(expected, dtype=float)
    if e.ndim == 0 and a.size == 1:          # [4.0] or np.array([[4.0]]) for a single number is fine
        a = a.reshape(())
    if a.shape == e.shape and not np.all(np.isfinite(a)):
        if overflow_risk:
            return Verdict(False, f"{name}: contains NaN or infinity. `exp` of a large score overflows "
                                  "(e^710 is already too big for float64, e^89 for float32). Subtract "
                                  "the row's largest score first: softmax(z) = softmax(z − max z).",
                           "overflow")
        return Verdict(False, f"{name}: contains NaN or infinity. Check for a division by zero or an "
                              "`exp` of a very large number.", "not_finite")
    if _close(a, e, rtol, atol):
        shown = f" = {_fmt(a)}" if a.size <= 6 else ""
        return Verdict(True, f"{name}{shown} matches (to about three decimals).", None)
    for code, wrong, why in mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.ndim == 0 and a.size == 1:
            a2 = a.reshape(())
        else:
            a2 = a
        if np.all(np.isfinite(wrong)) and _close(a2, wrong, rtol, atol):
            return Verdict(False, f"{name}: {why}", code)
    if a.shape != e.shape:
        msg = f"{name}: shape {a.shape}, expected {e.shape}."
        if a.size == e.size and a.ndim == 2 and a.shape == e.shape[::-1]:
            msg += " The numbers may be right but rows and columns are swapped (a transpose?)."
            return Verdict(False, msg + (f" Hint: {hint}" if hint else ""), "transposed")
        return Verdict(False, msg + (f" Hint: {hint}" if hint else ""), "wrong_shape")
    diff = np.abs(a - e)
    worst = np.unravel_index(np.argmax(diff), a.shape) if a.ndim else ()
    at = f" at index {tuple(int(i) for i in worst)}" if a.ndim else ""
    got, want = float(a[worst]), float(e[worst])
    msg = f"{name}: not yet. The largest difference is{at}: you have {got:.4g}, expected {want:.4g}."
    return Verdict(False, msg + (f" Hint: {hint}" if hint else ""), "wrong_value")


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
        m.append(("unscaled", raw, f"these are the raw dot products: you forgot to divide by √d_k = √{d_k} "
                                   f"≈ {r:.3f}."))
        m.append(("divided_by_dk", raw / d_k, f"you divided by d_k = {d_k}; divide by its square root, "
                                              f"√d_k ≈ {r:.3f}. (Dividing by d_k shrinks the scores too "
                                              "much: their variance becomes 1/d_k, not 1.)"))
        m.append(("multiplied_by_sqrt_dk", raw * r, f"you multiplied by √d_k ≈ {r:.3f}; divide by it."))
        if ka.ndim == 2 and ka.shape[0] not in (d_k, 1):
            n = ka.shape[0]
            m.append(("divided_by_sqrt_n_keys", raw / np.sqrt(n),
                      f"you divided by √{n}, the square root of the number of keys; d_k is the length of "
                      f"each vector, here {d_k}."))
    else:
        m.append(("scaled", raw / r, f"you divided by √d_k ≈ {r:.3f}; this question asks for the raw, "
                                     "unscaled dot product q·k."))
        m.append(("divided_by_dk", raw / d_k, f"you divided by d_k = {d_k}; this question asks for the raw "
                                              "dot product q·k."))
    target = raw / r if scaled else raw
    if qa.ndim == 1 and ka.ndim == 1:
        m.append(("not_summed", qa * ka / (r if scaled else 1.0),
                  "you multiplied the components pairwise but did not add the products up: "
                  "q·k = q₁k₁ + q₂k₂ + … is one number."))
    elif qa.ndim == 2 and ka.ndim == 2:
        if target.shape[0] == target.shape[1]:
            m.append(("transposed", target.T, "rows and columns are swapped: row i should hold query i's "
                                              "scores against every key (Q Kᵀ, not K Qᵀ)."))
        if qa.shape == ka.shape:
            m.append(("not_summed", qa * ka / (r if scaled else 1.0),
                      "you multiplied Q and K entry by entry; the scores are the matrix product Q Kᵀ "
                      "(each entry a dot product of a query row with a key row)."))
    elif ka.ndim == 2 and qa.ndim == 1:
        m.append(("not_summed", qa[None, :] * ka / (r if scaled else 1.0),
                  "you multiplied the components pairwise but did not add them up: each key gives one "
                  "number, q·k_j = Σᵢ qᵢ k_{j,i}."))
    return target, m


def check_dot(answer, q, k, *, name: str = "q·k", hint: str = "") -> Verdict:
    """Check the learner's **unscaled** dot product(s) of ``q`` and ``k`` (chapter 04).

    ``q`` is a vector ``(d_k,)`` or a matrix ``(L, d_k)``; ``k`` a vector ``(d_k,)`` or a matrix
    ``(S, d_k)`` of keys, one per row.  Expected: ``q @ k`` (a number), ``q @ k.T`` (``(S,)``) or
    ``Q @ K.T`` (``(L, S)``).  Recognised mistakes (``Verdict.mistake``): ``scaled``,
    ``divided_by_dk``, ``not_summed``, ``transposed``, ``wrong_shape``.  Answers rounded to three
    decimals pass.  Never raises on the answer; raises ``ValueError`` if ``q``/``k`` do not fit.
    """
    qa, ka, raw, d_k = _scores_setup(q, k)
    target, mistakes = _score_mistakes(qa, ka, raw, d_k, scaled=False)
    return _diagnose(answer, target, mistakes, name=name, rtol=HAND_RTOL, atol=HAND_ATOL,
                     hint=hint or "q·k = Σᵢ qᵢ kᵢ: multiply matching components and add.")


def check_scaled_scores(answer, q, k, *, name: str = "scaled scores", hint: str = "") -> Verdict:
    """Check the learner's **scaled** scores ``q·k/√d_k`` (chapter 04).

    Shapes as in :func:`check_dot`.  Recognised mistakes: ``unscaled`` (forgot the scale),
    ``divided_by_dk`` (divided by d_k instead of √d_k), ``multiplied_by_sqrt_dk``,
    ``divided_by_sqrt_n_keys``, ``not_summed``, ``transposed``, ``wrong_shape``.
    """
    qa, ka, raw, d_k = _scores_setup(q, k)
    target, mistakes = _score_mistakes(qa, ka, raw, d_k, scaled=True)
    return _diagnose(answer, target, mistakes, name=name, rtol=HAND_RTOL, atol=HAND_ATOL,
                     hint=hint or f"compute q·k, then divide by √d_k = √{d_k} ≈ {np.sqrt(d_k):.3f}.")


def _softmax_mistakes(s, axis):
    """Wrong answers for softmax(s, axis) that a learner typically gives."""
    from .attention import softmax  # local import: attention imports nothing from here

    m = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ex = np.exp(s - s.max())  # overall shift keeps the ratios; finite for the exercises' numbers
        if s.ndim == 2:
            other = 0 if axis in (-1, 1) else 1
            m.append(("wrong_axis", softmax(s, axis=other),
                      f"you normalised along the wrong axis: each {'row' if other == 0 else 'column'} of "
                      f"your answer sums to 1. Softmax runs along each query's row of scores "
                      f"(axis={axis}), so that every row sums to 1."))
            m.append(("normalised_whole_matrix", ex / ex.sum(),
                      "you divided by the sum over the whole matrix; divide each row by its own sum, so "
                      "that every row sums to 1."))
        m.append(("not_normalised", np.exp(s),
                  "these are e^z, not yet divided by their sum; the weights must sum to 1."))
        m.append(("not_normalised", np.exp(s - s.max(axis=axis, keepdims=True)),
                  "these are e^(z − max z), not yet divided by their sum; the weights must sum to 1."))
        lin = s / s.sum(axis=axis, keepdims=True)
        m.append(("no_exp", lin, "you divided the scores by their sum without taking e^z first. Softmax "
                                 "is e^{z_j} / Σ_m e^{z_m}: exponentiate, then normalise."))
        m.append(("no_softmax", s, "these are the scores themselves; apply the softmax to them."))
    return m


def _rows_hint(a, axis):
    try:
        sums = a.sum(axis=axis)
    except Exception:  # noqa: BLE001
        return ""
    if np.all(np.isfinite(sums)) and not np.allclose(sums, 1, atol=2e-3):
        return f" Your weights sum to {_fmt(sums)}, not 1."
    return ""


def check_softmax(answer, scores, *, axis: int = -1, name: str = "softmax weights", hint: str = "") -> Verdict:
    """Check the learner's softmax of ``scores`` along ``axis`` (chapter 04).

    ``scores`` is a vector ``(S,)`` or a matrix ``(L, S)``; the answer has the same shape.  Recognised
    mistakes: ``overflow`` (NaN/inf from ``exp`` of large scores: subtract the maximum),
    ``wrong_axis``, ``normalised_whole_matrix``, ``not_normalised`` (forgot to divide by the sum),
    ``no_exp``, ``no_softmax``, ``transposed``, ``wrong_shape``; any other wrong answer whose weights do
    not sum to 1 is told so.  Never raises on the answer.
    """
    from .attention import softmax

    s = _reference(scores, "scores")
    if s.ndim not in (1, 2) or s.shape[axis] == 0:
        raise ValueError(f"self-check set-up: scores must be a non-empty vector or matrix; got {s.shape}")
    expected = softmax(s, axis=axis)
    v = _diagnose(answer, expected, _softmax_mistakes(s, axis), name=name, rtol=HAND_RTOL, atol=HAND_ATOL,
                  hint=hint or "e^{z_j} / Σ_m e^{z_m}; subtract the largest score first.",
                  overflow_risk=bool(np.max(np.abs(s)) > 80))
    if v.mistake == "wrong_value":
        a = _as_array(answer)
        return Verdict(False, v.message + _rows_hint(a, axis), "wrong_value")
    return v


def check_attention_weights(answer, q, k, *, name: str = "attention weights", hint: str = "") -> Verdict:
    """Check the learner's attention weights ``softmax(q kᵀ/√d_k)`` along the keys (chapter 04).

    ``q`` is ``(d_k,)`` or ``(L, d_k)``, ``k`` is ``(S, d_k)``; the answer is ``(S,)`` or ``(L, S)``.
    Recognised mistakes: ``unscaled`` (softmax of the raw scores), ``divided_by_dk``, ``wrong_axis``,
    ``normalised_whole_matrix``, ``not_normalised``, ``no_softmax`` (the scores themselves),
    ``overflow``, ``transposed``, ``wrong_shape``.
    """
    from .attention import softmax

    qa, ka, raw, d_k = _scores_setup(q, k)
    if ka.ndim != 2:
        raise ValueError(f"self-check set-up: k must be a matrix of keys (S, d_k); got shape {ka.shape}")
    r = np.sqrt(d_k)
    s = raw / r
    expected = softmax(s, axis=-1)
    mistakes = [
        ("unscaled", softmax(raw, axis=-1),
         f"this is the softmax of the raw scores q·k: divide them by √d_k ≈ {r:.3f} before the softmax."),
        ("divided_by_dk", softmax(raw / d_k, axis=-1),
         f"you divided the scores by d_k = {d_k}; divide by √d_k ≈ {r:.3f}. Dividing by d_k flattens the "
         "weights towards uniform."),
    ]
    mistakes += [(c, w, why) for c, w, why in _softmax_mistakes(s, -1) if c != "no_exp"]
    mistakes.append(("no_softmax", raw, "these are the raw scores q·k; scale them by 1/√d_k and apply "
                                        "the softmax along each row."))
    v = _diagnose(answer, expected, mistakes, name=name, rtol=HAND_RTOL, atol=HAND_ATOL,
                  hint=hint or f"scores q·k, divide by √d_k ≈ {r:.3f}, then softmax along the keys.",
                  overflow_risk=bool(np.max(np.abs(raw)) > 80))
    if v.mistake == "wrong_value":
        return Verdict(False, v.message + _rows_hint(_as_array(answer), -1), "wrong_value")
    return v
