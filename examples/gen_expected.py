#!/usr/bin/env python3
"""Generates the example inputs, weights and expected outputs with numpy.

The expected outputs are computed here independently of xcomp (plain numpy
in float64, rounded to float32 at the end), so tests/cli/test_examples.sh
checks the whole path: .xir parsing, side files, shape inference and the
reference interpreter.

Writes, next to this script:
  <name>.in0.npy, <name>.expected0.npy   for mlp, cnn, transformer
  cnn.bin, transformer.bin               raw little-endian f32 weights
and checks that the weights written in the .xir files (inline in mlp.xir,
file(..., offset=N) in the others) agree with the ones used here.

Run: python3 examples/gen_expected.py   (needs numpy)
"""
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def det(shape, seed, scale):
    """Deterministic weights: a smooth formula, no random generator."""
    n = int(np.prod(shape))
    k = np.arange(n, dtype=np.float64)
    return (np.sin(k * 0.7 + seed * 1.3) * scale).astype(np.float32).reshape(shape)


def sixteenths(shape, seed):
    """Multiples of 1/16 in [-0.5, 0.5]: exact in f32 and in decimal text."""
    n = int(np.prod(shape))
    k = np.arange(n)
    return (((k * 7 + seed * 5) % 17 - 8) / 16.0).astype(np.float32).reshape(shape)


def erf(a):
    return np.vectorize(math.erf)(a)


def gelu(a):
    return 0.5 * a * (1.0 + erf(a / math.sqrt(2.0)))


def f64(a):
    return np.asarray(a, dtype=np.float64)


# ---- side-file layout --------------------------------------------------


def write_side(name, tensors):
    """Packs f32 tensors one after another; returns {name: offset}."""
    offsets, blob = {}, b""
    for key, arr in tensors:
        offsets[key] = len(blob)
        blob += np.ascontiguousarray(arr, dtype="<f4").tobytes()
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(blob)
    return offsets


def check_offsets(xir, binname, offsets, tensors):
    text = open(os.path.join(HERE, xir)).read()
    found = dict(
        (m.group(1), (m.group(2), int(m.group(3))))
        for m in re.finditer(
            r'const (\w+): f32\[([0-9, ]*)\] = file\("' + re.escape(binname) +
            r'", offset=(\d+)\)', text))
    for key, arr in tensors:
        if key not in found:
            sys.exit(f"{xir}: constant {key} is not read from {binname}")
        dims, off = found[key]
        shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        if shape != arr.shape or off != offsets[key]:
            sys.exit(f"{xir}: {key} should be f32{list(arr.shape)} at offset "
                     f"{offsets[key]}, is f32{list(shape)} at {off}")


def check_inline(xir, tensors):
    text = open(os.path.join(HERE, xir)).read()
    for key, arr in tensors:
        m = re.search(r"const " + key + r": f32\[[0-9, ]*\] = \[([^\]]*)\]", text)
        if not m:
            sys.exit(f"{xir}: inline constant {key} not found")
        vals = np.array([float(v) for v in m.group(1).replace("\n", " ").split(",")],
                        dtype=np.float32)
        if vals.shape[0] != arr.size or not np.array_equal(vals, arr.reshape(-1)):
            sys.exit(f"{xir}: {key} differs from the formula; inline text should be\n" +
                     ", ".join(repr(float(v)) for v in arr.reshape(-1)))


def save(name, x, y):
    np.save(os.path.join(HERE, f"{name}.in0.npy"), x.astype(np.float32))
    np.save(os.path.join(HERE, f"{name}.expected0.npy"), y.astype(np.float32))


# ---- mlp: Gemm -> GELU (via Erf) -> Gemm ---------------------------------


def mlp():
    w1, b1 = sixteenths((4, 8), 1), sixteenths((8,), 2)
    w2, b2 = sixteenths((8, 3), 3), sixteenths((3,), 4)
    check_inline("mlp.xir", [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)])
    x = det((2, 4), 10, 2.0)
    h = f64(x) @ f64(w1) + f64(b1)
    y = gelu(h) @ f64(w2) + f64(b2)
    save("mlp", x, y)


# ---- cnn: Conv+Relu+MaxPool, Conv+Relu, GlobalAveragePool, Flatten, Gemm --


def conv2d(x, w, b, pad):
    n, c, hh, ww = x.shape
    m, _, kh, kw = w.shape
    xp = np.zeros((n, c, hh + 2 * pad, ww + 2 * pad))
    xp[:, :, pad:pad + hh, pad:pad + ww] = x
    oh, ow = hh + 2 * pad - kh + 1, ww + 2 * pad - kw + 1
    out = np.zeros((n, m, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = np.einsum("nckl,mckl->nm", patch, w)
    return out + b.reshape(1, m, 1, 1)


def maxpool2(x):
    n, c, hh, ww = x.shape
    return x.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))


def cnn():
    t = [("w1", det((4, 1, 3, 3), 1, 0.5)), ("b1", det((4,), 2, 0.1)),
         ("w2", det((8, 4, 3, 3), 3, 0.3)), ("b2", det((8,), 4, 0.1)),
         ("w3", det((8, 5), 5, 0.5)), ("b3", det((5,), 6, 0.1))]
    offsets = write_side("cnn.bin", t)
    check_offsets("cnn.xir", "cnn.bin", offsets, t)
    p = {k: f64(v) for k, v in t}
    x = det((2, 1, 8, 8), 20, 1.0)
    h = np.maximum(conv2d(f64(x), p["w1"], p["b1"], 1), 0)
    h = maxpool2(h)
    h = np.maximum(conv2d(h, p["w2"], p["b2"], 1), 0)
    h = h.mean(axis=(2, 3))
    y = h @ p["w3"] + p["b3"]
    save("cnn", x, y)


# ---- transformer: one pre-LN block ---------------------------------------


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def transformer():
    d, heads, ffn = 8, 2, 16
    hd = d // heads
    t = [("ln1_g", (1.0 + det((d,), 1, 0.1))), ("ln1_b", det((d,), 2, 0.1)),
         ("wq", det((d, d), 3, 0.4)), ("bq", det((d,), 4, 0.05)),
         ("wk", det((d, d), 5, 0.4)), ("bk", det((d,), 6, 0.05)),
         ("wv", det((d, d), 7, 0.4)), ("bv", det((d,), 8, 0.05)),
         ("wo", det((d, d), 9, 0.4)), ("bo", det((d,), 10, 0.05)),
         ("ln2_g", (1.0 + det((d,), 11, 0.1))), ("ln2_b", det((d,), 12, 0.1)),
         ("w1", det((d, ffn), 13, 0.4)), ("b1", det((ffn,), 14, 0.05)),
         ("w2", det((ffn, d), 15, 0.3)), ("b2", det((d,), 16, 0.05))]
    t = [(k, v.astype(np.float32)) for k, v in t]
    offsets = write_side("transformer.bin", t)
    check_offsets("transformer.xir", "transformer.bin", offsets, t)
    p = {k: f64(v) for k, v in t}
    x = det((2, 4, d), 30, 1.0)
    n, s, _ = x.shape
    xf = f64(x)
    a = layer_norm(xf, p["ln1_g"], p["ln1_b"])
    q = (a @ p["wq"] + p["bq"]).reshape(n, s, heads, hd).transpose(0, 2, 1, 3)
    k = (a @ p["wk"] + p["bk"]).reshape(n, s, heads, hd).transpose(0, 2, 3, 1)
    v = (a @ p["wv"] + p["bv"]).reshape(n, s, heads, hd).transpose(0, 2, 1, 3)
    probs = softmax((q @ k) * (1.0 / math.sqrt(hd)))
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, s, d)
    r1 = xf + (ctx @ p["wo"] + p["bo"])
    m = layer_norm(r1, p["ln2_g"], p["ln2_b"])
    y = r1 + (gelu(m @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
    save("transformer", x, y)


if __name__ == "__main__":
    mlp()
    cnn()
    transformer()
    print("wrote examples/*.npy and examples/*.bin")
