"""Self-checks: right answers pass, wrong ones get a verdict with a reason, never a traceback."""
import numpy as np

import lib


def test_right_answer():
    v = lib.check_array([[0.5, 0.5]], np.array([[0.5, 0.5]]), name="weights")
    assert v.ok and bool(v) and "matches" in v.message and str(v).startswith("✅")


def test_missing_answer():
    v = lib.check_array(None, [1.0])
    assert not v.ok and "no answer yet" in v.message


def test_wrong_shape_and_transpose():
    v = lib.check_array(np.ones((3, 2)), np.ones((2, 3)), name="scores")
    assert not v.ok and "transpose" in v.message
    v = lib.check_array(np.ones(4), np.ones((2, 3)))
    assert not v.ok and "shape (4,)" in v.message


def test_factor_of_sqrt2_is_named():
    v = lib.check_array([1.0, 2.0], np.array([1.0, 2.0]) / np.sqrt(2), name="scaled")
    assert not v.ok and "factor of √2" in v.message and "index (1,)" in v.message


def test_not_numbers_and_nan():
    assert "could not read" in lib.check_array("abc", [1.0]).message
    assert "NaN" in lib.check_array([np.nan], [1.0]).message


def test_number():
    assert lib.check_number(0.25, 0.25).ok
    assert not lib.check_number([1, 2], 0.25).ok
    assert "0.3" in lib.check_number(0.3, 0.25).message
