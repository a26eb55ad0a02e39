"""lib.port_check: the recipe's reference against PyTorch's own attention, and the port check naming
each mistake (chapter `porting`).

The reference is compared with ``F.scaled_dot_product_attention`` given an explicit ``scale`` and an
additive ``attn_mask`` (ALiBi, causal, window), with FlexAttention's ``score_mod`` (the cap), and with
``F.rms_norm`` (q/k norm): none of them shares code with lib. The candidates below are written in
the style of the models' own code, independently of lib.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib
from lib.experiments.port_check import CASES, Recipe

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
    assert "torch.bfloat16" in {dt for _, dt in seen} and len(CASES) >= 8


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
