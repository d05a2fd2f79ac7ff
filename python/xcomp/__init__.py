"""xcomp: compile ONNX models for CPUs and accelerators, and run them.

    import numpy as np, xcomp
    m = xcomp.compile("model.onnx", target="cpu")      # through the compile cache
    (logits,) = m.run(np.array([[1, 2, 3]], dtype=np.int64))
    m.save("model.xcm")
    m2 = xcomp.load("model.xcm")

Built on libxcomp.so, the project's shared library (its embedding API,
include/xcomp/embed.h), through ctypes. docs/python.md describes the API.
"""

import collections
import os

import numpy as np

from . import _dlpack
from . import _native

__all__ = ["Error", "Module", "TensorInfo", "Target", "compile", "load", "read_tensor", "targets", "__version__"]
__version__ = "0.1.0"

_lib = _native.lib


class Error(Exception):
    """An error from xcomp. str(e) and e.message are the library's message
    (the thing at fault named, as the CLI prints it); e.code is its status
    code's name ("INVALID_ARGUMENT", "UNSUPPORTED", "NOT_FOUND", ...)."""

    def __init__(self, message, code="INVALID_ARGUMENT"):
        super().__init__(message)
        self.message = message
        self.code = code


def _check(status):
    """Raises Error for a non-NULL xc_status_t (and frees it)."""
    if not status:
        return
    try:
        message = _lib.xc_status_message(status).decode("utf-8", "replace")
        code = _lib.xc_code_name(_lib.xc_status_code(status)).decode().upper().replace(" ", "_")
    finally:
        _lib.xc_status_free(status)
    raise Error(message, code)


# xcomp dtype names (include/xcomp/dtype.h) <-> numpy. bf16 has no numpy
# dtype: bf16 outputs come back as float32 (exactly), bf16 inputs take
# float32 arrays (rounded to nearest even) or uint16 arrays of raw bits.
_NUMPY = {
    "f32": "float32", "f64": "float64", "f16": "float16", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool",
}
_NUMPY_NAMES = {"bf16": "bfloat16", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def _dtype_name(code):
    return _lib.xc_dtype_name(code).decode()


def _dtype_code(name):
    out = _native.ctypes.c_int()
    if not _lib.xc_dtype_from_name(name.encode(), _native.ctypes.byref(out)):
        raise Error(f"unknown dtype '{name}'")
    return out.value


TensorInfo = collections.namedtuple("TensorInfo", ["name", "dtype", "shape"])
TensorInfo.__doc__ = """An input or output of a module: its name, its dtype as numpy names it
("float32", "int64"; "bfloat16" for bf16) and its shape, a tuple of ints,
with a str for each symbolic dim ("batch")."""


def _bf16_bits(a):
    """float32 -> bf16 bits, rounded to nearest even (NaN kept NaN)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    nan = np.isnan(a)
    return np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


class Module:
    """A compiled model ready to run (xcomp.compile, xcomp.load)."""

    def __init__(self, handle):
        self._handle = handle
        self.inputs = self._infos(False)
        self.outputs = self._infos(True)
        self.last_run_stats = None

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _lib.xc_model_destroy(handle)

    def _live(self):
        if not self._handle:
            raise Error("the module was closed")
        return self._handle

    def close(self):
        """Releases the module and its device now (also done when it is
        garbage-collected)."""
        self.__del__()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def target(self):
        """The target it was compiled for ("cpu", "opencl", "cuda", ...)."""
        return _lib.xc_model_target(self._live()).decode()

    @property
    def device(self):
        """The device it runs on (after a run) or was compiled for."""
        return _lib.xc_model_device_name(self._live()).decode()

    def _infos(self, is_output):
        h = self._live()
        infos = []
        buf = _native.ctypes.create_string_buffer(128)
        for i in range(_lib.xc_model_num_ios(h, is_output)):
            name = _lib.xc_model_io_name(h, is_output, i).decode()
            dt = _dtype_name(_lib.xc_model_io_dtype(h, is_output, i))
            shape = []
            for d in range(_lib.xc_model_io_rank(h, is_output, i)):
                size = _lib.xc_model_io_dim(h, is_output, i, d, buf, len(buf))
                shape.append(size if size >= 0 else buf.value.decode())
            infos.append(TensorInfo(name, _NUMPY.get(dt) or _NUMPY_NAMES.get(dt, dt), tuple(shape)))
        return infos

    def save(self, path):
        """Writes the compiled module to path (.xcm): xcomp.load and
        'xcomp run path.xcm' read it."""
        _check(_lib.xc_model_save(self._live(), os.fsencode(path)))

    def _bind(self, arrays, named):
        """One host array per input, in input order."""
        n = len(self.inputs)
        if len(arrays) > n:
            raise Error(f"{len(arrays)} inputs given, the module takes {n} "
                        f"({', '.join(i.name for i in self.inputs) or 'none'})")
        values = list(arrays) + [None] * (n - len(arrays))
        index = {info.name: k for k, info in enumerate(self.inputs)}
        for name, value in named.items():
            if name not in index:
                raise Error(f"the module has no input '{name}' (its inputs: "
                            f"{', '.join(i.name for i in self.inputs) or 'none'})")
            if values[index[name]] is not None:
                raise Error(f"input '{name}' is given twice")
            values[index[name]] = value
        keepalive = []
        out = []
        for info, value in zip(self.inputs, values):
            if value is None:
                raise Error(f"missing input '{info.name}' ({info.dtype}{list(info.shape)})")
            out.append(self._host_array(info, value, keepalive))
        return out, keepalive

    @staticmethod
    def _host_array(info, value, keepalive):
        if isinstance(value, np.ndarray):
            a = value
        elif _dlpack.is_dlpack(value):
            try:
                a = _dlpack.to_numpy(value, keepalive)
            except (ValueError, RuntimeError) as e:
                raise Error(f"input '{info.name}': {e}") from None
        else:
            a = np.asarray(value, dtype=None if info.dtype == "bfloat16" else info.dtype)
        if info.dtype == "bfloat16":
            if a.dtype == np.float32:
                a = _bf16_bits(a)
            elif a.dtype != np.uint16:
                raise Error(f"input '{info.name}': a {a.dtype} array, the module expects bfloat16 "
                            "(give float32, rounded, or uint16 bits)")
        elif info.dtype == "float16" and a.dtype == np.float32:
            a = a.astype(np.float16)  # a model compiled with precision="f16" takes f32 data, rounded
        elif a.dtype != np.dtype(info.dtype):
            raise Error(f"input '{info.name}': a {a.dtype} array, the module expects {info.dtype}")
        return np.ascontiguousarray(a)

    def run(self, *arrays, **named):
        """Runs the module once. Inputs are numpy arrays, objects with
        __dlpack__ (torch tensors on CPU or CUDA, ...), or anything
        numpy.asarray takes; positional ones bind the inputs in order,
        keyword ones by name (xcomp.Module.inputs lists them). Returns the
        outputs as a list of numpy arrays. Statistics of the run (times,
        peak memory) are left in self.last_run_stats."""
        h = self._live()
        host, keepalive = self._bind(arrays, named)
        ct = _native.ctypes
        n_in, n_out = len(host), len(self.outputs)
        tensors = (ct.POINTER(_native.Tensor) * max(n_in, 1))()
        outputs = (ct.POINTER(_native.Tensor) * max(n_out, 1))()
        stats = _native.RunStats()
        try:
            for k, (info, a) in enumerate(zip(self.inputs, host)):
                code = _dtype_code("bf16") if info.dtype == "bfloat16" else _dtype_code(_xc_name(a.dtype))
                dims = (ct.c_int64 * _native.MAX_RANK)(*a.shape)
                wrapped = ct.POINTER(_native.Tensor)()
                data = ct.c_void_p(a.ctypes.data) if a.size else None
                _check(_lib.xc_tensor_wrap(code, a.ndim, dims, data, ct.byref(wrapped)))
                tensors[k] = wrapped
            _check(_lib.xc_model_run(h, n_in, tensors, outputs, ct.byref(stats)))
            results = [_to_numpy(outputs[k].contents) for k in range(n_out)]
        finally:
            for k in range(n_in):
                if tensors[k]:
                    _lib.xc_tensor_destroy(tensors[k])
            for k in range(n_out):
                if outputs[k]:
                    _lib.xc_tensor_destroy(outputs[k])
            del keepalive
        self.last_run_stats = {
            "total_ms": stats.total_ms, "kernels_ms": stats.kernels_ms, "issue_ms": stats.issue_ms,
            "peak_bytes": stats.peak_bytes, "launches": stats.launches, "graph_replayed": stats.graph_replayed,
        }
        return results

    __call__ = run

    def __repr__(self):
        if not self._handle:
            return "<xcomp.Module closed>"
        return f"<xcomp.Module target={self.target!r} inputs={self.inputs} outputs={self.outputs}>"


def _xc_name(np_dtype):
    name = np.dtype(np_dtype).name
    for xc, npn in _NUMPY.items():
        if npn == name:
            return xc
    raise Error(f"numpy dtype {name} has no xcomp dtype")


def _to_numpy(t):
    """A copy of an xc_tensor_t as a numpy array (bf16 -> float32)."""
    name = _dtype_name(t.dtype)
    shape = tuple(t.dims[i] for i in range(t.rank))
    if name == "bf16":
        bits = _raw(t, np.uint16, shape)
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if name not in _NUMPY:
        raise Error(f"output dtype {name} has no numpy equivalent")
    return _raw(t, np.dtype(_NUMPY[name]), shape)


def _raw(t, dtype, shape):
    out = np.empty(shape, dtype=dtype)
    if out.nbytes:
        _native.ctypes.memmove(out.ctypes.data, t.data, out.nbytes)
    return out


def compile(model, target="cpu", precision=None, tuning_db=None, opt_level=None, cache=True):
    """Compiles a model for a target and returns a Module.

    model: a path (.onnx, .xir) or the bytes of an ONNX model.
    target: "cpu" (default), "opencl", "opencl:1", "cuda", "rocm", a plugin's
      name, or an architecture ("cuda:sm_90", "rocm:gfx90a") to compile
      without its device ('xcomp targets' lists what this machine has).
    precision: None or "f32" (as written), "f16" or "bf16": the model's
      float32 tensors are converted (inputs and outputs too).
    tuning_db: a tuning database to take schedules from; xcomp has no
      autotuner yet, so giving one raises Error (UNSUPPORTED).
    opt_level: 0..3, the graph pass pipeline level (default 2).
    cache: go through the compile cache ($XCOMP_CACHE_DIR, default
      ~/.cache/xcomp); a second compile of the same thing is near-instant.
    Raises Error with the library's message when anything is wrong."""
    if tuning_db is not None:
        raise Error(f"tuning_db {tuning_db!r}: xcomp has no tuning database yet (schedules come from the "
                    "target's scheduler)", "UNSUPPORTED")
    level = -1 if opt_level is None else int(opt_level)
    tgt = None if target is None else str(target).encode()
    prec = None if precision is None else str(precision).encode()
    handle = _native.ctypes.c_void_p()
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        _check(_lib.xc_model_compile_onnx_buffer(data, len(data), tgt, prec, level, bool(cache),
                                                 _native.ctypes.byref(handle)))
    elif isinstance(model, (str, os.PathLike)):
        _check(_lib.xc_model_compile_file(os.fsencode(model), tgt, prec, level, bool(cache),
                                          _native.ctypes.byref(handle)))
    else:
        raise TypeError(f"model must be a path or ONNX bytes, not {type(model).__name__}")
    return Module(handle.value)


def load(path, device=None):
    """Loads a compiled module (.xcm, from Module.save or 'xcomp compile').
    device: a device of its target ("opencl:1"); default the first."""
    handle = _native.ctypes.c_void_p()
    _check(_lib.xc_model_load(os.fsencode(path), None if device is None else str(device).encode(),
                              _native.ctypes.byref(handle)))
    return Module(handle.value)


def read_tensor(path):
    """Reads a tensor file (.npy, or an ONNX TensorProto .pb such as a
    test_data_set_N/output_K.pb) into a numpy array."""
    t = _native.ctypes.POINTER(_native.Tensor)()
    _check(_lib.xc_tensor_read_file(os.fsencode(path), _native.ctypes.byref(t), None))
    try:
        return _to_numpy(t.contents)
    finally:
        _lib.xc_tensor_destroy(t)


Target = collections.namedtuple("Target", "name description origin available reason devices")
Target.__doc__ = """A registered target, as `xcomp targets` lists it: name ("cpu",
"cuda", ...), description, origin ("built-in" or the plugin's path), whether
it is available here, the reason when not, and its devices (one name each,
"spirv:0" is devices[0])."""


def _status_text(status):
    """The message of a non-NULL status (freed), else None."""
    if not status:
        return None
    try:
        return _lib.xc_status_message(status).decode("utf-8", "replace")
    finally:
        _lib.xc_status_free(status)


def targets():
    """Every registered target (built-in ones and plugins) with its devices."""
    import ctypes

    out = []
    for i in range(_lib.xc_target_count()):
        t = _lib.xc_target_at(i)
        if not t:
            continue
        reason = _status_text(_lib.xc_target_availability(t))
        devices = []
        if reason is None:
            n = ctypes.c_int(0)
            if _status_text(_lib.xc_target_device_count(t, ctypes.byref(n))) is None:
                for d in range(n.value):
                    buf = ctypes.create_string_buffer(_native.CAPS_BUFFER_BYTES)
                    if _status_text(_lib.xc_target_device_caps(t, d, buf)) is None:
                        devices.append(buf.raw[:128].split(b"\0", 1)[0].decode("utf-8", "replace"))
        out.append(Target(_lib.xc_target_name(t).decode(), (_lib.xc_target_description(t) or b"").decode(),
                          (_lib.xc_target_origin(t) or b"").decode(), reason is None, reason, devices))
    return out
