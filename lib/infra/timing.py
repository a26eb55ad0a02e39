"""Timing and peak memory for the benchmarks of the `speed` chapter and ``benchmarks/bench.py``.

Both time candidates the same way, so the code lives here once:

- :func:`time_interleaved` runs every candidate once per round, in a fresh seeded random order,
  after a short pause, until a time budget is spent; it returns every candidate's times.  A busy
  machine then slows all candidates alike, and no candidate always follows the same neighbour
  (whose lingering worker threads could slow it the same way every round).
- :func:`peak_bytes` is the peak memory that ``tracemalloc`` traces while a function runs.  NumPy
  reports its buffers to ``tracemalloc``; PyTorch's allocator does not, so use it on NumPy code.

Pure Python and NumPy: importing this module imports neither torch nor matplotlib.
"""
from __future__ import annotations

import math
import time
import tracemalloc
from typing import Callable, Mapping

import numpy as np

from .checks import positive_int

__all__ = ["time_interleaved", "best_times", "peak_bytes", "peak_mib"]


def time_interleaved(fns: Mapping[str, Callable[[], object]], *, min_rounds: int = 5,
                     max_rounds: int = 60, budget_s: float = 2.0, pause_s: float = 0.02,
                     seed: int = 0, warmup: bool = True, clock: Callable[[], float] = time.perf_counter,
                     sleep: Callable[[float], None] = time.sleep) -> dict[str, np.ndarray]:
    """Time every candidate once per round, interleaved, and return ``{name: times in seconds}``.

    Each round runs all candidates in a new random order (``np.random.default_rng(seed)``: the
    same orders on every run), each after a pause of ``pause_s`` seconds, so that the worker
    threads of the library that ran before (OpenMP, OpenBLAS) have stopped spinning.  Rounds
    continue while fewer than ``min_rounds`` are done, or while the budget of ``budget_s``
    seconds (counted from the first timed round) is not spent, and never beyond ``max_rounds``.
    Every array returned has one entry per round.  ``warmup`` calls each candidate once first
    (allocator, thread pool and first-call costs).  ``clock`` and ``sleep`` are for tests.
    """
    if not fns:
        raise ValueError("time_interleaved needs at least one candidate")
    for name, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"candidate {name!r} is not callable")
    min_rounds = positive_int("min_rounds", min_rounds)
    max_rounds = positive_int(f"max_rounds (at least min_rounds, {min_rounds})", max_rounds, minimum=min_rounds)
    if not (budget_s >= 0 and math.isfinite(budget_s)) or not (pause_s >= 0 and math.isfinite(pause_s)):
        raise ValueError(f"budget_s and pause_s must be finite and >= 0; got {budget_s!r}, {pause_s!r}")
    names = list(fns)
    if warmup:
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {n: [] for n in names}
    order_rng = np.random.default_rng(seed)
    rounds, t_start = 0, clock()
    while rounds < max_rounds and (rounds < min_rounds or clock() - t_start < budget_s):
        for i in order_rng.permutation(len(names)):
            name = names[i]
            if pause_s:
                sleep(pause_s)
            t0 = clock()
            fns[name]()
            times[name].append(clock() - t0)
        rounds += 1
    return {n: np.array(t) for n, t in times.items()}


def best_times(times: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The fastest time of each candidate, ``{name: seconds}``: the least disturbed run."""
    return {n: float(np.min(t)) for n, t in times.items()}


def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak memory, in bytes, that ``tracemalloc`` traces while ``fn()`` runs.

    Starts tracing for the call and stops it afterwards, also when ``fn`` raises.  Counts what
    NumPy and Python allocate during the call (arrays that already existed are not counted).
    """
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peak_mib(fn: Callable[[], object]) -> float:
    """:func:`peak_bytes` in MiB (2**20 bytes)."""
    return peak_bytes(fn) / 2**20
