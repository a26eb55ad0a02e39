"""Self-checks for exercises: the learner's answer in, a clear verdict with a hint out.

They never raise: a missing answer, a wrong shape or a non-number gets a
sentence, not a traceback.  Chapters call them in exercise cells::

    my_scores = None          # your answer here
    lib.check_array(my_scores, expected, name="scaled scores", hint="divide by √d_k, not d_k")
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._backend import is_torch

__all__ = ["Verdict", "check_array", "check_number"]


@dataclass(frozen=True)
class Verdict:
    """The result of a self-check: ``ok`` and a message for the learner."""

    ok: bool
    message: str

    def __bool__(self):
        return self.ok

    def __str__(self):
        return ("✅ " if self.ok else "❌ ") + self.message

    __repr__ = __str__

    def _repr_markdown_(self):
        return ("**✅ Correct.** " if self.ok else "**❌ Not yet.** ") + self.message


def _as_array(x):
    if is_torch(x):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def check_array(answer, expected, *, name: str = "your answer", rtol: float = 1e-6, atol: float = 1e-9,
                hint: str = "") -> Verdict:
    """Compare an array-like answer with the expected one; explain any difference."""
    if answer is None or answer is ...:
        return Verdict(False, f"{name}: no answer yet. Replace `None` with your result and run the cell again.")
    try:
        a = _as_array(answer)
    except (TypeError, ValueError) as exc:
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
    if answer is not None and np.ndim(answer) != 0:
        return Verdict(False, f"{name}: expected a single number; got something of shape {np.shape(answer)}.")
    return check_array(answer, expected, name=name, rtol=rtol, atol=atol, hint=hint)
