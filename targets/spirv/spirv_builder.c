/* SPIR-V words: see spirv_builder.h. Types and constants are looked up by
 * their instruction words (opcode and operands without the result id), so
 * asking twice for `OpTypeInt 32 1` or the constant 7 gives one id. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "spirv_builder.h"

#define SPV_MAX_OPERANDS 64

static bool words_reserve(spv_builder_t* b, spv_words_t* w, size_t extra) {
  if (b->oom) return false;
  if (w->n + extra <= w->cap) return true;
  size_t cap = w->cap ? w->cap * 2 : 256;
  while (cap < w->n + extra) cap *= 2;
  uint32_t* n = realloc(w->w, cap * sizeof *n);
  if (!n) {
    b->oom = true;
    return false;
  }
  w->w = n;
  w->cap = cap;
  return true;
}

static void words_push(spv_builder_t* b, spv_words_t* w, const uint32_t* src, size_t n) {
  if (n == 0 || !words_reserve(b, w, n)) return;
  memcpy(w->w + w->n, src, n * sizeof *src);
  w->n += n;
}

void spv_builder_init(spv_builder_t* b) {
  memset(b, 0, sizeof *b);
  b->bound = 1;
}

void spv_builder_free(spv_builder_t* b) {
  for (int i = 0; i < SPV_SEC_COUNT; i++) free(b->sec[i].w);
  free(b->keys.w);
  free(b->dedup);
  memset(b, 0, sizeof *b);
}

uint32_t spv_id(spv_builder_t* b) { return b->bound++; }

void spv_inst(spv_builder_t* b, spv_section_t s, SpvOp op, int n, const uint32_t* operands) {
  uint32_t head = ((uint32_t)(n + 1) << 16) | (uint32_t)op;
  words_push(b, &b->sec[s], &head, 1);
  words_push(b, &b->sec[s], operands, (size_t)n);
}

static int collect(uint32_t* out, int n, va_list ap) {
  if (n > SPV_MAX_OPERANDS) n = SPV_MAX_OPERANDS;
  for (int i = 0; i < n; i++) out[i] = va_arg(ap, uint32_t);
  return n;
}

void spv_op(spv_builder_t* b, spv_section_t s, SpvOp op, int n, ...) {
  uint32_t ops[SPV_MAX_OPERANDS];
  va_list ap;
  va_start(ap, n);
  n = collect(ops, n, ap);
  va_end(ap);
  spv_inst(b, s, op, n, ops);
}

uint32_t spv_val(spv_builder_t* b, SpvOp op, uint32_t type, int n, ...) {
  uint32_t ops[SPV_MAX_OPERANDS + 2];
  ops[0] = type;
  ops[1] = spv_id(b);
  va_list ap;
  va_start(ap, n);
  n = collect(ops + 2, n, ap);
  va_end(ap);
  spv_inst(b, SPV_SEC_CODE, op, n + 2, ops);
  return ops[1];
}

/* Finds or makes the global `op [prefix] id operands`: prefix_n words come
 * before the id (a constant's type), the rest after. */
static uint32_t dedup_global(spv_builder_t* b, SpvOp op, int prefix_n, int n, const uint32_t* ops) {
  uint32_t key[SPV_MAX_OPERANDS + 2];
  key[0] = (uint32_t)op;
  memcpy(key + 1, ops, (size_t)n * sizeof *ops);
  size_t len = (size_t)n + 1;
  for (size_t i = 0; i < b->num_dedup; i++) {
    const spv_dedup_entry_t* e = &b->dedup[i];
    if (e->len == len && memcmp(b->keys.w + e->at, key, len * sizeof *key) == 0) return e->id;
  }
  if (b->oom) return 0;
  if (b->num_dedup == b->cap_dedup) {
    size_t cap = b->cap_dedup ? b->cap_dedup * 2 : 64;
    spv_dedup_entry_t* d = realloc(b->dedup, cap * sizeof *d);
    if (!d) {
      b->oom = true;
      return 0;
    }
    b->dedup = d;
    b->cap_dedup = cap;
  }
  uint32_t id = spv_id(b);
  spv_dedup_entry_t* e = &b->dedup[b->num_dedup++];
  e->at = b->keys.n;
  e->len = len;
  e->id = id;
  words_push(b, &b->keys, key, len);
  uint32_t inst[SPV_MAX_OPERANDS + 2];
  if (prefix_n > 0) memcpy(inst, ops, (size_t)prefix_n * sizeof *ops);
  inst[prefix_n] = id;
  memcpy(inst + prefix_n + 1, ops + prefix_n, (size_t)(n - prefix_n) * sizeof *ops);
  spv_inst(b, SPV_SEC_GLOBALS, op, n + 1, inst);
  return id;
}

uint32_t spv_type(spv_builder_t* b, SpvOp op, int n, ...) {
  uint32_t ops[SPV_MAX_OPERANDS];
  va_list ap;
  va_start(ap, n);
  n = collect(ops, n, ap);
  va_end(ap);
  return dedup_global(b, op, 0, n, ops);
}

uint32_t spv_const(spv_builder_t* b, uint32_t type, int nwords, uint32_t lo, uint32_t hi) {
  uint32_t ops[3] = {type, lo, hi};
  return dedup_global(b, SpvOpConstant, 1, 1 + nwords, ops);
}

uint32_t spv_const_bool(spv_builder_t* b, bool v) {
  uint32_t tb = spv_type(b, SpvOpTypeBool, 0);
  return dedup_global(b, v ? SpvOpConstantTrue : SpvOpConstantFalse, 1, 1, &tb);
}

void spv_capability(spv_builder_t* b, SpvCapability c) {
  for (int i = 0; i < b->num_caps; i++)
    if (b->caps_seen[i] == (uint32_t)c) return;
  if (b->num_caps < 16) b->caps_seen[b->num_caps++] = (uint32_t)c;
  spv_op(b, SPV_SEC_CAPS, SpvOpCapability, 1, (uint32_t)c);
}

void spv_inst_str(spv_builder_t* b, spv_section_t s, SpvOp op, int n, const uint32_t* before, const char* str,
                  int n_after, const uint32_t* after) {
  size_t len = strlen(str);
  if (len > 1000) len = 1000;
  size_t sw = len / 4 + 1;
  uint32_t ops[SPV_MAX_OPERANDS + 260];
  memset(ops, 0, sizeof ops);
  if (n > 0) memcpy(ops, before, (size_t)n * sizeof *ops);
  memcpy((char*)(ops + n), str, len);
  if (n_after > 0) memcpy(ops + n + sw, after, (size_t)n_after * sizeof *ops);
  spv_inst(b, s, op, n + (int)sw + n_after, ops);
}

void spv_extension(spv_builder_t* b, const char* name) {
  /* Extensions are few: a linear scan of the section's strings is enough. */
  spv_words_t* w = &b->sec[SPV_SEC_EXTS];
  for (size_t i = 0; i < w->n;) {
    uint32_t count = w->w[i] >> 16;
    if (count == 0) break;
    if (strcmp((const char*)(w->w + i + 1), name) == 0) return;
    i += count;
  }
  spv_inst_str(b, SPV_SEC_EXTS, SpvOpExtension, 0, NULL, name, 0, NULL);
}

void spv_name(spv_builder_t* b, uint32_t id, const char* name) {
  spv_inst_str(b, SPV_SEC_DEBUG, SpvOpName, 1, &id, name, 0, NULL);
}

void spv_decorate(spv_builder_t* b, uint32_t id, SpvDecoration d, int n, ...) {
  uint32_t ops[SPV_MAX_OPERANDS + 2] = {id, (uint32_t)d};
  va_list ap;
  va_start(ap, n);
  n = collect(ops + 2, n, ap);
  va_end(ap);
  spv_inst(b, SPV_SEC_ANNOT, SpvOpDecorate, n + 2, ops);
}

void spv_member_decorate(spv_builder_t* b, uint32_t type, uint32_t member, SpvDecoration d, int n, ...) {
  uint32_t ops[SPV_MAX_OPERANDS + 3] = {type, member, (uint32_t)d};
  va_list ap;
  va_start(ap, n);
  n = collect(ops + 3, n, ap);
  va_end(ap);
  spv_inst(b, SPV_SEC_ANNOT, SpvOpMemberDecorate, n + 3, ops);
}

uint32_t* spv_builder_finish(spv_builder_t* b, size_t* out_num_words) {
  *out_num_words = 0;
  if (b->oom) return NULL;
  size_t total = 5;
  for (int i = 0; i < SPV_SEC_COUNT; i++) total += b->sec[i].n;
  uint32_t* w = malloc(total * sizeof *w);
  if (!w) return NULL;
  w[0] = SpvMagicNumber;
  w[1] = 0x00010300; /* SPIR-V 1.3: Vulkan 1.1 */
  w[2] = 0;          /* generator: unregistered */
  w[3] = b->bound;
  w[4] = 0;
  size_t at = 5;
  for (int i = 0; i < SPV_SEC_COUNT; i++) {
    if (b->sec[i].n) memcpy(w + at, b->sec[i].w, b->sec[i].n * sizeof *w);
    at += b->sec[i].n;
  }
  *out_num_words = total;
  return w;
}
