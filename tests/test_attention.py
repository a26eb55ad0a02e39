"""lib.scaled_dot_product_attention against PyTorch's own implementation.

The reference is ``torch.nn.functional.scaled_dot_product_attention`` (for the
output) and ``torch.softmax`` over PyTorch-computed scores (for the weights):
code nobody here wrote.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib
from conftest import DEVICES, TOL, TORCH_DTYPE
from conftest import input_grads
from conftest import make_qkv as _make

DTYPES = [np.float32, np.float64]
# the reference (the formula as written) and the fast path (the `speed` chapter's speed-ups) pass the same checks
IMPLS = [lib.scaled_dot_product_attention, lib.attention_fast]


@pytest.fixture(params=IMPLS, ids=["reference", "fast"])
def attn(request):
    return request.param

# (batch shape, L, S, d_k, d_v): plain, extra batch dims, L != S, d_v != d_k, a single query
SHAPES = [((), 4, 4, 8, 8), ((2,), 5, 7, 16, 3), ((2, 3), 6, 6, 4, 5), ((3, 1, 2), 1, 9, 32, 2)]


def _ref(q, k, v, mask=None, scale=None, is_causal=False):
    """PyTorch's fused function and its weights, from NumPy inputs (float64 scores for the weights)."""
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    tm = None if mask is None else torch.from_numpy(mask)
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, scale=scale, is_causal=is_causal)
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (tq @ tk.transpose(-2, -1)) * s
    if is_causal:
        tm = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if tm is not None:
        scores = scores.masked_fill(~tm, float("-inf")) if tm.dtype == torch.bool else scores + tm
    w = torch.softmax(scores, dim=-1)
    w = torch.nan_to_num(w, nan=0.0)  # torch.softmax gives NaN for fully masked rows; SDPA gives 0
    return out.numpy(), w.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_numpy_matches_torch(rng, dtype, shape, scale, attn):
    q, k, v = _make(rng, *shape, dtype)
    out, w = attn(q, k, v, scale=scale, return_weights=True)
    ref_out, ref_w = _ref(q, k, v, scale=scale)
    assert out.dtype == dtype and w.dtype == dtype
    assert out.shape == ref_out.shape and w.shape == ref_w.shape
    np.testing.assert_allclose(out, ref_out, **TOL[dtype])
    np.testing.assert_allclose(w, ref_w, **TOL[dtype])
    np.testing.assert_allclose(attn(q, k, v, scale=scale), ref_out, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("return_weights", [False, True])
def test_torch_path_matches_torch(rng, dtype, device, shape, return_weights, attn):
    q, k, v = _make(rng, *shape, dtype)
    ref_out, ref_w = _ref(q, k, v)
    tq, tk, tv = (torch.from_numpy(a).to(device) for a in (q, k, v))
    res = attn(tq, tk, tv, return_weights=return_weights)
    out = res[0] if return_weights else res
    assert isinstance(out, torch.Tensor) and out.device.type == device and out.dtype == TORCH_DTYPE[dtype]
    tol = TOL[dtype] if device == "cpu" else dict(rtol=1e-3, atol=1e-3)  # TF32 may be on for CUDA matmuls
    np.testing.assert_allclose(out.cpu().numpy(), ref_out, **tol)
    if return_weights:
        np.testing.assert_allclose(res[1].cpu().numpy(), ref_w, **tol)


def _bool_mask(rng, shape, L, S):
    m = rng.random((*shape, L, S)) < 0.6
    m[..., 0] = True  # every query may see key 0 ...
    return m


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["bool", "additive", "bool-broadcast", "additive-broadcast", "causal"])
def test_masks_match_torch(rng, dtype, kind, attn):
    batch, L, S, d_k, d_v = (2, 3), 5, 6, 8, 4
    q, k, v = _make(rng, batch, L, S, d_k, d_v, dtype)
    mask, causal = None, False
    if kind.startswith("bool"):
        mask = _bool_mask(rng, (2, 1) if "broadcast" in kind else batch, L, S)
    elif kind.startswith("additive"):
        shape = (L, S) if "broadcast" in kind else (*batch, L, S)
        mask = np.where(rng.random(shape) < 0.3, -np.inf, rng.standard_normal(shape)).astype(dtype)
        mask[..., 0] = 0.0
    else:
        causal = True
    out, w = attn(q, k, v, mask, is_causal=causal, return_weights=True)
    ref_out, ref_w = _ref(q, k, v, mask, is_causal=causal)
    np.testing.assert_allclose(out, ref_out, **TOL[dtype])
    np.testing.assert_allclose(w, ref_w, **TOL[dtype])
    if kind.startswith("bool"):
        assert np.all(w[~np.broadcast_to(mask, w.shape)] == 0)  # masked keys get exactly zero weight
    # the torch path, with and without weights
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    tm = None if mask is None else torch.from_numpy(mask)
    for rw in (False, True):
        res = attn(tq, tk, tv, tm, is_causal=causal, return_weights=rw)
        np.testing.assert_allclose((res[0] if rw else res).numpy(), ref_out, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_row_gives_zeros_like_torch(rng, dtype, attn):
    q, k, v = _make(rng, (2,), 3, 4, 8, 5, dtype)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    ref_out, _ = _ref(q, k, v, mask)
    assert np.all(ref_out[:, 1] == 0)  # what PyTorch does
    out, w = attn(q, k, v, mask, return_weights=True)
    assert np.all(out[:, 1] == 0) and np.all(w[:, 1] == 0)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref_out, **TOL[dtype])
    t = attn(*(torch.from_numpy(a) for a in (q, k, v)), torch.from_numpy(mask),
                                         return_weights=True)
    assert torch.all(t[0][:, 1] == 0) and torch.all(t[1][:, 1] == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_and_explicit_torch_paths_agree_with_gradients(dtype, attn):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 16, generator=g, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.rand(6, 6, generator=g) < 0.7
    mask[:, 0] = True
    up = torch.randn(2, 4, 6, 16, generator=g, dtype=dtype)  # an upstream gradient of order 1
    fused = input_grads(lambda: attn(q, k, v, mask), (q, k, v), up)
    explicit = input_grads(lambda: attn(q, k, v, mask, return_weights=True)[0],
                           (q, k, v), up)
    # gradients sum more float32 products than outputs do: relative 1e-4 there, 1e-10 in float64
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    for a, b in zip(fused, explicit):
        torch.testing.assert_close(a, b, **tol)
    # and the gradient itself is PyTorch's: compare with autograd through F.sdpa
    ref = input_grads(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v), up)
    for r, mine in zip(ref, explicit):
        torch.testing.assert_close(r, mine, **tol)


@pytest.mark.parametrize("shape", [(7, 16), (3, 7, 16), (2, 3, 5, 7, 16)])
def test_torch_path_any_rank_equals_sdpa(rng, shape, attn):
    """Any rank gives PyTorch's numbers and shape (the fast path presents them to SDPA as 4-D)."""
    q, k, v = (torch.from_numpy(rng.standard_normal(shape)) for _ in range(3))
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        got = attn(q, k, v, is_causal=causal)
        assert got.shape == ref.shape
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)


def test_fast_path_shifts_by_the_maximum_when_exp_could_overflow(rng):
    """Scores far beyond exp's range (|q·k| ~ 1e4) need the max shift; small ones may skip it. Both
    give the reference's numbers (and PyTorch's): the skip changes the work, never the result."""
    for size in (1e-2, 1.0, 1e3):
        q, k, v = (rng.standard_normal((3, 6, 32)) * size for _ in range(3))
        for dtype in (np.float32, np.float64):
            a, b, c = (x.astype(dtype) for x in (q, k, v))
            fast, ref = lib.attention_fast(a, b, c), lib.scaled_dot_product_attention(a, b, c)
            assert np.all(np.isfinite(fast))
            np.testing.assert_allclose(fast, ref, **TOL[dtype])
            np.testing.assert_allclose(fast, _ref(a, b, c)[0], **TOL[dtype])


def test_scale_has_one_meaning():
    q = np.eye(2)
    with pytest.raises(TypeError, match=r"scale=None"):
        lib.scaled_dot_product_attention(q, q, q, scale="sqrt")
    with pytest.raises(TypeError, match="real number"):
        lib.attention_fast(q, q, q, scale=True)
    with pytest.raises(ValueError, match="finite"):
        lib.scaled_dot_product_attention(q, q, q, scale=float("inf"))


def test_default_scale_is_one_over_sqrt_dk(rng, attn):
    q, k, v = _make(rng, (), 3, 5, 64, 4, np.float64)
    a = attn(q, k, v)
    b = attn(q, k, v, scale=1 / 8)
    c = attn(q, k, v, scale=1.0)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_weights_are_a_distribution_and_unscaled_is_sharper(rng, attn):
    q, k, v = _make(rng, (), 8, 16, 256, 4, np.float64)
    _, w_scaled = attn(q, k, v, return_weights=True)
    _, w_raw = attn(q, k, v, scale=1.0, return_weights=True)
    np.testing.assert_allclose(w_scaled.sum(-1), 1.0, rtol=1e-12)
    assert w_raw.max(-1).mean() > w_scaled.max(-1).mean() + 0.3


def test_accepts_lists_and_hand_example(attn):
    # q = (1, 0), keys (1, 0) and (0, 1): scores 1/√2 and 0, checked by hand
    out, w = attn([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[10.0], [20.0]],
                                              return_weights=True)
    e = math.exp(1 / math.sqrt(2))
    np.testing.assert_allclose(w, [[e / (e + 1), 1 / (e + 1)]], rtol=1e-15)
    np.testing.assert_allclose(out, [[(10 * e + 20) / (e + 1)]], rtol=1e-15)


def test_causal_mask_helper():
    np.testing.assert_array_equal(lib.causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert lib.causal_mask(2, 4).shape == (2, 4)
    t = lib.causal_mask(4, like=torch.zeros(1))
    assert t.dtype == torch.bool
    assert torch.equal(t, torch.ones(4, 4, dtype=torch.bool).tril())


@pytest.mark.cuda
def test_cuda_path_stays_on_device_and_keeps_autograd(attn):
    q = torch.randn(2, 4, 8, 16, device="cuda", requires_grad=True)
    out, w = attn(q, q, q, return_weights=True)
    assert out.device.type == "cuda" and w.device.type == "cuda"
    out.sum().backward()
    assert q.grad is not None and q.grad.device.type == "cuda"
    assert lib.default_device().type == "cuda"
