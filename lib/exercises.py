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

#: Tolerances of :func:`check_correlated_score_moments`: answers rounded to three decimals pass.
_MOMENT_RTOL, _MOMENT_ATOL = 1e-3, 6e-4


def _positive_finite(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"self-check set-up: {name} must be a number; got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"self-check set-up: {name} must be a finite number > 0; got {value!r}")
    return float(value)


def check_correlated_score_moments(answer, d_k, rho, *, sigma_q=1.0, sigma_k=1.0, scaled=True,
                                   name="mean and variance") -> Verdict:
    """Check ``[mean, variance]`` of the score ``q·k/√d_k`` (``scaled=False``: of ``q·k``) (chapter 7).

    The inputs are the exercise's: ``d_k`` components, each pair (q_i, k_i) jointly normal with mean 0,
    standard deviations ``sigma_q``, ``sigma_k`` and correlation ``rho``, the pairs independent. The
    expected values follow from Isserlis' theorem: E[q·k] = d_k ρ σ_qσ_k and
    Var(q·k) = d_k σ_q²σ_k²(1 + ρ²); dividing q·k by √d_k divides the mean by √d_k and the variance
    by d_k. They are computed here, so no notebook cell holds them.

    A wrong answer gets the hint for the mistake it shows (``Verdict.mistake``): ``unscaled`` (the raw
    moments), ``scaled`` (scaled moments where the raw ones were asked), ``assumed_independence``
    (ρ = 0), ``forgot_rho_squared`` (variance without the 1 + ρ²), ``unscaled_forgot_rho_squared``,
    ``rho_not_squared`` (1 + ρ), ``variance_divided_by_sqrt_dk``, ``mean_divided_by_dk``,
    ``standard_deviation`` (the SD instead of the variance), ``swapped`` ([variance, mean]); otherwise
    ``wrong_mean``, ``wrong_variance`` or ``wrong_both``, each with a hint, never with the expected
    numbers. ``missing``, ``unreadable``, ``wrong_shape``, ``not_finite`` for answers that are not two
    numbers. Answers rounded to three decimals pass.

    Never raises on ``answer``; raises ``TypeError``/``ValueError`` naming the fault when ``d_k``,
    ``rho``, ``sigma_q`` or ``sigma_k`` are not valid inputs.
    """
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)):
        raise TypeError(f"self-check set-up: d_k must be an int; got {type(d_k).__name__}")
    if d_k < 1:
        raise ValueError(f"self-check set-up: d_k must be at least 1; got {d_k}")
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)):
        raise TypeError(f"self-check set-up: rho must be a number; got {type(rho).__name__}")
    if not (np.isfinite(rho) and -1.0 <= rho <= 1.0):
        raise ValueError(f"self-check set-up: rho must lie in [-1, 1]; got {rho!r}")
    sq, sk = _positive_finite("sigma_q", sigma_q), _positive_finite("sigma_k", sigma_k)
    d, r, s2 = int(d_k), float(rho), (sq * sk) ** 2

    if answer is None or answer is ...:
        return Verdict(False, tr("{name}: no answer yet. Replace `None` with your two numbers and run the "
                                 "cell again.", name=name), "missing")
    try:
        if hasattr(answer, "detach"):                      # a torch tensor
            answer = answer.detach().cpu().double().numpy()
        a = np.asarray(answer, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        return Verdict(False, tr("{name}: could not read your answer as numbers ({err}). Give two numbers, "
                                 "for example np.array([mean, variance]).", name=name, err=exc), "unreadable")
    if a.size != 2:
        return Verdict(False, tr("{name}: give two numbers, [mean, variance]; your answer has {n}.",
                                 name=name, n=a.size), "wrong_shape")
    if not np.all(np.isfinite(a)):
        return Verdict(False, tr("{name}: your answer contains NaN or infinity.", name=name), "not_finite")

    raw = np.array([d * r * sq * sk, d * s2 * (1 + r * r)])
    div = np.array([np.sqrt(d), d]) if scaled else np.ones(2)
    expected = raw / div

    def close(x, y):
        return bool(np.allclose(x, y, rtol=_MOMENT_RTOL, atol=_MOMENT_ATOL))

    if close(a, expected):
        return Verdict(True, tr("{name}: both numbers match (to about three decimals).", name=name))
    m, v = expected
    indep = np.array([0.0, d * s2]) / div
    no_rho2 = np.array([m, d * s2 / div[1]])
    mistakes = []
    if scaled:
        mistakes.append(("unscaled", raw, tr(
            "these are the mean and variance of the raw score q·k. Dividing q·k by √d_k divides its mean by "
            "√d_k and its variance by d_k (scaling by c scales the variance by c²).")))
        mistakes.append(("unscaled_forgot_rho_squared", np.array([raw[0], d * s2]), tr(
            "two things: these are moments of the raw score q·k (divide the mean by √d_k and the variance "
            "by d_k), and the variance misses the factor 1 + ρ² that the correlation adds.")))
        mistakes.append(("variance_divided_by_sqrt_dk", np.array([m, raw[1] / np.sqrt(d)]), tr(
            "your mean is right, but you divided the variance by √d_k. Scaling a variable by c scales its "
            "variance by c², so dividing q·k by √d_k divides the variance by d_k.")))
        mistakes.append(("mean_divided_by_dk", np.array([raw[0] / d, v]), tr(
            "your variance is right, but you divided the mean by d_k. The score is q·k/√d_k, so its mean "
            "is E[q·k] divided by √d_k.")))
    else:
        mistakes.append(("scaled", raw / np.array([np.sqrt(d), d]), tr(
            "these are the moments of the scaled score q·k/√d_k; this question asks for the raw score "
            "q·k.")))
    mistakes.append(("assumed_independence", indep, tr(
        "these are the moments for independent components (ρ = 0). With correlation ρ each product q_i·k_i "
        "has mean ρσ_qσ_k, so the mean grows like d_k, and the variance of each product is "
        "σ_q²σ_k²(1 + ρ²).")))
    mistakes.append(("forgot_rho_squared", no_rho2, tr(
        "your mean is right, but the variance misses the ρ² term. For a correlated normal pair, "
        "E[q_i²k_i²] = σ_q²σ_k²(1 + 2ρ²) (Isserlis' theorem), so Var(q_i·k_i) = σ_q²σ_k²(1 + ρ²), not "
        "σ_q²σ_k² as for independent components.")))
    mistakes.append(("rho_not_squared", np.array([m, d * s2 * (1 + abs(r)) / div[1]]), tr(
        "your mean is right, but the variance has 1 + ρ where it needs 1 + ρ² (from Isserlis' theorem: "
        "E[q_i²k_i²] = σ_q²σ_k²(1 + 2ρ²), minus the squared mean ρ²σ_q²σ_k²).")))
    mistakes.append(("standard_deviation", np.array([m, np.sqrt(v)]), tr(
        "your mean is right; your second number looks like the standard deviation. The exercise asks for "
        "the variance, its square.")))
    mistakes.append(("swapped", expected[::-1], tr(
        "your numbers are right but in the order [variance, mean]; put the mean first.")))
    for code, wrong, why in mistakes:
        if not close(wrong, expected) and close(a, wrong):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    mean_ok, var_ok = close(a[0], m), close(a[1], v)
    hint_mean = tr("E[q·k] = d_k ρ σ_qσ_k for the raw score; divide it by √d_k for the scaled one.") \
        if scaled else tr("E[q·k] = d_k ρ σ_qσ_k.")
    hint_var = tr("Var(q·k) = d_k σ_q²σ_k²(1 + ρ²) for the raw score; dividing q·k by √d_k divides the "
                  "variance by d_k.") if scaled else tr("Var(q·k) = d_k σ_q²σ_k²(1 + ρ²).")
    if mean_ok:
        return Verdict(False, tr("{name}: your mean is right; your variance is not yet. Hint: {hint}",
                                 name=name, hint=hint_var), "wrong_variance")
    if var_ok:
        return Verdict(False, tr("{name}: your variance is right; your mean is not yet. Hint: {hint}",
                                 name=name, hint=hint_mean), "wrong_mean")
    return Verdict(False, tr("{name}: neither number matches yet. Hint: start from one pair, "
                             "E[q_i·k_i] = ρσ_qσ_k and Var(q_i·k_i) = σ_q²σ_k²(1 + ρ²); add up the d_k "
                             "independent pairs{then}.", name=name,
                             then=tr(", then divide the mean by √d_k and the variance by d_k") if scaled else ""),
                   "wrong_both")


__all__ += ["check_correlated_score_moments"]


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
