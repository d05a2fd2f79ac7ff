/* Device-resident runs for the CLI (`run --resident`, `bench --resident`):
 * the inputs uploaded once into device buffers, the outputs left in device
 * buffers that every run after the first writes again
 * (xc_executor_run_device). */
#include <stdlib.h>
#include <string.h>

#include "runtime_cli.h"

void xc_cli_resident_free(xc_cli_resident_t* r) {
  for (int i = 0; r->in_buffers && i < r->n_in; i++) xc_buffer_free(r->in_buffers[i]);
  for (int i = 0; r->out && i < r->n_out; i++) xc_buffer_free(r->out[i].buffer);
  free(r->in_buffers);
  free(r->in);
  free(r->out);
  memset(r, 0, sizeof *r);
}

xc_status_t xc_cli_resident_init(xc_executor_t* e, const xc_compiled_module_t* m, const xc_tensor_t* const* inputs,
                                 xc_cli_resident_t* r) {
  xc_device_t* dev = xc_executor_device(e);
  if (!xc_device_has_addresses(dev))
    return xc_error(XC_UNSUPPORTED, "--resident: %s (target %s) has no device addresses (cuda, rocm and cpu do)",
                    xc_device_caps(dev)->name, xc_target_name(xc_device_target(dev)));
  r->n_in = m->num_inputs;
  r->n_out = m->num_outputs;
  r->in_buffers = calloc((size_t)r->n_in + 1, sizeof *r->in_buffers);
  r->in = calloc((size_t)r->n_in + 1, sizeof *r->in);
  r->out = calloc((size_t)r->n_out + 1, sizeof *r->out);
  if (!r->in_buffers || !r->in || !r->out) return xc_error_oom();
  for (int i = 0; i < r->n_in; i++) {
    const xc_tensor_t* t = inputs[i];
    size_t n = xc_tensor_nbytes(t);
    XC_RETURN_IF_ERROR(xc_buffer_alloc(dev, n, &r->in_buffers[i]));
    if (n) XC_RETURN_IF_ERROR(xc_buffer_write(r->in_buffers[i], 0, t->data, n));
    r->in[i].dtype = t->dtype;
    r->in[i].rank = t->rank;
    memcpy(r->in[i].dims, t->dims, sizeof *t->dims * (size_t)t->rank);
    r->in[i].address = xc_buffer_device_address(r->in_buffers[i]);
  }
  return NULL;
}

xc_status_t xc_cli_run_once(xc_executor_t* e, const xc_compiled_module_t* m, const xc_tensor_t* const* inputs,
                            xc_tensor_t** outputs, xc_cli_resident_t* res, xc_run_stats_t* st) {
  if (!res->in) {
    /* the outputs of the run before are written again in place (no new
     * host memory, no page faults, per run) */
    bool have = m->num_outputs > 0;
    for (int k = 0; k < m->num_outputs; k++) have = have && outputs[k];
    if (have) return xc_executor_run_into(e, m->num_inputs, inputs, m->num_outputs, outputs, st);
    for (int k = 0; k < m->num_outputs; k++) {
      xc_tensor_destroy(outputs[k]);
      outputs[k] = NULL;
    }
    return xc_executor_run(e, m->num_inputs, inputs, outputs, st);
  }
  xc_buffer_t** kept = calloc((size_t)res->n_out + 1, sizeof *kept);
  if (!kept) return xc_error_oom();
  for (int k = 0; k < res->n_out; k++) kept[k] = res->out[k].buffer;
  xc_status_t s = xc_executor_run_device(e, res->n_in, res->in, res->n_out, res->out, st);
  for (int k = 0; k < res->n_out; k++)
    if (kept[k]) res->out[k].buffer = kept[k]; /* the same memory, written again */
  free(kept);
  return s;
}

xc_status_t xc_cli_resident_download(const xc_cli_resident_t* r, xc_tensor_t** outputs) {
  for (int k = 0; k < r->n_out; k++) {
    const xc_device_tensor_t* t = &r->out[k];
    XC_RETURN_IF_ERROR(xc_tensor_create(t->dtype, t->rank, t->dims, &outputs[k]));
    size_t n = xc_tensor_nbytes(outputs[k]);
    if (n) XC_RETURN_IF_ERROR(xc_buffer_read(t->buffer, 0, outputs[k]->data, n));
  }
  return NULL;
}
