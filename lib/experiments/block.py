"""Beyond the toy: a small standard Transformer (two pre-LN layers) on the `training` chapter's retrieval task.

The `block` chapter trains it with the scale 1/√d_k and without, at several Adam rates, and with each of the
two changes alone, to see whether what the `training` and `tuning` chapters found in a one-layer toy survives
in a standard architecture.  Needs torch
(not imported by ``lib/__init__``); use ``from lib import block``.

The model, :class:`RetrievalTransformer`, for one sequence of the task (:func:`lib.task.make_retrieval_batch`):

- **tokens:** the query first, then the ``n_keys`` keys.  Token t is ``embed(x_t)`` (a linear map d_in →
  d_model), plus ``label_embed(label)`` for a key and a learned vector ``query_embed`` for the query; no
  positions (the task is a set).
- **n_layers pre-LN layers** (:class:`Block`, written as nanoGPT writes its ``Block``):
  ``x = x + attn(ln_1(x))`` then ``x = x + mlp(ln_2(x))``, with ``attn`` the book's
  :class:`lib.MultiHeadAttention` (``n_heads`` heads of d_k = d_model / n_heads, each score times
  ``scale``: 1/√d_k for the scaled model, 1 for the unscaled one) and a GELU MLP of width 4·d_model: the
  layer of ``torch.nn.TransformerEncoderLayer(d_model, n_heads, 4·d_model, dropout=0, activation="gelu",
  norm_first=True, batch_first=True)``, which ``tests/test_block.py`` checks it against.
- **read-out:** a final LayerNorm of the query's token, then a linear layer to the class logits.

Initialisation: every projection N(0, 1/fan_in) (so, for LayerNorm'd inputs, every component of q and k
has variance about 1: the `variance` chapter's assumption, under which an unscaled score has variance d_k), biases 0,
LayerNorm gains 1, the label and query embeddings N(0, 1).  PyTorch's own layer starts its projections with
Xavier-uniform weights (variance 1/(2·d_model) for W_Q, W_K), half this.

:func:`train_blocks` trains a grid of them with :func:`lib.trainer.fit`, as :func:`lib.training.train_grid`
trains the toy.  Published runs are on the CPU, one thread, so the book's numbers do not depend on whether
the machine has a GPU; pass ``device="cuda"`` to try one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..infra import claims
from ..infra.checks import positive_int
from ..formula.attention import split_heads
from ..formula.mha import MultiHeadAttention
from .task import BatchStream, RetrievalBatch, check_seeds
from .trainer import batches_for, check_arms, check_optimizer, fit
from .training import Arm, TrainResult

__all__ = ["BlockConfig", "Block", "RetrievalTransformer", "qk_parameter_names", "train_blocks"]


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


class Block(nn.Module):
    """One pre-LN Transformer layer: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``.  x: (B, T, d_model)."""

    def __init__(self, d_model: int, n_heads: int, *, scale=None):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, scale=scale)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, *, return_weights: bool = False):
        a, w = self.attn(self.ln_1(x), return_weights=True)    # w: (B, n_heads, T, T)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return (x, w) if return_weights else x


class RetrievalTransformer(nn.Module):
    """The `block` chapter's model (module docstring): embeddings, ``cfg.n_layers`` :class:`Block`, a read-out.

    ``scale=None`` is 1/√d_k with the per-head d_k, ``scale=1.0`` the unscaled model.  ``generator`` draws the
    initial weights (the module docstring's initialisation).
    """

    def __init__(self, cfg: BlockConfig = BlockConfig(), *, scale=None, generator: torch.Generator | None = None):
        super().__init__()
        if not isinstance(cfg, BlockConfig):
            raise TypeError(f"cfg must be a BlockConfig; got {type(cfg).__name__}")
        self.cfg, d = cfg, cfg.d_model
        self.embed = nn.Linear(cfg.d_in, d, bias=False)
        self.label_embed = nn.Embedding(cfg.n_classes, d)
        self.query_embed = nn.Parameter(torch.empty(d))
        self.blocks = nn.ModuleList(Block(d, cfg.n_heads, scale=scale) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.n_classes)
        self._init(generator)

    @torch.no_grad()
    def _init(self, g):
        def normal(linear, fan_in):       # N(0, 1/fan_in), drawn as (in, out) and stored as nn.Linear's (out, in)
            linear.weight.copy_(torch.randn(linear.in_features, linear.out_features, generator=g).T
                                / math.sqrt(fan_in))
            if linear.bias is not None:
                linear.bias.zero_()
        normal(self.embed, self.cfg.d_in)
        self.label_embed.weight.copy_(torch.randn(self.cfg.n_classes, self.cfg.d_model, generator=g))
        self.query_embed.copy_(torch.randn(self.cfg.d_model, generator=g))
        for blk in self.blocks:
            for proj in (blk.attn.q_proj, blk.attn.k_proj, blk.attn.v_proj, blk.attn.out_proj, blk.mlp[0]):
                normal(proj, proj.in_features)
            normal(blk.mlp[2], blk.mlp[2].in_features)
        normal(self.head, self.cfg.d_model)

    def tokens(self, batch: RetrievalBatch) -> torch.Tensor:
        """The input tokens, (B, S + 1, d_model): the query's first, then one per key (module docstring)."""
        query, keys, labels = batch.query, batch.keys, batch.labels   # (B, 1, d_in), (B, S, d_in), (B, S)
        if query.ndim != 3 or keys.ndim != 3 or query.shape[1:] != (1, self.cfg.d_in) \
                or keys.shape[-1] != self.cfg.d_in or labels.shape != keys.shape[:2]:
            raise ValueError(f"expected query (B, 1, {self.cfg.d_in}), keys (B, S, {self.cfg.d_in}), labels (B, S); got "
                             f"query {tuple(query.shape)}, keys {tuple(keys.shape)}, labels {tuple(labels.shape)}")
        return torch.cat([self.embed(query) + self.query_embed,
                          self.embed(keys) + self.label_embed(labels)], dim=1)

    def first_scores(self, batch: RetrievalBatch) -> torch.Tensor:
        """The first layer's attention scores, (B, n_heads, S + 1, S + 1): q·k times the layer's scale (1/√d_k
        of a head for the scaled model), before the softmax.  ``tests/test_block.py`` checks their softmax
        against PyTorch's own layer."""
        blk = self.blocks[0]
        a = blk.ln_1(self.tokens(batch))
        q, k = (split_heads(proj(a), self.cfg.n_heads) for proj in (blk.attn.q_proj, blk.attn.k_proj))
        scale = 1.0 / math.sqrt(self.cfg.d_k) if blk.attn.scale is None else blk.attn.scale
        return (q @ k.transpose(-1, -2)) * scale

    def forward(self, batch: RetrievalBatch, *, return_weights: bool = False):
        """Logits (B, n_classes); with ``return_weights=True`` also the first layer's attention weights of the
        query's row, (B, n_heads, S + 1) (the query attends to itself and to every key)."""
        x = self.tokens(batch)                                  # (B, S + 1, d_model)
        first = None
        for blk in self.blocks:
            x, w = blk(x, return_weights=True)
            first = w[:, :, 0] if first is None else first     # the first layer, the query's row
        logits = self.head(self.ln_f(x[:, 0]))                  # (B, n_classes)
        return (logits, first) if return_weights else logits


def qk_parameter_names(cfg: BlockConfig) -> tuple[str, ...]:
    """The parameters an arm's ``qk_init`` and ``qk_lr`` act on: every layer's query and key projections,
    weights and biases; the first two are the first layer's W_Q and W_K, whose gradients are recorded."""
    names = [f"blocks.{i}.attn.{p}_proj.{w}" for i in range(cfg.n_layers) for w in ("weight", "bias") for p in "qk"]
    return tuple(sorted(names, key=lambda n: (n.endswith("bias"), not n.startswith("blocks.0."))))


def train_blocks(seeds, arms, *, cfg: BlockConfig = BlockConfig(), steps: int = 150, batch_size: int = 32,
                 optimizer: str = "adam", device=None, data: BatchStream | None = None
                 ) -> list[list[TrainResult]]:
    """Train one :class:`RetrievalTransformer` per (arm, seed) side by side, as :func:`lib.training.train_grid`
    trains the toy (both with :func:`lib.trainer.fit`).

    ``arms``: a sequence of :class:`lib.training.Arm` (or learning rates): ``scale=None`` is 1/√d_k with the
    per-head d_k, 1.0 the unscaled block; ``qk_init`` multiplies the query and key projections of **every**
    layer (weights and biases) at the start, and those projections learn at ``lr · qk_lr``, as
    :func:`lib.training.train_grid` treats the toy's W_Q and W_K.  With the factors of
    :func:`lib.training.unscaled_equivalent` for the per-head d_k, the scaled block computes and learns what
    the unscaled one does (``tests/test_block.py`` checks it by training); each factor alone is one of the
    two changes.  Each model starts from
    ``RetrievalTransformer(cfg, generator=torch.Generator().manual_seed(seed))``, sees its seed's batches
    (those of ``lib.task.batch_stream``, the same for every arm) and has its own state in PyTorch's
    ``torch.optim.Adam`` (or ``SGD``).  Nothing mixes the models, so a model's record does not depend on which
    models train beside it (tested bit for bit).

    Returns ``results[i][j]`` for ``arms[i]``, ``seeds[j]``: a :class:`lib.training.TrainResult` whose
    ``d_k`` is the per-head d_k, ``grad_q`` and ``grad_k`` the norms of the first layer's ∂loss/∂W_Q and
    ∂loss/∂W_K (in the arm's coordinates: with ``qk_init = c`` they are 1/c of the plain model's at the same
    scores), ``entropy`` the mean entropy of the first layer's attention in the query's row (ln(S + 1)
    is uniform), and ``model`` the trained module.
    """
    if not isinstance(cfg, BlockConfig):
        raise TypeError(f"cfg must be a BlockConfig; got {type(cfg).__name__}")
    steps, batch_size = positive_int("steps", steps), positive_int("batch_size", batch_size)
    seeds = check_seeds(seeds)
    arms = check_arms(arms, Arm)
    optimizer = check_optimizer(optimizer)
    task = dict(batch_size=batch_size, n_keys=cfg.n_keys, d_in=cfg.d_in, n_classes=cfg.n_classes, noise=cfg.noise)
    batches = batches_for(seeds, steps, data, **task)
    device = torch.device("cpu") if device is None else torch.device(device)

    def make_model(seed, arm):      # seed's initial weights; every layer's q and k projections times qk_init
        m = RetrievalTransformer(cfg, scale=arm.scale, generator=torch.Generator().manual_seed(claims.seed(seed)))
        if arm.qk_init != 1.0:
            with torch.no_grad():
                for name in qk:
                    m.get_parameter(name).mul_(arm.qk_init)
        return m

    qk = qk_parameter_names(cfg)
    rec, models, seconds = fit(make_model, seeds, arms, batches, steps=steps, optimizer=optimizer, qk_names=qk,
                               device=device, keep_models=True)
    return [[TrainResult(d_k=cfg.d_k, scale=arm.scale, optimizer=optimizer, seed=s, seconds=seconds,
                         model=models[i][j], lr=arm.lr, qk_init=arm.qk_init, qk_lr=arm.qk_lr, **{key: val[i, j].copy() for key, val in rec.items()})
             for j, s in enumerate(seeds)] for i, arm in enumerate(arms)]
