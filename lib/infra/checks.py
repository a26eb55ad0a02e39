"""Argument checks shared by lib's modules: one rule each, one wording of each error.

- :func:`check_qkv`: kinds, dtypes and shapes of attention's q, k, v and mask.
- :func:`resolve_scale`: what ``scale=`` means everywhere in lib: ``None`` is 1/√d_k (the default of
  the 2017 formula and of PyTorch's SDPA), a number is used as given, and anything else (a string, a
  bool) is a ``TypeError``.
- :func:`positive_int`: an int ≥ ``minimum`` (NumPy integers accepted, bools refused).
- :func:`positive_number`: a finite real number > 0 (a learning rate, a standard deviation).
- :func:`generator`: a NumPy ``Generator`` from a seed or a generator.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from . import claims
from ._backend import dtype_kind
from .i18n import tr

__all__ = ["check_qkv", "resolve_scale", "positive_int", "positive_number", "generator"]


def _shape(x):
    return tuple(x.shape)


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int, if it is an integer (Python or NumPy, not bool) of at least ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__})")
    if value < minimum:
        rule = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{name} must be {rule}; got {value!r}")
    return int(value)


def positive_number(name: str, value) -> float:
    """``value`` as a float, if it is a finite real number > 0 (Python or NumPy, not bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def generator(seed) -> np.random.Generator:
    """A ``np.random.Generator``: ``seed`` itself if it is one, else ``np.random.default_rng(seed)`` (an
    int seed moved by ``BOOK_SEED_OFFSET``, see :func:`lib.claims.seed`; None stays None)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(claims.seed(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else seed)


def resolve_scale(d_k: int, scale) -> float:
    """The factor that multiplies the scores: ``None`` → 1/√d_k; a finite real number → itself."""
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    if isinstance(scale, (bool, np.bool_, str)) or not isinstance(scale, (numbers.Real, np.floating, np.integer)):
        hint = " (for 1/√d_k pass scale=None)" if isinstance(scale, str) else ""
        raise TypeError(f"scale must be None (1/√d_k) or a real number; got {scale!r}{hint}")
    if not math.isfinite(float(scale)):
        raise ValueError(f"scale must be finite; got {scale!r}")
    return float(scale)


def check_qkv(q, k, v, mask):
    """Validate kinds, dtypes and shapes of attention's inputs; return (batch shape, L, S)."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        kind = dtype_kind(a)
        if kind != "float":
            raise TypeError(
                f"{name} has dtype {a.dtype} ({kind}); attention needs floating-point q, k, v "
                f"(convert with .astype(np.float64) or .float())"
            )
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., length, features); got shape {_shape(a)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(tr("d_k differs: q has shape {q} and k has shape {k}; their last dimensions "
                            "({a} and {b}) must be equal", q=_shape(q), k=_shape(k),
                            a=q.shape[-1], b=k.shape[-1]))
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"key and value lengths differ: k has shape {_shape(k)} and v has shape {_shape(v)}; "
            f"their second-to-last dimensions ({k.shape[-2]} and {v.shape[-2]}) must be equal"
        )
    try:
        batch = np.broadcast_shapes(_shape(q)[:-2], _shape(k)[:-2], _shape(v)[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions do not broadcast: q {_shape(q)}, k {_shape(k)}, v {_shape(v)}"
        ) from None
    L, S = q.shape[-2], k.shape[-2]
    scores_shape = (*batch, L, S)
    if mask is not None:
        kind = dtype_kind(mask)
        if kind not in ("bool", "float"):
            raise TypeError(
                f"mask has dtype {mask.dtype}; use a boolean mask (True = may attend) "
                "or a floating additive mask (0 or -inf)"
            )
        try:
            ok = np.broadcast_shapes(_shape(mask), scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask of shape {_shape(mask)} does not broadcast to the scores' shape "
                f"(..., L, S) = {scores_shape} (q {_shape(q)}, k {_shape(k)})"
            )
    return batch, L, S
