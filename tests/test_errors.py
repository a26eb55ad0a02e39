"""Bad input gets a clear error naming the shapes or dtypes at fault."""
import numpy as np
import pytest
import torch

import lib

Q = np.zeros((2, 3, 8))
K = np.zeros((2, 5, 8))
V = np.zeros((2, 5, 4))


@pytest.mark.parametrize(
    "args, match",
    [
        ((Q, np.zeros((2, 5, 7)), V), r"d_k differs.*\(2, 3, 8\).*\(2, 5, 7\)"),
        ((Q, K, np.zeros((2, 6, 4))), r"key and value lengths differ.*\(2, 5, 8\).*\(2, 6, 4\)"),
        ((np.zeros(8), K, V), r"q must have at least 2 dimensions.*\(8,\)"),
        ((np.zeros((3, 3, 8)), K, V), r"batch dimensions do not broadcast.*\(3, 3, 8\)"),
    ],
)
def test_shape_errors(args, match):
    with pytest.raises(ValueError, match=match):
        lib.scaled_dot_product_attention(*args)
    with pytest.raises(ValueError, match=match):
        lib.scaled_dot_product_attention(*(torch.from_numpy(a) for a in args))


@pytest.mark.parametrize("mask_shape", [(3, 4), (2, 3, 3, 5), (5, 3)])
def test_mask_that_does_not_broadcast(mask_shape):
    with pytest.raises(ValueError, match=r"mask of shape .* does not broadcast to .*\(2, 3, 5\)"):
        lib.scaled_dot_product_attention(Q, K, V, np.ones(mask_shape, dtype=bool))
    with pytest.raises(ValueError, match=r"does not broadcast"):
        lib.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)),
                                         torch.ones(mask_shape, dtype=torch.bool))


def test_mask_that_would_enlarge_the_output_is_refused():
    # (4, 3, 5) broadcasts with (2, 3, 5)? No; (1, 2, 3, 5) would add a dimension: refuse both.
    with pytest.raises(ValueError, match="does not broadcast"):
        lib.scaled_dot_product_attention(Q, K, V, np.ones((1, 2, 3, 5), dtype=bool))


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_boolean_inputs(name, dtype):
    args = dict(q=Q, k=K, v=V)
    args[name] = args[name].astype(dtype)
    with pytest.raises(TypeError, match=rf"{name} has dtype"):
        lib.scaled_dot_product_attention(**args)
    targs = {n: torch.from_numpy(a) for n, a in args.items()}
    with pytest.raises(TypeError, match=rf"{name} has dtype"):
        lib.scaled_dot_product_attention(**targs)


def test_integer_mask_is_ambiguous():
    with pytest.raises(TypeError, match="mask has dtype"):
        lib.scaled_dot_product_attention(Q, K, V, np.ones((3, 5), dtype=int))


@pytest.mark.parametrize("which", ["q", "k", "v", "mask"])
def test_numpy_and_torch_mixed(which):
    args = dict(q=Q, k=K, v=V, mask=np.ones((3, 5), dtype=bool))
    args[which] = torch.from_numpy(args[which])
    with pytest.raises(TypeError, match=rf"mixed.*{which}=torch.Tensor"):
        lib.scaled_dot_product_attention(**args)


def test_mask_and_is_causal_together():
    with pytest.raises(ValueError, match="either mask or is_causal"):
        lib.scaled_dot_product_attention(Q, K, V, np.ones((3, 5), dtype=bool), is_causal=True)


def test_split_heads_errors():
    with pytest.raises(ValueError, match=r"d_model=10 .* not divisible by num_heads=3"):
        lib.split_heads(np.zeros((2, 4, 10)), 3)
    with pytest.raises(ValueError, match="needs"):
        lib.merge_heads(np.zeros((4, 10)))


def test_mha_errors():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        lib.MultiHeadAttention(10, 3)
    m = lib.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query must have shape \(B, length, d_model=8\); got \(2, 3, 6\)"):
        m(torch.zeros(2, 3, 6))
    with pytest.raises(ValueError, match="batch_first=True"):
        lib.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2))
    with pytest.raises(TypeError, match="expects torch.nn.MultiheadAttention"):
        lib.MultiHeadAttention.from_torch(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("value, error", [(True, TypeError), ("0.1", TypeError), (None, TypeError),
                                          (0.0, ValueError), (-1, ValueError), (float("nan"), ValueError),
                                          (float("inf"), ValueError)])
def test_positive_number_names_the_argument(value, error):
    from lib.infra.checks import positive_number
    with pytest.raises(error, match="^lr must be"):
        positive_number("lr", value)


def test_positive_number_accepts_numpy_and_returns_a_float():
    from lib.infra.checks import positive_number
    assert positive_number("lr", np.float32(0.5)) == 0.5 and type(positive_number("lr", np.int64(3))) is float
