"""On a CUDA machine: check lib's torch paths against the CPU result and time them against PyTorch.

    python benchmarks/gpu_check.py [--max-length 16384]

1. Correctness: lib.scaled_dot_product_attention (fused and +weights) and lib.blockwise_attention
   on CUDA, in float32 and bfloat16, with and without is_causal, against lib's NumPy path in
   float64 on the CPU.  Tolerances: float32 2e-3 absolute (CUDA matmuls may use TF32, 10-bit
   mantissa), bfloat16 3e-2 (8-bit mantissa: about 3 significant digits).
2. Speed: the same functions and torch.nn.functional.scaled_dot_product_attention, timed with CUDA
   events (median of several runs) for L = 512 … --max-length, d_k = 64, plus the peak GPU memory
   of each (torch.cuda.max_memory_allocated).  The explicit paths (+weights) are skipped where one
   (L, L) score matrix per head would not fit comfortably.

Where there is no CUDA device it prints "no CUDA device: nothing to check" and exits 0, so that
CI and CPU laptops can run it.  The `speed` chapter discusses the GPU path.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lib  # noqa: E402

NO_CUDA = "no CUDA device: nothing to check"
TOL = {"float32": 2e-3, "bfloat16": 3e-2}


def check_correctness(torch, device) -> list[str]:
    failures = []
    rng = np.random.default_rng(0)
    B, H, L, d = 2, 4, 300, 64  # L not a multiple of the block size
    q, k, v = (rng.standard_normal((B, H, L, d)) for _ in range(3))
    print(f"correctness: batch {B} × {H} heads, L = {L}, d_k = {d}; reference: lib NumPy float64 on the CPU")
    for causal in (False, True):
        ref = lib.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for dt_name in ("float32", "bfloat16"):
            dt = getattr(torch, dt_name)
            tq, tk, tv = (torch.from_numpy(a).to(device=device, dtype=dt) for a in (q, k, v))
            outs = {
                "lib fused": lib.scaled_dot_product_attention(tq, tk, tv, is_causal=causal),
                "lib +weights": lib.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                                 return_weights=True)[0],
                "lib blockwise": lib.blockwise_attention(tq, tk, tv, is_causal=causal, block_size=128),
            }
            for name, out in outs.items():
                assert out.device.type == "cuda", f"{name} left the GPU"
                err = float((out.float().cpu().double().numpy() - ref).__abs__().max())
                ok = err <= TOL[dt_name]
                print(f"  {name:<14} {dt_name:<9} causal={causal!s:<5} max |err| = {err:.2e}  "
                      f"(tolerance {TOL[dt_name]:.0e})  {'ok' if ok else 'FAIL'}")
                if not ok:
                    failures.append(f"{name} {dt_name} causal={causal}: {err:.2e}")
    return failures


def cuda_time_ms(torch, fn, reps=10):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def peak_mib(torch, fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def time_paths(torch, device, max_length: int):
    F = torch.nn.functional
    d, H = 64, 8
    free = torch.cuda.mem_get_info(device)[0]
    print(f"\nspeed: batch 1 × {H} heads, d_k = {d}; median of 10 runs (CUDA events); peak = extra GPU memory")
    L = 512
    while L <= max_length:
        for dt_name in ("float32", "bfloat16"):
            dt = getattr(torch, dt_name)
            g = torch.Generator(device=device).manual_seed(L)
            q, k, v = (torch.randn(1, H, L, d, generator=g, device=device, dtype=dt) for _ in range(3))
            s = 1 / math.sqrt(d)
            fns = {
                "torch SDPA": lambda: F.scaled_dot_product_attention(q, k, v),
                "lib fused": lambda: lib.scaled_dot_product_attention(q, k, v),
                "lib blockwise": lambda: lib.blockwise_attention(q, k, v, block_size=1024),
            }
            score_bytes = H * L * L * q.element_size()
            if 4 * score_bytes < free / 2:  # scores, exp, weights and a margin
                fns["torch explicit"] = lambda: torch.softmax(q @ k.transpose(-2, -1) * s, dim=-1) @ v
                fns["lib +weights"] = lambda: lib.scaled_dot_product_attention(q, k, v, return_weights=True)
            res = {n: (cuda_time_ms(torch, f), peak_mib(torch, f)) for n, f in fns.items()}
            base = res["torch SDPA"][0]
            line = "  ".join(f"{n} {t:.2f} ms ({t / base:.2f}×, {m:.0f} MiB)" for n, (t, m) in res.items())
            print(f"  L={L:<6} {dt_name:<9} {line}")
            del q, k, v
            torch.cuda.empty_cache()
        L *= 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="check and time lib's torch paths on CUDA")
    ap.add_argument("--max-length", type=int, default=16384)
    args = ap.parse_args(argv)
    try:
        import torch
    except ModuleNotFoundError:
        print(f"torch is not installed: {NO_CUDA}")
        return 0
    if not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    device = torch.device("cuda")
    print(lib.describe_device(device))
    failures = check_correctness(torch, device)
    time_paths(torch, device, args.max_length)
    if failures:
        print("FAILED:", *failures, sep="\n  ")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
