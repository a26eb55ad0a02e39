"""lib.blockwise_attention (the online softmax over key blocks) against the plain path and PyTorch.

References: ``lib.scaled_dot_product_attention`` (itself tested against PyTorch in
test_attention.py) and ``torch.nn.functional.scaled_dot_product_attention`` directly, with its
autograd for the gradients.  Memory: tracemalloc sees NumPy's allocations.
"""
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib
from conftest import TOL, TORCH_DTYPE
from conftest import input_grads
from conftest import make_qkv as _make

# blockwise vs plain: the same arithmetic in another order, a few float32 ulps apart
CLOSE = {np.float32: dict(rtol=1e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}
DTYPES = [np.float32, np.float64]


def _torch_ref(q, k, v, mask=None, scale=None, is_causal=False):
    t = [torch.from_numpy(a) for a in (q, k, v)]
    tm = None if mask is None else torch.from_numpy(mask)
    return F.scaled_dot_product_attention(*t, attn_mask=tm, scale=scale, is_causal=is_causal).numpy()


def _mask(rng, kind, batch, L, S, dtype):
    if kind == "none" or kind == "causal":
        return None
    shape = {"bool": (*batch, L, S), "bool-broadcast": (L, S), "bool-keys": (1, S), "bool-queries": (L, 1),
             "additive": (*batch, L, S), "additive-broadcast": (*batch[1:], L, S)}[kind]
    if kind.startswith("bool"):
        m = rng.random(shape) < 0.6
        m[..., 0] = True  # every query may see key 0 (with "bool-queries": every query sees all or nothing)
        return m
    m = np.where(rng.random(shape) < 0.3, -np.inf, rng.standard_normal(shape)).astype(dtype)
    m[..., 0] = 0.0
    return m


KINDS = ["none", "causal", "bool", "bool-broadcast", "bool-keys", "bool-queries", "additive", "additive-broadcast"]
# (batch, L, S, block): L and S not multiples of the block, one block, block of 1, L > S, L < S
CASES = [((2, 3), 37, 53, 8), ((2,), 16, 16, 16), ((), 9, 9, 1), ((3,), 50, 20, 7), ((1, 2), 6, 41, 64)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES)
def test_numpy_blockwise_equals_plain_and_torch(rng, dtype, kind, case):
    batch, L, S, block = case
    q, k, v = _make(rng, batch, L, S, 16, 5, dtype)
    mask = _mask(rng, kind, batch, L, S, dtype)
    causal = kind == "causal"
    out = lib.blockwise_attention(q, k, v, mask, is_causal=causal, block_size=block)
    plain = lib.scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
    assert out.dtype == dtype and out.shape == plain.shape == (*batch, L, 5)
    np.testing.assert_allclose(out, plain, **CLOSE[dtype])
    np.testing.assert_allclose(out, _torch_ref(q, k, v, mask, is_causal=causal), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["none", "causal", "bool", "additive-broadcast"])
def test_torch_blockwise_equals_sdpa(rng, dtype, kind):
    batch, L, S, block = (2, 3), 29, 29, 6
    q, k, v = _make(rng, batch, L, S, 16, 8, dtype)
    mask = _mask(rng, kind, batch, L, S, dtype)
    t = [torch.from_numpy(a) for a in (q, k, v)]
    tm = None if mask is None else torch.from_numpy(mask)
    out = lib.blockwise_attention(*t, tm, is_causal=kind == "causal", block_size=block)
    assert isinstance(out, torch.Tensor) and out.dtype == TORCH_DTYPE[dtype]
    ref = F.scaled_dot_product_attention(*t, attn_mask=tm, is_causal=kind == "causal")
    torch.testing.assert_close(out, ref, **TOL[dtype])
    np.testing.assert_allclose(out.numpy(), lib.blockwise_attention(q, k, v, mask, is_causal=kind == "causal",
                                                                     block_size=block), **CLOSE[dtype])


@pytest.mark.parametrize("scale", [1.0, 0.3, 5.0])
def test_scale_enters_before_the_running_max(rng, scale):
    # scale=5 makes the scores large: a max taken on unscaled scores would overflow or be wrong
    q, k, v = _make(rng, (2,), 12, 30, 32, 4, np.float64)
    out = lib.blockwise_attention(q, k, v, scale=scale, block_size=7)
    np.testing.assert_allclose(out, _torch_ref(q, k, v, scale=scale), **TOL[np.float64])
    np.testing.assert_allclose(out, lib.scaled_dot_product_attention(q, k, v, scale=scale), rtol=1e-12, atol=1e-12)


def test_huge_scores_stay_finite(rng):
    # scores around 1e4: exp without the running max would overflow in any precision
    q, k, v = _make(rng, (), 8, 40, 16, 3, np.float32)
    q *= 300.0
    out = lib.blockwise_attention(q, k, v, block_size=6)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, _torch_ref(q, k, v), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_give_zeros(rng, dtype):
    q, k, v = _make(rng, (2,), 6, 10, 8, 4, dtype)
    mask = rng.random((6, 10)) < 0.5
    mask[:, 0] = True
    mask[2] = False  # query 2 may attend to nothing
    mask[4, :5] = False  # query 4: nothing in the first block of 5, something later
    mask[4, 7] = True
    for fam in ("numpy", "torch"):
        args = (q, k, v, mask) if fam == "numpy" else tuple(torch.from_numpy(a) for a in (q, k, v, mask))
        out = lib.blockwise_attention(*args, block_size=5)
        out = np.asarray(out)
        assert np.all(out[:, 2] == 0) and np.all(np.isfinite(out))
        np.testing.assert_allclose(out, _torch_ref(q, k, v, mask), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["none", "causal", "bool"])
def test_gradients_match_sdpa(kind, dtype):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 13, 8, generator=g, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = None
    if kind == "bool":
        mask = torch.rand(13, 13, generator=g) < 0.6
        mask[:, 0] = True
    up = torch.randn(2, 3, 13, 8, generator=g, dtype=dtype)
    grads = [input_grads(fn, (q, k, v), up) for fn in (
        lambda: lib.blockwise_attention(q, k, v, mask, is_causal=kind == "causal", block_size=4),
        lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal"))]
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    for mine, ref in zip(*grads):
        torch.testing.assert_close(mine, ref, **tol)


def test_fully_masked_row_gradients_are_zero_not_nan():
    # both lib torch paths: a query with nothing to attend to gets output 0 and gradient 0
    g = torch.Generator().manual_seed(2)
    q = torch.randn(4, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k, v = torch.randn(6, 8, generator=g, dtype=torch.float64), torch.randn(6, 3, generator=g, dtype=torch.float64)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1] = False
    for fn in (lambda: lib.blockwise_attention(q, k, v, mask, block_size=4),
               lambda: lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)[0]):
        fn().sum().backward()
        assert torch.all(torch.isfinite(q.grad)) and torch.all(q.grad[1] == 0)
        q.grad = None


def test_one_dimensional_key_mask(rng):
    # lib accepts a (S,) mask (PyTorch wants at least 2-D): the same as (1, S)
    q, k, v = _make(rng, (2,), 7, 11, 8, 3, np.float64)
    mask = rng.random(11) < 0.5
    mask[0] = True
    out = lib.blockwise_attention(q, k, v, mask, block_size=4)
    np.testing.assert_allclose(out, _torch_ref(q, k, v, mask[None, :]), **TOL[np.float64])
    np.testing.assert_allclose(out, lib.scaled_dot_product_attention(q, k, v, mask), **CLOSE[np.float64])


def test_same_errors_as_the_plain_path():
    q, k, v = np.zeros((2, 3, 8)), np.zeros((2, 5, 8)), np.zeros((2, 5, 4))
    with pytest.raises(ValueError, match=r"d_k differs.*\(2, 3, 8\).*\(2, 5, 7\)"):
        lib.blockwise_attention(q, np.zeros((2, 5, 7)), v)
    with pytest.raises(ValueError, match=r"key and value lengths differ"):
        lib.blockwise_attention(q, k, np.zeros((2, 6, 4)))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast"):
        lib.blockwise_attention(q, k, v, np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match="either mask or is_causal"):
        lib.blockwise_attention(q, k, v, np.ones((3, 5), dtype=bool), is_causal=True)
    with pytest.raises(TypeError, match="mixed"):
        lib.blockwise_attention(torch.zeros(3, 8), k[0], v[0])
    with pytest.raises(TypeError, match="floating-point"):
        lib.blockwise_attention(q.astype(int), k, v)
    for bad in (0, -3):
        with pytest.raises(ValueError, match="block_size must be a positive int"):
            lib.blockwise_attention(q, k, v, block_size=bad)
    for bad in (2.5, True, None):                       # not an int at all: the type is at fault
        with pytest.raises(TypeError, match="block_size must be an int"):
            lib.blockwise_attention(q, k, v, block_size=bad)


def _peak_bytes(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_extra_memory_grows_with_L_not_L_squared(rng):
    L, d, block = 2048, 32, 128
    q, k, v = _make(rng, (), L, L, d, d, np.float32)
    scores_bytes = L * L * 4  # one float32 (L, L) score matrix: 16 MiB
    plain = _peak_bytes(lambda: lib.scaled_dot_product_attention(q, k, v))
    blocked = _peak_bytes(lambda: lib.blockwise_attention(q, k, v, block_size=block))
    assert plain >= scores_bytes  # the plain path holds the whole score matrix
    # blockwise: about one (L, block) block and a few (L, d) arrays, not L² floats
    assert blocked < 4 * (L * block * 4 + 8 * L * d * 4)
    assert blocked < scores_bytes / 4  # measured: about 1/6
    # and doubling L doubles it (roughly), rather than quadrupling it
    q2, k2, v2 = _make(rng, (), 2 * L, 2 * L, d, d, np.float32)
    blocked2 = _peak_bytes(lambda: lib.blockwise_attention(q2, k2, v2, block_size=block))
    assert 1.5 < blocked2 / blocked < 2.7


def test_bfloat16_accumulates_in_float32(rng):
    # bfloat16 in and out, statistics in float32: close to the float64 result at bfloat16 precision
    q, k, v = _make(rng, (2,), 40, 300, 16, 8, np.float64)
    t = [torch.from_numpy(a).to(torch.bfloat16) for a in (q, k, v)]
    out = lib.blockwise_attention(*t, block_size=16)
    assert out.dtype == torch.bfloat16
    exact = lib.scaled_dot_product_attention(*(a.float().double().numpy() for a in t))
    np.testing.assert_allclose(out.double().numpy(), exact, atol=1e-2)


def _load(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_check_says_so_without_cuda(capsys):
    gpu_check = _load("gpu_check")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: run benchmarks/gpu_check.py itself")
    assert gpu_check.main([]) == 0
    assert capsys.readouterr().out.strip() == "no CUDA device: nothing to check"


def test_bench_runs_and_prints_every_ratio(capsys, monkeypatch):
    bench = _load("bench")
    monkeypatch.setattr(bench, "run_memory", lambda *a, **k: print("Peak memory (stubbed)"))
    bench.main(["--quick", "--lengths", "64", "--budget", "0"])
    out = capsys.readouterr().out
    for label, *_ in bench.TARGETS + bench.INFO_RATIOS:
        assert label in out
    assert "L = 64" in out and "Peak memory" in out


def test_bench_memory_table(capsys):
    bench = _load("bench")
    rows = bench.run_memory([256], [256, 2048], block_size=64)
    out = capsys.readouterr().out
    assert "blockwise peaked at" in out
    (L1, need1, plain1, block1), (L2, need2, _, block2) = rows
    assert plain1 >= need1 and block2 < need2 / 4


@pytest.mark.parametrize("q_scale, v_scale", [(1.0, 1.0), (3.0, 1.0), (6.0, 1.0), (40.0, 1.0), (1.0, 1e30)])
def test_plain_numpy_path_on_both_sides_of_the_no_shift_bound(rng, q_scale, v_scale):
    # lib's NumPy path skips the max shift only when a Cauchy–Schwarz bound proves exp safe; the
    # cases straddle that bound (float32: 30) and include values that would overflow without the shift
    q, k, v = _make(rng, (2,), 16, 24, 32, 4, np.float32)
    q, v = q * np.float32(q_scale), v * np.float32(v_scale)
    mask = rng.random((16, 24)) < 0.7
    mask[:, 0] = True
    for m in (None, mask):
        out = lib.scaled_dot_product_attention(q, k, v, m)
        assert np.all(np.isfinite(out))
        ref = _torch_ref(q, k, v, m)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5 * v_scale)
        np.testing.assert_allclose(lib.blockwise_attention(q, k, v, m, block_size=5), ref, rtol=1e-4,
                                   atol=1e-5 * v_scale)


# --- the exp2 form (chapter `real-code`): the raw maximum, scale·log2(e) folded into exp2 ---------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES[:3])
def test_exp2_form_equals_the_plain_path(rng, dtype, kind, case):
    batch, L, S, block = case
    q, k, v = _make(rng, batch, L, S, 16, 5, dtype)
    mask = _mask(rng, kind, batch, L, S, dtype)
    causal = kind == "causal"
    for scale in (None, 0.05, 3.0):  # default 1/√16, a small and a large scale
        out = lib.blockwise_attention(q, k, v, mask, is_causal=causal, block_size=block, scale=scale, exp2=True)
        plain = lib.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
        assert out.dtype == dtype
        # equal to float rounding: an exponent of size |x| carries a rounding error of about eps·|x|
        # in either order of operations, so the tolerance grows with the largest scaled score
        tau = 0.25 if scale is None else scale
        big = float(np.abs(q @ k.swapaxes(-1, -2)).max()) * tau * np.log2(np.e)
        tol = max(CLOSE[dtype]["rtol"], 8 * np.finfo(dtype).eps * big)
        np.testing.assert_allclose(out, plain, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["none", "causal", "bool", "additive-broadcast"])
def test_torch_exp2_form_equals_sdpa(rng, dtype, kind):
    batch, L, S, block = (2,), 23, 31, 5
    q, k, v = _make(rng, batch, L, S, 16, 8, dtype)
    mask = _mask(rng, kind, batch, L, S, dtype)
    t = [torch.from_numpy(a) for a in (q, k, v)]
    tm = None if mask is None else torch.from_numpy(mask)
    out = lib.blockwise_attention(*t, tm, is_causal=kind == "causal", block_size=block, exp2=True)
    ref = F.scaled_dot_product_attention(*t, attn_mask=tm, is_causal=kind == "causal")
    torch.testing.assert_close(out, ref, **TOL[dtype])


def test_exp2_form_keeps_the_raw_maximum_large_scores_stay_finite(rng):
    # raw scores around 1e4 with a scale of 1e-3: the running max is of raw scores, exp2 never overflows
    q, k, v = _make(rng, (), 8, 40, 16, 3, np.float64)
    q *= 3000.0
    out = lib.blockwise_attention(q, k, v, block_size=6, scale=1e-3, exp2=True)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, lib.scaled_dot_product_attention(q, k, v, scale=1e-3), rtol=1e-10, atol=1e-12)


def test_exp2_gradients_match_sdpa():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 11, 8, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    up = torch.randn(2, 11, 8, generator=g, dtype=torch.float64)
    mine = input_grads(lambda: lib.blockwise_attention(q, k, v, block_size=4, exp2=True, is_causal=True), (q, k, v), up)
    ref = input_grads(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), up)
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_exp2_form_needs_a_positive_scale():
    q, k, v = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2))
    for bad in (0.0, -0.5):
        with pytest.raises(ValueError, match="positive scale"):
            lib.blockwise_attention(q, k, v, scale=bad, exp2=True)
        with pytest.raises(ValueError, match="positive scale"):
            lib.softmax_exp2(np.ones(3), bad)
    with pytest.raises(TypeError, match="exp2 must be True or False"):
        lib.blockwise_attention(q, k, v, exp2="yes")
    # the plain form accepts any scale, negative included
    assert np.all(np.isfinite(lib.blockwise_attention(q, k, v, scale=-0.5)))


def test_half_precision_scores_are_accumulated_in_float32():
    # q·k = 32·32·128 = 131072 overflows float16 (65504) if the product is rounded to float16;
    # lib's torch path keeps each block's scores in float32, as FlashAttention does
    q = torch.full((2, 128), 32.0, dtype=torch.float16)
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float16)
    assert torch.isinf(q @ q.T).all()  # the naive float16 product overflows
    for exp2 in (False, True):
        out = lib.blockwise_attention(q, q, v, exp2=exp2)
        assert out.dtype == torch.float16 and torch.isfinite(out).all()
        torch.testing.assert_close(out.float(), torch.full((2, 2), 0.5))


@pytest.mark.parametrize("scale", [0.125, 1.0, 7.0])
def test_softmax_exp2_equals_softmax(rng, scale):
    x = rng.standard_normal((4, 9)) * 30
    x[1, 3] = -np.inf
    x[2] = -np.inf  # a fully masked row gives zeros
    np.testing.assert_allclose(lib.softmax_exp2(x, scale), lib.softmax(x * scale), rtol=1e-13, atol=1e-15)
    t = torch.from_numpy(x)
    torch.testing.assert_close(lib.softmax_exp2(t, scale), lib.softmax(t * scale), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(lib.softmax_exp2(x.astype(np.float32), scale), lib.softmax(x * scale), rtol=2e-5,
                               atol=1e-6)
    np.testing.assert_allclose(lib.softmax_exp2(np.arange(4), scale), lib.softmax(np.arange(4.0) * scale))
