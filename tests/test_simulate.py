"""Simulation helpers against exact moments (Var = d_k σ_q² σ_k² (1 + ρ²), mean d_k ρ σ_q σ_k)."""
import numpy as np
import pytest

import lib


@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_raw_and_scaled_variance(d_k):
    n = 20_000                        # the 5-SE bands below scale with n: still within 5 % at d_k = 256
    raw = lib.sample_dot_products(d_k, n, seed=1)
    # the standard error of a sample variance of this law is about d_k·sqrt((2 + 6/d_k)/n)
    se = d_k * np.sqrt((2 + 6 / d_k) / n)
    assert abs(raw.var() - d_k) < 5 * se
    assert abs(raw.mean()) < 5 * np.sqrt(d_k / n)
    scaled = lib.sample_dot_products(d_k, n, seed=1, scale=None)
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


# ---- exam totals (chapter `test-scores`) -------------------------------------------------------------

@pytest.mark.parametrize("n_subjects", [1, 5, 20])
def test_exam_totals_moments(n_subjects):
    n, mean, sd = 200_000, 50.0, 10.0
    t = lib.exam_totals(n, n_subjects, mean=mean, sd=sd, seed=5)
    assert t.shape == (n,)
    var = n_subjects * sd**2
    assert abs(t.mean() - n_subjects * mean) < 5 * np.sqrt(var / n)
    # Gaussian totals: SE of the sample variance is var·sqrt(2/(n-1))
    assert abs(t.var(ddof=1) - var) < 5 * var * np.sqrt(2 / (n - 1))


def test_exam_totals_correlated_subjects():
    n, k, sd, rho = 200_000, 10, 10.0, 0.3
    t = lib.exam_totals(n, k, sd=sd, rho=rho, seed=6)
    var = k * sd**2 * (1 + (k - 1) * rho)          # 3700, not 1000
    assert abs(t.var(ddof=1) / var - 1) < 0.02
    # rho = 1: every subject repeats the same score, so the total is n_subjects times it
    t1, s1 = lib.exam_totals(50, 7, rho=1.0, seed=7, return_scores=True)
    np.testing.assert_allclose(s1, np.repeat(s1[:, :1], 7, axis=1))
    np.testing.assert_allclose(t1, 7 * s1[:, 0])


def test_exam_totals_exact_cases_and_scores():
    # sd = 0: every student gets exactly n_subjects · mean
    np.testing.assert_array_equal(lib.exam_totals(4, 3, mean=50.0, sd=0.0), np.full(4, 150.0))
    t, s = lib.exam_totals(10, 4, seed=8, return_scores=True)
    assert s.shape == (10, 4)
    np.testing.assert_allclose(t, s.sum(axis=1))


def test_exam_totals_seeded_and_validated():
    a = lib.exam_totals(6, 5, seed=9)
    np.testing.assert_array_equal(a, lib.exam_totals(6, 5, seed=9))
    np.testing.assert_array_equal(a, lib.exam_totals(6, 5, seed=np.random.default_rng(9)))
    assert not np.array_equal(a, lib.exam_totals(6, 5, seed=10))
    with pytest.raises(ValueError, match="n_students"):
        lib.exam_totals(0, 5)
    with pytest.raises(TypeError, match="n_subjects must be an int"):
        lib.exam_totals(5, 2.5)
    with pytest.raises(ValueError, match="sd"):
        lib.exam_totals(5, 5, sd=-1.0)
    with pytest.raises(ValueError, match="rho"):
        lib.exam_totals(5, 5, rho=-0.2)
    with pytest.raises(TypeError, match="mean"):
        lib.exam_totals(5, 5, mean="fifty")


# ---- the sampling noise of a variance (chapter `variance`) ----------------------------------------

def test_variance_standard_error_exact_values():
    # Normal, n = 2: s² = σ²·χ²₁, so Var(s²) = 2σ⁴ and SE = √2·σ²
    assert lib.variance_standard_error(3.0, 2) == pytest.approx(np.sqrt(2) * 3.0)
    # ±1 coins (κ = −2), enumerate all 2³ samples of size 3 exactly
    import itertools
    s2 = [np.var(x, ddof=1) for x in itertools.product([-1.0, 1.0], repeat=3)]
    assert lib.variance_standard_error(1.0, 3, excess_kurtosis=-2.0) == pytest.approx(np.std(s2), abs=1e-12)
    # the chapter-03 example: q·k with d_k = 2 (σ² = 2, κ = 3), n = 50
    assert lib.variance_standard_error(2.0, 50, 3.0) == pytest.approx(2 * np.sqrt(2 / 49 + 3 / 50))
    # arrays broadcast
    np.testing.assert_allclose(lib.variance_standard_error(np.array([1.0, 4.0]), 10), np.array([1.0, 4.0]) * np.sqrt(2 / 9))


@pytest.mark.parametrize("d_k", [1, 2, 16])
def test_variance_standard_error_against_simulation(d_k):
    n, repeats = 40, 4000
    v = lib.repeated_variances(d_k, n, repeats, seed=11)
    assert v.shape == (repeats,)
    se = lib.variance_standard_error(d_k, n, 6 / d_k)
    assert abs(v.mean() - d_k) < 5 * se / np.sqrt(repeats)           # s² is unbiased
    assert abs(v.std() / se - 1) < 0.12                              # its spread matches the theory
    # a theory that ignores the heavy tails (κ = 0) is measurably too small at d_k = 1
    if d_k == 1:
        assert v.std() > 1.3 * lib.variance_standard_error(d_k, n, 0.0)


def test_repeated_variances_scaled_and_seeded():
    a = lib.repeated_variances(64, 20, 30, scale=None, seed=1)
    np.testing.assert_array_equal(a, lib.repeated_variances(64, 20, 30, scale=None, seed=1))
    raw = lib.repeated_variances(64, 20, 30, seed=1)
    np.testing.assert_allclose(raw / 64, a)
    with pytest.raises(ValueError, match="n must"):
        lib.repeated_variances(4, 1, 10)
    with pytest.raises(ValueError, match="repeats"):
        lib.repeated_variances(4, 10, 0)
    with pytest.raises(ValueError, match="n must"):
        lib.variance_standard_error(1.0, 1)
    with pytest.raises(ValueError, match="non-negative"):
        lib.variance_standard_error(-1.0, 10)
    with pytest.raises(ValueError, match="at least -2"):
        lib.variance_standard_error(1.0, 10, -3.0)


# ---- excess kurtosis (chapter `variance`) ---------------------------------------------------------

def test_excess_kurtosis_exact_values():
    assert lib.excess_kurtosis([-1.0, 1.0]) == pytest.approx(-2.0)
    assert lib.excess_kurtosis([0.0, 0.0, 0.0, 1.0]) == pytest.approx(-2.0 / 3.0)
    x = np.random.default_rng(3).standard_normal((3, 50))
    from scipy import stats
    np.testing.assert_allclose(lib.excess_kurtosis(x, axis=1), stats.kurtosis(x, axis=1, fisher=True, bias=True))


@pytest.mark.parametrize("d_k", [1, 4, 16])
def test_excess_kurtosis_of_scaled_scores(d_k):
    x = lib.sample_dot_products(d_k, 400_000, seed=12, scale=None)
    assert abs(lib.excess_kurtosis(x) - 6 / d_k) < 0.1 * (6 / d_k) + 0.02
    u = np.random.default_rng(4).uniform(size=400_000)
    assert lib.excess_kurtosis(u) == pytest.approx(-1.2, abs=0.02)


def test_excess_kurtosis_validated():
    with pytest.raises(ValueError, match="at least 2"):
        lib.excess_kurtosis([1.0])
    with pytest.raises(ValueError, match="constant"):
        lib.excess_kurtosis([2.0, 2.0, 2.0])


def test_scale_means_what_it_means_in_attention():
    """scale=None is 1/√d_k here as in lib.scaled_dot_product_attention; the old 'sqrt' is refused."""
    raw = lib.sample_dot_products(16, 50, seed=5)
    np.testing.assert_allclose(lib.sample_dot_products(16, 50, seed=5, scale=None), raw / 4.0, rtol=1e-15)
    np.testing.assert_allclose(lib.sample_dot_products(16, 50, seed=5, scale=0.5), raw * 0.5, rtol=1e-15)
    with pytest.raises(TypeError, match="scale=None"):
        lib.sample_dot_products(16, 50, scale="sqrt")
