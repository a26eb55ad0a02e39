"""lib.training: the retrieval task, the model (against PyTorch's attention), the loop (chapter 06)."""
import math

import numpy as np
import pytest
import torch

import lib
from lib import training


def batch(seed=0, **kw):
    return training.make_retrieval_batch(kw.pop("batch_size", 8), generator=torch.Generator().manual_seed(seed), **kw)


# --------------------------------------------------------------------------- the task
def test_batch_shapes_and_answer():
    b = batch(batch_size=5, n_keys=7, d_in=12, n_classes=3)
    assert b.query.shape == (5, 1, 12) and b.keys.shape == (5, 7, 12)
    assert b.labels.shape == (5, 7) and b.index.shape == (5,) and b.target.shape == (5,)
    assert b.query.dtype == torch.float32 and b.labels.dtype == torch.int64
    assert int(b.labels.min()) >= 0 and int(b.labels.max()) < 3 and int(b.index.max()) < 7
    rows = torch.arange(5)
    assert torch.equal(b.target, b.labels[rows, b.index])


def test_noise_free_query_is_the_key_and_noise_has_the_stated_size():
    b = batch(noise=0.0)
    assert torch.equal(b.query[:, 0], b.keys[torch.arange(8), b.index])
    b = batch(batch_size=4000, noise=0.5, d_in=16)
    diff = b.query[:, 0] - b.keys[torch.arange(4000), b.index]
    assert abs(float(diff.std()) - 0.5) < 0.01                    # noise ~ N(0, 0.5²)
    assert abs(float(b.keys.std()) - 1.0) < 0.01                  # keys ~ N(0, 1)


def test_batches_are_reproducible_and_seed_dependent():
    a, b, c = batch(3), batch(3), batch(4)
    for name in ("query", "keys", "labels", "index", "target"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    assert not torch.equal(a.keys, c.keys)


@pytest.mark.parametrize("kwargs", [dict(batch_size=0), dict(batch_size=2.5), dict(n_keys=0), dict(d_in=-1),
                                    dict(n_classes=1), dict(noise=-0.1), dict(noise=float("nan")),
                                    dict(batch_size=True)])
def test_batch_rejects_bad_input(kwargs):
    kwargs = {"batch_size": 4, **kwargs}
    with pytest.raises(ValueError):
        training.make_retrieval_batch(**kwargs)


# --------------------------------------------------------------------------- the model
@pytest.mark.parametrize("scale", [None, 1.0])
@pytest.mark.parametrize("d_k", [4, 64])
def test_model_attention_equals_pytorch(scale, d_k):
    b = batch(1, n_keys=5, d_in=6)
    m = training.AttentionRetriever(6, d_k, 8, d_v=3, scale=scale, generator=torch.Generator().manual_seed(0))
    logits, w = m(b, return_weights=True)
    q, k, v = b.query @ m.W_Q, b.keys @ m.W_K, m.E[b.labels]
    ref_out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)   # None = 1/sqrt(d_k)
    ref_w = torch.softmax(q @ k.transpose(-2, -1) * (1 / math.sqrt(d_k) if scale is None else scale), dim=-1)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(logits, ref_out[:, 0] @ m.W_O + m.b_O, rtol=1e-5, atol=1e-5)
    assert logits.shape == (8, 8) and w.shape == (8, 1, 5)


def test_model_init_gives_unit_variance_q_and_k():
    """Chapter 03's assumption: components of q and k have variance about 1."""
    m = training.AttentionRetriever(64, 256, 8, generator=torch.Generator().manual_seed(0))
    b = batch(2, batch_size=256, d_in=64, noise=0.0)
    with torch.no_grad():
        k = b.keys @ m.W_K
    assert abs(float(k.var()) - 1.0) < 0.1


def test_model_rejects_bad_input():
    with pytest.raises(ValueError):
        training.AttentionRetriever(8, 0, 4)
    with pytest.raises(ValueError):
        training.AttentionRetriever(8, 4, 4, scale=0.0)
    with pytest.raises(ValueError):
        training.AttentionRetriever(8, 4, 4, scale=float("inf"))
    m = training.AttentionRetriever(8, 4, 4)
    with pytest.raises(ValueError, match="expected query"):
        m(batch(d_in=7, n_classes=4))


# --------------------------------------------------------------------------- the loop
def test_tiny_run_learns_the_task():
    r = training.train(16, steps=150, batch_size=32, lr=0.01, optimizer="adam", seed=0, n_keys=8)
    assert r.loss[:10].mean() > 1.8                      # starts near chance, ln 8 = 2.08
    assert r.final_loss() < 0.5 and r.accuracy[-20:].mean() > 0.85


def test_training_is_reproducible_and_seed_dependent():
    kw = dict(steps=5, batch_size=8, lr=0.1)
    a, b, c = training.train(8, seed=1, **kw), training.train(8, seed=1, **kw), training.train(8, seed=2, **kw)
    for name in ("loss", "grad_q", "grad_k", "entropy", "accuracy"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.loss, c.loss)


@pytest.mark.parametrize("scale", [None, 1.0])
def test_recorded_first_step_matches_a_manual_step(scale):
    """Step 0's loss, gradient norms and entropy, recomputed from scratch with autograd."""
    r = training.train(32, scale=scale, steps=1, batch_size=16, seed=7)
    m = training.AttentionRetriever(32, 32, 8, scale=scale, generator=torch.Generator().manual_seed(7))
    b = training.make_retrieval_batch(16, generator=torch.Generator().manual_seed(7 + 1_000_003))
    logits, w = m(b, return_weights=True)
    loss = torch.nn.functional.cross_entropy(logits, b.target)
    loss.backward()
    np.testing.assert_allclose(r.loss[0], loss.item(), rtol=1e-6)
    np.testing.assert_allclose(r.grad_q[0], float(m.W_Q.grad.norm()), rtol=1e-5)
    np.testing.assert_allclose(r.grad_k[0], float(m.W_K.grad.norm()), rtol=1e-5)
    ent = torch.distributions.Categorical(probs=w[:, 0].detach().double()).entropy().mean()
    np.testing.assert_allclose(r.entropy[0], float(ent), rtol=1e-5)
    assert r.grad_q.shape == r.grad_k.shape == r.loss.shape == (1,)


def test_unscaled_starts_with_low_entropy():
    ent = {s: training.train(1024, scale=s, steps=1, batch_size=64, seed=0).entropy[0] for s in (None, 1.0)}
    assert ent[None] > 2.0 and ent[1.0] < 0.3                 # ln 16 = 2.77 is uniform


@pytest.mark.parametrize("kwargs", [dict(optimizer="rmsprop"), dict(lr=0.0), dict(lr=float("nan")), dict(steps=0)])
def test_train_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        training.train(8, **kwargs)


def test_per_query_gradients_match_autograd_one_query_at_a_time():
    m = training.AttentionRetriever(16, 64, 8, scale=1.0, generator=torch.Generator().manual_seed(0))
    b = batch(5, batch_size=4, d_in=16)
    r = training.per_query_gradients(m, b)
    with torch.no_grad():
        _, w = m(b, return_weights=True)
    for i in range(4):
        one = training.RetrievalBatch(*(t[i:i + 1] for t in (b.query, b.keys, b.labels, b.index, b.target)))
        m.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(one), one.target)
        loss.backward()
        np.testing.assert_allclose(r["grad_q"][i], float(m.W_Q.grad.norm()), rtol=1e-4, atol=1e-12)
        np.testing.assert_allclose(r["loss"][i], loss.item(), rtol=1e-5)
        np.testing.assert_allclose(r["max_weight"][i], float(w[i, 0].max()), rtol=1e-6)
        np.testing.assert_allclose(r["match_weight"][i], float(w[i, 0, b.index[i]]), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(r["entropy"], lib.attention_entropy(w[:, 0].double().detach().numpy()), rtol=1e-5)


def test_steps_to_threshold_known_values():
    loss = np.array([3.0] * 10 + [0.0] * 10)
    assert training.steps_to_threshold(loss, 1.0, window=1) == 10
    # the window of 10 ending at step t holds 19 - t threes: mean 3 (19 - t) / 10 < 1 first at t = 16
    assert training.steps_to_threshold(loss, 1.0, window=10) == 16
    assert training.steps_to_threshold(loss, -1.0) == len(loss)          # never reached
    with pytest.raises(ValueError):
        training.steps_to_threshold(loss.reshape(2, 10), 1.0)
    with pytest.raises(ValueError):
        training.steps_to_threshold(loss, 1.0, window=0)
    with pytest.raises(ValueError):
        training.steps_to_threshold(loss, 1.0, window=21)
