"""Simulation helpers against exact moments (Var = d_k σ_q² σ_k² (1 + ρ²), mean d_k ρ σ_q σ_k)."""
import numpy as np
import pytest

import lib


@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_raw_and_scaled_variance(d_k):
    n = 100_000
    raw = lib.sample_dot_products(d_k, n, seed=1)
    # the standard error of a sample variance of this law is about d_k·sqrt((2 + 6/d_k)/n)
    se = d_k * np.sqrt((2 + 6 / d_k) / n)
    assert abs(raw.var() - d_k) < 5 * se
    assert abs(raw.mean()) < 5 * np.sqrt(d_k / n)
    scaled = lib.sample_dot_products(d_k, n, seed=1, scale="sqrt")
    np.testing.assert_allclose(scaled, raw / np.sqrt(d_k))


def test_general_formula_with_correlation():
    d_k, n, sq, sk, rho = 32, 200_000, 2.0, 0.5, 0.6
    x = lib.sample_dot_products(d_k, n, seed=2, sigma_q=sq, sigma_k=sk, rho=rho)
    mean, var = d_k * rho * sq * sk, d_k * sq**2 * sk**2 * (1 + rho**2)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / n)
    assert abs(x.var() / var - 1) < 0.02


def test_seeded_and_validated():
    np.testing.assert_array_equal(lib.sample_dot_products(8, 5, seed=3), lib.sample_dot_products(8, 5, seed=3))
    assert not np.array_equal(lib.sample_dot_products(8, 5, seed=3), lib.sample_dot_products(8, 5, seed=4))
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        lib.sample_dot_products(0, 5)
    with pytest.raises(ValueError, match="rho"):
        lib.sample_dot_products(4, 5, rho=1.5)
