"""A one-layer attention model of the retrieval task, how it is trained, and what is measured on it.

The `training` chapter trains this model with the scale 1/√d_k and with scale 1 and compares
how fast each learns; the `tuning` chapter sweeps its learning rates.  Needs torch (not imported by
``lib/__init__``); use ``from lib import training``.

The task (:mod:`lib.task`), **retrieval by content**: a query that is a noisy copy of one of ``n_keys``
labelled keys; the answer is that key's label.  A model whose attention is uniform reaches at best about
1.88 nats (chance: ln 8 ≈ 2.08; any predictor that ignores the query: about 1.83).  The query enters the
model only through W_Q and the attention weights, so getting below about 1.83 nats needs attention that
finds the matching key.

The model is a plain ``torch.nn.Module`` (:class:`AttentionRetriever`); :func:`train_grid` trains many of
them side by side with :func:`lib.trainer.fit`, which calls the module's own forward.

Published experiments run on the CPU (``device=None``, the default of every
function here), so the book's numbers do not depend on whether the machine that
builds it has a GPU; pass ``device="cuda"`` to try one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..formula.attention import scaled_dot_product_attention, softmax
from ..infra import claims
from ..infra.checks import positive_int, positive_number
from ..formula.metrics import attention_entropy
from .task import (DATA_SEED_OFFSET, BatchStream, RetrievalBatch, batch_stream, check_seeds,
                   label_count_baselines, make_retrieval_batch)
from .trainer import batches_for, check_arms, check_optimizer, fit, one_thread

__all__ = ["RetrievalBatch", "make_retrieval_batch", "AttentionRetriever", "TrainResult", "train",
           "train_seeds", "Arm", "train_grid", "unscaled_equivalent", "BatchStream", "batch_stream",
           "per_query_gradients", "steps_to_threshold", "label_count_baselines", "DATA_SEED_OFFSET",
           "gradient_path", "median_steps", "seed_bootstrap_ratio", "median_final_loss", "stuck", "top_share", "all_tokens",
           "score_stats", "qk_retrieval_loss", "score_matrix", "score_step"]


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
        if scale is not None:
            scale = positive_number("scale (None for 1/√d_k)", scale)
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
    positive_number("lr", lr)
    if scale is not None:
        positive_number("scale (None for 1/√d_k)", scale)
    return train_grid(d_k, seeds, [Arm(lr, scale=scale)], steps=steps, batch_size=batch_size,
                      optimizer=optimizer, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise,
                      d_v=d_v, device=device)[0]


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
            object.__setattr__(self, name, positive_number(f"Arm.{name}", getattr(self, name)))
        if self.scale is not None:
            object.__setattr__(self, "scale", positive_number("Arm.scale (None for 1/√d_k)", self.scale))

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
    arms = check_arms(arms, Arm)
    optimizer = check_optimizer(optimizer)
    task = dict(batch_size=batch_size, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise)
    batches = batches_for(seeds, steps, data, **task)
    device = torch.device("cpu") if device is None else torch.device(device)

    def make_model(seed, arm):              # seed's initial weights; W_Q, W_K times the arm's qk_init
        m = AttentionRetriever(d_in, d_k, n_classes, d_v=d_v, scale=arm.scale,
                               generator=torch.Generator().manual_seed(claims.seed(seed)))
        if arm.qk_init != 1.0:
            with torch.no_grad():
                m.W_Q.mul_(arm.qk_init)
                m.W_K.mul_(arm.qk_init)
        return m

    rec, models, seconds = fit(make_model, seeds, arms, batches, steps=steps, optimizer=optimizer,
                               qk_names=("W_Q", "W_K"), device=device, keep_models=True)
    return [[TrainResult(d_k=d_k, scale=arm.scale, optimizer=optimizer, seed=s, seconds=seconds,
                         model=models[i][j], lr=arm.lr, qk_init=arm.qk_init, qk_lr=arm.qk_lr,
                         **{key: val[i, j].copy() for key, val in rec.items()})
             for j, s in enumerate(seeds)] for i, arm in enumerate(arms)]


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


def score_matrix(model: AttentionRetriever) -> torch.Tensor:
    """M = c W_Q W_Kᵀ (d_in × d_in), c the model's score scale: the score of query x and key x_j is x M x_jᵀ."""
    with torch.no_grad():
        return (model.W_Q @ model.W_K.T) * model.score_scale


def score_step(d_k: int, seeds, arms, *, optimizer: str = "adam", **kw) -> dict:
    """How far the first optimiser step moves each model in **score space**: ‖ΔM‖_F with M = c W_Q W_Kᵀ.

    For each arm (:class:`Arm`) and seed, one step of :func:`train_grid` (``kw``: its other arguments);
    returns NumPy arrays of shape (n_arms, n_seeds): ``step`` = ‖M₁ − M₀‖_F, ``start`` = ‖M₀‖_F, and
    ``relative`` = their ratio.  The `tuning` chapter compares the scaled model, the unscaled one and
    the two single changes of :func:`unscaled_equivalent` with it.
    """
    seeds = check_seeds(seeds)
    arms = check_arms(arms, Arm)
    d_in, n_classes, d_v = kw.get("d_in", 32), kw.get("n_classes", 8), kw.get("d_v", 32)
    after = train_grid(d_k, seeds, arms, steps=1, optimizer=optimizer, **kw)
    step, start = np.empty((len(arms), len(seeds))), np.empty((len(arms), len(seeds)))
    for i, arm in enumerate(arms):
        for j, s in enumerate(seeds):
            m0 = AttentionRetriever(d_in, d_k, n_classes, d_v=d_v, scale=arm.scale,
                                    generator=torch.Generator().manual_seed(claims.seed(s)))
            with torch.no_grad():
                m0.W_Q.mul_(arm.qk_init)
                m0.W_K.mul_(arm.qk_init)
            M0 = score_matrix(m0)
            step[i, j] = (score_matrix(after[i][j].model).cpu() - M0).norm().item()
            start[i, j] = M0.norm().item()
    return {"step": step, "start": start, "relative": step / start}


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
