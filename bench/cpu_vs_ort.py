#!/usr/bin/env python3
"""xcomp's cpu target against ONNX Runtime on the same models, inputs and
thread count, interleaved: each round times xcomp (`xcomp bench MODULE.xcm
--json`, a child process) and then ONNX Runtime (in this process) for about
the same time, and the ratio of the two medians of that round is kept; the
table gives the median over the rounds of each figure and of the ratios, so
that load from other jobs on a shared machine hits both sides alike.

xcomp runs one or more compiled modules per model, each a "variant" (e.g.
default and tuned schedules), given as --module VARIANT:MODEL_DIR=PATH.xcm.
Outputs are checked first: ORT's against the stored ones (rel-L2 <= 1e-5),
xcomp's through `xcomp run` + `xcomp compare` against the stored ones.

Usage:
  cpu_vs_ort.py [--xcomp BIN] [--threads N] [--rounds R] [--seconds S]
                --module VARIANT:MODEL_DIR=MODULE.xcm ...

Threads: ORT intra_op_num_threads=N (inter-op 1, sequential execution), xcomp
OMP_NUM_THREADS=N in the child's environment.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time


def load_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def rel_l2(got, want):
    import numpy as np
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    den = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (den if den > 0 else 1.0))


def ort_session(model_dir, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        feeds[inp.name] = load_pb(os.path.join(model_dir, "test_data_set_0", f"input_{i}.pb"))
    outs = sess.run(None, feeds)
    err = max(rel_l2(o, load_pb(os.path.join(model_dir, "test_data_set_0", f"output_{i}.pb")))
              for i, o in enumerate(outs))
    if not err <= 1e-5:
        raise SystemExit(f"cpu_vs_ort: ORT on {model_dir}: outputs differ from the stored ones (rel-L2 {err:.3g})")
    return sess, feeds


def ort_median_ms(sess, feeds, seconds):
    for _ in range(3):
        sess.run(None, feeds)
    times, spent = [], 0.0
    while len(times) < 5 or spent < seconds:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return statistics.median(times) * 1e3


def inputs_args(model_dir):
    d = os.path.join(model_dir, "test_data_set_0")
    n = len([f for f in os.listdir(d) if f.startswith("input_")])
    args = []
    for i in range(n):
        args += ["--input", "@" + os.path.join(d, f"input_{i}.pb")]
    return args


def xcomp_check(xcomp, module, model_dir, env):
    out = f"/tmp/cpu_vs_ort.{os.getpid()}"
    subprocess.run([xcomp, "run", module, *inputs_args(model_dir), "--output-dir", out], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = os.path.join(model_dir, "test_data_set_0")
    worst = 0.0
    i = 0
    while os.path.exists(os.path.join(d, f"output_{i}.pb")):
        import numpy as np
        got = np.load(os.path.join(out, f"output_{i}.npy"))
        worst = max(worst, rel_l2(got, load_pb(os.path.join(d, f"output_{i}.pb"))))
        i += 1
    if not worst <= 1e-5:
        raise SystemExit(f"cpu_vs_ort: {module}: outputs differ from the stored ones (rel-L2 {worst:.3g})")
    return worst


def xcomp_median_ms(xcomp, module, model_dir, env, seconds):
    r = subprocess.run([xcomp, "bench", module, *inputs_args(model_dir), "--json", "--warmup", "20", "--time",
                        str(seconds)], env=env, check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--xcomp", default=os.path.join(here, "..", "build", "xcomp"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0, help="per side and round")
    ap.add_argument("--module", action="append", default=[], help="VARIANT:MODEL_DIR=MODULE.xcm")
    a = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError as e:
        print(f"cpu_vs_ort: {e} (pip install onnxruntime onnx numpy)", file=sys.stderr)
        return 1
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    models = collections.OrderedDict()  # model_dir -> [(variant, module)]
    for m in a.module:
        variant, rest = m.split(":", 1)
        model_dir, module = rest.split("=", 1)
        models.setdefault(model_dir, []).append((variant, module))
    variants = []
    for mods in models.values():
        for v, _ in mods:
            if v not in variants:
                variants.append(v)
    print(f"ONNX Runtime {ort.__version__} (CPUExecutionProvider, intra-op {a.threads}, sequential) vs xcomp cpu "
          f"(OMP_NUM_THREADS={a.threads}); {a.rounds} interleaved rounds of ~{a.seconds:g} s a side; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs")
    head = "| model | ORT ms | " + " | ".join(f"xcomp {v} ms | {v} vs ORT" for v in variants) + " | rel-L2 |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for model_dir, mods in models.items():
        sess, feeds = ort_session(model_dir, a.threads)
        err = max(xcomp_check(a.xcomp, mod, model_dir, env) for _, mod in mods)
        ort_ms, x_ms, ratio = [], collections.defaultdict(list), collections.defaultdict(list)
        for _ in range(a.rounds):
            for v, mod in mods:
                x_ms[v].append(xcomp_median_ms(a.xcomp, mod, model_dir, env, a.seconds))
            o = ort_median_ms(sess, feeds, a.seconds)
            ort_ms.append(o)
            for v, _ in mods:
                ratio[v].append(o / x_ms[v][-1])  # > 1: xcomp faster
        row = f"| {os.path.basename(os.path.normpath(model_dir))} | {statistics.median(ort_ms):.3f} | "
        cells = []
        for v in variants:
            if v in x_ms:
                r = statistics.median(ratio[v])
                cells.append(f"{statistics.median(x_ms[v]):.3f} | "
                             + (f"**{r:.2f}x faster**" if r >= 1 else f"{1 / r:.2f}x slower"))
            else:
                cells.append("– | –")
        print(row + " | ".join(cells) + f" | {err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
