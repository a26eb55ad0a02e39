"""A small task that attention must learn, a one-layer attention model, and its training loop.

The `training` chapter trains this model with the scale 1/√d_k and with scale 1 and compares
how fast each learns.  Needs torch (not imported by ``lib/__init__``); use
``from lib import training``.

The task, **retrieval by content**: a sequence of ``n_keys`` random key vectors,
each carrying a class label, and a query that is a noisy copy of one of the keys.
The answer is the label of the key the query copies.  Chance is a loss of
ln ``n_classes``.  A model that does not use the query can still beat chance a
little, by betting on the labels that occur most often among the keys: the best
any such predictor can do is :func:`label_count_baselines` (about 1.83 nats for
16 keys and 8 classes, against ln 8 ≈ 2.08), and a model whose attention is
uniform reaches at best about 1.88.  The query enters the model only through
W_Q and the attention weights, so getting below about 1.83 nats needs attention
that finds the matching key.

Published experiments run on the CPU (``device=None``, the default of every
function here), so the book's numbers do not depend on whether the machine that
builds it has a GPU; pass ``device="cuda"`` to try one.
"""
from __future__ import annotations

import copy
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from .attention import scaled_dot_product_attention, softmax
from . import claims
from .checks import positive_int
from .metrics import attention_entropy

__all__ = ["RetrievalBatch", "make_retrieval_batch", "AttentionRetriever", "TrainResult", "train",
           "train_seeds", "Arm", "train_grid", "unscaled_equivalent", "BatchStream", "batch_stream",
           "per_query_gradients", "steps_to_threshold", "label_count_baselines",
           "gradient_path", "median_steps", "seed_bootstrap_ratio", "median_final_loss", "stuck", "top_share", "all_tokens",
           "score_stats", "qk_retrieval_loss"]

#: Seed s's training batches come from torch.Generator().manual_seed(s + DATA_SEED_OFFSET), so that
#: the data never shares a stream with the model's initialisation (seed s).
DATA_SEED_OFFSET = 1_000_003


@dataclass(frozen=True)
class RetrievalBatch:
    """One batch of the retrieval task (all tensors on the same device).

    - ``query``  (B, 1, d_in)   a noisy copy of ``keys[b, index[b]]``
    - ``keys``   (B, S, d_in)   independent N(0, 1) components
    - ``labels`` (B, S) int64   the class each key carries, uniform in [0, n_classes)
    - ``index``  (B,)   int64   which key the query copies
    - ``target`` (B,)   int64   ``labels[b, index[b]]``, what the model must output
    """

    query: torch.Tensor
    keys: torch.Tensor
    labels: torch.Tensor
    index: torch.Tensor
    target: torch.Tensor


@contextmanager
def one_thread(device):
    """Run torch on one CPU thread inside the block (restored afterwards); nothing changes for a GPU.

    For tensors this small one thread is as fast as several (and much faster on a busy machine), and
    the results do not depend on the machine's core count.
    """
    threads = torch.get_num_threads()
    if torch.device(device).type == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def make_retrieval_batch(batch_size: int, *, n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
                         noise: float = 0.5, generator: torch.Generator | None = None, device=None,
                         dtype=torch.float32) -> RetrievalBatch:
    """Draw a batch of the retrieval task (see the module docstring); shapes in :class:`RetrievalBatch`.

    The query is ``keys[index] + noise · ε`` with ε ~ N(0, I), so its components have
    variance ``1 + noise²``.  ``generator`` (a CPU ``torch.Generator``) makes the batch
    reproducible; the tensors are drawn on the CPU and then moved to ``device``, so a
    seed gives the same data on every device.
    """
    batch_size = positive_int("batch_size", batch_size)
    n_keys = positive_int("n_keys", n_keys)
    d_in = positive_int("d_in", d_in)
    n_classes = positive_int("n_classes", n_classes)
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2 (one class is nothing to learn); got {n_classes}")
    if not (isinstance(noise, (int, float)) and math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number ≥ 0; got {noise!r}")
    g = generator
    keys = torch.randn(batch_size, n_keys, d_in, generator=g)                 # (B, S, d_in)
    labels = torch.randint(0, n_classes, (batch_size, n_keys), generator=g)  # (B, S)
    index = torch.randint(0, n_keys, (batch_size,), generator=g)             # (B,)
    rows = torch.arange(batch_size)
    query = keys[rows, index] + noise * torch.randn(batch_size, d_in, generator=g)  # (B, d_in)
    target = labels[rows, index]                                             # (B,)
    to = dict(device=device)
    return RetrievalBatch(query=query.unsqueeze(1).to(dtype=dtype, **to), keys=keys.to(dtype=dtype, **to),
                          labels=labels.to(**to), index=index.to(**to), target=target.to(**to))


class AttentionRetriever(torch.nn.Module):
    """One attention layer and a linear read-out, for :func:`make_retrieval_batch`.

    ``q = query W_Q`` (B, 1, d_k), ``k = keys W_K`` (B, S, d_k), ``v = E[labels]`` (B, S, d_v),
    ``out = softmax(scale · q kᵀ) v`` (B, 1, d_v), ``logits = out W_O + b`` (B, n_classes).

    ``scale=None`` is 1/√d_k, ``scale=1.0`` the unscaled variant.  W_Q and W_K start
    with N(0, 1/d_in) entries, so for unit-variance inputs every component of q and k
    has variance about 1: the assumption of the `variance` chapter, under which the raw score
    q·k has variance d_k.

    How the score is computed: c q·k_j = x (c W_Q W_Kᵀ) x_jᵀ.  The model forms the
    d_in × d_in matrix c W_Q W_Kᵀ (c the scale) and calls
    ``lib.scaled_dot_product_attention(x c W_Q W_Kᵀ, keys, v, scale=1.0)``, which gives the
    same scores and weights (up to float rounding) without forming k, a (B, S, d_k) tensor:
    at d_k = 1024 and d_in = 32 this makes a training step many times cheaper.
    :meth:`project` returns q and k for readers who want to see them;
    ``tests/test_training.py`` checks the two ways against PyTorch.
    """

    def __init__(self, d_in: int, d_k: int, n_classes: int, *, d_v: int = 32, scale=None,
                 generator: torch.Generator | None = None):
        super().__init__()
        d_in, d_k = positive_int("d_in", d_in), positive_int("d_k", d_k)
        n_classes, d_v = positive_int("n_classes", n_classes), positive_int("d_v", d_v)
        if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be None (1/√d_k) or a finite number > 0; got {scale!r}")
        self.d_in, self.d_k, self.n_classes, self.scale = d_in, d_k, n_classes, scale
        self.W_Q = torch.nn.Parameter(torch.randn(d_in, d_k, generator=generator) / math.sqrt(d_in))
        self.W_K = torch.nn.Parameter(torch.randn(d_in, d_k, generator=generator) / math.sqrt(d_in))
        self.E = torch.nn.Parameter(torch.randn(n_classes, d_v, generator=generator))
        self.W_O = torch.nn.Parameter(torch.randn(d_v, n_classes, generator=generator) / math.sqrt(d_v))
        self.b_O = torch.nn.Parameter(torch.zeros(n_classes))

    def forward(self, batch: RetrievalBatch, *, return_weights: bool = False):
        """Logits (B, n_classes); with ``return_weights=True`` also the weights (B, 1, S)."""
        query, keys = batch.query, batch.keys
        if query.ndim != 3 or keys.ndim != 3 or query.shape[-1] != self.d_in or keys.shape[-1] != self.d_in:
            raise ValueError(f"expected query (B, 1, {self.d_in}) and keys (B, S, {self.d_in}); "
                             f"got query {tuple(query.shape)} and keys {tuple(keys.shape)}")
        M = (self.W_Q @ self.W_K.T) * self.score_scale   # (d_in, d_in): c W_Q W_Kᵀ
        q_in = query @ M                           # (B, 1, d_in): c q·k_j = (x c W_Q W_Kᵀ)·x_j
        v = self.E[batch.labels]                   # (B, S, d_v)
        out, w = scaled_dot_product_attention(q_in, keys, v, scale=1.0,
                                              return_weights=True)  # (B, 1, d_v), (B, 1, S)
        logits = out[:, 0] @ self.W_O + self.b_O   # (B, n_classes)
        return (logits, w) if return_weights else logits

    @property
    def score_scale(self) -> float:
        """The factor the scores q·k are multiplied by: 1/√d_k for ``scale=None``, else ``scale``."""
        return 1.0 / math.sqrt(self.d_k) if self.scale is None else float(self.scale)

    def project(self, batch: RetrievalBatch):
        """``(q, k, v)`` of ``batch`` as the formula writes them: (B, 1, d_k), (B, S, d_k), (B, S, d_v)."""
        return batch.query @ self.W_Q, batch.keys @ self.W_K, self.E[batch.labels]


@dataclass
class TrainResult:
    """What :func:`train` records, one entry per step (NumPy arrays of length ``steps``).

    - ``loss``: cross-entropy of the training batch (nats); chance is ln n_classes
    - ``accuracy``: fraction of the batch answered correctly
    - ``grad_q``, ``grad_k``: Frobenius norm of ∂loss/∂W_Q and ∂loss/∂W_K before the update
    - ``entropy``: mean attention entropy (nats) over the batch; ln S is uniform, 0 one-hot
    - ``seconds``: wall-clock time of the whole run
    """

    d_k: int
    scale: float | None
    optimizer: str
    seed: int
    loss: np.ndarray
    accuracy: np.ndarray
    grad_q: np.ndarray
    grad_k: np.ndarray
    entropy: np.ndarray
    seconds: float = 0.0
    model: torch.nn.Module | None = field(default=None, repr=False)
    lr: float | None = None
    qk_init: float = 1.0
    qk_lr: float = 1.0

    @property
    def label(self) -> str:
        return f"d_k={self.d_k}, " + ("scale 1/√d_k" if self.scale is None else f"scale {self.scale:g}")

    def final_loss(self, last: int = 20) -> float:
        """Mean training loss over the last ``last`` steps (smooths batch noise)."""
        return float(np.mean(self.loss[-last:]))

    def steps_to(self, threshold: float, window: int = 10) -> int:
        """:func:`steps_to_threshold` of this run's loss: ``len(loss)`` if it never got there."""
        return steps_to_threshold(self.loss, threshold, window)


def train(d_k: int, *, scale=None, steps: int = 300, batch_size: int = 64, lr: float = 0.1,
          optimizer: str = "sgd", seed: int = 0, n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
          noise: float = 0.5, d_v: int = 32, device=None) -> TrainResult:
    """Train a fresh :class:`AttentionRetriever` on fresh batches; record loss and gradient norms.

    ``optimizer`` is ``"sgd"`` (plain gradient descent, the default: a step is the
    gradient times ``lr``, so a vanishing gradient means a vanishing step) or
    ``"adam"`` (which divides each step by a running gradient size, and so partly
    hides small gradients).  ``seed`` fixes the initial weights and every batch.

    Runs in float32 on ``device``.  **The default is the CPU**, whatever the machine
    has: the book's numbers are CPU numbers, so they do not depend on whether a GPU is
    present.  Pass ``device="cuda"`` (or ``lib.default_device()``) to try a GPU.  On the
    CPU it runs on one thread (restored afterwards): for a model this small that is as
    fast as several, and it makes the result independent of the machine's core count.
    Without the scale, training is sensitive to rounding (near-tied scores decide where
    the gradient goes), so a run on another device, or on a CPU whose matrix routines
    round differently, can differ in detail.  Same as ``train_seeds(d_k, [seed], ...)[0]``.
    """
    return train_seeds(d_k, [seed], scale=scale, steps=steps, batch_size=batch_size, lr=lr, optimizer=optimizer,
                       n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise, d_v=d_v, device=device)[0]


def train_seeds(d_k: int, seeds, *, scale=None, steps: int = 300, batch_size: int = 64, lr: float = 0.1,
                optimizer: str = "sgd", n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
                noise: float = 0.5, d_v: int = 32, device=None) -> list[TrainResult]:
    """:func:`train` for several seeds at once: one independent model per seed, trained side by side.

    The models share nothing but the loop: each has the initial weights and batches of its own
    seed and its own optimiser state.  Their parameters are stacked along a leading axis and
    each step runs once for all seeds, with operations that never mix the seeds (batched
    matrix products, row-wise softmax and cross-entropy, an optimiser that acts entry by
    entry), so each seed's record equals ``train(d_k, seed=s, ...)`` exactly; a step for
    several seeds costs little more than for one.  Returns one :class:`TrainResult` per seed,
    in the order of ``seeds``; ``seconds`` is the time of the whole run.  The final weights
    are returned as an :class:`AttentionRetriever` per seed (``result.model``), whose forward
    pass computes the same function (equal to float rounding, tested).
    Same as ``train_grid(d_k, seeds, [Arm(lr, scale=scale)], ...)[0]``.
    """
    _check_lr("lr", lr)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                              or not math.isfinite(scale) or scale <= 0):
        raise ValueError(f"scale must be None (1/√d_k) or a finite number > 0; got {scale!r}")
    return train_grid(d_k, seeds, [Arm(lr, scale=scale)], steps=steps, batch_size=batch_size,
                      optimizer=optimizer, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise,
                      d_v=d_v, device=device)[0]


def _check_lr(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Arm:
    """One training recipe of :func:`train_grid`: a learning rate, the scale, how W_Q, W_K are treated.

    - ``lr``: the learning rate of every parameter except W_Q and W_K;
    - ``scale``: None for 1/√d_k (the scaled model), 1.0 for the unscaled one;
    - ``qk_init``: W_Q and W_K start at ``qk_init`` times their usual N(0, 1/d_in) draw;
    - ``qk_lr``: W_Q and W_K learn at ``qk_lr · lr``.

    ``Arm(lr)`` is the plain model.  With the factors of :func:`unscaled_equivalent`, the scaled
    model (scale 1/√d_k) computes and learns what the unscaled one does, written in the scaled
    model's coordinates; each factor alone is one of the two things removing the scale changes
    (the `tuning` chapter's decomposition, Exercise `ex-tuning-init`'s algebra).
    """

    lr: float
    scale: float | None = None
    qk_init: float = 1.0
    qk_lr: float = 1.0

    def __post_init__(self):
        for name in ("lr", "qk_init", "qk_lr"):
            object.__setattr__(self, name, _check_lr(f"Arm.{name}", getattr(self, name)))
        if self.scale is not None:
            object.__setattr__(self, "scale", _check_lr("Arm.scale (None for 1/√d_k)", self.scale))

    def score_scale(self, d_k: int) -> float:
        """The factor the scores are multiplied by: 1/√d_k for ``scale=None``, else ``scale``."""
        return 1.0 / math.sqrt(d_k) if self.scale is None else self.scale


def unscaled_equivalent(d_k: int, optimizer: str) -> Arm:
    """The factors that turn the scaled model into the unscaled one (its ``lr`` is 1: multiply it).

    The unscaled model with weights W computes the same scores as the scaled model with
    V = d_k^{1/4} W (the score is bilinear in W_Q, W_K), so its start is the scaled model's with
    ``qk_init = d_k^{1/4}``.  A gradient with respect to V is d_k^{1/4} times smaller than with
    respect to W.  Under SGD a step ΔW = −lr ∂L/∂W is ΔV = d_k^{1/4} ΔW = −(√d_k · lr) ∂L/∂V, so
    ``qk_lr = √d_k``; Adam divides out the gradient's size (up to its ε), so ΔV = d_k^{1/4} ΔW
    needs ``qk_lr = d_k^{1/4}``.  ``tests/test_training.py`` checks the equivalence by training.
    """
    d_k = positive_int("d_k", d_k)
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'; got {optimizer!r}")
    c = d_k ** 0.25
    return Arm(1.0, scale=None, qk_init=c, qk_lr=c * c if optimizer == "sgd" else c)


@dataclass(frozen=True)
class BatchStream:
    """The training batches of several seeds, drawn once (:func:`batch_stream`) and reused by
    :func:`train_grid` calls, so that runs at several d_k need not draw the same data again.

    ``query[t]`` (n_seeds, B, d_in), ``keys[t]`` (n_seeds, B, S, d_in), ``labels[t]`` (n_seeds, B, S),
    ``target[t]`` (n_seeds, B): step t's batches, exactly those :func:`train_grid` draws itself.
    """

    seeds: tuple
    batch_size: int
    n_keys: int
    d_in: int
    n_classes: int
    noise: float
    query: tuple = field(repr=False)
    keys: tuple = field(repr=False)
    labels: tuple = field(repr=False)
    target: tuple = field(repr=False)

    @property
    def steps(self) -> int:
        return len(self.query)


def batch_stream(seeds, steps: int, *, batch_size: int = 64, n_keys: int = 16, d_in: int = 32,
                 n_classes: int = 8, noise: float = 0.5) -> BatchStream:
    """Draw the first ``steps`` training batches of every seed once, on the CPU (see :class:`BatchStream`).

    Seed s's batches come from ``torch.Generator().manual_seed(s + DATA_SEED_OFFSET)``, in order, as in
    :func:`train_grid`; passing the stream as ``data=`` gives bit for bit the same runs (tested).
    Memory: about 4 · steps · n_seeds · batch_size · n_keys · d_in bytes (157 MB for 4 seeds, 300 steps).
    """
    seeds = check_seeds(seeds)
    steps = positive_int("steps", steps)
    gens = [torch.Generator().manual_seed(claims.seed(s) + DATA_SEED_OFFSET) for s in seeds]
    parts = {"query": [], "keys": [], "labels": [], "target": []}
    for _ in range(steps):
        bs = [make_retrieval_batch(batch_size, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise,
                                   generator=g) for g in gens]
        parts["query"].append(torch.stack([b.query[:, 0] for b in bs]))
        parts["keys"].append(torch.stack([b.keys for b in bs]))
        parts["labels"].append(torch.stack([b.labels for b in bs]))
        parts["target"].append(torch.stack([b.target for b in bs]))
    return BatchStream(seeds=tuple(seeds), batch_size=int(batch_size), n_keys=int(n_keys), d_in=int(d_in),
                       n_classes=int(n_classes), noise=float(noise), **{k: tuple(v) for k, v in parts.items()})


def check_seeds(seeds):
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seeds = [seeds]
    if isinstance(seeds, (str, bytes)):
        raise TypeError(f"seeds must be a sequence of integers; got {seeds!r}")
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty sequence of integers >= 0; got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must not repeat; got {seeds!r}")
    return [int(s) for s in seeds]


def train_grid(d_k: int, seeds, arms, *, steps: int = 300, batch_size: int = 64,
               optimizer: str = "sgd", n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
               noise: float = 0.5, d_v: int = 32, device=None, data: BatchStream | None = None
               ) -> list[list[TrainResult]]:
    """:func:`train_seeds` for a grid of recipes: every arm × every seed, trained side by side.

    ``arms`` is a sequence of :class:`Arm` (a plain number ``x`` means ``Arm(x)``: learning rate
    ``x``, scaled).  Each (arm, seed) is an independent model: the initial weights and the batches of
    its seed (the same batches for every arm, drawn once per step), its arm's learning rates,
    its own optimiser state (PyTorch's own ``torch.optim.SGD`` or ``torch.optim.Adam``, one
    parameter group per arm).  Nothing mixes the models, so every record equals what
    ``train_grid(d_k, [seed], [arm], ...)`` gives alone, bit for bit (tested), and
    ``train_seeds`` is the grid of one arm.  Returns ``results[i][j]`` for ``arms[i]`` and
    ``seeds[j]``.  The `training` chapter trains its models with it, the `tuning` chapter its learning-rate sweeps and its decomposition.
    """
    d_k = positive_int("d_k", d_k)
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    seeds = check_seeds(seeds)
    if data is not None:
        if not isinstance(data, BatchStream):
            raise TypeError(f"data must be a BatchStream (training.batch_stream); got {type(data).__name__}")
        want = (tuple(seeds), batch_size, n_keys, d_in, n_classes, float(noise))
        have = (data.seeds, data.batch_size, data.n_keys, data.d_in, data.n_classes, data.noise)
        if want != have or data.steps < steps:
            raise ValueError(f"data was drawn for seeds, batch_size, n_keys, d_in, n_classes, noise = {have} and "
                             f"{data.steps} steps; this run needs {want} and {steps} steps")
    if isinstance(arms, (Arm, int, float)) or isinstance(arms, (str, bytes)):
        raise TypeError(f"arms must be a sequence of Arm (or learning rates); got {arms!r}")
    arms = [a if isinstance(a, Arm) else Arm(a) for a in arms]
    if not arms:
        raise ValueError("arms must not be empty")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'; got {optimizer!r}")
    device = torch.device("cpu") if device is None else torch.device(device)
    with one_thread(device):
        return _train_grid(d_k, steps, batch_size, arms, optimizer, seeds, n_keys, d_in, n_classes,
                           noise, d_v, device, data)


_NAMES = ("W_Q", "W_K", "E", "W_O", "b_O")
# PyTorch's multi-tensor ("foreach") implementation of the optimisers: the same numbers as its default
# single-tensor loop on the CPU (tested against a plain torch.optim loop), about twice as fast for a grid
FUSED = {"foreach": True}


def stack_arms(base: dict, arms, qk_names) -> tuple[list, list, list]:
    """Stack every (arm, seed) model's parameters into one leaf tensor per "lr group" and name.

    ``base[name]`` is (n_seeds, ...), the seeds' initial values.  Arms that share their two learning
    rates (``lr · qk_lr`` for the parameters named in ``qk_names``, ``lr`` for the rest) form one group, so
    that PyTorch's optimiser gives each group its rates through its parameter groups, with few tensors to
    loop over.  Returns ``P`` (one dict of leaves per group, each leaf (members · n_seeds, ...); the
    ``qk_names`` entries times the arm's ``qk_init``), the optimiser's parameter groups, and ``order``:
    the arms in the models' order.
    """
    lr_groups = {}                                             # (lr of the qk_names; lr of the rest) -> arms
    for a, arm in enumerate(arms):
        lr_groups.setdefault((arm.lr * arm.qk_lr, arm.lr), []).append(a)
    order = [a for members in lr_groups.values() for a in members]
    P, groups = [], []
    for (lr_qk, lr_rest), members in lr_groups.items():
        p = {}
        for name in base:
            parts = [base[name] * arms[a].qk_init if name in qk_names and arms[a].qk_init != 1.0
                     else base[name] for a in members]
            p[name] = torch.cat(parts).clone().requires_grad_()
        P.append(p)
        if qk_names:
            groups.append({"params": [p[name] for name in base if name in qk_names], "lr": lr_qk})
        groups.append({"params": [p[name] for name in base if name not in qk_names], "lr": lr_rest})
    return P, groups, order


def _train_grid(d_k, steps, batch_size, arms, optimizer, seeds, n_keys, d_in, n_classes, noise, d_v,
                device, stream=None):
    # One model per (arm, seed), initialised as AttentionRetriever(generator=seed) would be, W_Q and W_K
    # times the arm's qk_init. Models that share their two learning rates (W_Q, W_K and the rest) are stacked
    # along a leading axis into one leaf tensor per parameter name, so that PyTorch's own optimiser gives each
    # such "lr group" its learning rates through its parameter groups, with few tensors to loop over. Every
    # step concatenates the groups and runs once for all models: batched matrix products (one small product
    # per model), the row-wise softmax and cross-entropy, and an optimiser that acts entry by entry. Nothing
    # mixes the models, so a model's record does not depend on which models run beside it
    # (tests/test_training.py checks this bit for bit).
    n_s = len(seeds)
    inits = [AttentionRetriever(d_in, d_k, n_classes, d_v=d_v,
                                generator=torch.Generator().manual_seed(claims.seed(s))) for s in seeds]
    base = {name: torch.stack([getattr(m, name).detach() for m in inits]).to(device) for name in _NAMES}
    P, groups, order = stack_arms(base, arms, qk_names=("W_Q", "W_K"))
    n = len(arms) * n_s                                        # model i: arm order[i // n_s], seed i % n_s
    opt = (torch.optim.SGD(groups, lr=1.0, **FUSED) if optimizer == "sgd"
           else torch.optim.Adam(groups, lr=1.0, **FUSED))
    data = [torch.Generator().manual_seed(claims.seed(s) + DATA_SEED_OFFSET) for s in seeds]
    # each model's scale, folded into the d_in × d_in matrix c W_Q W_Kᵀ
    score_scale = torch.tensor([arms[a].score_scale(d_k) for a in order for _ in seeds],
                               dtype=base["W_Q"].dtype, device=device)[:, None, None]   # (n, 1, 1)
    seed_of = torch.arange(n, device=device) % n_s             # which seed's batch each model sees
    rec = {name: np.empty((n, steps)) for name in ("loss", "accuracy", "grad_q", "grad_k", "entropy")}
    cat = (lambda name: P[0][name]) if len(P) == 1 else (lambda name: torch.cat([p[name] for p in P]))
    rep = (lambda t: t) if n == n_s else (lambda t: t[seed_of])
    t0 = time.perf_counter()
    for step in range(steps):
        if stream is None:
            bs = [make_retrieval_batch(batch_size, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise,
                                       generator=g, device=device) for g in data]   # one batch per seed
            batch = (torch.stack([b.query[:, 0] for b in bs]), torch.stack([b.keys for b in bs]),
                     torch.stack([b.labels for b in bs]), torch.stack([b.target for b in bs]))
        else:                                                  # the same batches, drawn before
            batch = tuple(getattr(stream, k)[step].to(device) for k in ("query", "keys", "labels", "target"))
        query, keys, labels, target = (rep(t) for t in batch)  # (n, B, d_in), (n, B, S, d_in), (n, B, S), (n, B)
        W = {name: cat(name) for name in _NAMES}               # e.g. W_Q: (n, d_in, d_k)
        M = torch.bmm(W["W_Q"], W["W_K"].transpose(1, 2)) * score_scale   # (n, d_in, d_in): c W_Q W_Kᵀ
        q_in = torch.bmm(query, M)                             # (n, B, d_in): c q·k_j = (x c W_Q W_Kᵀ)·x_j
        # values: the one-hot labels, so attention gives each class's total weight; times E that is
        # Σ_j w_j E[label_j], the attention output with values v_j = E[label_j] (no (n, B, S, d_v) tensor)
        one_hot = torch.nn.functional.one_hot(labels, n_classes).to(query.dtype)   # (n, B, S, C)
        class_w, w = scaled_dot_product_attention(q_in[:, :, None], keys, one_hot, scale=1.0,
                                                  return_weights=True)   # (n, B, 1, C), (n, B, 1, S)
        out = torch.bmm(class_w[:, :, 0], W["E"])              # (n, B, d_v)
        logits = torch.bmm(out, W["W_O"]) + W["b_O"][:, None]  # (n, B, n_classes)
        per_query = torch.nn.functional.cross_entropy(logits.reshape(-1, n_classes), target.reshape(-1),
                                                      reduction="none").reshape(n, -1)   # (n, B)
        losses = per_query.mean(dim=1)                         # (n,) one loss per model
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()                                # model i gets the gradient of its own loss
        with torch.no_grad():
            gq = torch.cat([p["W_Q"].grad.flatten(1).norm(dim=1) for p in P])
            gk = torch.cat([p["W_K"].grad.flatten(1).norm(dim=1) for p in P])
            stats = torch.stack([losses, (logits.argmax(-1) == target).float().mean(dim=1),
                                 gq, gk]).cpu().numpy()        # (4, n)
            ent = attention_entropy(w[:, :, 0].double().cpu().numpy()).mean(axis=1)       # (n,)
        rec["loss"][:, step], rec["accuracy"][:, step], rec["grad_q"][:, step], rec["grad_k"][:, step] = stats
        rec["entropy"][:, step] = ent
        opt.step()
    seconds = time.perf_counter() - t0
    final = {name: cat(name).detach() for name in _NAMES}
    results = [None] * len(arms)
    for k, a in enumerate(order):
        arm, row = arms[a], []
        for j, s in enumerate(seeds):
            i = k * n_s + j
            model = copy.deepcopy(inits[j]).to(device)
            model.scale = arm.scale
            with torch.no_grad():
                for name in _NAMES:
                    getattr(model, name).copy_(final[name][i])
            row.append(TrainResult(d_k=d_k, scale=arm.scale, optimizer=optimizer, seed=s, seconds=seconds,
                                   model=model, lr=arm.lr, qk_init=arm.qk_init, qk_lr=arm.qk_lr,
                                   **{key: val[i].copy() for key, val in rec.items()}))
        results[a] = row
    return results


def per_query_gradients(model: AttentionRetriever, batch: RetrievalBatch) -> dict:
    """For each query of ``batch``: its own gradient norm at W_Q, and how peaked its attention is.

    The loss of query b depends on W_Q only through q_b = x_b W_Q, so
    ∂L_b/∂W_Q = x_bᵀ (∂L_b/∂q_b), a rank-one matrix with Frobenius norm
    ‖x_b‖ · ‖∂L_b/∂q_b‖.  One backward pass gives all of them.  Returns NumPy
    arrays of shape (B,): ``grad_q`` (that norm), ``loss`` (per-query cross-entropy),
    ``entropy``, ``max_weight`` and ``match_weight`` (the weight on the key the query
    copies).  The model's parameters receive no gradient.  The `training` chapter uses it to show
    that a batch gradient can be large while most queries pass almost none.  Runs on the batch's
    device, on one CPU thread there (as :func:`train`).
    """
    with one_thread(batch.query.device):
        return _per_query_gradients(model, batch)


def _per_query_gradients(model, batch):
    # The forward pass is the model's own (same rounding): q_in = x (c W_Q W_Kᵀ). Query b's loss reaches W_Q
    # only through q_b = x_b W_Q, and q_in_b = c q_b W_Kᵀ, so ∂L_b/∂q_b = c (∂L_b/∂q_in_b) W_K.
    x = batch.query                                              # (B, 1, d_in)
    c = model.score_scale
    with torch.no_grad():
        v = model.E[batch.labels]                                # (B, S, d_v)
        M = (model.W_Q @ model.W_K.T) * c                        # (d_in, d_in), as in the model
    q_in = (x @ M).requires_grad_(True)                          # (B, 1, d_in)
    out, w = scaled_dot_product_attention(q_in, batch.keys, v, scale=1.0, return_weights=True)
    logits = out[:, 0] @ model.W_O.detach() + model.b_O.detach()
    loss = torch.nn.functional.cross_entropy(logits, batch.target, reduction="none")  # (B,)
    loss.sum().backward()                                        # query b's loss reaches only q_in_b
    dq = c * (q_in.grad[:, 0] @ model.W_K.detach())              # (B, d_k): ∂L_b/∂q_b
    gq = x[:, 0].norm(dim=-1) * dq.norm(dim=-1)                  # (B,)
    w = w[:, 0].detach()                                         # (B, S)
    rows = torch.arange(w.shape[0], device=w.device)
    to_np = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    return {"grad_q": to_np(gq), "loss": to_np(loss), "entropy": attention_entropy(to_np(w)),
            "max_weight": to_np(w.max(dim=-1).values), "match_weight": to_np(w[rows, batch.index])}


def _results(results):
    results = list(results)
    if not results or not all(isinstance(r, TrainResult) for r in results):
        raise TypeError(f"results must be a non-empty sequence of TrainResult (one per seed); got {results!r}")
    return results


def median_steps(results, threshold: float, window: int = 10) -> float:
    """The median over ``results`` (one :class:`TrainResult` per seed) of :meth:`TrainResult.steps_to`."""
    return float(np.median([r.steps_to(threshold, window) for r in _results(results)]))


def seed_bootstrap_ratio(slow, fast, threshold: float, level: float = 0.9, window: int = 10) -> tuple:
    """How far the ratio of median steps, ``median_steps(slow) / median_steps(fast)``, moves when the
    seeds are drawn again: the exact bootstrap over seeds (every way of drawing ``n`` of the ``n`` seeds
    with replacement, the same seeds for both arms, since seed s gives both the same batches), as the
    central ``level`` interval ``(lo, hi)``. With four seeds that is 4⁴ = 256 draws, enumerated, not
    sampled, so nothing here is random. ``slow`` and ``fast`` are one :class:`TrainResult` per seed,
    in the same seed order."""
    slow, fast = _results(slow), _results(fast)
    if len(slow) != len(fast):
        raise ValueError(f"slow and fast need one result per seed each; got {len(slow)} and {len(fast)}")
    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level must be a number between 0 and 1; got {level!r}")
    n = len(slow)
    if n > 6:
        raise ValueError(f"the exact bootstrap enumerates n^n draws; {n} seeds is too many (at most 6)")
    s = np.array([r.steps_to(threshold, window) for r in slow], dtype=float)
    f = np.array([r.steps_to(threshold, window) for r in fast], dtype=float)
    idx = np.array(np.meshgrid(*[np.arange(n)] * n, indexing="ij")).reshape(n, -1).T   # (n^n, n)
    ratios = np.median(s[idx], axis=1) / np.median(f[idx], axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def median_final_loss(results, last: int = 20) -> float:
    """The median over ``results`` (one :class:`TrainResult` per seed) of :meth:`TrainResult.final_loss`."""
    return float(np.median([r.final_loss(last) for r in _results(results)]))


def stuck(stats: dict, weight: float = 0.99) -> np.ndarray:
    """Which queries are stuck: more than ``weight`` of their attention on one key, below
    ``1 - weight`` on the key they copy (so confidently on a wrong key). ``stats`` is what
    :func:`per_query_gradients` returns; the result is a bool array, one entry per query."""
    if not (isinstance(weight, (int, float)) and 0.5 < weight < 1):
        raise ValueError(f"weight must be a number between 0.5 and 1; got {weight!r}")
    missing = {"max_weight", "match_weight"} - set(stats)
    if missing:
        raise ValueError(f"stats must be what per_query_gradients returns; it has no {sorted(missing)}")
    return (np.asarray(stats["max_weight"]) > weight) & (np.asarray(stats["match_weight"]) < 1 - weight)


def top_share(x, fraction: float = 0.1) -> float:
    """The share of ``x.sum()`` carried by its largest ``fraction`` of entries (x: 1-d, ≥ 0)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0 or (x < 0).any() or not np.isfinite(x).all():
        raise ValueError(f"x must be a non-empty 1-d array of finite numbers >= 0; got shape {x.shape}")
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ValueError(f"fraction must be in (0, 1]; got {fraction!r}")
    n = int(len(x) * fraction)
    if n < 1:
        raise ValueError(f"the largest {fraction:g} of {len(x)} entries is no entry at all")
    return float(np.sort(x)[::-1][:n].sum() / x.sum())


def all_tokens(batch: RetrievalBatch) -> torch.Tensor:
    """Every token of a retrieval batch, the keys and then the query: (B, S + 1, d_in)."""
    return torch.cat([batch.keys, batch.query], dim=1)


def _check_qk(w_q, w_k, d_in):
    if not (isinstance(w_q, torch.Tensor) and isinstance(w_k, torch.Tensor)):
        raise TypeError(f"w_q and w_k must be torch tensors; got {type(w_q).__name__} and {type(w_k).__name__}")
    if w_q.ndim != 2 or w_q.shape != w_k.shape or w_q.shape[0] != d_in:
        raise ValueError(f"w_q and w_k must both be (d_in, d_k) = ({d_in}, d_k); got {tuple(w_q.shape)} and "
                         f"{tuple(w_k.shape)}")


def score_stats(w_q, w_k, x) -> tuple[float, float]:
    """How the scaled scores of tokens ``x`` (B, L, d_in) under ``w_q``, ``w_k`` (d_in, d_k) spread.

    Returns ``(sd_other, mean_self)``: the standard deviation of ``q_i·k_j/√d_k`` over pairs of
    different tokens (i ≠ j), and the mean of the self-scores ``q_i·k_i/√d_k``. Independent random
    weights give about (1, 0); the `caveats` chapter shows how training moves them.
    """
    _check_qk(w_q, w_k, x.shape[-1])
    with torch.no_grad():
        q, k = x @ w_q, x @ w_k                                        # (B, L, d_k)
        s = q @ k.transpose(-1, -2) / math.sqrt(w_q.shape[1])          # (B, L, L)
        diag = torch.eye(s.shape[-1], dtype=torch.bool, device=s.device)
        return s[:, ~diag].std().item(), s[:, diag].mean().item()


def qk_retrieval_loss(w_q, w_k, batch: RetrievalBatch) -> torch.Tensor:
    """The retrieval task as attention alone: cross-entropy of the query's attention weights
    ``softmax(q·k_j/√d_k)`` against the key it copies (``batch.index``), averaged over the batch.
    Differentiable in ``w_q`` and ``w_k`` (d_in, d_k); the `caveats` chapter trains only these two."""
    _check_qk(w_q, w_k, batch.query.shape[-1])
    s = (batch.query @ w_q) @ (batch.keys @ w_k).transpose(-1, -2)   # (B, 1, S)
    return torch.nn.functional.cross_entropy(s[:, 0] / math.sqrt(w_q.shape[1]), batch.index)


def steps_to_threshold(loss, threshold: float, window: int = 10) -> int:
    """The first step at which the mean loss over the last ``window`` steps is below ``threshold``.

    ``loss`` is a 1-d sequence of per-step losses.  Returns the index of the last step in the
    first such window (so at least ``window - 1``), or ``len(loss)`` if the threshold is never
    reached.  The `training` chapter uses it to say how fast each model learns.
    """
    x = np.asarray(loss, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"loss must be 1-d (one value per step); got shape {x.shape}")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 1 <= window <= max(len(x), 1):
        raise ValueError(f"window must be an integer between 1 and len(loss) = {len(x)}; got {window!r}")
    if len(x) == 0:
        return 0
    moving = np.convolve(x, np.ones(window) / window, mode="valid")   # moving[i] = mean(x[i : i+window])
    below = np.flatnonzero(moving < threshold)
    return int(below[0] + window - 1) if below.size else len(x)


def _partitions(total: int, parts: int, largest: int | None = None):
    """Every way to write ``total`` as a sum of at most ``parts`` positive integers, largest first."""
    largest = total if largest is None else largest
    if total == 0:
        yield ()
        return
    if parts == 0:
        return
    for first in range(min(total, largest), 0, -1):
        for rest in _partitions(total - first, parts - 1, first):
            yield (first, *rest)


def label_count_baselines(n_keys: int = 16, n_classes: int = 8) -> dict:
    """What a model can reach on the retrieval task **without** using the query (exact, in nats).

    A predictor that does not use the query sees the keys and their labels, but the key the
    query copies is uniform among them: given the label counts n_c, the target is class c with
    probability n_c / n_keys.  Returns a dict:

    - ``chance``: ln n_classes, the loss of a uniform guess;
    - ``counts``: E[−Σ_c (n_c/S) ln(n_c/S)], the expected entropy of the label counts (S = n_keys):
      the smallest expected loss of **any** predictor that ignores the query (it predicts n_c/S);
    - ``uniform_attention``: the smallest expected loss of the model of this module when its
      attention weights are uniform (W_Q = 0).  Its output is then the mean label embedding, so its
      logits are linear in the counts, ``A n/S + b``; the loss is convex in (A, b) and symmetric in
      the classes, so the optimum has the form ``α n_c/S`` and one number α is fitted;
    - ``alpha``: that α.

    Exact: the expectation runs over the partitions of n_keys into at most n_classes parts, each
    weighted by its multinomial probability (about 200 terms for 16 keys and 8 classes).  For
    16 keys and 8 classes: chance 2.079, counts 1.826, uniform attention 1.876.
    """
    S, K = positive_int("n_keys", n_keys), positive_int("n_classes", n_classes)
    if K < 2:
        raise ValueError(f"n_classes must be at least 2; got {K}")
    if S > 64:
        raise ValueError(f"n_keys must be at most 64 (the partitions to sum over grow fast); got {S}")
    rows, logp = [], []
    for part in _partitions(S, K):
        n = np.zeros(K)
        n[:len(part)] = part
        _, mult = np.unique(n, return_counts=True)
        # multinomial probability of one labelling with these counts, times the number of ways to
        # assign the counts to classes: K! / prod(multiplicities!)
        lp = (math.lgamma(S + 1) - sum(math.lgamma(c + 1) for c in n) - S * math.log(K)
              + math.lgamma(K + 1) - sum(math.lgamma(m + 1) for m in mult))
        rows.append(n / S)
        logp.append(lp)
    r, p = np.array(rows), np.exp(np.array(logp))          # (P, K) count fractions, (P,) probabilities
    with np.errstate(divide="ignore", invalid="ignore"):
        counts = float(p @ np.where(r > 0, -r * np.log(r), 0.0).sum(axis=1))
    r2 = (r * r).sum(axis=1)                                # E[alpha n_Y / S | counts] = alpha Σ r_c²

    def slope(alpha):                                       # d loss / d alpha, increasing (convex loss)
        z = alpha * r
        soft = np.exp(z - z.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        return float(p @ ((soft * r).sum(axis=1) - r2))

    lo, hi = 0.0, 1.0
    for _ in range(60):                                      # bracket the minimum; with one key (or any case
        if slope(hi) >= 0:                                   # where the loss only falls) it lies at infinity
            break
        lo, hi = hi, 2 * hi
    for _ in range(200):                                     # bisection on the slope
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    alpha = 0.5 * (lo + hi)
    z = alpha * r
    zmax = z.max(axis=1)
    lse = zmax + np.log(np.exp(z - zmax[:, None]).sum(axis=1))
    uniform = float(p @ (lse - alpha * r2))
    return {"chance": math.log(K), "counts": counts, "uniform_attention": uniform, "alpha": alpha}


def gradient_path(d_k: int, *, scaled: bool, n_queries: int = 200, n_keys: int = 32, d_in: int = 32,
                  n_classes: int = 8, d_v: int = 16, seed: int = 0) -> dict:
    """Per-query gradient norms at three places of one attention layer: logits, scores, W_Q (chapter `softmax-saturation`).

    A layer in float64 with random inputs, values and labels: ``q = x W_Q``, ``k_j = x_j W_K``,
    scores ``s_j = c q·k_j`` (c = 1/√d_k if ``scaled`` else 1), weights ``p = softmax(s)``,
    logits ``(Σ_j p_j v_j) W_O``, summed cross-entropy.  One backward pass; for each query b it
    returns ``logits`` = ‖∂L/∂logits_b‖, ``scores`` = ‖∂L/∂s_b‖ and ``W_Q`` = ‖∂L_b/∂W_Q‖_F
    = ‖x_b‖·‖∂L/∂q_b‖ with ∂L/∂q_b = c Σ_j (∂L/∂s_bj) k_j (chapter `softmax-saturation`, eq-attention-backprop).
    NumPy arrays of shape (n_queries,), computed on the CPU (one thread).  ``tests/test_training.py``
    checks them against autograd.
    """
    d_k = positive_int("d_k", d_k)
    with one_thread("cpu"):
        return _gradient_path(d_k, scaled, n_queries, n_keys, d_in, n_classes, d_v, seed)


def _gradient_path(d_k, scaled, n_queries, n_keys, d_in, n_classes, d_v, seed):
    g = torch.Generator().manual_seed(claims.seed(seed))
    f64 = dict(generator=g, dtype=torch.float64)
    x_q = torch.randn(n_queries, 1, d_in, **f64)          # (B, 1, d_in)
    x_k = torch.randn(n_queries, n_keys, d_in, **f64)     # (B, S, d_in)
    v = torch.randn(n_queries, n_keys, d_v, **f64)        # (B, S, d_v)
    y = torch.randint(0, n_classes, (n_queries,), generator=g)
    W_Q = (torch.randn(d_in, d_k, **f64) / math.sqrt(d_in)).requires_grad_()
    W_K = torch.randn(d_in, d_k, **f64) / math.sqrt(d_in)
    W_O = torch.randn(d_v, n_classes, **f64) / math.sqrt(d_v)
    q, k = x_q @ W_Q, x_k @ W_K                           # (B, 1, d_k), (B, S, d_k)
    c = 1 / math.sqrt(d_k) if scaled else 1.0
    s = (q * c) @ k.transpose(-2, -1)                     # (B, 1, S) scores
    s.retain_grad()
    p = softmax(s, axis=-1)                               # (B, 1, S) attention weights (lib's softmax)
    logits = (p @ v)[:, 0] @ W_O                          # (B, n_classes)
    logits.retain_grad()
    torch.nn.functional.cross_entropy(logits, y, reduction="sum").backward()
    dq = c * (s.grad @ k)[:, 0]                           # (B, d_k): ∂L/∂q_b
    to_np = lambda t: t.detach().numpy()  # noqa: E731
    return {"logits": to_np(logits.grad.norm(dim=-1)), "scores": to_np(s.grad[:, 0].norm(dim=-1)),
            "W_Q": to_np(x_q[:, 0].norm(dim=-1) * dq.norm(dim=-1))}
