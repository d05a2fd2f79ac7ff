"""xcomp: compile ONNX models for CPUs and accelerators, and run them.

    import numpy as np, xcomp
    m = xcomp.compile("model.onnx", target="cpu")      # through the compile cache
    (logits,) = m.run(np.array([[1, 2, 3]], dtype=np.int64))
    m.save("model.xcm")
    m2 = xcomp.load("model.xcm")
    xcomp.tune("model.onnx", target="cpu", trials=32)   # schedules for later compiles
    report = xcomp.conform("tests/models/mlp", target="cpu", models=True)

Built on libxcomp.so, the project's shared library (its embedding API,
include/xcomp/embed.h), through ctypes. docs/python.md describes the API.
"""

import collections
import os
from typing import Optional, Sequence, Union

import numpy as np

from . import _dlpack
from . import _native

__all__ = ["Error", "Module", "DeviceArray", "TensorInfo", "Target", "TuneSummary", "ConformCase", "ConformReport", "compile",
           "conform", "load", "read_tensor", "targets", "tune", "__version__"]
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
        self._device_arrays = 0  # DeviceArrays alive whose buffers this module's device holds
        self._closing = None

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle and getattr(self, "_device_arrays", 0):
            self._closing = handle  # DeviceArrays still hold its buffers: the last one destroys it
        elif handle:
            _lib.xc_model_destroy(handle)

    def _array_freed(self, buffer):
        _lib.xc_buffer_free(buffer)
        self._device_arrays -= 1
        closing = getattr(self, "_closing", None)
        if closing and not self._device_arrays:
            self._closing = None
            _lib.xc_model_destroy(closing)

    def _live(self):
        if not self._handle:
            raise Error("the module was closed")
        return self._handle

    def close(self):
        """Releases the module and its device now (also done when it is
        garbage-collected); while DeviceArrays from run_device (or tensors
        made from them) live, the device is released when the last goes."""
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
        values = self._order(arrays, named)
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

    def run(self, *arrays, out=None, **named):
        """Runs the module once. Inputs are numpy arrays, objects with
        __dlpack__ (torch tensors on CPU or CUDA, ...), or anything
        numpy.asarray takes; positional ones bind the inputs in order,
        keyword ones by name (xcomp.Module.inputs lists them). Returns the
        outputs as a list of numpy arrays. With out= (a list of writeable,
        C-contiguous numpy arrays, one per output, of the output's dtype and
        shape; uint16 holding the bits for a bfloat16 output) the outputs
        are written into those arrays, which are returned: repeated runs
        then reuse the same memory instead of new arrays (whose page faults
        cost more than the copy for large outputs). Statistics of the run
        (times, peak memory) are left in self.last_run_stats."""
        h = self._live()
        host, keepalive = self._bind(arrays, named)
        ct = _native.ctypes
        n_in, n_out = len(host), len(self.outputs)
        if out is not None:
            out = list(out)
            if len(out) != n_out:
                raise Error(f"out= has {len(out)} arrays, the module has {n_out} outputs")
            for k, (info, a) in enumerate(zip(self.outputs, out)):
                want = "uint16" if info.dtype == "bfloat16" else info.dtype
                if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or not a.flags.writeable:
                    raise Error(f"out[{k}] ('{info.name}'): a writeable, C-contiguous numpy array is needed")
                if a.dtype != np.dtype(want):
                    raise Error(f"out[{k}] ('{info.name}'): a {a.dtype} array, the output is {info.dtype}"
                                + (" (give uint16 for its bits)" if info.dtype == "bfloat16" else ""))
        tensors = (ct.POINTER(_native.Tensor) * max(n_in, 1))()
        outputs = (ct.POINTER(_native.Tensor) * max(n_out, 1))()
        stats = _native.RunStats()
        try:
            for k, (info, a) in enumerate(zip(self.inputs, host)):
                tensors[k] = _wrap_array(info, a)
            if out is None:
                _check(_lib.xc_model_run(h, n_in, tensors, outputs, ct.byref(stats)))
                results = []
                for k in range(n_out):
                    # a copy of the pointer (indexing shares the array's slot), then
                    # the slot cleared: the array owns the tensor now (or it is freed)
                    ptr = ct.cast(outputs[k], ct.POINTER(_native.Tensor))
                    outputs[k] = None
                    results.append(_take_numpy(ptr))
            else:
                for k, (info, a) in enumerate(zip(self.outputs, out)):
                    outputs[k] = _wrap_array(info, a)
                _check(_lib.xc_model_run_into(h, n_in, tensors, n_out, outputs, ct.byref(stats)))
                results = out
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

    @property
    def dlpack_device(self):
        """(DLPack device type, index) of the memory the module's tensors
        live in: (1, 0) on cpu, (2, N) on cuda and rocm_nv, (10, N) on rocm.
        Opens the device and loads the module (as the first run does).
        Raises Error (UNSUPPORTED) on targets whose memory has no device
        address (opencl, spirv): those run with host arrays only."""
        ct = _native.ctypes
        kind, index = ct.c_int(), ct.c_int()
        _check(_lib.xc_model_device(self._live(), ct.byref(kind), ct.byref(index)))
        return (kind.value, index.value)

    def run_device(self, *tensors, out=None, **named):
        """Runs the module once on device-resident tensors: no host copy.

        Inputs are DLPack tensors (torch CUDA tensors for a cuda module,
        numpy arrays for a cpu one, xcomp.DeviceArray) on the module's device
        (Module.dlpack_device), dense and row-major, of exactly the input's
        dtype; positional ones bind inputs in order, keyword ones by name.
        They are read on the device after the work their producer queued
        (CUDA: through the legacy default stream).

        Returns one xcomp.DeviceArray per output: memory of the device that
        torch.from_dlpack / numpy.from_dlpack take without a copy, complete
        when this returns. With out= (a list of DLPack tensors, one per
        output, on the device, of the output's dtype and shape), the outputs
        are written there instead and out is returned. Statistics are left
        in self.last_run_stats."""
        h = self._live()
        device = self.dlpack_device
        values = self._order(tensors, named)
        ct = _native.ctypes
        n_in, n_out = len(values), len(self.outputs)
        ins = (_native.DeviceTensor * max(n_in, 1))()
        outs = (_native.DeviceTensor * max(n_out, 1))()
        keepalive = []
        for k, (info, value) in enumerate(zip(self.inputs, values)):
            if value is None:
                raise Error(f"missing input '{info.name}' ({info.dtype}{list(info.shape)})")
            name, shape, address = self._device_view(f"input '{info.name}'", value, device, keepalive)
            want = _xc_name_of_info(info)
            if name != want:
                raise Error(f"input '{info.name}': a {_numpy_name(name)} tensor, the module expects {info.dtype}")
            if len(shape) > _native.MAX_RANK:
                raise Error(f"input '{info.name}': rank {len(shape)} is more than {_native.MAX_RANK}")
            ins[k].dtype = _dtype_code(name)
            ins[k].rank = len(shape)
            for d, size in enumerate(shape):
                ins[k].dims[d] = size
            ins[k].address = address
        if out is not None:
            out = list(out)
            if len(out) != n_out:
                raise Error(f"out= has {len(out)} tensors, the module has {n_out} outputs")
            out_shapes = []
            for k, (info, value) in enumerate(zip(self.outputs, out)):
                name, shape, address = self._device_view(f"out[{k}] ('{info.name}')", value, device, keepalive)
                if name != _xc_name_of_info(info):
                    raise Error(f"out[{k}] ('{info.name}'): a {_numpy_name(name)} tensor, the output is {info.dtype}")
                outs[k].address = address
                outs[k].bytes = int(np.prod(shape, dtype=np.int64)) * _lib.xc_dtype_size(_dtype_code(name))
                out_shapes.append(shape)
        stats = _native.RunStats()
        try:
            _check(_lib.xc_model_run_device(h, n_in, ins, n_out, outs, ct.byref(stats)))
        finally:
            del keepalive
        self.last_run_stats = {
            "total_ms": stats.total_ms, "kernels_ms": stats.kernels_ms, "issue_ms": stats.issue_ms,
            "peak_bytes": stats.peak_bytes, "launches": stats.launches, "graph_replayed": stats.graph_replayed,
        }
        results = [DeviceArray._own(self, outs[k], device) for k in range(n_out)]
        if out is None:
            return results
        for k, (got, shape) in enumerate(zip(results, out_shapes)):
            if got.shape != tuple(shape):
                raise Error(f"out[{k}] ('{self.outputs[k].name}') has shape {list(shape)}, the output has "
                            f"{list(got.shape)} (its values were written to the start of out[{k}])")
        return out

    def _order(self, values, named):
        """Positional and named arguments, one per input in input order."""
        n = len(self.inputs)
        if len(values) > n:
            raise Error(f"{len(values)} inputs given, the module takes {n} "
                        f"({', '.join(i.name for i in self.inputs) or 'none'})")
        ordered = list(values) + [None] * (n - len(values))
        index = {info.name: k for k, info in enumerate(self.inputs)}
        for name, value in named.items():
            if name not in index:
                raise Error(f"the module has no input '{name}' (its inputs: "
                            f"{', '.join(i.name for i in self.inputs) or 'none'})")
            if ordered[index[name]] is not None:
                raise Error(f"input '{name}' is given twice")
            ordered[index[name]] = value
        return ordered

    @staticmethod
    def _device_view(what, value, device, keepalive):
        if not _dlpack.is_dlpack(value):
            raise Error(f"{what}: a {type(value).__name__}, run_device takes DLPack tensors (__dlpack__) on the "
                        f"module's device {device}; Module.run takes host arrays")
        try:
            return _dlpack.device_view(value, device, keepalive)
        except ValueError as e:
            raise Error(f"{what}: {e}") from None

    def __repr__(self):
        if not self._handle:
            return "<xcomp.Module closed>"
        return f"<xcomp.Module target={self.target!r} inputs={self.inputs} outputs={self.outputs}>"


class DeviceArray:
    """An output of Module.run_device: memory of the module's device (a
    CUDA buffer for cuda, host memory for cpu) that DLPack consumers take
    without a copy: torch.from_dlpack(a), numpy.from_dlpack(a) on cpu. The
    memory is freed when this object and every tensor made from it are gone
    (and always before its module closes). a.numpy() copies it to the host."""

    def __init__(self):
        raise TypeError("DeviceArray objects come from Module.run_device")

    @classmethod
    def _own(cls, module, t, device):
        a = cls.__new__(cls)
        a._module = module  # the device lives while its buffers do
        a._buffer = t.buffer
        if t.buffer:
            module._device_arrays += 1
        a.address = t.address
        a.nbytes = t.bytes
        a.xc_dtype = _dtype_name(t.dtype)
        a.shape = tuple(t.dims[i] for i in range(t.rank))
        a.device = device
        return a

    @property
    def dtype(self):
        """The numpy name of its dtype ("float32"; "bfloat16" for bf16)."""
        return _numpy_name(self.xc_dtype)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The run that made it has completed: no stream needs to wait.
        if dl_device is not None and tuple(dl_device) != tuple(self.device):
            raise BufferError(f"the array is on DLPack device {self.device}, not {tuple(dl_device)}")
        if copy:
            raise BufferError("DeviceArray exports its own memory only (copy=True is not supported)")
        if _dlpack.dlpack_dtype(self.xc_dtype) is None:
            raise BufferError(f"dtype {self.xc_dtype} has no DLPack type")
        return _dlpack.export(self, self.address, self.device, self.xc_dtype, self.shape)

    def numpy(self):
        """A host copy as a numpy array (bf16 as float32)."""
        ct = _native.ctypes
        raw_name = "uint16" if self.xc_dtype == "bf16" else _NUMPY.get(self.xc_dtype)
        if raw_name is None:
            raise Error(f"dtype {self.xc_dtype} has no numpy equivalent")
        host = np.empty(self.shape, dtype=raw_name)
        if host.nbytes:
            if self._buffer:
                _check(_lib.xc_buffer_read(self._buffer, 0, ct.c_void_p(host.ctypes.data), host.nbytes))
            elif self.device[0] == _dlpack.KDL_CPU:
                ct.memmove(host.ctypes.data, self.address, host.nbytes)
            else:
                raise Error("the array is memory the caller gave (out=): read it through its own tensor")
        if self.xc_dtype == "bf16":
            return (host.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return host

    def __del__(self):
        buffer, self._buffer = getattr(self, "_buffer", None), None
        module = getattr(self, "_module", None)
        if buffer and module is not None:
            module._array_freed(buffer)

    def __repr__(self):
        return f"<xcomp.DeviceArray {self.dtype}{list(self.shape)} on DLPack device {self.device}>"


def _numpy_name(xc_name):
    return _NUMPY.get(xc_name) or _NUMPY_NAMES.get(xc_name, xc_name)


def _xc_name_of_info(info):
    """The xcomp dtype name of a TensorInfo's numpy name."""
    for table in (_NUMPY, _NUMPY_NAMES):
        for xc, npn in table.items():
            if npn == info.dtype:
                return xc
    return info.dtype


def _xc_name(np_dtype):
    name = np.dtype(np_dtype).name
    for xc, npn in _NUMPY.items():
        if npn == name:
            return xc
    raise Error(f"numpy dtype {name} has no xcomp dtype")


def _wrap_array(info, a):
    """An xc_tensor_t header over numpy array a's memory (a TensorInfo's dtype
    decides bf16; the caller destroys the header, a keeps the data)."""
    ct = _native.ctypes
    code = _dtype_code("bf16") if info.dtype == "bfloat16" else _dtype_code(_xc_name(a.dtype))
    dims = (ct.c_int64 * _native.MAX_RANK)(*a.shape)
    wrapped = ct.POINTER(_native.Tensor)()
    data = ct.c_void_p(a.ctypes.data) if a.size else None
    _check(_lib.xc_tensor_wrap(code, a.ndim, dims, data, ct.byref(wrapped)))
    return wrapped


class _OwnedTensor:
    """Keeps an xc_tensor_t alive while a numpy array views its data (the
    array's base); destroys it with the last view."""

    def __init__(self, ptr, dtype, shape):
        self._ptr = ptr
        t = ptr.contents
        self.__array_interface__ = {"shape": shape, "typestr": np.dtype(dtype).str,
                                    "data": (_native.ctypes.cast(t.data, _native.ctypes.c_void_p).value, False),
                                    "version": 3}

    def __del__(self):
        if self._ptr and _lib is not None:
            _lib.xc_tensor_destroy(self._ptr)
            self._ptr = None


def _take_numpy(ptr):
    """An output tensor as a numpy array without a copy: the array takes the
    tensor over (bf16, converted to float32, and empty tensors are copied,
    and the tensor freed)."""
    t = ptr.contents
    name = _dtype_name(t.dtype)
    shape = tuple(t.dims[i] for i in range(t.rank))
    if name == "bf16" or name not in _NUMPY or not t.data or 0 in shape:
        try:
            return _to_numpy(t)
        finally:
            _lib.xc_tensor_destroy(ptr)
    return np.asarray(_OwnedTensor(ptr, _NUMPY[name], shape))


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


def compile(model: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview], target: Optional[str] = "cpu",
            precision: Optional[str] = None, tuning_db: Union[None, bool, str, "os.PathLike[str]"] = None,
            opt_level: Optional[int] = None, cache: bool = True,
            shapes: Optional[dict] = None, dynamic: Optional[str] = None,
            buckets: Optional[Sequence[int]] = None) -> "Module":
    """Compiles a model for a target and returns a Module.

    model: a path (.onnx, .xir) or the bytes of an ONNX model.
    target: "cpu" (default), "opencl", "opencl:1", "cuda", "rocm", a plugin's
      name, or an architecture ("cuda:sm_90", "rocm:gfx90a") to compile
      without its device ('xcomp targets' lists what this machine has).
    precision: None or "f32" (as written), "f16" or "bf16": the model's
      float32 tensors are converted (inputs and outputs too).
    tuning_db: the tuning database (xcomp.tune writes it) each kernel takes
      its fastest recorded schedule from, for this target and device. None:
      tuning.db in the cache folder when that file exists; a path that does
      not exist raises Error (NOT_FOUND); False: no database (the
      schedulers' defaults).
    opt_level: 0..3, the graph pass pipeline level (default 2).
    cache: go through the compile cache ($XCOMP_CACHE_DIR, default
      ~/.cache/xcomp); a second compile of the same thing is near-instant.
    shapes: {input name: shape tuple} to compile for (as 'xcomp compile
      --shape'): symbolic dims made static, a model exported at another size
      re-shaped where its shape constants allow (else Error naming the
      node).
    dynamic: "NAME=MIN..MAX", shape buckets for the symbolic dim NAME (as
      'xcomp compile --dynamic'): one module specialized per bucket size,
      sizes between buckets padded where the padding check allows (else the
      generic module); buckets: the sizes (default: powers of two and MAX).
    Raises Error with the library's message when anything is wrong."""
    ct = _native.ctypes
    o = _native.ModelOptions()
    _lib.xc_model_options_init(ct.byref(o))
    o.target = None if target is None else str(target).encode()
    o.precision = None if precision is None else str(precision).encode()
    o.opt_level = -1 if opt_level is None else int(opt_level)
    o.use_cache = bool(cache)
    if shapes:
        spec = ";".join(f"{name}={'x'.join(str(int(d)) for d in dims)}" for name, dims in shapes.items())
        o.input_shapes = spec.encode()
    if dynamic:
        o.dynamic = str(dynamic).encode()
    if buckets:
        if not dynamic:
            raise Error("buckets= goes with dynamic='NAME=MIN..MAX'")
        o.buckets = ",".join(str(int(b)) for b in buckets).encode()
    if tuning_db is False:
        o.no_tuning_db = True
    elif tuning_db is not None:
        o.tuning_db = os.fsencode(tuning_db)
    handle = ct.c_void_p()
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        _check(_lib.xc_model_compile(None, data, len(data), ct.byref(o), ct.byref(handle)))
    elif isinstance(model, (str, os.PathLike)):
        _check(_lib.xc_model_compile(os.fsencode(model), None, 0, ct.byref(o), ct.byref(handle)))
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

    _check(_lib.xc_targets_init())
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


# ---- autotuning ----------------------------------------------------------------

TuneSummary = collections.namedtuple(
    "TuneSummary",
    "run_id num_tasks num_kernels trials invalid seconds default_ms tuned_ms rank_correlation rank_samples")
TuneSummary.__doc__ = """What xcomp.tune did (xc_tune_summary_t): the run's id in the
database, the tasks tuned (kernels of one structure tune once) and the
model's kernels, the candidates measured and how many of them were invalid
(failed to compile, crashed, hung or gave a wrong result), the seconds it
took, the kernel time per run with the default schedules and with the best
found (ms, weighted by launches), and the cost model's rank correlation with
the measurements it had not seen (NaN: too few) over rank_samples of them."""


def _cli_path() -> str:
    """The xcomp CLI that xcomp.tune runs to measure candidates: $XCOMP_CLI;
    else the one beside the loaded library (a build tree: build/libxcomp.so
    and build/xcomp); else the one pip installed with the package (the
    environment's scripts folder)."""
    import sys
    import sysconfig

    env = os.environ.get("XCOMP_CLI")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise Error(f"XCOMP_CLI={env}: not an executable file", "NOT_FOUND")
        return env
    places = [os.path.dirname(os.path.realpath(_native.path)), os.path.dirname(os.path.abspath(_native.path))]
    for scheme in (None, f"{os.name}_user"):
        try:
            places.append(sysconfig.get_path("scripts") if scheme is None else sysconfig.get_path("scripts", scheme))
        except KeyError:
            pass
    places.append(os.path.dirname(os.path.abspath(sys.executable)))
    seen = []
    for d in places:
        if not d or d in seen:
            continue
        seen.append(d)
        exe = os.path.join(d, "xcomp")
        if os.path.isfile(exe) and os.access(exe, os.X_OK):
            return exe
    raise Error("xcomp.tune needs the xcomp command-line program (it measures candidates in a process of "
                f"its own) and found none in {', '.join(seen)}: install the package with 'pip install .' "
                "(it installs the program), or set XCOMP_CLI to a built one (build/xcomp)", "NOT_FOUND")


class _StderrFile:
    """A C FILE* on a duplicate of file descriptor 2 (progress lines of the
    library go where the process's stderr goes, pytest's capture aside)."""

    def __enter__(self):
        ct = _native.ctypes
        self._libc = ct.CDLL(None)
        self._libc.fdopen.restype = ct.c_void_p
        self._libc.fdopen.argtypes = [ct.c_int, ct.c_char_p]
        self._libc.fclose.argtypes = [ct.c_void_p]
        self._libc.setvbuf.argtypes = [ct.c_void_p, ct.c_char_p, ct.c_int, ct.c_size_t]
        fd = os.dup(2)
        self.file = self._libc.fdopen(fd, b"w")
        if not self.file:
            os.close(fd)
        else:
            self._libc.setvbuf(self.file, None, 1, 0)  # _IOLBF: each line as it comes
        return self

    def __exit__(self, *exc):
        if self.file:
            self._libc.fclose(self.file)


def tune(model_path: Union[str, "os.PathLike[str]"], target: str = "cpu", trials: int = 32,
         db: Optional[Union[str, "os.PathLike[str]"]] = None, time_budget: Optional[float] = None,
         search: str = "model", batch: int = 8, seed: int = 0, quiet: bool = True, *,
         precision: Optional[str] = None, jobs: Optional[int] = None, timeout: Optional[float] = None,
         max_tasks: Optional[int] = None) -> TuneSummary:
    """Tunes the kernels' schedules of a model on a device (docs/autotune.md;
    the same as 'xcomp tune') and records every measurement in the tuning
    database, which later compiles for that target and device read
    (xcomp.compile's tuning_db).

    model_path: the model (.onnx, .xir).
    target: a present device: "cpu", "opencl:0", "cuda", ... (not an
      architecture).
    trials: schedules measured per task besides the default.
    db: the database file, created when missing; None: tuning.db in the
      cache folder ($XCOMP_CACHE_DIR, default ~/.cache/xcomp), which compiles
      read by default.
    time_budget: seconds after which no new round of measurements starts.
    search: "model" (candidates ranked by the learned cost model, which
      needs libxgboost) or "random" (the baseline).
    batch: candidates measured per round (1..256).
    seed: the search's random seed.
    quiet: False: progress lines on stderr.
    precision: None, "f16" or "bf16": tune the model as compiled with that
      precision. jobs: candidates compiled at once (default: the CPUs).
    timeout: seconds one candidate's run may take before it counts as hung.
    max_tasks: tune only the tasks with the most launches.

    Candidates run in processes of their own: the xcomp command-line
    program installed with the package ($XCOMP_CLI overrides it). Raises
    Error with the library's message when anything is wrong."""
    ct = _native.ctypes
    if search not in ("model", "random"):
        raise Error(f"search '{search}': expected 'model' or 'random'")
    if int(trials) < 1:
        raise Error(f"trials {trials}: expected a positive number")
    if not 1 <= int(batch) <= 256:
        raise Error(f"batch {batch}: expected 1 to 256")
    if int(seed) < 0:
        raise Error(f"seed {seed}: expected a number >= 0")
    worker = os.fsencode(_cli_path())
    o = _native.TuneOptions()
    _lib.xc_tune_options_init(ct.byref(o))
    path = os.fsencode(model_path)
    o.model_path = path
    o.target = str(target).encode()
    if precision is not None and precision != "f32":
        if precision not in ("f16", "bf16"):
            raise Error(f"precision '{precision}': expected f32, f16 or bf16")
        o.precision = _dtype_code(precision)
    o.db_path = None if db is None else os.fsencode(db)
    o.trials = int(trials)
    if time_budget is not None:
        if float(time_budget) <= 0:
            raise Error(f"time_budget {time_budget}: expected seconds > 0")
        o.time_budget_s = float(time_budget)
    o.batch = int(batch)
    o.random_search = search == "random"
    o.seed = int(seed)
    o.worker_exe = worker
    if jobs is not None:
        o.jobs = int(jobs)
    if timeout is not None:
        o.timeout_s = float(timeout)
    if max_tasks is not None:
        o.max_tasks = int(max_tasks)
    summary = _native.TuneSummary()
    if quiet:
        _check(_lib.xc_tune_model(ct.byref(o), ct.byref(summary)))
    else:
        with _StderrFile() as err:
            o.progress = err.file
            o.live = False
            _check(_lib.xc_tune_model(ct.byref(o), ct.byref(summary)))
    return TuneSummary(summary.run_id.decode("utf-8", "replace"), summary.num_tasks, summary.num_kernels,
                       summary.trials, summary.invalid, summary.seconds, summary.default_ms, summary.tuned_ms,
                       summary.rank_correlation, summary.rank_samples)


# ---- conformance -----------------------------------------------------------------

ConformCase = collections.namedtuple("ConformCase", "name op dtype verdict message seconds")
ConformCase.__doc__ = """One test of xcomp.conform: its name (the folder relative to the root,
"mlp", "node/test_abs"), its main op ("?" when unknown) and the dtype of its
first input (xcomp's name, "f32"; None when unknown), the verdict ("PASS",
"FAIL" or "UNSUPPORTED"), the message saying why it failed or is
unsupported ("" when it passed) and the seconds it took."""


class ConformReport(collections.namedtuple("ConformReport", "cases passed failed skipped")):
    """What xcomp.conform found: the cases (ConformCase, by name) and the
    totals; skipped counts the UNSUPPORTED ones. ok: no case failed and at
    least one passed."""

    __slots__ = ()

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.passed > 0


def conform(root: Union[str, "os.PathLike[str]"], target: str = "cpu", *, models: bool = False,
            filter: Optional[str] = None, per_op: int = 0, dtype: Optional[str] = None,
            timeout: float = 60.0, jobs: int = 1, allow_tf32: bool = False, quiet: bool = True) -> ConformReport:
    """Runs the ONNX-backend-style tests under root (a folder holding
    model.onnx and test_data_set_*, or folders of them) on a target, each in
    a child process with a time-out, as 'xcomp conform' does
    (docs/conformance.md), and returns the report.

    target: "cpu", "opencl:1", a plugin's name, ... or "ref" (the reference
      interpreter) or "tiled" (the tiled-IR interpreter).
    models: the tests are real models (tests/models/*): the interpreter is
      checked against the stored output by relative L2 and the target
      against the interpreter (at the per-dtype tolerances); False: ONNX
      node tests, checked against their stored outputs with ONNX's
      allclose (rtol 1e-3, atol 1e-7).
    filter: a POSIX extended regex the test names must match.
    per_op: > 0: only the first per_op tests of each (main op, dtype).
    dtype: with models, "f16" or "bf16": the models run converted to it and
      are compared at its tolerance.
    timeout: seconds per test; jobs: tests run at once.
    allow_tf32: f32 GEMMs may run in tf32 (compared at rel-L2 5e-4).
    quiet: False: a line per test on stderr as it finishes.

    The runner works in a fresh Python process (this one's interpreter and
    library): it forks a child per test, and a process that has run cpu
    kernels (OpenMP) cannot fork safely. Raises Error for an unknown target
    or a root without tests; a test that fails, crashes or hangs is a FAIL
    case, not an Error."""
    import json
    import subprocess
    import sys
    import tempfile

    target = str(target)
    if target not in ("ref", "tiled"):
        names = [t.name for t in targets()]
        if target.split(":", 1)[0] not in names:
            raise Error(f"no target or device matches '{target}' (targets: ref, tiled, {', '.join(names)})",
                        "UNAVAILABLE")
    if dtype is not None and dtype != "f32" and (dtype not in ("f16", "bf16") or not models):
        raise Error(f"dtype '{dtype}': expected f32, or f16 or bf16 with models=True")
    if not sys.executable:
        raise Error("xcomp.conform runs in a Python process of its own and cannot find this one's interpreter "
                    "(sys.executable is empty)", "UNAVAILABLE")
    args = {"root": os.fsdecode(os.path.abspath(root)), "target": target, "models": bool(models),
            "filter": filter, "per_op": int(per_op), "dtype": dtype, "timeout": float(timeout),
            "jobs": int(jobs), "allow_tf32": bool(allow_tf32), "quiet": bool(quiet)}
    env = dict(os.environ, XCOMP_LIBRARY=os.path.abspath(_native.path))
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="xcomp-conform.") as tmp:
        args["result"] = os.path.join(tmp, "result.json")
        proc = subprocess.run([sys.executable, "-c", "import sys, xcomp; xcomp._conform_main(sys.argv[1])",
                               json.dumps(args)], env=env, stdout=subprocess.DEVNULL, stderr=None)
        try:
            with open(args["result"], encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError):
            raise Error(f"the conformance runner's process ended ({proc.returncode}) without a report",
                        "INTERNAL") from None
    if "error" in result:
        raise Error(result["error"], result.get("code", "INTERNAL"))
    return ConformReport([ConformCase(*c) for c in result["cases"]], result["passed"], result["failed"],
                         result["skipped"])


def _conform_main(arguments: str) -> None:
    """The body of xcomp.conform's process: runs xc_conform_run and writes
    its report (or its error) as JSON to the file the arguments name."""
    import json

    a = json.loads(arguments)
    try:
        out = _conform_here(a)
    except Error as e:
        out = {"error": e.message, "code": e.code}
    with open(a["result"], "w", encoding="utf-8") as f:
        json.dump(out, f)


def _conform_here(a):
    ct = _native.ctypes
    o = _native.ConformOptions()
    _lib.xc_conform_options_init(ct.byref(o))
    strings = [a["target"].encode(), None if a["filter"] is None else str(a["filter"]).encode()]
    o.target, o.filter = strings
    o.models = a["models"]
    o.timeout_s = a["timeout"]
    o.jobs = a["jobs"]
    o.per_op = a["per_op"]
    o.allow_tf32 = a["allow_tf32"]
    if a["dtype"] not in (None, "f32"):
        o.dtype = _dtype_code(a["dtype"])
    report = _native.ConformReport()
    if a["quiet"]:
        _check(_lib.xc_conform_run(os.fsencode(a["root"]), ct.byref(o), ct.byref(report)))
    else:
        with _StderrFile() as err:
            o.progress = err.file
            _check(_lib.xc_conform_run(os.fsencode(a["root"]), ct.byref(o), ct.byref(report)))
    try:
        cases = []
        for i in range(report.num_cases):
            c = report.cases[i]
            dt = _dtype_name(c.dtype) if c.dtype else None
            cases.append([(c.name or b"").decode("utf-8", "replace"), (c.op or b"?").decode("utf-8", "replace"),
                          dt if dt and dt != "undefined" else None,
                          _lib.xc_conform_verdict_name(c.verdict).decode(),
                          (c.detail or b"").decode("utf-8", "replace"), c.seconds])
        return {"cases": cases, "passed": report.passed, "failed": report.failed, "skipped": report.skipped}
    finally:
        _lib.xc_conform_report_free(ct.byref(report))
