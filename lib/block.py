"""Beyond the toy: a small standard Transformer (two pre-LN layers) on the `training` chapter's retrieval task.

The `multi-head` chapter trains it with the scale 1/√d_k and without, at several Adam rates, to see whether
what the `training` and `tuning` chapters found in a one-layer toy survives in a standard architecture.  Needs torch
(not imported by ``lib/__init__``); use ``from lib import block``.

The model, for one sequence of the task (:func:`lib.training.make_retrieval_batch`):

- **tokens:** the query first, then the ``n_keys`` keys.  Token t is ``x_t W_in`` (``W_in``: d_in ×
  d_model), plus ``E_lab[label]`` for a key and a learned vector ``e_query`` for the query; no positions
  (the task is a set).
- **n_layers pre-LN layers,** each ``h = h + Attn(LN₁(h))`` then ``h = h + MLP(LN₂(h))``, the layer of
  ``torch.nn.TransformerEncoderLayer(d_model, n_heads, 4·d_model, dropout=0, activation="gelu",
  norm_first=True, batch_first=True)``: multi-head attention with biases (``n_heads`` heads of
  d_k = d_model / n_heads, each score times ``scale``: 1/√d_k for the scaled model, 1 for the unscaled one)
  and a GELU MLP of width 4·d_model.
- **read-out:** a final LayerNorm of the query's token, then a linear layer to the class logits.

Only the query's output is read, so the last layer computes its attention and MLP for the query's row
only (its keys and values still come from every token): the same logits as the full layer, for less
work.  ``tests/test_block.py`` checks the logits against PyTorch's own ``TransformerEncoderLayer``.

Initialisation: every projection N(0, 1/fan_in) (so, for LayerNorm'd inputs, every component of q and k
has variance about 1: the `variance` chapter's assumption, under which an unscaled score has variance d_k), biases 0,
LayerNorm gains 1, ``E_lab`` and ``e_query`` N(0, 1).  PyTorch's own layer starts its projections with
Xavier-uniform weights (variance 1/(2·d_model) for W_Q, W_K), half this.

Published runs are on the CPU, one thread (as :mod:`lib.training`), so the book's numbers do not
depend on whether the machine has a GPU; pass ``device="cuda"`` to try one.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from . import claims
from .checks import positive_int
from .metrics import attention_entropy
from .training import (FUSED, Arm, BatchStream, TrainResult, check_seeds, one_thread,
                       stack_arms, batch_stream)

__all__ = ["BlockConfig", "init_params", "tokens", "logits", "train_blocks"]

F = torch.nn.functional


@dataclass(frozen=True)
class BlockConfig:
    """The block's sizes and the task's.  ``d_k = d_model // n_heads`` is the width of one head."""

    d_model: int = 64
    n_heads: int = 2
    n_layers: int = 2
    n_keys: int = 8
    d_in: int = 32
    n_classes: int = 8
    noise: float = 0.5

    def __post_init__(self):
        for name in ("d_model", "n_heads", "n_layers", "n_keys", "d_in", "n_classes"):
            positive_int(f"BlockConfig.{name}", getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be at least 2; got {self.n_classes}")
        if not (isinstance(self.noise, (int, float)) and math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a finite number ≥ 0; got {self.noise!r}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def d_ff(self) -> int:
        return 4 * self.d_model


def _names(cfg: BlockConfig):
    layer = ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "W1", "b1", "W2", "b2", "g1", "c1", "g2", "c2")
    return ("W_in", "E_lab", "e_query", *[f"{n}{l}" for l in range(cfg.n_layers) for n in layer],
            "gf", "cf", "W_out", "b_out")


def init_params(cfg: BlockConfig, seed: int) -> dict:
    """One model's initial parameters (see the module docstring), drawn from ``torch.Generator(seed)``.

    Weights are stored as they multiply from the right: ``Wq{l}`` is (d_model, d_model) and
    ``q = LN₁(h) Wq + bq``; PyTorch's ``nn.Linear`` stores the transpose.
    """
    if not isinstance(cfg, BlockConfig):
        raise TypeError(f"cfg must be a BlockConfig; got {type(cfg).__name__}")
    seed = check_seeds([seed])[0]
    g = torch.Generator().manual_seed(claims.seed(seed))
    d, ff = cfg.d_model, cfg.d_ff
    normal = lambda *shape, fan_in: torch.randn(*shape, generator=g) / math.sqrt(fan_in)  # noqa: E731
    p = {"W_in": normal(cfg.d_in, d, fan_in=cfg.d_in), "E_lab": normal(cfg.n_classes, d, fan_in=1),
         "e_query": normal(d, fan_in=1)}
    for l in range(cfg.n_layers):
        for n in ("q", "k", "v", "o"):
            p[f"W{n}{l}"], p[f"b{n}{l}"] = normal(d, d, fan_in=d), torch.zeros(d)
        p[f"W1{l}"], p[f"b1{l}"] = normal(d, ff, fan_in=d), torch.zeros(ff)
        p[f"W2{l}"], p[f"b2{l}"] = normal(ff, d, fan_in=ff), torch.zeros(d)
        for n in ("1", "2"):
            p[f"g{n}{l}"], p[f"c{n}{l}"] = torch.ones(d), torch.zeros(d)
    p["gf"], p["cf"] = torch.ones(d), torch.zeros(d)
    p["W_out"], p["b_out"] = normal(d, cfg.n_classes, fan_in=d), torch.zeros(cfg.n_classes)
    return {name: p[name] for name in _names(cfg)}


def _ln(x, g, c):
    """LayerNorm over the last axis with per-model gain and shift: x (n, ..., d), g and c (n, d)."""
    shape = (g.shape[0],) + (1,) * (x.ndim - 2) + (g.shape[-1],)
    return F.layer_norm(x, x.shape[-1:]) * g.view(shape) + c.view(shape)


def _affine(x, W, b):
    """x (n, R, a) W (n, a, b) + b (n, b): one product per model."""
    return torch.baddbmm(b[:, None], x, W)


def tokens(params: dict, query, keys, labels):
    """The model's input tokens, (n, B, S + 1, d_model): the query's ``x W_in + e_query`` first, then each
    key's ``x W_in + E_lab[label]``.  Shapes as in :func:`logits`."""
    n, B, S, d_in = keys.shape
    models = torch.arange(n, device=keys.device)[:, None, None]
    xk = torch.bmm(keys.reshape(n, B * S, d_in), params["W_in"]).view(n, B, S, -1) + params["E_lab"][models, labels]
    xq = torch.bmm(query, params["W_in"]) + params["e_query"][:, None]
    return torch.cat([xq[:, :, None], xk], dim=2)


def logits(params: dict, query, keys, labels, cfg: BlockConfig, scale, *, return_weights: bool = False):
    """The class logits of n models at once.

    ``params[name]`` is (n, ...) (a stack of :func:`init_params`), ``query`` (n, B, d_in), ``keys``
    (n, B, S, d_in), ``labels`` (n, B, S), ``scale`` a tensor (n,): each model's factor on the scores.
    Returns logits (n, B, n_classes); with ``return_weights=True`` also the first layer's attention
    weights of the query's row, (n, B, n_heads, S + 1) (the query attends to itself and to every key).
    Nothing mixes the models.
    """
    n, B, S, d_in = keys.shape
    if query.shape != (n, B, d_in) or labels.shape != (n, B, S) or d_in != cfg.d_in:
        raise ValueError(f"expected query (n, B, {cfg.d_in}), keys (n, B, S, {cfg.d_in}), labels (n, B, S); got "
                         f"query {tuple(query.shape)}, keys {tuple(keys.shape)}, labels {tuple(labels.shape)}")
    d, H, dk, T = cfg.d_model, cfg.n_heads, cfg.d_k, S + 1
    h = tokens(params, query, keys, labels)                        # (n, B, T, d): the query, then the keys
    first = None
    for l in range(cfg.n_layers):
        rows = 1 if l == cfg.n_layers - 1 else T                   # the last layer: the query's row only
        a = _ln(h, params[f"g1{l}"], params[f"c1{l}"])
        a_all = a.reshape(n, B * T, d)
        a_rows = a[:, :, :rows].reshape(n, B * rows, d)
        heads = lambda x, r: x.view(n, B, r, H, dk).transpose(2, 3)    # noqa: E731  (n, B, H, r, d_k)
        q = heads(_affine(a_rows, params[f"Wq{l}"], params[f"bq{l}"]), rows)
        k = heads(_affine(a_all, params[f"Wk{l}"], params[f"bk{l}"]), T)
        v = heads(_affine(a_all, params[f"Wv{l}"], params[f"bv{l}"]), T)
        w = torch.softmax((q @ k.transpose(-1, -2)) * scale.view(n, 1, 1, 1, 1), dim=-1)   # (n, B, H, r, T)
        if l == 0:
            first = w[:, :, :, 0]                                  # the query's row: (n, B, H, T)
        o = (w @ v).transpose(2, 3).reshape(n, B * rows, d)
        h = h[:, :, :rows] + _affine(o, params[f"Wo{l}"], params[f"bo{l}"]).view(n, B, rows, d)
        m = _ln(h, params[f"g2{l}"], params[f"c2{l}"]).reshape(n, B * rows, d)
        m = _affine(F.gelu(_affine(m, params[f"W1{l}"], params[f"b1{l}"])), params[f"W2{l}"], params[f"b2{l}"])
        h = h + m.view(n, B, rows, d)
    z = _ln(h[:, :, 0], params["gf"], params["cf"])               # (n, B, d): the query's token
    out = _affine(z, params["W_out"], params["b_out"])             # (n, B, n_classes)
    return (out, first) if return_weights else out


def train_blocks(seeds, arms, *, cfg: BlockConfig = BlockConfig(), steps: int = 150, batch_size: int = 32,
                 optimizer: str = "adam", device=None, data: BatchStream | None = None
                 ) -> list[list[TrainResult]]:
    """Train one block per (arm, seed) side by side, as :func:`lib.training.train_grid` trains the toy.

    ``arms``: a sequence of :class:`lib.training.Arm` (or learning rates); only ``lr`` and ``scale`` are
    used (``scale=None`` is 1/√d_k with the per-head d_k, 1.0 the unscaled block), so an arm with
    ``qk_init`` or ``qk_lr`` other than 1 is refused.  Each model starts from ``init_params(cfg, seed)``,
    sees its seed's batches (those of ``lib.training.batch_stream``, the same for every arm) and has its own
    state in PyTorch's ``torch.optim.Adam`` (or ``SGD``).  Nothing mixes the models, so a model's record does
    not depend on which models train beside it (tested bit for bit).

    Returns ``results[i][j]`` for ``arms[i]``, ``seeds[j]``: a :class:`lib.training.TrainResult` whose
    ``d_k`` is the per-head d_k, ``grad_q`` and ``grad_k`` the norms of the first layer's ∂loss/∂W_Q and
    ∂loss/∂W_K, ``entropy`` the mean entropy of the first layer's attention in the query's row (ln(S + 1)
    is uniform), and ``model`` None.
    """
    if not isinstance(cfg, BlockConfig):
        raise TypeError(f"cfg must be a BlockConfig; got {type(cfg).__name__}")
    steps, batch_size = positive_int("steps", steps), positive_int("batch_size", batch_size)
    seeds = check_seeds(seeds)
    if isinstance(arms, (Arm, int, float, str, bytes)):
        raise TypeError(f"arms must be a sequence of Arm (or learning rates); got {arms!r}")
    arms = [a if isinstance(a, Arm) else Arm(a) for a in arms]
    if not arms:
        raise ValueError("arms must not be empty")
    bad = [a for a in arms if a.qk_init != 1.0 or a.qk_lr != 1.0]
    if bad:
        raise ValueError(f"train_blocks trains plain arms (qk_init = qk_lr = 1); got {bad}")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'; got {optimizer!r}")
    task = dict(batch_size=batch_size, n_keys=cfg.n_keys, d_in=cfg.d_in, n_classes=cfg.n_classes, noise=cfg.noise)
    if data is None:
        data = batch_stream(seeds, steps, **task)
    elif not isinstance(data, BatchStream):
        raise TypeError(f"data must be a BatchStream (training.batch_stream); got {type(data).__name__}")
    else:
        have = (data.seeds, data.batch_size, data.n_keys, data.d_in, data.n_classes, data.noise)
        want = (tuple(seeds), *task.values())
        if have != want or data.steps < steps:
            raise ValueError(f"data was drawn for seeds, batch_size, n_keys, d_in, n_classes, noise = {have} and "
                             f"{data.steps} steps; this run needs {want} and {steps} steps")
    device = torch.device("cpu") if device is None else torch.device(device)
    with one_thread(device):
        return _train_blocks(cfg, seeds, arms, steps, optimizer, device, data)


def _train_blocks(cfg, seeds, arms, steps, optimizer, device, data):
    n_s = len(seeds)
    inits = [init_params(cfg, s) for s in seeds]
    base = {name: torch.stack([p[name] for p in inits]).to(device) for name in _names(cfg)}
    P, groups, order = stack_arms(base, arms, qk_names=())
    opt = (torch.optim.SGD(groups, lr=1.0, **FUSED) if optimizer == "sgd"
           else torch.optim.Adam(groups, lr=1.0, **FUSED))
    n = len(arms) * n_s                                        # model i: arm order[i // n_s], seed i % n_s
    scale = torch.tensor([arms[a].score_scale(cfg.d_k) for a in order for _ in seeds], device=device)
    seed_of = torch.arange(n) % n_s
    rec = {name: np.empty((n, steps)) for name in ("loss", "accuracy", "grad_q", "grad_k", "entropy")}
    t0 = time.perf_counter()
    for step in range(steps):
        query, keys, labels, target = (getattr(data, k)[step][seed_of].to(device)
                                       for k in ("query", "keys", "labels", "target"))
        W = {name: torch.cat([p[name] for p in P]) if len(P) > 1 else P[0][name] for name in base}
        out, w = logits(W, query, keys, labels, cfg, scale, return_weights=True)
        per_query = F.cross_entropy(out.reshape(-1, cfg.n_classes), target.reshape(-1),
                                    reduction="none").view(n, -1)
        losses = per_query.mean(dim=1)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()                                # model i gets the gradient of its own loss
        with torch.no_grad():
            gq = torch.cat([p["Wq0"].grad.flatten(1).norm(dim=1) for p in P])
            gk = torch.cat([p["Wk0"].grad.flatten(1).norm(dim=1) for p in P])
            stats = torch.stack([losses, (out.argmax(-1) == target).float().mean(dim=1), gq, gk]).cpu().numpy()
            ent = attention_entropy(w.double().cpu().numpy()).mean(axis=(1, 2))
        rec["loss"][:, step], rec["accuracy"][:, step], rec["grad_q"][:, step], rec["grad_k"][:, step] = stats
        rec["entropy"][:, step] = ent
        opt.step()
    seconds = time.perf_counter() - t0
    results = [None] * len(arms)
    for k, a in enumerate(order):
        results[a] = [TrainResult(d_k=cfg.d_k, scale=arms[a].scale, optimizer=optimizer, seed=s, seconds=seconds,
                                  lr=arms[a].lr, **{key: val[k * n_s + j].copy() for key, val in rec.items()})
                      for j, s in enumerate(seeds)]
    return results

