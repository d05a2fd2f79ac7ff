/* The entry of the C-family emitter (xc_cstyle_emit): tiled kernel + knob
 * values -> source text in the language of a dialect table (docs/emitter.md).
 * It runs the analyses, emits the kernel body, then writes the header
 * comment, the preludes and the dialect's entry function. The parts live in
 * cstyle_writer.c, cstyle_analysis.c, cstyle_fusion.c, cstyle_expr.c,
 * cstyle_ops.c and cstyle_dot.c; their shared state is cstyle_internal.h. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

/* ---- prelude shared by all dialects ---------------------------------------------- */

/* XC_MAX / XC_MIN propagate a NaN of either operand (both comparisons are
 * false, and a + b is NaN); ties give b, as before. Written with two
 * selects rather than `a > b || a != a`, which GCC 12 does not vectorize
 * (every Clip/ReLU6 epilogue of a convolution stayed scalar). */
static const char* const shared_prelude =
    "#ifndef XC_MAX /* a dialect prelude may order the same selects its own way */\n"
    "#define XC_MAX(a, b) ((b) >= (a) ? (b) : (a) > (b) ? (a) : (a) + (b))\n"
    "#define XC_MIN(a, b) ((b) <= (a) ? (b) : (a) < (b) ? (a) : (a) + (b))\n"
    "#endif\n"
    "#ifndef XC_UNLIKELY /* a branch rarely taken (rows at an image's edges) */\n"
    "#if defined(__GNUC__)\n#define XC_UNLIKELY(x) __builtin_expect(!!(x), 0)\n"
    "#else\n#define XC_UNLIKELY(x) (x)\n#endif\n#endif\n"
    "/* f16 / bf16 are stored as 16-bit integers and computed in float. */\n"
    "#ifndef XC_NATIVE_H2F /* a dialect prelude may define xc_h2f with an instruction */\n"
    "static inline float xc_h2f(xc_u16 h) {\n"
    "  xc_u32 sign = ((xc_u32)h & 0x8000u) << 16, e = ((xc_u32)h >> 10) & 0x1fu, m = (xc_u32)h & 0x3ffu;\n"
    "  if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }\n"
    "  if (e == 31) return xc_bitsf(sign | 0x7f800000u | (m << 13));\n"
    "  return xc_bitsf(sign | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "#endif\n"
    "#ifndef XC_NATIVE_F2H /* a dialect prelude may define xc_f2h with an instruction */\n"
    "static inline xc_u16 xc_f2h(float f) {\n"
    "  xc_u32 x = xc_fbits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
    "  if (ax >= 0x7f800000u) return (xc_u16)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));\n"
    "  if (ax >= 0x477ff000u) return (xc_u16)(sign | 0x7c00u);\n"
    "  if (ax < 0x38800000u) {\n"
    "    xc_u32 e = ax >> 23;\n"
    "    if (e < 102u) return (xc_u16)sign;\n"
    "    xc_u32 m = (ax & 0x7fffffu) | 0x800000u, sh = 126u - e, r = m >> sh, rem = m & ((1u << sh) - 1u);\n"
    "    xc_u32 hb = 1u << (sh - 1u);\n"
    "    if (rem > hb || (rem == hb && (r & 1u))) r++;\n"
    "    return (xc_u16)(sign | r);\n"
    "  }\n"
    "  xc_u32 h = (ax - 0x38000000u) >> 13, rem = ax & 0x1fffu;\n"
    "  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;\n"
    "  return (xc_u16)(sign | h);\n"
    "}\n"
    "#endif\n"
    "static inline float xc_bf2f(xc_u16 b) { return xc_bitsf((xc_u32)b << 16); }\n"
    "#ifndef XC_NATIVE_F2BF /* a dialect prelude may define xc_f2bf with an instruction */\n"
    "static inline xc_u16 xc_f2bf(float f) {\n"
    "  xc_u32 x = xc_fbits(f);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) return (xc_u16)((x >> 16) | 0x40u);\n"
    "  return (xc_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "}\n"
    "#endif\n";

/* ---- entry ------------------------------------------------------------------------ */

/* One " * <tag><text>" line of the header comment, kept closed whatever the
 * text holds. */
static void provenance_line(xc_cstyle_writer_t* w, const char* tag, const char* text) {
  P(w, " * %s", tag);
  for (const char* c = text; *c; c++) P(w, "%c", (c[0] == '*' && c[1] == '/') ? '+' : (*c == '\n' ? ' ' : *c));
  P(w, "\n");
}

/* The matrix instruction of caps for operands of dtype t with f32
 * accumulation (tf32 shapes are listed with f32 inputs); a dialect whose
 * device lists none reports the plan's own tile. */
static xc_tiled_mma_t instruction_of(const em_t* e, const xc_cstyle_dot_t* d) {
  if (d->inst_m > 0) return (xc_tiled_mma_t){d->inst_m, d->inst_n, d->inst_k, d->a_dtype, d->acc_dtype};
  for (int i = 0; e->caps && i < e->caps->num_mma_shapes && i < XC_TARGET_MAX_MMA_SHAPES; i++) {
    const xc_mma_shape_t* m = &e->caps->mma_shapes[i];
    if (m->input_dtype == d->a_dtype && m->accumulator_dtype == d->acc_dtype)
      return (xc_tiled_mma_t){m->m, m->n, m->k, m->input_dtype, m->accumulator_dtype};
  }
  return (xc_tiled_mma_t){(int)d->m, (int)d->n, (int)d->k, d->a_dtype, d->acc_dtype};
}

/* The record of what the emission decided (the schedule it followed). */
static void record_decisions(const em_t* e, const int64_t* values, xc_tiled_schedule_t* out) {
  const xc_tiled_kernel_t* k = e->k;
  memset(out, 0, sizeof *out);
  out->num_knobs = k->num_knobs < XC_TILED_MAX_SCHED_KNOBS ? k->num_knobs : XC_TILED_MAX_SCHED_KNOBS;
  for (int i = 0; i < out->num_knobs; i++) out->knobs[i] = values[i];
  out->threads = e->T;
  out->vector = e->vec;
  out->unroll = e->unroll;
  int dots = xc_tiled_dot_count(k);
  out->num_dots = dots < XC_TILED_MAX_SCHED_DOTS ? dots : XC_TILED_MAX_SCHED_DOTS;
  for (int i = 0; i < out->num_dots; i++) {
    const xc_tiled_op_t* op = xc_tiled_dot_at(k, i);
    xc_tiled_dot_schedule_t* d = &out->dots[i];
    d->stages = 1;
    if (op && op == e->mma) {
      d->mma = instruction_of(e, &e->dot);
      d->stages = e->stages > 1 ? e->stages : 1;
      d->operands = e->dyn ? XC_SPACE_DYNAMIC : XC_SPACE_SHARED;
    }
    for (int m = 0; op && m < e->num_mx; m++)
      if (e->mx[m].op == op) {
        d->mma = instruction_of(e, &e->mx[m].dot);
        d->operands = XC_SPACE_SHARED;
      }
  }
  out->local_bytes = e->d->work_groups ? e->local_bytes : 0;
  out->dynamic_bytes = e->dyn_bytes;
}

/* Emission proper. sched: the schedule to follow (NULL: decide as the
 * defaults say, the scheduler's first proposal). measure: report what was
 * decided in *decided and the resources it takes, without refusing what
 * exceeds the device (the scheduler judges that); else refuse it and write
 * the source. */
static xc_status_t run(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                       const xc_knob_t* knobs, int num_knobs, const int64_t* knob_values,
                       const xc_cstyle_options_t* options, const xc_tiled_schedule_t* sched, bool measure,
                       xc_tiled_schedule_t* decided, xc_kernel_source_t* out) {
  if (out) memset(out, 0, sizeof *out);
  char why[512];
  if (!xc_cstyle_supports(d, caps, k, why, sizeof why))
    return xc_error(XC_UNSUPPORTED, "%s emitter: kernel '%s': %s", d->name, k->name, why);
  int64_t* values = calloc((size_t)(k->num_knobs ? k->num_knobs : 1), sizeof *values);
  em_t e;
  memset(&e, 0, sizeof e);
  xc_cstyle_writer_t pack = {0}; /* the pack entry's body (cstyle_pack.c) */
  e.vi = calloc((size_t)(k->num_values > 0 ? k->num_values : 1), sizeof *e.vi);
  if (!values || !e.vi) {
    free(values), free(e.vi);
    return xc_error_oom();
  }
  e.d = d;
  e.k = k;
  e.knobs = values;
  e.caps = caps;
  e.sched = sched;
  e.allow_tf32 = options && options->allow_tf32;
  e.pack_allowed = options && options->pack_operands;
  int tf32_knob = xc_tiled_find_knob(k, "tf32");
  if (knob_values) memcpy(values, knob_values, (size_t)k->num_knobs * sizeof *values);
  else e.err = xc_cstyle_resolve_knobs(k, knobs, num_knobs, values);
  if (!e.err && sched) {
    e.err = xc_tiled_schedule_verify(k, sched);
    for (int i = 0; !e.err && i < k->num_knobs; i++)
      if (values[i] != sched->knobs[i])
        e.err = xc_error(XC_INVALID_ARGUMENT,
                         "%s emitter: kernel '%s': knob %s = %" PRId64 " differs from its schedule's %" PRId64,
                         d->name, k->name, k->knobs[i].name, values[i], sched->knobs[i]);
  }
  e.T = d->work_groups ? xc_tiled_threads(k, values) : 1;
  if (!e.err && sched && sched->threads != e.T)
    e.err = xc_error(XC_INVALID_ARGUMENT, "%s emitter: kernel '%s': the schedule's %" PRId64
                     " threads per program differ from the knobs' %" PRId64, d->name, k->name, sched->threads, e.T);
  /* chunks of 16 bytes of the widest global element the kernel moves */
  e.vec = 1;
  if (!e.err && d->work_groups && d->vec_chunks) {
    int64_t w = xc_cse_widest_global(k->body);
    if (w > 0 && w <= 8) e.vec = 16 / w;
  }
  /* a schedule may ask for none (1) or for chunks of 32 or 64 bytes: wider
   * register tiles of blocked dots (docs/emitter.md, "Vector chunks") */
  if (!e.err && sched && sched->vector != e.vec) {
    if (sched->vector == 1) e.vec = 1;
    else if (e.vec > 1 && (sched->vector == 2 * e.vec || sched->vector == 4 * e.vec)) e.vec = sched->vector;
    else if (e.vec <= 1)
      e.err = xc_error(XC_INVALID_ARGUMENT, "%s emitter: kernel '%s': vector %" PRId64 " (this dialect has no "
                       "chunks here: 1 only)", d->name, k->name, sched->vector);
    else
      e.err = xc_error(XC_INVALID_ARGUMENT, "%s emitter: kernel '%s': vector %" PRId64 " (chunks of 16, 32 or 64 "
                       "bytes are %" PRId64 ", %" PRId64 " or %" PRId64 " elements here, or 1 for none)", d->name,
                       k->name, sched->vector, e.vec, 2 * e.vec, 4 * e.vec);
  }
  e.unroll = sched ? sched->unroll : d->unroll_pragma ? 32 : 0;
  if (!e.err && tf32_knob >= 0 && k->knobs[tf32_knob].kind == XC_KNOB_OTHER && values[tf32_knob] == 1)
    e.allow_tf32 = true; /* the lowering chose tf32 for a compile that allows it */
  e.simd = caps && caps->simd_width > 0 && !d->work_groups ? caps->simd_width : 8;
  if (!e.err && !measure && d->work_groups && caps && caps->max_threads_per_group > 0 &&
      e.T > caps->max_threads_per_group)
    e.err = xc_error(XC_UNSUPPORTED, "%s emitter: %" PRId64 " threads per program exceed the device limit %d",
                     d->name, e.T, caps->max_threads_per_group);
  if (!e.err && !(e.ranges = xc_tiled_ranges(k, values))) e.err = xc_error_oom();
  if (!e.err) {
    for (int i = 0; i < k->num_params; i++) xc_cse_classify_value(&e, k->params[i]);
    bool stored = false;
    xc_cse_scan_phases(&e, k->body, &stored);
    /* first pass: shapes and names, so that uses can be compared */
    xc_cse_classify_block(&e, k->body);
    xc_cse_analyze_block(&e, k->body);
    xc_cse_classify_block(&e, k->body);
    if (d->work_groups && d->dot_plan && d->dot_slot_index && d->emit_dot) {
      xc_cse_count_uses(&e, k->body);
      xc_cse_plan_mma(&e, k->body);
      if (d->dot_staged && !e.err) {
        int64_t room = INT64_MAX;
        if (caps && caps->local_memory_bytes > 0) {
          room = caps->local_memory_bytes - xc_cse_other_local_bytes(&e, k->body, e.mma);
          if (e.mma && !e.dyn) room -= xc_cse_staged_bytes(&e.dot) * (e.stages > 1 ? e.stages : 1);
        }
        xc_cse_plan_staged(&e, k->body, &room);
      }
    }
    if (!e.err && sched) {
      /* every dot the schedule puts on matrix instructions was taken */
      for (int i = 0; i < sched->num_dots && !e.err; i++) {
        const xc_tiled_op_t* op = xc_tiled_dot_at(k, i);
        bool taken = op && op == e.mma;
        for (int m = 0; m < e.num_mx; m++) taken |= e.mx[m].op == op;
        if (sched->dots[i].mma.m && !taken)
          e.err = xc_error(XC_UNSUPPORTED, "%s emitter: kernel '%s': the schedule puts dot %d on matrix "
                           "instructions, which this dialect cannot do for it", d->name, k->name, i);
        const xc_cstyle_dot_t* plan = op && op == e.mma ? &e.dot : NULL;
        for (int m = 0; m < e.num_mx; m++)
          if (e.mx[m].op == op) plan = &e.mx[m].dot;
        xc_tiled_mma_t got = plan ? instruction_of(&e, plan) : (xc_tiled_mma_t){0, 0, 0, 0, 0};
        const xc_tiled_mma_t* want = &sched->dots[i].mma;
        if (!e.err && plan && (got.m != want->m || got.n != want->n || got.k != want->k ||
                               got.input_dtype != want->input_dtype))
          e.err = xc_error(XC_UNSUPPORTED, "%s emitter: kernel '%s': the schedule asks for m%dn%dk%d on dot %d, "
                           "this dialect issues m%dn%dk%d for it", d->name, k->name, want->m, want->n, want->k, i,
                           got.m, got.n, got.k);
      }
    }
    if (!d->work_groups) {
      e.op_group = calloc((size_t)k->num_ops + 1, sizeof *e.op_group);
      e.op_member = calloc((size_t)k->num_ops + 1, sizeof *e.op_member);
      e.nuses = calloc((size_t)k->num_values + 1, sizeof *e.nuses);
      if (!e.op_group || !e.op_member || !e.nuses) {
        free(e.op_group), free(e.op_member), free(e.nuses);
        e.op_group = NULL, e.op_member = NULL, e.nuses = NULL;
      } else {
        xc_cse_count_uses(&e, k->body);
        xc_cse_plan_fusion(&e, k->body);
        xc_cse_plan_in_place(&e, k->body);
        xc_cse_plan_zero_entry(&e, k->body);
        xc_cse_plan_epilogue(&e, k->body);
        xc_cse_plan_pack(&e, k->body);
        xc_cse_plan_row_ptrs(&e, k->body);
        xc_cse_plan_hoist(&e, k->body);
      }
    }
    if (!e.err) {
      if (d->work_groups) xc_cse_plan_vec_rows(&e, k->body);
      if (d->work_groups) xc_cse_plan_copy_chunks(&e, k->body);
      xc_cse_declare_block(&e, k->body);
      xc_cse_declare_staged(&e);
      e.depth = 1;
      xc_cse_emit_block(&e, k->body);
    }
    if (!e.err && e.num_packs) xc_cse_emit_pack_body(&e, &pack);
  }
  if (!e.err && !d->work_groups && e.local_bytes > XC_CSTYLE_MAX_STACK_BYTES)
    e.err = xc_error(XC_RESOURCE_EXHAUSTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " bytes of tile arrays per program with these "
                     "knobs, more than the %lld allowed on a thread's stack: choose smaller tiles",
                     d->name, k->name, e.local_bytes, (long long)XC_CSTYLE_MAX_STACK_BYTES);
  if (!e.err && !measure && d->work_groups && caps && caps->local_memory_bytes > 0 &&
      e.local_bytes > caps->local_memory_bytes)
    e.err = xc_error(XC_UNSUPPORTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " bytes of local memory with these knobs, "
                     "the device has %" PRId64,
                     d->name, k->name, e.local_bytes, caps->local_memory_bytes);
  if (!e.err && !measure && e.dyn_bytes && e.local_bytes + e.dyn_bytes > caps->local_memory_optin_bytes)
    e.err = xc_error(XC_UNSUPPORTED,
                     "%s emitter: kernel '%s' needs %" PRId64 " + %" PRId64 " bytes of static and dynamic "
                     "local memory with these knobs, the device allows %" PRId64,
                     d->name, k->name, e.local_bytes, e.dyn_bytes, caps->local_memory_optin_bytes);
  if (!e.err && decided) record_decisions(&e, values, decided);
  char entry[128], kname[100];
  const char* suffix = options && options->entry_suffix ? options->entry_suffix : NULL;
  xc_cse_sanitize(k->name, kname, sizeof kname, 90);
  snprintf(entry, sizeof entry, "xk_%s%.24s", kname, suffix ? suffix : "");
  xc_cstyle_writer_t src = {0};
  if (!e.err && out && suffix) {
    P(&src, "\n/* %s: kernel %s again, knobs:", entry, k->name);
    for (int i = 0; i < k->num_knobs; i++) P(&src, " %s=%" PRId64, k->knobs[i].name, values[i]);
    P(&src, " */\n");
  } else if (!e.err && out) {
    P(&src, "/* xcomp kernel %s: %s, emitted for %s", k->name, entry, d->name);
    if (caps && caps->name[0]) P(&src, " (%s)", caps->name);
    P(&src, "\n");
    if (k->num_knobs) {
      P(&src, " * knobs:");
      for (int i = 0; i < k->num_knobs; i++) P(&src, " %s=%" PRId64, k->knobs[i].name, values[i]);
      P(&src, "\n");
    }
    if (d->work_groups) P(&src, " * work-items per program: %" PRId64 "\n", e.T);
    if (k->origin) provenance_line(&src, "graph nodes: ", k->origin);
    if (e.num_packs) {
      P(&src, " * packed operands (%" PRId64 " bytes, %" PRId64 " pack programs):", e.pack_bytes, e.pack_programs);
      for (int i = 0; i < e.num_packs; i++) P(&src, " %%%d", e.packs[i].load->results[0]->id);
      P(&src, "\n");
    }
    if (e.mma)
      P(&src, " * dot %d on matrix instructions, K loop in %d pipeline stages%s\n", e.mma->id,
        e.stages > 1 ? e.stages : 1, e.dyn ? " (operands in dynamic work-group memory)" : "");
    for (int i = 0; i < e.num_mx; i++)
      P(&src, " * dot %d on matrix instructions, operands staged in work-group memory\n", e.mx[i].op->id);
    for (int i = 0; options && i < options->num_provenance; i++)
      if (options->provenance[i]) provenance_line(&src, "from: ", options->provenance[i]);
    P(&src, " */\n%s", d->prelude);
    if (e.uses_f64 && d->f64_prelude) P(&src, "%s", d->f64_prelude);
    P(&src, "%s\n", shared_prelude);
  }
  if (!e.err && out) {
    for (int t = 0; t < XC_DTYPE_COUNT; t++)
      for (int b = 4; b <= 64; b *= 2)
        if (e.vec_types[t] & (unsigned)b) {
          /* chunks wider than 16 bytes are aligned to 16 (buffers are) */
          const char* dt = xc_dtype_name((xc_dtype_t)t);
          P(&src, "#ifndef XC_HAVE_V%d_%s\n#define XC_HAVE_V%d_%s\n", b, dt, b, dt);
          P(&src, "typedef struct __attribute__((aligned(%d))) { %s v[%d]; } xc_v%d_%s;\n#endif\n", b < 16 ? b : 16,
            d->storage_type[t], b / (int)xc_dtype_size((xc_dtype_t)t), b, dt);
        }
    xc_cstyle_entry_t en = {k, entry, e.T, wstr(&e.decls), wstr(&e.body), e.mma ? &e.dot : NULL, e.dyn_bytes,
                            e.num_packs ? wstr(&pack) : NULL, e.pack_programs, e.pack_bytes};
    d->write_entry(&src, d, &en);
    if (src.oom || e.decls.oom || e.body.oom) e.err = xc_error_oom();
  }
  free(e.decls.data), free(e.body.data), free(pack.data), free(e.vi), free(e.ranges), free(values);
  free(e.op_group), free(e.op_member), free(e.nuses);
  if (e.err || !out) {
    free(src.data);
    return e.err;
  }
  out->language = d->name;
  out->text = src.data;
  snprintf(out->entry, sizeof out->entry, "%s", entry);
  return NULL;
}

xc_status_t xc_cstyle_emit(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           const xc_knob_t* knobs, int num_knobs, const xc_cstyle_options_t* options,
                           xc_kernel_source_t* out) {
  const xc_tiled_schedule_t* sched = options && options->schedule ? options->schedule : k->schedule;
  return run(d, caps, k, knobs, num_knobs, NULL, options, sched, false, NULL, out);
}

xc_status_t xc_cstyle_plan(const xc_cstyle_dialect_t* d, const xc_device_caps_t* caps, const xc_tiled_kernel_t* k,
                           const int64_t* knob_values, const xc_tiled_schedule_t* follow,
                           const xc_cstyle_options_t* options, xc_tiled_schedule_t* out) {
  return run(d, caps, k, NULL, 0, knob_values, options, follow, true, out, NULL);
}
