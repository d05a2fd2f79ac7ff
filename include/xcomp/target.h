/* xcomp targets: the one interface every execution target implements.
 *
 * A target is a code generator plus a small runtime for one family of devices
 * (the C compiler on the host CPU, OpenCL, a vendor's NPU). Built-in targets
 * and out-of-tree plugins (shared objects found on XCOMP_PLUGIN_PATH) register
 * through the same versioned entry point, xc_target_plugin_init, and are used
 * through the same functions below. docs/targets.md describes the interface
 * and docs/plugins.md how to write a plugin.
 *
 * Objects, each a `{ interface table; context }` pair:
 *   xc_target_t   one registered target (cpu, opencl, a plugin)
 *   xc_device_t   an opened device of a target (context, queue)
 *   xc_buffer_t   device memory         xc_module_t  loaded compiled code
 *   xc_kernel_t   one entry of a module xc_event_t   a timing point
 *
 * Every function reports failure with an xc_status_t (NULL = success) and
 * never aborts. Output parameters are named out_* and are cleared first. */
#ifndef XCOMP_TARGET_H
#define XCOMP_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xcomp/dtype.h"
#include "xcomp/layout.h"
#include "xcomp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever anything below changes: a struct layout, an interface
 * entry, a signature. XC_TARGET_API_MIN_VERSION is the oldest version a
 * plugin may still be built for: versions 4 and 5 only appended optional
 * entries to the interface table (buffer_alloc_mapped; buffer_device_address
 * and copy_device), so version-3 and -4 plugins load and their tables are
 * read only as far as their version defined them. */
#define XC_TARGET_API_VERSION 5
#define XC_TARGET_API_MIN_VERSION 3

/* A tiled kernel: defined by the tiled IR (xcomp/tiled.h). Targets only
 * receive pointers to it. */
struct xc_tiled_kernel;
struct xc_tiled_limits;
struct xc_tiled_schedule;
/* Also from the tiled IR and from the emitter (xcomp/emit.h), for the host
 * table. */
struct xc_tiled_value;
struct xc_tiled_dim;
struct xc_tiled_range;
struct xc_emit_dialect;
struct xc_emit_options;
struct xc_emit_writer;
struct xc_emit_entry;

/* ---------------------------------------------------------------------------
 * Device capabilities: hardware limits as data the optimizer reads.
 * ------------------------------------------------------------------------- */

typedef enum xc_device_kind {
  XC_DEVICE_CPU = 0,
  XC_DEVICE_GPU,
  XC_DEVICE_NPU,  /* any other accelerator */
} xc_device_kind_t;


/* One matrix-multiply-accumulate shape the hardware does natively
 * (tensor cores, matrix engines): D[m,n] += A[m,k] * B[k,n]. A warpgroup
 * instruction of m 64 and k 16 whose n may be any multiple of 8 up to 256
 * (sm_90's wgmma) is listed once, with n 256; a dot's instruction matches
 * it with any such n (xc_mma_shape_matches). */
typedef struct xc_mma_shape {
  int m, n, k;
  xc_dtype_t input_dtype;
  xc_dtype_t accumulator_dtype;
} xc_mma_shape_t;

#define XC_TARGET_MAX_MMA_SHAPES 8

/* Whether the listed shape offers an instruction of m x n x k on in ->
 * acc (the rule above). */
static inline bool xc_mma_shape_matches(const xc_mma_shape_t* listed, int m, int n, int k, xc_dtype_t in,
                                        xc_dtype_t acc) {
  if (listed->m != m || listed->k != k || listed->input_dtype != in || listed->accumulator_dtype != acc) return false;
  if (listed->n == n) return true;
  return m == 64 && k == 16 && listed->n == 256 && n > 0 && n < 256 && n % 8 == 0;
}

typedef struct xc_device_caps {
  char name[128];        /* "Intel(R) Xeon(R) ...", "NVIDIA H200", "pthread-..." */
  char vendor[64];
  char version[64];      /* driver or runtime version; "" when unknown */
  xc_device_kind_t kind;
  int compute_units;     /* cores, SMs, CUs */
  int simd_width;        /* f32 SIMD lanes (cpu), warp (NVIDIA), wavefront (AMD) */
  int max_threads_per_group;  /* work-group / thread-block limit; 1 = no groups */
  int64_t local_memory_bytes;  /* shared / __local memory per group (cpu: L1d) */
  int64_t global_memory_bytes;
  int64_t max_buffer_bytes;    /* largest single allocation; 0 = global size */
  xc_layout_t preferred_layout;
  uint32_t dtypes;       /* XC_DT(...) mask of element types kernels may use */
  int num_mma_shapes;
  xc_mma_shape_t mma_shapes[XC_TARGET_MAX_MMA_SHAPES];
  bool has_vendor_blas;
  /* A larger per-group limit a kernel can opt into beyond local_memory_bytes
   * (CUDA: dynamic shared memory up to the device's opt-in maximum); 0: none. */
  int64_t local_memory_optin_bytes;
} xc_device_caps_t;

/* ---------------------------------------------------------------------------
 * Compilation: tiled kernel -> source -> compiled blob.
 * ------------------------------------------------------------------------- */

/* A knob value chosen by the tuner for one kernel ("BLOCK_M" = 64...). */
typedef struct xc_knob {
  const char* name;
  int64_t value;
} xc_knob_t;

/* Kernel source in the target's language. `text` is NUL-terminated; when
 * produced by emit it is malloc'd and released with xc_kernel_source_release.
 * One source may define several entry points; `entry` names the main one. */
typedef struct xc_kernel_source {
  const char* language;  /* "c", "opencl-c", or a plugin's own name (static) */
  const char* text;
  char entry[128];       /* entry point symbol, e.g. "xk_add" */
} xc_kernel_source_t;

/* Options for compile. Every field may be zero/NULL (the defaults). */
typedef struct xc_compile_options {
  const char* compiler;     /* cpu: compiler command; NULL = $CC, else "cc" */
  const char* flags;        /* replaces the target's default flags when set */
  const char* extra_flags;  /* appended after the flags */
  bool cross;               /* building for another machine: cpu drops
                               -march=native */
  bool keep_temp;           /* keep temp files even on success (debugging) */
  bool allow_tf32;          /* f32 GEMMs may use tf32 matrix instructions (inputs rounded
                               to 10-bit mantissas, f32 accumulation) */
  /* When set, compile also writes the binaries it made to dump_path plus an
   * extension (cuda: ".cubin", ".ptx"); `xcomp compile --dump-kernels DIR`
   * sets it to DIR/<kernel>. Targets without such files ignore it. */
  const char* dump_path;
} xc_compile_options_t;

/* Compiled code for one module: a shared object (cpu), program source
 * (OpenCL), a vendor binary. These are the bytes a compiled model file
 * stores. `bytes` and `options` are malloc'd; release with xc_blob_release. */
typedef struct xc_blob {
  char format[32];   /* "elf-so", "opencl-c", ... : what module_load expects */
  uint8_t* bytes;
  size_t size;
  char* options;     /* build options kept with source blobs; NULL = none */
} xc_blob_t;

/* A GEMM a vendor library computes instead of a generated kernel (blob
 * format XC_VENDOR_GEMM_FORMAT, made by the runtime where a target's device
 * reports has_vendor_blas): Y[m,n] = op(A) op(B) (+ bias[n]) (then ReLU or GELU),
 * or a SwiGLU of the product and a tensor U of Y's shape (the target runs
 * the library's product, then the elementwise step itself), row-major, all
 * of one dtype (f32, f16 or bf16), f32 accumulation. A launch passes the
 * same buffers as the generated kernel it replaces; a, b, bias, y and u are
 * positions in that buffer list (bias -1: none; u -1 but for SwiGLU). */
#define XC_VENDOR_GEMM_FORMAT "vendor-gemm"
typedef enum xc_vendor_epilogue {
  XC_VENDOR_EPILOGUE_NONE = 0,
  XC_VENDOR_EPILOGUE_BIAS = 1,
  XC_VENDOR_EPILOGUE_RELU = 2,
  XC_VENDOR_EPILOGUE_BIAS_RELU = 3,
  XC_VENDOR_EPILOGUE_GELU = 4,      /* GELU, tanh form (ONNX approximate "tanh") */
  XC_VENDOR_EPILOGUE_BIAS_GELU = 5, /* + bias, then GELU */
  XC_VENDOR_EPILOGUE_SWIGLU_A = 6,  /* Y = silu(op(A) op(B)) * U */
  XC_VENDOR_EPILOGUE_SWIGLU_B = 7,  /* Y = op(A) op(B) * silu(U) */
} xc_vendor_epilogue_t;

typedef struct xc_vendor_gemm {
  xc_dtype_t dtype;
  bool trans_a, trans_b;  /* A stored [k,m] / B stored [n,k] */
  int64_t m, n, k;
  xc_vendor_epilogue_t epilogue;
  int a, b, bias, y;
  bool allow_tf32;        /* f32 inputs may be rounded to tf32 */
  int u;                  /* SwiGLU's other tensor (position; read for the SWIGLU epilogues only) */
} xc_vendor_gemm_t;

/* The blob bytes of a descriptor (64 bytes, little-endian, versioned) and
 * back; unpack refuses malformed or out-of-range fields. */
#define XC_VENDOR_GEMM_BYTES 64
void xc_vendor_gemm_pack(const xc_vendor_gemm_t* g, uint8_t out[XC_VENDOR_GEMM_BYTES]);
xc_status_t xc_vendor_gemm_unpack(const uint8_t* bytes, size_t size, xc_vendor_gemm_t* out);

void xc_kernel_source_release(xc_kernel_source_t* source);
void xc_blob_release(xc_blob_t* blob);

/* ---------------------------------------------------------------------------
 * Launch parameters.
 *
 * A launch runs grid[0]*grid[1]*grid[2] programs; each program is
 * threads[0]*threads[1]*threads[2] threads that share local memory and can
 * synchronize (one OpenCL work-group / CUDA block). Kernel arguments are the
 * buffers, in order, then the int64 scalars, in order.
 * ------------------------------------------------------------------------- */

#define XC_TARGET_MAX_ARGS 64

typedef struct xc_device xc_device_t;
typedef struct xc_buffer xc_buffer_t;
typedef struct xc_module xc_module_t;
typedef struct xc_kernel xc_kernel_t;
typedef struct xc_event xc_event_t;
typedef struct xc_target xc_target_t;

typedef struct xc_launch {
  int64_t grid[3];     /* programs per dimension; 0 counts as 1 */
  int64_t threads[3];  /* threads per program; 0 counts as 1 */
  xc_buffer_t* const* buffers;
  int num_buffers;
  const int64_t* scalars;
  int num_scalars;
} xc_launch_t;

/* The same launch as the interface sees it: buffers are the target's own
 * buffer contexts, dims are normalized (>= 1). */
typedef struct xc_launch_args {
  int64_t grid[3];
  int64_t threads[3];
  void* const* buffers;
  int num_buffers;
  const int64_t* scalars;
  int num_scalars;
} xc_launch_args_t;

/* ---------------------------------------------------------------------------
 * The interface table a target implements (the implementation half).
 *
 * `target` arguments are the context given at registration; `device`,
 * `buffer`, `module`, `kernel`, `event` are the contexts the target returned
 * from device_open, buffer_alloc, ... The public functions further down wrap
 * them, check arguments (sizes, offsets, counts) and handle NULL entries, so
 * an implementation may assume valid input.
 * ------------------------------------------------------------------------- */

typedef struct xc_target_iface {
  int api_version;          /* XC_TARGET_API_VERSION the table was built for */
  const char* name;         /* selector prefix: [a-z0-9_]+, e.g. "opencl" */
  const char* description;  /* one line */

  /* Optional. NULL when the target can be used; else an XC_UNAVAILABLE
   * status saying what is missing and what to install. NULL entry: always
   * available. */
  xc_status_t (*probe)(void* target);
  /* Required. Number of devices (0 is fine). Only called when probe passed. */
  xc_status_t (*device_count)(void* target, int* out_count);
  /* Required. Capabilities of device `index` (0 <= index < count). */
  xc_status_t (*device_caps)(void* target, int index, xc_device_caps_t* out_caps);

  /* Optional. Returns false (and a reason in `why`) when the target declines
   * a kernel; callers report that as unsupported, never as a failure. NULL:
   * every kernel is supported. */
  bool (*supports)(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                   char* why, size_t why_size);
  /* Optional. Emits source for a tiled kernel with the given knob values.
   * NULL: the target has no emitter; xc_target_emit reports XC_UNSUPPORTED. */
  xc_status_t (*emit)(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                      const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out_source);
  /* Optional. Compiles source into a blob. NULL: the blob is the source text
   * itself (format = the source language, options = extra_flags). */
  xc_status_t (*compile)(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* source,
                         const xc_compile_options_t* options, xc_blob_t* out_blob);

  /* Required. Opens device `index`. */
  xc_status_t (*device_open)(void* target, int index, void** out_device);
  /* Required. Frees everything the device still holds. */
  void (*device_close)(void* device);

  /* Required. Allocates `size` bytes (size may be 0). */
  xc_status_t (*buffer_alloc)(void* device, size_t size, void** out_buffer);
  /* Required. */
  void (*buffer_free)(void* device, void* buffer);
  /* Optional. Host address of a buffer whose memory the host can use
   * directly. NULL entry or NULL result: not host-visible. */
  void* (*buffer_host_pointer)(void* device, void* buffer);
  /* Required. Blocking copies; offset+size is within the buffer. */
  xc_status_t (*buffer_write)(void* device, void* buffer, size_t offset, const void* src, size_t size);
  xc_status_t (*buffer_read)(void* device, void* buffer, size_t offset, void* dst, size_t size);

  /* Required. Loads a blob made by compile (or stored in a compiled model). */
  xc_status_t (*module_load)(void* device, const xc_blob_t* blob, void** out_module);
  /* Required. Also frees the module's kernels. */
  void (*module_unload)(void* device, void* module);
  /* Required. Looks an entry point up; the kernel lives as long as the module. */
  xc_status_t (*kernel_get)(void* device, void* module, const char* name, void** out_kernel);
  /* Required. Queues (or runs) one launch. */
  xc_status_t (*launch)(void* device, void* kernel, const xc_launch_args_t* args);
  /* Optional. Waits for all queued work. NULL: launches are synchronous. */
  xc_status_t (*synchronize)(void* device);

  /* Optional, all three or none. A timing point in the device's queue.
   * NULL: events are host clock readings taken after synchronize. */
  xc_status_t (*event_record)(void* device, void** out_event);
  xc_status_t (*event_elapsed_ms)(void* device, void* start, void* end, double* out_ms);
  void (*event_free)(void* device, void* event);

  /* Optional. Frees the target context when the registry is torn down. */
  void (*target_free)(void* target);

  /* Optional, all four or none (version 2). Launch graphs: between
   * capture_begin and capture_end, launch() records launches instead of
   * running them; capture_end returns a graph that replays the recorded
   * launches (same kernels, same argument values, same order) with one call.
   * If capture_end fails, the device is back in normal mode. A graph lives
   * until graph_free or device_close. CUDA Graphs are the model. */
  xc_status_t (*capture_begin)(void* device);
  xc_status_t (*capture_end)(void* device, void** out_graph);
  xc_status_t (*graph_launch)(void* device, void* graph);
  void (*graph_free)(void* device, void* graph);

  /* Optional (version 3). Architectures: `spec` is the part of a selector
   * after "name:" ("sm_90", "gfx942", a plugin's "npu2"). When it names one
   * of this target's architectures, fills the nominal capabilities of that
   * architecture (what code compiled for it may assume; no device needed) and
   * returns NULL. XC_NOT_FOUND: spec is not written like an architecture of
   * this target (the selector then names a device, "0" or "H200"); another
   * code (XC_INVALID_ARGUMENT): written like one but unknown or malformed,
   * with a message listing what the target accepts. xc_target_resolve calls
   * it; a present device of the architecture is preferred over the nominal
   * capabilities. NULL entry: the target compiles only for present devices. */
  xc_status_t (*resolve_arch)(void* target, const char* spec, xc_device_caps_t* out_caps);

  /* Optional (version 3). The target's scheduler (docs/tiled-ir.md,
   * "Schedules"): completes *inout, whose knob values the caller chose
   * (defaults or overrides), into the schedule the target's emitter will
   * follow on `caps`: threads, vector width, unroll, the matrix instruction,
   * pipeline stages and operand space of every dot, and the work-group
   * memory the code takes. `limits` are the tiled limits the driver derived
   * from caps. With XC_SCHEDULE_KEEP_KNOBS the knob values stay as given (an
   * invalid choice is an error); without it the scheduler may change them
   * (smaller tiles) to reach a legal schedule. The result must pass
   * xc_tiled_schedule_check(kernel, result, limits) (the caller checks it
   * again); when nothing legal exists, an XC_UNSUPPORTED error says why.
   * NULL: the generic scheduler (xc_schedule_generic). */
  xc_status_t (*schedule)(void* target, const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                          const struct xc_tiled_limits* limits, unsigned flags, struct xc_tiled_schedule* inout);

  /* ---- Version 4. Entries below are read only when api_version >= 4; a
   * version-3 table ends above this line. ---- */

  /* Optional (version 4). Allocates `size` bytes that the device reads and
   * writes as a buffer and the host reads and writes at *out_host, without
   * copies: pinned host memory mapped into the device's address space
   * (cuMemHostAlloc + DEVICEMAP, hipHostMalloc + Mapped), host-visible
   * coherent memory (Vulkan). The buffer is an ordinary buffer for every
   * other entry (buffer_free, buffer_read, buffer_write, launch, capture);
   * buffer_host_pointer, where present, returns *out_host for it. What the
   * device wrote is visible at *out_host after synchronize; what the host
   * writes there is seen by launches queued afterwards. Meant for small
   * records the host reads after every run (the index-error record): device
   * access goes over the bus. XC_UNSUPPORTED when the device cannot map host
   * memory. NULL entry: xc_buffer_alloc_mapped uses buffer_alloc when
   * buffer_host_pointer gives its buffers a host address, and reports
   * XC_UNSUPPORTED otherwise. */
  xc_status_t (*buffer_alloc_mapped)(void* device, size_t size, void** out_buffer, void** out_host);

  /* ---- Version 5. Entries below are read only when api_version >= 5. ---- */

  /* Optional (version 5), both or none. Device addresses: the numbers other
   * software on the same device uses for the same memory (a framework's
   * tensors, DLPack's data pointer): CUdeviceptr, a HIP device pointer, a
   * host address where device memory is host memory (cpu).
   * buffer_device_address: the address of the first byte of a buffer (never
   * 0 for a buffer of this device). copy_device: queues a copy of `size`
   * bytes from address src to address dst on the device, ordered after the
   * launches and copies queued before it and before those queued after it
   * (either address may be memory this target did not allocate, on the same
   * device). The executor's device-resident runs use them
   * (xc_executor_run_device). NULL: the device's memory has no address the
   * caller can use; device-resident runs are XC_UNSUPPORTED there. */
  uint64_t (*buffer_device_address)(void* device, void* buffer);
  xc_status_t (*copy_device)(void* device, uint64_t dst, uint64_t src, size_t size);
} xc_target_iface_t;

/* Flags of the schedule entry. KEEP_KNOBS: the knob values stay as given.
 * FOLLOW (with KEEP_KNOBS): the whole record is a request — its vector,
 * unroll and per-dot choices (instruction, stages, operand space) stay as
 * given; the scheduler fills in the work-group memory they take, or fails
 * when the device cannot follow them. */
#define XC_SCHEDULE_KEEP_KNOBS 1u
#define XC_SCHEDULE_FOLLOW 2u

/* ---------------------------------------------------------------------------
 * Registration: the plugin entry point.
 *
 * A plugin is a shared object exporting two functions:
 *
 *   int xc_target_plugin_api_version(void);   returns XC_TARGET_API_VERSION
 *   xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* host);
 *
 * The loader checks the version first and refuses a plugin built for a
 * version outside [XC_TARGET_API_MIN_VERSION, XC_TARGET_API_VERSION]; init
 * is then called with the plugin's own version (so a plugin that insists on
 * its version keeps loading), and each interface table is read as far as
 * its api_version defines it (later entries count as NULL). init registers zero or more targets with host->register_target. A
 * plugin need not link against xcomp: it creates statuses with host->error,
 * and version 3 of the table lends it the emitter (xcomp/emit.h) and read
 * access to tiled kernels. Statuses a plugin returns are owned by the caller
 * (xcomp); statuses it gets from host functions are its own to return or free.
 * The host table stays valid for the life of the process (a plugin may keep
 * the pointer). register_target may only be called during init.
 * Built-in targets register through functions of the same type.
 * ------------------------------------------------------------------------- */

typedef struct xc_target_host xc_target_host_t;
struct xc_target_host {
  int api_version;
  /* Registers a target. The registry keeps `iface` (which must outlive the
   * process, typically a static table) and owns `context` from then on
   * (freed with iface->target_free). */
  xc_status_t (*register_target)(const xc_target_host_t* host, const xc_target_iface_t* iface,
                                 void* context);
  xc_status_t (*error)(xc_code_t code, const char* fmt, ...) XC_PRINTF(2, 3);
  void (*status_free)(xc_status_t status);
  const char* (*status_message)(xc_status_t status);
  void* reserved;

  /* ---- Version 3: what a plugin needs to generate code (docs/plugins.md,
   * "The host table"). Everything below is also a function of libxcomp.so
   * (named in each comment) for code that links the SDK instead. ---- */
  size_t size;  /* sizeof(xc_target_host_t) as this xcomp was built */
  xc_code_t (*status_code)(xc_status_t status);                  /* xc_status_code */
  /* Frees memory the host allocated for the plugin (tiled_print's string,
   * tiled_ranges' array). */
  void (*free)(void* p);
  /* Read access to tiled kernels (struct layouts in xcomp/tiled.h). */
  char* (*tiled_print)(const struct xc_tiled_kernel* k);        /* xc_tiled_print_to_string */
  /* Knob values (one per kernel knob, k->num_knobs) from name/value pairs:
   * unnamed knobs take their default; unknown names and invalid
   * combinations are errors. */
  xc_status_t (*resolve_knobs)(const struct xc_tiled_kernel* k, const xc_knob_t* knobs, int num_knobs,
                               int64_t* out_values);                   /* xc_emit_resolve_knobs */
  int64_t (*tiled_threads)(const struct xc_tiled_kernel* k, const int64_t* knob_values); /* xc_tiled_threads */
  int64_t (*dim_resolve)(const struct xc_tiled_dim* d, const int64_t* knob_values);      /* xc_tiled_dim_resolve */
  struct xc_tiled_range* (*tiled_ranges)(const struct xc_tiled_kernel* k,
                                         const int64_t* knob_values);  /* xc_tiled_ranges */
  /* The C-family emitter with a dialect the plugin describes (xcomp/emit.h). */
  xc_status_t (*emit_kernel)(const struct xc_emit_dialect* dialect, const xc_device_caps_t* caps,
                             const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                             const struct xc_emit_options* options, xc_kernel_source_t* out); /* xc_emit_kernel */
  bool (*emit_supports)(const struct xc_emit_dialect* dialect, const xc_device_caps_t* caps,
                        const struct xc_tiled_kernel* kernel, char* why, size_t why_size); /* xc_emit_supports */
  void (*emit_printf)(struct xc_emit_writer* w, const char* fmt, ...) XC_PRINTF(2, 3); /* xc_emit_printf */
  const char* (*emit_param_name)(const struct xc_tiled_value* param, char* buf, size_t size); /* xc_emit_param_name */
  void (*emit_write_base_entry)(struct xc_emit_writer* w, const struct xc_emit_entry* e); /* xc_emit_write_base_entry */
  void (*kernel_source_release)(xc_kernel_source_t* source);     /* xc_kernel_source_release */
  void (*blob_release)(xc_blob_t* blob);                          /* xc_blob_release */
  /* The directory for temporary files: the process's own folder under
   * $TMPDIR, removed at exit (xcomp/tempdir.h). */
  const char* (*temp_dir)(void);
  /* The C-family scheduler with the plugin's dialect: what a plugin that
   * emits through emit_kernel puts in its `schedule` entry
   * (xc_emit_schedule; docs/tiled-ir.md, "Schedules"). */
  xc_status_t (*emit_schedule)(const struct xc_emit_dialect* dialect, const xc_device_caps_t* caps,
                               const struct xc_tiled_kernel* kernel, const struct xc_tiled_limits* limits,
                               unsigned flags, struct xc_tiled_schedule* inout); /* xc_emit_schedule */
  /* Checks a schedule record against limits (xc_tiled_schedule_check). */
  xc_status_t (*schedule_check)(const struct xc_tiled_kernel* kernel, const struct xc_tiled_schedule* s,
                                const struct xc_tiled_limits* limits);
  /* The generic scheduler (xc_schedule_generic): knob values (the valid
   * choice nearest to the given ones unless XC_SCHEDULE_KEEP_KNOBS), threads,
   * generic dots; a plugin's scheduler starts from it and adds its own
   * decisions. Present when size covers it (added within version 3). */
  xc_status_t (*schedule_generic)(const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                  const struct xc_tiled_limits* limits, unsigned flags,
                                  struct xc_tiled_schedule* inout); /* xc_schedule_generic */
  /* Room for later versions; NULL. */
  void* reserved3[5];
};

typedef int (*xc_target_plugin_version_fn)(void);
typedef xc_status_t (*xc_target_plugin_init_fn)(int api_version, const xc_target_host_t* host);

/* Defines xc_target_plugin_api_version in a plugin source file. */
#define XC_TARGET_PLUGIN_DEFINE_VERSION()                                  \
  __attribute__((visibility("default"))) int xc_target_plugin_api_version(void); \
  __attribute__((visibility("default"))) int xc_target_plugin_api_version(void) { \
    return XC_TARGET_API_VERSION;                                          \
  }

/* ---------------------------------------------------------------------------
 * The registry.
 * ------------------------------------------------------------------------- */

/* Registers the built-in targets (cpu, opencl), then loads every *.so in the
 * colon-separated directories of XCOMP_PLUGIN_PATH. Idempotent. A plugin that
 * fails to load is recorded (xc_target_plugin_error_at) and skipped; only
 * out-of-memory makes this fail. Call before using targets from threads. */
xc_status_t xc_targets_init(void);
/* The process environment as it was when xc_targets_init first ran, before
 * any vendor library was loaded: some edit variables in place (an OpenCL
 * ICD loader cuts OCL_ICD_FILENAMES at its first ':'), so a child process
 * that loads them again (the tuner's measuring process) is started with
 * this one. Copied strings, valid for the life of the process. */
char* const* xc_targets_startup_environment(void);

/* Loads one plugin file. Returns the reason it was refused (also recorded). */
xc_status_t xc_target_load_plugin(const char* path);

/* Failures met while loading plugins: "<path>: <reason>". */
int xc_target_plugin_error_count(void);
const char* xc_target_plugin_error_at(int index);

int xc_target_count(void);
xc_target_t* xc_target_at(int index);

/* Resolves a selector:
 *   "opencl"          target opencl, device 0
 *   "opencl:1"        device 1 of opencl
 *   "opencl:nvidia"   first opencl device whose name or vendor contains
 *                     "nvidia" (case-insensitive)
 *   "H200"            first device of any available target whose name
 *                     contains "H200"
 * out_device_index may be NULL. Unknown target: XC_NOT_FOUND listing the
 * targets; unavailable target: its XC_UNAVAILABLE reason; no such device:
 * XC_NOT_FOUND listing the devices. */
xc_status_t xc_target_find(const char* selector, xc_target_t** out_target, int* out_device_index);

/* What a compile is for: a selector resolved to a target and the
 * capabilities code is generated for. */
typedef struct xc_target_resolution {
  xc_target_t* target;
  /* The present device whose capabilities these are; -1 when they are an
   * architecture's nominal capabilities (no device of it is present). */
  int device_index;
  xc_device_caps_t caps;
  /* The selector named an architecture ("cuda:sm_90", "rocm:gfx90a"; the
   * target's resolve_arch accepted it), with or without a device of it. */
  bool arch;
} xc_target_resolution_t;

/* Resolves a selector for compiling. "name:spec" where target `name` has a
 * resolve_arch entry that accepts spec: a present device of that target
 * whose name, vendor or version holds spec as a word (the device of that
 * architecture), else the architecture's nominal capabilities (device_index
 * -1; the target need not be available). Any other selector is a device
 * selector (xc_target_find) with that device's capabilities. */
xc_status_t xc_target_resolve(const char* selector, xc_target_resolution_t* out);

const char* xc_target_name(const xc_target_t* target);
const char* xc_target_description(const xc_target_t* target);
/* "built-in" or the plugin's path. */
const char* xc_target_origin(const xc_target_t* target);
/* NULL when usable, else why not (caller frees). Cached after the first call. */
xc_status_t xc_target_availability(xc_target_t* target);
xc_status_t xc_target_device_count(xc_target_t* target, int* out_count);
xc_status_t xc_target_device_caps(xc_target_t* target, int index, xc_device_caps_t* out_caps);

/* Compile side. `caps` is the device compiled for. */
bool xc_target_supports(xc_target_t* target, const xc_device_caps_t* caps,
                        const struct xc_tiled_kernel* kernel, char* why, size_t why_size);
xc_status_t xc_target_emit(xc_target_t* target, const xc_device_caps_t* caps,
                           const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                           xc_kernel_source_t* out_source);
/* options may be NULL. On success the caller owns *out_blob. */
xc_status_t xc_target_compile(xc_target_t* target, const xc_device_caps_t* caps,
                              const xc_kernel_source_t* source, const xc_compile_options_t* options,
                              xc_blob_t* out_blob);
/* The target's schedule of kernel on caps (the interface's schedule entry,
 * else xc_schedule_generic), checked with xc_tiled_schedule_check before it
 * is returned; the record's scheduler name is the target's when the
 * scheduler left it empty. inout holds the knob values to start from. */
xc_status_t xc_target_schedule(xc_target_t* target, const xc_device_caps_t* caps,
                               const struct xc_tiled_kernel* kernel, const struct xc_tiled_limits* limits,
                               unsigned flags, struct xc_tiled_schedule* inout);
/* The schedule of a target without a scheduler of its own: knob values kept
 * when valid (else, without XC_SCHEDULE_KEEP_KNOBS, the valid choice nearest
 * to them), threads from the THREADS knob where programs are work-groups
 * (caps->max_threads_per_group > 1) and 1 otherwise, vector 1, no unrolling,
 * every dot the generic loop, work-group memory the kernel's own shared
 * allocations. */
xc_status_t xc_schedule_generic(const xc_device_caps_t* caps, const struct xc_tiled_kernel* kernel,
                                const struct xc_tiled_limits* limits, unsigned flags,
                                struct xc_tiled_schedule* inout);

/* Threads the cpu target's runtime runs a launch's programs on, the caller
 * included: $XCOMP_NUM_THREADS, else $OMP_NUM_THREADS, else the CPUs the
 * process may run on (at most 256); read once per process. */
int xc_cpu_runtime_threads(void);

/* The tiled limits of a device (what the default knob chooser, the
 * verifier and schedulers read): threads per group, shared and staged
 * bytes, SIMD width, and the input dtypes of matrix instructions (f32/tf32
 * only with allow_tf32). A session derives them once
 * (xc_driver_tiled_limits); a target that needs them where no limits are
 * passed (an emitter) derives the same from its caps. */
void xc_target_tiled_limits(const xc_device_caps_t* caps, bool allow_tf32, struct xc_tiled_limits* out);

/* The legal schedule space of kernel on caps, for tuners: every knob
 * combination (its candidates, in order, at most max_combinations of them;
 * <= 0: 4096) the target's scheduler completes with XC_SCHEDULE_KEEP_KNOBS,
 * and for each, the variants with fewer pipeline stages and with dots taken
 * off matrix instructions that the target can follow (XC_SCHEDULE_FOLLOW).
 * visit is called once per legal record (false stops the walk);
 * *out_count (may be NULL) counts them. Illegal points are skipped. */
xc_status_t xc_target_schedule_space(xc_target_t* target, const xc_device_caps_t* caps,
                                     const struct xc_tiled_kernel* kernel, const struct xc_tiled_limits* limits,
                                     int max_combinations,
                                     bool (*visit)(void* ctx, const struct xc_tiled_schedule* s), void* ctx,
                                     int* out_count);

/* emit + compile. A declined kernel is XC_UNSUPPORTED with the reason. */
xc_status_t xc_target_compile_kernel(xc_target_t* target, const xc_device_caps_t* caps,
                                     const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs,
                                     int num_knobs, const xc_compile_options_t* options,
                                     xc_blob_t* out_blob);

/* Runtime. Opens the device a selector names (see xc_target_find). Caller
 * closes it with xc_device_close, after freeing its buffers and modules. */
xc_status_t xc_device_open(const char* selector, xc_device_t** out_device);
xc_status_t xc_target_open_device(xc_target_t* target, int index, xc_device_t** out_device);
void xc_device_close(xc_device_t* device);
const xc_device_caps_t* xc_device_caps(const xc_device_t* device);
xc_target_t* xc_device_target(const xc_device_t* device);
/* The device's index among its target's devices (-1 for NULL). */
int xc_device_index(const xc_device_t* device);
xc_status_t xc_device_synchronize(xc_device_t* device);

xc_status_t xc_buffer_alloc(xc_device_t* device, size_t size, xc_buffer_t** out_buffer);
void xc_buffer_free(xc_buffer_t* buffer);
size_t xc_buffer_size(const xc_buffer_t* buffer);
/* A buffer the host reads and writes in place, at xc_buffer_host_pointer
 * (never NULL for it), without copies (the interface's buffer_alloc_mapped;
 * else a buffer_alloc buffer that is host memory already). Host reads see
 * the device's writes after xc_device_synchronize; host writes are seen by
 * launches queued afterwards. XC_UNSUPPORTED when the device has no such
 * memory: use xc_buffer_alloc and copies. Caller frees with xc_buffer_free. */
xc_status_t xc_buffer_alloc_mapped(xc_device_t* device, size_t size, xc_buffer_t** out_buffer);
/* NULL when the buffer is not host-visible. */
void* xc_buffer_host_pointer(xc_buffer_t* buffer);
/* Device addresses (the interface's buffer_device_address and copy_device,
 * version 5). xc_device_has_addresses: whether the device's target has
 * them. xc_buffer_device_address: a buffer's address, 0 when the target has
 * none. xc_device_copy: queues a device-side copy of size bytes between two
 * addresses on the device (ordered with launches; not during a capture);
 * XC_UNSUPPORTED on a target without addresses. */
bool xc_device_has_addresses(const xc_device_t* device);
uint64_t xc_buffer_device_address(xc_buffer_t* buffer);
xc_status_t xc_device_copy(xc_device_t* device, uint64_t dst, uint64_t src, size_t size);
/* Blocking host<->device copies. Out-of-range offset/size: XC_OUT_OF_RANGE. */
xc_status_t xc_buffer_write(xc_buffer_t* buffer, size_t offset, const void* src, size_t size);
xc_status_t xc_buffer_read(xc_buffer_t* buffer, size_t offset, void* dst, size_t size);

xc_status_t xc_module_load(xc_device_t* device, const xc_blob_t* blob, xc_module_t** out_module);
void xc_module_unload(xc_module_t* module);
/* The kernel is owned by the module. */
xc_status_t xc_module_kernel(xc_module_t* module, const char* name, xc_kernel_t** out_kernel);
/* Buffers must belong to the kernel's device; at most XC_TARGET_MAX_ARGS of
 * each kind. The launch may run asynchronously (see synchronize). */
xc_status_t xc_kernel_launch(xc_kernel_t* kernel, const xc_launch_t* launch);

/* Launch graphs (targets that implement capture; see the interface).
 * xc_device_can_capture tells whether the device's target does. Between
 * xc_device_capture_begin and xc_device_capture_end, xc_kernel_launch records
 * instead of running, and nothing else may be queued on the device (copies,
 * events, synchronize are refused). */
typedef struct xc_launch_graph xc_launch_graph_t;
bool xc_device_can_capture(const xc_device_t* device);
xc_status_t xc_device_capture_begin(xc_device_t* device);
xc_status_t xc_device_capture_end(xc_device_t* device, xc_launch_graph_t** out_graph);
/* Queues the recorded launches (asynchronous like xc_kernel_launch). */
xc_status_t xc_launch_graph_run(xc_launch_graph_t* graph);
void xc_launch_graph_free(xc_launch_graph_t* graph);

xc_status_t xc_event_record(xc_device_t* device, xc_event_t** out_event);
/* Waits for `end` and returns the milliseconds between the two points. */
xc_status_t xc_event_elapsed_ms(xc_event_t* start, xc_event_t* end, double* out_ms);
void xc_event_free(xc_event_t* event);

/* Short names for messages: "cpu", "gpu", "npu"; "nchw", "nhwc". */
const char* xc_device_kind_name(xc_device_kind_t kind);
const char* xc_layout_name(xc_layout_t layout);
/* One line summary of capabilities: "gpu, 132 CUs, warp 32, ...". */
void xc_device_caps_summary(const xc_device_caps_t* caps, char* out, size_t out_size);

/* ---------------------------------------------------------------------------
 * Implementation details: the objects behind the handles, visible so that
 * targets in this tree can be tested; plugins only see the interface above.
 * ------------------------------------------------------------------------- */

struct xc_target {
  const xc_target_iface_t* iface;
  void* context;
  char* origin;
  bool probed;
  xc_status_t unavailable;  /* cached probe result */
};

#ifdef __cplusplus
}
#endif
#endif
