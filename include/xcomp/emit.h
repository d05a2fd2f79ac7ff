/* xcomp SDK: the C-family kernel emitter as a library call.
 *
 * xcomp's built-in targets turn tiled kernels (xcomp/tiled.h) into C (cpu)
 * and OpenCL C (opencl) with one emitter parameterized by a dialect. A
 * target plugin describes its own dialect as a base plus what differs, and
 * gets the source of any tiled kernel with xc_emit_kernel. docs/plugins.md
 * ("Describing a dialect") walks through it; docs/emitter.md describes how
 * tiles map to the generated code.
 *
 * A plugin reaches these functions either through the host table handed to
 * xc_target_plugin_init (host->emit_kernel, ..., no linking needed) or by
 * linking libxcomp.so (pkg-config xcomp, or CMake xcomp::xcomp). */
#ifndef XCOMP_EMIT_H
#define XCOMP_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xcomp/status.h"
#include "xcomp/target.h"
#include "xcomp/tiled.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dialect a plugin's dialect starts from. */
typedef enum xc_emit_base {
  /* C11 for a host-like processor: a program is one thread, tiles are stack
   * arrays, the entry runs programs [program_begin, program_end) in a loop
   * (the cpu target's ABI, docs/targets.md "C ABI of CPU kernels"). */
  XC_EMIT_BASE_C = 0,
  /* OpenCL C 1.2: one work-group per program, tiles in __local memory or
   * spread over the work-items' private arrays. */
  XC_EMIT_BASE_OPENCL_C = 1,
} xc_emit_base_t;

/* Where the emitter writes the source text (opaque). */
typedef struct xc_emit_writer xc_emit_writer_t;

/* What an entry-writer hook sees of the kernel being emitted. */
typedef struct xc_emit_entry {
  const struct xc_tiled_kernel* kernel; /* parameters: kernel->params[0 .. num_params) */
  const char* entry;        /* the entry point symbol to define */
  int64_t threads;          /* work-items per program (1 for XC_EMIT_BASE_C) */
  const char* decls;        /* declarations of the program's tiles, one a line */
  const char* body;         /* the program's statements, indented for depth 1 */
  /* C type of each parameter (kernel->num_params entries): the buffer element
   * type in memory (f16/bf16: 16-bit unsigned integers) for buffers, the
   * 64-bit integer type for scalars. */
  const char* const* param_types;
  int64_t dyn_local_bytes;  /* bytes of the dynamic work-group array, 0: none */
} xc_emit_entry_t;

/* Writes the entry function around e->decls and e->body: its signature, the
 * unpacking of its arguments into the parameter names (xc_emit_param_name),
 * and whatever runs the programs. The names program ids are read from are
 * those of the base (XC_EMIT_BASE_C: int64_t pid0, pid1, pid2 in scope of
 * the body; XC_EMIT_BASE_OPENCL_C: get_group_id and a `long lid`). `user`
 * is the dialect's entry_user. The hook may delegate to the base's writer
 * with xc_emit_write_base_entry(w, e). */
typedef void (*xc_emit_entry_fn)(xc_emit_writer_t* w, const xc_emit_entry_t* e, void* user);

/* A plugin's dialect: a base and what differs from it. Start from
 * XC_EMIT_DIALECT_INIT(base) (or zero the struct and set `base`); every NULL
 * or zero field keeps the base's choice. The struct may grow at its end in a
 * later API version; `reserved` must stay zero. */
typedef struct xc_emit_dialect {
  xc_emit_base_t base;
  /* The source language, xc_kernel_source_t.language: a static string such
   * as "acme-c" (it is stored in compiled modules and checked by compile).
   * NULL: the base's ("c", "opencl-c"). */
  const char* name;
  /* Text written before the entry function's first line (qualifiers,
   * attributes): e.g. "__attribute__((visibility(\"default\")))". A newline
   * follows it. NULL: none. */
  const char* kernel_prefix;
  /* Text appended to the base's prelude (includes, macros, helper
   * functions the entry writer uses). NULL: none. */
  const char* prelude_extra;
  /* Replaces the pragma written before vectorizable element loops
   * (XC_EMIT_BASE_C: "#pragma omp simd", honoured by -fopenmp-simd without
   * any OpenMP runtime). NULL: the base's; "": none. */
  const char* simd_pragma;
  /* The entry writer (see xc_emit_entry_fn). NULL: the base's. */
  xc_emit_entry_fn write_entry;
  void* entry_user;
  /* Room for the scheduler hooks of a later version (tile-to-core mapping,
   * local-memory placement, ...). Must be zero. */
  void* reserved[8];
} xc_emit_dialect_t;

#define XC_EMIT_DIALECT_INIT(b) {.base = (b)}

typedef struct xc_emit_options {
  const char* const* provenance; /* lines for the header comment; may be NULL */
  int num_provenance;
  bool allow_tf32;               /* f32 dots may use reduced-precision matrix instructions */
} xc_emit_options_t;

/* Source for `kernel` with the given knob values (name/value pairs: unnamed
 * knobs take their default). caps is the device compiled for (local memory
 * and thread limits are checked against it; may be NULL); options may be
 * NULL. On success out->text is malloc'd: release it with
 * xc_kernel_source_release (host->kernel_source_release). A kernel the
 * emitter cannot translate is XC_UNSUPPORTED with the reason. */
xc_status_t xc_emit_kernel(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                           const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                           const xc_emit_options_t* options, xc_kernel_source_t* out);

/* The scheduler of the C-family targets with this dialect
 * (docs/tiled-ir.md, "Schedules"): completes *inout (the caller's knob
 * values) into the schedule xc_emit_kernel will follow on caps, legal under
 * limits (fewer stages, generic dots, then smaller tiles unless
 * XC_SCHEDULE_KEEP_KNOBS). A plugin that emits through xc_emit_kernel
 * returns this from its `schedule` entry (host->emit_schedule). */
xc_status_t xc_emit_schedule(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                             const struct xc_tiled_kernel* kernel, const struct xc_tiled_limits* limits,
                             unsigned flags, struct xc_tiled_schedule* inout);

/* False (with a reason in why) for kernels the emitter cannot translate for
 * caps with this dialect: what a target's `supports` entry returns. */
bool xc_emit_supports(const xc_emit_dialect_t* dialect, const xc_device_caps_t* caps,
                      const struct xc_tiled_kernel* kernel, char* why, size_t why_size);

/* Text output for entry writers (printf formats). */
void xc_emit_printf(xc_emit_writer_t* w, const char* fmt, ...) XC_PRINTF(2, 3);
/* Knob values (k->num_knobs of them) from name/value pairs: unnamed knobs
 * take their default; an unknown name or an invalid combination is an error
 * (what xc_emit_kernel does with its knobs). */
xc_status_t xc_emit_resolve_knobs(const struct xc_tiled_kernel* kernel, const xc_knob_t* knobs, int num_knobs,
                                  int64_t* out_values);

/* The C identifier the body uses for a kernel parameter ("p_<name>"). */
const char* xc_emit_param_name(const struct xc_tiled_value* param, char* buf, size_t size);
/* Writes the base dialect's entry for e (the pointer the hook received). */
void xc_emit_write_base_entry(xc_emit_writer_t* w, const xc_emit_entry_t* e);

#ifdef __cplusplus
}
#endif
#endif
