"""lib.port_check: the recipe's reference against PyTorch's own attention, and the port check naming
each mistake (chapter `porting`).

The reference is compared with ``F.scaled_dot_product_attention`` given an explicit ``scale`` and an
additive ``attn_mask`` (ALiBi, causal, window), with FlexAttention's ``score_mod`` (the cap), and with
``F.rms_norm`` (q/k norm): none of them shares code with lib. The candidates below are written in
the style of the models' own code, independently of lib.
"""
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib
from lib.experiments.port_check import Recipe

RNG = np.random.default_rng(7)


def qkv(B=2, h=4, L=7, d=16, dv=5, sd=1.5):
    return (RNG.standard_normal((B, h, L, d)) * sd, RNG.standard_normal((B, h, L, d)) * sd,
            RNG.standard_normal((B, h, L, dv)))


def t(a):
    return torch.from_numpy(a)


def torch_bias(L, h, recipe):
    """The additive mask SDPA gets: ALiBi (BLOOM's slopes, written out here) plus -inf where masked."""
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    bias = torch.zeros(h, L, L, dtype=torch.float64)
    if recipe.alibi:
        p = 2 ** math.floor(math.log2(h))
        slopes = [2 ** (-8 * (n + 1) / p) for n in range(p)]
        slopes += [2 ** (-4 * (2 * n + 1) / p) for n in range(h - p)]
        bias = bias - torch.tensor(slopes, dtype=torch.float64)[:, None, None] * (i - j).abs()
    masked = torch.zeros(L, L, dtype=torch.bool)
    if recipe.causal:
        masked |= j > i
    if recipe.window is not None:
        masked |= j <= i - recipe.window
    return bias.masked_fill(masked, float("-inf"))


@pytest.mark.parametrize("recipe", [
    Recipe(), Recipe(scale=144 ** -0.5), Recipe(scale=1.0, causal=False), Recipe(qk_factor=1.37),
    Recipe(alibi=True), Recipe(alibi=True, causal=False), Recipe(window=3), Recipe(scale=lambda d: 1 / d),
], ids=lambda r: repr(r)[:60])
def test_reference_matches_sdpa_with_explicit_scale_and_mask(recipe):
    for h in (4, 6):  # 6 heads: ALiBi's rule for a head count that is not a power of two
        q, k, v = qkv(h=h)
        want = F.scaled_dot_product_attention(t(q) * recipe.qk_factor, t(k) * recipe.qk_factor, t(v),
                                              attn_mask=torch_bias(q.shape[-2], h, recipe),
                                              scale=recipe.scale_at(q.shape[-1])).numpy()
        np.testing.assert_allclose(lib.reference_attention(q, k, v, recipe), want, rtol=1e-10, atol=1e-12)


def test_reference_cap_matches_flex_attention_score_mod():
    from torch.nn.attention.flex_attention import flex_attention

    cap, scale = 5.0, 0.3
    q, k, v = qkv(sd=3.0)

    def score_mod(score, b, h, q_idx, kv_idx):  # Gemma 2's order: cap, then the mask
        score = cap * torch.tanh(score / cap)
        return torch.where(kv_idx <= q_idx, score, -float("inf"))

    want = flex_attention(t(q), t(k), t(v), score_mod=score_mod, scale=scale).numpy()
    got = lib.reference_attention(q, k, v, Recipe(scale=scale, softcap=cap))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_reference_qk_norm_matches_rms_norm_then_sdpa():
    q, k, v = qkv(sd=4.0)
    d = q.shape[-1]
    qn, kn = F.rms_norm(t(q), (d,), eps=1e-6), F.rms_norm(t(k), (d,), eps=1e-6)
    want = F.scaled_dot_product_attention(qn, kn, t(v), is_causal=True).numpy()
    np.testing.assert_allclose(lib.reference_attention(q, k, v, Recipe(qk_norm="rms")), want, rtol=1e-9, atol=1e-11)
    ql, kl = F.normalize(t(q), dim=-1), F.normalize(t(k), dim=-1)
    want = F.scaled_dot_product_attention(ql, kl, t(v), is_causal=True, scale=10.0).numpy()
    got = lib.reference_attention(q, k, v, Recipe(qk_norm="l2", scale=10.0))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_alibi_slopes_are_blooms():
    assert lib.alibi_slopes(8) == pytest.approx([2 ** -(n + 1) for n in range(8)])
    assert lib.alibi_slopes(4) == pytest.approx([0.25, 0.0625, 2 ** -6, 2 ** -8])
    s6 = lib.alibi_slopes(6)  # 4 + every other slope of 8 heads: 2^-1, 2^-3
    assert s6[4:] == pytest.approx([2 ** -1, 2 ** -3])


# --- candidates in the style of real code, each with the check's expected finding -------------------

M = 0.1 * math.log(40) + 1.0  # DeepSeek-V3's YaRN mscale at rope_factor 40


def causal(s):
    L = s.size(-1)
    return torch.ones(L, L, dtype=torch.bool).triu(1)


def gemma2_eager(q, k, v, scaling=144 ** -0.5, cap=50.0):  # cap, then the mask (transformers' order)
    s = q @ k.transpose(-2, -1) * scaling
    s = cap * torch.tanh(s / cap)
    return torch.softmax(s.masked_fill(causal(s), float("-inf")), -1) @ v


def alibi_candidate(scale_bias=False, reverse=False):
    def attn(q, k, v):
        h, L, d = q.size(1), q.size(2), q.size(-1)
        p = 2 ** math.floor(math.log2(h))
        sl = [2 ** (-8 * (n + 1) / p) for n in range(p)] + [2 ** (-4 * (2 * n + 1) / p) for n in range(h - p)]
        sl = torch.tensor(sl[::-1] if reverse else sl, dtype=q.dtype)
        pos = torch.arange(L)
        bias = -sl[:, None, None] * (pos[:, None] - pos[None, :]).abs().to(q.dtype)
        s = q @ k.transpose(-2, -1)
        s = (s + bias) / math.sqrt(d) if scale_bias else s / math.sqrt(d) + bias
        return torch.softmax(s.masked_fill(causal(s), float("-inf")), -1) @ v
    return attn


GEMMA2 = Recipe(scale=144 ** -0.5, softcap=50.0, dtypes=("bfloat16",))
CANDIDATES = {  # name: (candidate, recipe, expected mistake or None)
    "sdpa default": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), Recipe(), None),
    "gemma2 right": (gemma2_eager, GEMMA2, None),
    "gemma2 head_dim scale": (lambda q, k, v: gemma2_eager(q, k, v, scaling=q.size(-1) ** -0.5), GEMMA2,
                              "default_scale"),
    "gemma2 no cap": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=144 ** -0.5),
                      GEMMA2, "softcap_missing"),
    "gemma2 cap after mask": (lambda q, k, v: torch.softmax(50 * torch.tanh(
        (q @ k.transpose(-2, -1) * 144 ** -0.5).masked_fill(causal(q @ k.transpose(-2, -1)), float("-inf")) / 50),
        -1) @ v, GEMMA2, "softcap_after_mask"),
    "scaled twice": (lambda q, k, v: F.scaled_dot_product_attention(q / math.sqrt(q.size(-1)), k, v, is_causal=True),
                     Recipe(), "scale_twice"),
    "t5 given a scale": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=False),
                         Recipe(scale=1.0, causal=False), "default_scale"),
    "heads axis": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                  scale=q.size(1) ** -0.5), Recipe(),
                   "heads_or_batch"),
    "yarn once": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                 scale=M / math.sqrt(q.size(-1))),
                  Recipe(qk_factor=M), "qk_factor_once"),
    "yarn squared": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    scale=M * M / math.sqrt(q.size(-1))),
                     Recipe(qk_factor=M, dtypes=("float16", "bfloat16")), None),
    "alibi right": (alibi_candidate(), Recipe(alibi=True), None),
    "alibi scaled with the scores": (alibi_candidate(scale_bias=True), Recipe(alibi=True), "alibi_scaled"),
    "alibi reversed": (alibi_candidate(reverse=True), Recipe(alibi=True), "alibi_reversed"),
    "mask missing": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), Recipe(), "mask_missing"),
    "qk norm missing": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                        Recipe(qk_norm="rms"), "qk_norm_missing"),
    "qk norm right": (lambda q, k, v: F.scaled_dot_product_attention(
        F.rms_norm(q, (q.size(-1),), eps=1e-6), F.rms_norm(k, (k.size(-1),), eps=1e-6), v, is_causal=True),
        Recipe(qk_norm="rms"), None),
    "constant 1.3x": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                     scale=1.3 / math.sqrt(q.size(-1))),
                      Recipe(), "scale_factor"),
    "float16 softmax without the max shift": (lambda q, k, v: (lambda e: e / e.sum(-1, keepdim=True))(
        torch.exp((q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(
            causal(q @ k.transpose(-2, -1)), float("-inf")))) @ v, Recipe(dtypes=("float16",)), "not_finite"),
}


@pytest.mark.parametrize("name", list(CANDIDATES))
def test_port_check_names_the_mistake(name):
    fn, recipe, mistake = CANDIDATES[name]
    report = lib.check_port(fn, recipe, backend="torch")
    assert report.mistake == mistake, report.message
    assert bool(report) == (mistake is None)
    if mistake == "scale_factor":
        assert report.factor == pytest.approx(1.3, rel=1e-3)
    if mistake is not None:
        assert report.max_error > 10 * lib.port_check.ATOL["float32"]


def test_batch_heads_widths_lengths_and_dtypes_are_probed():
    seen = []

    def spy(q, k, v):
        seen.append((tuple(q.shape), str(q.dtype)))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    assert lib.check_port(spy, Recipe(dtypes=("bfloat16",)), backend="torch").ok
    shapes = {s for s, _ in seen}
    assert {s[0] for s in shapes} >= {1, 2, 4} and {s[1] for s in shapes} >= {1, 3, 5}
    assert {s[3] for s in shapes} == {16, 64} and {s[2] for s in shapes} == {12, 40}
    assert "torch.bfloat16" in {dt for _, dt in seen} and len(seen) >= 10


def test_numpy_candidates_and_a_failing_one():
    def np_attn(q, k, v):
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        s = np.where(np.triu(np.ones(s.shape[-2:], bool), 1), -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v

    assert lib.check_port(np_attn).ok
    r = lib.check_port(lambda q, k, v: 1 / 0)
    assert r.mistake == "error" and not r
    r = lib.check_port(lambda q, k, v: q @ np.swapaxes(k, -1, -2))
    assert r.mistake == "shape"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown recipe field"):
        Recipe.from_config({"scale": 0.1, "soft_cap": 50.0})
    with pytest.raises(ValueError, match="unknown recipe field"):
        lib.check_port(lambda q, k, v: v, {"scaling": 0.1})
    with pytest.raises(TypeError, match="Recipe or a dict"):
        lib.check_port(lambda q, k, v: v, 0.125)
    with pytest.raises(TypeError, match="function"):
        lib.check_port("attn")
    with pytest.raises(ValueError, match="qk_norm"):
        Recipe(qk_norm="layer")
    with pytest.raises(ValueError, match="dtypes"):
        Recipe(dtypes="bfloat16")
    with pytest.raises(ValueError, match="scale"):
        Recipe(scale=0.0)
    with pytest.raises(ValueError, match="shapes do not fit"):
        lib.reference_attention(np.ones((2, 4, 8)), np.ones((2, 4, 7)), np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match="head axis"):
        lib.reference_attention(np.ones((4, 8)), np.ones((4, 8)), np.ones((4, 3)), Recipe(alibi=True))
    with pytest.raises(ValueError, match="backend"):
        lib.check_port(lambda q, k, v: v, backend="jax")


def test_check_logit_factor_never_shows_the_answer():
    right = math.sqrt(144 / 128)
    assert lib.check_logit_factor(right, head_dim=128, query_pre_attn_scalar=144).ok
    wrong = lib.check_logit_factor(1 / right, head_dim=128, query_pre_attn_scalar=144)
    assert not wrong.ok and f"{right:.4f}" not in wrong.message and f"{right:.3f}" not in wrong.message


# --- issue 35: the recipe's new fields against independent references ------------------------------

def test_reference_gqa_window_and_cache_match_sdpa():
    """Grouped heads (SDPA's enable_gqa), a sliding window of W keys with the query included
    (transformers' ``kv_idx > q_idx - W``) and fewer queries than keys (SDPA's causal_lower_right)."""
    from torch.nn.attention.bias import causal_lower_right

    q = RNG.standard_normal((2, 6, 5, 16))
    k, v = RNG.standard_normal((2, 3, 9, 16)), RNG.standard_normal((2, 3, 9, 4))
    want = F.scaled_dot_product_attention(t(q), t(k), t(v), enable_gqa=True,
                                          attn_mask=causal_lower_right(5, 9)).numpy()
    got = lib.reference_attention(q, k, v, Recipe(q_per_kv=2))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    W = 3
    qi, kj = torch.arange(4, 9)[:, None], torch.arange(9)[None, :]  # queries are positions 4..8
    keep = (kj <= qi) & (kj > qi - W)
    want = F.scaled_dot_product_attention(t(q), t(k), t(v), enable_gqa=True, attn_mask=keep).numpy()
    np.testing.assert_allclose(lib.reference_attention(q, k, v, Recipe(q_per_kv=2, window=W)), want,
                               rtol=1e-10, atol=1e-12)


def test_reference_projection_norm_matches_rms_norm_over_all_heads():
    """OLMo 2 normalises the whole projection (all heads of a position) with a learned weight
    (transformers models/olmo2/modeling_olmo2.py at 000c33f: q_norm over num_heads * head_dim)."""
    h, d = 4, 16
    q, k, v = qkv(h=h, d=d, sd=3.0)
    wq, wk = 1 + 0.3 * RNG.standard_normal(h * d), 1 + 0.3 * RNG.standard_normal(h * d)

    def proj_norm(x, w):  # (B, h, L, d) -> (B, L, h*d), RMSNorm with weight, and back
        B, _, L, _ = x.shape
        y = F.rms_norm(t(x).transpose(1, 2).reshape(B, L, h * d), (h * d,), t(w), eps=1e-6)
        return y.reshape(B, L, h, d).transpose(1, 2)

    want = F.scaled_dot_product_attention(proj_norm(q, wq), proj_norm(k, wk), t(v), is_causal=True).numpy()
    rec = Recipe(qk_norm="rms", qk_norm_axis="projection", q_norm_weight=wq, k_norm_weight=wk, head_dim=d,
                 n_heads=h)
    np.testing.assert_allclose(lib.reference_attention(q, k, v, rec), want, rtol=1e-9, atol=1e-11)


def test_reference_scaled_bias_matches_falcons_sdpa_mask():
    """Falcon-RW puts ALiBi inside the scaled sum; its SDPA path passes ``alibi / sqrt(head_dim)``
    as the additive mask (transformers models/falcon/modeling_falcon.py at 4427208)."""
    h = 4
    q, k, v = qkv(h=h)
    L, d = q.shape[-2], q.shape[-1]
    bias = torch_bias(L, h, Recipe(alibi=True)) / math.sqrt(d)  # ALiBi over √d, -inf stays -inf
    want = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=bias).numpy()
    got = lib.reference_attention(q, k, v, Recipe(alibi=True, bias_scaled=True))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def gpt_oss_eager(sinks, scaling=None):
    """gpt-oss's eager attention (transformers models/gpt_oss/modeling_gpt_oss.py at 00d4b3d), in
    these words: repeat each key/value head for its group, scale q·k, add the causal mask, append
    each head's sink logit as one more column, softmax, drop that column."""
    def attn(q, k, v):
        g = q.size(1) // k.size(1)
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        s = q @ k.transpose(-2, -1) * (scaling or q.size(-1) ** -0.5)
        s = s.masked_fill(causal(s), float("-inf"))
        sink = torch.tensor(sinks, dtype=s.dtype).reshape(1, -1, 1, 1).expand(s.size(0), -1, s.size(2), 1)
        both = torch.cat([s, sink], dim=-1)
        probs = torch.softmax(both - both.amax(-1, keepdim=True), dim=-1)[..., :-1]
        return probs @ v
    return attn


SINKS = (0.5, -1.0, 2.0, 0.0)


def test_reference_sinks_match_gpt_oss_code():
    q = RNG.standard_normal((2, 4, 7, 16))
    k, v = RNG.standard_normal((2, 2, 7, 16)), RNG.standard_normal((2, 2, 7, 5))
    want = gpt_oss_eager(SINKS)(t(q), t(k), t(v)).numpy()
    got = lib.reference_attention(q, k, v, Recipe(sinks=SINKS, n_heads=4, q_per_kv=2))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def falcon_rw_eager(q, k, v):
    """Falcon-RW's eager core: ALiBi (slope · key position) added to q·k, then both multiplied by
    1/√head_dim (``attention_logits *= self.inv_norm_factor``), then the causal mask."""
    h, d = q.size(1), q.size(-1)
    p = 2 ** math.floor(math.log2(h))
    sl = [2 ** (-8 * (n + 1) / p) for n in range(p)] + [2 ** (-4 * (2 * n + 1) / p) for n in range(h - p)]
    alibi = torch.tensor(sl, dtype=q.dtype)[:, None, None] * torch.arange(k.size(2), dtype=q.dtype)
    logits = (q @ k.transpose(-2, -1) + alibi) * (1 / math.sqrt(d))
    return torch.softmax(logits.masked_fill(causal(logits), float("-inf")), -1) @ v


def bloom_eager(q, k, v):
    """BLOOM's core: ``baddbmm(alibi, q, kᵀ, beta=1, alpha=1/√d)``: ALiBi (slope · key position)
    added after the scale."""
    h, d = q.size(1), q.size(-1)
    p = 2 ** math.floor(math.log2(h))
    sl = [2 ** (-8 * (n + 1) / p) for n in range(p)] + [2 ** (-4 * (2 * n + 1) / p) for n in range(h - p)]
    alibi = torch.tensor(sl, dtype=q.dtype)[:, None, None] * torch.arange(k.size(2), dtype=q.dtype)
    s = alibi + (q @ k.transpose(-2, -1)) / math.sqrt(d)
    return torch.softmax(s.masked_fill(causal(s), float("-inf")), -1) @ v


def olmo2_core(wq, wk, h, per_head=False, weight=True):
    """OLMo 2: RMSNorm over the whole q (and k) projection with its learned weight, then heads, then
    SDPA with the default scale. ``per_head``: the port that normalises each head instead."""
    def norm(x, w):
        B, _, L, d = x.shape
        if per_head:
            return F.rms_norm(x, (d,), eps=1e-6) * w.reshape(h, 1, d).to(x.dtype)
        y = F.rms_norm(x.transpose(1, 2).reshape(B, L, h * d), (h * d,), w.to(x.dtype) if weight else None,
                       eps=1e-6)
        return y.reshape(B, L, h, d).transpose(1, 2)

    return lambda q, k, v: F.scaled_dot_product_attention(norm(q, wq), norm(k, wk), v, is_causal=True)


def qwen3_core(wq, wk, tiled=False):
    """Qwen 3: RMSNorm of each head with its learned weight (length head_dim), grouped heads
    (``repeat_kv``), SDPA with the default scale. ``tiled``: heads repeated the wrong way."""
    def attn(q, k, v):
        g = q.size(1) // k.size(1)
        q = F.rms_norm(q, (q.size(-1),), wq.to(q.dtype), eps=1e-6)
        k = F.rms_norm(k, (k.size(-1),), wk.to(k.dtype), eps=1e-6)
        k, v = (k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)) if tiled else (
            k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return attn


def gemma2_local(window=4096, cap=50.0, scaling=144 ** -0.5, rescale=True, cap_raw=False):
    """Gemma 2's eager core on a sliding layer (keys within ``window`` of the query, itself included);
    ``rescale=False`` forgets the final × cap; ``cap_raw`` caps the raw q·k and scales afterwards;
    ``cap=None``, ``scaling=None``: no cap, and 1/√head_dim."""
    def attn(q, k, v):
        raw = q @ k.transpose(-2, -1)
        sc = scaling or q.size(-1) ** -0.5
        if cap is None:
            s = raw * sc
        elif cap_raw:
            s = cap * torch.tanh(raw / cap) * sc
        else:
            s = raw * sc
            s = torch.tanh(s / cap) * (cap if rescale else 1.0)
        L = s.size(-1)
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        hide = (j > i) | ((j <= i - window) if window else torch.zeros(L, L, dtype=torch.bool))
        return torch.softmax(s.masked_fill(hide, float("-inf")), -1) @ v
    return attn


WQ16, WK16 = torch.from_numpy(1 + 0.3 * RNG.standard_normal(16)), torch.from_numpy(1 + 0.3 * RNG.standard_normal(16))
WQ64, WK64 = torch.from_numpy(1 + 0.3 * RNG.standard_normal(64)), torch.from_numpy(1 + 0.3 * RNG.standard_normal(64))
OLMO2 = Recipe(qk_norm="rms", qk_norm_axis="projection", q_norm_weight=WQ64.numpy(), k_norm_weight=WK64.numpy(),
               head_dim=16, n_heads=4)
QWEN3 = Recipe(qk_norm="rms", q_norm_weight=WQ16.numpy(), k_norm_weight=WK16.numpy(), head_dim=16, q_per_kv=2)
GEMMA2_LOCAL = Recipe(scale=144 ** -0.5, softcap=50.0, window=4096)
GEMMA2_CAP = Recipe(scale=144 ** -0.5, softcap=50.0)
GPT_OSS = Recipe(sinks=SINKS, n_heads=4, q_per_kv=2)


def sdpa_port(**kw):
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw)


MODELS = {  # name: (candidate, recipe, check_port keywords, expected mistake or None)
    "falcon-rw own code": (falcon_rw_eager, Recipe(alibi=True, bias_scaled=True), {}, None),
    "falcon-rw checked as bloom": (falcon_rw_eager, Recipe(alibi=True), {}, "alibi_scaled"),
    "falcon-rw port, bias after the scale": (bloom_eager, Recipe(alibi=True, bias_scaled=True), {},
                                             "alibi_not_scaled"),
    "bloom own code": (bloom_eager, Recipe(alibi=True), {}, None),
    "olmo2 own code": (olmo2_core(WQ64, WK64, 4), OLMO2, {}, None),
    "olmo2 per-head port": (olmo2_core(WQ64, WK64, 4, per_head=True), OLMO2, {}, "qk_norm_per_head"),
    "olmo2 port without the weight": (olmo2_core(WQ64, WK64, 4, weight=False), OLMO2, {},
                                      "qk_norm_weight_missing"),
    "qwen3 own code": (qwen3_core(WQ16, WK16), QWEN3, {}, None),
    "qwen3 heads tiled": (qwen3_core(WQ16, WK16, tiled=True), QWEN3, {}, "gqa_mapping"),
    "gemma2 local layer": (gemma2_local(), GEMMA2_LOCAL, {}, None),
    "gemma2 local layer, no window": (gemma2_local(window=None), GEMMA2_LOCAL, {}, "window_missing"),
    "gemma2 forgot the final x cap": (gemma2_local(window=None, rescale=False), GEMMA2_CAP, {},
                                      "softcap_no_rescale"),
    "gemma2 cap on raw scores": (gemma2_local(window=None, cap_raw=True), GEMMA2_CAP, {}, "scale_after_cap"),
    "gemma2 cap 30": (gemma2_local(window=None, cap=30.0), GEMMA2_CAP, {}, "softcap_value"),
    "window off by one": (gemma2_local(window=5, cap=None, scaling=None), Recipe(window=4), {},
                          "window_off_by_one"),
    "gpt-oss own code": (gpt_oss_eager(SINKS), GPT_OSS, {}, None),
    "gpt-oss without sinks": (sdpa_port(is_causal=True, enable_gqa=True), GPT_OSS, {}, "sink_missing"),
    "is_causal with a cache": (sdpa_port(is_causal=True), Recipe(), {"cache": True}, "causal_top_left"),
    "causal_lower_right with a cache": (
        lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=__import__("torch.nn.attention.bias", fromlist=["x"]).causal_lower_right(
                q.size(-2), k.size(-2))), Recipe(), {"cache": True}, None),
    "kernel hard-coding 1/sqrt(128)": (sdpa_port(is_causal=True, scale=128 ** -0.5), Recipe(head_dim=128), {},
                                       None),
    "(B, L, H, D) function": (lambda q, k, v: sdpa_port(is_causal=True)(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2), Recipe(), {"layout": "BLHD"},
        None),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_released_models_and_their_ports(name):
    fn, recipe, kw, mistake = MODELS[name]
    report = lib.check_port(fn, recipe, backend="torch", **kw)
    assert report.mistake == mistake, report.message
    if mistake == "softcap_value":
        assert report.factor == pytest.approx(30.0, rel=1e-3)


def test_gemma2_eager_passes_in_both_half_precisions():
    """Review 12-N2: Hugging Face's eager Gemma 2 core passes in bfloat16 and in float16."""
    rec = Recipe(scale=144 ** -0.5, softcap=50.0, dtypes=("float16", "bfloat16"))
    r = lib.check_port(gemma2_eager, rec, backend="torch")
    assert r.ok and {"base (float16)", "base (bfloat16)"} <= set(r.errors), r.message


def test_what_a_run_did_not_exercise_is_said():
    r = lib.check_port(sdpa_port(is_causal=True), Recipe(window=100_000), backend="torch")
    assert r.ok and len(r.untested) == 2 and "100000" in r.message and "cache=True" in r.message
    assert lib.check_port(sdpa_port(is_causal=True), Recipe(), backend="torch", cache=True).untested == ()


def test_layout_verdict_rests_on_common_inputs():
    """The forgotten × cap is a nonlinear mistake: its best single factor differs between draws.
    The layout cases share their inputs, so it is not mistaken for a layout bug (review L-O1)."""
    for seed in range(3):
        r = lib.check_port(gemma2_local(window=None, rescale=False), GEMMA2_CAP, backend="torch", seed=seed)
        assert r.mistake == "softcap_no_rescale", r.message


def test_new_fields_refuse_bad_values():
    with pytest.raises(ValueError, match="qk_norm_axis"):
        Recipe(qk_norm="rms", qk_norm_axis="heads")
    with pytest.raises(ValueError, match="head_dim"):
        Recipe(qk_norm="rms", q_norm_weight=[1.0] * 16)
    with pytest.raises(ValueError, match="needs 64"):
        Recipe(qk_norm="rms", qk_norm_axis="projection", q_norm_weight=[1.0] * 16, head_dim=16, n_heads=4)
    with pytest.raises(ValueError, match="alibi=True"):
        Recipe(bias_scaled=True)
    with pytest.raises(ValueError, match="n_heads"):
        Recipe(sinks=(0.1, 0.2))
    with pytest.raises(ValueError, match="multiple of q_per_kv"):
        Recipe(n_heads=6, q_per_kv=4)
    with pytest.raises(ValueError, match="layout"):
        lib.check_port(lambda q, k, v: v, layout="BSHD")


def llama4_temperature(pos):
    """Llama 4's NoPE-layer temperature (transformers models/llama4/modeling_llama4.py at 63210d0:
    log(floor((cache_position + 1) / floor_scale) + 1) * attn_scale + 1, floor_scale 8192, attn_scale 0.1)."""
    return np.log(np.floor((np.asarray(pos, dtype=float) + 1.0) / 8192) + 1.0) * 0.1 + 1.0


def llama4_nope_core(temperature=True):
    """A NoPE layer of Llama 4 in the style of its code: q times the temperature of its position (the
    queries are the last positions of the cache), then SDPA with the default scale, bottom-right causal."""
    from torch.nn.attention.bias import causal_lower_right

    def attn(q, k, v):
        L, S = q.size(-2), k.size(-2)
        if temperature:
            pos = torch.arange(S - L, S, dtype=torch.float64)
            scales = torch.log(torch.floor((pos + 1.0) / 8192) + 1.0) * 0.1 + 1.0
            q = q * scales.to(q.dtype)[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(L, S))
    return attn


def test_position_dependent_factor_on_q():
    q = RNG.standard_normal((1, 2, 3, 16))
    k, v = RNG.standard_normal((1, 2, 8200, 16)), RNG.standard_normal((1, 2, 8200, 4))
    rec = Recipe(q_position_factor=llama4_temperature)
    want = llama4_nope_core()(t(q), t(k), t(v)).numpy()
    np.testing.assert_allclose(lib.reference_attention(q, k, v, rec), want, rtol=1e-9, atol=1e-11)
    assert lib.check_port(llama4_nope_core(), rec, backend="torch", cache=True).ok
    r = lib.check_port(llama4_nope_core(temperature=False), rec, backend="torch", cache=True)
    assert r.mistake == "position_factor_missing", r.message
    r = lib.check_port(llama4_nope_core(temperature=False), rec, backend="torch")
    assert r.ok and any("8191" in u for u in r.untested), r.untested


def split_kv_sink(sinks, splits=2, seed_twice=False, sink_base2_unconverted=False):
    """A split-KV kernel in base 2, written from the description of rocm-libraries issue 12227: the
    keys in ``splits`` parts, each part's (max, sum, output) in base-2 units (scores times
    scale·log2 e), merged through their log-sum-exps; the sink seeds the first part's state. With
    ``seed_twice`` the second part seeds it again (the double count); with
    ``sink_base2_unconverted`` the sink seeds the base-2 state without its factor log2 e."""
    log2e = 1 / math.log(2)

    def attn(q, k, v):
        g = q.size(1) // k.size(1)
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        s2 = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5 * log2e
        s2 = s2.masked_fill(causal(s2), float("-inf"))
        sink = torch.tensor(sinks, dtype=s2.dtype).reshape(1, -1, 1, 1).expand(s2.size(0), -1, s2.size(2), 1)
        sink2 = sink if sink_base2_unconverted else sink * log2e
        lses, outs = [], []
        for i, idx in enumerate(torch.arange(k.size(2)).chunk(splits)):
            part = s2[..., idx]
            if i == 0 or seed_twice:
                part = torch.cat([part, sink2], dim=-1)
            m = part.amax(-1, keepdim=True)
            m = torch.where(torch.isinf(m), torch.zeros_like(m), m)   # a part with every key masked
            w = torch.exp2(part - m)
            total = w.sum(-1, keepdim=True)
            lses.append(m + torch.log2(total))                           # -inf for an empty part
            outs.append((w[..., :len(idx)] @ v[..., idx, :]) / total.clamp_min(torch.finfo(total.dtype).tiny))
        lse = torch.logaddexp2(*lses) if len(lses) == 2 else torch.stack(lses).logsumexp(0)
        return sum(torch.exp2(l_ - lse) * o for l_, o in zip(lses, outs))
    return attn


@pytest.mark.parametrize("kw, mistake", [({}, None), ({"seed_twice": True}, "sink_twice"),
                                         ({"sink_base2_unconverted": True}, "sink_units")])
def test_split_kv_sink_mistakes_are_named(kw, mistake):
    """A sink counted twice is named sink_twice, one left in natural-log units in a base-2 kernel
    sink_units; the right merge passes (the candidates are written here from their descriptions)."""
    report = lib.check_port(split_kv_sink(SINKS, **kw), GPT_OSS, backend="torch")
    assert report.mistake == mistake, report.message


def test_sink_counted_n_times_is_a_sink_larger_by_ln_n():
    """The identity the book states: n copies of e^s in the denominator are one e^(s + ln n)."""
    q, k, v = (RNG.standard_normal((1, 4, 5, 8)) for _ in range(3))
    s = np.concatenate([q @ np.swapaxes(k, -1, -2) / math.sqrt(8),
                        np.broadcast_to(np.asarray(SINKS).reshape(1, 4, 1, 1), (1, 4, 5, 3))], -1)
    i, j = np.arange(5)[:, None], np.arange(8)[None, :]
    s = np.where((j > i) & (j < 5), -np.inf, s)
    w = np.exp(s - s.max(-1, keepdims=True))
    out = (w[..., :5] / w.sum(-1, keepdims=True)) @ v
    want = lib.reference_attention(q, k, v, Recipe(sinks=tuple(x + math.log(3) for x in SINKS), n_heads=4))
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_case_names_in_a_japanese_verdict_are_japanese():
    """The verdict names the failing cases; in the Japanese edition it names them in Japanese (the
    keys of PortReport.errors stay English). Every case check_port can run has a translation."""
    from lib import i18n
    from lib.experiments import port_check as pc

    recipes = [lib.Recipe(), lib.Recipe(window=6, q_position_factor=lambda p: 1.0 + (p >= 4)),
               lib.Recipe(head_dim=16)]
    names = set()
    for r in recipes:
        for cache in (False, True):
            names |= set(pc._cases(r, 0, cache))
    assert {"base", "long", "negative logits", "cache"} <= names
    try:
        i18n.set_language("ja")
        for n in sorted(names) + ["base (bfloat16)"]:
            label = pc._case_label(n)
            assert label != n and not re.search(r"[a-z]{3,}", label.replace("bfloat16", "")), (n, label)
        report = lib.check_port(lambda q, k, v: 2 * (q[..., :1] * 0 + v), lib.Recipe())
        assert not report.ok and report.failed
        assert all(pc._case_label(n) in report.message for n in report.failed[:3])
        assert not any(f"'{n}'" in report.message for n in names), report.message
    finally:
        i18n.set_language(None)
