"""Which array library a value belongs to, without importing torch eagerly.

`import lib` must work where torch is not installed, so nothing here imports
torch at module level.  A value is a torch tensor only if torch has already
been imported by someone (it is then in ``sys.modules``).
"""
from __future__ import annotations

import sys

import numpy as np


def torch_module():
    """Return the imported ``torch`` module, importing it on first use.

    Raises a clear ``ModuleNotFoundError`` where torch is not installed.
    """
    try:
        import torch  # noqa: PLC0415 - lazy by design
    except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ModuleNotFoundError(
            "This part of lib needs PyTorch, which is not installed. "
            "Install it with `pip install torch==2.13.0` (CPU build), or use NumPy arrays."
        ) from exc
    return torch


def is_torch(x) -> bool:
    """True if ``x`` is a torch tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def family(name: str, x) -> str:
    """'torch' or 'numpy' for one argument; lists and scalars count as NumPy."""
    return "torch" if is_torch(x) else "numpy"


def check_same_family(**arrays) -> str:
    """All named arguments must be NumPy or all torch; returns which.

    ``None`` values are skipped.  Mixing raises ``TypeError`` naming the culprits.
    """
    fams = {name: family(name, a) for name, a in arrays.items() if a is not None}
    kinds = set(fams.values())
    if len(kinds) > 1:
        desc = ", ".join(f"{n}={'torch.Tensor' if f == 'torch' else 'NumPy'}" for n, f in fams.items())
        raise TypeError(
            f"NumPy arrays and torch tensors are mixed in one call ({desc}); "
            "convert them all to one kind (torch.from_numpy(a) or t.detach().cpu().numpy())."
        )
    return kinds.pop() if kinds else "numpy"


def dtype_kind(x) -> str:
    """'float', 'bool', 'int', 'complex' or 'other' for a NumPy array or a torch tensor."""
    if is_torch(x):
        torch = sys.modules["torch"]
        if x.dtype == torch.bool:
            return "bool"
        if x.is_floating_point():
            return "float"
        if x.is_complex():
            return "complex"
        return "int"
    dt = np.asarray(x).dtype
    if dt == np.bool_:
        return "bool"
    if np.issubdtype(dt, np.floating):
        return "float"
    if np.issubdtype(dt, np.integer):
        return "int"
    if np.issubdtype(dt, np.complexfloating):
        return "complex"
    return "other"
