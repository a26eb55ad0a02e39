"""lib.trainer.fit: one trainer for every experiment, against plain PyTorch loops of one model at a time."""
import numpy as np
import pytest
import torch

from lib import trainer, training


class Tiny(torch.nn.Module):
    """A module that is not the book's: attention of the query over the keys, then a linear read-out."""

    def __init__(self, seed, scale=None, width=4):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.scale, self.width = scale, width
        self.q = torch.nn.Parameter(torch.randn(32, width, generator=g) / 6)
        self.k = torch.nn.Parameter(torch.randn(32, width, generator=g) / 6)
        self.out = torch.nn.Linear(32, 8)
        with torch.no_grad():
            self.out.weight.copy_(torch.randn(8, 32, generator=g) / 6)
            self.out.bias.zero_()

    def forward(self, batch, *, return_weights=False):
        c = self.width ** -0.5 if self.scale is None else self.scale
        s = (batch.query @ self.q) @ (batch.keys @ self.k).transpose(-1, -2) * c    # (B, 1, S)
        w = torch.softmax(s, dim=-1)
        logits = self.out((w @ batch.keys)[:, 0])
        return (logits, w) if return_weights else logits


ARMS = [training.Arm(0.05), training.Arm(0.02, scale=1.0), training.Arm(0.05, qk_lr=3.0), training.Arm(0.02)]


def _fit(seeds, arms, optimizer, steps=5):
    batches = trainer.batches_for(seeds, steps, None, batch_size=16, n_keys=6, d_in=32, n_classes=8, noise=0.5)
    return trainer.fit(lambda s, a: Tiny(s, a.scale), seeds, arms, batches, steps=steps, optimizer=optimizer,
                       qk_names=("q", "k"), device="cpu", keep_models=True)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fit_equals_a_plain_pytorch_loop_per_model(optimizer):
    seeds, steps = [3, 1], 5
    rec, models, _ = _fit(seeds, ARMS, optimizer, steps)
    data = training.batch_stream(seeds, steps, batch_size=16, n_keys=6)
    for i, arm in enumerate(ARMS):
        for j, seed in enumerate(seeds):
            m = Tiny(seed, arm.scale)
            groups = [{"params": [m.q, m.k], "lr": arm.lr * arm.qk_lr}, {"params": m.out.parameters(), "lr": arm.lr}]
            opt = torch.optim.SGD(groups) if optimizer == "sgd" else torch.optim.Adam(groups)
            losses, gq = [], []
            for t in range(steps):
                b = training.RetrievalBatch(data.query[t][j][:, None], data.keys[t][j], data.labels[t][j], None, None)
                loss = torch.nn.functional.cross_entropy(m(b), data.target[t][j])
                opt.zero_grad()
                loss.backward()
                losses.append(loss.item())
                gq.append(m.q.grad.norm().item())
                opt.step()
            np.testing.assert_allclose(rec["loss"][i, j], losses, rtol=1e-5)
            np.testing.assert_allclose(rec["grad_q"][i, j], gq, rtol=1e-4)
            torch.testing.assert_close(models[i][j].q, m.q, rtol=1e-4, atol=1e-6)


def test_each_model_keeps_its_own_scale_and_its_record_does_not_depend_on_its_neighbours():
    rec, _, _ = _fit([3, 1], ARMS, "adam")
    for i, arm in enumerate(ARMS):
        alone, _, _ = _fit([1], [arm], "adam")
        for name in trainer.RECORDS:
            np.testing.assert_array_equal(rec[name][i, 1], alone[name][0, 0])


def test_models_of_one_group_must_differ_only_in_their_parameters():
    batches = trainer.batches_for([0, 1], 1, None, batch_size=4, n_keys=6, d_in=32, n_classes=8, noise=0.5)
    with pytest.raises(ValueError, match="differ in more than their parameters"):
        trainer.fit(lambda s, a: Tiny(s, scale=0.5 if s == 0 else 1.0), [0, 1], [training.Arm(0.1)], batches,
                    steps=1, optimizer="sgd", qk_names=("q", "k"), device="cpu")
    with pytest.raises(ValueError, match="not parameters of the model"):
        trainer.fit(lambda s, a: Tiny(s), [0], [training.Arm(0.1)], batches, steps=1, optimizer="sgd",
                    qk_names=("W_Q", "k"), device="cpu")

    class WithBuffer(Tiny):
        def __init__(self, seed):
            super().__init__(seed)
            self.register_buffer("count", torch.zeros(()))
    with pytest.raises(ValueError, match="without buffers"):
        trainer.fit(lambda s, a: WithBuffer(s), [0], [training.Arm(0.1)], batches, steps=1, optimizer="sgd",
                    qk_names=("q", "k"), device="cpu")
