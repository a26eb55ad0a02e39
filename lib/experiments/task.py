"""The book's training task, **retrieval by content**, and its batches (shared by every training experiment).

A sequence of ``n_keys`` random key vectors, each carrying a class label, and a query that is a noisy copy
of one of the keys.  The answer is the label of the key the query copies.  Chance is a loss of
ln ``n_classes``.  A model that does not use the query can still beat chance a little, by betting on the
labels that occur most often among the keys: the best any such predictor can do is
:func:`label_count_baselines` (about 1.83 nats for 16 keys and 8 classes, against ln 8 ≈ 2.08).

The `training` and `tuning` chapters train a one-layer model on it (:mod:`lib.training`), the `block`
chapter a small standard Transformer (:mod:`lib.block`), both with :func:`lib.trainer.fit`.  Needs torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..infra import claims
from ..infra.checks import positive_int

__all__ = ["RetrievalBatch", "make_retrieval_batch", "BatchStream", "batch_stream", "check_seeds",
           "label_count_baselines", "DATA_SEED_OFFSET"]

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
