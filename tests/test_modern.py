"""lib.modern against PyTorch and exact math (chapter `caveats`)."""
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


@pytest.mark.parametrize("rms", [False, True])
def test_qk_layer_norm_attention_matches_torch(rng, rms):
    # The LayerNorm/RMSNorm family: torch's own norms, then SDPA with its default scale 1/√d_k.
    q, k = 5.0 * rng.standard_normal((2, 3, 5, 16)) + 2.0, rng.standard_normal((2, 3, 6, 16))
    v = rng.standard_normal((2, 3, 6, 4))
    g_q, g_k = rng.uniform(0.5, 1.5, 16), rng.uniform(0.5, 1.5, 16)
    scores = lib.qk_layer_norm_scores(q, k, rms=rms, weight_q=g_q, weight_k=g_k, eps=1e-6)
    assert scores.shape == (2, 3, 5, 6)
    tq, tk, tv, tgq, tgk = (torch.from_numpy(a) for a in (q, k, v, g_q, g_k))
    if rms:
        nq, nk = F.rms_norm(tq, (16,), tgq, eps=1e-6), F.rms_norm(tk, (16,), tgk, eps=1e-6)
    else:
        nq, nk = F.layer_norm(tq, (16,), tgq, None, eps=1e-6), F.layer_norm(tk, (16,), tgk, None, eps=1e-6)
    ref = F.scaled_dot_product_attention(nq, nk, tv)          # default scale: 1/√16
    np.testing.assert_allclose(lib.softmax(scores) @ v, ref.numpy(), rtol=1e-10, atol=1e-12)
    unscaled = lib.qk_layer_norm_scores(q, k, rms=rms, weight_q=g_q, weight_k=g_k, scale=1.0, eps=1e-6)
    np.testing.assert_allclose(unscaled, (nq @ nk.transpose(-1, -2)).numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(scores, unscaled / 4.0, rtol=1e-12)


@pytest.mark.parametrize("rms", [False, True])
def test_qk_layer_norm_scores_are_dk_times_a_cosine(rng, rms):
    # Unit gains: each normalised row has length √d_k, so the unscaled score is d_k·cos (of the centred
    # rows for LayerNorm), whatever the size of q and k; the default score is √d_k·cos.
    d = 32
    q, k = 9.0 * rng.standard_normal((4, d)) + 3.0, 0.1 * rng.standard_normal((7, d)) - 1.0
    qc, kc = (q - q.mean(-1, keepdims=True), k - k.mean(-1, keepdims=True)) if not rms else (q, k)
    cos = (qc @ kc.T) / np.outer(np.linalg.norm(qc, axis=-1), np.linalg.norm(kc, axis=-1))
    raw = lib.qk_layer_norm_scores(q, k, rms=rms, scale=1.0, eps=1e-12)
    np.testing.assert_allclose(raw, d * cos, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(lib.qk_layer_norm_scores(q, k, rms=rms, eps=1e-12), np.sqrt(d) * cos,
                               rtol=1e-9, atol=1e-9)


def test_qk_layer_norm_scores_keep_the_dk_growth():
    # Isotropic random q, k: the unscaled spread grows like √d_k, the scaled one stays 1 (E[cos²] = 1/d).
    rng = np.random.default_rng(2)
    for d in (16, 256):
        q, k = rng.standard_normal((20000, d)), rng.standard_normal((1, d))
        s = lib.qk_layer_norm_scores(q, k, rms=True)[:, 0]
        assert abs(np.mean(s * s) - 1) < 0.05
        raw = lib.qk_layer_norm_scores(q, k, rms=True, scale=1.0)[:, 0]
        assert abs(np.mean(raw * raw) / d - 1) < 0.05


def test_qk_layer_norm_scores_torch_and_gradients():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(3, 8, generator=g, dtype=torch.float64), torch.randn(5, 8, generator=g, dtype=torch.float64)
    w_q = torch.nn.Parameter(torch.ones(8, dtype=torch.float64))
    w_k = torch.nn.Parameter(torch.full((8,), 0.5, dtype=torch.float64))
    s = lib.qk_layer_norm_scores(q, k, rms=True, weight_q=w_q, weight_k=w_k)
    ref = lib.qk_layer_norm_scores(q.numpy(), k.numpy(), rms=True, weight_q=np.ones(8), weight_k=np.full(8, 0.5))
    np.testing.assert_allclose(s.detach().numpy(), ref, rtol=1e-12)
    s.sum().backward()
    assert w_q.grad is not None and w_k.grad is not None and torch.all(torch.isfinite(w_q.grad))
    # d/dw_q of Σ scale·(n_q ⊙ w_q)·(n_k ⊙ w_k) = scale · Σ_rows n_q ⊙ Σ_rows (n_k ⊙ w_k)
    n_q, n_k = F.rms_norm(q, (8,), eps=1e-6), F.rms_norm(k, (8,), eps=1e-6)
    expected = n_q.sum(0) * (n_k * 0.5).sum(0) / math.sqrt(8)
    torch.testing.assert_close(w_q.grad, expected)


def test_qk_layer_norm_scores_rejects_bad_input():
    with pytest.raises(ValueError, match="d_k differs"):
        lib.qk_layer_norm_scores(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="weight_q"):
        lib.qk_layer_norm_scores(np.ones((2, 3)), np.ones((2, 3)), weight_q=np.ones(4))
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="scale"):
            lib.qk_layer_norm_scores(np.ones((2, 3)), np.ones((2, 3)), scale=bad)
    with pytest.raises(ValueError, match="eps"):
        lib.qk_layer_norm_scores(np.ones((2, 3)), np.ones((2, 3)), eps=0.0)
    with pytest.raises(TypeError, match="mixed"):
        lib.qk_layer_norm_scores(np.ones((2, 3)), torch.ones(2, 3))


def test_mup_scale_values():
    assert lib.mup_scale(64) == pytest.approx(1 / math.sqrt(64))  # agrees with 1/√d at the base width
    for d in (16, 128, 1024):
        assert lib.mup_scale(d) == pytest.approx(8.0 / d)
        assert lib.mup_scale(d, base_d_k=d) == pytest.approx(1 / math.sqrt(d))
    assert lib.mup_scale(256) < 1 / math.sqrt(256)  # smaller than 1/√d above the base
    assert lib.mup_scale(16) > 1 / math.sqrt(16)  # larger below it
    for bad in (0, -4):
        with pytest.raises(ValueError, match="positive int"):
            lib.mup_scale(bad)
    with pytest.raises(TypeError, match="d_k must be an int"):
        lib.mup_scale(2.5)


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
