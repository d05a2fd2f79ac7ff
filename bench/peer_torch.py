#!/usr/bin/env python3
"""PyTorch peers on the GPU, measured in the same run as bench_gpu_kernels and
bench_gemm_cuda: cuBLAS GEMM (torch.matmul), scaled-dot-product attention,
the Add + LayerNorm + GELU block (eager), a device-to-device copy, and an
empty-kernel launch with and without CUDA Graph replay. CUDA events, warm-up,
medians. Prints Markdown tables.

--only tuner: the peers of the tuner's bench models (bench/models/gemm1024.xir,
conv3x3c.xir): torch.matmul f32 1024 (cuBLAS) and F.conv2d 64->64 3x3 on 56x56
(cuDNN, benchmark mode), TF32 off, GPU time and wall time per call (ms).

Usage: peer_torch.py [--quick] [--only attention|gemm|tuner] [--head-dim D]
"""
import statistics
import sys
import time


def timed(fn, runs=20, warmup=3, wall=False):
    """Median GPU time of fn in seconds (CUDA events); with wall, also the
    median wall time of the call up to its end event."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times, walls = [], []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        a.record()
        fn()
        b.record()
        b.synchronize()
        walls.append(time.perf_counter() - t0)
        times.append(a.elapsed_time(b) * 1e-3)
    return (statistics.median(times), statistics.median(walls)) if wall else statistics.median(times)


def tuner_peers(torch, F):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    x, y = torch.randn(1024, 1024, device=dev), torch.randn(1024, 1024, device=dev)
    g, w = timed(lambda: x @ y, runs=200, warmup=20, wall=True)
    print(f"torch.matmul f32 1024 (cuBLAS, no TF32): gpu {g * 1e3:.4f} ms wall {w * 1e3:.4f} ms")
    i, k = torch.randn(1, 64, 56, 56, device=dev), torch.randn(64, 64, 3, 3, device=dev)
    g, w = timed(lambda: F.conv2d(i, k, padding=1), runs=200, warmup=20, wall=True)
    print(f"F.conv2d f32 64->64 56x56 3x3 (cuDNN, benchmark, no TF32): gpu {g * 1e3:.4f} ms wall {w * 1e3:.4f} ms")


def main():
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch: {e}", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch: no CUDA device", file=sys.stderr)
        return 1
    quick = "--quick" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1:][:1] if "--only" in sys.argv else []
    only_attention, only_gemm = only == ["attention"], only == ["gemm"]
    dev = torch.device("cuda")
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    if only == ["tuner"]:
        tuner_peers(torch, F)
        return 0

    print("\n| GEMM (torch.matmul, cuBLAS) | n | TFLOP/s |\n| --- | --- | --- |")
    for name, dt, tf32 in () if only_attention else (("bf16", torch.bfloat16, False), ("f16", torch.float16, False),
                           ("f32", torch.float32, False), ("tf32", torch.float32, True))[:2 if only_gemm else 4]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in ((1024,) if quick else (4096, 8192)):
            a = torch.randn(n, n, device=dev, dtype=dt)
            b = torch.randn(n, n, device=dev, dtype=dt)
            t = timed(lambda: torch.matmul(a, b), runs=10)
            print(f"| {name} | {n} | {2 * n ** 3 / t / 1e12:.1f} |")
    torch.backends.cuda.matmul.allow_tf32 = False

    if only_gemm:
        return 0
    d = int(sys.argv[sys.argv.index("--head-dim") + 1]) if "--head-dim" in sys.argv else 128
    print(f"\n| attention (SDPA, bf16, B4 H32 D{d}) | S | mask | TFLOP/s |\n| --- | --- | --- | --- |")
    for s in ((256,) if quick else (1024, 4096)):
        q, k, v = (torch.randn(4, 32, s, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True):
            t = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), runs=10)
            flops = 4 * 4 * 32 * s * s * d * (0.5 if causal else 1.0)
            print(f"| | {s} | {'causal' if causal else 'full'} | {flops / t / 1e12:.1f} |")

    if only_attention:
        return 0
    rows, cols = (1024, 1024) if quick else (16384, 4096)
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    r = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    g = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    bb = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    t = timed(lambda: F.gelu(F.layer_norm(x + r, (cols,), g, bb, 1e-5)))
    tensor = rows * cols * 2
    src = torch.empty(tensor * 4, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    tc = timed(lambda: dst.copy_(src))
    copy_bw = 2 * tensor * 4 / tc
    print(f"\n| Add + LayerNorm + GELU, bf16 {rows}x{cols}, eager | GB/s | / copy |\n| --- | --- | --- |")
    print(f"| bytes moved (x, res, y) | {3 * tensor / t / 1e9:.0f} | {100 * 3 * tensor / t / copy_bw:.1f}% |")
    print(f"| effective (one read, one write) | {2 * tensor / t / 1e9:.0f} | {100 * 2 * tensor / t / copy_bw:.1f}% |")
    print(f"| device-to-device copy (read + write) | {copy_bw / 1e9:.0f} | 100% |")

    # Launch overhead: 64 tiny kernels, plain and replayed from a CUDA Graph.
    y = torch.zeros(64, device=dev)

    def chain():
        for _ in range(64):
            y.add_(1.0)
    tp = timed(chain, runs=50)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    tg = timed(graph.replay, runs=50)
    print("\n| 64 tiny kernels (y.add_) | per kernel us |\n| --- | --- |")
    print(f"| eager launches | {tp / 64 * 1e6:.2f} |\n| CUDA Graph replay | {tg / 64 * 1e6:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
