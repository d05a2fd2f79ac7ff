#!/usr/bin/env python3
"""Writes the small ONNX models tests/unit/test_onnx_import.c reads.

Run from anywhere: python3 tests/data/onnx/make_fixtures.py (needs `pip install
onnx numpy`). The generated files are committed; rerun only to change them.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name, opset):
    model.opset_import[0].version = opset
    model.ir_version = 7
    onnx.save(model, os.path.join(HERE, name))


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, value_info=(), name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits),
                          value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def legacy():
    # Squeeze-11 / Unsqueeze-11 with axes attributes.
    m = model([helper.make_node("Squeeze", ["x"], ["y"], name="sq", axes=[0, 2]),
               helper.make_node("Unsqueeze", ["y"], ["z"], axes=[1])],
              [vi("x", TensorProto.FLOAT, [1, 3, 1, 4])], [vi("z", TensorProto.FLOAT, None)])
    save(m, "legacy_squeeze11.onnx", 11)
    # ReduceMean-13 with axes attribute, ReduceSum-11 with axes attribute.
    m = model([helper.make_node("ReduceMean", ["x"], ["y"], name="rm", axes=[-1], keepdims=0),
               helper.make_node("ReduceSum", ["x"], ["s"], name="rs", axes=[1])],
              [vi("x", TensorProto.FLOAT, [2, 3])],
              [vi("y", TensorProto.FLOAT, None), vi("s", TensorProto.FLOAT, None)])
    save(m, "legacy_reduce11.onnx", 11)
    # Split-11 with and without split attribute.
    m = model([helper.make_node("Split", ["x"], ["a", "b"], name="sp", axis=0, split=[1, 3]),
               helper.make_node("Split", ["x"], ["c", "d"], name="sp2", axis=0)],
              [vi("x", TensorProto.FLOAT, [4])],
              [vi(n, TensorProto.FLOAT, None) for n in "abcd"])
    save(m, "legacy_split11.onnx", 11)
    # Softmax-11: axis 1 of a rank-3 input (coerced to 2-D), and axis=-1.
    m = model([helper.make_node("Softmax", ["x"], ["y"], name="sm"),
               helper.make_node("LogSoftmax", ["x"], ["z"], name="lsm", axis=2)],
              [vi("x", TensorProto.FLOAT, [2, 3, 4])],
              [vi("y", TensorProto.FLOAT, None), vi("z", TensorProto.FLOAT, None)])
    save(m, "legacy_softmax11.onnx", 11)
    # Attributes that older versions had and later ones take as inputs or drop.
    m = model([helper.make_node("Clip", ["x"], ["c"], name="clip", min=-1.0, max=2.5),
               helper.make_node("TopK", ["x"], ["tv", "ti"], name="topk", k=2),
               helper.make_node("Dropout", ["x"], ["d"], name="drop", ratio=0.3),
               helper.make_node("Pad", ["x"], ["p"], name="pad", pads=[0, 1, 0, 1], value=0.5),
               helper.make_node("Slice", ["x"], ["sl"], name="slice", starts=[0], ends=[1],
                                axes=[1]),
               helper.make_node("Scatter", ["x", "idx", "x"], ["sc"], name="scatter")],
              [vi("x", TensorProto.DOUBLE, [2, 3]), vi("idx", TensorProto.INT64, [2, 3])],
              [vi(n, TensorProto.DOUBLE, None) for n in ["c", "tv", "d", "p", "sl", "sc"]] +
              [vi("ti", TensorProto.INT64, None)])
    save(m, "legacy_attrs11.onnx", 11)
    # Resize-11 with empty roi and scales, given sizes.
    m = model([helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], name="rs",
                                mode="nearest")],
              [vi("x", TensorProto.FLOAT, [1, 1, 2, 2])], [vi("y", TensorProto.FLOAT, None)],
              inits=[numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
                     numpy_helper.from_array(np.zeros(0, np.float32), "scales"),
                     numpy_helper.from_array(np.array([1, 1, 4, 4], np.int64), "sizes")])
    save(m, "legacy_resize11.onnx", 11)


def features():
    # dim_param, a dim with neither value nor name, an initializer listed as a
    # graph input, a Constant node, nodes out of topological order, an
    # unnamed node, value_info.
    x = vi("x", TensorProto.FLOAT, ["batch", None, 4])
    w_in = vi("w", TensorProto.FLOAT, [4])
    w = numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32), "w")
    const = helper.make_node("Constant", [], ["k"], name="const",
                             value=numpy_helper.from_array(np.array(2.5, np.float32)))
    m = model([helper.make_node("Mul", ["t", "k"], ["y"], name="mul"),
               helper.make_node("Add", ["x", "w"], ["t"]),
               const],
              [x, w_in], [vi("y", TensorProto.FLOAT, ["batch", None, 4])], inits=[w],
              value_info=[vi("t", TensorProto.FLOAT, ["batch", None, 4])], opset=17)
    save(m, "features.onnx", 17)
    # Every dtype as an initializer, in raw_data and in its typed field.
    inits = []
    outs = []
    nodes = []
    vals = {
        TensorProto.FLOAT: [1.5, -2.0, 3.25], TensorProto.DOUBLE: [1e300, -0.5, 2.0],
        TensorProto.FLOAT16: [1.0, -2.0, 0.5], TensorProto.BFLOAT16: [1.0, -2.0, 0.5],
        TensorProto.INT8: [-128, 0, 127], TensorProto.INT16: [-32768, 1, 32767],
        TensorProto.INT32: [-2147483648, 5, 2147483647],
        TensorProto.INT64: [-9223372036854775808, 7, 9223372036854775807],
        TensorProto.UINT8: [0, 1, 255], TensorProto.UINT16: [0, 1, 65535],
        TensorProto.UINT32: [0, 1, 4294967295], TensorProto.UINT64: [0, 1, 18446744073709551615],
        TensorProto.BOOL: [True, False, True],
        TensorProto.FLOAT8E4M3FN: [1.0, -2.0, 448.0], TensorProto.FLOAT8E5M2: [1.0, -2.0, 0.5],
    }
    for dt, v in vals.items():
        nm = TensorProto.DataType.Name(dt).lower()
        for raw in (False, True):
            tname = f"{nm}_{'raw' if raw else 'typed'}"
            inits.append(helper.make_tensor(tname, dt, [3], v, raw=False) if not raw else
                         raw_tensor(tname, dt, v))
            nodes.append(helper.make_node("Identity", [tname], [tname + "_out"]))
            outs.append(vi(tname + "_out", dt, [3]))
    m = model(nodes, [], outs, inits=inits, opset=17)
    save(m, "dtypes.onnx", 17)


def raw_tensor(name, dt, values):
    t = helper.make_tensor(name, dt, [3], values, raw=False)
    arr = numpy_helper.to_array(t)
    if dt in (TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2):
        raw = arr.tobytes()  # ml_dtypes arrays: the bit patterns
    else:
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    r = TensorProto()
    r.name = name
    r.data_type = dt
    r.dims.extend([3])
    r.raw_data = raw
    return r


def external():
    d = os.path.join(HERE, "extdata")
    os.makedirs(d, exist_ok=True)
    w = np.arange(1024, dtype=np.float32).reshape(32, 32)
    b = np.array([10, 20, 30], dtype=np.int64)
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(w.tobytes())          # offset 0, 4096 bytes
        f.write(b"\0" * 3)            # misaligned start for the next tensor
        f.write(b.tobytes())          # offset 4099, 24 bytes
    def ext(name, dt, dims, loc, offset, length):
        t = TensorProto()
        t.name = name
        t.data_type = dt
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", loc), ("offset", offset), ("length", length)):
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, str(v)
        return t
    def one(name, tensor, dtype):
        m = model([helper.make_node("Identity", [tensor.name], ["y"])], [],
                  [vi("y", dtype, None)], inits=[tensor], opset=17)
        save(m, name, 17)
    m = model([helper.make_node("Identity", ["w"], ["y"]),
               helper.make_node("Identity", ["b"], ["z"])], [],
              [vi("y", TensorProto.FLOAT, None), vi("z", TensorProto.INT64, None)],
              inits=[ext("w", TensorProto.FLOAT, [32, 32], "weights.bin", 0, 4096),
                     ext("b", TensorProto.INT64, [3], "weights.bin", 4099, 24)], opset=17)
    save(m, "extdata/model.onnx", 17)
    F = TensorProto.FLOAT
    one("extdata/abs_path.onnx", ext("w", F, [2], "/etc/passwd", None, None), F)
    one("extdata/dotdot.onnx", ext("w", F, [2], "../extdata/weights.bin", 0, 8), F)
    one("extdata/escape_link.onnx", ext("w", F, [2], "escape.bin", 0, 8), F)
    one("extdata/past_end.onnx", ext("w", F, [2], "weights.bin", 4200, 8), F)
    one("extdata/too_long.onnx", ext("w", F, [2], "weights.bin", 4096, 9223372036854775807), F)
    one("extdata/wrong_length.onnx", ext("w", F, [2], "weights.bin", 0, 12), F)
    one("extdata/missing_file.onnx", ext("w", F, [2], "nothere.bin", 0, 8), F)
    one("extdata/bad_offset.onnx", ext("w", F, [2], "weights.bin", "-4", 8), F)
    # The test copies this next to a FIFO named fifo.bin: must not block.
    one("extdata/fifo_model.onnx", ext("w", F, [2], "fifo.bin", None, None), F)
    link = os.path.join(d, "escape.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../outside.bin", link)
    with open(os.path.join(HERE, "outside.bin"), "wb") as f:
        f.write(b"\0" * 8)


def write_case(model_file, inputs, outputs):
    """cases/<name>/: the model plus one data set with outputs computed here
    with numpy from the OLD op semantics (independently of xcomp)."""
    name = os.path.splitext(model_file)[0]
    d = os.path.join(HERE, "cases", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    m = onnx.load(os.path.join(HERE, model_file))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, arrays, infos in (("input", inputs, m.graph.input), ("output", outputs, m.graph.output)):
        for k, a in enumerate(arrays):
            t = numpy_helper.from_array(a, infos[k].name)
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def cases():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    f = x.reshape(2, 12)
    e = np.exp(f - f.max(axis=1, keepdims=True))
    sm = (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    z = x - x.max(axis=2, keepdims=True)
    lsm = z - np.log(np.exp(z).sum(axis=2, keepdims=True))
    write_case("legacy_softmax11.onnx", [x], [sm, lsm.astype(np.float32)])
    x = rng.standard_normal((1, 3, 1, 4)).astype(np.float32)
    write_case("legacy_squeeze11.onnx", [x], [x.reshape(3, 1, 4)])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    write_case("legacy_reduce11.onnx", [x], [x.mean(axis=-1), x.sum(axis=1, keepdims=True)])
    x = np.array([1, 2, 3, 4], np.float32)
    write_case("legacy_split11.onnx", [x], [x[:1], x[1:], x[:2], x[2:]])
    x = np.array([[-3.0, 0.25, 7.0], [2.0, -0.5, 1.0]])
    idx = np.array([[1, 0, 1], [0, 1, 0]], np.int64)
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    scat = x.copy()
    for i in range(2):
        for j in range(3):
            scat[idx[i, j], j] = x[i, j]
    write_case("legacy_attrs11.onnx", [x, idx],
               [np.clip(x, -1.0, 2.5), np.take_along_axis(x, order, 1), x,
                np.pad(x, ((0, 0), (1, 1)), constant_values=0.5), x[:, 0:1], scat, order])
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    write_case("legacy_resize11.onnx", [x], [np.repeat(np.repeat(x, 2, 2), 2, 3)])


def slow():
    """A backend-test folder whose model runs for minutes in the reference
    interpreter (a 2048^3 MatMul): tests/cli/test_cli_conform.sh checks that the
    runner's --timeout stops it and reports TIMEOUT."""
    d = os.path.join(HERE, "slow_test")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    shape = numpy_helper.from_array(np.array([2048, 2048], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"]),
             helper.make_node("MatMul", ["e", "e"], ["m"]),
             helper.make_node("ReduceSum", ["m"], ["y"], keepdims=0)]
    m = model(nodes, [vi("x", TensorProto.FLOAT, [1])], [vi("y", TensorProto.FLOAT, [])],
              inits=[shape], opset=17)
    m.ir_version = 7
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = np.array([0.5], np.float32)
    y = np.array(0.25 * 2048 * 2048 * 2048, np.float32)
    for name, arr in (("input_0.pb", x), ("output_0.pb", y)):
        with open(os.path.join(d, "test_data_set_0", name), "wb") as f:
            f.write(numpy_helper.from_array(arr).SerializeToString())


if __name__ == "__main__":
    slow()
    legacy()
    cases()
    features()
    external()
