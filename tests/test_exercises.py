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

def _torch_count(d_model, h, bias=True):
    """Independent count: PyTorch's own multi-head layer and lib's, parameter by parameter."""
    torch = pytest.importorskip("torch")
    theirs = sum(p.numel() for p in torch.nn.MultiheadAttention(d_model, h, bias=bias).parameters())
    ours = sum(p.numel() for p in lib.MultiHeadAttention(d_model, h, bias=bias).parameters())
    assert ours == theirs
    return ours


@pytest.mark.parametrize("d_model, h, bias", [(768, 12, True), (768, 24, True), (32, 4, False), (12, 3, True)])
def test_mha_params_right_answer_is_the_counted_one(d_model, h, bias):
    n = _torch_count(d_model, h, bias)
    v = lib.check_mha_params(n, d_model, h, bias=bias)
    assert v.ok and v.mistake is None and f"{n:,d}" in v.message, v.message
    assert lib.check_mha_params(float(n), d_model, h, bias=bias).ok
    assert not lib.check_mha_params(n + 1, d_model, h, bias=bias).ok


@pytest.mark.parametrize("answer, mistake, words", [
    (4 * 768**2, "no_biases", "not their bias vectors"),
    (3 * 768**2 + 3 * 768, "three_projections", "W_O is a d_model × d_model matrix too"),
    (3 * 768**2, "three_projections", "add W_O and the four bias vectors"),
    (4 * 768 * 64 + 4 * 64, "one_head", "one head"),
    (2_000_000, None, "You have 2,000,000, which is too small"),
    (12, None, "h does not appear"),
])
def test_mha_params_typical_wrong_answers(answer, mistake, words):
    v = lib.check_mha_params(answer, 768, 12)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message
    assert "2,362,368" not in v.message and "2362368" not in v.message      # never gives the answer away


def test_mha_params_without_biases():
    n = _torch_count(32, 4, bias=False)
    assert lib.check_mha_params(4 * 32**2, 32, 4, bias=False).ok and n == 4 * 32**2
    assert lib.check_mha_params(4 * 32**2 + 4 * 32, 32, 4, bias=False).mistake == "extra_biases"


@pytest.mark.parametrize("answer", [None, ..., "abc", [1, 2], np.nan, {"a": 1}, 1 + 2j, True])
def test_mha_params_never_raises_on_the_answer(answer):
    v = lib.check_mha_params(answer, 768, 12)
    assert isinstance(v, lib.Verdict) and not v.ok and v.message


def test_mha_params_bad_inputs_raise_named_errors():
    with pytest.raises(ValueError, match="not divisible"):
        lib.check_mha_params(1, 768, 10)
    with pytest.raises(TypeError, match="d_model must be an int"):
        lib.check_mha_params(1, 768.0, 12)
    with pytest.raises(ValueError, match="num_heads must be positive"):
        lib.check_mha_params(1, 768, 0)
    with pytest.raises(TypeError, match="bias must be True or False"):
        lib.check_mha_params(1, 768, 12, bias=1)



# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
