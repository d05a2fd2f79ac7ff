#!/usr/bin/env python3
"""Latency of ONNX Runtime (CPU execution provider) on the shared models, the
peer column for bench_models. Runs each model on its test_data_set_0 inputs,
checks the outputs against the stored ones (rel-L2 <= 1e-5), then times
session.run: warm-up, then the median of runs until about 2 s are spent.

Usage: peer_ort.py [--threads N] MODEL_DIR...
"""
import argparse
import glob
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: ORT's default)")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper
    except ImportError as e:
        print(f"peer_ort: {e} (pip install onnxruntime onnx numpy)", file=sys.stderr)
        return 1
    print(f"ONNX Runtime {ort.__version__}, CPUExecutionProvider, intra-op threads {a.threads or 'default'}")
    print("| model | runs | ORT ms (median) | max rel-L2 vs stored outputs |")
    print("| --- | --- | --- | --- |")
    for d in a.models:
        so = ort.SessionOptions()
        if a.threads:
            so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
        feeds = {}
        for i, inp in enumerate(sess.get_inputs()):
            t = onnx.TensorProto()
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            feeds[inp.name] = numpy_helper.to_array(t)
        outs = sess.run(None, feeds)
        err = 0.0
        for i, o in enumerate(outs):
            t = onnx.TensorProto()
            with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            want = numpy_helper.to_array(t).astype(np.float64)
            den = np.linalg.norm(want)
            e = np.linalg.norm(o.astype(np.float64) - want) / (den if den > 0 else 1.0)
            err = max(err, float(e))
        if not err <= 1e-5:
            print(f"peer_ort: {d}: outputs differ from the stored ones (rel-L2 {err:.3g})", file=sys.stderr)
            return 1
        for _ in range(5):
            sess.run(None, feeds)
        times, spent = [], 0.0
        while len(times) < 5 or (spent < 2.0 and len(times) < 2000):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            dt = time.perf_counter() - t0
            times.append(dt)
            spent += dt
        name = os.path.basename(os.path.normpath(d))
        print(f"| {name} | {len(times)} | {statistics.median(times) * 1e3:.3f} | {err:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
