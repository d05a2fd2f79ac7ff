/* `xcomp run --profile`: the per-kernel table and its JSON form, from the
 * per-step times of an executor created with options.profile and the
 * plan's value sizes of each run (docs/cli.md, "Profiles"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_cli.h"

xc_status_t xc_cli_profile_init(xc_cli_profile_t* p, const xc_compiled_module_t* m) {
  memset(p, 0, sizeof *p);
  p->m = m;
  p->kernels = calloc((size_t)m->num_kernels + 1, sizeof *p->kernels);
  return p->kernels ? NULL : xc_error_oom();
}

void xc_cli_profile_free(xc_cli_profile_t* p) {
  free(p->kernels);
  p->kernels = NULL;
}

/* Bytes a launch of step i reads and writes: the sizes of the values bound
 * to its buffer parameters (the index-error record is bookkeeping). */
static int64_t step_bytes(const xc_compiled_module_t* m, int i, const int64_t* value_bytes) {
  const xc_cm_step_t* st = &m->steps[i];
  int64_t bytes = 0;
  for (int p = 0; p < st->num_params; p++) {
    int v = st->params[p].value;
    if (v >= 0 && !(m->values[v].flags & XC_CM_VALUE_INDEX_ERROR)) bytes += value_bytes[v];
  }
  return bytes;
}

void xc_cli_profile_add(xc_cli_profile_t* p, const xc_run_stats_t* st) {
  if (st->module && st->module != p->m) {
    /* A shape bucket's module ran: its kernels are the ones timed. Every
     * run of one size runs the same module, so this happens on the first. */
    if (p->runs) return;
    xc_cli_profile_t fresh;
    if (xc_cli_profile_init(&fresh, st->module)) return;
    snprintf(fresh.device, sizeof fresh.device, "%s", p->device);
    xc_cli_profile_free(p);
    *p = fresh;
  }
  const xc_compiled_module_t* m = p->m;
  p->runs++;
  p->total_ms += st->total_ms;
  p->bind_ms += st->bind_ms;
  p->upload_ms += st->upload_ms;
  p->kernels_ms += st->kernels_ms;
  p->download_ms += st->download_ms;
  if (!st->step_ms) return;
  for (int i = 0; i < m->num_steps; i++) {
    if (m->steps[i].kind != XC_CM_STEP_KERNEL || st->step_ms[i] < 0) continue;
    xc_cli_profile_kernel_t* k = &p->kernels[m->steps[i].kernel];
    k->launches++;
    p->launches++;
    k->total_ms += st->step_ms[i];
    if (st->value_bytes) k->bytes += step_bytes(m, i, st->value_bytes);
  }
}

static const xc_cli_profile_t* sort_profile; /* qsort has no context argument */
static int by_time(const void* a, const void* b) {
  const xc_cli_profile_kernel_t* ka = &sort_profile->kernels[*(const int*)a];
  const xc_cli_profile_kernel_t* kb = &sort_profile->kernels[*(const int*)b];
  if (ka->total_ms != kb->total_ms) return ka->total_ms < kb->total_ms ? 1 : -1;
  return *(const int*)a - *(const int*)b;
}

/* Kernel indices by device time, longest first (caller frees). */
static int* sorted_kernels(const xc_cli_profile_t* p) {
  int n = p->m->num_kernels;
  int* order = malloc(((size_t)n + 1) * sizeof *order);
  if (!order) return NULL;
  for (int i = 0; i < n; i++) order[i] = i;
  sort_profile = p;
  qsort(order, (size_t)n, sizeof *order, by_time);
  return order;
}

static double gbps(int64_t bytes, double ms) { return ms > 0 ? (double)bytes / (ms * 1e6) : 0; }

void xc_cli_profile_print(const xc_cli_profile_t* p, FILE* f) {
  const xc_compiled_module_t* m = p->m;
  int* order = sorted_kernels(p);
  if (!order) return;
  double sum = 0;
  for (int i = 0; i < m->num_kernels; i++) sum += p->kernels[i].total_ms;
  fprintf(f, "profile: %d kernels, %d launches in %d run%s on %s (%s); device time per launch\n", m->num_kernels,
          p->launches, p->runs, p->runs == 1 ? "" : "s", p->device, m->target);
  fprintf(f, "  %-24s %8s %11s %10s %6s %12s %8s  %s\n", "kernel", "launches", "total ms", "mean ms", "%", "MB r+w",
          "GB/s", "computes (graph nodes)");
  for (int j = 0; j < m->num_kernels; j++) {
    int i = order[j];
    const xc_cli_profile_kernel_t* k = &p->kernels[i];
    const char* origin = m->kernels[i].tiled && m->kernels[i].tiled->origin ? m->kernels[i].tiled->origin : "?";
    int width = (int)strlen(origin) > 60 ? 57 : 60;
    fprintf(f, "  %-24s %8d %11.4f %10.4f %6.1f %12.3f %8.2f  %.*s%s\n", m->kernels[i].name, k->launches,
            k->total_ms, k->launches ? k->total_ms / k->launches : 0, sum > 0 ? 100 * k->total_ms / sum : 0,
            (double)k->bytes / 1e6, gbps(k->bytes, k->total_ms), width, origin, width == 57 ? "..." : "");
  }
  double other = p->total_ms - p->bind_ms - p->upload_ms - p->kernels_ms - p->download_ms;
  fprintf(f, "  sum of kernel times %.4f ms; kernels span %.4f ms (launch gaps and timing included)\n", sum,
          p->kernels_ms);
  fprintf(f,
          "host: total %.4f ms = binding/planning %.4f + input upload %.4f + kernels %.4f + output download "
          "%.4f + other %.4f (checks)\n",
          p->total_ms, p->bind_ms, p->upload_ms, p->kernels_ms, p->download_ms, other);
  free(order);
}

xc_status_t xc_cli_profile_write_json(const xc_cli_profile_t* p, const char* path) {
  const xc_compiled_module_t* m = p->m;
  int* order = sorted_kernels(p);
  json_t* root = json_object();
  json_t* kernels = json_array();
  if (!order || !root || !kernels) {
    free(order);
    json_decref(root);
    json_decref(kernels);
    return xc_error_oom();
  }
  json_object_set_new(root, "target", json_string(m->target));
  json_object_set_new(root, "device", json_string(p->device));
  json_object_set_new(root, "runs", json_integer(p->runs));
  json_object_set_new(root, "launches", json_integer(p->launches));
  json_object_set_new(root, "host_ms",
                      json_pack("{s:f, s:f, s:f, s:f, s:f}", "total", p->total_ms, "binding", p->bind_ms, "upload",
                                p->upload_ms, "kernels", p->kernels_ms, "download", p->download_ms));
  for (int j = 0; j < m->num_kernels; j++) {
    int i = order[j];
    const xc_cli_profile_kernel_t* k = &p->kernels[i];
    const char* origin = m->kernels[i].tiled && m->kernels[i].tiled->origin ? m->kernels[i].tiled->origin : "";
    json_array_append_new(
        kernels, json_pack("{s:s, s:i, s:f, s:f, s:I, s:f, s:s}", "name", m->kernels[i].name, "launches",
                           k->launches, "total_ms", k->total_ms, "mean_ms", k->launches ? k->total_ms / k->launches : 0.0,
                           "bytes", (json_int_t)k->bytes, "gb_per_s", gbps(k->bytes, k->total_ms), "origin", origin));
  }
  json_object_set_new(root, "kernels", kernels);
  free(order);
  int rc = json_dump_file(root, path, JSON_INDENT(2));
  json_decref(root);
  if (rc != 0) return xc_error(XC_IO, "--profile-json %s: cannot write the file", path);
  return NULL;
}
