"""lib.block: the two-layer pre-LN model of the `block` chapter, against PyTorch's own TransformerEncoderLayer."""
import math

import numpy as np
import pytest
import torch

from lib import block, training

CFG = block.BlockConfig()


class TorchReference(torch.nn.Module):
    """The same model built from PyTorch's layers: TransformerEncoderLayer(norm_first=True), LayerNorm, Linear,
    with the weights of a ``block.RetrievalTransformer``.

    ``q_factor`` multiplies W_Q and b_Q of every layer: with √d_k it turns PyTorch's scaled attention into
    the unscaled model's (the scores q·k/√d_k of the larger q are the unscaled scores of the stored one).
    """

    def __init__(self, model, q_factor=1.0):
        super().__init__()
        cfg = model.cfg
        dtype = model.embed.weight.dtype
        P = lambda t: torch.nn.Parameter(t.detach().clone())  # noqa: E731
        self.W_in, self.E_lab, self.e_query = P(model.embed.weight.T), P(model.label_embed.weight), P(model.query_embed)
        self.layers = torch.nn.ModuleList()
        for blk in model.blocks:
            layer = torch.nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0,
                                                     activation="gelu", batch_first=True, norm_first=True, dtype=dtype)
            at = blk.attn
            with torch.no_grad():
                layer.self_attn.in_proj_weight.copy_(torch.cat([at.q_proj.weight * q_factor, at.k_proj.weight,
                                                                at.v_proj.weight]))
                layer.self_attn.in_proj_bias.copy_(torch.cat([at.q_proj.bias * q_factor, at.k_proj.bias, at.v_proj.bias]))
                for theirs, ours in ((layer.self_attn.out_proj, at.out_proj), (layer.linear1, blk.mlp[0]),
                                     (layer.linear2, blk.mlp[2]), (layer.norm1, blk.ln_1), (layer.norm2, blk.ln_2)):
                    theirs.weight.copy_(ours.weight)
                    theirs.bias.copy_(ours.bias)
            self.layers.append(layer)
        self.final = torch.nn.LayerNorm(cfg.d_model, dtype=dtype)
        self.readout = torch.nn.Linear(cfg.d_model, cfg.n_classes, dtype=dtype)
        with torch.no_grad():
            for theirs, ours in ((self.final, model.ln_f), (self.readout, model.head)):
                theirs.weight.copy_(ours.weight)
                theirs.bias.copy_(ours.bias)

    def forward(self, query, keys, labels):          # (B, d_in), (B, S, d_in), (B, S)
        h = torch.cat([(query @ self.W_in + self.e_query)[:, None], keys @ self.W_in + self.E_lab[labels]], dim=1)
        for layer in self.layers:
            h = layer(h)
        return self.readout(self.final(h[:, 0]))


def _batch(seed, batch_size=16, cfg=CFG):
    b = training.make_retrieval_batch(batch_size, n_keys=cfg.n_keys, d_in=cfg.d_in, n_classes=cfg.n_classes,
                                      generator=torch.Generator().manual_seed(seed))
    return b.query[:, 0], b.keys, b.labels, b.target


def _as_batch(query, keys, labels):
    return training.RetrievalBatch(query=query[:, None], keys=keys, labels=labels, index=None, target=None)


def _model(cfg, seed, scale=None):
    return block.RetrievalTransformer(cfg, scale=scale, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("cfg", [CFG, block.BlockConfig(d_model=48, n_heads=3, n_layers=3, n_keys=5)])
def test_logits_equal_pytorchs_transformer_encoder_layers(scaled, cfg):
    """The whole forward pass against PyTorch's layers."""
    model = _model(cfg, 4, scale=None if scaled else 1.0).double()
    # move the parameters off their starting values, so that biases and gains are tested too
    g = torch.Generator().manual_seed(9)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    query, keys, labels, _ = _batch(2, cfg=cfg)
    ours = model(_as_batch(query.double(), keys.double(), labels))
    # built in float64 from float64 weights: the factor √d_k applied in float32 would round at 1e-7
    ref = TorchReference(model, q_factor=1.0 if scaled else math.sqrt(cfg.d_k))
    torch.testing.assert_close(ours, ref(query.double(), keys.double(), labels), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("scale", [None, 1.0])
def test_training_matches_a_plain_pytorch_loop(scale):
    """train_blocks against a plain loop of one model and torch.optim.Adam: for the scaled model, PyTorch's own
    layers (TransformerEncoderLayer); for the unscaled one, which PyTorch's layer cannot be (it always divides by
    √d_k), the module itself, whose forward the test above checks against PyTorch's layers."""
    steps, B, lr, seed = 8, 16, 0.003, 1
    ours = block.train_blocks([seed], [training.Arm(lr, scale=scale)], steps=steps, batch_size=B)[0][0]
    model = _model(CFG, seed, scale=scale)
    ref = TorchReference(model) if scale is None else model
    opt = torch.optim.Adam(ref.parameters(), lr=lr)
    data = training.batch_stream([seed], steps, batch_size=B, n_keys=CFG.n_keys)
    losses = []
    for t in range(steps):
        q, k, lab = data.query[t][0], data.keys[t][0], data.labels[t][0]
        logits = ref(q, k, lab) if scale is None else ref(_as_batch(q, k, lab))
        loss = torch.nn.functional.cross_entropy(logits, data.target[t][0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(ours.loss, losses, rtol=1e-4)


def test_decomposition_arms_match_a_plain_pytorch_loop():
    """qk_init and qk_lr against a loop written from torch.optim alone: every layer's W_Q, b_Q, W_K, b_K start
    qk_init times larger and learn in their own Adam parameter group at lr · qk_lr."""
    cfg, steps, B, seed = block.BlockConfig(n_layers=3), 8, 16, 2
    arm = training.Arm(0.003, qk_init=2.0, qk_lr=3.0)
    ours = block.train_blocks([seed], [arm], cfg=cfg, steps=steps, batch_size=B)[0][0]
    assert (ours.qk_init, ours.qk_lr) == (2.0, 3.0)
    m = _model(cfg, seed)
    qk = [p for blk in m.blocks for proj in (blk.attn.q_proj, blk.attn.k_proj) for p in (proj.weight, proj.bias)]
    with torch.no_grad():
        for p in qk:
            p.mul_(arm.qk_init)
    rest = [p for p in m.parameters() if all(p is not q for q in qk)]
    assert len(qk) == 4 * cfg.n_layers and len(rest) + len(qk) == len(list(m.parameters()))
    opt = torch.optim.Adam([{"params": qk, "lr": arm.lr * arm.qk_lr}, {"params": rest, "lr": arm.lr}])
    data = training.batch_stream([seed], steps, batch_size=B, n_keys=cfg.n_keys)
    losses = []
    for t in range(steps):
        loss = torch.nn.functional.cross_entropy(m(_as_batch(data.query[t][0], data.keys[t][0], data.labels[t][0])),
                                                 data.target[t][0])
        opt.zero_grad()
        loss.backward()
        if t == 0:                      # the recorded gradient is the first layer's, in the arm's coordinates
            assert ours.grad_q[0] == pytest.approx(m.blocks[0].attn.q_proj.weight.grad.norm().item(), rel=1e-4)
            assert ours.grad_k[0] == pytest.approx(m.blocks[0].attn.k_proj.weight.grad.norm().item(), rel=1e-4)
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(ours.loss, losses, rtol=1e-4)
    # (not b_K: the softmax ignores it, so its gradient is rounding noise, which Adam turns into full steps)
    for ours_p, ref_p in ((ours.model.blocks[2].attn.q_proj.bias, m.blocks[2].attn.q_proj.bias),
                          (ours.model.blocks[1].attn.k_proj.weight, m.blocks[1].attn.k_proj.weight)):
        torch.testing.assert_close(ours_p, ref_p, rtol=1e-3, atol=1e-5)


def test_unscaled_equivalent_trains_like_the_unscaled_block():
    """Exercise `ex-tuning-init`'s algebra in the block: with both factors for the per-head d_k, the scaled block
    learns what the unscaled one does, for the first 30 steps (measured: loss 0.02 %, entropy 0.06 % apart at
    most; by step 40 the entropy is 0.6 % apart: rounding, which Adam's normalised steps amplify, parts them). Each factor alone gives a different run (measured:
    0.15 and 0.23 nats apart within 20 steps), so the check can fail."""
    eq = training.unscaled_equivalent(CFG.d_k, "adam")
    lr = 0.003
    arms = [training.Arm(lr, scale=1.0), training.Arm(lr, qk_init=eq.qk_init, qk_lr=eq.qk_lr),
            training.Arm(lr, qk_init=eq.qk_init), training.Arm(lr, qk_lr=eq.qk_lr)]
    unscaled, both, start_only, step_only = (row[0] for row in block.train_blocks([0], arms, steps=30, batch_size=16))
    np.testing.assert_allclose(both.loss, unscaled.loss, rtol=5e-3)
    np.testing.assert_allclose(both.entropy, unscaled.entropy, rtol=5e-3, atol=1e-5)
    for one in (start_only, step_only):
        assert np.max(np.abs(one.loss[:20] - unscaled.loss[:20])) > 0.05


def test_qk_parameter_names_are_every_layers_query_and_key_projections():
    cfg = block.BlockConfig(n_layers=3)
    names = block.qk_parameter_names(cfg)
    assert names[:2] == ("blocks.0.attn.q_proj.weight", "blocks.0.attn.k_proj.weight")
    params = dict(_model(cfg, 0).named_parameters())
    expected = {n for n in params if ".attn.q_proj." in n or ".attn.k_proj." in n}
    assert set(names) == expected and len(names) == len(expected) == 12


def test_grid_equals_one_at_a_time_runs_bit_for_bit():
    """Every (arm, seed) of a grid equals the same model trained alone: the `block` chapter's tables rely on it."""
    arms = [training.Arm(0.003), training.Arm(0.01, scale=1.0), training.Arm(0.003, scale=1.0),
            training.Arm(0.003, qk_init=2.0), training.Arm(0.003, qk_lr=2.0)]
    kw = dict(steps=6, batch_size=8, cfg=block.BlockConfig(d_model=32, n_keys=4))
    grid = block.train_blocks([2, 0], arms, **kw)
    for arm, row in zip(arms, grid):
        for r in row:
            assert (r.lr, r.scale, r.d_k, r.qk_init, r.qk_lr) == (arm.lr, arm.scale, 16, arm.qk_init, arm.qk_lr)
            alone = block.train_blocks([r.seed], [arm], **kw)[0][0]
            for name in ("loss", "accuracy", "grad_q", "grad_k", "entropy"):
                np.testing.assert_array_equal(getattr(r, name), getattr(alone, name))
            for p, q in zip(r.model.parameters(), alone.model.parameters()):
                torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_unscaled_scores_start_with_variance_d_k():
    """The start of the `variance` chapter: LayerNorm'd tokens and N(0, 1/d_model) projections give unit-variance q, k."""
    cfg = block.BlockConfig(d_model=128, n_heads=2)
    m = _model(cfg, 0)
    query, keys, labels, _ = _batch(0, batch_size=256, cfg=cfg)
    with torch.no_grad():
        h = torch.cat([m.embed(query[:, None]) + m.query_embed, m.embed(keys) + m.label_embed(labels)], dim=1)
        a = torch.nn.functional.layer_norm(h, (cfg.d_model,))
        attn = m.blocks[0].attn
        q, k = attn.q_proj(a)[..., :cfg.d_k], attn.k_proj(a)[..., :cfg.d_k]   # head 0
    scores = (q @ k.transpose(1, 2)).flatten()
    assert abs(scores.var().item() / cfg.d_k - 1) < 0.15


def test_recorded_entropy_is_the_first_layers_query_row():
    cfg = block.BlockConfig(d_model=32, n_keys=4)
    r = block.train_blocks([0], [training.Arm(0.01, scale=1.0)], steps=1, batch_size=8, cfg=cfg)[0][0]
    data = training.batch_stream([0], 1, batch_size=8, n_keys=4)
    m = _model(cfg, 0, scale=1.0)
    with torch.no_grad():
        _, w = m(_as_batch(data.query[0][0], data.keys[0][0], data.labels[0][0]), return_weights=True)
        # PyTorch's own layer gives the first layer's weights (averaged over heads: compare the mean)
        ref = TorchReference(m, q_factor=math.sqrt(cfg.d_k)).layers[0]
        h = torch.cat([m.embed(data.query[0][0][:, None]) + m.query_embed,
                       m.embed(data.keys[0][0]) + m.label_embed(data.labels[0][0])], dim=1)
        a = ref.norm1(h)
        _, w_torch = ref.self_attn(a, a, a, need_weights=True, average_attn_weights=False)
    assert w.shape == (8, cfg.n_heads, cfg.n_keys + 1)
    torch.testing.assert_close(w, w_torch[:, :, 0])
    p = w.double()
    expected = -(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean().item()
    assert r.entropy[0] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("scale", [None, 1.0])
def test_first_scores_are_pytorchs_first_layer_scores(scale):
    """RetrievalTransformer.first_scores: their softmax is the attention of PyTorch's own first layer (every
    head, every row), and the query's row is the weights the forward pass returns."""
    cfg = block.BlockConfig(d_model=32, n_keys=4)
    m = _model(cfg, 3, scale=scale)
    query, keys, labels, _ = _batch(1, batch_size=8, cfg=cfg)
    b = _as_batch(query, keys, labels)
    with torch.no_grad():
        s = m.first_scores(b)
        ref = TorchReference(m, q_factor=1.0 if scale is None else math.sqrt(cfg.d_k)).layers[0]
        h = torch.cat([m.embed(query[:, None]) + m.query_embed, m.embed(keys) + m.label_embed(labels)], dim=1)
        a = ref.norm1(h)
        _, w_torch = ref.self_attn(a, a, a, need_weights=True, average_attn_weights=False)
        _, w_ours = m(b, return_weights=True)
    assert s.shape == (8, cfg.n_heads, cfg.n_keys + 1, cfg.n_keys + 1)
    torch.testing.assert_close(torch.softmax(s, -1), w_torch)
    torch.testing.assert_close(torch.softmax(s, -1)[:, :, 0], w_ours)


@pytest.mark.parametrize("kwargs, error", [
    (dict(d_model=63, n_heads=2), ValueError), (dict(n_heads=0), ValueError), (dict(n_classes=1), ValueError),
    (dict(noise=-1.0), ValueError), (dict(d_model=64.0), TypeError)])
def test_config_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        block.BlockConfig(**kwargs)


def test_training_and_the_model_reject_bad_input():
    with pytest.raises(TypeError, match="BlockConfig"):
        block.train_blocks([0], [0.01], cfg=dict(d_model=64), steps=1)
    with pytest.raises(ValueError, match="optimizer"):
        block.train_blocks([0], [0.01], optimizer="lion", steps=1)
    with pytest.raises(ValueError, match="this run needs"):
        block.train_blocks([0], [0.01], steps=2, data=training.batch_stream([0], 1, batch_size=32, n_keys=8))
    with pytest.raises(TypeError, match="arms"):
        block.train_blocks([0], 0.01, steps=1)
    with pytest.raises(TypeError, match="BlockConfig"):
        block.RetrievalTransformer(dict(d_model=64))
    query, keys, labels, _ = _batch(0)
    with pytest.raises(ValueError, match="expected query"):
        _model(CFG, 0)(_as_batch(query[:, :16], keys, labels))


@pytest.mark.cuda
def test_train_blocks_on_cuda_when_asked():
    """The GPU path: the same data and weights, so the first step's loss agrees with the CPU run."""
    arms = [training.Arm(0.003), training.Arm(0.003, scale=1.0)]
    gpu = block.train_blocks([0], arms, steps=5, batch_size=16, device="cuda")
    cpu = block.train_blocks([0], arms, steps=5, batch_size=16)
    for g, c in zip(gpu, cpu):
        assert np.all(np.isfinite(g[0].loss))
        np.testing.assert_allclose(g[0].loss[0], c[0].loss[0], rtol=1e-4)
