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

def _moments_by_quadrature(d_k, rho, sq, sk):
    """Raw E[q·k] and Var(q·k) by Gauss-Hermite quadrature over one correlated normal pair (no Isserlis)."""
    from numpy.polynomial.hermite_e import hermegauss

    z, w = hermegauss(40)                      # ∫ f(z) e^{-z²/2} dz ≈ Σ w f(z)
    w = w / w.sum()
    z1, z2 = np.meshgrid(z, z, indexing="ij")
    ww = np.outer(w, w)
    x = sq * z1                                # (x, y) jointly normal with correlation rho
    y = sk * (rho * z1 + np.sqrt(1 - rho**2) * z2)
    m1, m2 = np.sum(ww * x * y), np.sum(ww * (x * y) ** 2)
    return d_k * m1, d_k * (m2 - m1**2)


@pytest.mark.parametrize("d_k, rho, sq, sk", [(256, 0.1, 1.0, 1.0), (64, -0.3, 1.5, 0.5), (1, 0.9, 2.0, 1.0)])
def test_correlated_moments_right_answer_passes(d_k, rho, sq, sk):
    mean, var = _moments_by_quadrature(d_k, rho, sq, sk)
    scaled = np.array([mean / np.sqrt(d_k), var / d_k])
    v = lib.check_correlated_score_moments(scaled, d_k, rho, sigma_q=sq, sigma_k=sk)
    assert v.ok and v.mistake is None, v
    assert lib.check_correlated_score_moments(np.round(scaled, 3), d_k, rho, sigma_q=sq, sigma_k=sk).ok
    assert lib.check_correlated_score_moments([mean, var], d_k, rho, sigma_q=sq, sigma_k=sk, scaled=False).ok
    torch = pytest.importorskip("torch")
    assert lib.check_correlated_score_moments(torch.tensor(scaled), d_k, rho, sigma_q=sq, sigma_k=sk).ok
    assert lib.check_correlated_score_moments([list(scaled)], d_k, rho, sigma_q=sq, sigma_k=sk).ok


def test_correlated_moments_agree_with_a_simulation():
    rng = np.random.default_rng(0)
    d_k, rho, n = 256, 0.1, 50_000
    q = rng.standard_normal((n, d_k))
    k = rho * q + np.sqrt(1 - rho**2) * rng.standard_normal((n, d_k))
    z = np.einsum("nd,nd->n", q, k) / np.sqrt(d_k)
    mean, var = _moments_by_quadrature(d_k, rho, 1.0, 1.0)
    assert abs(z.mean() - mean / np.sqrt(d_k)) < 4 * np.sqrt(var / d_k / n)
    assert abs(z.var() / (var / d_k) - 1) < 0.03


# The exercise of chapter 7: d_k = 256, ρ = 0.1, unit standard deviations: right [1.6, 1.01].
_EX = dict(d_k=256, rho=0.1)


@pytest.mark.parametrize("answer, mistake", [
    ([0.1 * 256, 256 * 1.01], "unscaled"),                         # forgot the scale
    ([0.0, 1.0], "assumed_independence"),                          # ρ = 0
    ([1.6, 1.0], "forgot_rho_squared"),                            # variance without 1 + ρ²
    ([25.6, 256.0], "unscaled_forgot_rho_squared"),
    ([1.6, 1.1], "rho_not_squared"),
    ([1.6, 256 * 1.01 / 16], "variance_divided_by_sqrt_dk"),
    ([0.1, 1.01], "mean_divided_by_dk"),
    ([1.6, np.sqrt(1.01)], "standard_deviation"),
    ([1.01, 1.6], "swapped"),
    ([1.6, 2.0], "wrong_variance"),
    ([1.5, 1.01], "wrong_mean"),
    ([3.0, 3.0], "wrong_both"),
])
def test_correlated_moments_name_the_typical_mistakes(answer, mistake):
    v = lib.check_correlated_score_moments(answer, **_EX)
    assert not v.ok and v.mistake == mistake, v
    assert "1.6" not in v.message and "1.01" not in v.message      # the verdict never gives the answer away


def test_correlated_moments_raw_question_and_its_mistake():
    v = lib.check_correlated_score_moments([1.6, 1.01], 256, 0.1, scaled=False)
    assert not v.ok and v.mistake == "scaled"
    assert lib.check_correlated_score_moments([25.6, 258.56], 256, 0.1, scaled=False).ok


def test_correlated_moments_independence_hint_only_when_it_differs():
    # With ρ = 0 the independent answer is the right one: it must pass, not be called a mistake.
    assert lib.check_correlated_score_moments([0.0, 1.0], 64, 0.0).ok


@pytest.mark.parametrize("answer, mistake", [
    (None, "missing"), (..., "missing"), ("abc", "unreadable"), ([1.6], "wrong_shape"),
    ([1.6, 1.01, 0.0], "wrong_shape"), ([np.nan, 1.0], "not_finite"), ([[1, 2], [3]], "unreadable"),
])
def test_correlated_moments_junk_gets_a_sentence(answer, mistake):
    v = lib.check_correlated_score_moments(answer, **_EX)
    assert not v.ok and v.mistake == mistake and v.message


@pytest.mark.parametrize("kwargs, exc", [
    (dict(d_k=0, rho=0.1), ValueError), (dict(d_k=2.5, rho=0.1), TypeError), (dict(d_k=True, rho=0.1), TypeError),
    (dict(d_k=16, rho=1.5), ValueError), (dict(d_k=16, rho="a"), TypeError),
    (dict(d_k=16, rho=0.1, sigma_q=0.0), ValueError), (dict(d_k=16, rho=0.1, sigma_k=float("nan")), ValueError),
])
def test_correlated_moments_bad_inputs_raise(kwargs, exc):
    with pytest.raises(exc, match="self-check set-up"):
        lib.check_correlated_score_moments([1.0, 1.0], **kwargs)



# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
