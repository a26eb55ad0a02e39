"""Shared fixtures: seeded inputs, tolerances, and the CUDA switch."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-10)}
TORCH_DTYPE = {np.float32: torch.float32, np.float64: torch.float64}

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="CUDA is not available on this machine")
    for item in items:
        if "cuda" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device; skipped where there is none")


def make_qkv(rng, batch, L, S, d_k, d_v, dtype):
    """Random q (*batch, L, d_k), k (*batch, S, d_k), v (*batch, S, d_v) of one dtype."""
    q = rng.standard_normal((*batch, L, d_k)).astype(dtype)
    k = rng.standard_normal((*batch, S, d_k)).astype(dtype)
    v = rng.standard_normal((*batch, S, d_v)).astype(dtype)
    return q, k, v


def input_grads(fn, inputs, upstream):
    """Gradients of sum(fn() * upstream) with respect to each of ``inputs``; clears them afterwards."""
    (fn() * upstream).sum().backward()
    grads = [t.grad.clone() for t in inputs]
    for t in inputs:
        t.grad = None
    return grads


@pytest.fixture
def rng():
    return np.random.default_rng(20171206)  # the date Vaswani et al. appeared at NeurIPS
