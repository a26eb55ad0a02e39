"""lib.softmax and lib.softmax_jacobian against torch.softmax, autograd and exact math."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import lib
from conftest import TOL

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)
vectors = arrays(np.float64, st.integers(1, 12), elements=finite)


@given(vectors)
@settings(max_examples=200, deadline=None)
def test_sums_to_one_and_is_finite(x):
    p = lib.softmax(x)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert abs(p.sum() - 1.0) < 1e-12


@given(vectors, st.floats(-1e4, 1e4))
@settings(max_examples=200, deadline=None)
def test_shift_invariant(x, c):
    np.testing.assert_allclose(lib.softmax(x + c), lib.softmax(x), atol=1e-9)


@given(vectors)
@settings(max_examples=100, deadline=None)
def test_matches_torch_softmax(x):
    np.testing.assert_allclose(lib.softmax(x), torch.softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-10, atol=1e-300)


def test_extreme_inputs_exact():
    np.testing.assert_array_equal(lib.softmax(np.array([1e4, -1e4])), [1.0, 0.0])
    np.testing.assert_allclose(lib.softmax(np.array([0.0, 0.0, 0.0, 0.0])), 0.25)
    # the article's example: softmax([10, 0, 0]), small entries 1/(e^10 + 2)
    p = lib.softmax(np.array([10.0, 0.0, 0.0]))
    np.testing.assert_allclose(p[1:], 1 / (np.exp(10) + 2), rtol=1e-14)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axis_and_dtype_match_torch(rng, axis, dtype):
    x = (rng.standard_normal((3, 4, 5)) * 20).astype(dtype)
    p = lib.softmax(x, axis=axis)
    assert p.dtype == dtype
    np.testing.assert_allclose(p, torch.softmax(torch.from_numpy(x), dim=axis).numpy(), **TOL[dtype])


def test_torch_in_torch_out_keeps_autograd(rng):
    x = torch.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    p = lib.softmax(x)
    assert isinstance(p, torch.Tensor)
    torch.testing.assert_close(p, torch.softmax(x, -1), rtol=1e-12, atol=1e-12)
    (p[:, 0]).sum().backward()
    g = x.grad.clone()
    x.grad = None
    torch.softmax(x, -1)[:, 0].sum().backward()
    torch.testing.assert_close(g, x.grad, rtol=1e-12, atol=1e-12)


def test_integer_input_is_promoted():
    np.testing.assert_allclose(lib.softmax([10, 0, 0]), lib.softmax([10.0, 0.0, 0.0]))
    assert lib.softmax(torch.tensor([1, 2])).is_floating_point()


def test_all_minus_inf_row_gives_zeros():
    x = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    np.testing.assert_array_equal(lib.softmax(x), [[0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_array_equal(lib.softmax(torch.from_numpy(x)).numpy(), [[0.0, 0.0], [1.0, 0.0]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jacobian_matches_autograd(rng, dtype):
    z = torch.tensor(rng.standard_normal((3, 2, 6)) * 3, dtype=dtype)
    J = lib.softmax_jacobian(torch.softmax(z, -1))
    assert J.shape == (3, 2, 6, 6)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    for idx in np.ndindex(3, 2):
        ref = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z[idx])
        torch.testing.assert_close(J[idx], ref, **tol)
        np.testing.assert_allclose(lib.softmax_jacobian(torch.softmax(z[idx], -1).numpy()), ref.numpy(), **tol)


@given(vectors)
@settings(max_examples=100, deadline=None)
def test_jacobian_properties(x):
    """Exact math: symmetric, rows sum to 0 (ones in the null space), PSD, |J_ij| <= 1/4."""
    J = lib.softmax_jacobian(lib.softmax(x))
    np.testing.assert_allclose(J, J.T, atol=0)
    np.testing.assert_allclose(J.sum(-1), 0.0, atol=1e-12)
    assert np.all(np.abs(J) <= 0.25 + 1e-15)
    assert np.linalg.eigvalsh(J).min() > -1e-12


def test_jacobian_vanishes_when_saturated():
    assert np.abs(lib.softmax_jacobian(lib.softmax(np.array([50.0, 0.0, 0.0])))).max() < 1e-20
    J = lib.softmax_jacobian(lib.softmax(np.array([0.0, 0.0])))
    np.testing.assert_allclose(J, [[0.25, -0.25], [-0.25, 0.25]])
