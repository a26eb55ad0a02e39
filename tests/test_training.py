"""lib.training: the retrieval task, the model (against PyTorch's attention), the loop (chapter `training`)."""
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


@pytest.mark.parametrize("kwargs, error", [(dict(batch_size=0), ValueError), (dict(batch_size=2.5), TypeError),
                                           (dict(n_keys=0), ValueError), (dict(d_in=-1), ValueError),
                                           (dict(n_classes=1), ValueError), (dict(noise=-0.1), ValueError),
                                           (dict(noise=float("nan")), ValueError),
                                           (dict(batch_size=True), TypeError)])
def test_batch_rejects_bad_input(kwargs, error):
    kwargs = {"batch_size": 4, **kwargs}
    with pytest.raises(error):
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
    """The `variance` chapter's assumption: components of q and k have variance about 1."""
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
    b = training.make_retrieval_batch(16, generator=torch.Generator().manual_seed(7 + training.DATA_SEED_OFFSET))
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


@pytest.mark.parametrize("d_k, optimizer", [(8, "adam"), (64, "adam"), (1024, "adam"), (1024, "sgd")])
def test_train_seeds_equals_lone_runs_exactly(d_k, optimizer):
    """A seed's record must not depend on which seeds run beside it (the chapter's table relies on it)."""
    kw = dict(steps=25, batch_size=16, lr=0.01, optimizer=optimizer)
    for scale in (None, 1.0):
        many = training.train_seeds(d_k, [2, 0, 5], scale=scale, **kw)
        assert [r.seed for r in many] == [2, 0, 5]
        for r in many:
            alone = training.train(d_k, scale=scale, seed=r.seed, **kw)
            for name in ("loss", "grad_q", "grad_k", "entropy", "accuracy"):
                np.testing.assert_array_equal(getattr(r, name), getattr(alone, name))
            for p, q in zip(r.model.parameters(), alone.model.parameters()):
                assert torch.equal(p, q)


@pytest.mark.parametrize("seeds", [[], [-1], "ab"])
def test_train_seeds_rejects_bad_seeds(seeds):
    with pytest.raises((ValueError, TypeError)):
        training.train_seeds(8, seeds, steps=2)


def test_training_runs_on_the_cpu_by_default_even_with_a_gpu(monkeypatch):
    """The published numbers are CPU numbers: device=None must not follow torch.cuda.is_available()."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    r = training.train(8, steps=2, batch_size=4)
    assert all(p.device.type == "cpu" for p in r.model.parameters())
    b = training.make_retrieval_batch(4)
    assert b.query.device.type == "cpu"


def test_train_accepts_an_explicit_cpu_device():
    a = training.train(8, steps=3, batch_size=4, seed=1)
    b = training.train(8, steps=3, batch_size=4, seed=1, device="cpu")
    np.testing.assert_array_equal(a.loss, b.loss)


@pytest.mark.cuda
def test_train_on_cuda_when_asked():
    r = training.train(64, steps=20, batch_size=16, lr=0.01, optimizer="adam", device="cuda")
    assert all(p.device.type == "cuda" for p in r.model.parameters())
    assert np.all(np.isfinite(r.loss)) and r.loss[:3].mean() > 1.5
    cpu = training.train(64, steps=20, batch_size=16, lr=0.01, optimizer="adam")
    np.testing.assert_allclose(r.loss[0], cpu.loss[0], rtol=1e-4)    # same data and weights at step 0


@pytest.mark.parametrize("scale", [None, 1.0])
def test_forward_equals_the_formula_with_projected_q_and_k(scale):
    """The model computes q·k_j as (q W_Kᵀ)·x_j; project() gives q and k as the formula writes them."""
    m = training.AttentionRetriever(32, 256, 8, scale=scale, generator=torch.Generator().manual_seed(3))
    b = batch(4, batch_size=16)
    q, k, v = m.project(b)
    assert q.shape == (16, 1, 256) and k.shape == (16, 16, 256) and v.shape == (16, 16, 32)
    c = 1 / math.sqrt(256) if scale is None else scale
    assert m.score_scale == c
    logits, w = m(b, return_weights=True)
    ref_w = torch.softmax((q.double() @ k.double().transpose(-2, -1)) * c, dim=-1)
    torch.testing.assert_close(w.double(), ref_w, rtol=1e-4, atol=1e-6)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=c)
    torch.testing.assert_close(logits, ref[:, 0] @ m.W_O + m.b_O, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- what is reachable without attention
def _brute_force_baselines(S, K):
    """Every one of the K^S labellings, equally likely; the target is a uniformly chosen key's label."""
    import itertools

    from scipy.optimize import minimize

    counts = np.array([np.bincount(lab, minlength=K) for lab in itertools.product(range(K), repeat=S)]) / S
    with np.errstate(divide="ignore", invalid="ignore"):
        bayes = np.mean(np.where(counts > 0, -counts * np.log(counts), 0).sum(axis=1))

    def loss(theta):                     # a general linear read-out of the counts: logits = r A + b
        A, b = theta[:K * K].reshape(K, K), theta[K * K:]
        z = counts @ A + b
        lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
        return np.mean(lse - (counts * z).sum(1))     # E over targets: Σ_c r_c (lse - z_c)

    best = minimize(loss, np.zeros(K * K + K), method="BFGS", options=dict(gtol=1e-10))
    return bayes, best.fun


@pytest.mark.parametrize("S, K", [(4, 3), (6, 2), (5, 4)])
def test_label_count_baselines_match_brute_force(S, K):
    r = training.label_count_baselines(S, K)
    bayes, linear = _brute_force_baselines(S, K)
    np.testing.assert_allclose(r["counts"], bayes, rtol=1e-12)
    # the symmetric one-number fit equals the best general linear read-out (K² + K numbers)
    np.testing.assert_allclose(r["uniform_attention"], linear, rtol=1e-7)
    assert r["counts"] < r["uniform_attention"] < r["chance"] == math.log(K)


def test_label_count_baselines_of_the_book_task():
    from scipy.stats import binom

    r = training.label_count_baselines()           # 16 keys, 8 classes
    m = np.arange(1, 17)
    closed = 8 * np.sum(binom.pmf(m, 16, 1 / 8) * (m / 16) * np.log(16 / m))   # by symmetry, one class
    np.testing.assert_allclose(r["counts"], closed, rtol=1e-12)
    assert abs(r["counts"] - 1.826) < 5e-4 and abs(r["uniform_attention"] - 1.876) < 5e-4
    # a seeded Monte Carlo of the uniform-attention predictor softmax(alpha n / S) agrees to 3 SE
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 8, size=(200_000, 16))
    counts = np.stack([(labels == c).sum(1) for c in range(8)], axis=1) / 16
    target = labels[np.arange(len(labels)), rng.integers(0, 16, len(labels))]
    z = r["alpha"] * counts
    lse = np.log(np.exp(z).sum(1))
    nll = lse - z[np.arange(len(z)), target]
    assert abs(nll.mean() - r["uniform_attention"]) < 3 * nll.std() / math.sqrt(len(nll))


def test_a_model_with_uniform_attention_cannot_beat_the_baseline():
    """W_Q = 0 makes every score 0: the trained model lands near, and not below, the uniform baseline."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                  # small tensors: one thread is fastest on a busy machine
    try:
        _fit_uniform_attention_model()
    finally:
        torch.set_num_threads(threads)


def _fit_uniform_attention_model():
    m = training.AttentionRetriever(32, 16, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        m.W_Q.zero_()
    m.W_Q.requires_grad_(False)
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad], lr=0.05)
    g = torch.Generator().manual_seed(1)
    for _ in range(300):
        b = training.make_retrieval_batch(256, generator=g)
        loss = torch.nn.functional.cross_entropy(m(b), b.target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    test = training.make_retrieval_batch(20_000, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(m(test), test.target, reduction="none").double().numpy()
    base = training.label_count_baselines()
    se = nll.std() / math.sqrt(len(nll))
    assert nll.mean() > base["uniform_attention"] - 3 * se          # cannot beat it ...
    assert nll.mean() < base["uniform_attention"] + 0.03            # ... and gets close to it
    assert nll.mean() < base["chance"] - 0.15                       # so it beats chance without attention


def test_label_count_baselines_edge_cases():
    one = training.label_count_baselines(1, 4)           # one key: its label is the answer
    assert one["counts"] == 0.0 and one["uniform_attention"] < 1e-6
    two = training.label_count_baselines(2, 2)
    # counts (2,0) or (0,2) w.p. 1/2: loss 0; (1,1) w.p. 1/2: loss ln 2
    assert abs(two["counts"] - 0.5 * math.log(2)) < 1e-12


@pytest.mark.parametrize("bad, error", [(dict(n_keys=0), ValueError), (dict(n_classes=1), ValueError),
                                        (dict(n_keys=65), ValueError), (dict(n_keys=2.5), TypeError)])
def test_label_count_baselines_reject_bad_input(bad, error):
    with pytest.raises(error):
        training.label_count_baselines(**bad)


# --------------------------------------------------------------------------- the `softmax-saturation` chapter's gradient path
@pytest.mark.parametrize("scaled", [True, False])
def test_gradient_path_matches_autograd_per_query(scaled):
    r = training.gradient_path(16, scaled=scaled, n_queries=5, n_keys=6, d_in=8, seed=3)
    assert set(r) == {"logits", "scores", "W_Q"} and all(v.shape == (5,) for v in r.values())
    # rebuild the same layer from the same generator and differentiate one query at a time
    g = torch.Generator().manual_seed(3)
    f64 = dict(generator=g, dtype=torch.float64)
    x_q, x_k = torch.randn(5, 1, 8, **f64), torch.randn(5, 6, 8, **f64)
    v = torch.randn(5, 6, 16, **f64)
    y = torch.randint(0, 8, (5,), generator=g)
    W_Q, W_K = torch.randn(8, 16, **f64) / math.sqrt(8), torch.randn(8, 16, **f64) / math.sqrt(8)
    W_O = torch.randn(16, 8, **f64) / 4
    c = 0.25 if scaled else 1.0
    for b in range(5):
        Wq = W_Q.clone().requires_grad_()
        s = c * (x_q[b] @ Wq) @ (x_k[b] @ W_K).T                  # (1, S)
        s.retain_grad()
        logits = (torch.softmax(s, -1) @ v[b]) @ W_O
        logits.retain_grad()
        torch.nn.functional.cross_entropy(logits, y[b:b + 1], reduction="sum").backward()
        np.testing.assert_allclose(r["W_Q"][b], float(Wq.grad.norm()), rtol=1e-10)
        np.testing.assert_allclose(r["scores"][b], float(s.grad.norm()), rtol=1e-10)
        np.testing.assert_allclose(r["logits"][b], float(logits.grad.norm()), rtol=1e-10)


def test_gradient_path_unscaled_vanishes_only_behind_the_softmax():
    med = {s: {k: float(np.median(v)) for k, v in training.gradient_path(1024, scaled=s).items()}
           for s in (True, False)}
    assert 0.5 < med[False]["logits"] / med[True]["logits"] < 2
    assert med[False]["scores"] < 1e-3 * med[True]["scores"] and med[False]["W_Q"] < 1e-2 * med[True]["W_Q"]


# --------------------------------------------------------------------------- grids of learning rates and variants
_GRID_ARMS = [training.Arm(0.01), training.Arm(0.003, scale=1.0), training.Arm(0.01, qk_init=2.0),
              training.Arm(0.01, qk_lr=3.0), training.Arm(0.003)]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("d_k", [64, 1024])
def test_train_grid_equals_one_at_a_time_runs_bit_for_bit(optimizer, d_k):
    """Every (arm, seed) of a grid equals the same model trained alone: the sweep's table relies on it."""
    kw = dict(steps=12, batch_size=16, optimizer=optimizer)
    grid = training.train_grid(d_k, [3, 0], _GRID_ARMS, **kw)
    assert len(grid) == len(_GRID_ARMS) and all(len(row) == 2 for row in grid)
    for arm, row in zip(_GRID_ARMS, grid):
        for r in row:
            assert (r.lr, r.scale, r.qk_init, r.qk_lr) == (arm.lr, arm.scale, arm.qk_init, arm.qk_lr)
            alone = training.train_grid(d_k, [r.seed], [arm], **kw)[0][0]
            for name in ("loss", "grad_q", "grad_k", "entropy", "accuracy"):
                np.testing.assert_array_equal(getattr(r, name), getattr(alone, name))
            for p, q in zip(r.model.parameters(), alone.model.parameters()):
                assert torch.equal(p, q)
    # train_seeds is the grid of one plain arm
    seeds_run = training.train_seeds(d_k, [3, 0], scale=1.0, lr=0.003, **kw)
    for r, g in zip(seeds_run, grid[1]):
        np.testing.assert_array_equal(r.loss, g.loss)


def _plain_pytorch_loop(d_k, seed, arm, optimizer, steps, batch_size):
    """One model, PyTorch's own optimiser with two parameter groups, no batching over models."""
    m = training.AttentionRetriever(32, d_k, 8, scale=arm.scale, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        m.W_Q.mul_(arm.qk_init)
        m.W_K.mul_(arm.qk_init)
    groups = [{"params": [m.W_Q, m.W_K], "lr": arm.lr * arm.qk_lr}, {"params": [m.E, m.W_O, m.b_O], "lr": arm.lr}]
    opt = torch.optim.Adam(groups) if optimizer == "adam" else torch.optim.SGD(groups)
    g = torch.Generator().manual_seed(seed + training.DATA_SEED_OFFSET)
    losses = []
    for _ in range(steps):
        b = training.make_retrieval_batch(batch_size, generator=g)
        loss = torch.nn.functional.cross_entropy(m(b), b.target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), m


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_train_grid_matches_a_plain_pytorch_loop(optimizer):
    """Against an unbatched loop written from the model and torch.optim alone.

    To float tolerance, not bit for bit: the grid's batched matrix products round differently from
    the unbatched ones. Scaled arms at d_k = 64, where training is not sensitive to rounding.
    """
    arms = [training.Arm(0.01), training.Arm(0.01, qk_init=2.0, qk_lr=3.0)]
    grid = training.train_grid(64, [1], arms, steps=20, batch_size=16, optimizer=optimizer)
    for arm, row in zip(arms, grid):
        ref, m = _plain_pytorch_loop(64, 1, arm, optimizer, 20, 16)
        np.testing.assert_allclose(row[0].loss, ref, rtol=2e-4)
        torch.testing.assert_close(row[0].model.W_Q, m.W_Q, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("optimizer, lr", [("adam", 0.01), ("sgd", 0.1)])
def test_unscaled_equivalent_trains_like_the_unscaled_model(optimizer, lr):
    """Exercise `ex-tuning-init`'s algebra: the scaled model with both factors learns what the unscaled one does.

    To float tolerance (Adam's ε and rounding differ between the two coordinates); each factor alone
    gives a different run, so the check can fail.
    """
    d_k, kw = 256, dict(steps=15, batch_size=32, optimizer=optimizer)
    eq = training.unscaled_equivalent(d_k, optimizer)
    assert eq.qk_init == pytest.approx(d_k ** 0.25)
    assert eq.qk_lr == pytest.approx(d_k ** 0.5 if optimizer == "sgd" else d_k ** 0.25)
    arms = [training.Arm(lr, scale=1.0), training.Arm(lr, qk_init=eq.qk_init, qk_lr=eq.qk_lr),
            training.Arm(lr, qk_init=eq.qk_init), training.Arm(lr, qk_lr=eq.qk_lr)]
    unscaled, both, start_only, step_only = (row[0] for row in training.train_grid(d_k, [0], arms, **kw))
    np.testing.assert_allclose(both.loss, unscaled.loss, rtol=5e-3)
    np.testing.assert_allclose(both.entropy, unscaled.entropy, rtol=5e-3, atol=1e-5)
    for one in (start_only, step_only):                  # measured: 0.19 to 0.48 nats apart
        assert np.max(np.abs(one.loss - unscaled.loss)) > 0.1


def test_arm_and_grid_reject_bad_input():
    with pytest.raises(ValueError, match="lr"):
        training.Arm(0.0)
    with pytest.raises(TypeError, match="lr"):
        training.Arm("0.01")
    with pytest.raises(ValueError, match="qk_init"):
        training.Arm(0.01, qk_init=-1.0)
    with pytest.raises(ValueError, match="qk_lr"):
        training.Arm(0.01, qk_lr=float("inf"))
    with pytest.raises(ValueError, match="scale"):
        training.Arm(0.01, scale=0.0)
    with pytest.raises(ValueError, match="arms"):
        training.train_grid(8, [0], [], steps=2)
    with pytest.raises(TypeError, match="arms"):
        training.train_grid(8, [0], 0.01, steps=2)
    with pytest.raises(ValueError, match="repeat"):
        training.train_grid(8, [1, 1], [0.01], steps=2)
    with pytest.raises(ValueError, match="optimizer"):
        training.train_grid(8, [0], [0.01], steps=2, optimizer="rmsprop")
    with pytest.raises(ValueError, match="d_k"):
        training.unscaled_equivalent(0, "adam")
    with pytest.raises(ValueError, match="optimizer"):
        training.unscaled_equivalent(64, "lion")


def test_batch_stream_gives_the_same_runs_bit_for_bit():
    """Drawing the batches once and reusing them must change nothing (the `training` chapter reuses one stream)."""
    arms = [training.Arm(0.01), training.Arm(0.003, scale=1.0)]
    stream = training.batch_stream([2, 0], 10, batch_size=16)
    assert stream.steps == 10 and stream.keys[0].shape == (2, 16, 16, 32)
    for d_k in (8, 64):
        with_stream = training.train_grid(d_k, [2, 0], arms, steps=8, batch_size=16, optimizer="adam", data=stream)
        drawn = training.train_grid(d_k, [2, 0], arms, steps=8, batch_size=16, optimizer="adam")
        for row_a, row_b in zip(with_stream, drawn):
            for a, b in zip(row_a, row_b):
                np.testing.assert_array_equal(a.loss, b.loss)
                np.testing.assert_array_equal(a.grad_q, b.grad_q)
    with pytest.raises(ValueError, match="drawn for"):
        training.train_grid(8, [0, 2], arms, steps=8, batch_size=16, data=stream)     # other seed order
    with pytest.raises(ValueError, match="drawn for"):
        training.train_grid(8, [2, 0], arms, steps=11, batch_size=16, data=stream)    # more steps
    with pytest.raises(ValueError, match="drawn for"):
        training.train_grid(8, [2, 0], arms, steps=8, batch_size=32, data=stream)
    with pytest.raises(TypeError, match="BatchStream"):
        training.train_grid(8, [2, 0], arms, steps=8, batch_size=16, data=[1, 2])


def _run(loss, seed=0):
    return training.TrainResult(d_k=4, scale=None, optimizer="sgd", seed=seed, loss=np.asarray(loss, float),
                                accuracy=np.zeros(len(loss)), grad_q=np.zeros(len(loss)),
                                grad_k=np.zeros(len(loss)), entropy=np.zeros(len(loss)))


def test_median_steps_and_final_loss_over_seeds_known_values():
    # losses that cross 1 nat (window 1) at steps 2, 4 and never (censored at len = 6)
    runs = [_run([3, 2, 0.5, 0.5, 0.5, 0.5]), _run([3, 3, 3, 3, 0.2, 0.2]), _run([3] * 6)]
    assert [r.steps_to(1.0, window=1) for r in runs] == [2, 4, 6]
    assert training.median_steps(runs, 1.0, window=1) == 4.0
    assert training.median_final_loss(runs, last=2) == 0.5      # medians of 0.5, 0.2, 3
    with pytest.raises(TypeError, match="non-empty sequence of TrainResult"):
        training.median_steps([], 1.0)
    with pytest.raises(TypeError, match="non-empty sequence of TrainResult"):
        training.median_final_loss([[1, 2]])


def test_stuck_means_confident_on_a_wrong_key():
    stats = {"max_weight": np.array([0.995, 0.995, 0.5, 0.999]),
             "match_weight": np.array([0.001, 0.995, 0.001, 0.02])}
    # 0: confident, wrong key -> stuck; 1: confident on the right key; 2: not confident; 3: 2 % on the right key
    assert training.stuck(stats).tolist() == [True, False, False, False]
    assert training.stuck(stats, weight=0.9).tolist() == [True, False, False, True]
    with pytest.raises(ValueError, match="no \\['match_weight'\\]"):
        training.stuck({"max_weight": np.ones(2)})
    with pytest.raises(ValueError, match="between 0.5 and 1"):
        training.stuck(stats, weight=1.0)


def test_top_share_known_values():
    x = np.arange(1, 21, dtype=float)                  # 1..20, total 210
    assert training.top_share(x, 0.1) == (20 + 19) / 210
    assert training.top_share(np.ones(50), 0.1) == 0.1
    assert training.top_share(x, 1.0) == 1.0
    for bad in (np.array([]), np.array([1.0, -1.0]), np.ones((2, 2))):
        with pytest.raises(ValueError, match="non-empty 1-d array"):
            training.top_share(bad)
    with pytest.raises(ValueError, match="no entry at all"):
        training.top_share(np.ones(5), 0.1)


def test_all_tokens_are_the_keys_then_the_query():
    b = training.make_retrieval_batch(3, n_keys=5, d_in=4, generator=torch.Generator().manual_seed(0))
    x = training.all_tokens(b)
    assert x.shape == (3, 6, 4)
    assert torch.equal(x[:, :5], b.keys) and torch.equal(x[:, 5:], b.query)


def test_score_stats_against_a_numpy_pair_by_pair_count():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    w_q, w_k = torch.randn(3, 5, generator=g, dtype=torch.float64), torch.randn(3, 5, generator=g, dtype=torch.float64)
    X, Q, K = x.numpy(), w_q.numpy(), w_k.numpy()
    other = [X[b, i] @ Q @ K.T @ X[b, j] / math.sqrt(5) for b in range(2) for i in range(4) for j in range(4) if i != j]
    own = [X[b, i] @ Q @ K.T @ X[b, i] / math.sqrt(5) for b in range(2) for i in range(4)]
    sd, self_mean = training.score_stats(w_q, w_k, x)
    assert math.isclose(sd, np.std(other, ddof=1), rel_tol=1e-12)          # torch's std is the n-1 one
    assert math.isclose(self_mean, np.mean(own), rel_tol=1e-12)
    with pytest.raises(ValueError, match=r"\(d_in, d_k\) = \(3, d_k\)"):
        training.score_stats(w_q[:2], w_k[:2], x)


def test_qk_retrieval_loss_is_minus_log_of_pytorchs_attention_weight_on_the_copied_key():
    b = training.make_retrieval_batch(6, n_keys=7, d_in=4, generator=torch.Generator().manual_seed(2),
                                      dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    w_q, w_k = torch.randn(4, 8, generator=g, dtype=torch.float64), torch.randn(4, 8, generator=g, dtype=torch.float64)
    eye = torch.eye(7, dtype=torch.float64).expand(6, 7, 7)            # values: one-hot, so out = weights
    weights = torch.nn.functional.scaled_dot_product_attention(b.query @ w_q, b.keys @ w_k, eye)[:, 0]
    want = -torch.log(weights[torch.arange(6), b.index]).mean()
    assert torch.allclose(training.qk_retrieval_loss(w_q, w_k, b), want, atol=1e-12)
    with pytest.raises(TypeError, match="torch tensors"):
        training.qk_retrieval_loss(w_q.numpy(), w_k, b)


def test_seed_bootstrap_ratio_known_values_and_an_independent_enumeration():
    import itertools
    import statistics

    # two seeds: slow crosses at steps 2 and 4, fast at 1 and 1 -> draws (0,0) 2, (0,1) 3, (1,0) 3, (1,1) 4
    slow = [_run([3, 3, 0.5, 0.5, 0.5, 0.5]), _run([3, 3, 3, 3, 0.5, 0.5])]
    fast = [_run([3, 0.5, 0.5, 0.5, 0.5, 0.5]), _run([3, 0.5, 0.5, 0.5, 0.5, 0.5])]
    lo, hi = training.seed_bootstrap_ratio(slow, fast, 1.0, level=0.9, window=1)
    assert (lo, hi) == pytest.approx((2.15, 3.85))      # numpy's linear quantiles of [2, 3, 3, 4]
    # three seeds, against itertools and statistics (another way to enumerate the 27 draws)
    slow3 = [_run([3] * k + [0.5] * (6 - k)) for k in (2, 3, 5)]
    fast3 = [_run([3] * k + [0.5] * (6 - k)) for k in (1, 2, 1)]
    s = [r.steps_to(1.0, window=1) for r in slow3]
    f = [r.steps_to(1.0, window=1) for r in fast3]
    ratios = sorted(statistics.median([s[i] for i in d]) / statistics.median([f[i] for i in d])
                    for d in itertools.product(range(3), repeat=3))
    lo, hi = training.seed_bootstrap_ratio(slow3, fast3, 1.0, level=0.5, window=1)
    assert lo == pytest.approx(float(np.quantile(ratios, 0.25))) and hi == pytest.approx(float(np.quantile(ratios, 0.75)))
    assert lo <= training.median_steps(slow3, 1.0, window=1) / training.median_steps(fast3, 1.0, window=1) <= hi
    with pytest.raises(ValueError, match="one result per seed each"):
        training.seed_bootstrap_ratio(slow3, fast, 1.0)
    with pytest.raises(ValueError, match="level must be"):
        training.seed_bootstrap_ratio(slow, fast, 1.0, level=90)
    with pytest.raises(ValueError, match="at most 6"):
        training.seed_bootstrap_ratio([slow[0]] * 7, [fast[0]] * 7, 1.0)


def test_score_step_is_one_adam_step_of_pytorch_in_score_space():
    """score_step against a plain torch.optim.Adam step of one model, M = c W_Q W_Kᵀ computed here."""
    d_k, seed, lr = 64, 2, 0.01
    arms = [training.Arm(lr), training.Arm(lr, scale=1.0), training.Arm(lr, qk_init=2.0, qk_lr=3.0)]
    got = training.score_step(d_k, [seed], arms)
    data = training.batch_stream([seed], 1, batch_size=64)
    batch = training.RetrievalBatch(data.query[0][0][:, None], data.keys[0][0], data.labels[0][0], None, None)
    for i, arm in enumerate(arms):
        m = training.AttentionRetriever(32, d_k, 8, scale=arm.scale, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            m.W_Q.mul_(arm.qk_init)
            m.W_K.mul_(arm.qk_init)
        c = 1 / math.sqrt(d_k) if arm.scale is None else 1.0
        M0 = (m.W_Q @ m.W_K.T).detach() * c
        opt = torch.optim.Adam([{"params": [m.W_Q, m.W_K], "lr": lr * arm.qk_lr},
                                {"params": [m.E, m.W_O, m.b_O], "lr": lr}])
        torch.nn.functional.cross_entropy(m(batch), data.target[0][0]).backward()
        opt.step()
        M1 = (m.W_Q @ m.W_K.T).detach() * c
        assert got["step"][i, 0] == pytest.approx((M1 - M0).norm().item(), rel=1e-4)
        assert got["start"][i, 0] == pytest.approx(M0.norm().item(), rel=1e-6)
    # the unscaled model's first step is about √d_k times the scaled one's (each weight moves by about lr)
    assert 0.7 * math.sqrt(d_k) < got["step"][1, 0] / got["step"][0, 0] < 1.3 * math.sqrt(d_k)
