"""Attention metrics against exact values and the explicit Jacobian."""
import math

import numpy as np
import torch

import lib


def test_entropy_known_values():
    np.testing.assert_allclose(lib.attention_entropy(np.full(8, 1 / 8)), math.log(8), rtol=1e-14)
    assert lib.attention_entropy(np.array([1.0, 0.0, 0.0])) == 0.0
    np.testing.assert_allclose(lib.attention_entropy(np.array([[0.5, 0.5], [1.0, 0.0]])), [math.log(2), 0.0])


def test_entropy_matches_torch_distributions(rng):
    p = lib.softmax(rng.standard_normal((5, 7)) * 3)
    ref = torch.distributions.Categorical(probs=torch.from_numpy(p)).entropy().numpy()
    np.testing.assert_allclose(lib.attention_entropy(p), ref, rtol=1e-10)


def test_jacobian_norm_closed_form_matches_explicit_matrix(rng):
    p = lib.softmax(rng.standard_normal((4, 6, 9)) * 2)
    explicit = np.linalg.norm(lib.softmax_jacobian(p), axis=(-2, -1))
    np.testing.assert_allclose(lib.jacobian_norm(p), explicit, rtol=1e-12)
    assert lib.jacobian_norm(np.array([0.0, 1.0, 0.0])) == 0.0  # one-hot: no gradient
    np.testing.assert_allclose(lib.jacobian_norm(np.array([0.5, 0.5])), 0.5)  # |entries| 1/4, four of them


def test_jacobian_norm_accurate_near_saturation():
    """[20, 0, 0]: exact ‖J‖ from the logits, where 1 − p_1 would cancel in float64."""
    z = np.array([20.0, 0.0, 0.0])
    e = math.exp(-20.0)
    p1, p2 = 1 / (1 + 2 * e), e / (1 + 2 * e)
    # J_11 = p1·2p2, J_22 = J_33 = p2(1 − p2), J_12 = J_13 = −p1p2, J_23 = −p2²
    exact = math.sqrt((2 * p1 * p2) ** 2 + 2 * (p2 * (1 - p2)) ** 2 + 4 * (p1 * p2) ** 2 + 2 * p2**4)
    np.testing.assert_allclose(lib.jacobian_norm(lib.softmax(z)), exact, rtol=1e-12)
    # far beyond float64 resolution of p_1: ≈ √10·e^{-50}, since J ≈ e^{-50}·[[2,-1,-1],[-1,1,0],[-1,0,1]]
    np.testing.assert_allclose(lib.jacobian_norm(lib.softmax(np.array([50.0, 0, 0]))), math.sqrt(10) * math.exp(-50),
                               rtol=1e-10)


def test_random_attention_stats_scaled_vs_unscaled():
    raw = lib.random_attention_stats(1024, scale=1.0, n_queries=500)
    sc = lib.random_attention_stats(1024, n_queries=500)
    assert np.median(raw["jacobian_norm"]) < 1e-2 < np.median(sc["jacobian_norm"])
    assert np.median(raw["max_weight"]) > 0.99
    assert set(sc) == {"entropy", "max_weight", "jacobian_norm"} and sc["entropy"].shape == (500,)
    # scaled, the entropy is near ln 32 - 1/2 (the small-spread expansion ln n - s²/2 with s = 1)
    assert abs(np.mean(sc["entropy"]) - (math.log(32) - 0.5)) < 0.1
