/* AMD architectures the rocm target knows without a device (nominal
 * capabilities for `--target rocm:gfx90a`), the rocm selector, and the
 * code-object blob and offload-bundle formats. docs/targets/rocm.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets_internal.h"
#include "rocm_target.h"

/* CUs and products are those of the largest part of each architecture.
 * LDS is 64 KiB per work-group on all of them (RDNA3 has 128 KiB per WGP,
 * of which one work-group may use 64 KiB). */
static const xc_rocm_arch_t g_arches[] = {
    {"gfx908", "MI100", 64, 120, 65536, 1024, 'M', 400},
    {"gfx90a", "MI210, MI250, MI250X (per GCD)", 64, 110, 65536, 1024, 'M', 400},
    {"gfx940", "MI300A (early)", 64, 228, 65536, 1024, 'M', 503},
    {"gfx941", "MI300X (early)", 64, 304, 65536, 1024, 'M', 503},
    {"gfx942", "MI300A, MI300X, MI325X", 64, 304, 65536, 1024, 'M', 600},
    {"gfx1030", "Radeon RX 6800/6900, PRO W6800", 32, 80, 65536, 1024, 0, 400},
    {"gfx1100", "Radeon RX 7900 XTX, PRO W7900", 32, 96, 65536, 1024, 'W', 505},
};

const xc_rocm_arch_t* xc_rocm_arch_at(int i) {
  return i >= 0 && i < (int)(sizeof g_arches / sizeof g_arches[0]) ? &g_arches[i] : NULL;
}

/* Length of the architecture token at s ("gfx90a" of "gfx90a:xnack-"), 0
 * when s does not start with one. */
static size_t arch_token_len(const char* s) {
  if (strncmp(s, "gfx", 3) != 0) return 0;
  size_t n = 3;
  while (isdigit((unsigned char)s[n]) || (s[n] >= 'a' && s[n] <= 'f')) n++;
  if (n < 6 || n > 8 || isalnum((unsigned char)s[n]) || s[n] == '_') return 0;
  return n;
}

const xc_rocm_arch_t* xc_rocm_arch_find(const char* name) {
  if (!name) return NULL;
  size_t n = arch_token_len(name);
  if (!n || (name[n] && name[n] != ':')) return NULL;
  for (size_t i = 0; i < sizeof g_arches / sizeof g_arches[0]; i++)
    if (strlen(g_arches[i].name) == n && strncmp(g_arches[i].name, name, n) == 0) return &g_arches[i];
  return NULL;
}

static bool find_arch_token(const char* s, char* out, size_t size) {
  for (const char* p = s ? strstr(s, "gfx") : NULL; p; p = strstr(p + 1, "gfx")) {
    if (p != s && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
    size_t n = arch_token_len(p);
    if (!n || n + 1 > size) continue;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
  }
  return false;
}

bool xc_rocm_caps_arch(const xc_device_caps_t* caps, char* out, size_t size) {
  return caps && (find_arch_token(caps->vendor, out, size) || find_arch_token(caps->version, out, size) ||
                  find_arch_token(caps->name, out, size));
}

static void add_mma(xc_device_caps_t* caps, int m, int n, int k, xc_dtype_t in, xc_dtype_t acc) {
  if (caps->num_mma_shapes < XC_TARGET_MAX_MMA_SHAPES)
    caps->mma_shapes[caps->num_mma_shapes++] = (xc_mma_shape_t){m, n, k, in, acc};
}

/* Matrix instruction shapes: MFMA (CDNA) and WMMA (RDNA3) with f32 or i32
 * accumulators. */
static void set_mma_shapes(xc_device_caps_t* caps, const xc_rocm_arch_t* a) {
  caps->num_mma_shapes = 0;
  if (a->matrix == 'M') {
    bool cdna3 = strncmp(a->name, "gfx94", 5) == 0;
    add_mma(caps, 32, 32, 8, XC_F16, XC_F32);
    add_mma(caps, 16, 16, 16, XC_F16, XC_F32);
    if (strcmp(a->name, "gfx908") == 0) {
      add_mma(caps, 32, 32, 4, XC_BF16, XC_F32);
    } else {
      add_mma(caps, 32, 32, 8, XC_BF16, XC_F32); /* the _1k forms */
      add_mma(caps, 16, 16, 16, XC_BF16, XC_F32);
    }
    add_mma(caps, 32, 32, 2, XC_F32, XC_F32);
    add_mma(caps, 16, 16, 4, XC_F32, XC_F32);
    add_mma(caps, 32, 32, cdna3 ? 16 : 8, XC_I8, XC_I32);
  } else if (a->matrix == 'W') {
    add_mma(caps, 16, 16, 16, XC_F16, XC_F32);
    add_mma(caps, 16, 16, 16, XC_BF16, XC_F32);
    add_mma(caps, 16, 16, 16, XC_I8, XC_I32);
  }
}

static void set_arch_caps(xc_device_caps_t* caps, const xc_rocm_arch_t* a) {
  snprintf(caps->vendor, sizeof caps->vendor, "AMD %s", a->name);
  caps->kind = XC_DEVICE_GPU;
  caps->preferred_layout = XC_LAYOUT_NCHW;
  caps->dtypes = XC_DT(XC_F32) | XC_DT(XC_F64) | XC_DT(XC_F16) | XC_DT(XC_BF16) | XC_DT(XC_I8) | XC_DT(XC_I16) |
                 XC_DT(XC_I32) | XC_DT(XC_I64) | XC_DT(XC_U8) | XC_DT(XC_U16) | XC_DT(XC_U32) | XC_DT(XC_U64) |
                 XC_DT(XC_BOOL);
  caps->compute_units = a->compute_units;
  caps->simd_width = a->wave_size;
  caps->max_threads_per_group = a->max_threads;
  caps->local_memory_bytes = a->lds_bytes;
  set_mma_shapes(caps, a);
  caps->has_vendor_blas = false; /* rocBLAS / hipBLASLt are not wired in */
}

xc_status_t xc_rocm_arch_caps(const char* arch, xc_device_caps_t* caps) {
  if (!caps) return xc_error(XC_INVALID_ARGUMENT, "xc_rocm_arch_caps: NULL argument");
  memset(caps, 0, sizeof *caps);
  const xc_rocm_arch_t* a = xc_rocm_arch_find(arch);
  if (!a) {
    char known[256] = "";
    for (int i = 0, k = 0; xc_rocm_arch_at(i) && k < (int)sizeof known; i++)
      k += snprintf(known + k, sizeof known - (size_t)k, "%s%s", i ? ", " : "", xc_rocm_arch_at(i)->name);
    return xc_error(XC_INVALID_ARGUMENT, "rocm: '%s' is not a known AMD architecture (known: %s)",
                    arch ? arch : "(null)", known);
  }
  snprintf(caps->name, sizeof caps->name, "ROCm %s (no device)", a->name);
  set_arch_caps(caps, a);
  return NULL;
}

/* Fills the parts of caps that come from the architecture table for a
 * present device (used by the runtime half). */
void xc_rocm_fill_device_caps(xc_device_caps_t* caps, const char* arch);
void xc_rocm_fill_device_caps(xc_device_caps_t* caps, const char* arch) {
  const xc_rocm_arch_t* a = xc_rocm_arch_find(arch);
  if (a) {
    set_arch_caps(caps, a);
    return;
  }
  xc_rocm_arch_t unknown = {arch, "", 64, 1, 65536, 1024, 0, 0};
  set_arch_caps(caps, &unknown);
  snprintf(caps->vendor, sizeof caps->vendor, "AMD %s", arch);
}

xc_status_t xc_rocm_resolve_arch(void* target, const char* spec, xc_device_caps_t* caps) {
  (void)target;
  if (!arch_token_len(spec))
    return xc_error(XC_NOT_FOUND, "rocm: '%s' is not an AMD architecture (expected gfxNNN, e.g. gfx90a)", spec);
  char tok[16];
  if (!find_arch_token(spec, tok, sizeof tok) || strcmp(tok, spec) != 0)
    return xc_error(XC_INVALID_ARGUMENT, "rocm: '%s' is not an architecture name (e.g. gfx90a)", spec);
  return xc_rocm_arch_caps(tok, caps);
}

xc_status_t xc_rocm_select(const char* selector, xc_target_t** out_target, xc_device_caps_t* caps,
                           int* out_device_index) {
  if (out_target) *out_target = NULL;
  if (out_device_index) *out_device_index = -1;
  if (!selector || !out_target || !caps) return xc_error(XC_INVALID_ARGUMENT, "xc_rocm_select: NULL argument");
  memset(caps, 0, sizeof *caps);
  if (strncmp(selector, "rocm", 4) != 0 || (selector[4] != 0 && selector[4] != ':'))
    return xc_error(XC_INVALID_ARGUMENT, "'%s' is not a rocm selector", selector);
  xc_target_resolution_t r;
  XC_RETURN_IF_ERROR(xc_target_resolve(selector, &r));
  *out_target = r.target;
  *caps = r.caps;
  if (out_device_index) *out_device_index = r.device_index;
  return NULL;
}

/* ---- blobs ---- */

#define BLOB_MAGIC "XCROCM01"
#define BLOB_HEADER 32 /* magic, arch name (16 bytes, NUL-padded), u64 code size */

bool xc_rocm_blob_parts(const xc_blob_t* blob, char* out_arch, size_t arch_size, const uint8_t** out_code,
                        size_t* out_code_size) {
  if (!blob || !blob->bytes || blob->size < BLOB_HEADER || memcmp(blob->bytes, BLOB_MAGIC, 8) != 0) return false;
  const char* arch = (const char*)blob->bytes + 8;
  if (memchr(arch, 0, 16) == NULL || !arch_token_len(arch)) return false;
  uint64_t n;
  memcpy(&n, blob->bytes + 24, 8);
  if (n == 0 || n != blob->size - BLOB_HEADER) return false;
  if (out_arch && arch_size) snprintf(out_arch, arch_size, "%s", arch);
  if (out_code) *out_code = blob->bytes + BLOB_HEADER;
  if (out_code_size) *out_code_size = (size_t)n;
  return true;
}

/* Builds a blob around a code object (used by compile). */
xc_status_t xc_rocm_blob_make(const char* arch, const uint8_t* code, size_t size, xc_blob_t* out);
xc_status_t xc_rocm_blob_make(const char* arch, const uint8_t* code, size_t size, xc_blob_t* out) {
  if (strlen(arch) >= 16 || size == 0) return xc_error(XC_INTERNAL, "rocm: bad code object for %s", arch);
  out->bytes = calloc(1, BLOB_HEADER + size);
  if (!out->bytes) return xc_error_oom();
  out->size = BLOB_HEADER + size;
  memcpy(out->bytes, BLOB_MAGIC, 8);
  memcpy(out->bytes + 8, arch, strlen(arch));
  uint64_t n = size;
  memcpy(out->bytes + 24, &n, 8);
  memcpy(out->bytes + BLOB_HEADER, code, size);
  snprintf(out->format, sizeof out->format, "%s", XC_ROCM_BLOB_FORMAT);
  return NULL;
}

/* Offload bundle: magic (24 bytes), u64 entry count, entries of u64 offset,
 * u64 size, u64 id length, id ("hipv4-amdgcn-amd-amdhsa--gfx90a"). */
#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"

static uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

bool xc_rocm_bundle_extract(const uint8_t* bytes, size_t size, const char* arch, const uint8_t** out_code,
                            size_t* out_size) {
  if (!bytes || size < 32 || memcmp(bytes, BUNDLE_MAGIC, 24) != 0) return false;
  uint64_t count = get_u64(bytes + 24);
  size_t pos = 32, alen = strlen(arch);
  for (uint64_t i = 0; i < count && i < 1024; i++) {
    if (size - pos < 24) return false;
    uint64_t off = get_u64(bytes + pos), len = get_u64(bytes + pos + 8), idlen = get_u64(bytes + pos + 16);
    pos += 24;
    if (idlen > size - pos) return false;
    const char* id = (const char*)bytes + pos;
    pos += (size_t)idlen;
    if (off > size || len > size - off || len == 0) continue;
    /* the id ends with the target ID: "...--gfx90a" or "...--gfx90a:xnack-" */
    const char* dash = NULL;
    for (size_t k = 0; k + 2 <= idlen; k++)
      if (id[k] == '-' && id[k + 1] == '-') dash = id + k + 2;
    if (!dash || !strstr(id, "amdgcn")) continue;
    size_t rest = idlen - (size_t)(dash - id);
    if (rest >= alen && strncmp(dash, arch, alen) == 0 && (rest == alen || dash[alen] == ':')) {
      *out_code = bytes + off;
      *out_size = (size_t)len;
      return true;
    }
  }
  return false;
}
