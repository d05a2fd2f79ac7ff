#!/usr/bin/env python3
"""The GEMMs of real transformer layers on the GPU machine: xcomp against
torch.matmul (cuBLASLt's heuristic algorithm with a workspace) in the same
script.

Shapes are those of the two models of bench/e2e_torch.py, Y[T, N] = X[T, K] W[K, N]
with T = batch x seq tokens:
  gpt2   d 768: QKV 2304, out-proj 768, MLP up 3072 / down (K 3072), LM head 50257
  llama  d 768: Q 768, K/V 256 (GQA, 4 of 12 heads), gate/up 2048, the MLP's
         silu(X Wg) * (X Wu) (two products and the SwiGLU), down (K 2048),
         LM head 32000
For each shape and precision an ONNX model of R independent copies of the
layer reading one X (R distinct float32 weights, at most 16 copies and 128 MB,
converted by --precision: so a fixed per-run cost is shared by R layers) is
compiled twice by `xcomp compile`: as a user gets it (the compile-time race
between the generated kernel and cuBLASLt keeps the faster) and with
--no-vendor-blas (generated kernels alone); each module is timed by `xcomp
bench --resident --json` (device time, median) / R. torch runs the same layer
(torch.matmul: cuBLASLt's heuristic algorithm with a workspace; F.silu and a
multiply for SwiGLU) 24 times over R weights in one CUDA graph (replayed, CUDA
events, median / 24), so neither side pays a launch from Python. Every xcomp
result is checked against torch's first layer (relative L2 at the
precision's bound) before it is reported.

Usage: gemm_layers.py --xcomp XCOMP [--tokens 512,4096] [--precision bf16,f16]
                      [--models gpt2,llama] [--out DIR]
Prints a Markdown table; raw numbers as JSON lines in DIR/gemm_layers.jsonl.
"""
import argparse
import json
import os
import subprocess
import sys

SHAPES = {
    "gpt2": [("QKV", 2304, 768), ("out-proj", 768, 768), ("MLP up", 3072, 768), ("MLP down", 768, 3072),
             ("LM head", 50257, 768)],
    "llama": [("Q / out-proj", 768, 768), ("K, V", 256, 768), ("gate, up", 2048, 768),
              ("gate + up + SwiGLU", 2048, 768), ("down", 768, 2048), ("LM head", 32000, 768)],
}
BOUND = {"bf16": 1.6e-2, "f16": 2e-3}


def torch_time(torch, x, ws, swiglu, reps=24, replays=15):
    """Median time of one layer: `reps` layers over the R weight copies,
    captured in one CUDA graph, replayed."""
    F = torch.nn.functional

    def layer(i):
        if swiglu:
            wg, wu = ws[i % len(ws)]
            return F.silu(torch.matmul(x, wg)) * torch.matmul(x, wu)
        return torch.matmul(x, ws[i % len(ws)])

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            layer(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [layer(i) for i in range(reps)]
    for _ in range(3):
        g.replay()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / reps)
    times.sort()
    return times[len(times) // 2], outs[0]


def model(path, t, n, k, ws, swiglu):
    """R independent layers reading one x: y_i = x W_i, or for SwiGLU
    y_i = silu(x Wg_i) * (x Wu_i) written as ONNX has it (Sigmoid, Mul, Mul)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes, inits, outs = [], [], []
    for i, w in enumerate(ws):
        if swiglu:
            inits += [numpy_helper.from_array(w[0], f"wg{i}"), numpy_helper.from_array(w[1], f"wu{i}")]
            nodes += [helper.make_node("MatMul", ["x", f"wg{i}"], [f"g{i}"]),
                      helper.make_node("MatMul", ["x", f"wu{i}"], [f"u{i}"]),
                      helper.make_node("Sigmoid", [f"g{i}"], [f"s{i}"]),
                      helper.make_node("Mul", [f"g{i}", f"s{i}"], [f"a{i}"]),
                      helper.make_node("Mul", [f"a{i}", f"u{i}"], [f"y{i}"])]
        else:
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"]))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [t, n]))
    g = helper.make_graph(nodes, "layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, k])], outs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def write_input(base, x, prec):
    """x in the module's input precision: f16 as .npy, bf16 (which numpy has
    not) as an ONNX TensorProto .pb, rounded to nearest even like torch."""
    import numpy as np
    if prec == "f16":
        np.save(base + ".npy", x.astype(np.float16))
        return base + ".npy"
    from onnx import TensorProto
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    t = TensorProto(name="x", dims=list(x.shape), data_type=TensorProto.BFLOAT16)
    t.raw_data = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    with open(base + ".pb", "wb") as f:
        f.write(t.SerializeToString())
    return base + ".pb"


def xcomp_time(a, onnx_path, xcm, prec, x_npy, out_dir, extra):
    c = subprocess.run([a.xcomp, "compile", onnx_path, "--target", "cuda", "--precision", prec, "--no-cache",
                        "-o", xcm] + extra, capture_output=True, text=True)
    if c.returncode:
        raise RuntimeError(f"compile failed: {c.stderr[-800:]}")
    race = [ln.strip() for ln in c.stderr.splitlines() if "GEMM):" in ln][:2]
    b = subprocess.run([a.xcomp, "bench", xcm, "--resident", "--warmup", "10", "--time", "1", "--json",
                        "--input", "@" + x_npy], capture_output=True, text=True)
    if b.returncode:
        raise RuntimeError(f"bench failed: {b.stderr[-800:]}")
    ms = json.loads(b.stdout)["device_ms"]["median"]
    r = subprocess.run([a.xcomp, "run", xcm, "--input", "@" + x_npy, "--output-dir", out_dir],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"run failed: {r.stderr[-800:]}")
    return ms, race


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xcomp", required=True)
    ap.add_argument("--tokens", default="512,4096")
    ap.add_argument("--precision", default="bf16,f16")
    ap.add_argument("--models", default="gpt2,llama")
    ap.add_argument("--out", default="/tmp/gemm_layers")
    a = ap.parse_args()
    import numpy as np
    import torch
    os.makedirs(a.out, exist_ok=True)
    dts = {"bf16": torch.bfloat16, "f16": torch.float16}
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    print("| model | layer | T x N x K | precision | torch ms | TFLOP/s | xcomp (race) ms | kept | "
          "generated alone ms | xcomp / torch | generated / torch | rel-L2 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    rng = np.random.default_rng(1)
    for name in a.models.split(","):
        for layer, n, k in SHAPES[name]:
            swiglu = "SwiGLU" in layer
            per = k * n * 4 * (2 if swiglu else 1)
            copies = max(1, min(16, int(128e6 // per)))  # weights of at most 128 MB per model
            mk = lambda: (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
            ws = [(mk(), mk()) if swiglu else mk() for _ in range(copies)]
            for t in [int(v) for v in a.tokens.split(",")]:
                x = rng.standard_normal((t, k), dtype=np.float32)
                tag = f"{name}-{''.join(c if c.isalnum() else '_' for c in layer)}-{t}"
                onnx_path = os.path.join(a.out, tag + ".onnx")
                model(onnx_path, t, n, k, ws, swiglu)
                for prec in a.precision.split(","):
                    dt = dts[prec]
                    x_npy = write_input(os.path.join(a.out, f"{tag}-x-{prec}"), x, prec)
                    cu = lambda v: torch.from_numpy(v).to("cuda", dt)
                    xt = cu(x)
                    wt = [(cu(w[0]), cu(w[1])) if swiglu else cu(w) for w in ws]
                    t_ms, y_ref = torch_time(torch, xt, wt, swiglu)
                    row = {"model": name, "layer": layer, "t": t, "n": n, "k": k, "precision": prec,
                           "copies": copies, "torch_ms": t_ms}
                    try:
                        for key, extra in (("race", []), ("generated", ["--no-vendor-blas"])):
                            od = os.path.join(a.out, f"{tag}-{prec}-{key}")
                            os.makedirs(od, exist_ok=True)
                            ms, race = xcomp_time(a, onnx_path, os.path.join(a.out, f"{tag}-{prec}-{key}.xcm"), prec,
                                                  x_npy, od, extra)
                            import xcomp  # reads the bf16 .npy xcomp writes (PYTHONPATH=python, XCOMP_LIBRARY)
                            y = torch.from_numpy(np.asarray(xcomp.read_tensor(os.path.join(od, "output_0.npy")),
                                                            dtype=np.float32))
                            ref = y_ref.float().cpu()
                            err = float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref))
                            if err > BOUND[prec]:
                                raise RuntimeError(f"{key}: rel-L2 {err:.2e} over {BOUND[prec]:.1e}")
                            row[key + "_ms"], row[key + "_err"] = ms / copies, err
                            if key == "race":
                                row["race_lines"] = race
                    except RuntimeError as e:
                        print(f"gemm_layers: {tag} {prec}: {e}", file=sys.stderr, flush=True)
                        continue
                    kept = "-"
                    for ln in row.get("race_lines", []):
                        kept = "generated" if "generated kernel kept" in ln else "cuBLASLt" if "chosen" in ln else kept
                    flops = 2.0 * t * n * k * (2 if swiglu else 1)
                    tf = flops / (t_ms * 1e-3) / 1e12
                    print(f"| {name} | {layer} | {t} x {n} x {k} | {prec} | {t_ms:.4f} | {tf:.0f} | {row['race_ms']:.4f} | "
                          f"{kept} | {row['generated_ms']:.4f} | {t_ms / row['race_ms']:.2f} | "
                          f"{t_ms / row['generated_ms']:.2f} | {max(row['race_err'], row['generated_err']):.1e} |",
                          flush=True)
                    with open(os.path.join(a.out, "gemm_layers.jsonl"), "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
