/* The tiled-IR bad-input corpus (tests/bad-input/tiled, fuzzer finds of
 * tests/fuzz/fuzz_tiled.c among them): xc_tiled_parse refuses every file
 * listed in EXPECTED with an error holding the listed substring, and every
 * .tiled file in the folder is listed. Runs under the sanitizers in the
 * sanitizer build (the crashes these files once caused were UBSan reports). */
#include <dirent.h>

#include "test.h"
#include "xcomp/module.h"
#include "xcomp/tiled.h"

#define CORPUS "tests/bad-input/tiled"

int main(void) {
  FILE* f = fopen(CORPUS "/EXPECTED", "r");
  CHECK(f != NULL);
  if (!f) return xc_test_summary("test_bad_tiled_files");
  char line[200], listed[64][256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    line[strcspn(line, "\n")] = '\0';
    char* tab = strchr(line, '\t');
    CHECK(tab != NULL);
    if (!tab) continue;
    *tab = '\0';
    char path[300];
    snprintf(path, sizeof path, CORPUS "/%s", line);
    uint8_t* bytes = NULL;
    size_t size = 0;
    CHECK_OK(xc_read_file_bytes(path, &bytes, &size));
    if (!bytes) continue;
    xc_tiled_kernel_t* k = NULL;
    CHECK_ERR(xc_tiled_parse((const char*)bytes, size, line, &k), tab + 1);
    CHECK(k == NULL);
    xc_tiled_kernel_destroy(k);
    free(bytes);
    if (n < 64) snprintf(listed[n++], sizeof listed[0], "%s", line);
  }
  fclose(f);
  CHECK(n >= 2);
  DIR* d = opendir(CORPUS);
  CHECK(d != NULL);
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 6, ".tiled") != 0) continue;
    bool found = false;
    for (int i = 0; i < n; i++) found |= strcmp(listed[i], e->d_name) == 0;
    if (!found) fprintf(stderr, "%s is not listed in EXPECTED\n", e->d_name);
    CHECK(found);
  }
  if (d) closedir(d);
  return xc_test_summary("test_bad_tiled_files");
}
