#!/usr/bin/env python3
"""PyTorch peers of the tuner benchmarks (bench/models/gemm1024.xir and
conv3x3c.xir) on the GPU: torch.matmul (cuBLAS) and F.conv2d (cuDNN with
benchmark mode), f32 without TF32; GPU time (CUDA events) and wall time per
call, medians of 200 after 20 warm-up calls. Usage: peer_torch_ops.py"""
import time, statistics, torch, torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
def timed(fn, runs=200, warm=20):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    g, w = [], []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter(); a.record(); fn(); b.record(); b.synchronize()
        w.append((time.perf_counter() - t0) * 1e3); g.append(a.elapsed_time(b))
    return statistics.median(g), statistics.median(w)
x = torch.randn(1024, 1024, device="cuda"); y = torch.randn(1024, 1024, device="cuda")
print("torch.matmul f32 1024 (cuBLAS, no TF32): gpu %.4f ms wall %.4f ms" % timed(lambda: x @ y))
i = torch.randn(1, 64, 56, 56, device="cuda"); k = torch.randn(64, 64, 3, 3, device="cuda")
print("F.conv2d f32 64->64 56x56 3x3 (cuDNN, benchmark, no TF32): gpu %.4f ms wall %.4f ms" % timed(lambda: F.conv2d(i, k, padding=1)))
