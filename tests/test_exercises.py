"""lib.exercises: each exercise's self-check against an independent computation of its answer.

One section per chapter, as in lib/feedback/exercises.py. Each test checks that the right answer passes, that
the typical wrong answers fail with the verdict the chapter promises, and that junk input gets a
sentence, not an exception.
"""
import numpy as np
import pytest

import lib

# --- formula -------------------------------------------------------------------------------------

def _ch01_inputs():
    # the worked example of the `formula` chapter
    Q = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    return Q, K, V


def _torch_attention(Q, K, V, scale=None):
    torch = pytest.importorskip("torch")
    out = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (Q, K, V)), scale=scale)
    return out.numpy()


def test_ch01_attention_output_right_answer_against_torch():
    Q, K, V = _ch01_inputs()
    right = _torch_attention(Q, K, V)
    v = lib.check_attention_output(right, Q, K, V)
    assert v.ok and v.mistake is None
    assert lib.check_attention_output(right.tolist(), Q, K, V).ok          # a list is fine
    assert lib.check_attention_output(right.astype(np.float32), Q, K, V).ok  # so is float32
    torch = pytest.importorskip("torch")
    assert lib.check_attention_output(torch.from_numpy(right), Q, K, V).ok


def test_ch01_attention_output_typical_mistakes():
    Q, K, V = _ch01_inputs()
    d_k = Q.shape[1]

    def sm(s, axis=-1):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    scores = Q @ K.T
    cases = {
        "unscaled": _torch_attention(Q, K, V, scale=1.0),
        "divided_by_dk": _torch_attention(Q, K, V, scale=1.0 / d_k),
        "wrong_axis": sm(scores / 2, axis=0) @ V,
        "weights_only": sm(scores / 2),
        "no_softmax": scores / 2 @ V,
        "rounded": _torch_attention(Q, K, V).round(2),
        "wrong_shape": np.zeros((2, 3)),
        "wrong_value": _torch_attention(Q, K, V) + 0.1,
        "missing": None,
        "unreadable": "two point five",
        "not_finite": np.full((3, 2), np.nan),
    }
    for code, answer in cases.items():
        v = lib.check_attention_output(answer, Q, K, V)
        assert not v.ok and v.mistake == code, (code, v)
        assert isinstance(v.message, str) and v.message


def test_ch01_attention_output_bad_inputs_raise():
    Q, K, V = _ch01_inputs()
    with pytest.raises(ValueError, match="d_k"):
        lib.check_attention_output(None, Q, K[:, :3], V)
    with pytest.raises(ValueError, match="rows"):
        lib.check_attention_output(None, Q, K, V[:2])
    with pytest.raises(ValueError, match="axes"):
        lib.check_attention_output(None, Q[0], K, V)
    with pytest.raises(TypeError):
        lib.check_attention_output(None, "Q", K, V)
    with pytest.raises(ValueError, match="NaN"):
        lib.check_attention_output(None, Q * np.nan, K, V)


# --- test-scores ---------------------------------------------------------------------------------

def test_ch02_rescaled_totals():
    t = lib.exam_totals(500, 30, mean=50.0, sd=10.0, seed=30)
    right = t / 30 ** 0.5                                      # independent: T / sqrt(n)
    assert lib.check_rescaled_totals(right, t, 30).ok
    assert lib.check_rescaled_totals(list(right), t, 30).ok
    cases = {
        "unscaled": t,
        "divided_by_n": t / 30,
        "centred": (t - t.mean()) / 30 ** 0.5,
        "measured_sd": t / t.std(),
        "wrong_factor": t / (10 * 30 ** 0.5),
        "wrong_shape": right[:10],
        "wrong_value": right + np.arange(500),
        "missing": None,
        "unreadable": {"a": 1},
    }
    for code, answer in cases.items():
        v = lib.check_rescaled_totals(answer, t, 30)
        assert not v.ok and v.mistake == code, (code, v)
    with pytest.raises(ValueError, match="n_subjects"):
        lib.check_rescaled_totals(right, t, 0)
    with pytest.raises(TypeError, match="n_subjects must be an int"):   # a float is the wrong kind
        lib.check_rescaled_totals(right, t, 2.5)
    with pytest.raises(ValueError, match="axes"):
        lib.check_rescaled_totals(right, t.reshape(20, 25), 30)


# --- variance ------------------------------------------------------------------------------------

def _ch03_draw(seed, n=20_000, d=128, layout="rows"):
    """The simulation of Exercise `ex-variance-code` written independently of lib, in the layouts a learner uses."""
    rng = np.random.default_rng(seed)
    if layout == "rows":
        q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        return (q * k).sum(axis=-1)
    if layout == "one_draw":
        qk = rng.standard_normal((2, n, d))
        return np.einsum("nd,nd->n", qk[0], qk[1])
    q, k = rng.standard_normal((d, n)), rng.standard_normal((d, n))
    return (q * k).sum(axis=0)


# seeds whose variance is inside three standard errors in every layout (seed 0 in the columns layout
# is one of the about 3 in 1000 that are not: test_ch03_scaled_variance_band_is_three_standard_errors)
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("layout", ["rows", "one_draw", "columns"])
def test_ch03_scaled_variance_checks_the_simulation(seed, layout):
    s = _ch03_draw(seed, layout=layout)
    assert lib.check_scaled_variance(s / np.sqrt(128), 128, 20_000, seed=seed).ok
    assert lib.check_scaled_variance(s, 128, 20_000, seed=seed).mistake == "unscaled"
    assert lib.check_scaled_variance(s / 128, 128, 20_000, seed=seed).mistake == "divided_by_dk"
    # the same scores claimed for another seed are not this seed's
    assert lib.check_scaled_variance(s / np.sqrt(128), 128, 20_000, seed=seed + 10).mistake == "not_this_seed"


def test_ch03_scaled_variance_cannot_be_passed_without_simulating():
    # the theory value typed in (the chapter states it), or a number close to it
    for typed in (1, 1.0, 0.99, [1.0], np.float64(1.0)):
        v = lib.check_scaled_variance(typed, 128, 20_000, seed=0)
        assert not v.ok and v.mistake == "one_number", typed
    # an array with the right variance that is not the simulation
    fake = np.random.default_rng(0).standard_normal(20_000)
    assert lib.check_scaled_variance(fake, 128, 20_000, seed=0).mistake == "not_this_seed"
    assert lib.check_scaled_variance(np.ones(20_000), 128, 20_000, seed=0).mistake == "not_this_seed"
    for junk, code in ((None, "missing"), ("1.0x", "unreadable"), (np.ones(100), "wrong_shape"),
                       (np.full(20_000, np.nan), "not_finite")):
        v = lib.check_scaled_variance(junk, 128, 20_000, seed=0)
        assert not v.ok and v.mistake == code, (junk, v)
    with pytest.raises(ValueError, match="d_k"):
        lib.check_scaled_variance(np.ones(100), 0, 100, seed=0)
    with pytest.raises(ValueError, match="n must"):
        lib.check_scaled_variance(np.ones(1), 8, 1, seed=0)
    with pytest.raises(TypeError, match="seed must be an int"):          # None is the wrong kind
        lib.check_scaled_variance(np.ones(100), 8, 100, seed=None)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        lib.check_scaled_variance(np.ones(100), 8, 100, seed=-1)


def test_ch03_scaled_variance_band_is_three_standard_errors():
    # small simulations scatter: find seeds just inside and outside three standard errors, with the
    # standard error written independently of lib.simulate: sd(s²) = sqrt(2/(n-1) + kappa/n), kappa = 6/d
    n, d = 50, 2
    se = np.sqrt(2 / (n - 1) + (6 / d) / n)
    inside = outside = None
    for seed in range(3000):
        s = _ch03_draw(seed, n=n, d=d) / np.sqrt(d)
        z = abs(s.var() - 1) / se
        if inside is None and 2.5 < z < 2.95:
            inside = seed
        if outside is None and z > 3.05:
            outside = seed
        if inside is not None and outside is not None:
            break
    assert inside is not None and outside is not None
    assert lib.check_scaled_variance(_ch03_draw(inside, n=n, d=d) / np.sqrt(d), d, n, seed=inside).ok
    v = lib.check_scaled_variance(_ch03_draw(outside, n=n, d=d) / np.sqrt(d), d, n, seed=outside)
    assert not v.ok and v.mistake == "unlucky_seed"


# --- practice ------------------------------------------------------------------------------------

def test_ch04_scores_shape():
    Q, K = np.zeros((2, 3)), np.ones((5, 3))
    assert lib.check_scores_shape((2, 5), Q, K).ok and lib.check_scores_shape([2, 5], Q, K).ok
    assert lib.check_scores_shape((Q @ K.T).shape, Q, K).ok
    for wrong, code in (((5, 2), "transposed"), ((2, 3), "shape_of_q"), ((5, 3), "shape_of_q"),
                        ((2, 2), "wrong_shape"), (10, "not_a_shape"), ((2.0, 5.0), "not_a_shape"),
                        (None, "missing")):
        v = lib.check_scores_shape(wrong, Q, K)
        assert not v.ok and v.mistake == code, wrong
    with pytest.raises(ValueError):
        lib.check_scores_shape((2, 5), Q, np.ones((5, 4)))


def test_ch04_naive_softmax():
    s = [800.0, 802.0]
    assert lib.check_naive_softmax([float("nan"), float("nan")], s).ok
    assert lib.check_naive_softmax(np.array([np.nan, np.nan]), s).ok
    e = math.exp(-2)
    assert lib.check_naive_softmax([e / (1 + e), 1 / (1 + e)], s).mistake == "safe_softmax"
    assert lib.check_naive_softmax([0.119, 0.881], s).mistake == "safe_softmax"
    assert lib.check_naive_softmax([float("inf")] * 2, s).mistake == "exponentials"
    assert lib.check_naive_softmax([0.0, 1.0], s).mistake == "wrong_value"
    assert lib.check_naive_softmax([1.0], s).mistake == "wrong_shape"
    # scores small enough not to overflow: the naive formula is right, and so is its value
    assert lib.check_naive_softmax([e / (1 + e), 1 / (1 + e)], [0.0, 2.0]).ok


def test_ch04_float16_dk():
    lim = float(np.log(np.finfo(np.float16).max))     # ≈ 11.09: where exp overflows float16
    t = (lim / 3) ** 2                                 # ≈ 13.7
    assert 13 < t < 14
    for right in (t, round(t, 1), 14, 16):
        assert lib.check_float16_dk(right, lim).ok, right
    assert lib.check_float16_dk(lim / 3, lim).mistake == "no_square"
    assert lib.check_float16_dk(lim ** 2, lim).mistake == "one_sd"
    assert lib.check_float16_dk(32, lim).mistake == "wrong_value"
    assert lib.check_float16_dk(None, lim).mistake == "missing"


def test_ch04_predictions():
    q3 = np.array([1.0, 0.0, 2.0])
    K3 = np.array([[2.0, 1.0, 1.0], [1.0, -1.0, 0.0], [0.0, 2.0, 1.0]])
    assert lib.check_doubled_scores(4, 4, q3, K3).ok
    assert lib.check_doubled_scores(9, 9, q3, K3, c=3.0).ok
    assert lib.check_doubled_scores(2, 2, q3, K3).mistake == "times_c"
    assert lib.check_doubled_scores(4, 1, q3, K3).mistake == "scaled_unchanged"
    assert lib.check_doubled_scores(4, 2, q3, K3).mistake == "times_c"
    assert lib.check_doubled_scores(8, 8, q3, K3).mistake == "wrong_value"
    assert lib.check_sd_growth(10, 1, 3, 300).ok and lib.check_sd_growth(math.sqrt(100), 1.0, 3, 300).ok
    assert lib.check_sd_growth(100, 1, 3, 300).mistake == "variance_ratio"
    assert lib.check_sd_growth(10, 10, 3, 300).mistake == "scaled_grows"
    assert lib.check_sd_growth(3, 1, 3, 300).mistake == "wrong_value"
    assert lib.check_weight_over_dk(0.125, 8, 512).ok and lib.check_weight_over_dk(1 / 8, 8, 512).ok
    # measured: 99 % of the weights of 8 unit-variance scores divided by 512 are within 20 % of 1/8, the pass band
    z = np.random.default_rng(0).standard_normal((1000, 8)) * np.sqrt(512) / 512
    w = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    assert np.quantile(np.abs(w - 1 / 8), 0.99) < 0.2 / 8
    assert lib.check_weight_over_dk(1.0, 8, 512).mistake == "one_hot"
    assert lib.check_weight_over_dk(0.3, 8, 512).mistake == "wrong_value"



# --- softmax-saturation --------------------------------------------------------------------------

def _temperature_reference(z, tau):
    """Independent: the derivative of softmax(z/τ) with respect to z by PyTorch autograd, largest entry."""
    import torch

    J = torch.autograd.functional.jacobian(lambda t: torch.softmax(t / tau, dim=-1),
                                           torch.tensor(z, dtype=torch.float64))
    return float(J.abs().max())


CH5_Z, CH5_TAUS = [10.0, 0.0, 0.0], [1.0, 2.0, 5.0, 10.0, 50.0]


def test_temperature_jacobian_right_answer_passes():
    right = np.array([_temperature_reference(CH5_Z, t) for t in CH5_TAUS])
    v = lib.check_temperature_jacobian(right, CH5_Z, CH5_TAUS)
    assert v.ok and v.mistake is None
    assert lib.check_temperature_jacobian(list(right), CH5_Z, CH5_TAUS).ok          # a list is fine
    assert lib.check_temperature_jacobian(right * (1 + 5e-4), CH5_Z, CH5_TAUS).ok    # 3 digits suffice
    # one temperature as a plain number
    assert lib.check_temperature_jacobian(_temperature_reference(CH5_Z, 4.0), CH5_Z, 4.0).ok


def test_temperature_jacobian_names_the_typical_mistakes():
    right = np.array([_temperature_reference(CH5_Z, t) for t in CH5_TAUS])
    taus = np.array(CH5_TAUS)
    cases = {"no_factor": right * taus, "times_tau": right * taus ** 2,
             "no_temperature": np.full(5, right[0]), "rounded": np.round(right, 3),
             "wrong_shape": right[:3], "wrong_value": right * 1.5}
    for mistake, answer in cases.items():
        v = lib.check_temperature_jacobian(answer, CH5_Z, CH5_TAUS)
        assert not v.ok and v.mistake == mistake, (mistake, v)
    # the first entry (tau = 1) is the saturated value of the `softmax-saturation` chapter, not a rounding artefact
    assert abs(right[0] - 2 * np.exp(-10) / (1 + 2 * np.exp(-10)) ** 2) < 1e-9


@pytest.mark.parametrize("junk", [None, ..., "0.03", [1, "a"], np.array([np.nan] * 5), {"a": 1}])
def test_temperature_jacobian_never_raises_on_the_answer(junk):
    v = lib.check_temperature_jacobian(junk, CH5_Z, CH5_TAUS)
    assert not v.ok and isinstance(v.message, str) and v.message


@pytest.mark.parametrize("z, taus", [([1.0], [1.0]), ([1.0, np.nan], [1.0]), ([1.0, 0.0], [0.0]),
                                     ([1.0, 0.0], [-1.0]), ([1.0, 0.0], []), ("ab", [1.0]),
                                     ([1.0, 0.0], [[1.0]])])
def test_temperature_jacobian_rejects_bad_inputs(z, taus):
    with pytest.raises((ValueError, TypeError)):
        lib.check_temperature_jacobian(0.1, z, taus)


# --- training ------------------------------------------------------------------------------------

def _steps_reference(loss, threshold, window):
    """Independent: a plain loop over the windows."""
    for t in range(window - 1, len(loss)):
        if np.mean(loss[t - window + 1:t + 1]) < threshold:
            return t
    return len(loss)


def test_steps_to_threshold_check_against_a_loop_and_lib_training():
    from lib import training

    rng = np.random.default_rng(0)
    for _ in range(20):
        loss = np.cumsum(rng.normal(-0.02, 0.1, 120)) + 2.0
        want = _steps_reference(loss, 1.0, 10)
        assert want == training.steps_to_threshold(loss, 1.0, 10)
        assert lib.check_steps_to_threshold(want, loss, 1.0, 10).ok
        assert lib.check_steps_to_threshold(np.int64(want), loss).ok
        assert lib.check_steps_to_threshold(float(want), loss).ok
    never = np.full(30, 2.0)
    assert lib.check_steps_to_threshold(30, never).ok           # never reached: len(loss)


def test_steps_to_threshold_check_names_the_typical_mistakes():
    loss = np.r_[np.full(20, 2.0), np.full(20, 0.5)]           # first window mean < 1 ends at step 26
    assert _steps_reference(loss, 1.0, 10) == 26
    cases = {"window_start": 17, "no_average": 20, "off_by_one": 27, "not_integer": 26.5,
             "wrong_shape": [26, 27], "wrong_value": 35, "missing": None, "unreadable": "26"}
    for mistake, answer in cases.items():
        v = lib.check_steps_to_threshold(answer, loss)
        assert not v.ok and v.mistake == mistake, (mistake, v)


@pytest.mark.parametrize("loss, kw", [([], {}), ([[1.0, 2.0]], {}), ([1.0, np.inf], {}), ("ab", {}),
                                      ([1.0, 2.0], {"window": 3}), ([1.0, 2.0], {"window": 0}),
                                      ([1.0, 2.0], {"threshold": "1"}), ([1.0, 2.0], {"threshold": np.nan})])
def test_steps_to_threshold_check_rejects_bad_inputs(loss, kw):
    with pytest.raises((ValueError, TypeError)):
        lib.check_steps_to_threshold(5, loss, **kw)


# --- tuning --------------------------------------------------------------------------------------

class _Run:
    """A stand-in for a training result: steps to a loss below 1 nat and below 0.3 nats."""

    def __init__(self, to1, to03):
        self._steps = {1.0: to1, 0.3: to03}

    def steps_to(self, threshold):
        return self._steps[threshold]


def _sweep():
    # medians to 0.3 nats: scaled 80 (lr 0.01), 40 (0.03); unscaled 150 (0.003), 200 (0.01)
    # medians to 1 nat:    scaled 30, 20;               unscaled 60, 90
    return {(None, 0.01): [_Run(30, 80)] * 3, (None, 0.03): [_Run(19, 39), _Run(20, 40), _Run(25, 41)],
            (1.0, 0.003): [_Run(60, 150)] * 3, (1.0, 0.01): [_Run(90, 200)] * 3}


def test_best_against_best_check_known_values():
    res = _sweep()
    # each at its own fastest rate: unscaled 150 (at 0.003) / scaled 40 (at 0.03) = 3.75
    assert lib.check_best_against_best(3.75, res, threshold=0.3).ok
    assert lib.check_best_against_best(np.float64(3.75), res, threshold=0.3).ok
    assert lib.check_best_against_best(60 / 20, res).ok                 # 1 nat: 60 / 20 = 3
    cases = {"inverted": 40 / 150, "shared_rate": 200 / 80, "threshold_one": 3.0, "wrong_value": 4.0,
             "wrong_shape": [3.75, 1.0], "missing": None}
    for mistake, answer in cases.items():
        v = lib.check_best_against_best(answer, res, threshold=0.3)
        assert not v.ok and v.mistake == mistake, (mistake, v)


@pytest.mark.parametrize("results, kw", [([], {}), ({}, {}), ({(None, 0.1): [_Run(1, 1)]}, {}),
                                         ({("s", 0.1): [_Run(1, 1)], (1.0, 0.1): [_Run(1, 1)]}, {}),
                                         ({(None, 0.1): [1], (1.0, 0.1): [_Run(1, 1)]}, {}),
                                         (_sweep(), {"threshold": 0}), (_sweep(), {"threshold": "1"})])
def test_best_against_best_check_rejects_bad_inputs(results, kw):
    with pytest.raises((ValueError, TypeError)):
        lib.check_best_against_best(1.0, results, **kw)


# --- caveats -------------------------------------------------------------------------------------

def _moments_by_quadrature(d_k, rho, sq, sk):
    """Raw E[q·k] and Var(q·k) by Gauss-Hermite quadrature over one correlated normal pair (no Isserlis)."""
    from numpy.polynomial.hermite_e import hermegauss

    z, w = hermegauss(40)                      # ∫ f(z) e^{-z²/2} dz ≈ Σ w f(z)
    w = w / w.sum()
    z1, z2 = np.meshgrid(z, z, indexing="ij")
    ww = np.outer(w, w)
    x = sq * z1                                # (x, y) jointly normal with correlation rho
    y = sk * (rho * z1 + np.sqrt(1 - rho**2) * z2)
    m1, m2 = np.sum(ww * x * y), np.sum(ww * (x * y) ** 2)
    return d_k * m1, d_k * (m2 - m1**2)


@pytest.mark.parametrize("d_k, rho, sq, sk", [(256, 0.1, 1.0, 1.0), (64, -0.3, 1.5, 0.5), (1, 0.9, 2.0, 1.0)])
def test_correlated_moments_right_answer_passes(d_k, rho, sq, sk):
    mean, var = _moments_by_quadrature(d_k, rho, sq, sk)
    scaled = np.array([mean / np.sqrt(d_k), var / d_k])
    v = lib.check_correlated_score_moments(scaled, d_k, rho, sigma_q=sq, sigma_k=sk)
    assert v.ok and v.mistake is None, v
    assert lib.check_correlated_score_moments(np.round(scaled, 3), d_k, rho, sigma_q=sq, sigma_k=sk).ok
    assert lib.check_correlated_score_moments([mean, var], d_k, rho, sigma_q=sq, sigma_k=sk, scaled=False).ok
    torch = pytest.importorskip("torch")
    assert lib.check_correlated_score_moments(torch.tensor(scaled), d_k, rho, sigma_q=sq, sigma_k=sk).ok
    assert lib.check_correlated_score_moments([list(scaled)], d_k, rho, sigma_q=sq, sigma_k=sk).ok


def test_correlated_moments_agree_with_a_simulation():
    rng = np.random.default_rng(0)
    d_k, rho, n = 256, 0.1, 50_000
    q = rng.standard_normal((n, d_k))
    k = rho * q + np.sqrt(1 - rho**2) * rng.standard_normal((n, d_k))
    z = np.einsum("nd,nd->n", q, k) / np.sqrt(d_k)
    mean, var = _moments_by_quadrature(d_k, rho, 1.0, 1.0)
    assert abs(z.mean() - mean / np.sqrt(d_k)) < 4 * np.sqrt(var / d_k / n)
    assert abs(z.var() / (var / d_k) - 1) < 0.03


# The exercise of the `caveats` chapter: d_k = 256, ρ = 0.1, unit standard deviations: right [1.6, 1.01].
_EX = dict(d_k=256, rho=0.1)


@pytest.mark.parametrize("answer, mistake", [
    ([0.1 * 256, 256 * 1.01], "unscaled"),                         # forgot the scale
    ([0.0, 1.0], "assumed_independence"),                          # ρ = 0
    ([1.6, 1.0], "forgot_rho_squared"),                            # variance without 1 + ρ²
    ([25.6, 256.0], "unscaled_forgot_rho_squared"),
    ([1.6, 1.1], "rho_not_squared"),
    ([1.6, 256 * 1.01 / 16], "variance_divided_by_sqrt_dk"),
    ([0.1, 1.01], "mean_divided_by_dk"),
    ([1.6, np.sqrt(1.01)], "standard_deviation"),
    ([1.01, 1.6], "swapped"),
    ([1.6, 2.0], "wrong_variance"),
    ([1.5, 1.01], "wrong_mean"),
    ([3.0, 3.0], "wrong_both"),
])
def test_correlated_moments_name_the_typical_mistakes(answer, mistake):
    v = lib.check_correlated_score_moments(answer, **_EX)
    assert not v.ok and v.mistake == mistake, v
    assert "1.6" not in v.message and "1.01" not in v.message      # the verdict never gives the answer away


def test_correlated_moments_raw_question_and_its_mistake():
    v = lib.check_correlated_score_moments([1.6, 1.01], 256, 0.1, scaled=False)
    assert not v.ok and v.mistake == "scaled"
    assert lib.check_correlated_score_moments([25.6, 258.56], 256, 0.1, scaled=False).ok


def test_correlated_moments_independence_hint_only_when_it_differs():
    # With ρ = 0 the independent answer is the right one: it must pass, not be called a mistake.
    assert lib.check_correlated_score_moments([0.0, 1.0], 64, 0.0).ok


@pytest.mark.parametrize("answer, mistake", [
    (None, "missing"), (..., "missing"), ("abc", "unreadable"), ([1.6], "wrong_shape"),
    ([1.6, 1.01, 0.0], "wrong_shape"), ([np.nan, 1.0], "not_finite"), ([[1, 2], [3]], "unreadable"),
])
def test_correlated_moments_junk_gets_a_sentence(answer, mistake):
    v = lib.check_correlated_score_moments(answer, **_EX)
    assert not v.ok and v.mistake == mistake and v.message


@pytest.mark.parametrize("kwargs, exc", [
    (dict(d_k=0, rho=0.1), ValueError), (dict(d_k=2.5, rho=0.1), TypeError), (dict(d_k=True, rho=0.1), TypeError),
    (dict(d_k=16, rho=1.5), ValueError), (dict(d_k=16, rho="a"), TypeError),
    (dict(d_k=16, rho=0.1, sigma_q=0.0), ValueError), (dict(d_k=16, rho=0.1, sigma_k=float("nan")), ValueError),
])
def test_correlated_moments_bad_inputs_raise(kwargs, exc):
    with pytest.raises(exc, match="self-check set-up"):
        lib.check_correlated_score_moments([1.0, 1.0], **kwargs)



# --- multi-head ----------------------------------------------------------------------------------

def _torch_count(d_model, h, bias=True):
    """Independent count: PyTorch's own multi-head layer and lib's, parameter by parameter."""
    torch = pytest.importorskip("torch")
    theirs = sum(p.numel() for p in torch.nn.MultiheadAttention(d_model, h, bias=bias).parameters())
    ours = sum(p.numel() for p in lib.MultiHeadAttention(d_model, h, bias=bias).parameters())
    assert ours == theirs
    return ours


@pytest.mark.parametrize("d_model, h, bias", [(768, 12, True), (768, 24, True), (32, 4, False), (12, 3, True)])
def test_mha_params_right_answer_is_the_counted_one(d_model, h, bias):
    n = _torch_count(d_model, h, bias)
    v = lib.check_mha_params(n, d_model, h, bias=bias)
    assert v.ok and v.mistake is None and f"{n:,d}" in v.message, v.message
    assert lib.check_mha_params(float(n), d_model, h, bias=bias).ok
    assert not lib.check_mha_params(n + 1, d_model, h, bias=bias).ok


@pytest.mark.parametrize("answer, mistake, words", [
    (4 * 768**2, "no_biases", "not their bias vectors"),
    (3 * 768**2 + 3 * 768, "three_projections", "W_O is a d_model × d_model matrix too"),
    (3 * 768**2, "three_projections", "add W_O and the four bias vectors"),
    (4 * 768 * 64 + 4 * 64, "one_head", "one head"),
    (2_000_000, None, "You have 2,000,000, which is too small"),
    (12, None, "h does not appear"),
])
def test_mha_params_typical_wrong_answers(answer, mistake, words):
    v = lib.check_mha_params(answer, 768, 12)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message
    assert "2,362,368" not in v.message and "2362368" not in v.message      # never gives the answer away


def test_mha_params_without_biases():
    n = _torch_count(32, 4, bias=False)
    assert lib.check_mha_params(4 * 32**2, 32, 4, bias=False).ok and n == 4 * 32**2
    assert lib.check_mha_params(4 * 32**2 + 4 * 32, 32, 4, bias=False).mistake == "extra_biases"


@pytest.mark.parametrize("answer", [None, ..., "abc", [1, 2], np.nan, {"a": 1}, 1 + 2j, True])
def test_mha_params_never_raises_on_the_answer(answer):
    v = lib.check_mha_params(answer, 768, 12)
    assert isinstance(v, lib.Verdict) and not v.ok and v.message


def test_mha_params_bad_inputs_raise_named_errors():
    with pytest.raises(ValueError, match="not divisible"):
        lib.check_mha_params(1, 768, 10)
    with pytest.raises(TypeError, match="d_model must be an int"):
        lib.check_mha_params(1, 768.0, 12)
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        lib.check_mha_params(1, 768, 0)
    with pytest.raises(TypeError, match="bias must be True or False"):
        lib.check_mha_params(1, 768, 12, bias=1)



# --- speed ----------------------------------------------------------------------------------------
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import chapters  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"


def _solution_text(notebook, label):
    """The text of the dropdown solution of exercise ``label`` in ``notebook`` (book/<notebook>)."""
    cells = chapters.cells(BOOK / notebook)
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    m = re.search(r"```\{solution\} " + re.escape(label) + r"\n(.*?)\n```", md, re.S)
    assert m, f"no solution for {label} in {notebook}"
    return m.group(1)


def _x9():
    return np.array([2.0, -1.0, 0.5, 7.0, 3.0, 6.5, -2.0, 9.0])  # the exercise's row


def _lse_reference(x):
    return float(np.log(np.sum(np.exp(np.asarray(x, dtype=np.longdouble)))))  # no shift: longdouble holds it


def test_check_logsumexp_right_answer():
    x = _x9()
    assert lib.check_logsumexp(_lse_reference(x), x).ok
    # the online computation in blocks of 3, written independently of lib
    m, l = -np.inf, 0.0
    for j0 in range(0, x.size, 3):
        b = x[j0:j0 + 3]
        mn = max(m, b.max())
        l = l * math.exp(m - mn) + np.exp(b - mn).sum()
        m = mn
    assert lib.check_logsumexp(m + math.log(l), x).ok
    assert lib.check_logsumexp(np.float32(m + math.log(l)), x).ok is False  # float32 rounding is not 1e-9


def test_check_logsumexp_typical_mistakes():
    x = _x9()
    # forgot to rescale the old sum when the maximum grew
    m, l = -np.inf, 0.0
    for j0 in range(0, x.size, 3):
        b = x[j0:j0 + 3]
        mn = max(m, b.max())
        l = l + np.exp(b - mn).sum()
        m = mn
    v = lib.check_logsumexp(m + math.log(l), x)
    assert not v.ok and v.mistake == "no_rescale" and "exp(m_old - m_new)" in v.message
    v = lib.check_logsumexp(float(x.max()), x)
    assert not v.ok and v.mistake == "max_only"
    v = lib.check_logsumexp(_lse_reference(x) + 0.5, x)
    assert not v.ok and "m + log(l)" in v.message


@pytest.mark.parametrize("junk", [None, ..., "ten", [1.0, 2.0], float("nan")])
def test_check_logsumexp_junk_gets_a_sentence(junk):
    v = lib.check_logsumexp(junk, _x9())
    assert not v.ok and isinstance(v.message, str) and v.message


def test_check_logsumexp_bad_inputs_raise():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        lib.check_logsumexp(1.0, [])
    with pytest.raises(ValueError, match="finite"):
        lib.check_logsumexp(1.0, [1.0, np.inf])
    with pytest.raises(TypeError, match="row of numbers"):
        lib.check_logsumexp(1.0, ["a", object()])
    with pytest.raises(ValueError, match="block"):
        lib.check_logsumexp(1.0, [1.0], block=0)


def test_speed_hand_solutions_state_the_right_numbers():
    # Exercise `ex-speed-cost`: 16 heads, d_k = 128, L = S = 8192, bfloat16
    text = _solution_text("speed.md", "ex-speed-cost")
    import torch

    scores = torch.empty(16, 8192, 8192, dtype=torch.bfloat16, device="meta")  # no memory is used
    nbytes = scores.numel() * scores.element_size()
    assert f"2^{{{int(math.log2(nbytes))}}}" in text and f"{nbytes / 2**30:g}$ GiB" in text
    gflop = 16 * 4 * 8192 * 8192 * 128 / 1e9
    assert "about 550 GFLOP" in text and abs(gflop - 550) < 1
    assert f"{gflop * 1e9:.1e}".startswith("5.5e+11") and "5.5 \\times 10^{11}" in text
    # Exercise `ex-speed-hand`: the online step from (1, 0) to (3)
    text = _solution_text("speed.md", "ex-speed-hand")
    assert f"{math.exp(-2):.3f}" in text  # the rescaling factor 0.135
    new_l = math.exp(-2) * (1 + math.exp(-1)) + 1
    assert f"{new_l:.3f}" in text and abs(new_l - sum(math.exp(s - 3) for s in (1, 0, 3))) < 1e-12


# --- real-code -----------------------------------------------------------------------------------
def _softmax_rows(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_check_attention_function_passes_correct_implementations():
    def split(q, k, v):  # the exercise's answer, written independently of lib
        s = q.shape[-1] ** -0.25
        return _softmax_rows((q * s) @ (k * s).T) @ v

    def plain(q, k, v):
        return _softmax_rows(q @ k.T / math.sqrt(q.shape[-1])) @ v

    for fn in (split, plain):
        v = lib.check_attention_function(fn)
        assert v.ok and "0.25" in v.message


@pytest.mark.parametrize("fn, mistake", [
    (lambda q, k, v: _softmax_rows(q @ k.T) @ v, "missing"),
    (lambda q, k, v: _softmax_rows(q @ k.T) / math.sqrt(q.shape[-1]) @ v, "after_softmax"),
    (lambda q, k, v: _softmax_rows(q @ k.T / q.shape[-1]) @ v, "double"),
    (lambda q, k, v: _softmax_rows((q * q.shape[-1] ** -0.25) @ k.T) @ v, "custom"),  # only one side scaled
    (lambda q, k, v: _softmax_rows(q @ k.T / q.shape[-1] ** 1 / 2) @ v, "precedence"),
    (lambda q, k, v: _softmax_rows(q @ k.T / math.sqrt(v.shape[-1])) @ v, "value_width"),
    (lambda q, k, v: q @ k.T, "error"),  # wrong output shape
])
def test_check_attention_function_names_the_mistake(fn, mistake):
    v = lib.check_attention_function(fn)
    assert not v.ok and v.mistake == mistake and v.message


@pytest.mark.parametrize("junk", [None, ..., 3, "softmax(q k / sqrt(d)) v"])
def test_check_attention_function_junk_gets_a_sentence(junk):
    v = lib.check_attention_function(junk)
    assert not v.ok and isinstance(v.message, str) and v.message


def test_check_attention_function_with_a_custom_rule_and_torch():
    import torch.nn.functional as F

    mup = lambda d: 1 / d  # noqa: E731
    good = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1 / q.size(-1))  # noqa: E731
    bad = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    assert lib.check_attention_function(good, expected=mup, backend="torch", batch_dims=(1, 1)).ok
    v = lib.check_attention_function(bad, expected=mup, backend="torch")
    assert not v.ok and v.mistake == "default"


def test_real_code_hand_solutions_state_the_right_numbers():
    # Exercise `ex-real-code-double`: q pre-scaled by head_dim ** -0.5 and SDPA's default on top, head_dim = 128
    text = _solution_text("real_code.md", "ex-real-code-double")
    import torch
    import torch.nn.functional as F

    q, k, v = (torch.randn(1, 1, 4, 128, generator=torch.Generator().manual_seed(i), dtype=torch.float64)
               for i in range(3))
    twice = F.scaled_dot_product_attention(q * 128 ** -0.5, k, v)    # the exercise's bug, measured
    assert torch.allclose(twice, F.scaled_dot_product_attention(q, k, v, scale=1 / 128))
    assert "$1/128$" in text and "scale=1.0" in text
    # Exercise `ex-real-code-mup`: 8/d_k against 1/sqrt(d_k)
    text = _solution_text("real_code.md", "ex-real-code-mup")
    assert lib.mup_scale(64) == pytest.approx(1 / math.sqrt(64))      # lib's muP scale, 8/d_k
    assert "8/64 = 1/8 = 1/\\sqrt{64}" in text
    assert f"{lib.mup_scale(128):.4f}" in text and f"{1 / math.sqrt(128):.4f}" in text
    assert (1 / math.sqrt(128)) / (8 / 128) == pytest.approx(math.sqrt(2)) and "\\sqrt 2" in text
    # Exercise `ex-real-code-f16`: float16 overflow of q·k = d_k r² at d_k = 64, raw and with q pre-scaled
    text = _solution_text("real_code.md", "ex-real-code-f16")
    f16_max = float(np.finfo(np.float16).max)
    r_raw, r_pre = math.sqrt(f16_max / 64), math.sqrt(f16_max / 8)
    assert f"{f16_max / 64:.1f}" in text and f"{r_raw:.1f}" in text
    assert f"{f16_max / 8:.0f}" in text and f"{r_pre:.1f}" in text
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(64 * (r_raw + 0.1) ** 2))
    assert np.isfinite(np.float16(64 * (r_raw - 0.1) ** 2))
    score = float(np.dot(np.full(64, 1000.0), np.full(64, 1000.0)))        # q·k with |q_i| = |k_i| = 1000
    assert f"{score:.1e}" == "6.4e+07" and "6.4 \\times 10^{7}" in text
    import torch

    assert f"{torch.finfo(torch.bfloat16).max:.1e}" == "3.4e+38" and "3.4 \\times 10^{38}" in text


# --- casebook ----------------------------------------------------------------------------------------

def test_case_recipe_accepts_the_checkpoints_and_names_what_is_missing():
    """gpt-oss's sliding layer, scaled down: sinks per head, 4 query heads on 2 key heads, a window of 8."""
    sinks = (0.5, -1.0, 2.0, 0.0)
    right = lib.Recipe(sinks=sinks, n_heads=4, q_per_kv=2, window=8)
    assert lib.check_case_recipe(right, "gpt-oss-sliding").ok
    v = lib.check_case_recipe(lib.Recipe(n_heads=4, q_per_kv=2), "gpt-oss-sliding")
    assert not v.ok and set(v.mistake.split("+")) == {"sinks", "window"}, v.message
    assert lib.check_case_recipe(lib.Recipe(sinks=sinks[::-1], n_heads=4, q_per_kv=2, window=8),
                                 "gpt-oss-sliding").mistake == "sinks"
    # DeepSeek-V2's base logit: q·k over 128 + 64 dimensions, divided by sqrt(192); equal ways to say it
    assert lib.check_case_recipe(lib.Recipe(scale=1 / math.sqrt(128 + 64), head_dim=192), "deepseek-v2").ok
    assert lib.check_case_recipe({"head_dim": 192}, "deepseek-v2").ok
    assert lib.check_case_recipe(lib.Recipe(scale=(5120 // 128) ** -0.5, head_dim=192), "deepseek-v2").mistake == "scale"
    assert lib.check_case_recipe(None, "deepseek-v2").mistake == "missing"
    assert lib.check_case_recipe({"scal": 1.0}, "deepseek-v2").mistake == "unreadable"
    with pytest.raises(ValueError, match="case must be one of"):
        lib.check_case_recipe(right, "gpt-5")


def _exact_weights(q, k, lse2):
    """The forward's weights, from torch's own softmax in float64 (the LSE is not needed)."""
    import torch  # noqa: PLC0415 - the torch tests of this file import it where they run

    return torch.softmax(q.double() @ k.double().T / math.sqrt(q.size(-1)), dim=-1)


def test_recomputed_weights_from_the_exact_softmax_pass_and_bf16_prescaling_fails():
    torch = pytest.importorskip("torch")
    assert lib.check_recomputed_weights(_exact_weights).ok
    c = 1 / math.log(2)

    def prescaled(q, k, lse2):   # FastVideo's backward before pull request 1730: K times scale·log2 e in bf16
        ks = (k * (q.size(-1) ** -0.5 * c)).bfloat16()
        return torch.exp2(q.float() @ ks.float().T - lse2[:, None])

    v = lib.check_recomputed_weights(prescaled)
    assert not v.ok and v.mistake == "grows_with_logit", v.message
    assert lib.check_recomputed_weights(lambda q, k, lse2: torch.ones(3)).mistake == "shape"
    assert lib.check_recomputed_weights(lambda q, k, lse2: 1 / 0).mistake == "error"
    assert lib.check_recomputed_weights(None).mistake == "missing"
