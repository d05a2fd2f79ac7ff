/* The bad-input corpus: every file listed in tests/bad-input/EXPECTED must
 * fail to load with an error containing the listed substring (and must not
 * crash). Also checks every corpus file is listed. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "xcomp/onnx.h"
#include "xcomp/tensor_io.h"

#define CORPUS "tests/bad-input"

static xc_status_t load(const char* path, const char* mode) {
  if (strcmp(mode, "tensor") == 0) {
    xc_tensor_t* t = NULL;
    char* name = NULL;
    xc_status_t s = xc_tensor_read_file(path, &t, &name);
    xc_tensor_destroy(t);
    free(name);
    return s;
  }
  xc_onnx_import_options_t o = {strcmp(mode, "lenient") == 0, 0};
  xc_graph_t* g = NULL;
  xc_status_t s = xc_onnx_import_file_ex(path, &o, &g);
  xc_graph_destroy(g);
  return s;
}

int main(void) {
  FILE* f = fopen(CORPUS "/EXPECTED", "r");
  if (!f) {
    fprintf(stderr, "cannot open " CORPUS "/EXPECTED (run from the repository root)\n");
    return 1;
  }
  char line[1024];
  char listed[512][128];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#') continue;
    char* file = strtok(line, "\t");
    char* mode = strtok(NULL, "\t");
    char* expect = strtok(NULL, "");
    if (!file || !mode || !expect) {
      fprintf(stderr, "malformed EXPECTED line: %s\n", line);
      xc_test_failures++;
      continue;
    }
    if (n < 512) snprintf(listed[n++], sizeof listed[0], "%s", file);
    char path[512];
    snprintf(path, sizeof path, CORPUS "/%s", file);
    xc_status_t s = load(path, mode);
    xc_test_checks++;
    if (!s) {
      xc_test_failures++;
      fprintf(stderr, "%s: loaded without error\n", file);
    } else if (!strstr(xc_status_message(s), expect)) {
      xc_test_failures++;
      fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", file, xc_status_message(s), expect);
    }
    /* Tensor-file errors must name the file. */
    if (s && strcmp(mode, "tensor") == 0) CHECK(strstr(xc_status_message(s), file) != NULL);
    xc_status_free(s);
  }
  fclose(f);
  DIR* d = opendir(CORPUS);
  struct dirent* e;
  while (d && (e = readdir(d))) {
    const char* nm = e->d_name;
    size_t len = strlen(nm);
    bool data = (len > 5 && strcmp(nm + len - 5, ".onnx") == 0) ||
                (len > 4 && strcmp(nm + len - 4, ".npy") == 0) ||
                (len > 3 && strcmp(nm + len - 3, ".pb") == 0);
    if (!data) continue;
    bool found = false;
    for (int i = 0; i < n && !found; i++) found = strcmp(listed[i], nm) == 0;
    if (!found) fprintf(stderr, "%s is not listed in EXPECTED\n", nm);
    CHECK(found);
  }
  if (d) closedir(d);
  CHECK(n >= 60);
  return xc_test_summary("test_bad_input_files");
}
