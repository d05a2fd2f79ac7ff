/* A SPIR-V module under construction: result ids allocated once, types and
 * constants deduplicated, instructions collected per logical-layout section
 * (capabilities, extensions, imports, memory model and entry points, debug
 * names, decorations, types/constants/globals, functions) and joined in that
 * order by spv_builder_finish. Out of memory is sticky: every call after a
 * failed allocation does nothing and finish reports it. */
#ifndef XCOMP_TARGETS_SPIRV_BUILDER_H
#define XCOMP_TARGETS_SPIRV_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spirv/unified1/spirv.h>

typedef struct spv_words {
  uint32_t* w;
  size_t n, cap;
} spv_words_t;

typedef struct spv_dedup_entry {
  size_t at, len; /* key words in the builder's key store */
  uint32_t id;
} spv_dedup_entry_t;

typedef enum spv_section {
  SPV_SEC_CAPS,
  SPV_SEC_EXTS,
  SPV_SEC_IMPORTS,
  SPV_SEC_MODEL,   /* memory model, entry points, execution modes */
  SPV_SEC_DEBUG,   /* OpString, OpSource, OpName */
  SPV_SEC_ANNOT,   /* decorations */
  SPV_SEC_GLOBALS, /* types, constants, global variables */
  SPV_SEC_FVARS,   /* the function's OpVariables (first block) */
  SPV_SEC_CODE,    /* function bodies */
  SPV_SEC_COUNT
} spv_section_t;

typedef struct spv_builder {
  uint32_t bound; /* next id */
  spv_words_t sec[SPV_SEC_COUNT];
  spv_words_t keys;
  spv_dedup_entry_t* dedup;
  size_t num_dedup, cap_dedup;
  uint32_t caps_seen[16];
  int num_caps;
  bool oom;
} spv_builder_t;

void spv_builder_init(spv_builder_t* b);
void spv_builder_free(spv_builder_t* b);
uint32_t spv_id(spv_builder_t* b);

/* One instruction of n operand words into a section. */
void spv_inst(spv_builder_t* b, spv_section_t s, SpvOp op, int n, const uint32_t* operands);
/* The same with the operands as arguments (each an uint32_t). */
void spv_op(spv_builder_t* b, spv_section_t s, SpvOp op, int n, ...);
/* A code instruction with a result: emits `op type id operands...` and
 * returns the new id. */
uint32_t spv_val(spv_builder_t* b, SpvOp op, uint32_t type, int n, ...);
/* A deduplicated type (`op id operands...` in the globals section). */
uint32_t spv_type(spv_builder_t* b, SpvOp op, int n, ...);
/* A deduplicated constant of `type` with 1 or 2 value words. */
uint32_t spv_const(spv_builder_t* b, uint32_t type, int nwords, uint32_t lo, uint32_t hi);
uint32_t spv_const_bool(spv_builder_t* b, bool v);

void spv_capability(spv_builder_t* b, SpvCapability c);
void spv_extension(spv_builder_t* b, const char* name);
/* An instruction whose last operand is a literal string. */
void spv_inst_str(spv_builder_t* b, spv_section_t s, SpvOp op, int n, const uint32_t* before, const char* str,
                  int n_after, const uint32_t* after);
void spv_name(spv_builder_t* b, uint32_t id, const char* name);
void spv_decorate(spv_builder_t* b, uint32_t id, SpvDecoration d, int n, ...);
void spv_member_decorate(spv_builder_t* b, uint32_t type, uint32_t member, SpvDecoration d, int n, ...);

/* The module's words (header + sections, malloc'd; NULL when out of memory). */
uint32_t* spv_builder_finish(spv_builder_t* b, size_t* out_num_words);

#endif
