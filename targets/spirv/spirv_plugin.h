/* The spirv target: tiled kernels as SPIR-V compute shaders run through
 * Vulkan (docs/targets/spirv.md). It is built as a plugin over the public SDK
 * only (xcomp/target.h, xcomp/tiled.h): this header is the plugin's own and
 * joins its files, which are
 *   spirv_target.c   the interface table, plugin init, scheduler, emit/compile
 *   spirv_builder.c  SPIR-V words: ids, types and constants deduplicated
 *   spirv_emit.c     tiled IR -> SPIR-V (one GLCompute entry per kernel)
 *   spirv_tools.c    SPIRV-Tools: validation, disassembly, assembly
 *   spirv_vk.c       the Vulkan runtime (loader loaded at run time)
 *
 * Statuses and everything else of xcomp come from the host table (`spv_host`). */
#ifndef XCOMP_TARGETS_SPIRV_PLUGIN_H
#define XCOMP_TARGETS_SPIRV_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xcomp/target.h>
#include <xcomp/tiled.h>

extern const xc_target_host_t* spv_host;

#define SPV_ERROR(code, ...) spv_host->error((code), __VA_ARGS__)

/* "f32", "i64", ... (xc_dtype_name's spelling; the plugin links no xcomp). */
const char* spv_dtype_name(xc_dtype_t t);

/* ---- compiled kernels: the blob -------------------------------------------
 * Blob format "spirv": one kernel per blob, little-endian u32 words:
 *   [0] SPV_BLOB_MAGIC  [1] SPV_BLOB_VERSION
 *   [2] local_size      work-items per work-group (x; y = z = 1)
 *   [3] num_buffers     storage buffers: set 0, bindings 0..num_buffers-1, in
 *                       the kernel's buffer-parameter order
 *   [4] num_scalars     int64 scalars in the push constants (<= SPV_MAX_SCALARS)
 *   [5] features        SPV_FEATURE_* the module needs from the device
 *   [6] shared_bytes    work-group memory the module declares
 *   [7] entry_words     n: the entry point name, NUL-padded, in n words
 *   [8 .. 8+n)          entry name
 *   [8+n]               code_words m
 *   [9+n .. 9+n+m)      the SPIR-V module
 * Push constants (offset 0): u32 grid[3]; u32 program_base; i64 scalars[].
 * A work-group runs program p = program_base + WorkgroupId.y * NumWorkgroups.x
 * + WorkgroupId.x when p < grid[0]*grid[1]*grid[2] (pid0 = p % grid[0], ...);
 * a launch dispatches as many work-groups as it needs, in several dispatches
 * with increasing program_base when one dispatch cannot hold them. */
#define SPV_BLOB_FORMAT "spirv"
#define SPV_BLOB_MAGIC 0x56505358u /* "XSPV" */
#define SPV_BLOB_VERSION 1u
#define SPV_BLOB_HEADER_WORDS 8
#define SPV_MAX_SCALARS 12
#define SPV_PUSH_SCALARS_OFFSET 16

enum {
  SPV_FEATURE_FLOAT16 = 1u << 0,    /* shaderFloat16 */
  SPV_FEATURE_INT8 = 1u << 1,       /* shaderInt8 */
  SPV_FEATURE_INT16 = 1u << 2,      /* shaderInt16 */
  SPV_FEATURE_INT64 = 1u << 3,      /* shaderInt64 */
  SPV_FEATURE_FLOAT64 = 1u << 4,    /* shaderFloat64 */
  SPV_FEATURE_STORAGE8 = 1u << 5,   /* storageBuffer8BitAccess */
  SPV_FEATURE_STORAGE16 = 1u << 6,  /* storageBuffer16BitAccess */
  SPV_FEATURE_COOPMAT = 1u << 7,    /* VK_NV_cooperative_matrix (SPV_NV_cooperative_matrix) */
  SPV_FEATURE_SUBGROUP_ARITH = 1u << 8,     /* subgroup arithmetic in compute shaders */
  SPV_FEATURE_SUBGROUP_CLUSTERED = 1u << 9, /* clustered subgroup operations */
};

typedef struct spv_kernel_info {
  uint32_t local_size;
  uint32_t num_buffers;
  uint32_t num_scalars;
  uint32_t features;
  uint32_t shared_bytes;
  char entry[128];
  int coop_dots;   /* dots emitted with cooperative matrices (not in the blob) */
} spv_kernel_info_t;

/* Packs info and code into a blob (format SPV_BLOB_FORMAT; bytes malloc'd). */
xc_status_t spv_blob_pack(const spv_kernel_info_t* info, const uint32_t* code, size_t num_words,
                          xc_blob_t* out_blob);
/* Checks a blob's header and sizes; *out_code points into blob->bytes. */
xc_status_t spv_blob_unpack(const xc_blob_t* blob, spv_kernel_info_t* out_info, const uint32_t** out_code,
                            size_t* out_num_words);

/* ---- the Vulkan runtime (spirv_vk.c) -------------------------------------- */

/* What the device offers beyond xc_device_caps_t (SPV_FEATURE_* bits, the
 * cooperative-matrix shapes are in caps.mma_shapes). */
typedef struct spv_vk_device_info {
  xc_device_caps_t caps;
  uint32_t features;
  uint32_t max_workgroup_count[3];
  uint32_t subgroup_size;
  uint32_t api_version;  /* VK_MAKE_API_VERSION of the device */
} spv_vk_device_info_t;

/* NULL when the Vulkan loader loads and lists at least one device with a
 * compute queue; else XC_UNAVAILABLE with an install hint. Cached. */
xc_status_t spv_vk_probe(void);
int spv_vk_device_count(void);
xc_status_t spv_vk_device_info(int index, spv_vk_device_info_t* out);
void spv_vk_shutdown(void);

/* The runtime half of the interface table (contexts as in xcomp/target.h). */
xc_status_t spv_vk_device_open(void* target, int index, void** out_device);
void spv_vk_device_close(void* device);
xc_status_t spv_vk_buffer_alloc(void* device, size_t size, void** out_buffer);
void spv_vk_buffer_free(void* device, void* buffer);
void* spv_vk_buffer_host_pointer(void* device, void* buffer);
xc_status_t spv_vk_buffer_alloc_mapped(void* device, size_t size, void** out_buffer, void** out_host);
xc_status_t spv_vk_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size);
xc_status_t spv_vk_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size);
xc_status_t spv_vk_module_load(void* device, const xc_blob_t* blob, void** out_module);
void spv_vk_module_unload(void* device, void* module);
xc_status_t spv_vk_kernel_get(void* device, void* module, const char* name, void** out_kernel);
xc_status_t spv_vk_launch(void* device, void* kernel, const xc_launch_args_t* args);
xc_status_t spv_vk_synchronize(void* device);
xc_status_t spv_vk_event_record(void* device, void** out_event);
xc_status_t spv_vk_event_elapsed_ms(void* device, void* start, void* end, double* out_ms);
void spv_vk_event_free(void* device, void* event);
xc_status_t spv_vk_capture_begin(void* device);
xc_status_t spv_vk_capture_end(void* device, void** out_graph);
xc_status_t spv_vk_graph_launch(void* device, void* graph);
void spv_vk_graph_free(void* device, void* graph);

/* ---- SPIRV-Tools (spirv_tools.c) ------------------------------------------ */

/* Validates a module for the Vulkan 1.1 environment (SPIR-V 1.3); the error
 * names `what` (the kernel) and carries the validator's message. */
xc_status_t spv_tools_validate(const uint32_t* code, size_t num_words, const char* what);
/* Disassembly with friendly names (malloc'd text). */
xc_status_t spv_tools_disassemble(const uint32_t* code, size_t num_words, char** out_text);
/* Assembles text back into words (malloc'd). */
xc_status_t spv_tools_assemble(const char* text, uint32_t** out_code, size_t* out_num_words);

/* ---- emission (spirv_emit.c) ---------------------------------------------- */

/* What the emitter needs of the device beyond caps. */
typedef struct spv_emit_target {
  const xc_device_caps_t* caps;
  uint32_t features;  /* SPV_FEATURE_* the device has */
} spv_emit_target_t;

/* Emits `kernel` under knob values `knobs` with `threads` work-items per
 * work-group. On success *out_code (malloc'd words) and *out_info. With
 * measure_only, nothing is kept: *out_info says what the module would take
 * (shared_bytes, features) and out_code may be NULL. An XC_UNSUPPORTED
 * status says what the kernel needs that the device lacks. */
xc_status_t spv_emit_kernel(const spv_emit_target_t* t, const xc_tiled_kernel_t* kernel, const int64_t* knobs,
                            int64_t threads, bool measure_only, uint32_t** out_code, size_t* out_num_words,
                            spv_kernel_info_t* out_info);

#endif
