/* The spirv target's interface table and plugin entry: capabilities from the
 * Vulkan devices (or the nominal "spirv:vk11" architecture when compiling
 * without one), the scheduler, emit (tiled IR -> SPIR-V words, validated,
 * handed on as disassembly) and compile (assembled again, validated again,
 * packed as a "spirv" blob). Everything of xcomp comes through the host
 * table: this file and its siblings include only public SDK headers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv_plugin.h"

#define EXPORT __attribute__((visibility("default")))

const xc_target_host_t* spv_host;

const char* spv_dtype_name(xc_dtype_t t) {
  static const char* const names[XC_DTYPE_COUNT] = {
      [XC_F32] = "f32", [XC_F64] = "f64", [XC_F16] = "f16", [XC_BF16] = "bf16", [XC_I8] = "i8",
      [XC_I16] = "i16", [XC_I32] = "i32", [XC_I64] = "i64", [XC_U8] = "u8", [XC_U16] = "u16",
      [XC_U32] = "u32", [XC_U64] = "u64", [XC_BOOL] = "bool", [XC_F8E4M3FN] = "f8e4m3fn", [XC_F8E5M2] = "f8e5m2"};
  return (unsigned)t < XC_DTYPE_COUNT && names[t] ? names[t] : "?";
}

/* ---- blobs ---------------------------------------------------------------- */

xc_status_t spv_blob_pack(const spv_kernel_info_t* info, const uint32_t* code, size_t num_words,
                          xc_blob_t* out_blob) {
  memset(out_blob, 0, sizeof *out_blob);
  size_t name_len = strnlen(info->entry, sizeof info->entry);
  size_t entry_words = name_len / 4 + 1;
  size_t total = SPV_BLOB_HEADER_WORDS + entry_words + 1 + num_words;
  uint32_t* w = calloc(total, sizeof *w);
  if (!w) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory packing a blob");
  w[0] = SPV_BLOB_MAGIC;
  w[1] = SPV_BLOB_VERSION;
  w[2] = info->local_size;
  w[3] = info->num_buffers;
  w[4] = info->num_scalars;
  w[5] = info->features;
  w[6] = info->shared_bytes;
  w[7] = (uint32_t)entry_words;
  memcpy(&w[8], info->entry, name_len);
  w[8 + entry_words] = (uint32_t)num_words;
  memcpy(&w[9 + entry_words], code, num_words * sizeof *code);
  snprintf(out_blob->format, sizeof out_blob->format, "%s", SPV_BLOB_FORMAT);
  out_blob->bytes = (uint8_t*)w;
  out_blob->size = total * sizeof *w;
  return NULL;
}

xc_status_t spv_blob_unpack(const xc_blob_t* blob, spv_kernel_info_t* out_info, const uint32_t** out_code,
                            size_t* out_num_words) {
  memset(out_info, 0, sizeof *out_info);
  *out_code = NULL;
  *out_num_words = 0;
  if (strcmp(blob->format, SPV_BLOB_FORMAT) != 0)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob format '%s' is not '%s'", blob->format, SPV_BLOB_FORMAT);
  if (blob->size % 4 != 0 || blob->size < (SPV_BLOB_HEADER_WORDS + 2) * 4)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob of %zu bytes is too short or not whole words", blob->size);
  size_t n = blob->size / 4;
  uint32_t w[SPV_BLOB_HEADER_WORDS];
  memcpy(w, blob->bytes, sizeof w);
  if (w[0] != SPV_BLOB_MAGIC || w[1] != SPV_BLOB_VERSION)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: not a version %u spirv blob (magic %08x, version %u)",
                     SPV_BLOB_VERSION, w[0], w[1]);
  size_t entry_words = w[7];
  if (entry_words == 0 || entry_words * 4 > sizeof out_info->entry || SPV_BLOB_HEADER_WORDS + entry_words + 1 > n)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob entry name of %zu words is malformed", entry_words);
  uint32_t code_words;
  memcpy(&code_words, blob->bytes + (SPV_BLOB_HEADER_WORDS + entry_words) * 4, 4);
  if (code_words < 5 || SPV_BLOB_HEADER_WORDS + entry_words + 1 + code_words != n)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob code of %u words does not fill the blob", code_words);
  if (w[2] == 0 || w[4] > SPV_MAX_SCALARS || w[3] > XC_TARGET_MAX_ARGS)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob header out of range (local size %u, %u buffers, %u scalars)",
                     w[2], w[3], w[4]);
  out_info->local_size = w[2];
  out_info->num_buffers = w[3];
  out_info->num_scalars = w[4];
  out_info->features = w[5];
  out_info->shared_bytes = w[6];
  memcpy(out_info->entry, blob->bytes + SPV_BLOB_HEADER_WORDS * 4, entry_words * 4);
  out_info->entry[sizeof out_info->entry - 1] = '\0';
  if (!out_info->entry[0]) return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: blob has an empty entry name");
  *out_code = (const uint32_t*)(const void*)(blob->bytes + (SPV_BLOB_HEADER_WORDS + entry_words + 1) * 4);
  *out_num_words = code_words;
  return NULL;
}

/* ---- devices and architectures ------------------------------------------- */

static xc_status_t spv_probe(void* target) {
  (void)target;
  return spv_vk_probe();
}

static xc_status_t spv_device_count(void* target, int* out_count) {
  (void)target;
  *out_count = spv_vk_device_count();
  return NULL;
}

static xc_status_t spv_device_caps(void* target, int index, xc_device_caps_t* out_caps) {
  (void)target;
  spv_vk_device_info_t info;
  xc_status_t s = spv_vk_device_info(index, &info);
  if (!s) *out_caps = info.caps;
  return s;
}

/* The features a module may use on caps: what its dtypes need (the runtime
 * lists a dtype only when the device has the features it takes). */
static uint32_t features_of_caps(const xc_device_caps_t* caps) {
  uint32_t f = 0;
  uint32_t dt = caps->dtypes;
  if (dt & XC_DT(XC_F16)) f |= SPV_FEATURE_FLOAT16 | SPV_FEATURE_STORAGE16 | SPV_FEATURE_INT16;
  if (dt & (XC_DT(XC_I16) | XC_DT(XC_U16) | XC_DT(XC_BF16))) f |= SPV_FEATURE_INT16 | SPV_FEATURE_STORAGE16;
  if (dt & (XC_DT(XC_I8) | XC_DT(XC_U8) | XC_DT(XC_BOOL))) f |= SPV_FEATURE_INT8 | SPV_FEATURE_STORAGE8;
  if (dt & (XC_DT(XC_I64) | XC_DT(XC_U64))) f |= SPV_FEATURE_INT64;
  if (dt & XC_DT(XC_F64)) f |= SPV_FEATURE_FLOAT64;
  if (caps->num_mma_shapes > 0) f |= SPV_FEATURE_COOPMAT;
  /* Subgroup operations are not in caps: a device the runtime lists says
   * what it has; the nominal architectures promise arithmetic and clustered
   * operations (every desktop driver and lavapipe have them). */
  if (strstr(caps->name, "(nominal)")) {
    f |= SPV_FEATURE_SUBGROUP_ARITH | SPV_FEATURE_SUBGROUP_CLUSTERED;
  } else {
    xc_status_t probe = spv_vk_probe();
    int n = probe ? 0 : spv_vk_device_count();
    if (probe) spv_host->status_free(probe);
    for (int i = 0; i < n; i++) {
      spv_vk_device_info_t info;
      xc_status_t s = spv_vk_device_info(i, &info);
      if (s) {
        spv_host->status_free(s);
        continue;
      }
      if (strcmp(info.caps.name, caps->name) == 0 && strcmp(info.caps.version, caps->version) == 0) {
        f |= info.features & (SPV_FEATURE_SUBGROUP_ARITH | SPV_FEATURE_SUBGROUP_CLUSTERED);
        break;
      }
    }
  }
  return f;
}

/* "spirv:vk11": a Vulkan 1.1 device with the features every desktop driver
 * and lavapipe have (int64, f64, 8/16-bit storage, f16), 32 KiB of work-group
 * memory and 256 work-items: code compiled for it runs on any of them. */
static xc_status_t spv_resolve_arch(void* target, const char* spec, xc_device_caps_t* out) {
  (void)target;
  if (strncmp(spec, "vk", 2) != 0) return SPV_ERROR(XC_NOT_FOUND, "not an architecture");
  bool coop = strcmp(spec, "vk11-nvcoopmat") == 0;
  if (strcmp(spec, "vk11") != 0 && !coop)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: unknown architecture '%s' (known: vk11, vk11-nvcoopmat)", spec);
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "Vulkan 1.1 compute (nominal)");
  snprintf(out->vendor, sizeof out->vendor, "any");
  out->kind = XC_DEVICE_GPU;
  out->compute_units = 1;
  out->simd_width = 32;
  out->max_threads_per_group = 256;
  out->local_memory_bytes = 32768;
  out->global_memory_bytes = (int64_t)1 << 30;
  out->max_buffer_bytes = (int64_t)1 << 27;
  out->preferred_layout = XC_LAYOUT_NCHW;
  out->dtypes = XC_DT(XC_F32) | XC_DT(XC_F64) | XC_DT(XC_F16) | XC_DT(XC_BF16) | XC_DT(XC_I8) | XC_DT(XC_I16) | XC_DT(XC_I32) |
                XC_DT(XC_I64) | XC_DT(XC_U8) | XC_DT(XC_U16) | XC_DT(XC_U32) | XC_DT(XC_U64) | XC_DT(XC_BOOL);
  if (coop) {
    /* "vk11-nvcoopmat": the same with VK_NV_cooperative_matrix's 16x16x16
     * f16 -> f32 shape (every NVIDIA GPU with tensor cores lists it) and
     * 48 KiB of work-group memory. */
    snprintf(out->name, sizeof out->name, "Vulkan 1.1 compute with NV cooperative matrices (nominal)");
    out->local_memory_bytes = 49152;
    out->num_mma_shapes = 1;
    out->mma_shapes[0] = (xc_mma_shape_t){16, 16, 16, XC_F16, XC_F32};
  }
  return NULL;
}

/* ---- scheduling, emission, compilation ------------------------------------ */

static int64_t kernel_threads(const xc_tiled_kernel_t* k, const int64_t* knobs) {
  if (k->schedule && k->schedule->threads > 0) return k->schedule->threads;
  return spv_host->tiled_threads(k, knobs);
}

static bool spv_supports(void* target, const xc_device_caps_t* caps, const xc_tiled_kernel_t* kernel, char* why,
                         size_t why_size) {
  (void)target;
  int scalars = 0, buffers = 0;
  for (int i = 0; i < kernel->num_params; i++) {
    const xc_tiled_value_t* p = kernel->params[i];
    if (p->type.kind == XC_TILED_MEMREF) {
      buffers++;
      if (!(caps->dtypes & XC_DT(p->type.dtype))) {
        snprintf(why, why_size, "the device has no %s buffers", spv_dtype_name(p->type.dtype));
        return false;
      }
    } else {
      scalars++;
    }
  }
  if (scalars > SPV_MAX_SCALARS) {
    snprintf(why, why_size, "%d scalar parameters (push constants hold %d)", scalars, SPV_MAX_SCALARS);
    return false;
  }
  if (buffers > XC_TARGET_MAX_ARGS) {
    snprintf(why, why_size, "%d buffers", buffers);
    return false;
  }
  return true;
}

static xc_status_t emit_words(const xc_device_caps_t* caps, const xc_tiled_kernel_t* k, const int64_t* knobs,
                              bool measure_only, uint32_t** out_code, size_t* out_n, spv_kernel_info_t* info) {
  spv_emit_target_t t = {caps, features_of_caps(caps)};
  return spv_emit_kernel(&t, k, knobs, kernel_threads(k, knobs), measure_only, out_code, out_n, info);
}

/* The knob a tile dim takes its extent from (-1: a constant dim). */
static int dim_knob(const xc_tiled_value_t* v, int axis) { return axis < v->type.rank ? v->type.dims[axis].knob : -1; }

static bool knob_allows(const xc_tiled_kernel_t* k, int knob, int64_t value) {
  if (knob < 0 || knob >= k->num_knobs) return false;
  for (int i = 0; i < k->knobs[knob].num_candidates; i++)
    if (k->knobs[knob].candidates[i] == value) return true;
  return false;
}

static const xc_tiled_op_t* nth_dot(const xc_tiled_block_t* blk, int* n) {
  for (int i = 0; i < blk->num_ops; i++) {
    const xc_tiled_op_t* op = blk->ops[i];
    if (op->opcode == XC_TOP_DOT && (*n)-- == 0) return op;
    if (op->body) {
      const xc_tiled_op_t* d = nth_dot(op->body, n);
      if (d) return d;
    }
  }
  return NULL;
}

/* Measures s on kernel: what the emitter takes (0 on success). */
static xc_status_t measure(const xc_device_caps_t* caps, const xc_tiled_kernel_t* kernel, xc_tiled_schedule_t* s,
                           spv_kernel_info_t* info) {
  xc_tiled_kernel_t* k = (xc_tiled_kernel_t*)kernel;
  const xc_tiled_schedule_t* saved = k->schedule;
  k->schedule = s;
  xc_status_t st = emit_words(caps, kernel, s->knobs, true, NULL, NULL, info);
  k->schedule = saved;
  return st;
}

/* Cooperative matrices for the f16 dots of a schedule that fits: each dot in
 * turn is given the device's shape with, unless the knobs are fixed, the
 * first tiles (M x N x K, work-items) its knobs allow and the emitter takes
 * within the work-group memory; a dot the emitter cannot put on fragments
 * keeps the generic loop. */
static void try_coopmat(const xc_device_caps_t* caps, const xc_tiled_kernel_t* kernel,
                        const xc_tiled_limits_t* limits, unsigned flags, xc_tiled_schedule_t* s) {
  const xc_mma_shape_t* shape = NULL;
  for (int i = 0; i < caps->num_mma_shapes && !shape; i++)
    if (caps->mma_shapes[i].input_dtype == XC_F16 && caps->mma_shapes[i].accumulator_dtype == XC_F32)
      shape = &caps->mma_shapes[i];
  if (!shape || !spv_host->schedule_check) return;
  static const int64_t tiles[][4] = {{128, 64, 32, 256}, {64, 64, 32, 128}, {64, 64, 16, 128}, {64, 32, 32, 128},
                                     {32, 32, 32, 64},   {32, 32, 16, 128}, {16, 16, 16, 32}};
  int64_t budget = limits->value[XC_TILED_LIMIT_SHARED_BYTES];
  int threads_knob = -1;
  for (int i = 0; i < kernel->num_knobs; i++)
    if (kernel->knobs[i].kind == XC_KNOB_THREADS) threads_knob = i;
  for (int d = 0; d < s->num_dots; d++) {
    int n = d;
    const xc_tiled_op_t* dot = nth_dot(kernel->body, &n);
    if (!dot || dot->operands[0]->type.dtype != XC_F16 || dot->operands[1]->type.dtype != XC_F16) continue;
    int km = dim_knob(dot->results[0], 0), kn = dim_knob(dot->results[0], 1), kk = dim_knob(dot->operands[0], 1);
    bool fixed = (flags & XC_SCHEDULE_KEEP_KNOBS) != 0;
    int count = fixed ? 1 : (int)(sizeof tiles / sizeof tiles[0]);
    for (int t = 0; t < count; t++) {
      xc_tiled_schedule_t c = *s;
      c.dots[d].mma = (xc_tiled_mma_t){shape->m, shape->n, shape->k, XC_F16, XC_F32};
      c.dots[d].operands = XC_SPACE_SHARED;
      c.dots[d].stages = 1;
      if (!fixed) {
        if (!knob_allows(kernel, km, tiles[t][0]) || !knob_allows(kernel, kn, tiles[t][1]) ||
            !knob_allows(kernel, kk, tiles[t][2]))
          continue;
        c.knobs[km] = tiles[t][0];
        c.knobs[kn] = tiles[t][1];
        c.knobs[kk] = tiles[t][2];
        if (threads_knob >= 0) {
          if (!knob_allows(kernel, threads_knob, tiles[t][3])) continue;
          c.knobs[threads_knob] = tiles[t][3];
        }
        c.threads = tiles[t][3];
      }
      xc_status_t st = spv_host->schedule_check(kernel, &c, limits);
      spv_kernel_info_t info;
      if (!st) st = measure(caps, kernel, &c, &info);
      if (st) {
        spv_host->status_free(st);
        continue;
      }
      if (info.coop_dots <= 0 || info.shared_bytes > budget) continue;
      c.local_bytes = info.shared_bytes;
      *s = c;
      break;
    }
  }
}

static xc_status_t spv_schedule(void* target, const xc_device_caps_t* caps, const xc_tiled_kernel_t* kernel,
                                const xc_tiled_limits_t* limits, unsigned flags, xc_tiled_schedule_t* inout) {
  (void)target;
  if (!spv_host->schedule_generic)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: this xcomp's host table has no generic scheduler");
  xc_tiled_limits_t lim = *limits;
  int64_t budget = limits->value[XC_TILED_LIMIT_SHARED_BYTES];
  xc_tiled_schedule_t start = *inout;
  for (int attempt = 0;; attempt++) {
    *inout = start;
    xc_status_t s = spv_host->schedule_generic(caps, kernel, &lim, flags, inout);
    if (s) return s;
    /* Programs are work-groups of `threads` work-items; tiles live spread
     * over them in registers, or in work-group memory where an op reads
     * them across work-items. That memory is the emitter's to measure. */
    /* Vector loads into work-group memory (vector 4) measured slower on the
     * H200's cooperative-matrix GEMM than element loads: off unless a record
     * asks for them (XC_SCHEDULE_FOLLOW: a tuner's candidate, a tuned
     * record) or XCOMP_SPIRV_VECTOR=4. Vector 4 also gives register-blocked
     * dots their 2-D register tiles (spirv_emit_dot.c). */
    const char* vec = getenv("XCOMP_SPIRV_VECTOR");
    bool can4 = limits->value[XC_TILED_LIMIT_MAX_VECTOR] >= 4;
    if (flags & XC_SCHEDULE_FOLLOW) {
      if (start.vector != 1 && !(start.vector == 4 && can4))
        return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s': vector %lld: this device takes 1%s", kernel->name,
                         (long long)start.vector, can4 ? " or 4" : "");
      inout->vector = start.vector;
    } else {
      inout->vector = vec && strcmp(vec, "4") == 0 && can4 ? 4 : 1;
    }
    inout->unroll = 0;
    spv_kernel_info_t info;
    s = measure(caps, kernel, inout, &info);
    if (s) return s;
    inout->local_bytes = info.shared_bytes;
    inout->dynamic_bytes = 0;
    snprintf(inout->scheduler, sizeof inout->scheduler, "spirv");
    if (info.shared_bytes <= budget) {
      try_coopmat(caps, kernel, limits, flags, inout);
      return NULL;
    }
    if ((flags & XC_SCHEDULE_KEEP_KNOBS) || attempt >= 6)
      return SPV_ERROR(XC_UNSUPPORTED,
                       "spirv: kernel '%s' needs %u bytes of work-group memory, the device has %" PRId64,
                       kernel->name ? kernel->name : "?", info.shared_bytes, budget);
    /* Smaller tiles: ask the generic scheduler again with less room. */
    lim.value[XC_TILED_LIMIT_SHARED_BYTES] /= 2;
    lim.value[XC_TILED_LIMIT_MAX_TILE_ELEMS] = lim.value[XC_TILED_LIMIT_MAX_TILE_ELEMS] / 2;
    if (lim.value[XC_TILED_LIMIT_MAX_TILE_ELEMS] < 1) lim.value[XC_TILED_LIMIT_MAX_TILE_ELEMS] = 1;
  }
}

/* The assembly text carries what the blob needs beyond the code on its
 * first line, a comment the assembler skips. */
#define SPV_INFO_WRITE "; xcomp-spirv local_size=%u buffers=%u scalars=%u features=%u shared=%u entry=%s\n"
#define SPV_INFO_READ "; xcomp-spirv local_size=%u buffers=%u scalars=%u features=%u shared=%u entry=%127s\n"

static xc_status_t spv_emit(void* target, const xc_device_caps_t* caps, const xc_tiled_kernel_t* kernel,
                            const xc_knob_t* knobs, int num_knobs, xc_kernel_source_t* out) {
  (void)target;
  memset(out, 0, sizeof *out);
  int64_t values[XC_TILED_MAX_SCHED_KNOBS + 16];
  if (kernel->num_knobs > (int)(sizeof values / sizeof values[0]))
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' has %d knobs", kernel->name, kernel->num_knobs);
  xc_status_t s = spv_host->resolve_knobs(kernel, knobs, num_knobs, values);
  if (s) return s;
  uint32_t* code = NULL;
  size_t n = 0;
  spv_kernel_info_t info;
  s = emit_words(caps, kernel, values, false, &code, &n, &info);
  if (!s) s = spv_tools_validate(code, n, kernel->name);
  char* text = NULL;
  if (!s) s = spv_tools_disassemble(code, n, &text);
  free(code);
  if (s) return s;
  char head[400];
  int hl = snprintf(head, sizeof head, SPV_INFO_WRITE, info.local_size, info.num_buffers, info.num_scalars,
                    info.features, info.shared_bytes, info.entry);
  size_t tl = strlen(text);
  char* all = malloc((size_t)hl + tl + 1);
  if (!all) {
    free(text);
    return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  }
  memcpy(all, head, (size_t)hl);
  memcpy(all + hl, text, tl + 1);
  free(text);
  out->language = "spvasm";
  out->text = all;
  snprintf(out->entry, sizeof out->entry, "%s", info.entry);
  return NULL;
}

static xc_status_t write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f) return SPV_ERROR(XC_IO, "spirv: cannot write %s", path);
  size_t w = fwrite(data, 1, size, f);
  int rc = fclose(f);
  if (w != size || rc != 0) return SPV_ERROR(XC_IO, "spirv: writing %s failed", path);
  return NULL;
}

static xc_status_t spv_compile(void* target, const xc_device_caps_t* caps, const xc_kernel_source_t* src,
                               const xc_compile_options_t* options, xc_blob_t* out) {
  (void)target;
  (void)caps;
  memset(out, 0, sizeof *out);
  spv_kernel_info_t info;
  memset(&info, 0, sizeof info);
  if (!src->text || sscanf(src->text, SPV_INFO_READ, &info.local_size, &info.num_buffers, &info.num_scalars,
                           &info.features, &info.shared_bytes, info.entry) != 6)
    return SPV_ERROR(XC_INVALID_ARGUMENT,
                     "spirv: the source does not start with the '; xcomp-spirv ...' line the emitter writes");
  uint32_t* code = NULL;
  size_t n = 0;
  xc_status_t s = spv_tools_assemble(src->text, &code, &n);
  if (!s) s = spv_tools_validate(code, n, info.entry);
  if (!s && options && options->dump_path) {
    char path[4200];
    snprintf(path, sizeof path, "%s.spv", options->dump_path);
    s = write_file(path, code, n * 4);
  }
  if (!s) s = spv_blob_pack(&info, code, n, out);
  free(code);
  return s;
}

static void spv_target_free(void* target) {
  (void)target;
  spv_vk_shutdown();
}

static const xc_target_iface_t spv_iface = {
    .api_version = XC_TARGET_API_VERSION,
    .name = "spirv",
    .description = "SPIR-V compute shaders on Vulkan (SPIRV-Tools validated; lavapipe, GPU drivers)",
    .probe = spv_probe,
    .device_count = spv_device_count,
    .device_caps = spv_device_caps,
    .supports = spv_supports,
    .emit = spv_emit,
    .compile = spv_compile,
    .device_open = spv_vk_device_open,
    .device_close = spv_vk_device_close,
    .buffer_alloc = spv_vk_buffer_alloc,
    .buffer_free = spv_vk_buffer_free,
    .buffer_host_pointer = spv_vk_buffer_host_pointer,
    .buffer_write = spv_vk_buffer_write,
    .buffer_read = spv_vk_buffer_read,
    .module_load = spv_vk_module_load,
    .module_unload = spv_vk_module_unload,
    .kernel_get = spv_vk_kernel_get,
    .launch = spv_vk_launch,
    .synchronize = spv_vk_synchronize,
    .event_record = spv_vk_event_record,
    .event_elapsed_ms = spv_vk_event_elapsed_ms,
    .event_free = spv_vk_event_free,
    .target_free = spv_target_free,
    .capture_begin = spv_vk_capture_begin,
    .capture_end = spv_vk_capture_end,
    .graph_launch = spv_vk_graph_launch,
    .graph_free = spv_vk_graph_free,
    .resolve_arch = spv_resolve_arch,
    .schedule = spv_schedule,
    .buffer_alloc_mapped = spv_vk_buffer_alloc_mapped,
};

XC_TARGET_PLUGIN_DEFINE_VERSION()

EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* h);
EXPORT xc_status_t xc_target_plugin_init(int api_version, const xc_target_host_t* h) {
  if (api_version != XC_TARGET_API_VERSION || h->api_version < 3 || h->size < sizeof *h)
    return h->error(XC_UNSUPPORTED, "spirv: built for target API %d (host table of %zu bytes), host has %d",
                    XC_TARGET_API_VERSION, sizeof *h, api_version);
  spv_host = h;
  return h->register_target(h, &spv_iface, NULL);
}
