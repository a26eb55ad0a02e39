"""lib.exercises: each exercise's self-check against an independent computation of its answer.

One section per chapter, as in lib/exercises.py. Each test checks that the right answer passes, that
the typical wrong answers fail with the verdict the chapter promises, and that junk input gets a
sentence, not an exception.
"""
import numpy as np
import pytest

import lib

# --- chapter 1 -----------------------------------------------------------------------------------


# --- chapter 2 -----------------------------------------------------------------------------------


# --- chapter 3 -----------------------------------------------------------------------------------


# --- chapter 4 -----------------------------------------------------------------------------------


# --- chapter 5 -----------------------------------------------------------------------------------


# --- chapter 6 -----------------------------------------------------------------------------------


# --- chapter 7 -----------------------------------------------------------------------------------


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"


def _solution_text(notebook, label):
    """The text of the dropdown solution of exercise ``label`` in ``notebook`` (book/<notebook>)."""
    cells = json.loads((BOOK / notebook).read_text(encoding="utf-8"))["cells"]
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    m = re.search(r"```\{solution\} " + re.escape(label) + r"\n(.*?)\n```", md, re.S)
    assert m, f"no solution for {label} in {notebook}"
    return m.group(1)


def _x9():
    return np.array([2.0, -1.0, 0.5, 7.0, 3.0, 6.5, -2.0, 9.0])  # the exercise's row


def _lse_reference(x):
    return float(np.log(np.sum(np.exp(np.asarray(x, dtype=np.longdouble)))))  # no shift: longdouble holds it


def test_check_logsumexp_right_answer():
    x = _x9()
    assert lib.check_logsumexp(_lse_reference(x), x).ok
    # the online computation in blocks of 3, written independently of lib
    m, l = -np.inf, 0.0
    for j0 in range(0, x.size, 3):
        b = x[j0:j0 + 3]
        mn = max(m, b.max())
        l = l * math.exp(m - mn) + np.exp(b - mn).sum()
        m = mn
    assert lib.check_logsumexp(m + math.log(l), x).ok
    assert lib.check_logsumexp(np.float32(m + math.log(l)), x).ok is False  # float32 rounding is not 1e-9


def test_check_logsumexp_typical_mistakes():
    x = _x9()
    # forgot to rescale the old sum when the maximum grew
    m, l = -np.inf, 0.0
    for j0 in range(0, x.size, 3):
        b = x[j0:j0 + 3]
        mn = max(m, b.max())
        l = l + np.exp(b - mn).sum()
        m = mn
    v = lib.check_logsumexp(m + math.log(l), x)
    assert not v.ok and v.mistake == "no_rescale" and "exp(m_old - m_new)" in v.message
    v = lib.check_logsumexp(float(x.max()), x)
    assert not v.ok and v.mistake == "max_only"
    v = lib.check_logsumexp(_lse_reference(x) + 0.5, x)
    assert not v.ok and "m + log(l)" in v.message


@pytest.mark.parametrize("junk", [None, ..., "ten", [1.0, 2.0], float("nan")])
def test_check_logsumexp_junk_gets_a_sentence(junk):
    v = lib.check_logsumexp(junk, _x9())
    assert not v.ok and isinstance(v.message, str) and v.message


def test_check_logsumexp_bad_inputs_raise():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        lib.check_logsumexp(1.0, [])
    with pytest.raises(ValueError, match="finite"):
        lib.check_logsumexp(1.0, [1.0, np.inf])
    with pytest.raises(TypeError, match="row of numbers"):
        lib.check_logsumexp(1.0, ["a", object()])
    with pytest.raises(ValueError, match="block"):
        lib.check_logsumexp(1.0, [1.0], block=0)


def test_chapter9_hand_solutions_state_the_right_numbers():
    # Exercise 9.1: 16 heads, d_k = 128, L = S = 8192, bfloat16
    text = _solution_text("09_speed.ipynb", "ex-09-cost")
    nbytes = 16 * 8192 * 8192 * 2
    assert nbytes == 2**31 and "2^{31}" in text and "2$ GiB" in text
    gflop = 16 * 4 * 8192 * 8192 * 128 / 1e9
    assert "about 550 GFLOP" in text and abs(gflop - 550) < 1
    assert f"{gflop * 1e9:.1e}".startswith("5.5e+11") and "5.5 \\times 10^{11}" in text
    # Exercise 9.2: the online step from (1, 0) to (3)
    text = _solution_text("09_speed.ipynb", "ex-09-hand")
    assert f"{math.exp(-2):.3f}" in text  # the rescaling factor 0.135
    new_l = math.exp(-2) * (1 + math.exp(-1)) + 1
    assert f"{new_l:.3f}" in text and abs(new_l - sum(math.exp(s - 3) for s in (1, 0, 3))) < 1e-12


# --- chapter 10 ----------------------------------------------------------------------------------
def _softmax_rows(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_check_attention_function_passes_correct_implementations():
    def split(q, k, v):  # the exercise's answer, written independently of lib
        s = q.shape[-1] ** -0.25
        return _softmax_rows((q * s) @ (k * s).T) @ v

    def plain(q, k, v):
        return _softmax_rows(q @ k.T / math.sqrt(q.shape[-1])) @ v

    for fn in (split, plain):
        v = lib.check_attention_function(fn)
        assert v.ok and "0.25" in v.message


@pytest.mark.parametrize("fn, mistake", [
    (lambda q, k, v: _softmax_rows(q @ k.T) @ v, "missing"),
    (lambda q, k, v: _softmax_rows(q @ k.T) / math.sqrt(q.shape[-1]) @ v, "after_softmax"),
    (lambda q, k, v: _softmax_rows(q @ k.T / q.shape[-1]) @ v, "double"),
    (lambda q, k, v: _softmax_rows((q * q.shape[-1] ** -0.25) @ k.T) @ v, "custom"),  # only one side scaled
    (lambda q, k, v: _softmax_rows(q @ k.T / q.shape[-1] ** 1 / 2) @ v, "precedence"),
    (lambda q, k, v: _softmax_rows(q @ k.T / math.sqrt(v.shape[-1])) @ v, "value_width"),
    (lambda q, k, v: q @ k.T, "error"),  # wrong output shape
])
def test_check_attention_function_names_the_mistake(fn, mistake):
    v = lib.check_attention_function(fn)
    assert not v.ok and v.mistake == mistake and v.message


@pytest.mark.parametrize("junk", [None, ..., 3, "softmax(q k / sqrt(d)) v"])
def test_check_attention_function_junk_gets_a_sentence(junk):
    v = lib.check_attention_function(junk)
    assert not v.ok and isinstance(v.message, str) and v.message


def test_check_attention_function_with_a_custom_rule_and_torch():
    import torch
    import torch.nn.functional as F

    mup = lambda d: 1 / d  # noqa: E731
    good = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1 / q.size(-1))  # noqa: E731
    bad = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    assert lib.check_attention_function(good, expected=mup, backend="torch", batch_dims=(1, 1)).ok
    v = lib.check_attention_function(bad, expected=mup, backend="torch")
    assert not v.ok and v.mistake == "default"
    assert torch.is_tensor(torch.zeros(1))  # torch really was used above


def test_chapter10_hand_solutions_state_the_right_numbers():
    # Exercise 10.1: q pre-scaled by head_dim ** -0.5 and SDPA's default on top, head_dim = 128
    text = _solution_text("10_real_code.ipynb", "ex-10-double")
    assert (128 ** -0.5) ** 2 == pytest.approx(1 / 128) and "$1/128$" in text and "scale=1.0" in text
    # Exercise 10.2: 8/d_k against 1/sqrt(d_k)
    text = _solution_text("10_real_code.ipynb", "ex-10-mup")
    assert 8 / 64 == 1 / math.sqrt(64) and "8/64 = 1/8 = 1/\\sqrt{64}" in text
    assert f"{8 / 128:.4f}" in text and f"{1 / math.sqrt(128):.4f}" in text
    assert (1 / math.sqrt(128)) / (8 / 128) == pytest.approx(math.sqrt(2)) and "\\sqrt 2" in text
    # Exercise 10.3: float16 overflow of q·k = d_k r² at d_k = 64, raw and with q pre-scaled
    text = _solution_text("10_real_code.ipynb", "ex-10-f16")
    f16_max = float(np.finfo(np.float16).max)
    r_raw, r_pre = math.sqrt(f16_max / 64), math.sqrt(f16_max / 8)
    assert f"{f16_max / 64:.1f}" in text and f"{r_raw:.1f}" in text
    assert f"{f16_max / 8:.0f}" in text and f"{r_pre:.1f}" in text
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(64 * (r_raw + 0.1) ** 2))
    assert np.isfinite(np.float16(64 * (r_raw - 0.1) ** 2))
    assert 64 * 1000 ** 2 == 6.4e7 and "6.4 \\times 10^{7}" in text
    import torch

    assert f"{torch.finfo(torch.bfloat16).max:.1e}" == "3.4e+38" and "3.4 \\times 10^{38}" in text
