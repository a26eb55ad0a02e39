"""lib.timing: the interleaved timing loop and the tracemalloc probe shared by the `speed` chapter and bench.py."""
import tracemalloc

import numpy as np
import pytest

from lib import timing


class FakeClock:
    """A clock that advances only when a candidate runs (each call costs its own fixed time)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _candidates(clock, log):
    def make(name, cost):
        def fn():
            log.append(name)
            clock.now += cost
        return fn
    return {"a": make("a", 1.0), "b": make("b", 2.0), "c": make("c", 3.0)}


def test_every_candidate_once_per_round_in_a_seeded_order():
    clock, log = FakeClock(), []
    times = timing.time_interleaved(_candidates(clock, log), min_rounds=4, max_rounds=4, budget_s=0,
                                    clock=clock, sleep=lambda s: None, warmup=False)
    assert {n: list(t) for n, t in times.items()} == {"a": [1.0] * 4, "b": [2.0] * 4, "c": [3.0] * 4}
    rounds = [log[i:i + 3] for i in range(0, 12, 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)  # each once per round
    assert len({tuple(r) for r in rounds}) > 1  # the order changes between rounds
    log2, clock2 = [], FakeClock()
    timing.time_interleaved(_candidates(clock2, log2), min_rounds=4, max_rounds=4, budget_s=0, clock=clock2,
                            sleep=lambda s: None, warmup=False)
    assert log2 == log  # the same seed gives the same orders


def test_budget_min_and_max_rounds_and_warmup():
    clock, log = FakeClock(), []
    # each round costs 6 s of fake time; a 20 s budget allows rounds until 20 s have passed: 4 rounds
    times = timing.time_interleaved(_candidates(clock, log), min_rounds=2, max_rounds=50, budget_s=20.0,
                                    clock=clock, sleep=lambda s: None)
    assert len(times["a"]) == 4 and log[:3] == ["a", "b", "c"]  # warm-up calls first, in order
    clock, log = FakeClock(), []
    times = timing.time_interleaved(_candidates(clock, log), min_rounds=3, max_rounds=3, budget_s=1e9,
                                    clock=clock, sleep=lambda s: None, warmup=False)
    assert len(times["c"]) == 3  # max_rounds caps the budget
    times = timing.time_interleaved(_candidates(clock, []), min_rounds=5, budget_s=0, clock=clock,
                                    sleep=lambda s: None)
    assert len(times["b"]) == 5  # min_rounds even with no budget
    assert timing.best_times({"x": np.array([3.0, 1.0, 2.0])}) == {"x": 1.0}


def test_pause_before_every_call():
    clock, pauses = FakeClock(), []
    timing.time_interleaved(_candidates(clock, []), min_rounds=2, max_rounds=2, budget_s=0, clock=clock,
                            sleep=pauses.append, pause_s=0.02, warmup=False)
    assert pauses == [0.02] * 6


def test_real_clock_measures_something():
    times = timing.time_interleaved({"sum": lambda: sum(range(10_000))}, min_rounds=3, max_rounds=3,
                                    budget_s=0, pause_s=0)
    assert times["sum"].shape == (3,) and np.all(times["sum"] > 0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one"):
        timing.time_interleaved({})
    with pytest.raises(TypeError, match="not callable"):
        timing.time_interleaved({"x": 3})
    with pytest.raises(ValueError, match="min_rounds"):
        timing.time_interleaved({"x": lambda: 0}, min_rounds=0)
    with pytest.raises(ValueError, match="max_rounds"):
        timing.time_interleaved({"x": lambda: 0}, min_rounds=5, max_rounds=2)
    with pytest.raises(ValueError, match="budget_s"):
        timing.time_interleaved({"x": lambda: 0}, budget_s=float("inf"))


def test_peak_bytes_sees_numpy_buffers_and_stops_tracing():
    n = 2**20  # 8 MiB of float64
    peak = timing.peak_bytes(lambda: np.ones(n).sum())
    assert 8 * n <= peak < 8 * n + 2**20
    assert timing.peak_mib(lambda: np.ones(n).sum()) == pytest.approx(peak / 2**20, rel=0.1)
    assert not tracemalloc.is_tracing()
    with pytest.raises(ZeroDivisionError):
        timing.peak_bytes(lambda: 1 / 0)
    assert not tracemalloc.is_tracing()  # stopped even when the function raised
