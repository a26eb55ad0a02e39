"""One trainer for a grid of independent models: every (arm, seed) of a ``torch.nn.Module``, side by side.

Both training experiments of the book use it: the one-layer toy of the `training` and `tuning` chapters
(:class:`lib.training.AttentionRetriever`) and the small standard Transformer of the `block` chapter
(:class:`lib.block.RetrievalTransformer`).  Needs torch; ``from lib import trainer``.

How it works, with PyTorch's own tools (``torch.func``):

1. one module per (arm, seed), built by the caller's ``make_model(seed, arm)``;
2. models that share their two learning rates (``arm.lr · arm.qk_lr`` for the query and key projections,
   ``arm.lr`` for the rest) are stacked by ``torch.func.stack_module_state`` into one leaf tensor per
   parameter name, so that PyTorch's ``torch.optim.SGD`` or ``torch.optim.Adam`` gives each such group its
   rates through one parameter group each;
3. every step calls **the module's own forward** for all models at once: ``torch.func.functional_call`` of
   one module with each model's parameters, mapped over the models by ``torch.func.vmap``; then the
   cross-entropy of each model's own batch, summed over the models, and one backward pass.

Nothing mixes the models, so each model's record does not depend on which models train beside it
(``tests/test_training.py`` and ``tests/test_block.py`` check this bit for bit, and check the result
against plain PyTorch loops, one model at a time).
"""
from __future__ import annotations

import copy
import time
from contextlib import contextmanager

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap

from ..infra import bars, claims
from ..infra.i18n import tr
from ..formula.metrics import attention_entropy
from .task import DATA_SEED_OFFSET, BatchStream, RetrievalBatch, make_retrieval_batch

__all__ = ["fit", "batches_for", "check_arms", "check_optimizer", "one_thread", "FOREACH", "RECORDS"]

#: PyTorch's multi-tensor ("foreach") implementation of the optimisers: the same numbers as its default
#: single-tensor loop on the CPU (tested against a plain torch.optim loop), about twice as fast for a grid.
FOREACH = {"foreach": True}

RECORDS = ("loss", "accuracy", "grad_q", "grad_k", "entropy")


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


def check_optimizer(optimizer):
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'; got {optimizer!r}")
    return optimizer


def check_arms(arms, arm_class):
    """A non-empty list of ``arm_class`` (:class:`lib.training.Arm`); a plain number ``x`` means ``Arm(x)``."""
    if isinstance(arms, (arm_class, int, float, str, bytes)):
        raise TypeError(f"arms must be a sequence of Arm (or learning rates); got {arms!r}")
    arms = [a if isinstance(a, arm_class) else arm_class(a) for a in arms]
    if not arms:
        raise ValueError("arms must not be empty")
    return arms


def batches_for(seeds, steps, data, **task):
    """Step t's batches, ``(query, keys, labels, target)`` with one entry per seed on a leading axis:
    (n_seeds, B, d_in), (n_seeds, B, S, d_in), (n_seeds, B, S), (n_seeds, B).

    From ``data`` (a :class:`lib.task.BatchStream` drawn for these seeds and this task) when given, else
    drawn step by step from each seed's data generator, the same batches either way.
    """
    if data is None:
        gens = [torch.Generator().manual_seed(claims.seed(s) + DATA_SEED_OFFSET) for s in seeds]

        def draw(step):
            bs = [make_retrieval_batch(generator=g, **task) for g in gens]
            return (torch.stack([b.query[:, 0] for b in bs]), torch.stack([b.keys for b in bs]),
                    torch.stack([b.labels for b in bs]), torch.stack([b.target for b in bs]))
        return draw
    if not isinstance(data, BatchStream):
        raise TypeError(f"data must be a BatchStream (training.batch_stream); got {type(data).__name__}")
    want = (tuple(seeds), task["batch_size"], task["n_keys"], task["d_in"], task["n_classes"], float(task["noise"]))
    have = (data.seeds, data.batch_size, data.n_keys, data.d_in, data.n_classes, data.noise)
    if want != have or data.steps < steps:
        raise ValueError(f"data was drawn for seeds, batch_size, n_keys, d_in, n_classes, noise = {have} and "
                         f"{data.steps} steps; this run needs {want} and {steps} steps")
    return lambda step: tuple(getattr(data, k)[step] for k in ("query", "keys", "labels", "target"))


def module_forward(template):
    """The module's own forward for one model, as a function of its parameters (for ``torch.func.vmap``)."""
    def one_model(params, query, keys, labels):
        batch = RetrievalBatch(query=query[:, None], keys=keys, labels=labels, index=None, target=None)
        return functional_call(template, params, (batch,), {"return_weights": True})
    return one_model


def plain_state(module):
    """Everything of a module but its tensors: the attributes (a scale, sizes) its forward reads."""
    skip = {"_parameters", "_buffers", "_modules", "training"}
    return {name: {k: v for k, v in vars(m).items()
                   if k not in skip and not k.startswith("_") and not isinstance(v, torch.Tensor)}
            for name, m in module.named_modules()}


def same_module(models):
    """Models that run one module's forward must differ only in their parameters."""
    first = plain_state(models[0])
    for m in models[1:]:
        if plain_state(m) != first:
            raise ValueError("the models of one group differ in more than their parameters "
                             f"({first} and {plain_state(m)})")


def fit(make_model, seeds, arms, batches, *, steps: int, optimizer: str, qk_names: tuple, device,
        keep_models: bool = False):
    """Train one model per (arm, seed) side by side; return ``(records, models, seconds)``.

    - ``make_model(seed, arm)``: the initial ``torch.nn.Module`` of that model (every model of one class and
      shape); its ``forward(batch, return_weights=True)`` returns ``(logits, weights)`` for one
      :class:`lib.task.RetrievalBatch` (query (B, 1, d_in), keys (B, S, d_in), labels (B, S); its ``index``
      and ``target`` are None here): logits (B, n_classes); weights
      (B, ..., S'), the attention weights whose entropy is recorded (mean over every axis but the last).
    - ``arms``: :class:`lib.training.Arm`; the parameters named in ``qk_names`` learn at ``lr · qk_lr``.
    - ``batches(t)``: step t's batches, one per seed (:func:`batches_for`); every arm sees its seed's batch.
    - ``records[name]``: (n_arms, n_seeds, steps) arrays for the names in ``RECORDS``: the batch's
      cross-entropy, accuracy, the Frobenius norms of the gradients at ``qk_names[0]`` and ``qk_names[1]``
      (before the update), the attention entropy.
    - ``models[i][j]``: the trained module of ``arms[i]``, ``seeds[j]`` (only with ``keep_models=True``).
    """
    with one_thread(device):
        return _fit(make_model, seeds, arms, batches, steps, optimizer, qk_names, device, keep_models)


def _fit(make_model, seeds, arms, batches, steps, optimizer, qk_names, device, keep_models):
    n_s = len(seeds)
    # Models that share their two learning rates and their scale are stacked into one leaf tensor per
    # parameter name, so that the optimiser gives them their rates through its parameter groups. Models that
    # share their scale (a plain attribute of the module, not a parameter) run one module's forward, mapped
    # over them by vmap: one call per scale and step.
    by_scale = {}                                              # scale -> (lr of qk_names, lr of the rest) -> arms
    for a, arm in enumerate(arms):
        by_scale.setdefault(arm.scale, {}).setdefault((arm.lr * arm.qk_lr, arm.lr), []).append(a)
    order, leaves, groups, forwards = [], [], [], []           # model i: arm order[i // n_s], seed i % n_s
    for lr_groups in by_scale.values():
        first, scale_models = len(leaves), []
        for (lr_qk, lr_rest), members in lr_groups.items():
            models = [make_model(s, arms[a]).to(device) for a in members for s in seeds]
            scale_models += models
            params, buffers = stack_module_state(models)      # name -> (members · n_s, ...), leaves
            if buffers:
                raise ValueError(f"fit trains modules without buffers; got {sorted(buffers)}")
            missing = set(qk_names) - set(params)
            if missing:
                raise ValueError(f"qk_names {sorted(missing)} are not parameters of the model: {sorted(params)}")
            order += members
            leaves.append(params)
            groups.append({"params": [params[k] for k in params if k in qk_names], "lr": lr_qk})
            groups.append({"params": [params[k] for k in params if k not in qk_names], "lr": lr_rest})
        same_module(scale_models)                              # they all run scale_models[0]'s forward
        forwards.append((vmap(module_forward(copy.deepcopy(scale_models[0]).to("meta"))), first, len(leaves),
                         len(scale_models)))
    opt = (torch.optim.SGD(groups, lr=1.0, **FOREACH) if optimizer == "sgd"
           else torch.optim.Adam(groups, lr=1.0, **FOREACH))
    n = len(arms) * n_s
    seed_of = torch.arange(n, device=device) % n_s             # which seed's batch each model sees
    rep = (lambda t: t) if n == n_s else (lambda t: t[seed_of])
    starts = np.cumsum([0, *(size for *_, size in forwards)])
    cat = lambda ps, k: ps[0][k] if len(ps) == 1 else torch.cat([p[k] for p in ps])   # noqa: E731
    rec = {name: np.empty((n, steps)) for name in RECORDS}
    t0 = time.perf_counter()
    progress = bars.bar(steps, tr("training steps"))   # draws only in a learner's notebook
    for step in range(steps):
        query, keys, labels, target = (rep(t.to(device)) for t in batches(step))   # (n, B, ...) each
        outs = [f({k: cat(leaves[g0:g1], k) for k in leaves[0]}, *(t[a:b] for t in (query, keys, labels)))
                for (f, g0, g1, _), a, b in zip(forwards, starts[:-1], starts[1:])]
        logits = torch.cat([o[0] for o in outs])               # (n, B, n_classes)
        w = torch.cat([o[1] for o in outs])                    # (n, B, ..., S')
        n_classes = logits.shape[-1]
        per_query = torch.nn.functional.cross_entropy(logits.reshape(-1, n_classes), target.reshape(-1),
                                                      reduction="none").view(n, -1)   # (n, B)
        losses = per_query.mean(dim=1)                         # (n,) one loss per model
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()                                # model i gets the gradient of its own loss
        with torch.no_grad():
            gq, gk = (torch.cat([p[k].grad.flatten(1).norm(dim=1) for p in leaves]) for k in qk_names[:2])
            stats = torch.stack([losses, (logits.argmax(-1) == target).float().mean(dim=1), gq, gk]).cpu().numpy()
            ent = attention_entropy(w.double().cpu().numpy()).reshape(n, -1).mean(axis=1)
        rec["loss"][:, step], rec["accuracy"][:, step], rec["grad_q"][:, step], rec["grad_k"][:, step] = stats
        rec["entropy"][:, step] = ent
        opt.step()
        progress.update(1)
    progress.close()
    seconds = time.perf_counter() - t0
    back = np.argsort(np.repeat(order, n_s) * n_s + np.tile(np.arange(n_s), len(arms)), kind="stable")
    records = {k: v[back].reshape(len(arms), n_s, steps) for k, v in rec.items()}
    models = None
    if keep_models:
        final = {k: torch.cat([p[k].detach() for p in leaves]) for k in leaves[0]}
        models = [[None] * n_s for _ in arms]
        for i in range(n):
            a, j = order[i // n_s], i % n_s
            m = make_model(seeds[j], arms[a]).to(device)
            with torch.no_grad():
                for k, p in m.named_parameters():
                    p.copy_(final[k][i])
            models[a][j] = m
    return records, models, seconds
