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

__all__ += ["check_mha_params"]


def check_mha_params(answer, d_model, num_heads, *, bias: bool = True, name: str | None = None) -> Verdict:
    """Exercise 8.2: the number of parameters of ``lib.MultiHeadAttention(d_model, num_heads)``.

    The expected count, 4·d_model² (+ 4·d_model with ``bias``), is computed here from the exercise's
    inputs, so no notebook cell holds it.  Recognised mistakes (``Verdict.mistake``): ``"no_biases"``
    (the four matrices only), ``"three_projections"`` (W_Q, W_K, W_V but not W_O), ``"one_head"``
    (matrices of one head, d_model × d_k), ``"extra_biases"`` (biases counted where ``bias=False``).
    Never raises on the answer; raises ``ValueError``/``TypeError`` on bad inputs.
    """
    for what, v in (("d_model", d_model), ("num_heads", num_heads)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"check_mha_params: {what} must be an int; got {type(v).__name__}")
        if v < 1:
            raise ValueError(f"check_mha_params: {what} must be positive; got {v}")
    if d_model % num_heads:
        raise ValueError(f"check_mha_params: d_model = {d_model} is not divisible by num_heads = {num_heads}")
    if not isinstance(bias, bool):
        raise TypeError(f"check_mha_params: bias must be True or False; got {type(bias).__name__}")
    name = name or tr("parameter count")
    d, d_k = int(d_model), int(d_model) // int(num_heads)
    b = 1 if bias else 0
    expected = 4 * d * d + 4 * d * b
    mistakes = [
        ("no_biases", 4 * d * d,
         tr("this counts the four weight matrices W_Q, W_K, W_V, W_O but not their bias vectors (one of "
            "length d_model per matrix).")),
        ("three_projections", 3 * d * d + 3 * d * b,
         tr("this counts W_Q, W_K and W_V; the output map W_O is a d_model × d_model matrix too.")),
        ("three_projections", 3 * d * d,
         tr("this counts the weights of W_Q, W_K and W_V only; add W_O and the four bias vectors.")),
        ("one_head", 4 * d * d_k + 4 * d_k * b,
         tr("this is the size of one head's slices (d_model × d_k each). The layer holds all h heads: "
            "each matrix is d_model × d_model.")),
    ]
    if not bias:
        mistakes.append(("extra_biases", 4 * d * d + 4 * d,
                         tr("this layer has no biases (bias=False): count the four matrices only.")))
    from .selfcheck import _as_array  # reads numbers, lists and torch tensors alike

    v = check_number(answer, expected, name=name, rtol=0, atol=0.5)
    if v.ok:
        return v
    try:
        a = _as_array(answer)
    except Exception:  # noqa: BLE001 - check_number has already explained an unreadable answer
        return v
    if a.shape != () or not np.isfinite(a):
        return v                       # missing, the wrong shape or NaN: as check_number says
    for code, wrong, why in mistakes:
        if wrong != expected and abs(float(a) - wrong) <= 0.5:
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    return Verdict(False, " ".join((v.message, tr("Hint: work it out from the four d_model × d_model "
                                                  "matrices and their biases; h does not appear."))))


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
