"""ctypes declarations of the parts of libxcomp.so the package calls.

The library is the project's SDK (include/xcomp/*.h); the package uses the
embedding API (include/xcomp/embed.h), the tensor and status helpers, the
tensor-file reader, the autotuner (include/xcomp/tune.h) and the
conformance runner (include/xcomp/conformance.h). Which file is loaded: $XCOMP_LIBRARY if set, else the
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
        ("bind_ms", ctypes.c_double),
        ("upload_ms", ctypes.c_double),
        ("download_ms", ctypes.c_double),
        ("step_ms", ctypes.POINTER(ctypes.c_double)),
        ("value_bytes", ctypes.POINTER(ctypes.c_int64)),
        ("module", ctypes.c_void_p),
        ("bucket", ctypes.c_int64),
    ]


class DeviceTensor(ctypes.Structure):
    """xc_device_tensor_t (include/xcomp/runtime.h)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("dims", ctypes.c_int64 * MAX_RANK),
        ("address", ctypes.c_uint64),
        ("bytes", ctypes.c_size_t),
        ("buffer", ctypes.c_void_p),
    ]


class ModelOptions(ctypes.Structure):
    """xc_model_options_t (include/xcomp/embed.h)."""

    _fields_ = [
        ("target", ctypes.c_char_p),
        ("precision", ctypes.c_char_p),
        ("opt_level", ctypes.c_int),
        ("use_cache", ctypes.c_bool),
        ("tuning_db", ctypes.c_char_p),
        ("no_tuning_db", ctypes.c_bool),
        ("input_shapes", ctypes.c_char_p),
        ("dynamic", ctypes.c_char_p),
        ("buckets", ctypes.c_char_p),
    ]


class TuneOptions(ctypes.Structure):
    """xc_tune_options_t (include/xcomp/tune.h)."""

    _fields_ = [
        ("model_path", ctypes.c_char_p),
        ("target", ctypes.c_char_p),
        ("precision", ctypes.c_int),
        ("opt_level", ctypes.c_int),
        ("db_path", ctypes.c_char_p),
        ("trials", ctypes.c_int),
        ("time_budget_s", ctypes.c_double),
        ("batch", ctypes.c_int),
        ("jobs", ctypes.c_int),
        ("random_search", ctypes.c_bool),
        ("seed", ctypes.c_uint64),
        ("worker_exe", ctypes.c_char_p),
        ("timeout_s", ctypes.c_double),
        ("max_tasks", ctypes.c_int),
        ("max_local_memory_bytes", ctypes.c_int64),
        ("max_threads_per_group", ctypes.c_int),
        ("progress", ctypes.c_void_p),
        ("live", ctypes.c_bool),
    ]


class TuneSummary(ctypes.Structure):
    """xc_tune_summary_t (include/xcomp/tune.h)."""

    _fields_ = [
        ("run_id", ctypes.c_char * 40),
        ("num_tasks", ctypes.c_int),
        ("num_kernels", ctypes.c_int),
        ("trials", ctypes.c_int),
        ("invalid", ctypes.c_int),
        ("seconds", ctypes.c_double),
        ("default_ms", ctypes.c_double),
        ("tuned_ms", ctypes.c_double),
        ("rank_correlation", ctypes.c_double),
        ("rank_samples", ctypes.c_int),
    ]


class ConformOptions(ctypes.Structure):
    """xc_conform_options_t (include/xcomp/conformance.h)."""

    _fields_ = [
        ("target", ctypes.c_char_p),
        ("filter", ctypes.c_char_p),
        ("models", ctypes.c_bool),
        ("timeout_s", ctypes.c_double),
        ("jobs", ctypes.c_int),
        ("progress", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("allow_tf32", ctypes.c_bool),
        ("per_op", ctypes.c_int),
        ("max_local_memory_bytes", ctypes.c_int64),
        ("max_threads_per_group", ctypes.c_int),
        ("compile_only", ctypes.c_bool),
    ]


class ConformCase(ctypes.Structure):
    """xc_conform_case_t (include/xcomp/conformance.h)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dir", ctypes.c_char_p),
        ("op", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("verdict", ctypes.c_int),
        ("detail", ctypes.c_char_p),
        ("seconds", ctypes.c_double),
        ("xfail_reason", ctypes.c_char_p),
    ]


class ConformReport(ctypes.Structure):
    """xc_conform_report_t (include/xcomp/conformance.h)."""

    _fields_ = [
        ("num_cases", ctypes.c_int),
        ("cases", ctypes.POINTER(ConformCase)),
        ("passed", ctypes.c_int),
        ("failed", ctypes.c_int),
        ("skipped", ctypes.c_int),
        ("xfailed", ctypes.c_int),
        ("xpassed", ctypes.c_int),
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

# name: (restype, argtypes). The structures above mirror the C headers
# field for field; the *_init functions fill in the defaults.
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
    "xc_model_options_init": (None, [ctypes.POINTER(ModelOptions)]),
    "xc_model_compile": (_status, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ModelOptions),
                                   ctypes.POINTER(_model)]),
    "xc_tune_options_init": (None, [ctypes.POINTER(TuneOptions)]),
    "xc_tune_model": (_status, [ctypes.POINTER(TuneOptions), ctypes.POINTER(TuneSummary)]),
    "xc_conform_options_init": (None, [ctypes.POINTER(ConformOptions)]),
    "xc_conform_run": (_status, [ctypes.c_char_p, ctypes.POINTER(ConformOptions), ctypes.POINTER(ConformReport)]),
    "xc_conform_report_free": (None, [ctypes.POINTER(ConformReport)]),
    "xc_conform_verdict_name": (ctypes.c_char_p, [ctypes.c_int]),
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
    "xc_model_run_into": (_status, [_model, ctypes.c_int, ctypes.POINTER(_tensor_p), ctypes.c_int,
                                    ctypes.POINTER(_tensor_p), ctypes.POINTER(RunStats)]),
    "xc_model_device": (_status, [_model, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
    "xc_model_run_device": (_status, [_model, ctypes.c_int, ctypes.POINTER(DeviceTensor), ctypes.c_int,
                                      ctypes.POINTER(DeviceTensor), ctypes.POINTER(RunStats)]),
    "xc_buffer_free": (None, [ctypes.c_void_p]),
    "xc_buffer_read": (_status, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]),
    "xc_targets_init": (_status, []),
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

# The structs above mirror the library's field by field: a library whose
# layout differs would write past them, so refuse it here.
lib.xc_abi_struct_size.restype = ctypes.c_size_t
lib.xc_abi_struct_size.argtypes = [ctypes.c_char_p]
for _cname, _cls in (("xc_tensor_t", Tensor), ("xc_run_stats_t", RunStats), ("xc_device_tensor_t", DeviceTensor),
                     ("xc_model_options_t", ModelOptions),
                     ("xc_tune_options_t", TuneOptions), ("xc_tune_summary_t", TuneSummary),
                     ("xc_conform_options_t", ConformOptions), ("xc_conform_case_t", ConformCase),
                     ("xc_conform_report_t", ConformReport)):
    _want = lib.xc_abi_struct_size(_cname.encode())
    if _want != ctypes.sizeof(_cls):
        raise ImportError(f"xcomp: {path} lays out {_cname} in {_want} bytes, this package in "
                          f"{ctypes.sizeof(_cls)}: the library and the package are from different builds")
