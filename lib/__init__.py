"""lib: the one tested implementation of attention that every chapter imports.

NumPy path: works without torch.  Torch path: pass torch tensors (CPU or CUDA).
``MultiHeadAttention`` and ``default_device`` import torch on first use.
"""
from __future__ import annotations

from .attention import (
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    softmax,
    softmax_jacobian,
    split_heads,
)
from .selfcheck import Verdict, check_array, check_number
from .simulate import sample_dot_products

__version__ = "0.1.0"

# Names that need torch are loaded on first access (PEP 562), so `import lib`
# never imports torch.
_LAZY = {
    "MultiHeadAttention": ("mha", "MultiHeadAttention"),
    "default_device": ("device", "default_device"),
    "describe_device": ("device", "describe_device"),
}

__all__ = [
    "causal_mask",
    "merge_heads",
    "scaled_dot_product_attention",
    "softmax",
    "softmax_jacobian",
    "split_heads",
    "sample_dot_products",
    "Verdict",
    "check_array",
    "check_number",
    *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
