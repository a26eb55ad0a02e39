"""lib.block: the two-layer pre-LN model of the `multi-head` chapter, against PyTorch's own TransformerEncoderLayer."""
import math

import numpy as np
import pytest
import torch

from lib import block, training

CFG = block.BlockConfig()


class TorchReference(torch.nn.Module):
    """The same model built from PyTorch's layers: TransformerEncoderLayer(norm_first=True), LayerNorm, Linear.

    ``q_factor`` multiplies W_Q and b_Q of every layer: with √d_k it turns PyTorch's scaled attention into
    the unscaled model's (the scores q·k/√d_k of the larger q are the unscaled scores of the stored one).
    """

    def __init__(self, params, cfg, q_factor=1.0):
        super().__init__()
        dtype = params["W_in"].dtype
        d = cfg.d_model
        P = lambda t: torch.nn.Parameter(t.detach().clone())  # noqa: E731
        self.W_in, self.E_lab, self.e_query = P(params["W_in"]), P(params["E_lab"]), P(params["e_query"])
        self.layers = torch.nn.ModuleList()
        for l in range(cfg.n_layers):
            layer = torch.nn.TransformerEncoderLayer(d, cfg.n_heads, cfg.d_ff, dropout=0.0, activation="gelu",
                                                     batch_first=True, norm_first=True, dtype=dtype)
            g = {name: params[f"{name}{l}"] for name in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo",
                                                          "W1", "b1", "W2", "b2", "g1", "c1", "g2", "c2")}
            with torch.no_grad():
                layer.self_attn.in_proj_weight.copy_(torch.cat([g["Wq"].T * q_factor, g["Wk"].T, g["Wv"].T]))
                layer.self_attn.in_proj_bias.copy_(torch.cat([g["bq"] * q_factor, g["bk"], g["bv"]]))
                layer.self_attn.out_proj.weight.copy_(g["Wo"].T)
                layer.self_attn.out_proj.bias.copy_(g["bo"])
                layer.linear1.weight.copy_(g["W1"].T)
                layer.linear1.bias.copy_(g["b1"])
                layer.linear2.weight.copy_(g["W2"].T)
                layer.linear2.bias.copy_(g["b2"])
                for norm, (gain, shift) in ((layer.norm1, ("g1", "c1")), (layer.norm2, ("g2", "c2"))):
                    norm.weight.copy_(g[gain])
                    norm.bias.copy_(g[shift])
            self.layers.append(layer)
        self.final = torch.nn.LayerNorm(d, dtype=dtype)
        self.readout = torch.nn.Linear(d, cfg.n_classes, dtype=dtype)
        with torch.no_grad():
            self.final.weight.copy_(params["gf"])
            self.final.bias.copy_(params["cf"])
            self.readout.weight.copy_(params["W_out"].T)
            self.readout.bias.copy_(params["b_out"])

    def forward(self, query, keys, labels):          # (B, d_in), (B, S, d_in), (B, S)
        h = torch.cat([(query @ self.W_in + self.e_query)[:, None], keys @ self.W_in + self.E_lab[labels]], dim=1)
        for layer in self.layers:
            h = layer(h)
        return self.readout(self.final(h[:, 0]))


def _batch(seed, batch_size=16, cfg=CFG):
    b = training.make_retrieval_batch(batch_size, n_keys=cfg.n_keys, d_in=cfg.d_in, n_classes=cfg.n_classes,
                                      generator=torch.Generator().manual_seed(seed))
    return b.query[:, 0], b.keys, b.labels, b.target


def _stacked(params, dtype=torch.float64):
    return {k: v[None].to(dtype) for k, v in params.items()}


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("cfg", [CFG, block.BlockConfig(d_model=48, n_heads=3, n_layers=3, n_keys=5)])
def test_logits_equal_pytorchs_transformer_encoder_layers(scaled, cfg):
    """The whole forward pass, the last layer's query-only shortcut included, against PyTorch's layers."""
    params = block.init_params(cfg, 4)
    # move the parameters off their starting values, so that biases and gains are tested too
    g = torch.Generator().manual_seed(9)
    params = {k: (v + 0.1 * torch.randn(v.shape, generator=g)).double() for k, v in params.items()}
    query, keys, labels, _ = _batch(2, cfg=cfg)
    scale = torch.tensor([1 / math.sqrt(cfg.d_k) if scaled else 1.0], dtype=torch.float64)
    ours = block.logits(_stacked(params), query[None].double(), keys[None].double(), labels[None], cfg, scale)[0]
    # built in float64 from float64 weights: the factor √d_k applied in float32 would round at 1e-7
    ref = TorchReference(params, cfg, q_factor=1.0 if scaled else math.sqrt(cfg.d_k))
    torch.testing.assert_close(ours, ref(query.double(), keys.double(), labels), rtol=1e-10, atol=1e-10)


def test_training_matches_pytorchs_layers_and_adam():
    """train_blocks (scaled arm) against a plain loop: PyTorch's layers, torch.optim.Adam, one model."""
    steps, B, lr, seed = 8, 16, 0.003, 1
    ours = block.train_blocks([seed], [lr], steps=steps, batch_size=B)[0][0]
    ref = TorchReference(block.init_params(CFG, seed), CFG)
    opt = torch.optim.Adam(ref.parameters(), lr=lr)
    data = training.batch_stream([seed], steps, batch_size=B, n_keys=CFG.n_keys)
    losses = []
    for t in range(steps):
        loss = torch.nn.functional.cross_entropy(ref(data.query[t][0], data.keys[t][0], data.labels[t][0]),
                                                 data.target[t][0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(ours.loss, losses, rtol=1e-4)


def test_grid_equals_one_at_a_time_runs_bit_for_bit():
    """Every (arm, seed) of a grid equals the same model trained alone: the `multi-head` chapter's table relies on it."""
    arms = [training.Arm(0.003), training.Arm(0.01, scale=1.0), training.Arm(0.003, scale=1.0)]
    kw = dict(steps=6, batch_size=8, cfg=block.BlockConfig(d_model=32, n_keys=4))
    grid = block.train_blocks([2, 0], arms, **kw)
    for arm, row in zip(arms, grid):
        for r in row:
            assert (r.lr, r.scale, r.d_k) == (arm.lr, arm.scale, 16)
            alone = block.train_blocks([r.seed], [arm], **kw)[0][0]
            for name in ("loss", "accuracy", "grad_q", "grad_k", "entropy"):
                np.testing.assert_array_equal(getattr(r, name), getattr(alone, name))


def test_unscaled_scores_start_with_variance_d_k():
    """The start of the `variance` chapter: LayerNorm'd tokens and N(0, 1/d_model) projections give unit-variance q, k."""
    cfg = block.BlockConfig(d_model=128, n_heads=2)
    p = block.init_params(cfg, 0)
    query, keys, labels, _ = _batch(0, batch_size=256, cfg=cfg)
    h = block.tokens({k: v[None] for k, v in p.items()}, query[None], keys[None], labels[None])[0]
    a = torch.nn.functional.layer_norm(h, (cfg.d_model,))
    q, k = (a @ p["Wq0"])[..., :cfg.d_k], (a @ p["Wk0"])[..., :cfg.d_k]   # head 0
    scores = (q @ k.transpose(1, 2)).flatten()
    assert abs(scores.var().item() / cfg.d_k - 1) < 0.15


def test_recorded_entropy_is_the_first_layers_query_row():
    cfg = block.BlockConfig(d_model=32, n_keys=4)
    r = block.train_blocks([0], [training.Arm(0.01, scale=1.0)], steps=1, batch_size=8, cfg=cfg)[0][0]
    data = training.batch_stream([0], 1, batch_size=8, n_keys=4)
    params = _stacked(block.init_params(cfg, 0), torch.float32)
    _, w = block.logits(params, data.query[0], data.keys[0], data.labels[0], cfg, torch.tensor([1.0]),
                        return_weights=True)
    assert w.shape == (1, 8, cfg.n_heads, cfg.n_keys + 1)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 8, cfg.n_heads))
    p = w.double()
    expected = -(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean().item()
    assert r.entropy[0] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("kwargs, error", [
    (dict(d_model=63, n_heads=2), ValueError), (dict(n_heads=0), ValueError), (dict(n_classes=1), ValueError),
    (dict(noise=-1.0), ValueError), (dict(d_model=64.0), TypeError)])
def test_config_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        block.BlockConfig(**kwargs)


def test_training_and_logits_reject_bad_input():
    with pytest.raises(ValueError, match="plain arms"):
        block.train_blocks([0], [training.Arm(0.01, qk_init=2.0)], steps=1)
    with pytest.raises(TypeError, match="BlockConfig"):
        block.train_blocks([0], [0.01], cfg=dict(d_model=64), steps=1)
    with pytest.raises(ValueError, match="optimizer"):
        block.train_blocks([0], [0.01], optimizer="lion", steps=1)
    with pytest.raises(ValueError, match="this run needs"):
        block.train_blocks([0], [0.01], steps=2, data=training.batch_stream([0], 1, batch_size=32, n_keys=8))
    with pytest.raises(TypeError, match="arms"):
        block.train_blocks([0], 0.01, steps=1)
    params = _stacked(block.init_params(CFG, 0), torch.float32)
    query, keys, labels, _ = _batch(0)
    with pytest.raises(ValueError, match="expected query"):
        block.logits(params, query[None, :, :16], keys[None], labels[None], CFG, torch.tensor([1.0]))


@pytest.mark.cuda
def test_train_blocks_on_cuda_when_asked():
    """The GPU path: the same data and weights, so the first step's loss agrees with the CPU run."""
    arms = [training.Arm(0.003), training.Arm(0.003, scale=1.0)]
    gpu = block.train_blocks([0], arms, steps=5, batch_size=16, device="cuda")
    cpu = block.train_blocks([0], arms, steps=5, batch_size=16)
    for g, c in zip(gpu, cpu):
        assert np.all(np.isfinite(g[0].loss))
        np.testing.assert_allclose(g[0].loss[0], c[0].loss[0], rtol=1e-4)
