"""Time lib's attention against PyTorch on the same inputs, and measure peak memory (`make bench`).

For each sequence length L (d_k = d_v = 64, float32, batch × heads chosen so every L does a
similar amount of work) it times, interleaved round by round on the same arrays:

  numpy 2 matmuls     q·kᵀ and p·v alone: the matrix-multiply ceiling of the NumPy path
  numpy floor         the two products plus one exp pass over the scores: the NumPy path's floor
  lib numpy           lib.attention_fast on NumPy arrays (lib's fast path, the `speed` chapter)
  lib numpy reference lib.scaled_dot_product_attention on NumPy arrays (the formula as written)
  lib numpy blockwise lib.blockwise_attention on NumPy arrays (online softmax, key blocks)
  torch 2 matmuls     the matrix-multiply ceiling of the torch path
  torch explicit      softmax(q @ kᵀ · s) @ v written out in PyTorch
  torch SDPA          torch.nn.functional.scaled_dot_product_attention (fused)
  lib torch           lib.attention_fast on tensors (calls the fused SDPA)
  lib torch +weights  the same with return_weights=True (explicit math, weights kept)
  lib torch blockwise lib.blockwise_attention on tensors

and prints each one's best and median time, its throughput (4·L²·d_k FLOPs per head: the two
matrix products) and the target ratios.  Timings on a shared machine are noisy: every candidate
runs once per round, in a fresh random order, after a 20 ms pause (the worker threads of the library
that ran before spin for a while after each call and would steal its cores).  Each ratio is the
median over the rounds of (time of a / time of b) within a round: the two ran close together, so a
slow spell of the machine cancels, and the median drops the rounds that a burst of other work hit.
The ratio of the best times is printed beside it; on a quiet machine the two agree.  Then
tracemalloc measures the peak memory of the plain and the blockwise NumPy paths, up to L = 16384.
The timing loop and the memory probe are lib.timing's, the same ones the `speed` chapter uses.

Usage: python benchmarks/bench.py [--quick] [--lengths 128 512 ...] [--budget SECONDS]
The `speed` chapter explains the numbers.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
import lib  # noqa: E402
from lib.infra.timing import peak_bytes, time_interleaved  # noqa: E402  (shared with the `speed` chapter)

D_K = 64
# batch × heads per length: 4 × 8 heads up to L = 512, then fewer so each L does similar work
HEADS = {128: (4, 8), 256: (4, 8), 512: (4, 8), 1024: (2, 8), 2048: (1, 4), 4096: (1, 2)}
TARGETS = [  # (name, numerator, denominator, target ratio)
    ("lib numpy / numpy floor", "lib numpy", "numpy floor", 1.15),
    ("lib numpy / torch explicit", "lib numpy", "torch explicit", 1.10),
    ("lib torch / torch SDPA", "lib torch", "torch SDPA", 1.05),
    ("lib torch +weights / torch explicit", "lib torch +weights", "torch explicit", 1.10),
]
INFO_RATIOS = [
    ("torch explicit / torch SDPA", "torch explicit", "torch SDPA"),
    ("numpy floor / numpy 2 matmuls", "numpy floor", "numpy 2 matmuls"),
    ("lib numpy blockwise / lib numpy", "lib numpy blockwise", "lib numpy"),
    ("lib numpy reference / lib numpy", "lib numpy reference", "lib numpy"),
    ("lib torch blockwise / torch SDPA", "lib torch blockwise", "torch SDPA"),
]


def describe_machine(torch) -> str:
    lines = [f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__}, "
             f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}"]
    try:
        from threadpoolctl import threadpool_info  # optional

        for p in threadpool_info():
            lines.append(f"  BLAS: {p.get('internal_api')} {p.get('version')} threads={p.get('num_threads')} "
                         f"core={p.get('architecture')}")
    except ImportError:
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            lines.append(f"  numpy BLAS: {blas.get('name')} {blas.get('version')} (threadpoolctl not installed)")
        except Exception:  # noqa: BLE001 - very old numpy: any failure just means no BLAS line
            lines.append("  numpy BLAS: see numpy.show_config()")
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP_", "MKL_"))}
    lines.append(f"  environment: {env or 'no OPENBLAS_*/OMP_*/MKL_* variables'}"
                 + ("  (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE can slow NumPy's BLAS)"
                    if any(k in env for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")) else ""))
    return "\n".join(lines)


def candidates(L: int, torch):
    """The functions to time at length L, all on the same seeded inputs."""
    F = torch.nn.functional
    B, H = HEADS.get(L, (1, 2))
    rng = np.random.default_rng(L)
    q, k, v = (rng.standard_normal((B, H, L, D_K)).astype(np.float32) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    s = 1.0 / math.sqrt(D_K)
    kt, tkt = k.swapaxes(-1, -2), tk.transpose(-2, -1)

    def numpy_floor():
        p = np.matmul(q * np.float32(s), kt)
        np.exp(p, out=p)
        return np.matmul(p, v)

    fns = {
        "numpy 2 matmuls": lambda: np.matmul(np.matmul(q, kt), v),
        "numpy floor": numpy_floor,
        "lib numpy": lambda: lib.attention_fast(q, k, v),
        "lib numpy reference": lambda: lib.scaled_dot_product_attention(q, k, v),
        "lib numpy blockwise": lambda: lib.blockwise_attention(q, k, v),
        "torch 2 matmuls": lambda: (tq @ tkt) @ tv,
        "torch explicit": lambda: torch.softmax(tq @ tkt * s, dim=-1) @ tv,
        "torch SDPA": lambda: F.scaled_dot_product_attention(tq, tk, tv),
        "lib torch": lambda: lib.attention_fast(tq, tk, tv),
        "lib torch +weights": lambda: lib.attention_fast(tq, tk, tv, return_weights=True),
        "lib torch blockwise": lambda: lib.blockwise_attention(tq, tk, tv),
    }
    # the candidates must agree before their times mean anything
    ref = fns["torch SDPA"]().numpy()
    for name in ("lib numpy", "lib numpy reference", "lib numpy blockwise", "lib torch",
                 "lib torch blockwise"):
        out = fns[name]()
        out = out.numpy() if isinstance(out, torch.Tensor) else out
        err = float(np.max(np.abs(out - ref)))
        assert err < 1e-5, f"{name} differs from torch SDPA by {err:.2e} at L={L}"
    flops = 4.0 * B * H * L * L * D_K  # q·kᵀ and p·v: 2·L·S·d each, per head
    return fns, (B, H), flops


def ratio(times, a, b):
    """(median of the per-round ratios, ratio of the best times)."""
    return float(np.median(times[a] / times[b])), float(times[a].min() / times[b].min())


def run_timings(lengths, budget_per_length, torch, *, min_rounds=5, max_rounds=60):
    results = {}
    for L in lengths:
        fns, (B, H), flops = candidates(L, torch)
        times = time_interleaved(fns, min_rounds=min_rounds, max_rounds=max_rounds, budget_s=budget_per_length)
        results[L] = dict(times=times, B=B, H=H, flops=flops)
        n = len(next(iter(times.values())))
        print(f"\nL = {L}: batch {B} × {H} heads, d_k = {D_K}, float32, {n} interleaved rounds")
        print(f"  {'candidate':<22}{'best ms':>9}{'median ms':>11}{'GFLOP/s':>9}")
        for name, t in times.items():
            print(f"  {name:<22}{1e3 * t.min():>9.2f}{1e3 * np.median(t):>11.2f}{flops / t.min() / 1e9:>9.1f}")
        print(f"  {'ratio':<38}{'median':>8}{'best':>7}{'target':>8}")
        for label, a, b, target in TARGETS:
            med, best = ratio(times, a, b)
            flag = "ok" if med <= target else f"MISS by {100 * (med / target - 1):.0f}%"
            print(f"  {label:<38}{med:>8.3f}{best:>7.3f}{'≤ ' + format(target, '.2f'):>8}  {flag}")
        for label, a, b in INFO_RATIOS:
            med, best = ratio(times, a, b)
            print(f"  {label:<38}{med:>8.3f}{best:>7.3f}")
    return results


def run_memory(lengths_plain, lengths_block, block_size=lib.blockwise.DEFAULT_BLOCK_SIZE):
    print(f"\nPeak memory (tracemalloc), NumPy paths, one head, d_k = {D_K}, float32, block_size = {block_size}")
    print(f"  {'L':>6}{'L² scores':>12}{'plain':>12}{'blockwise':>12}{'blockwise s':>13}")
    rows = []
    for L in sorted(set(lengths_plain) | set(lengths_block)):
        rng = np.random.default_rng(L)
        q, k, v = (rng.standard_normal((L, D_K)).astype(np.float32) for _ in range(3))
        need = L * L * 4
        plain = peak_bytes(lambda: lib.scaled_dot_product_attention(q, k, v)) if L in lengths_plain else None
        t0 = time.perf_counter()
        blocked = peak_bytes(lambda: lib.blockwise_attention(q, k, v, block_size=block_size))
        secs = time.perf_counter() - t0
        rows.append((L, need, plain, blocked))
        mib = lambda b: f"{b / 2**20:,.1f} MiB"  # noqa: E731
        print(f"  {L:>6}{mib(need):>12}{(mib(plain) if plain else 'not run'):>12}{mib(blocked):>12}{secs:>12.2f}s")
    big = max(lengths_block)
    need_big = big * big * 4
    blocked_big = [r[3] for r in rows if r[0] == big][0]
    print(f"  at L = {big} the plain path would need at least {need_big / 2**30:.2f} GiB for one head's scores; "
          f"blockwise peaked at {blocked_big / 2**20:.1f} MiB ({need_big / blocked_big:.0f}× less)")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few seconds: L = 128 and 512, small memory run")
    ap.add_argument("--lengths", type=int, nargs="+", default=None)
    ap.add_argument("--budget", type=float, default=None, help="seconds of timing per length")
    args = ap.parse_args(argv)
    import torch

    lengths = args.lengths or ([128, 512] if args.quick else [128, 256, 512, 1024, 2048, 4096])
    budget = args.budget if args.budget is not None else (0.5 if args.quick else 15.0)
    print(describe_machine(torch))
    t0 = time.perf_counter()
    run_timings(lengths, budget, torch, min_rounds=2 if args.quick else 5)
    if args.quick:
        run_memory([1024], [1024, 2048])
    else:
        run_memory([1024, 4096], [1024, 4096, 16384])
    print(f"\nRatios: 'median' is the median over rounds of the ratio within a round (the target is judged "
          f"on it); 'best' divides the best times. Total {time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
