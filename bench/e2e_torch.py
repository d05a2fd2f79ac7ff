#!/usr/bin/env python3
"""Real-size transformers end to end on the GPU machine: xcomp against PyTorch
eager and torch.compile in the same run.

Builds the model in PyTorch with random weights (written here, no download):
  gpt2    GPT-2 124M: 12 layers, 12 heads, d 768, vocabulary 50257, learned
          positions, GELU (tanh) MLP, tied LM head
  llama   a Llama-style model of similar size: 12 layers, d 768, 12 query
          heads and 4 key/value heads (GQA), RoPE, RMSNorm, SwiGLU MLP 2048,
          vocabulary 32000, untied LM head
exports it to ONNX (torch.onnx.export, the dynamo exporter at opset 18, else
the TorchScript one at 17), times eager and torch.compile (CUDA events, warm-up,
median) in the precision asked, then runs `xcomp bench --json` on the ONNX file
(cold compile with --no-cache, then device-resident and host runs through the
cache) and checks xcomp's logits against PyTorch's (same precision, relative L2).
Where xcomp's cold compile is measured, torch.compile's first call is also
timed in a fresh process with empty Inductor/Triton caches (in this process,
earlier configurations have warmed them).
Prints one Markdown table row per model and configuration and writes the raw
numbers as JSON lines to --out. --batch, --seq and --precision take
comma-separated lists (the benchmark matrix, e.g. --batch 1,8 --seq
128,512,1024 --precision bf16,f16): each model is exported once per batch x
seq and run in every precision; torch.compile is reset and compiles again for
each configuration.

Usage: e2e_torch.py --xcomp XCOMP [--models gpt2,llama] [--batch 1[,8]] [--seq 512[,...]]
                    [--precision bf16[,f16]] [--runs 20] [--out DIR] [--skip-cold]
                    [--cold-at BxS] [--profile N]
       e2e_torch.py --export-only DIR [--models ...] [--batch 1] [--seq 512]
                    (export only, on the CPU: no GPU, no xcomp run)
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


def build(name, torch, **overrides):
    """The model `name` ("gpt2", "llama") with random weights; overrides
    change its configuration (layers, d, heads, kv_heads, ff, vocab, ctx)."""
    nn = torch.nn
    F = torch.nn.functional

    class Attention(nn.Module):
        def __init__(self, d, heads, kv_heads, rope, bias):
            super().__init__()
            self.h, self.kv, self.hd, self.rope = heads, kv_heads, d // heads, rope
            self.q = nn.Linear(d, d, bias=bias)
            self.k = nn.Linear(d, kv_heads * self.hd, bias=bias)
            self.v = nn.Linear(d, kv_heads * self.hd, bias=bias)
            self.o = nn.Linear(d, d, bias=bias)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            q = self.q(x).view(b, s, self.h, self.hd).transpose(1, 2)
            k = self.k(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            v = self.v(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            if self.rope:
                def rot(t):
                    t1, t2 = t[..., : self.hd // 2], t[..., self.hd // 2:]
                    return t * cos + torch.cat((-t2, t1), dim=-1) * sin
                q, k = rot(q), rot(k)
            if self.kv != self.h:
                k = k.repeat_interleave(self.h // self.kv, dim=1)
                v = v.repeat_interleave(self.h // self.kv, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(y.transpose(1, 2).reshape(b, s, -1))

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    class Block(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            d = cfg["d"]
            llama = cfg["llama"]
            self.llama = llama
            self.n1 = RMSNorm(d) if llama else nn.LayerNorm(d)
            self.n2 = RMSNorm(d) if llama else nn.LayerNorm(d)
            self.attn = Attention(d, cfg["heads"], cfg["kv_heads"], llama, not llama)
            if llama:
                self.gate = nn.Linear(d, cfg["ff"], bias=False)
                self.up = nn.Linear(d, cfg["ff"], bias=False)
                self.down = nn.Linear(cfg["ff"], d, bias=False)
            else:
                self.fc = nn.Linear(d, cfg["ff"])
                self.proj = nn.Linear(cfg["ff"], d)

        def forward(self, x, cos, sin):
            x = x + self.attn(self.n1(x), cos, sin)
            h = self.n2(x)
            if self.llama:
                h = self.down(F.silu(self.gate(h)) * self.up(h))
            else:
                h = self.proj(F.gelu(self.fc(h), approximate="tanh"))
            return x + h

    class LM(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            self.wte = nn.Embedding(cfg["vocab"], cfg["d"])
            if not cfg["llama"]:
                self.wpe = nn.Embedding(cfg["ctx"], cfg["d"])
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["layers"]))
            self.norm = RMSNorm(cfg["d"]) if cfg["llama"] else nn.LayerNorm(cfg["d"])
            self.head = nn.Linear(cfg["d"], cfg["vocab"], bias=False)
            if not cfg["llama"]:
                self.head.weight = self.wte.weight  # tied, as GPT-2
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.02)

        def forward(self, ids):
            s = ids.shape[1]
            pos = torch.arange(s, device=ids.device)
            x = self.wte(ids)
            hd = self.cfg["d"] // self.cfg["heads"]
            if self.cfg["llama"]:
                inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=ids.device, dtype=torch.float32) / hd))
                ang = pos[:, None].to(torch.float32) * inv[None, :]
                ang = torch.cat((ang, ang), dim=-1)
                cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
            else:
                x = x + self.wpe(pos)
                cos = sin = None
            for b in self.blocks:
                x = b(x, cos, sin)
            return self.head(self.norm(x))

    cfgs = {
        "gpt2": dict(layers=12, d=768, heads=12, kv_heads=12, ff=3072, vocab=50257, ctx=1024, llama=False),
        "llama": dict(layers=12, d=768, heads=12, kv_heads=4, ff=2048, vocab=32000, ctx=4096, llama=True),
    }
    cfg = dict(cfgs[name])
    cfg.update(overrides)
    return LM(cfg)


def cuda_time(torch, fn, runs, warmup=3):
    """Median milliseconds of fn by CUDA events (peer_torch.timed)."""
    from peer_torch import timed
    return timed(fn, runs=runs, warmup=warmup) * 1e3


def export(torch, model, ids, path):
    try:
        torch.onnx.export(model, (ids,), path, dynamo=True, opset_version=18, input_names=["input_ids"],
                          output_names=["logits"], external_data=False)
        return "dynamo opset 18"
    except Exception as e:  # noqa: BLE001 - fall back to the TorchScript exporter
        print(f"e2e: dynamo export failed ({type(e).__name__}: {str(e)[:200]}); TorchScript exporter",
              file=sys.stderr)
        torch.onnx.export(model, (ids,), path, dynamo=False, opset_version=17, input_names=["input_ids"],
                          output_names=["logits"])
        return "TorchScript opset 17"


def xcomp_bench(xcomp, onnx, precision, runs, extra):
    cmd = [xcomp, "bench", onnx, "--target", "cuda", "--warmup", "3", "--iterations", str(runs), "--json"]
    if precision != "f32":
        cmd += ["--precision", precision]
    t0 = time.time()
    p = subprocess.run(cmd + extra, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd + extra)} exited {p.returncode}: {p.stderr[-2000:]}")
    r = json.loads(p.stdout)
    r["process_s"] = time.time() - t0
    phases = [line for line in p.stderr.splitlines() if line.startswith("xcomp: compiled in ")]
    if phases:
        r["compile_phases"] = phases[-1][len("xcomp: "):]
    r["race_lines"] = [line for line in p.stderr.splitlines()
                       if line.startswith("xcomp: vendor race") or "GEMM):" in line]
    return r


def read_output(path):
    """An output file of `xcomp run` as float: bf16 through the xcomp package
    (PYTHONPATH=python, XCOMP_LIBRARY=...libxcomp.so), else numpy."""
    try:
        import xcomp
        return xcomp.read_tensor(path)
    except ImportError:
        import numpy as np
        return np.load(path)


def profile(a, onnx, prec, ids_path, outdir):
    """Where xcomp's device time goes: `xcomp run --profile --repeat N+1` (each
    launch timed alone, no launch graph; the first run, a warm-up with the
    one-time costs, is left out of the profile) summed by kernel kind (gemm,
    attention, reduction, ...) and the five longest kernels, per run."""
    path = os.path.join(a.out, f"profile-{os.path.splitext(os.path.basename(onnx))[0]}-{prec}.json")
    cmd = [a.xcomp, "run", onnx, "--target", "cuda", "--input", "@" + ids_path, "--output-dir", outdir,
           "--profile", "--profile-json", path, "--repeat", str(a.profile + 1)]
    if prec != "f32":
        cmd += ["--precision", prec]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        print(f"e2e: profile failed: {p.stderr[-1000:]}", file=sys.stderr)
        return None
    with open(path) as f:
        d = json.load(f)
    runs = max(1, d.get("runs", 1))
    kinds, top = {}, []
    for k in d["kernels"]:
        ms = k["total_ms"] / runs
        kind = k["name"].split("_", 1)[1] if "_" in k["name"] else k["name"]
        kinds[kind] = kinds.get(kind, 0.0) + ms
        top.append((ms, k["name"], k.get("origin", "")[:80]))
    top.sort(reverse=True)
    summary = {"runs": runs, "by_kind_ms": {k: round(v, 4) for k, v in sorted(kinds.items(), key=lambda x: -x[1])},
               "top": [{"ms": round(t[0], 4), "kernel": t[1], "origin": t[2]} for t in top[:5]]}
    print(f"e2e: profile ({runs} runs, ms per run): {summary['by_kind_ms']}; longest: "
          + ", ".join(f"{t['kernel']} {t['ms']:.3f} ({t['origin']})" for t in summary["top"]),
          file=sys.stderr, flush=True)
    return summary


def run_shape(a, torch, np, copy, dts, name, b, s, precisions, cold_wanted):
    """One model at one batch x seq: exported once (float32), then timed in
    each precision against eager and torch.compile; one table row each."""
    torch.manual_seed(0)
    model = build(name, torch).eval().cuda()
    ids = torch.randint(0, model.cfg["vocab"], (b, s), device="cuda")
    onnx = os.path.join(a.out, f"{name}-b{b}-s{s}.onnx")
    t0 = time.time()
    with torch.no_grad():
        how = export(torch, model, ids, onnx)
    print(f"e2e: {name} b{b} s{s}: exported in {time.time() - t0:.1f} s ({how})", file=sys.stderr, flush=True)
    ids_path = os.path.join(a.out, f"{name}-b{b}-s{s}-ids.npy")
    np.save(ids_path, ids.cpu().numpy())
    for prec in precisions:
        with torch.no_grad():
            m = copy.deepcopy(model).to(dts[prec])
            eager = cuda_time(torch, lambda: m(ids), a.runs)
            ref = m(ids).float().cpu().numpy()
            torch._dynamo.reset()
            t0 = time.time()
            cm = torch.compile(m)
            cm(ids)
            torch.cuda.synchronize()
            compile_s = time.time() - t0
            compiled = cuda_time(torch, lambda: cm(ids), a.runs)
        del cm, m
        torch.cuda.empty_cache()
        row = {"model": name, "export": how, "batch": b, "seq": s, "precision": prec,
               "eager_ms": eager, "compile_ms": compiled, "torch_compile_s": compile_s}
        cold = None
        if cold_wanted:
            # torch.compile's first call in a fresh process with empty Inductor
            # and Triton cache folders: in this process, earlier configurations
            # have warmed its caches (on disk and in memory)
            tc = torch_cold(a, name, b, s, prec)
            if tc is not None:
                row["torch_compile_fresh_process_s"] = tc
                print(f"e2e: {name} b{b} s{s} {prec}: torch.compile first call {compile_s:.2f} s in this "
                      f"process, {tc:.2f} s in a fresh one", file=sys.stderr, flush=True)
            # an empty cache folder of its own: nothing compiled before is reused
            saved = os.environ.get("XCOMP_CACHE_DIR")
            os.environ["XCOMP_CACHE_DIR"] = os.path.join(a.out, f"cache-{name}-b{b}-s{s}-{prec}")
            r = xcomp_bench(a.xcomp, onnx, prec, 3, [])
            if saved is None:
                del os.environ["XCOMP_CACHE_DIR"]
            else:
                os.environ["XCOMP_CACHE_DIR"] = saved
            cold = r["compile"]["ms"] / 1e3
            row["xcomp_cold_compile_s"] = cold
            phases = r["compile"].get("phases_ms") or r.get("compile_phases")
            if phases:
                row["xcomp_compile_phases"] = phases
                print(f"e2e: {name}: cold compile {cold:.2f} s, phases (ms): {phases}", file=sys.stderr, flush=True)
            for line in r.get("race_lines", []):
                print(f"e2e: {name}: {line}", file=sys.stderr, flush=True)
        res = xcomp_bench(a.xcomp, onnx, prec, a.runs, ["--resident"])
        host = xcomp_bench(a.xcomp, onnx, prec, a.runs, [])
        row.update(xcomp_gpu_ms=res["device_ms"]["median"], xcomp_wall_resident_ms=res["latency_ms"]["median"],
                   xcomp_wall_host_ms=host["latency_ms"]["median"], xcomp_launches=res["launches"],
                   xcomp_graph=res["launch_graph"])
        # Numbers: xcomp's logits on the same ids against PyTorch's (same precision).
        outdir = os.path.join(a.out, f"{name}-out")
        cmd = [a.xcomp, "run", onnx, "--target", "cuda", "--input", "@" + ids_path, "--output-dir", outdir]
        if prec != "f32":
            cmd += ["--precision", prec]
        p = subprocess.run(cmd, capture_output=True, text=True)
        rel = float("nan")
        if p.returncode == 0:
            got = read_output(os.path.join(outdir, "output_0.npy")).astype(np.float32)
            rel = float(np.linalg.norm((got - ref).ravel().astype(np.float64)) / np.linalg.norm(ref.ravel().astype(np.float64)))
        else:
            print(f"e2e: xcomp run failed: {p.stderr[-1000:]}", file=sys.stderr)
        del ref
        row["rel_l2_vs_torch"] = rel
        if a.profile:
            row["xcomp_profile"] = profile(a, onnx, prec, ids_path, outdir)
        with open(os.path.join(a.out, "e2e.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        gpu, wall_r, wall_h = row["xcomp_gpu_ms"], row["xcomp_wall_resident_ms"], row["xcomp_wall_host_ms"]
        print(f"| {name} ({how}) | {b} x {s} | {prec} | {eager:.3f} | {compiled:.3f} | {compile_s:.1f} | {gpu:.3f} "
              f"| {wall_r:.3f} | {wall_h:.3f} | {wall_r / gpu:.2f} | {'-' if cold is None else f'{cold:.1f}'} "
              f"| {compiled / gpu:.2f}x | {rel:.2e} |", flush=True)
    del model
    torch.cuda.empty_cache()


def torch_cold(a, name, b, s, prec):
    """Seconds of torch.compile's first call (compile + run) in a fresh
    process whose Inductor and Triton caches are empty; None on failure."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="e2e-torch-cold-") as tmp:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"),
                   TRITON_CACHE_DIR=os.path.join(tmp, "triton"))
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-cold", f"{name},{b},{s},{prec}"],
                           capture_output=True, text=True, env=env)
    for line in p.stdout.splitlines():
        if line.startswith("torch_cold_s "):
            return float(line.split()[1])
    print(f"e2e: torch.compile in a fresh process failed: {p.stderr[-1000:]}", file=sys.stderr)
    return None


def torch_cold_child(spec):
    """The fresh process of torch_cold: the same model (seed 0), one eager
    call (CUDA and cuBLAS set up, as in the parent), then the timed first
    compiled call."""
    import torch
    name, b, s, prec = spec.split(",")
    dts = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    torch.manual_seed(0)
    model = build(name, torch).eval().cuda()
    ids = torch.randint(0, model.cfg["vocab"], (int(b), int(s)), device="cuda")
    with torch.no_grad():
        m = model.to(dts[prec])
        m(ids)
        torch.cuda.synchronize()
        t0 = time.time()
        cm = torch.compile(m)
        cm(ids)
        torch.cuda.synchronize()
        print(f"torch_cold_s {time.time() - t0:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xcomp")
    ap.add_argument("--models", default="gpt2,llama")
    ap.add_argument("--batch", default="1", help="batch sizes, comma-separated (e.g. 1,8)")
    ap.add_argument("--seq", default="512", help="sequence lengths, comma-separated (e.g. 128,512,1024)")
    ap.add_argument("--precision", default="bf16", help="precisions, comma-separated: f32, bf16, f16")
    ap.add_argument("--cold-at", metavar="BxS",
                    help="measure xcomp's cold compile only at this batch x seq (default: every shape)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default="/tmp/e2e")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also profile xcomp's kernels over N runs (`xcomp run --profile`): time by kernel kind")
    ap.add_argument("--export-only", metavar="DIR",
                    help="export each model to DIR/NAME-bB-sS.onnx on the CPU and stop (no GPU, no xcomp run)")
    ap.add_argument("--torch-cold", metavar="NAME,B,S,PREC", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_cold:
        torch_cold_child(a.torch_cold)
        return 0
    if not a.xcomp and not a.export_only:
        ap.error("--xcomp is required (except with --export-only)")
    import torch
    if a.export_only:
        os.makedirs(a.export_only, exist_ok=True)
        for name in a.models.split(","):
            for b in str(a.batch).split(","):
                for s in str(a.seq).split(","):
                    torch.manual_seed(0)
                    model = build(name, torch).eval()
                    ids = torch.randint(0, model.cfg["vocab"], (int(b), int(s)))
                    onnx = os.path.join(a.export_only, f"{name}-b{b}-s{s}.onnx")
                    with torch.no_grad():
                        how = export(torch, model, ids, onnx)
                    print(f"{onnx}: {how}")
        return
    import copy
    import numpy as np
    os.makedirs(a.out, exist_ok=True)
    batches = [int(x) for x in str(a.batch).split(",")]
    seqs = [int(x) for x in str(a.seq).split(",")]
    precisions = a.precision.split(",")
    dts = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    for p in precisions:
        if p not in dts:
            ap.error(f"--precision: unknown precision '{p}' (f32, bf16, f16)")
    cold_at = None
    if a.cold_at:
        cold_at = tuple(int(x) for x in a.cold_at.split("x"))
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    print("\n| model | batch x seq | precision | torch eager ms | torch.compile ms | compile s | xcomp GPU ms "
          "| xcomp wall ms (resident) | xcomp wall ms (host I/O) | wall/GPU (resident) | xcomp cold compile s "
          "| GPU vs torch.compile | rel-L2 vs torch |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- | --- | --- |", flush=True)
    for name in a.models.split(","):
        for b in batches:
            for s in seqs:
                run_shape(a, torch, np, copy, dts, name, b, s, precisions,
                          not a.skip_cold and (cold_at is None or cold_at == (b, s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
