"""lib.modern against PyTorch and exact math (chapter 07)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib


def test_l2_normalize_matches_torch(rng):
    x = rng.standard_normal((3, 5, 8))
    x[0, 0] = 0.0  # a zero row: torch divides by eps, giving zeros
    ours = lib.l2_normalize(x)
    ref = F.normalize(torch.from_numpy(x), dim=-1).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(ours[1:], axis=-1), 1.0, rtol=1e-12)
    t = lib.l2_normalize(torch.from_numpy(x))
    assert isinstance(t, torch.Tensor)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("gain", [1.0, 3.5, 10.0])
def test_qk_norm_attention_matches_torch_sdpa(rng, gain):
    q = 7.0 * rng.standard_normal((2, 3, 5, 16))  # a large input scale must not matter
    k = 0.1 * rng.standard_normal((2, 3, 6, 16))
    v = rng.standard_normal((2, 3, 6, 4))
    scores = lib.qk_norm_scores(q, k, gain)
    assert scores.shape == (2, 3, 5, 6)
    assert np.all(np.abs(scores) <= gain + 1e-12)
    out = lib.softmax(scores) @ v
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    ref = F.scaled_dot_product_attention(F.normalize(tq, dim=-1), F.normalize(tk, dim=-1), tv, scale=gain)
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-10, atol=1e-12)
    # cosine similarity, computed independently
    cos = np.einsum("bhld,bhsd->bhls", q, k) / (np.linalg.norm(q, axis=-1)[..., :, None] * np.linalg.norm(k, axis=-1)[..., None, :])
    np.testing.assert_allclose(scores, gain * cos, rtol=1e-10, atol=1e-12)


def test_qk_norm_scores_learnable_gain_gets_gradient():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(4, 8, generator=g), torch.randn(5, 8, generator=g)
    gain = torch.nn.Parameter(torch.tensor(2.0))
    s = lib.qk_norm_scores(q, k, gain)
    s.sum().backward()
    expected = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).T).sum()  # d(gain·Σcos)/d gain = Σcos
    torch.testing.assert_close(gain.grad, expected)


def test_qk_norm_scores_variance_is_one_over_dk():
    # For isotropic random q, k the cosine has E[cos²] = 1/d exactly.
    rng = np.random.default_rng(1)
    for d in (4, 64):
        s = lib.qk_norm_scores(rng.standard_normal((20000, d)), rng.standard_normal((1, d)), 1.0)[:, 0]
        assert abs(np.mean(s * s) * d - 1) < 0.05


def test_qk_norm_scores_rejects_bad_input():
    with pytest.raises(ValueError, match="d_k differs"):
        lib.qk_norm_scores(np.ones((2, 3)), np.ones((2, 4)), 1.0)
    with pytest.raises(ValueError, match="finite"):
        lib.qk_norm_scores(np.ones((2, 3)), np.ones((2, 3)), float("nan"))


def test_mup_scale_values():
    assert lib.mup_scale(64) == pytest.approx(1 / math.sqrt(64))  # agrees with 1/√d at the base width
    for d in (16, 128, 1024):
        assert lib.mup_scale(d) == pytest.approx(8.0 / d)
        assert lib.mup_scale(d, base_d_k=d) == pytest.approx(1 / math.sqrt(d))
    assert lib.mup_scale(256) < 1 / math.sqrt(256)  # smaller than 1/√d above the base
    assert lib.mup_scale(16) > 1 / math.sqrt(16)  # larger below it
    for bad in (0, -4, 2.5):
        with pytest.raises(ValueError, match="positive int"):
            lib.mup_scale(bad)


def test_mup_scale_in_attention_matches_torch(rng):
    q, k, v = rng.standard_normal((5, 256)), rng.standard_normal((7, 256)), rng.standard_normal((7, 3))
    s = lib.mup_scale(256)
    ours = lib.scaled_dot_product_attention(q, k, v, scale=s)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), scale=8 / 256)
    np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-10, atol=1e-12)


def test_length_scaled_softmax_matches_torch_and_closed_form(rng):
    z = rng.standard_normal((3, 10))
    ours = lib.length_scaled_softmax(z, s=0.7)
    ref = torch.softmax(torch.from_numpy(z) * 0.7 * math.log(10), dim=-1).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)
    t = lib.length_scaled_softmax(torch.from_numpy(z), s=0.7)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12, atol=1e-15)
    # one key leads n-1 zeros by margin m: weight n^{sm}/(n^{sm}+n-1)
    for n in (2, 16, 1024):
        zz = np.zeros(n)
        zz[0] = 1.5
        assert lib.length_scaled_softmax(zz)[0] == pytest.approx(n ** 1.5 / (n ** 1.5 + n - 1))
    assert lib.length_scaled_softmax(np.array([3.0]))[0] == 1.0
    # along another axis
    np.testing.assert_allclose(lib.length_scaled_softmax(z.T, s=0.7, axis=0), ours.T, rtol=1e-12)


def test_sigma_reparam_sets_spectral_norm(rng):
    w = rng.standard_normal((12, 7)) * 5
    out = lib.sigma_reparam(w, gamma=2.0)
    assert torch.linalg.matrix_norm(torch.from_numpy(out), ord=2).item() == pytest.approx(2.0)
    np.testing.assert_allclose(out / w, out[0, 0] / w[0, 0])  # only rescaled
    with pytest.raises(ValueError, match="2-D"):
        lib.sigma_reparam(np.ones(3))
    with pytest.raises(ValueError, match="all zeros"):
        lib.sigma_reparam(np.zeros((2, 2)))


def test_correlated_projections_correlation_and_scale():
    w_q, w_k = lib.correlated_projections(256, 128, 0.6, seed=3)
    assert w_q.shape == w_k.shape == (256, 128)
    assert abs(np.corrcoef(w_q.ravel(), w_k.ravel())[0, 1] - 0.6) < 0.01
    assert abs(w_q.var() * 256 - 1) < 0.02 and abs(w_k.var() * 256 - 1) < 0.02
    same_q, same_k = lib.correlated_projections(8, 4, 1.0, seed=0)
    np.testing.assert_array_equal(same_q, same_k)
    # the self-score mean is rho·d_k: E[x W_Q W_Kᵀ xᵀ] = tr(W_Q W_Kᵀ) ≈ rho·d_k
    w_q, w_k = lib.correlated_projections(512, 64, 0.5, seed=4)
    assert abs(np.trace(w_q @ w_k.T) - 0.5 * 64) < 3.0
    for bad in (1.5, -1.01):
        with pytest.raises(ValueError, match="rho"):
            lib.correlated_projections(8, 4, bad)
    with pytest.raises(ValueError, match="d_k"):
        lib.correlated_projections(8, 0, 0.1)
