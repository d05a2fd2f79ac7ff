"""The DLPack protocol (__dlpack__ and __dlpack_device__): reading such
objects into host numpy arrays (Module.run), reading their device address
(Module.run_device), and handing device memory out as DLPack capsules
(xcomp.DeviceArray).

xcomp's executor takes host tensors and uploads them to the target's device
itself, so a DLPack tensor is brought to the host: memory the host can read
(CPU, CUDA host-pinned, CUDA managed) is used in place, without a copy, for
as long as the run lasts; CUDA device memory is copied to the host with the
CUDA driver (libcuda.so.1, loaded on first use), ordered after the
producer's pending work through the legacy default stream (stream=1 of the
protocol)."""

import ctypes

import numpy as np

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13
KDL_ROCM = 10

_HOST_READABLE = (KDL_CPU, KDL_CUDA_HOST, KDL_CUDA_MANAGED)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# DLPack type code (0 int, 1 uint, 2 float, 4 bfloat, 6 bool) and bits -> numpy
# dtype; bfloat16 arrives as its raw uint16 bits (numpy has no bfloat16).
_DTYPES = {
    (0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64,
    (1, 8): np.uint8, (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64,
    (2, 16): np.float16, (2, 32): np.float32, (2, 64): np.float64,
    (4, 16): np.uint16, (6, 8): np.bool_,
}


def is_dlpack(obj):
    return hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


class _Cuda:
    """The few CUDA driver calls a device-to-host copy needs."""

    lib = None

    @classmethod
    def copy_to_host(cls, dst, src, nbytes, device_id):
        if cls.lib is None:
            try:
                cls.lib = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise RuntimeError(f"a CUDA tensor was given but libcuda.so.1 cannot be loaded: {e}") from e
        cu = cls.lib

        def check(rc, what):
            if rc != 0:
                raise RuntimeError(f"CUDA driver: {what} failed with error {rc}")

        check(cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        check(cu.cuDeviceGet(ctypes.byref(dev), device_id), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        try:
            check(cu.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")
            try:
                check(cu.cuMemcpyDtoH_v2(ctypes.c_void_p(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes)),
                      "cuMemcpyDtoH")
            finally:
                popped = ctypes.c_void_p()
                cu.cuCtxPopCurrent_v2(ctypes.byref(popped))
        finally:
            cu.cuDevicePrimaryCtxRelease_v2(dev)


def to_numpy(obj, keepalive):
    """A host numpy array with obj's contents. Arrays that alias obj's memory
    stay valid while the capsule appended to keepalive lives."""
    device_type, device_id = obj.__dlpack_device__()
    device_type = int(device_type)
    if device_type == KDL_CUDA:
        try:
            capsule = obj.__dlpack__(stream=1)
        except TypeError:
            capsule = obj.__dlpack__()
    elif device_type in _HOST_READABLE:
        capsule = obj.__dlpack__()
    else:
        raise ValueError(f"DLPack device type {device_type} is not supported (CPU and CUDA are)")
    keepalive.append(capsule)
    managed = ctypes.cast(_capsule_get_pointer(capsule, b"dltensor"), ctypes.POINTER(DLManagedTensor)).contents
    t = managed.dl_tensor
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DTYPES:
        raise ValueError(f"DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes "
                         "is not supported")
    dtype = np.dtype(_DTYPES[key])
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = dtype.itemsize
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(t.ndim))
    if any(s < 0 for s in strides):
        raise ValueError("DLPack tensors with negative strides are not supported")
    numel = int(np.prod(shape, dtype=np.int64))
    # Elements spanned from the first to the last element.
    span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    address = (t.data or 0) + t.byte_offset
    if device_type == KDL_CUDA:
        flat = np.empty(span, dtype=dtype)
        if span:
            _Cuda.copy_to_host(flat.ctypes.data, address, span * itemsize, int(device_id))
    elif span:
        buf = (ctypes.c_char * (span * itemsize)).from_address(address)
        flat = np.frombuffer(buf, dtype=dtype, count=span)
    else:
        flat = np.empty(0, dtype=dtype)
    if numel == 0:
        return np.empty(shape, dtype=dtype)
    return np.lib.stride_tricks.as_strided(flat, shape=shape, strides=tuple(s * itemsize for s in strides))


# ---- device-resident tensors --------------------------------------------------

_DLPACK_OF_XC = {
    "f32": (2, 32), "f16": (2, 16), "f64": (2, 64), "bf16": (4, 16),
    "i8": (0, 8), "i16": (0, 16), "i32": (0, 32), "i64": (0, 64),
    "u8": (1, 8), "u16": (1, 16), "u32": (1, 32), "u64": (1, 64), "bool": (6, 8),
}


def dlpack_dtype(xc_name):
    """(type code, bits) of an xcomp dtype name; None when DLPack has none."""
    return _DLPACK_OF_XC.get(xc_name)


def xc_dtype_of(code, bits):
    for name, key in _DLPACK_OF_XC.items():
        if key == (code, bits):
            return name
    return None


def device_view(obj, device, keepalive):
    """(xcomp dtype name, shape, device address) of a DLPack tensor that
    lives on `device` ((DLPack device type, index)) and is dense and
    row-major. The capsule is appended to keepalive: the memory stays the
    producer's while it lives."""
    dev = tuple(int(x) for x in obj.__dlpack_device__())
    if dev != tuple(device):
        raise ValueError(f"the tensor is on DLPack device {dev}, the module runs on {tuple(device)}")
    if dev[0] in (KDL_CUDA, KDL_ROCM):
        try:
            capsule = obj.__dlpack__(stream=1)  # ordered after the producer's work (legacy default stream)
        except TypeError:
            capsule = obj.__dlpack__()
    else:
        capsule = obj.__dlpack__()
    keepalive.append(capsule)
    t = ctypes.cast(_capsule_get_pointer(capsule, b"dltensor"), ctypes.POINTER(DLManagedTensor)).contents.dl_tensor
    name = xc_dtype_of(t.dtype.code, t.dtype.bits) if t.dtype.lanes == 1 else None
    if name is None:
        raise ValueError(f"DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes "
                         "is not supported")
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    if t.strides:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and int(t.strides[i]) != expect:
                raise ValueError(f"the tensor is not dense and row-major (shape {list(shape)}, strides "
                                 f"{[int(t.strides[k]) for k in range(t.ndim)]}): make it contiguous first")
            expect *= shape[i]
    return name, shape, (t.data or 0) + t.byte_offset


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# The capsule destructor gets the capsule object itself as a raw pointer.
_capsule_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# Exports alive: DLManagedTensor address -> (owner, the ctypes objects it points into).
_exports = {}


@_DELETER
def _deleter(managed):
    _exports.pop(managed, None)


@_DESTRUCTOR
def _destructor(capsule):
    # A capsule nobody consumed still holds its tensor; a consumer renames it
    # ("used_dltensor") and calls the deleter itself when done.
    if _capsule_is_valid_raw(capsule, b"dltensor"):
        managed = _capsule_get_pointer_raw(capsule, b"dltensor")
        _exports.pop(managed, None)


def export(owner, address, device, xc_name, shape):
    """A DLPack capsule ("dltensor") over device memory at address that
    keeps owner alive until the consumer (or the capsule, unconsumed) lets
    go of it."""
    code, bits = _DLPACK_OF_XC[xc_name]
    ndim = len(shape)
    dims = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides = (ctypes.c_int64 * max(ndim, 1))()
    step = 1
    for i in reversed(range(ndim)):
        strides[i] = step
        step *= shape[i]
    m = DLManagedTensor()
    m.dl_tensor.data = address
    m.dl_tensor.device = DLDevice(device[0], device[1])
    m.dl_tensor.ndim = ndim
    m.dl_tensor.dtype = DLDataType(code, bits, 1)
    m.dl_tensor.shape = dims
    m.dl_tensor.strides = strides
    m.dl_tensor.byte_offset = 0
    m.manager_ctx = None
    m.deleter = ctypes.cast(_deleter, ctypes.c_void_p)
    key = ctypes.addressof(m)
    _exports[key] = (owner, m, dims, strides)
    return _capsule_new(key, b"dltensor", ctypes.cast(_destructor, ctypes.c_void_p))
