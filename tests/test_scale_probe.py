"""lib.infer_scale: the scale an attention function applies, measured by probing it (chapter `real-code`).

Every implementation below is written independently of lib (NumPy softmax or PyTorch), in the style
of real code; the probe must name each one's mistake and pass the correct ones.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def kt(k):
    return k.swapaxes(-1, -2)


NUMPY_CASES = {  # name: (function, verdict, scale measured at d_k = 16)
    "correct": (lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[-1])) @ v, "ok", 0.25),
    "power -0.5": (lambda q, k, v: softmax(q @ kt(k) * q.shape[-1] ** -0.5) @ v, "ok", 0.25),
    "split d^-1/4": (lambda q, k, v: softmax((q * q.shape[-1] ** -0.25) @ kt(k * k.shape[-1] ** -0.25)) @ v,
                     "ok", 0.25),
    "scale q first": (lambda q, k, v: softmax((q / math.sqrt(q.shape[-1])) @ kt(k)) @ v, "ok", 0.25),
    "after softmax": (lambda q, k, v: softmax(q @ kt(k)) / math.sqrt(q.shape[-1]) @ v, "after_softmax", 1.0),
    "twice": (lambda q, k, v: softmax((q / math.sqrt(q.shape[-1])) @ kt(k) / math.sqrt(q.shape[-1])) @ v,
              "double", 1 / 16),
    "d ** 1 / 2 divisor": (lambda q, k, v: softmax(q @ kt(k) / (q.shape[-1] ** 1 / 2)) @ v, "precedence", 2 / 16),
    "d ** 1 / 2 inline": (lambda q, k, v: softmax(q @ kt(k) / q.shape[-1] ** 1 / 2) @ v, "precedence", 1 / 32),
    "value width": (lambda q, k, v: softmax(q @ kt(k) / math.sqrt(v.shape[-1])) @ v, "value_width", 0.5),
    "sequence length": (lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[-2])) @ v, "sequence_length",
                        1 / math.sqrt(6)),
    "missing": (lambda q, k, v: softmax(q @ kt(k)) @ v, "missing", 1.0),
    "constant 1/8": (lambda q, k, v: softmax(q @ kt(k) / 8) @ v, "custom", 0.125),
}


@pytest.mark.parametrize("name", list(NUMPY_CASES))
def test_numpy_implementations(name):
    fn, verdict, tau = NUMPY_CASES[name]
    report = lib.infer_scale(fn)
    assert report.verdict == verdict, report.message
    assert report.scale == pytest.approx(tau, rel=1e-6)
    assert bool(report) == (verdict == "ok") and str(report).startswith("✓" if verdict == "ok" else "✗")
    if verdict == "after_softmax":
        assert report.weight_sum == pytest.approx(0.25)  # the weights were divided by √16


def test_scale_after_softmax_is_reported_whatever_the_inside_scale():
    fn = lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[-1])) * 2.0 @ v  # noqa: E731
    report = lib.infer_scale(fn)
    assert report.verdict == "after_softmax" and report.scale == pytest.approx(0.25)
    assert report.weight_sum == pytest.approx(2.0)


TORCH_CASES = {
    "sdpa default": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), "ok", 0.25),
    "sdpa causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), "ok", 0.25),
    "q pre-scaled and default": (lambda q, k, v: F.scaled_dot_product_attention(q / math.sqrt(q.size(-1)), k, v),
                                 "double", 1 / 16),
    "q pre-scaled, scale=1": (lambda q, k, v: F.scaled_dot_product_attention(q / math.sqrt(q.size(-1)), k, v,
                                                                              scale=1.0), "ok", 0.25),
    "explicit math": (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ v,
                      "ok", 0.25),
    "size(1) of (B, h, L, d)": (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(1)), -1)
                                @ v, "missing", 1.0),
    "size(2) of (B, h, L, d)": (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(2)), -1)
                                @ v, "sequence_length", 1 / math.sqrt(6)),
    "lib torch path": (lambda q, k, v: lib.scaled_dot_product_attention(q, k, v), "ok", 0.25),
    "lib blockwise exp2": (lambda q, k, v: lib.blockwise_attention(q, k, v, block_size=2, exp2=True), "ok", 0.25),
    "returns (out, weights)": (lambda q, k, v: lib.scaled_dot_product_attention(q, k, v, return_weights=True),
                               "ok", 0.25),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_torch_implementations_with_batch_and_head_axes(name):
    fn, verdict, tau = TORCH_CASES[name]
    report = lib.infer_scale(fn, backend="torch", batch_dims=(1, 1))
    assert report.verdict == verdict, report.message
    assert report.scale == pytest.approx(tau, rel=1e-6)


def test_expected_custom_scale():
    mup = lambda d: 1 / d  # noqa: E731
    right = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1 / q.size(-1))  # noqa: E731
    default = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    assert lib.infer_scale(right, backend="torch", expected=mup).ok
    report = lib.infer_scale(default, backend="torch", expected=mup)
    assert report.verdict == "default" and report.scale == pytest.approx(0.25) and report.expected == 1 / 16
    assert lib.infer_scale(lambda q, k, v: softmax(q @ kt(k)) @ v, expected=lambda d: 1.0).ok  # T5: scale 1


def test_large_and_negative_scales_are_measured():
    big = lib.infer_scale(lambda q, k, v: softmax(q @ kt(k) * 40.0) @ v)  # saturates at the first probe
    assert big.verdict == "custom" and big.scale == pytest.approx(40.0, rel=1e-6)
    neg = lib.infer_scale(lambda q, k, v: softmax(-(q @ kt(k)) / 4) @ v)
    assert neg.verdict == "custom" and neg.scale == pytest.approx(-0.25, rel=1e-6)


def test_half_precision_code_with_a_looser_tolerance():
    fn = lambda q, k, v: F.scaled_dot_product_attention(q.half(), k.half(), v.half())  # noqa: E731
    assert lib.infer_scale(fn, backend="torch", rtol=0.02).ok
    assert lib.infer_scale(lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[-1])) @ v, rtol=0.02).ok


def test_failing_functions_give_a_verdict_not_an_exception():
    for fn in (lambda q, k, v: 1 / 0, lambda q, k, v: q @ kt(k), lambda q, k, v: np.full(v.shape, np.nan)):
        report = lib.infer_scale(fn)
        assert report.verdict == "error" and not report and "failed" in report.message


def test_bad_arguments():
    with pytest.raises(TypeError, match="function"):
        lib.infer_scale(3)
    with pytest.raises(ValueError, match="backend"):
        lib.infer_scale(lambda q, k, v: v, backend="jax")
    with pytest.raises(ValueError, match="batch_dims"):
        lib.infer_scale(lambda q, k, v: v, batch_dims=[1])
    with pytest.raises(ValueError, match="positive"):
        lib.infer_scale(lambda q, k, v: v, expected=lambda d: 0.0)
    with pytest.raises(ValueError, match="rtol"):
        lib.infer_scale(lambda q, k, v: v, rtol=0.5)


def test_report_shows_its_message_as_written():
    """In a notebook a report renders like a self-check verdict: d_k and `code` stay as written
    (unescaped Markdown would turn d_k ... 1/d_k into italics and ** into bold)."""
    def twice(q, k, v):
        return lib.softmax(q @ np.swapaxes(k, -1, -2) / q.shape[-1]) @ v

    r = lib.infer_scale(twice)
    assert not r and r.verdict == "double" and "d_k" in r.message
    md = r._repr_markdown_()
    assert md.startswith("**✗** ") and "d\\_k" in md and "d_k" not in md.replace("d\\_k", "")
    h = r._repr_html_()
    assert h.startswith('<p class="selfcheck-verdict selfcheck-not-yet"><strong>✗</strong> ')
    assert str(r) == repr(r) == "✗ " + r.message


def test_default_probe_varies_batch_and_heads():
    """Review 10-O3: with 2-D inputs `q.shape[1]` IS d_k, so only batch and head axes reveal the bug."""
    size1 = lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[1])) @ v  # noqa: E731
    report = lib.infer_scale(size1)
    assert report.verdict == "batch_axes" and report.batch_dims == (2, 3), report.message
    assert report.scale == pytest.approx(1 / math.sqrt(3))
    torch_size1 = lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(1)), -1) @ v  # noqa: E731
    assert lib.infer_scale(torch_size1, backend="torch").verdict == "batch_axes"
    batch0 = lambda q, k, v: softmax(q @ kt(k) / math.sqrt(q.shape[0] * 8)) @ v  # noqa: E731  # 1/4 at B = 2
    assert lib.infer_scale(batch0).verdict == "batch_axes"
    assert lib.infer_scale(size1, batch_dims=()).verdict == "ok"  # an explicit layout probes only that one


def test_functions_for_2d_inputs_are_probed_in_2d():
    two_d = lambda q, k, v: softmax(q @ k.T / math.sqrt(q.shape[-1])) @ v  # noqa: E731  # .T: 2-D only
    report = lib.infer_scale(two_d)
    assert report.ok and report.batch_dims == ()
    seq = lambda q, k, v: softmax(q @ k.T / math.sqrt(q.shape[0])) @ v  # noqa: E731
    assert lib.infer_scale(seq).verdict == "sequence_length"


# --- issue 35: correct code the probe cannot read must not get a confident wrong verdict ------------

def _slopes(h):
    p = 2 ** math.floor(math.log2(h))
    return [2 ** (-8 * (n + 1) / p) for n in range(p)] + [2 ** (-4 * (2 * n + 1) / p) for n in range(h - p)]


def bloom_alibi(q, k, v):
    """BLOOM: ALiBi (slope · key position) added after 1/√d (``baddbmm(alibi, q, kᵀ, alpha=1/√d)``)."""
    h = q.size(1)
    alibi = torch.tensor(_slopes(h), dtype=q.dtype)[:, None, None] * torch.arange(k.size(-2), dtype=q.dtype)
    return torch.softmax(alibi + q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ v


def gpt_oss_sink(q, k, v, sink=0.7):
    """gpt-oss: one more logit per head in the softmax, dropped after it (transformers
    models/gpt_oss/modeling_gpt_oss.py at 00d4b3d)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    both = torch.cat([s, torch.full((*s.shape[:-1], 1), sink, dtype=s.dtype)], -1)
    return torch.softmax(both, -1)[..., :-1] @ v


def qwen3_norm(q, k, v):
    """Qwen 3: RMSNorm of each head's q and k (with a learned weight; ones here), then SDPA."""
    w = torch.linspace(0.8, 1.2, q.size(-1), dtype=q.dtype)
    return F.scaled_dot_product_attention(F.rms_norm(q, (q.size(-1),), w, eps=1e-6),
                                          F.rms_norm(k, (k.size(-1),), w, eps=1e-6), v)


def flash_layout(q, k, v):
    """A correct function for (B, L, h, d) inputs, the layout of flash-attn, xformers and JAX."""
    s = torch.einsum("blhd,bshd->bhls", q, k) / math.sqrt(q.size(-1))
    return torch.einsum("bhls,bshd->blhd", torch.softmax(s, -1), v)


def hf_eager_bf16(q, k, v):
    """Hugging Face's eager attention run in bfloat16 (softmax in float32, cast back)."""
    q, k, v = q.bfloat16(), k.bfloat16(), v.bfloat16()
    w = torch.softmax(q @ k.transpose(-2, -1) * q.size(-1) ** -0.5, -1, dtype=torch.float32).to(q.dtype)
    return w @ v


def test_correct_code_outside_the_probes_assumptions():
    r = lib.infer_scale(bloom_alibi, backend="torch")
    assert r.verdict == "additive" and "ALiBi" in r.message, r.message
    r = lib.infer_scale(gpt_oss_sink, backend="torch")
    assert r.ok and r.sink and r.weight_sum < 1, r.message
    r = lib.infer_scale(qwen3_norm, backend="torch")
    assert r.verdict == "normalised" and "norm" in r.message, r.message
    r = lib.infer_scale(flash_layout, backend="torch")
    assert r.ok and r.layout == "BLHD" and r.scale == pytest.approx(0.25, rel=1e-6), r.message
    r = lib.infer_scale(hf_eager_bf16, backend="torch")
    assert r.ok and r.rtol == 0.02, r.message
    r = lib.infer_scale(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), backend="torch", dtype="float16")
    assert r.ok and r.rtol == 0.02, r.message


def test_sink_and_layout_do_not_hide_the_scale_mistakes():
    twice_sink = lambda q, k, v: gpt_oss_sink(q / math.sqrt(q.size(-1)), k, v)  # noqa: E731
    r = lib.infer_scale(twice_sink, backend="torch")
    assert r.verdict == "double" and r.sink, r.message
    flash_twice = lambda q, k, v: flash_layout(q / math.sqrt(q.size(-1)), k, v)  # noqa: E731
    r = lib.infer_scale(flash_twice, backend="torch")
    assert r.verdict == "double" and r.layout == "BLHD", r.message
    after = lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -1) @ v * 0.5  # noqa: E731
    assert lib.infer_scale(after, backend="torch").verdict == "after_softmax"


def test_measure_scale_reads_every_slice():
    """Review L-W1: a scale that depends on the head must not be read off the first slice alone."""
    from lib.experiments.port_check import measure_scale

    per_head = lambda q, k, v: torch.softmax(  # noqa: E731
        q @ k.transpose(-2, -1) * (torch.arange(q.size(1), dtype=q.dtype)[:, None, None] + 1) / 4, -1) @ v
    with pytest.raises(ValueError, match="slices"):
        measure_scale(per_head, 16, 4, 6, 4.0, (2, 3), "torch")
    assert lib.infer_scale(per_head, backend="torch").verdict == "batch_axes"
