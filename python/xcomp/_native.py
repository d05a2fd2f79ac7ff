"""ctypes declarations of the parts of libxcomp.so the package calls.

The library is the project's SDK (include/xcomp/*.h); the package uses the
embedding API (include/xcomp/embed.h), the tensor and status helpers and
the tensor-file reader. Which file is loaded: $XCOMP_LIBRARY if set, else the
copy installed in the package (xcomp/lib/libxcomp.so), else the system's
(ld.so's search path)."""

import ctypes
import ctypes.util
import os

MAX_RANK = 16  # XC_MAX_RANK, include/xcomp/tensor.h


class Tensor(ctypes.Structure):
    """xc_tensor_t (include/xcomp/tensor.h)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("dims", ctypes.c_int64 * MAX_RANK),
        ("numel", ctypes.c_int64),
        ("data", ctypes.c_void_p),
        ("owns_data", ctypes.c_bool),
    ]


class RunStats(ctypes.Structure):
    """xc_run_stats_t (include/xcomp/runtime.h)."""

    _fields_ = [
        ("total_ms", ctypes.c_double),
        ("kernels_ms", ctypes.c_double),
        ("issue_ms", ctypes.c_double),
        ("peak_bytes", ctypes.c_int64),
        ("planned_bytes", ctypes.c_int64),
        ("unplanned_bytes", ctypes.c_int64),
        ("launches", ctypes.c_int),
        ("graph_replayed", ctypes.c_bool),
        ("graph_captured", ctypes.c_bool),
        ("graph_note", ctypes.c_char * 160),
    ]


def _library_path():
    env = os.environ.get("XCOMP_LIBRARY")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libxcomp.so")
    if os.path.exists(here):
        return here
    found = ctypes.util.find_library("xcomp")
    if found:
        return found
    raise ImportError(
        "xcomp: libxcomp.so not found (not in the package, not on the library path); "
        "install the package with 'pip install .' from the repository, or set XCOMP_LIBRARY"
    )


_status = ctypes.c_void_p
_tensor_p = ctypes.POINTER(Tensor)
_model = ctypes.c_void_p

# name: (restype, argtypes)
_FUNCTIONS = {
    "xc_status_message": (ctypes.c_char_p, [_status]),
    "xc_status_code": (ctypes.c_int, [_status]),
    "xc_code_name": (ctypes.c_char_p, [ctypes.c_int]),
    "xc_status_free": (None, [_status]),
    "xc_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "xc_dtype_from_name": (ctypes.c_bool, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "xc_dtype_size": (ctypes.c_size_t, [ctypes.c_int]),
    "xc_tensor_wrap": (_status, [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p,
                                 ctypes.POINTER(_tensor_p)]),
    "xc_tensor_destroy": (None, [_tensor_p]),
    "xc_tensor_read_file": (_status, [ctypes.c_char_p, ctypes.POINTER(_tensor_p), ctypes.c_void_p]),
    "xc_model_compile_file": (_status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                        ctypes.c_bool, ctypes.POINTER(_model)]),
    "xc_model_compile_onnx_buffer": (_status, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.c_int, ctypes.c_bool, ctypes.POINTER(_model)]),
    "xc_model_load": (_status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_model)]),
    "xc_model_save": (_status, [_model, ctypes.c_char_p]),
    "xc_model_destroy": (None, [_model]),
    "xc_model_target": (ctypes.c_char_p, [_model]),
    "xc_model_device_name": (ctypes.c_char_p, [_model]),
    "xc_model_num_ios": (ctypes.c_int, [_model, ctypes.c_bool]),
    "xc_model_io_name": (ctypes.c_char_p, [_model, ctypes.c_bool, ctypes.c_int]),
    "xc_model_io_dtype": (ctypes.c_int, [_model, ctypes.c_bool, ctypes.c_int]),
    "xc_model_io_rank": (ctypes.c_int, [_model, ctypes.c_bool, ctypes.c_int]),
    "xc_model_io_dim": (ctypes.c_int64, [_model, ctypes.c_bool, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                         ctypes.c_size_t]),
    "xc_model_run": (_status, [_model, ctypes.c_int, ctypes.POINTER(_tensor_p), ctypes.POINTER(_tensor_p),
                               ctypes.POINTER(RunStats)]),
    "xc_target_count": (ctypes.c_int, []),
    "xc_target_at": (ctypes.c_void_p, [ctypes.c_int]),
    "xc_target_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "xc_target_description": (ctypes.c_char_p, [ctypes.c_void_p]),
    "xc_target_origin": (ctypes.c_char_p, [ctypes.c_void_p]),
    "xc_target_availability": (_status, [ctypes.c_void_p]),
    "xc_target_device_count": (_status, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
    "xc_target_device_caps": (_status, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]),
}

# xc_device_caps_t (include/xcomp/target.h) begins with name[128], vendor[64],
# version[64]; the rest is not read here. The buffer is larger than the struct.
CAPS_BUFFER_BYTES = 16384

path = _library_path()
lib = ctypes.CDLL(path)
for _name, (_restype, _argtypes) in _FUNCTIONS.items():
    _f = getattr(lib, _name)
    _f.restype = _restype
    _f.argtypes = _argtypes
