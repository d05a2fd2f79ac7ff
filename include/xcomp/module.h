/* xcomp compiled modules: a lowered, target-compiled model as one
 * self-contained file (`.xcm`, docs/runtime.md describes every field).
 *
 * Modules are built from lowered models by the driver
 * (xc_compiled_module_build, xcomp/driver.h). A compiled module holds the optimized graph (its .xir text, constants in a
 * binary weights section), the execution plan (kernel launches with their
 * parameter bindings by value name, scalar dim expressions and knob values;
 * zero-copy aliases), and per kernel the blob the target compiled plus the
 * tiled IR it came from. It is tied to one target and records the capability
 * fingerprint of the device it was compiled for.
 *
 * Ownership: a module owns everything reachable from it (arena, graph, parsed
 * tiled kernels, blobs); xc_compiled_module_destroy frees it all. */
#ifndef XCOMP_MODULE_H
#define XCOMP_MODULE_H

#include <stdint.h>

#include "xcomp/graph.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XC_CM_MAGIC "XCOMPMOD"    /* 8 bytes at offset 0 */
/* Module flag: compiled for an architecture ("cuda:sm_90", "rocm:gfx90a")
 * with its nominal capabilities, not for a present device. Such a module is
 * not tied to one device's capability fingerprint: the target checks its
 * code when loading it. */
#define XC_CM_ARCH_ONLY 1u
#define XC_CM_FORMAT_VERSION 2u   /* bumped on any incompatible layout change */

/* A 128-bit hash (XXH3-128): checksums, device fingerprints, cache keys. */
typedef struct xc_hash128 {
  uint64_t lo, hi;
} xc_hash128_t;

xc_hash128_t xc_hash128(const void* data, size_t size);
/* 32 lowercase hex digits + NUL into out (33 bytes). */
void xc_hash128_hex(xc_hash128_t h, char out[33]);
/* The fingerprint of the capabilities that decide generated code (name,
 * vendor, driver version, kind, SIMD width, thread/local-memory/buffer limits,
 * dtypes, matrix shapes, layout); memory sizes and core counts are left out. */
xc_hash128_t xc_device_caps_fingerprint(const xc_device_caps_t* caps);

/* A tensor value the plan refers to. */
enum {
  XC_CM_VALUE_INPUT = 1u << 0,
  XC_CM_VALUE_OUTPUT = 1u << 1,
  XC_CM_VALUE_WEIGHT = 1u << 2, /* an initializer: data in the graph's constant */
  /* the run's index-error record (xcomp/tiled.h, "index checks"): i64[4],
   * its own buffer, zero before every run, read after it */
  XC_CM_VALUE_INDEX_ERROR = 1u << 3,
};

typedef struct xc_cm_value {
  const char* name;
  xc_dtype_t dtype;
  int rank;
  xc_dim_t* dims;               /* symbolic dims over the graph inputs' symbols */
  unsigned flags;
  const xc_tensor_t* constant;  /* WEIGHT: the graph's tensor (borrowed from graph) */
} xc_cm_value_t;

/* One kernel parameter binding of a launch step. */
typedef struct xc_cm_param {
  int value;        /* buffer parameter: index into values; -1 for a scalar */
  int role;         /* buffer: xc_tiled_role_t (IN / OUT / INOUT) */
  xc_dim_t dim;     /* scalar parameter: its value as an expression over dims */
} xc_cm_param_t;

typedef enum xc_cm_step_kind {
  XC_CM_STEP_KERNEL = 0,
  XC_CM_STEP_ALIAS = 1,
} xc_cm_step_kind_t;

typedef struct xc_cm_step {
  xc_cm_step_kind_t kind;
  int kernel;               /* KERNEL: index into kernels */
  int num_params;           /* KERNEL: one per kernel parameter, in order */
  xc_cm_param_t* params;
  int num_knobs;            /* KERNEL: the kernel's knob values, in knob order */
  int64_t* knobs;
  int alias_dst, alias_src; /* ALIAS: value indices; dst holds src's bytes */
} xc_cm_step_t;

typedef struct xc_cm_kernel {
  const char* name;          /* the tiled kernel's name */
  char entry[128];           /* entry point symbol in the blob */
  xc_blob_t blob;            /* owned; bytes malloc'd */
  const char* tiled_text;    /* xc_tiled_print form (debugging, re-emission, grid) */
  xc_tiled_kernel_t* tiled;  /* parsed from tiled_text; owned */
} xc_cm_kernel_t;

struct xc_compiled_module;

/* Shape buckets (xcomp compile --dynamic; docs/runtime.md): the module is
 * the generic one, symbolic in `symbol`, and each bucket a module compiled
 * with the symbol bound to its size. A run whose size equals a bucket runs
 * that bucket; a smaller one runs the smallest bucket above it with the
 * inputs padded by zeros along the symbol's dims and the outputs sliced
 * back, when pad_ok (the padding check proved that exact), else the generic
 * module. Sizes outside [min, max] are refused. */
typedef struct xc_cm_bucket {
  int64_t size;
  struct xc_compiled_module* module; /* owned */
} xc_cm_bucket_t;

typedef struct xc_cm_buckets {
  char symbol[64];
  int64_t min, max;
  bool pad_ok;
  char pad_note[320]; /* why padding is not allowed ("" when it is) */
  int num;
  xc_cm_bucket_t* items; /* ascending sizes; owned */
} xc_cm_buckets_t;

typedef struct xc_compiled_module {
  xc_arena_t* arena;
  char xcomp_version[32];
  char target[64];               /* target name, e.g. "cpu" */
  char device_name[128];         /* device compiled for (for messages) */
  xc_hash128_t caps_fingerprint; /* xc_device_caps_fingerprint of that device */
  uint32_t flags;                /* XC_CM_* below */
  xc_graph_t* graph;             /* the optimized graph; owned */
  char* graph_text;              /* its .xir text (constants as file(...) refs); owned */
  size_t graph_text_size;
  uint8_t* weights;              /* the constants the text refers to; owned */
  size_t weights_size;
  int num_values;
  xc_cm_value_t* values;
  int num_inputs;                /* graph inputs, in call order: value indices */
  int* inputs;
  int num_outputs;               /* graph outputs, in order: value indices */
  int* outputs;
  int num_kernels;
  xc_cm_kernel_t* kernels;
  int num_steps;
  xc_cm_step_t* steps;
  /* The compile-cache key the module was stored under (runtime/cache.c):
   * written as the optional cache-key section, and a cache entry whose key
   * differs from the one it is looked up by is a miss. */
  bool has_cache_key;
  xc_hash128_t cache_key;
  /* Read from a file that carried a signature (section 6) that was checked
   * against the key in the environment (false when no key was set). */
  bool signature_verified;
  /* Shape buckets (optional section 7); NULL for a module without. */
  xc_cm_buckets_t* buckets;
} xc_compiled_module_t;

/* For module builders (driver/ builds modules from lowered ones): after the
 * sections of m are filled in (by a build or by parsing a file), parses the
 * graph text with its weights (the graph's constants are views of
 * m->weights, not copies: m->weights must stay unchanged while m lives),
 * points weight values at the graph's constants, parses every kernel's
 * tiled IR and checks that the plan agrees with the kernels (parameter
 * kinds and counts, knob values, indices). */
xc_status_t xc_cm_link(xc_compiled_module_t* m, const char* what);
/* The graph as .xir text with every non-empty constant in a separate weights
 * blob (the xir side-file layout), the constants' bytes copied once. Both
 * malloc'd. */
xc_status_t xc_cm_graph_to_text(const xc_graph_t* g, char** out_text, size_t* out_text_size,
                                uint8_t** out_weights, size_t* out_weights_size);

void xc_compiled_module_destroy(xc_compiled_module_t* m);
/* Destroys the buckets and every bucket's module. */
void xc_cm_buckets_destroy(xc_cm_buckets_t* b);

/* Serializes into a malloc'd buffer (caller frees). */
xc_status_t xc_compiled_module_serialize(const xc_compiled_module_t* m, uint8_t** out_bytes,
                                         size_t* out_size);
/* Parses and validates bytes (magic, version, sizes, checksum, every length
 * and offset); a bad file is XC_DATA_LOSS / XC_UNSUPPORTED naming the fault.
 * `what` names the source in messages (a path). */
xc_status_t xc_compiled_module_deserialize(const uint8_t* bytes, size_t size, const char* what,
                                           xc_compiled_module_t** out);
/* Writes to path atomically (temp file in the same folder + rename). */
xc_status_t xc_compiled_module_write(const xc_compiled_module_t* m, const char* path);
xc_status_t xc_compiled_module_read(const char* path, xc_compiled_module_t** out);

/* Reads a whole file into a malloc'd buffer (caller frees). */
xc_status_t xc_read_file_bytes(const char* path, uint8_t** out_bytes, size_t* out_size);
/* Writes bytes to path through a temp file in the same folder + rename. */
xc_status_t xc_write_file_atomic(const char* path, const void* bytes, size_t size);
/* mkdir -p: creates dir and its missing parents. */
xc_status_t xc_make_dirs(const char* dir);

/* ---- signatures (runtime/module_sign.c) -------------------------------------
 *
 * A .xcm is executable code: a cpu module carries a shared object that is
 * loaded and run. Its checksum catches damage, not tampering. When a key is
 * set in the environment (XCOMP_MODULE_KEY: the key's bytes;
 * XCOMP_MODULE_KEY_FILE: a file holding them, trailing newlines dropped; at
 * least 16 bytes), every module written carries an HMAC-SHA256 signature and
 * a module read without a valid one is refused. */
typedef struct xc_sha256 {
  uint32_t h[8];
  uint64_t total;
  uint8_t buf[64];
  size_t fill;
} xc_sha256_t;
typedef struct xc_byte_span {
  const void* data;
  size_t size;
} xc_byte_span_t;
void xc_sha256_init(xc_sha256_t* s);
void xc_sha256_update(xc_sha256_t* s, const void* data, size_t size);
void xc_sha256_final(xc_sha256_t* s, uint8_t out[32]);
void xc_sha256(const void* data, size_t size, uint8_t out[32]);
/* HMAC-SHA256 (RFC 2104) of the concatenation of the parts. */
void xc_hmac_sha256(const void* key, size_t key_size, const xc_byte_span_t* parts, int num_parts,
                    uint8_t out[32]);
/* Compares in time independent of where the bytes differ. */
bool xc_digest_equal(const uint8_t* a, const uint8_t* b, size_t n);
/* The signing key from the environment, malloc'd (caller frees); *out_key
 * NULL when none is set. A key file that cannot be read or a key under 16
 * bytes is an error. */
xc_status_t xc_module_key_load(uint8_t** out_key, size_t* out_size);

/* Prints a summary (target, kernels, steps, sizes) for people. */
void xc_compiled_module_describe(const xc_compiled_module_t* m, FILE* f);

#ifdef __cplusplus
}
#endif
#endif
