/* SPIRV-Tools through its C API (libspirv.h): every module the emitter makes
 * is validated here before any driver sees it, and disassembled for dumps.
 * The environment is Vulkan 1.1 (SPIR-V 1.3), what the emitter targets. */
#include <stdlib.h>
#include <string.h>

#include <spirv-tools/libspirv.h>

#include "spirv_plugin.h"

#define SPV_TOOLS_ENV SPV_ENV_VULKAN_1_1

static xc_status_t diagnostic_error(spv_diagnostic d, spv_result_t r, const char* what, const char* action) {
  xc_status_t s = SPV_ERROR(XC_INTERNAL, "%s%s%s: SPIR-V %s failed: %s (spv_result %d)", what ? "kernel '" : "",
                            what ? what : "", what ? "'" : "", action,
                            d && d->error ? d->error : "no message", (int)r);
  spvDiagnosticDestroy(d);
  return s;
}

xc_status_t spv_tools_validate(const uint32_t* code, size_t num_words, const char* what) {
  spv_context ctx = spvContextCreate(SPV_TOOLS_ENV);
  spv_validator_options opt = spvValidatorOptionsCreate();
  if (!ctx || !opt) {
    spvValidatorOptionsDestroy(opt);
    spvContextDestroy(ctx);
    return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "SPIRV-Tools: out of memory");
  }
  spv_const_binary_t bin = {code, num_words};
  spv_diagnostic diag = NULL;
  spv_result_t r = spvValidateWithOptions(ctx, opt, &bin, &diag);
  spvValidatorOptionsDestroy(opt);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) return diagnostic_error(diag, r, what, "validation");
  spvDiagnosticDestroy(diag);
  return NULL;
}

xc_status_t spv_tools_disassemble(const uint32_t* code, size_t num_words, char** out_text) {
  *out_text = NULL;
  spv_context ctx = spvContextCreate(SPV_TOOLS_ENV);
  if (!ctx) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "SPIRV-Tools: out of memory");
  spv_text text = NULL;
  spv_diagnostic diag = NULL;
  spv_result_t r = spvBinaryToText(ctx, code, num_words,
                                   SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT |
                                       SPV_BINARY_TO_TEXT_OPTION_COMMENT,
                                   &text, &diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) {
    spvTextDestroy(text);
    return diagnostic_error(diag, r, NULL, "disassembly");
  }
  spvDiagnosticDestroy(diag);
  char* copy = malloc(text->length + 1);
  if (copy) {
    memcpy(copy, text->str, text->length);
    copy[text->length] = '\0';
  }
  spvTextDestroy(text);
  if (!copy) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "SPIR-V disassembly: out of memory");
  *out_text = copy;
  return NULL;
}

xc_status_t spv_tools_assemble(const char* source, uint32_t** out_code, size_t* out_num_words) {
  *out_code = NULL;
  *out_num_words = 0;
  spv_context ctx = spvContextCreate(SPV_TOOLS_ENV);
  if (!ctx) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "SPIRV-Tools: out of memory");
  spv_binary bin = NULL;
  spv_diagnostic diag = NULL;
  spv_result_t r = spvTextToBinary(ctx, source, strlen(source), &bin, &diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) {
    spvBinaryDestroy(bin);
    if (diag)
      return SPV_ERROR(XC_INVALID_ARGUMENT, "SPIR-V assembly: line %zu:%zu: %s", diag->position.line + 1,
                       diag->position.column + 1, diag->error ? diag->error : "error");
    return diagnostic_error(diag, r, NULL, "assembly");
  }
  spvDiagnosticDestroy(diag);
  uint32_t* copy = malloc(bin->wordCount * sizeof *copy);
  if (copy) memcpy(copy, bin->code, bin->wordCount * sizeof *copy);
  size_t n = bin->wordCount;
  spvBinaryDestroy(bin);
  if (!copy) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "SPIR-V assembly: out of memory");
  *out_code = copy;
  *out_num_words = n;
  return NULL;
}
