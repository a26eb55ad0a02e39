"""lib.exercises: each exercise's self-check against an independent computation of its answer.

One section per chapter, as in lib/exercises.py. Each test checks that the right answer passes, that
the typical wrong answers fail with the verdict the chapter promises, and that junk input gets a
sentence, not an exception.
"""
import numpy as np
import pytest

import lib

# --- chapter 1 -----------------------------------------------------------------------------------


# --- chapter 2 -----------------------------------------------------------------------------------


# --- chapter 3 -----------------------------------------------------------------------------------


# --- chapter 4 -----------------------------------------------------------------------------------


# --- chapter 5 -----------------------------------------------------------------------------------

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
    # the first entry (tau = 1) is the saturated value of chapter 5, not a rounding artefact
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


# --- chapter 6 -----------------------------------------------------------------------------------

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


# --- chapter 7 -----------------------------------------------------------------------------------


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
