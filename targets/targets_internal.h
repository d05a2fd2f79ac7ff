/* Declarations shared by the files of targets/: the built-in targets' entry
 * points (same type as a plugin's xc_target_plugin_init) and small helpers. */
#ifndef XCOMP_TARGETS_INTERNAL_H
#define XCOMP_TARGETS_INTERNAL_H

#include "xcomp/target.h"

xc_status_t xc_target_cpu_init(int api_version, const xc_target_host_t* host);
xc_status_t xc_target_opencl_init(int api_version, const xc_target_host_t* host);
xc_status_t xc_target_cuda_init(int api_version, const xc_target_host_t* host);
xc_status_t xc_target_rocm_init(int api_version, const xc_target_host_t* host);
xc_status_t xc_target_rocm_nv_init(int api_version, const xc_target_host_t* host);

/* Reads a whole file into a malloc'd buffer (NUL-terminated, size excludes the NUL). */
xc_status_t xc_targets_read_file(const char* path, uint8_t** out_bytes, size_t* out_size);
/* Writes bytes to a path (created or truncated). */
xc_status_t xc_targets_write_file(const char* path, const void* bytes, size_t size);
/* The directory for temporary files: the per-process folder
 * (xcomp/tempdir.h, targets/tempdir.c), or $TMPDIR when it cannot be made. */
const char* xc_targets_temp_dir(void);
/* Case-insensitive substring test. */
bool xc_targets_contains_ci(const char* haystack, const char* needle);
/* Milliseconds on the monotonic clock. */
double xc_targets_now_ms(void);

#endif
