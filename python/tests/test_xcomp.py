"""The Python package: compile, run, save/load, errors, DLPack inputs,
tuning (xcomp.tune, compiles with its database) and xcomp.conform,
against the repository's models (tests/models) and their stored ONNX
Runtime outputs, at the tolerance `xcomp compare` is given for them in
tools/demo.sh (rtol 1e-3, atol 1e-5, relative L2 1e-5)."""
import numpy as np
import pytest

import xcomp


def assert_close(actual, expected, rtol=1e-3, atol=1e-5, rel_l2=1e-5):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a = actual.astype(np.float64)
    r = expected.astype(np.float64)
    assert np.all(np.abs(a - r) <= atol + rtol * np.abs(r)), f"max-abs {np.abs(a - r).max()}"
    assert np.linalg.norm(a - r) <= rel_l2 * np.linalg.norm(r)


def case(models, name):
    d = models / name / "test_data_set_0"
    return (models / name / "model.onnx", [xcomp.read_tensor(d / "input_0.pb")],
            xcomp.read_tensor(d / "output_0.pb"))


@pytest.fixture(scope="module")
def gpt2(models):
    path, inputs, ref = case(models, "gpt2-tiny")
    return xcomp.compile(path, target="cpu"), inputs, ref


def test_gpt2_tiny_on_cpu_matches_the_stored_output(gpt2):
    m, inputs, ref = gpt2
    (logits,) = m.run(*inputs)
    assert_close(logits, ref)
    assert m.target == "cpu"
    stats = m.last_run_stats
    assert stats["launches"] > 0 and stats["peak_bytes"] > 0 and stats["total_ms"] > 0


def test_inputs_and_outputs_describe_the_model(gpt2):
    m, _, _ = gpt2
    assert m.inputs == [xcomp.TensorInfo("input_ids", "int64", (1, 16))]
    assert m.outputs == [xcomp.TensorInfo("logits", "float32", (1, 16, 512))]


def test_run_into_the_callers_arrays(gpt2):
    m, inputs, ref = gpt2
    out = np.full((1, 16, 512), np.nan, dtype=np.float32)
    for _ in range(2):
        got = m.run(*inputs, out=[out])
        assert got[0] is out
        assert_close(out, ref)
        out[...] = np.nan
    with pytest.raises(xcomp.Error, match="the tensor given is f32\\[1,16,500\\]"):
        m.run(*inputs, out=[np.zeros((1, 16, 500), np.float32)])
    with pytest.raises(xcomp.Error, match="a float64 array, the output is float32"):
        m.run(*inputs, out=[np.zeros((1, 16, 512))])
    with pytest.raises(xcomp.Error, match="C-contiguous"):
        m.run(*inputs, out=[np.zeros((1, 512, 16), np.float32).transpose(0, 2, 1)])
    with pytest.raises(xcomp.Error, match="out= has 2 arrays"):
        m.run(*inputs, out=[out, out])


def test_outputs_are_not_copied_and_outlive_their_views(gpt2):
    import gc
    m, inputs, ref = gpt2
    (a,) = m.run(*inputs)
    row = a[0, 3]  # a view: keeps the run's output memory alive
    del a
    gc.collect()
    m.run(*inputs)  # new outputs elsewhere
    assert_close(row, ref[0, 3])


def test_named_inputs_and_lists(gpt2):
    m, inputs, ref = gpt2
    assert_close(m.run(input_ids=inputs[0])[0], ref)
    assert_close(m(inputs[0].tolist())[0], ref)  # anything numpy.asarray takes, in the input's dtype


def test_save_and_load_give_the_same_outputs(gpt2, tmp_path):
    m, inputs, ref = gpt2
    path = tmp_path / "gpt2.xcm"
    m.save(path)
    m2 = xcomp.load(path)
    assert m2.inputs == m.inputs and m2.outputs == m.outputs and m2.target == "cpu"
    np.testing.assert_array_equal(m2.run(*inputs)[0], m.run(*inputs)[0])
    m2.close()
    with pytest.raises(xcomp.Error, match="closed"):
        m2.run(*inputs)


def test_compile_from_onnx_bytes(models):
    path, inputs, ref = case(models, "mlp")
    m = xcomp.compile(path.read_bytes(), target="cpu", cache=False)
    assert_close(m.run(*inputs)[0], ref)


def test_precision_f16(models):
    path, inputs, ref = case(models, "mlp")
    m = xcomp.compile(path, precision="f16")
    assert m.inputs[0].dtype == "float16"
    (y,) = m.run(inputs[0])  # float32 data is rounded to the f16 input
    assert y.dtype == np.float16
    r = ref.astype(np.float64)
    assert np.linalg.norm(y.astype(np.float64) - r) <= 2e-3 * np.linalg.norm(r)


def test_symbolic_dims_and_xir(tmp_path):
    src = tmp_path / "scale.xir"
    src.write_text("xir 1\ngraph scale opset 23 {\n  input x: f32[n,3]\n  y = Relu(x)\n  output y\n}\n")
    m = xcomp.compile(src)
    assert m.inputs[0].shape == ("n", 3)
    for n in (1, 5):
        x = np.linspace(-2, 2, n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(m.run(x)[0], np.maximum(x, 0))


class DLPackOnly:
    """An object that offers its data only through the DLPack protocol."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_inputs(gpt2):
    m, inputs, ref = gpt2
    assert_close(m.run(DLPackOnly(inputs[0]))[0], ref)


def test_dlpack_strided_input(tmp_path):
    src = tmp_path / "neg.xir"
    src.write_text("xir 1\ngraph neg opset 23 {\n  input x: f32[2,3]\n  y = Neg(x)\n  output y\n}\n")
    m = xcomp.compile(src)
    big = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = big[::2, 1::2]  # non-contiguous: strides (48, 8) bytes
    np.testing.assert_array_equal(m.run(DLPackOnly(view))[0], -view)
    # outputs are numpy arrays, so they are DLPack producers themselves
    out = m.run(view)[0]
    np.testing.assert_array_equal(np.from_dlpack(out), -view)


def test_errors_carry_the_library_message(gpt2, tmp_path, models):
    m, inputs, _ = gpt2
    with pytest.raises(xcomp.Error) as e:
        xcomp.compile(tmp_path / "missing.onnx")
    assert "missing.onnx" in str(e.value) and e.value.code == "NOT_FOUND"
    with pytest.raises(xcomp.Error, match="nosuch"):
        xcomp.compile(models / "mlp" / "model.onnx", target="nosuch")
    with pytest.raises(xcomp.Error, match="precision"):
        xcomp.compile(models / "mlp" / "model.onnx", precision="f8")
    with pytest.raises(xcomp.Error) as e:
        xcomp.compile(b"not an onnx model")
    assert e.value.message
    with pytest.raises(xcomp.Error, match="missing.db") as e:  # a named database must exist
        xcomp.compile(models / "mlp" / "model.onnx", tuning_db=tmp_path / "missing.db")
    assert e.value.code == "NOT_FOUND"
    with pytest.raises(xcomp.Error, match="missing input 'input_ids'"):
        m.run()
    with pytest.raises(xcomp.Error, match="no input 'ids'"):
        m.run(ids=inputs[0])
    with pytest.raises(xcomp.Error, match="given twice"):
        m.run(inputs[0], input_ids=inputs[0])
    with pytest.raises(xcomp.Error, match="float32 array, the module expects int64"):
        m.run(inputs[0].astype(np.float32))
    with pytest.raises(xcomp.Error, match="input_ids"):  # the executor's shape check, from C
        m.run(np.zeros((1, 7), dtype=np.int64))
    with pytest.raises(xcomp.Error) as e:
        xcomp.load(tmp_path / "missing.xcm")
    bad = tmp_path / "bad.xcm"
    bad.write_bytes(b"XCOMPMOD" + b"\0" * 40)
    with pytest.raises(xcomp.Error, match="bad.xcm"):
        xcomp.load(bad)


def test_opencl_when_present(models):
    path, inputs, ref = case(models, "mlp")
    try:
        m = xcomp.compile(path, target="opencl")
    except xcomp.Error as e:
        if e.code == "UNAVAILABLE":
            pytest.skip(f"no OpenCL device: {e}")
        raise
    assert_close(m.run(*inputs)[0], ref)


def test_torch_cuda_tensors(models):
    """On a machine with an NVIDIA GPU and torch: a CUDA tensor goes in
    through DLPack, compiled for the cuda target."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    path, inputs, ref = case(models, "gpt2-tiny")
    m = xcomp.compile(path, target="cuda")
    ids = torch.from_numpy(inputs[0]).cuda()
    (logits,) = m.run(ids)
    assert_close(logits, ref, rel_l2=1e-4)
    strided = torch.from_numpy(np.ascontiguousarray(np.repeat(inputs[0], 2, axis=1))).cuda()[:, ::2]
    assert_close(m.run(strided)[0], ref, rel_l2=1e-4)
    cpu_model = xcomp.compile(path, target="cpu")
    assert_close(cpu_model.run(ids)[0], ref)  # a CUDA tensor into a cpu module
    # Device-resident: the CUDA tensor read in place, the output handed to
    # torch without a host copy, or written into a torch tensor.
    assert m.dlpack_device == (2, 0)
    (out,) = m.run_device(ids)
    logits_dev = torch.from_dlpack(out)
    assert logits_dev.is_cuda and logits_dev.data_ptr() == out.address
    assert_close(logits_dev.cpu().numpy(), ref, rel_l2=1e-4)
    dest = torch.empty(ref.shape, dtype=torch.float32, device="cuda")
    assert m.run_device(ids, out=[dest])[0] is dest
    assert_close(dest.cpu().numpy(), ref, rel_l2=1e-4)
    with pytest.raises(xcomp.Error, match="not dense and row-major"):
        m.run_device(strided)
    with pytest.raises(xcomp.Error, match=r"DLPack device \(1, 0\), the module runs on \(2, 0\)"):
        m.run_device(inputs[0])
    del logits_dev, out
    m.close()


def test_compile_for_other_shapes(tmp_path, models):
    src = tmp_path / "flex.xir"
    src.write_text("xir 1\ngraph flex opset 23 {\n  input x: f32[2,3]\n  const flat: i64[1] = [-1]\n"
                   "  y = Relu(x)\n  z = Reshape(y, flat)\n  output z\n}\n")
    m = xcomp.compile(src, shapes={"x": (4, 3)})
    assert m.inputs[0].shape == (4, 3) and m.outputs[0].shape == (12,)
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(m.run(x)[0], np.maximum(x, 0).reshape(-1))
    with pytest.raises(xcomp.Error, match=r"\(Reshape\)"):  # gpt2-tiny reshapes to its exported sizes
        xcomp.compile(case(models, "gpt2-tiny")[0], shapes={"input_ids": (1, 32)})


def test_shape_buckets(models, tmp_path):
    """dynamic=: one module specialized per bucket; a size between buckets
    runs the next one padded and agrees with the same module's generic run
    (at a bucket's size) and with the interpreter's numbers through
    'xcomp run --target ref' elsewhere (tests/cli/test_cli_dynamic.sh)."""
    src = models.parent / "dynamic" / "gpt2-dyn" / "model.onnx"
    m = xcomp.compile(src, dynamic="seq=1..32", buckets=[8, 16], cache=False)
    assert m.inputs[0].shape[1] == "seq"
    ids = (np.arange(12, dtype=np.int64) * 37 % 512).reshape(1, 12)
    (y12,) = m.run(ids)
    assert y12.shape == (1, 12, 512)
    (y16,) = m.run(np.concatenate([ids, ids[:, :4]], axis=1))
    # causal: the first 12 positions do not see the 4 added after them
    np.testing.assert_allclose(y16[:, :12], y12, rtol=1e-4, atol=1e-5)
    with pytest.raises(xcomp.Error, match=r"compiled for seq in 1\.\.32"):
        m.run(np.zeros((1, 33), np.int64))
    with pytest.raises(xcomp.Error, match="goes with dynamic"):
        xcomp.compile(src, buckets=[8])
    m.close()


def test_run_device_on_cpu(gpt2):
    """Device-resident runs on the cpu target (its device memory is host
    memory, DLPack device (1, 0)): outputs are the module's own buffers
    handed out without a copy, or written into arrays the caller gives."""
    m, inputs, ref = gpt2
    assert m.dlpack_device == (1, 0)
    (out,) = m.run_device(inputs[0])
    assert isinstance(out, xcomp.DeviceArray)
    assert out.shape == (1, 16, 512) and out.dtype == "float32" and out.device == (1, 0)
    view = np.from_dlpack(out)
    assert view.ctypes.data == out.address  # no copy: numpy reads the buffer the run wrote
    assert_close(view, ref)
    assert_close(out.numpy(), ref)
    assert m.last_run_stats["launches"] > 0
    (again,) = m.run_device(input_ids=DLPackOnly(inputs[0]))
    assert again.address != out.address  # each run's outputs are buffers of their own
    assert_close(np.from_dlpack(again), ref)
    dest = np.full(ref.shape, np.nan, dtype=np.float32)
    result = m.run_device(inputs[0], out=[dest])
    assert result[0] is dest
    assert_close(dest, ref)
    del view, out, again


def test_run_device_keeps_outputs_after_close(models):
    path, inputs, ref = case(models, "gpt2-tiny")
    m = xcomp.compile(path, target="cpu")
    (out,) = m.run_device(inputs[0])
    view = np.from_dlpack(out)
    del out
    m.close()  # the buffer stays until view is gone
    assert_close(view, ref)
    with pytest.raises(xcomp.Error, match="closed"):
        m.run_device(inputs[0])


def test_run_device_errors(gpt2):
    m, inputs, ref = gpt2
    with pytest.raises(xcomp.Error, match="float32 tensor, the module expects int64"):
        m.run_device(inputs[0].astype(np.float32))
    with pytest.raises(xcomp.Error, match="not dense and row-major"):
        m.run_device(np.repeat(inputs[0], 2, axis=1)[:, ::2])
    with pytest.raises(xcomp.Error, match="run_device takes DLPack tensors"):
        m.run_device(inputs[0].tolist())
    with pytest.raises(xcomp.Error, match="missing input 'input_ids'"):
        m.run_device()

    class OnGpu(DLPackOnly):
        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(xcomp.Error, match=r"DLPack device \(2, 0\), the module runs on \(1, 0\)"):
        m.run_device(OnGpu(inputs[0]))
    with pytest.raises(xcomp.Error, match="input_ids"):  # the executor's shape check, from C
        m.run_device(np.zeros((1, 7), dtype=np.int64))
    with pytest.raises(xcomp.Error, match="needs 32768 bytes"):  # too small an out=
        m.run_device(inputs[0], out=[np.zeros(16, dtype=np.float32)])
    with pytest.raises(xcomp.Error, match="out= has 2 tensors"):
        m.run_device(inputs[0], out=[ref, ref])


def test_targets_lists_registered_targets():
    ts = {t.name: t for t in xcomp.targets()}
    assert "cpu" in ts, sorted(ts)
    cpu = ts["cpu"]
    assert cpu.available and cpu.reason is None and cpu.origin == "built-in"
    assert len(cpu.devices) >= 1 and cpu.devices[0]
    for t in ts.values():  # an unavailable target says why and lists no device
        assert t.available or (t.reason and not t.devices)


def test_tune_then_compile_with_the_database(models, tmp_path):
    """A short tuning run of the cnn on cpu (its two heaviest tasks) into a
    database of the test's own; a compile that takes its schedules still
    computes the stored output."""
    path, inputs, ref = case(models, "cnn")
    db = tmp_path / "tuning.db"
    s = xcomp.tune(path, target="cpu", trials=2, batch=2, db=db, max_tasks=2)
    assert isinstance(s, xcomp.TuneSummary) and s.run_id
    assert s.num_kernels >= s.num_tasks >= 1 and s.trials >= 1 and s.invalid < s.trials
    assert s.default_ms > 0 and s.tuned_ms > 0 and s.seconds > 0
    assert db.exists()
    m = xcomp.compile(path, target="cpu", tuning_db=db)
    assert_close(m.run(*inputs)[0], ref)
    untuned = xcomp.compile(path, target="cpu", tuning_db=False)  # the schedulers' defaults
    assert_close(untuned.run(*inputs)[0], ref)


def test_tune_errors(models, tmp_path, monkeypatch):
    with pytest.raises(xcomp.Error, match="search"):
        xcomp.tune(models / "cnn" / "model.onnx", search="best")
    with pytest.raises(xcomp.Error, match="missing.onnx"):
        xcomp.tune(tmp_path / "missing.onnx", trials=1, db=tmp_path / "t.db")
    monkeypatch.setenv("XCOMP_CLI", str(tmp_path / "no-xcomp"))
    with pytest.raises(xcomp.Error, match="XCOMP_CLI") as e:
        xcomp.tune(models / "cnn" / "model.onnx", trials=1, db=tmp_path / "t.db")
    assert e.value.code == "NOT_FOUND"


def test_conform_models_on_cpu(models):
    r = xcomp.conform(models / "mlp", target="cpu", models=True, timeout=60)
    assert r.ok and (r.passed, r.failed, r.skipped) == (1, 0, 0), r
    (c,) = r.cases
    assert c.name == "mlp" and c.verdict == "PASS" and c.message == "" and c.seconds > 0


def test_conform_reports_disagreement_and_errors(models, tmp_path):
    bad = tmp_path / "tests" / "mlp"
    bad.mkdir(parents=True)
    (bad / "model.onnx").write_bytes((models / "mlp" / "model.onnx").read_bytes())
    data = bad / "test_data_set_0"
    data.mkdir()
    src = models / "mlp" / "test_data_set_0"
    (data / "input_0.pb").write_bytes((src / "input_0.pb").read_bytes())
    out = (src / "output_0.pb").read_bytes()
    (data / "output_0.pb").write_bytes(out[:-8] + bytes(8))  # the last two floats zeroed
    r = xcomp.conform(tmp_path / "tests", target="cpu", models=True)  # a model the interpreter disagrees with
    assert (r.passed, r.failed, r.skipped) == (0, 0, 1) and not r.ok, r
    assert r.cases[0].verdict == "UNSUPPORTED" and "stored output" in r.cases[0].message
    with pytest.raises(xcomp.Error, match="nosuch") as e:
        xcomp.conform(models / "mlp", target="nosuch")
    assert e.value.code == "UNAVAILABLE"
    with pytest.raises(xcomp.Error, match="missing"):
        xcomp.conform(tmp_path / "missing")
