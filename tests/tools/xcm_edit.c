/* xcm_edit: makes damaged-but-well-formed compiled modules for the tests
 * (tests/cli/test_cli_module_checks.sh): it reads a valid .xcm, changes one
 * thing in memory and writes it back with a fresh checksum, the way a
 * crafted file would look. Not installed.
 *
 *   xcm_edit values IN                          the plan's values, one a line
 *   xcm_edit dim IN OUT VALUE AXIS SIZE         a plan value's dim (static)
 *   xcm_edit graph-dim IN OUT VALUE AXIS SIZE   the same dim in the graph text too
 *   xcm_edit blob IN OUT KERNEL OFFSET          flips the bits of one blob byte
 *   xcm_edit strip-blobs IN OUT                 every blob cut to its 64-byte ELF
 *                                               header (small corpus files)
 *   xcm_edit reseal IN OUT                      any bytes: the header's payload size
 *                                               and checksum recomputed, nothing parsed
 *
 * IN is read without a signing key; OUT is signed with $XCM_EDIT_KEY when it
 * is set (a module re-signed with some other key). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/module.h"

static int die(xc_status_t s) {
  fprintf(stderr, "xcm_edit: %s\n", xc_status_message(s));
  xc_status_free(s);
  return 1;
}

static int find_value(const xc_compiled_module_t* m, const char* name) {
  for (int i = 0; i < m->num_values; i++)
    if (strcmp(m->values[i].name, name) == 0) return i;
  return -1;
}

/* Rewrites the dim list of "NAME: dtype[...]" in the graph text. */
static int patch_graph_text(xc_compiled_module_t* m, const char* name, int axis, long long size) {
  char pat[300];
  char* at = NULL;
  for (int quoted = 1; quoted >= 0 && !at; quoted--) {
    snprintf(pat, sizeof pat, quoted ? "\"%s\": " : "%s: ", name);
    for (char* p = m->graph_text; (p = strstr(p, pat)) != NULL; p++)
      if (p == m->graph_text || p[-1] == ' ' || p[-1] == '\n') {
        at = p;
        break;
      }
  }
  if (!at) return -1;
  char* open = strchr(at, '[');
  char* close = open ? strchr(open, ']') : NULL;
  if (!open || !close) return -1;
  char dims[16][64];
  int n = 0;
  for (char* p = open + 1; p < close && n < 16;) {
    char* e = p;
    while (e < close && *e != ',') e++;
    while (*p == ' ') p++;
    snprintf(dims[n++], sizeof dims[0], "%.*s", (int)(e - p), p);
    p = e + 1;
  }
  if (axis < 0 || axis >= n) return -1;
  snprintf(dims[axis], sizeof dims[0], "%lld", size);
  char repl[1200] = "[";
  for (int i = 0; i < n; i++) {
    strcat(repl, dims[i]);
    strcat(repl, i + 1 < n ? ", " : "]");
  }
  size_t head = (size_t)(open - m->graph_text), tail = strlen(close + 1);
  char* text = malloc(head + strlen(repl) + tail + 1);
  if (!text) return -1;
  memcpy(text, m->graph_text, head);
  strcpy(text + head, repl);
  strcat(text, close + 1);
  free(m->graph_text);
  m->graph_text = text;
  m->graph_text_size = strlen(text);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: xcm_edit values IN | dim|graph-dim IN OUT VALUE AXIS SIZE | blob IN OUT KERNEL OFFSET\n");
    return 2;
  }
  unsetenv("XCOMP_MODULE_KEY");
  unsetenv("XCOMP_MODULE_KEY_FILE");
  if (strcmp(argv[1], "reseal") == 0 && argc == 4) {
    uint8_t* bytes = NULL;
    size_t size = 0;
    xc_status_t s = xc_read_file_bytes(argv[2], &bytes, &size);
    if (s) return die(s);
    if (size >= 48) {
      uint64_t payload = size - 48;
      xc_hash128_t h = xc_hash128(bytes + 48, size - 48);
      for (int i = 0; i < 8; i++) {
        bytes[16 + i] = (uint8_t)(payload >> (8 * i));
        bytes[24 + i] = (uint8_t)(h.lo >> (8 * i));
        bytes[32 + i] = (uint8_t)(h.hi >> (8 * i));
      }
    }
    s = xc_write_file_atomic(argv[3], bytes, size);
    free(bytes);
    return s ? die(s) : 0;
  }
  xc_compiled_module_t* m = NULL;
  xc_status_t s = xc_compiled_module_read(argv[2], &m);
  if (s) return die(s);
  const char* key = getenv("XCM_EDIT_KEY");
  if (key && *key) setenv("XCOMP_MODULE_KEY", key, 1);
  const char* cmd = argv[1];
  int rc = 0;
  if (strcmp(cmd, "values") == 0) {
    for (int i = 0; i < m->num_values; i++) {
      const xc_cm_value_t* v = &m->values[i];
      printf("%s %s %u [", v->name, xc_dtype_name(v->dtype), v->flags);
      for (int d = 0; d < v->rank; d++) {
        char b[128];
        printf("%s%s", d ? ", " : "", xc_dim_print(v->dims[d], b, sizeof b));
      }
      printf("]\n");
    }
  } else if ((strcmp(cmd, "dim") == 0 || strcmp(cmd, "graph-dim") == 0) && argc == 7) {
    int v = find_value(m, argv[4]);
    int axis = atoi(argv[5]);
    long long size = atoll(argv[6]);
    if (v < 0 || axis < 0 || axis >= m->values[v].rank) {
      fprintf(stderr, "xcm_edit: no value '%s' with axis %d\n", argv[4], axis);
      rc = 1;
    } else {
      m->values[v].dims[axis] = xc_dim_const(size);
      if (strcmp(cmd, "graph-dim") == 0 && patch_graph_text(m, argv[4], axis, size) != 0) {
        fprintf(stderr, "xcm_edit: value '%s' not found in the graph text\n", argv[4]);
        rc = 1;
      }
      if (!rc) {
        s = xc_compiled_module_write(m, argv[3]);
        if (s) rc = die(s);
      }
    }
  } else if (strcmp(cmd, "strip-blobs") == 0 && argc == 4) {
    for (int k = 0; k < m->num_kernels; k++)
      if (m->kernels[k].blob.size > 64) m->kernels[k].blob.size = 64;
    s = xc_compiled_module_write(m, argv[3]);
    if (s) rc = die(s);
  } else if (strcmp(cmd, "blob") == 0 && argc == 6) {
    int k = atoi(argv[4]);
    long long off = atoll(argv[5]);
    if (k < 0 || k >= m->num_kernels || off < 0 || (size_t)off >= m->kernels[k].blob.size) {
      fprintf(stderr, "xcm_edit: no kernel %d with a byte %lld\n", k, off);
      rc = 1;
    } else {
      m->kernels[k].blob.bytes[off] ^= 0xFF;
      s = xc_compiled_module_write(m, argv[3]);
      if (s) rc = die(s);
    }
  } else {
    fprintf(stderr, "xcm_edit: bad command line\n");
    rc = 2;
  }
  xc_compiled_module_destroy(m);
  return rc;
}
