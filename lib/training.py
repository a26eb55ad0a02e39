"""A small task that attention must learn, a one-layer attention model, and its training loop.

Chapter 06 trains this model with the scale 1/√d_k and with scale 1 and compares
how fast each learns.  Needs torch (not imported by ``lib/__init__``); use
``from lib import training``.

The task, **retrieval by content**: a sequence of ``n_keys`` random key vectors,
each carrying a class label, and a query that is a noisy copy of one of the keys.
The answer is the label of the key the query copies.  The labels are random, so
the only way to beat chance (loss ln ``n_classes``) is for the attention weights
to find the matching key: W_Q and W_K must learn to make q·k large for the
matching pair.  Everything else in the model (the value embedding and the output
layer) cannot help on its own.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .attention import scaled_dot_product_attention
from .metrics import attention_entropy

__all__ = ["RetrievalBatch", "make_retrieval_batch", "AttentionRetriever", "TrainResult", "train",
           "per_query_gradients", "steps_to_threshold"]


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


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def make_retrieval_batch(batch_size: int, *, n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
                         noise: float = 0.5, generator: torch.Generator | None = None, device=None,
                         dtype=torch.float32) -> RetrievalBatch:
    """Draw a batch of the retrieval task (see the module docstring); shapes in :class:`RetrievalBatch`.

    The query is ``keys[index] + noise · ε`` with ε ~ N(0, I), so its components have
    variance ``1 + noise²``.  ``generator`` (a CPU ``torch.Generator``) makes the batch
    reproducible; the tensors are drawn on the CPU and then moved to ``device``, so a
    seed gives the same data on every device.
    """
    batch_size = _positive_int("batch_size", batch_size)
    n_keys = _positive_int("n_keys", n_keys)
    d_in = _positive_int("d_in", d_in)
    n_classes = _positive_int("n_classes", n_classes)
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
    ``out = lib.scaled_dot_product_attention(q, k, v, scale=scale)`` (B, 1, d_v),
    ``logits = out W_O + b`` (B, n_classes).

    ``scale=None`` is 1/√d_k, ``scale=1.0`` the unscaled variant.  W_Q and W_K start
    with N(0, 1/d_in) entries, so for unit-variance inputs every component of q and k
    has variance about 1: the assumption of chapter 03, under which the raw score
    q·k has variance d_k.
    """

    def __init__(self, d_in: int, d_k: int, n_classes: int, *, d_v: int = 32, scale=None,
                 generator: torch.Generator | None = None):
        super().__init__()
        d_in, d_k = _positive_int("d_in", d_in), _positive_int("d_k", d_k)
        n_classes, d_v = _positive_int("n_classes", n_classes), _positive_int("d_v", d_v)
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
        q = query @ self.W_Q                       # (B, 1, d_k)
        k = keys @ self.W_K                        # (B, S, d_k)
        v = self.E[batch.labels]                   # (B, S, d_v)
        out, w = scaled_dot_product_attention(q, k, v, scale=self.scale, return_weights=True)  # (B,1,d_v), (B,1,S)
        logits = out[:, 0] @ self.W_O + self.b_O   # (B, n_classes)
        return (logits, w) if return_weights else logits


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

    @property
    def label(self) -> str:
        return f"d_k={self.d_k}, " + ("scale 1/√d_k" if self.scale is None else f"scale {self.scale:g}")

    def final_loss(self, last: int = 20) -> float:
        """Mean training loss over the last ``last`` steps (smooths batch noise)."""
        return float(np.mean(self.loss[-last:]))


def train(d_k: int, *, scale=None, steps: int = 300, batch_size: int = 64, lr: float = 0.1,
          optimizer: str = "sgd", seed: int = 0, n_keys: int = 16, d_in: int = 32, n_classes: int = 8,
          noise: float = 0.5, d_v: int = 32, device=None) -> TrainResult:
    """Train a fresh :class:`AttentionRetriever` on fresh batches; record loss and gradient norms.

    ``optimizer`` is ``"sgd"`` (plain gradient descent, the default: a step is the
    gradient times ``lr``, so a vanishing gradient means a vanishing step) or
    ``"adam"`` (which divides each step by a running gradient size, and so partly
    hides small gradients).  ``seed`` fixes the initial weights and every batch.
    Runs in float32 on ``device`` (default: the CPU).  On the CPU it runs on one thread
    (restored afterwards): for a model this small that is as fast as several, and it makes
    the result independent of the machine's core count.  Without the scale, training is
    sensitive to rounding (near-tied scores decide where the gradient goes), so a run on
    another thread count or on a GPU can differ in detail, not in the pattern.
    """
    steps = _positive_int("steps", steps)
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0; got {lr!r}")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'; got {optimizer!r}")
    device = torch.device("cpu") if device is None else torch.device(device)
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)
    try:
        return _train(d_k, scale, steps, batch_size, lr, optimizer, seed, n_keys, d_in, n_classes, noise, d_v, device)
    finally:
        torch.set_num_threads(threads)


def _train(d_k, scale, steps, batch_size, lr, optimizer, seed, n_keys, d_in, n_classes, noise, d_v, device):
    g_init = torch.Generator().manual_seed(seed)
    g_data = torch.Generator().manual_seed(seed + 1_000_003)
    model = AttentionRetriever(d_in, d_k, n_classes, d_v=d_v, scale=scale, generator=g_init).to(device)
    opt = (torch.optim.SGD(model.parameters(), lr=lr) if optimizer == "sgd"
           else torch.optim.Adam(model.parameters(), lr=lr))
    rec = {name: np.empty(steps) for name in ("loss", "accuracy", "grad_q", "grad_k", "entropy")}
    t0 = time.perf_counter()
    for step in range(steps):
        batch = make_retrieval_batch(batch_size, n_keys=n_keys, d_in=d_in, n_classes=n_classes, noise=noise,
                                     generator=g_data, device=device)
        logits, w = model(batch, return_weights=True)
        loss = torch.nn.functional.cross_entropy(logits, batch.target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            stats = torch.stack([loss, (logits.argmax(-1) == batch.target).float().mean(),
                                 model.W_Q.grad.norm(), model.W_K.grad.norm()]).cpu().numpy()
            ent = attention_entropy(w[:, 0].double().cpu().numpy()).mean()
        rec["loss"][step], rec["accuracy"][step], rec["grad_q"][step], rec["grad_k"][step] = stats
        rec["entropy"][step] = ent
        opt.step()
    seconds = time.perf_counter() - t0
    return TrainResult(d_k=d_k, scale=scale, optimizer=optimizer, seed=seed, seconds=seconds, model=model, **rec)


def per_query_gradients(model: AttentionRetriever, batch: RetrievalBatch) -> dict:
    """For each query of ``batch``: its own gradient norm at W_Q, and how peaked its attention is.

    The loss of query b depends on W_Q only through q_b = x_b W_Q, so
    ∂L_b/∂W_Q = x_bᵀ (∂L_b/∂q_b), a rank-one matrix with Frobenius norm
    ‖x_b‖ · ‖∂L_b/∂q_b‖.  One backward pass gives all of them.  Returns NumPy
    arrays of shape (B,): ``grad_q`` (that norm), ``loss`` (per-query cross-entropy),
    ``entropy``, ``max_weight`` and ``match_weight`` (the weight on the key the query
    copies).  The model's parameters receive no gradient.  Chapter 06 uses it to show
    that a batch gradient can be large while most queries pass almost none.
    """
    x = batch.query                                              # (B, 1, d_in)
    q = (x @ model.W_Q).detach().requires_grad_(True)            # (B, 1, d_k)
    with torch.no_grad():
        k = batch.keys @ model.W_K                               # (B, S, d_k)
        v = model.E[batch.labels]                                # (B, S, d_v)
    out, w = scaled_dot_product_attention(q, k, v, scale=model.scale, return_weights=True)
    logits = out[:, 0] @ model.W_O.detach() + model.b_O.detach()
    loss = torch.nn.functional.cross_entropy(logits, batch.target, reduction="none")  # (B,)
    loss.sum().backward()                                        # query b's loss reaches only q_b
    gq = (x[:, 0].norm(dim=-1) * q.grad[:, 0].norm(dim=-1))      # (B,)
    w = w[:, 0].detach()                                         # (B, S)
    rows = torch.arange(w.shape[0], device=w.device)
    to_np = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    return {"grad_q": to_np(gq), "loss": to_np(loss), "entropy": attention_entropy(to_np(w)),
            "max_weight": to_np(w.max(dim=-1).values), "match_weight": to_np(w[rows, batch.index])}


def steps_to_threshold(loss, threshold: float, window: int = 10) -> int:
    """The first step at which the mean loss over the last ``window`` steps is below ``threshold``.

    ``loss`` is a 1-d sequence of per-step losses.  Returns the index of the last step in the
    first such window (so at least ``window - 1``), or ``len(loss)`` if the threshold is never
    reached.  Chapter 06 uses it to say how fast each model learns.
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
