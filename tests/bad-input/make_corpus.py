#!/usr/bin/env python3
"""Writes the bad-input corpus: malformed .onnx, .npy and .pb files, and
EXPECTED, which maps each file to the mode it is loaded in and a substring
its error message must contain. tests/unit/test_bad_input_files.c checks it.

Modes: lenient = ONNX import keeping ops the registry lacks (so the fault
under test is reached whatever ops exist); strict = normal import; tensor =
.npy/.pb reader. Needs `pip install onnx numpy`. The generated files are
committed; files this script does not make (fuzzer finds) may be listed in
EXPECTED.extra, which the script appends unchanged.
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
entries = []
F = TensorProto.FLOAT


def vi(name, dtype=F, shape=(2,)):
    return helper.make_tensor_value_info(name, dtype, list(shape) if shape is not None else None)


def mk(nodes, inputs, outputs, inits=(), opset=17, sparse=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits),
                          sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def put(name, data, mode, expect):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.SerializeToString())
    entries.append((name, mode, expect))


def raw_tensor(name, dt, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def ident(inits, out_dtype=F):
    return mk([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", out_dtype)],
              inits=inits)


def onnx_corpus():
    good = mk([helper.make_node("Add", ["x", "x"], ["y"], name="add")], [vi("x")], [vi("y")])
    gb = good.SerializeToString()
    put("truncated.onnx", gb[: len(gb) - 7], "lenient", "truncated")
    put("garbage.onnx", bytes(range(7, 200, 3)), "lenient", "garbage.onnx")
    put("empty.onnx", b"", "lenient", "empty file")
    put("bad_wire_type.onnx", b"\x0f\x01\x02", "lenient", "wire type 7")
    put("unknown_dtype.onnx", ident([raw_tensor("w", 99, [2], b"\0" * 8)]), "lenient",
        "initializer 'w': unsupported data type 99")
    put("string_initializer.onnx",
        ident([helper.make_tensor("w", TensorProto.STRING, [1], [b"a"])]), "lenient",
        "initializer 'w': unsupported data type 8 (STRING)")
    put("complex_initializer.onnx", ident([raw_tensor("w", 14, [1], b"\0" * 8)]), "lenient",
        "unsupported data type 14 (COMPLEX64)")
    put("negative_dim.onnx", ident([raw_tensor("w", F, [-1], b"")]), "lenient",
        "initializer 'w'")
    put("overflow_dims.onnx", ident([raw_tensor("w", F, [1 << 40, 1 << 40], b"")]), "lenient",
        "initializer 'w'")
    put("short_initializer.onnx", ident([raw_tensor("w", F, [2], b"\0" * 4)]), "lenient",
        "initializer 'w': raw_data holds 4 bytes; 2 f32 elements need 8")
    put("long_initializer.onnx", ident([raw_tensor("w", F, [2], b"\0" * 12)]), "lenient",
        "initializer 'w': raw_data holds 12 bytes")
    t = helper.make_tensor("w", F, [1], [1.0])
    t.dims[:] = [2]
    put("typed_short.onnx", ident([t]), "lenient",
        "initializer 'w': float_data has 1 elements, its shape needs 2")
    t = helper.make_tensor("w", TensorProto.UINT8, [1], [7])
    t.int32_data[:] = [300]
    put("u8_out_of_range.onnx", ident([t], TensorProto.UINT8), "lenient",
        "initializer 'w': int32_data value out of range for u8")
    t = helper.make_tensor("w", F, [1], [1.0])
    t.raw_data = b"\0" * 4
    put("raw_and_typed.onnx", ident([t]), "lenient", "both raw_data and a typed data field")
    t = helper.make_tensor("w", TensorProto.INT64, [2], [1, 2])
    t.ClearField("int64_data")
    t.int32_data[:] = [1, 2]
    put("wrong_typed_field.onnx", ident([t], TensorProto.INT64), "lenient",
        "must keep its data in int64_data")
    t = TensorProto()
    t.name, t.data_type = "w", F
    t.dims.extend([3])
    put("no_data.onnx", ident([t]), "lenient",
        "initializer 'w': tensor f32[3 elements] has no data")
    put("missing_input.onnx",
        mk([helper.make_node("Add", ["x", "nope"], ["y"], name="add")], [vi("x")], [vi("y")]),
        "lenient", "node 'add' (Add): input 'nope' is not defined anywhere")
    put("duplicate_output.onnx",
        mk([helper.make_node("Relu", ["x"], ["y"], name="r1"),
            helper.make_node("Relu", ["x"], ["y"], name="r2")], [vi("x")], [vi("y")]),
        "lenient", "node 'r2': output 'y' is defined more than once")
    put("output_shadows_input.onnx",
        mk([helper.make_node("Relu", ["x"], ["x"], name="r")], [vi("x")], [vi("x")]),
        "lenient", "node 'r': output 'x' is defined more than once")
    w = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    put("duplicate_initializer.onnx", ident([w, w]), "lenient", "duplicate initializer 'w'")
    put("input_listed_twice.onnx",
        mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x"), vi("x")], [vi("y")]),
        "lenient", "graph input 'x' is listed twice")
    put("cycle.onnx",
        mk([helper.make_node("Relu", ["b"], ["a"], name="ra"),
            helper.make_node("Relu", ["a"], ["b"], name="rb")], [], [vi("a")]),
        "lenient", "graph has a cycle through node 'ra'")
    put("self_loop.onnx",
        mk([helper.make_node("Add", ["x", "s"], ["s"], name="acc")], [vi("x")], [vi("s")]),
        "lenient", "cycle through node 'acc'")
    put("unsupported_op.onnx",
        mk([helper.make_node("FooBar", ["x"], ["y"], name="foo")], [vi("x")], [vi("y")]),
        "strict", "node 'foo': unsupported op 'FooBar' (opset 17)")
    put("custom_domain.onnx",
        mk([helper.make_node("Bar", ["x"], ["y"], name="bar", domain="com.example")],
           [vi("x")], [vi("y")]),
        "strict", "node 'bar': unsupported op 'Bar' in domain 'com.example'")
    put("upsample.onnx",
        mk([helper.make_node("Upsample", ["x", "x"], ["y"], name="up")], [vi("x")], [vi("y")],
           opset=11),
        "strict", "node 'up': unsupported op 'Upsample' (removed in opset 10")
    put("opset_too_old.onnx",
        mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y")], opset=9),
        "lenient", "model opset 9 is not supported (xcomp supports opsets 11 to 23)")
    put("opset_too_new.onnx",
        mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y")], opset=30),
        "lenient", "model opset 30 is not supported (xcomp supports opsets 11 to 23)")
    m = mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y")])
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    put("no_default_opset.onnx", m, "lenient",
        "imports no opset of the default ONNX domain (only 'ai.onnx.ml')")
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.append(helper.make_opsetid("", 17))
    put("no_graph.onnx", m, "lenient", "the model has no graph")
    put("undefined_output.onnx",
        mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y"), vi("z")]),
        "lenient", "graph output 'z' is never defined")
    seq = helper.make_tensor_sequence_value_info("x", F, [2])
    put("sequence_input.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [seq], [vi("y")]),
        "lenient", "graph input 'x' has non-tensor type 'sequence' (only tensors are supported)")
    put("sequence_output.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [vi("x")],
           [helper.make_tensor_sequence_value_info("y", F, [2])]),
        "lenient", "graph output 'y' has non-tensor type 'sequence'")
    put("input_bad_dtype.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [vi("x", 99)], [vi("y")]),
        "lenient", "graph input 'x' has unsupported element type 99 (unknown)")
    put("input_negative_dim.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [vi("x", F, [2, -3])], [vi("y")]),
        "lenient", "graph input 'x' has negative dim -3")
    notype = onnx.ValueInfoProto()
    notype.name = "x"
    put("input_no_type.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [notype], [vi("y")]),
        "lenient", "graph input 'x' has no type")
    put("input_no_shape.onnx",
        mk([helper.make_node("Identity", ["x"], ["y"])], [vi("x", F, None)], [vi("y")]),
        "lenient", "graph input 'x' has no shape")
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "b", [],
                               [vi("t")])
    put("control_flow.onnx",
        mk([helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch,
                             else_branch=branch)], [vi("c", TensorProto.BOOL, [])], [vi("y")]),
        "lenient", "node 'if' (If): attribute 'else_branch' holds a subgraph")
    sp = helper.make_sparse_tensor(helper.make_tensor("sv", F, [1], [1.0]),
                                   helper.make_tensor("si", TensorProto.INT64, [1], [0]), [4])
    put("sparse_initializer.onnx",
        mk([helper.make_node("Identity", ["sv"], ["y"])], [], [vi("y")], sparse=[sp]),
        "lenient", "sparse initializer 'sv' is not supported")
    put("resize_tf_half_pixel_for_nn.onnx",
        mk([helper.make_node("Resize", ["x", "", "s"], ["y"], name="rz",
                             coordinate_transformation_mode="tf_half_pixel_for_nn")],
           [vi("x", F, [1, 1, 2, 2])], [vi("y")],
           inits=[numpy_helper.from_array(np.ones(4, np.float32), "s")], opset=11),
        "lenient", "node 'rz' (Resize): coordinate_transformation_mode 'tf_half_pixel_for_nn'")
    fn = helper.make_function("local", "MyRelu", ["a"], ["b"],
                              [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    m = mk([helper.make_node("MyRelu", ["x"], ["y"], name="call", domain="local")],
           [vi("x")], [vi("y")])
    m.opset_import.append(helper.make_opsetid("local", 1))
    m.functions.append(fn)
    put("local_function.onnx", m, "strict",
        "model-local functions are not supported ('MyRelu')")
    put("groupnorm18.onnx",
        mk([helper.make_node("GroupNormalization", ["x", "x", "x"], ["y"], name="gn",
                             num_groups=1)], [vi("x")], [vi("y")], opset=18),
        "lenient", "GroupNormalization before opset 21")
    put("duplicate_attribute.onnx", dup_attr(), "lenient",
        "node 'elu' (Elu): attribute 'alpha' given twice")
    c = helper.make_node("Constant", [], ["y"], name="c",
                         value=raw_tensor("", 99, [1], b"\0"))
    put("constant_bad_dtype.onnx", mk([c], [], [vi("y")]), "lenient",
        "node 'c' (Constant): attribute 'value': unsupported data type 99")
    n = helper.make_node("Relu", ["x"], ["y"], name="r")
    n.op_type = ""
    put("no_op_type.onnx", mk([n], [vi("x")], [vi("y")]), "lenient", "node 'r' has no op_type")
    put("unnamed_initializer.onnx", ident([raw_tensor("", F, [1], b"\0" * 4)]), "lenient",
        "initializer 0 has no name")
    # Attribute graphs nested 100 deep: refused before unpacking.
    put("deep_nesting.onnx", deep_model(100), "lenient", "nested more than 64 deep")


def dup_attr():
    n = helper.make_node("Elu", ["x"], ["y"], name="elu", alpha=1.0)
    a = n.attribute.add()
    a.CopyFrom(n.attribute[0])
    return mk([n], [vi("x")], [vi("y")])


def deep_model(depth):
    # Built as bytes: GraphProto.node(1) -> NodeProto.attribute(5) ->
    # AttributeProto.g(6) -> GraphProto ... ; protobuf's own encoder refuses
    # recursion this deep in some versions, so encode by hand.
    def ld(field, payload):
        key = bytes([(field << 3) | 2])
        n = len(payload)
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                break
        return key + bytes(out) + payload
    g = b""
    for _ in range(depth):
        attr = ld(1, b"g") + ld(6, g)          # AttributeProto{name, g}
        node = ld(4, b"If") + ld(5, attr)      # NodeProto{op_type, attribute}
        g = ld(1, node)                        # GraphProto{node}
    opset = b"\x10\x11"                        # OperatorSetIdProto{version=17}
    return b"\x08\x08" + ld(7, g) + ld(8, opset)


def npy(descr, shape, body, major=1, fortran="False", raw_header=None):
    h = raw_header or "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran,
                                                                             shape)
    hb = h.encode() + b"\n"
    if major == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hb))
    else:
        pre = b"\x93NUMPY" + bytes([major, 0]) + struct.pack("<I", len(hb))
    return pre + hb + body


def npy_corpus():
    put("bad_magic.npy", b"\x93NUMPX\x01\x00" + b"\0" * 40, "tensor", "bad_magic.npy: not a .npy file (bad magic)")
    put("bad_header.npy", npy(None, None, b"", raw_header="[1, 2, 3]"), "tensor",
        "bad_header.npy: bad .npy header dict")
    put("unknown_key.npy", npy(None, None, b"", raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
        "tensor", "bad .npy header dict (unknown key)")
    put("truncated_body.npy", npy("<f4", "(4,)", b"\0" * 12), "tensor",
        "truncated_body.npy: truncated .npy data (12 bytes, shape needs 16)")
    put("size_mismatch.npy", npy("<f4", "(2,)", b"\0" * 12), "tensor",
        "size_mismatch.npy: .npy size mismatch")
    put("absurd_dims.npy", npy("<f8", "(1099511627776, 1099511627776)", b""), "tensor",
        "absurd_dims.npy")
    put("negative_dim.npy", npy("<f4", "(-2,)", b""), "tensor", "non-negative")
    put("complex.npy", npy("<c16", "(1,)", b"\0" * 16), "tensor",
        "unsupported .npy dtype '<c16'")
    put("object.npy", npy("|O", "(1,)", b"\0" * 8), "tensor", "unsupported .npy dtype '|O'")
    put("bad_version.npy", npy("<f4", "(1,)", b"\0" * 4, major=9), "tensor",
        "unsupported .npy format version 9.0")
    put("truncated_header.npy", b"\x93NUMPY\x01\x00\xff\x00{'descr'", "tensor",
        "truncated .npy header")
    put("short.npy", b"\x93NUMPY", "tensor", "bad magic")
    put("bad_fortran.npy", npy("<f4", "(1,)", b"\0" * 4, fortran="Yes"), "tensor",
        "'fortran_order' must be True or False")
    put("rank17.npy", npy("|u1", "(" + "1, " * 17 + ")", b"\0"), "tensor", "rank exceeds")


def pb_corpus():
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "t")
    tb = t.SerializeToString()
    put("truncated.pb", tb[:-5], "tensor", "truncated.pb: truncated")
    put("garbage.pb", b"\xff" * 16, "tensor", "garbage.pb")
    put("unknown_dtype.pb", raw_tensor("t", 77, [1], b"\0"), "tensor",
        "tensor 't': unsupported data type 77")
    put("no_dtype.pb", raw_tensor("t", 0, [1], b"\0"), "tensor", "tensor has no data type")
    put("short_raw.pb", raw_tensor("t", F, [2, 3], b"\0" * 20), "tensor",
        "raw_data holds 20 bytes; 6 f32 elements need 24")
    put("negative_dim.pb", raw_tensor("t", F, [3, -1], b""), "tensor", "negative")
    put("absurd_dims.pb", raw_tensor("t", F, [1 << 31, 1 << 31, 1 << 31], b""), "tensor",
        "absurd_dims.pb")
    put("string.pb", helper.make_tensor("t", TensorProto.STRING, [1], [b"x"]), "tensor",
        "unsupported data type 8 (STRING)")
    t = helper.make_tensor("t", TensorProto.INT8, [2], [1, 2])
    t.int32_data[:] = [1, 200]
    put("i8_out_of_range.pb", t, "tensor", "int32_data value out of range for i8")
    t = raw_tensor("t", F, [1], b"")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "/etc/passwd"
    put("external_abs.pb", t, "tensor", "is an absolute path")
    t = raw_tensor("t", F, [1], b"\0" * 4)
    t.segment.begin = 0
    t.segment.end = 1
    put("segment.pb", t, "tensor", "segmented tensors are not supported")
    put("rank17.pb", raw_tensor("t", TensorProto.UINT8, [1] * 17, b"\0"), "tensor",
        "rank 17 exceeds")


if __name__ == "__main__":
    onnx_corpus()
    npy_corpus()
    pb_corpus()
    extra = os.path.join(HERE, "EXPECTED.extra")
    with open(os.path.join(HERE, "EXPECTED"), "w") as f:
        f.write("# file<TAB>mode<TAB>substring of the error (generated by make_corpus.py)\n")
        for name, mode, expect in entries:
            f.write(f"{name}\t{mode}\t{expect}\n")
        if os.path.exists(extra):
            f.write(open(extra).read())
