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

def _ch56_read(answer, name):
    """(float array, None) if the learner's answer reads as finite numbers, else (None, Verdict)."""
    if answer is None or answer is ...:
        return None, Verdict(False, tr("{name}: no answer yet. Replace `None` with your result and run the "
                                       "cell again.", name=name), "missing")
    if isinstance(answer, (str, bytes)):
        return None, Verdict(False, tr("{name}: your answer is text; give numbers (without quotes).",
                                       name=name), "unreadable")
    try:
        from .selfcheck import _as_array

        a = _as_array(answer)
    except Exception as exc:  # noqa: BLE001 - anything a learner types must give a sentence
        return None, Verdict(False, tr("{name}: could not read your answer as numbers ({error}).",
                                       name=name, error=type(exc).__name__), "unreadable")
    if not np.all(np.isfinite(a)):
        return None, Verdict(False, tr("{name}: contains NaN or infinity.", name=name), "not_finite")
    return a, None


def check_temperature_jacobian(answer, z, taus) -> Verdict:
    """Exercise 5.2: the largest entry of ∂p/∂z for p = softmax(z/τ), one number per τ in ``taus``.

    The expected values, max_ij |J_ij(softmax(z/τ))| / τ (chapter 5, eq. eq-temperature-jacobian), are
    computed here from the exercise's ``z`` (1-d, at least 2 finite entries) and ``taus`` (a positive
    number or a 1-d sequence of them). Recognised mistakes (``Verdict.mistake``): ``no_factor`` (the
    Jacobian with respect to z/τ, without the chain rule's 1/τ), ``times_tau`` (multiplied by τ),
    ``no_temperature`` (the Jacobian at z itself), ``rounded`` (right to about 2 digits only),
    ``wrong_shape``, ``wrong_value``. Never raises on the answer; raises ``ValueError``/``TypeError`` on
    bad ``z`` or ``taus``.
    """
    if isinstance(z, (str, bytes)) or isinstance(taus, (str, bytes)) or z is None or taus is None:
        raise TypeError("self-check set-up: z and taus must be numbers")
    zz = np.asarray(z, dtype=float)
    tt = np.asarray(taus, dtype=float)
    if zz.ndim != 1 or zz.size < 2 or not np.all(np.isfinite(zz)):
        raise ValueError(f"self-check set-up: z must be a 1-d array of at least 2 finite numbers; got {z!r}")
    if tt.ndim > 1 or tt.size == 0 or not np.all(np.isfinite(tt)) or np.any(tt <= 0):
        raise ValueError(f"self-check set-up: taus must be a positive number or a 1-d list of them; got {taus!r}")

    def largest(t, factor):
        e = np.exp(zz / t - np.max(zz / t))
        p = e / e.sum()
        return float(np.abs(np.diag(p) - np.outer(p, p)).max()) * factor

    expected = np.array([largest(t, 1 / t) for t in tt.ravel()]).reshape(tt.shape)
    name = tr("largest entry of ∂p/∂z")
    a, bad = _ch56_read(answer, name)
    if bad is not None:
        return bad
    if a.shape != expected.shape:
        return Verdict(False, tr("{name}: expected {n} number(s), one per τ in the order given; got shape "
                                 "{shape}.", name=name, n=expected.size, shape=a.shape), "wrong_shape")
    if np.allclose(a, expected, rtol=1e-3, atol=0):
        return Verdict(True, tr("{name}: right for every τ.", name=name))
    wrong = [
        ("no_factor", np.array([largest(t, 1.0) for t in tt.ravel()]).reshape(tt.shape),
         tr("these are the entries of the Jacobian with respect to z/τ, the softmax's own input. The "
            "question asks for the derivative with respect to z: apply the chain rule once more.")),
        ("times_tau", np.array([largest(t, t) for t in tt.ravel()]).reshape(tt.shape),
         tr("the chain rule's factor is on the wrong side: differentiate z/τ with respect to z.")),
        ("no_temperature", np.full(tt.shape, largest(1.0, 1.0)),
         tr("these are the values at τ = 1 for every τ: divide the scores by τ before the softmax.")),
    ]
    for code, w, why in wrong:
        if np.allclose(a, w, rtol=1e-3, atol=0):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    rounded = any(np.allclose(a, np.round(expected, k), rtol=1e-9, atol=1e-12) for k in range(1, 6))
    if rounded or np.allclose(a, expected, rtol=2e-2, atol=0):
        return Verdict(False, tr("{name}: right, but rounded too far for the check (3 significant digits "
                                 "are needed). Pass the unrounded numbers.", name=name), "rounded")
    i = int(np.argmax(np.abs(a - expected) / np.abs(expected)))
    return Verdict(False, tr("{name}: not yet; the value for τ = {tau:g} is off by more than 2 %. Work "
                             "through the formula step by step: the softmax of z/τ, the largest entry "
                             "of diag(p) − ppᵀ, then the chain rule.", name=name, tau=float(tt.ravel()[i])),
                   "wrong_value")


__all__ += ["check_temperature_jacobian"]


# --- chapter 6 -----------------------------------------------------------------------------------

def check_steps_to_threshold(answer, loss, threshold=1.0, window=10) -> Verdict:
    """Exercise 6.2: the first step t at which the mean of ``loss[t - window + 1 : t + 1]`` is below ``threshold``.

    The expected step is computed here from the exercise's ``loss`` (1-d, finite), ``threshold`` and
    ``window`` (the same rule as ``lib.training.steps_to_threshold``, which returns ``len(loss)`` when
    the threshold is never reached). Recognised mistakes: ``window_start`` (the first step of the window,
    not the last), ``off_by_one``, ``no_average`` (the first single step below the threshold),
    ``not_integer``, ``wrong_shape``, ``wrong_value``. Never raises on the answer.
    """
    x = np.asarray(loss, dtype=float) if not isinstance(loss, (str, bytes)) else None
    if x is None or x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("self-check set-up: loss must be a non-empty 1-d array of finite numbers")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 1 <= window <= x.size:
        raise ValueError(f"self-check set-up: window must be an integer from 1 to len(loss); got {window!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not np.isfinite(threshold):
        raise TypeError(f"self-check set-up: threshold must be a finite number; got {threshold!r}")

    def first(values, w):
        moving = np.convolve(values, np.ones(w) / w, mode="valid")    # moving[i] = mean(values[i : i+w])
        below = np.flatnonzero(moving < threshold)
        return int(below[0] + w - 1) if below.size else int(values.size)

    expected = first(x, window)
    name = tr("steps to loss < {t:g}", t=float(threshold))
    a, bad = _ch56_read(answer, name)
    if bad is not None:
        return bad
    if a.shape != ():
        return Verdict(False, tr("{name}: expected a single integer; got something of shape {shape}.",
                                 name=name, shape=a.shape), "wrong_shape")
    value = float(a)
    if value != round(value):
        return Verdict(False, tr("{name}: a step number is a whole number; got {v:g}.", name=name, v=value),
                       "not_integer")
    value = int(round(value))
    if value == expected:
        return Verdict(True, tr("{name}: {v}, right.", name=name, v=value))
    if expected < x.size and value == expected - (window - 1):
        return Verdict(False, tr("{name}: that is the first step of the window; the measure counts the "
                                 "last step of the first window whose mean is below the threshold.",
                                 name=name), "window_start")
    if expected < x.size and value == first(x, 1) and first(x, 1) != expected:
        return Verdict(False, tr("{name}: that is the first single step below the threshold; the measure "
                                 "averages {w} consecutive steps first.", name=name, w=window), "no_average")
    if abs(value - expected) == 1:
        return Verdict(False, tr("{name}: off by one. Steps are counted from 0, and the window that ends "
                                 "at step t holds steps t − {k} to t.", name=name, k=window - 1), "off_by_one")
    return Verdict(False, tr("{name}: not yet. Average each run of {w} consecutive losses and find the first "
                             "average below {t:g}; report the step at which that window ends.",
                             name=name, w=window, t=float(threshold)), "wrong_value")


__all__ += ["check_steps_to_threshold"]


# --- chapter 7 -----------------------------------------------------------------------------------


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
