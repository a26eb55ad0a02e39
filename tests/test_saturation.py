"""lib.saturation against PyTorch autograd and exact values (chapter `softmax-saturation`)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import lib


def autograd_jacobian(z):
    """The softmax Jacobian by PyTorch autograd, float64."""
    return torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1),
                                              torch.tensor(z, dtype=torch.float64)).numpy()


@given(arrays(np.float64, st.integers(2, 10), elements=st.floats(-60, 60)))
@settings(max_examples=200, deadline=None)
def test_gap_bound_holds_against_autograd(z):
    J = autograd_jacobian(z)
    assert np.abs(J).max() <= lib.jacobian_gap_bound(z) + 1e-15


def test_gap_bound_known_values_and_tightness():
    assert lib.jacobian_gap_bound(np.array([0.0, 0.0])) == 0.25                     # a tie: the 1/4 ceiling
    assert np.abs(autograd_jacobian([0.0, 0.0])).max() == 0.25                       # ... attained
    np.testing.assert_allclose(lib.jacobian_gap_bound(np.array([10.0, 0.0, 0.0])), 2 * math.exp(-10))
    # two inputs, gap 20: |J| = p1 p2 = e^-20 / (1 + e^-20)^2, the bound e^-20 is tight to 4e-9
    ratio = np.abs(autograd_jacobian([20.0, 0.0])).max() / lib.jacobian_gap_bound(np.array([20.0, 0.0]))
    assert abs(ratio - 1) < 1e-6   # (autograd rounds p - p² at p ≈ 1 to ~1e-8 relative)
    # batched along an axis
    z = np.array([[0.0, 0.0], [10.0, 0.0]])
    np.testing.assert_allclose(lib.jacobian_gap_bound(z), [0.25, math.exp(-10)])
    np.testing.assert_allclose(lib.jacobian_gap_bound(z.T, axis=0), [0.25, math.exp(-10)])


@pytest.mark.parametrize("bad", [np.array([1.0]), np.array(3.0), np.array([1.0, np.nan]), np.array([np.inf, 0.0])])
def test_gap_bound_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        lib.jacobian_gap_bound(bad)


def test_logit_scale_sweep_against_autograd_and_limits():
    scales = [0.0, 1.0, 4.0, 50.0]
    out = lib.logit_scale_sweep(scales, n_keys=8, n_samples=5, seed=3)
    assert out.shape == (4, 5)
    np.testing.assert_allclose(out[0], math.sqrt(7) / 8, rtol=1e-12)   # c = 0: uniform, ||J|| = sqrt(n-1)/n
    z = np.random.default_rng(3).standard_normal((5, 8))                 # the same draws as the sweep
    for i, c in enumerate(scales):
        explicit = [np.linalg.norm(autograd_jacobian(c * zz)) for zz in z]
        # lib.jacobian_norm is a closed form under a square root: absolute rounding error up to ~1e-8
        np.testing.assert_allclose(out[i], explicit, rtol=1e-5, atol=3e-8)
    big = lib.logit_scale_sweep([1.0, 100.0], n_keys=32, n_samples=500, seed=0)
    assert np.median(big[1]) < 1e-6 < 0.2 < np.median(big[0])          # collapses at large scale


@pytest.mark.parametrize("kwargs, error", [(dict(scales=[]), ValueError), (dict(scales=[[1.0]]), ValueError),
                                           (dict(scales=[-1.0]), ValueError), (dict(scales=[np.nan]), ValueError),
                                           (dict(scales=[1.0], n_keys=0), ValueError),
                                           (dict(scales=[1.0], n_samples=2.5), TypeError)])
def test_logit_scale_sweep_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        lib.logit_scale_sweep(**kwargs)


@pytest.mark.parametrize("d_k", [4, 256])
def test_one_query_attention_against_torch(d_k):
    sc = lib.one_query_attention(d_k, n_keys=6, scaled=True, seed=2)
    raw = lib.one_query_attention(d_k, n_keys=6, scaled=False, seed=2)
    np.testing.assert_allclose(raw["scores"] / math.sqrt(d_k), sc["scores"], rtol=1e-12)   # same vectors
    for r in (sc, raw):
        s = torch.tensor(r["scores"])
        np.testing.assert_allclose(r["weights"], torch.softmax(s, -1).numpy(), rtol=1e-10, atol=1e-300)
        np.testing.assert_allclose(r["jacobian"], autograd_jacobian(r["scores"]), rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(r["jacobian_norm"], lib.jacobian_norm(r["weights"]), rtol=1e-9, atol=3e-8)
    assert sc["weights"].shape == (6,) and sc["jacobian"].shape == (6, 6)


def test_one_query_attention_saturates_unscaled_at_large_d_k():
    norms = [lib.one_query_attention(1024, scaled=False, seed=s)["jacobian_norm"] for s in range(20)]
    scaled = [lib.one_query_attention(1024, scaled=True, seed=s)["jacobian_norm"] for s in range(20)]
    assert np.median(norms) < 1e-3 < 0.1 < np.median(scaled)


@pytest.mark.parametrize("kwargs, error", [(dict(d_k=0), ValueError), (dict(d_k=2.0), TypeError),
                                           (dict(d_k=True), TypeError), (dict(d_k=4, n_keys=1), ValueError)])
def test_one_query_attention_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        lib.one_query_attention(**kwargs)


def test_article_examples_known_values():
    """The article's inputs (10, 0, 0) and (50, 0, 0): values that the `softmax-saturation` chapter glues (facts.md)."""
    p10 = lib.softmax(np.array([10.0, 0.0, 0.0]))
    np.testing.assert_allclose(p10, [0.9999092, 4.5395e-5, 4.5395e-5], rtol=1e-4)
    np.testing.assert_allclose(np.abs(lib.softmax_jacobian(p10)).max(), 9.0786e-5, rtol=1e-4)
    p50 = lib.softmax(np.array([50.0, 0.0, 0.0]))
    np.testing.assert_allclose(p50[1:], 1.9287e-22, rtol=1e-4)
    np.testing.assert_allclose(np.abs(lib.softmax_jacobian(p50)).max(), p50[1], rtol=1e-6)
    assert p50[0] == 1.0 and lib.softmax_jacobian(p50)[0, 0] == 0.0        # "tiny" becomes "zero"
