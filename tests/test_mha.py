"""lib.MultiHeadAttention and the head helpers against torch.nn.MultiheadAttention."""
import numpy as np
import pytest
import torch

import lib
from conftest import DEVICES


def test_split_merge_roundtrip_and_layout(rng):
    x = rng.standard_normal((2, 5, 12))
    h = lib.split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(h[:, 1], x[..., 4:8])  # head 1 holds columns 4..7
    np.testing.assert_array_equal(lib.merge_heads(h), x)
    t = torch.from_numpy(x)
    assert torch.equal(lib.merge_heads(lib.split_heads(t, 4)), t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_multihead_attention(dtype, device, bias):
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(32, 4, bias=bias, batch_first=True, dtype=dtype, device=device).eval()
    ours = lib.MultiHeadAttention.from_torch(ref)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 7, 32, generator=g, dtype=dtype).to(device)
    mem = torch.randn(3, 5, 32, generator=g, dtype=dtype).to(device)
    tol = (dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10))
    if device == "cuda":
        tol = dict(rtol=1e-3, atol=1e-3)
    # self-attention with weights, per head
    ref_out, ref_w = ref(x, x, x, average_attn_weights=False)
    out, w = ours(x, return_weights=True)
    torch.testing.assert_close(out, ref_out, **tol)
    torch.testing.assert_close(w, ref_w, **tol)
    # cross-attention
    torch.testing.assert_close(ours(x, mem, mem), ref(x, mem, mem, need_weights=False)[0], **tol)
    # boolean mask: ours True = may attend; torch's True = may NOT attend
    allowed = torch.rand(7, 7, generator=g).to(device) < 0.6
    allowed[:, 0] = True
    torch.testing.assert_close(ours(x, mask=allowed), ref(x, x, x, attn_mask=~allowed, need_weights=False)[0], **tol)
    # causal
    causal = torch.nn.Transformer.generate_square_subsequent_mask(7, device=device, dtype=dtype)
    torch.testing.assert_close(ours(x, is_causal=True), ref(x, x, x, attn_mask=causal, need_weights=False)[0], **tol)


def test_per_head_scale_is_one_over_sqrt_dk():
    """With identity projections, head h's weights are softmax(q_h k_hᵀ/√d_k) of its own slice."""
    m = lib.MultiHeadAttention(8, 2, bias=False).double()
    with torch.no_grad():
        for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
            p.weight.copy_(torch.eye(8))
    x = torch.randn(1, 3, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    _, w = m(x, return_weights=True)
    h1 = x[0, :, 4:8]
    torch.testing.assert_close(w[0, 1], torch.softmax(h1 @ h1.T / 2.0, -1))  # √d_k = √4 = 2, not √8


def test_gradients_flow_to_all_projections():
    m = lib.MultiHeadAttention(16, 4)
    m(torch.randn(2, 5, 16)).pow(2).sum().backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("num_heads", [1, 4, 16])
def test_parameter_count_and_matmul_flops_do_not_depend_on_heads(num_heads):
    """The `multi-head` chapter: 4d² + 4d parameters and 8Ld² + 4L²d matmul FLOPs, whatever the number of heads."""
    from torch.utils.flop_counter import FlopCounterMode

    d, L = 64, 10
    m = lib.MultiHeadAttention(d, num_heads)
    assert sum(p.numel() for p in m.parameters()) == 4 * d * d + 4 * d
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        m(torch.randn(1, L, d), return_weights=True)
    assert counter.get_total_flops() == 8 * L * d * d + 4 * L * L * d
