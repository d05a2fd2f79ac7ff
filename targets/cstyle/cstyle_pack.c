/* Packed dot operands in the C dialect (docs/emitter.md, "Packed operands"):
 * a dot operand loaded in a K loop whose tiles do not depend on every grid
 * axis (a GEMM's B tile is the same for every M tile of its N panel) is
 * loaded once per launch by the kernel's pack entry, one tile per (K step,
 * program ids it depends on), into a buffer the runtime passes after the
 * kernel's buffers; the programs read their tiles there in place instead of
 * each copying them from the strided input at every K step. The pack entry
 * runs the load itself (its offsets and masks, so ragged edges read as the
 * masked load does), with the program ids the tiles do not depend on at 0.
 * Only for targets that run the pack entry (options.pack_operands: cpu). */
#include "cstyle_internal.h"

/* Packing pays when programs share tiles and the operand outgrows the
 * caches (a small operand's strided copies hit L1/L2 anyway); the buffer
 * is capped. */
#define PACK_MIN_BYTES ((int64_t)128 << 10)
#define PACK_MAX_BYTES ((int64_t)1 << 30)

static bool known_scalar(em_t* e, const xc_tiled_value_t* v, int64_t* out) {
  const xc_tiled_range_t* r = v && e->ranges ? &e->ranges[v->id] : NULL;
  if (!r || !r->known || r->lo != r->hi || v->type.rank != 0) return false;
  *out = r->lo;
  return true;
}

static bool is_param(const xc_tiled_kernel_t* k, const xc_tiled_value_t* v) {
  for (int i = 0; i < k->num_params; i++)
    if (k->params[i] == v) return true;
  return false;
}

/* Whether v is index arithmetic the pack entry can recompute: constants,
 * knobs, program ids, aranges, views and elementwise ops of the kernel's
 * top level or of `loop`'s body, its counter, scalar parameters; held in no
 * array. Collects the program-id axes it reads; marks its ops in `mark`. */
static bool slice_ok(em_t* e, const xc_tiled_value_t* v, const xc_tiled_op_t* loop, const char* where,
                     char* seen, unsigned* axes, bool* mark) {
  if (!v) return true;
  if (seen[v->id]) return seen[v->id] == 1;
  seen[v->id] = 2;
  if (v == loop->body->args[0] || (!v->def && is_param(e->k, v) && v->type.kind != XC_TILED_MEMREF)) {
    seen[v->id] = 1;
    return true;
  }
  const xc_tiled_op_t* d = v->def;
  if (!d || !where[d->id]) return false;
  storage_t st = V(e, v)->st;
  if (st != ST_SCALAR && st != ST_VIRTUAL) return false;
  switch (d->opcode) {
    case XC_TOP_PROGRAM_ID: *axes |= 1u << d->axis; break;
    case XC_TOP_CONST:
    case XC_TOP_KNOB:
    case XC_TOP_NUM_PROGRAMS:
    case XC_TOP_ARANGE:
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST:
    case XC_TOP_TRANS: break;
    default:
      if (!is_elementwise(d->opcode)) return false;
  }
  for (int i = 0; i < d->num_operands; i++)
    if (!slice_ok(e, d->operands[i], loop, where, seen, axes, mark)) return false;
  if (mark) mark[d->id] = true;
  seen[v->id] = 1;
  return true;
}

/* The slice of load (offset, mask, the value of masked elements). */
static bool load_slice(em_t* e, const xc_tiled_op_t* load, const xc_tiled_op_t* loop, const char* where,
                       unsigned* axes, bool* mark) {
  char* seen = calloc((size_t)e->k->num_values + 1, 1);
  if (!seen) return false;
  bool ok = true;
  for (int i = 1; i < load->num_operands && ok; i++) ok = slice_ok(e, load->operands[i], loop, where, seen, axes, mark);
  free(seen);
  return ok;
}

static bool in_block(const xc_tiled_block_t* b, const xc_tiled_op_t* op) {
  for (int i = 0; i < b->num_ops; i++)
    if (b->ops[i] == op) return true;
  return false;
}

/* Plans the packed operands of the K loops at the top level of the kernel
 * (after xc_cse_plan_fusion: a packed load leaves its fused loop). */
void xc_cse_plan_pack(em_t* e, const xc_tiled_block_t* b) {
  const xc_tiled_kernel_t* k = e->k;
  if (!e->pack_allowed || e->d->work_groups || !e->nuses || !e->ranges || !e->op_group || b != k->body) return;
  int64_t grid[XC_TILED_MAX_GRID];
  if (!xc_tiled_static_grid(k, e->knobs, NULL, grid)) return; /* symbolic size: no constant buffer size */
  char* where = calloc((size_t)k->num_ops + 1, 1);
  if (!where) return;
  for (int i = 0; i < b->num_ops; i++) where[b->ops[i]->id] = 1;
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* loop = b->ops[i];
    int64_t lb, ub, step;
    if (loop->opcode != XC_TOP_FOR || !known_scalar(e, loop->operands[0], &lb) ||
        !known_scalar(e, loop->operands[1], &ub) || !known_scalar(e, loop->operands[2], &step) || step <= 0 ||
        ub <= lb)
      continue;
    const xc_tiled_block_t* body = loop->body;
    for (int j = 0; j < body->num_ops; j++) where[body->ops[j]->id] = 2;
    for (int j = 0; j < body->num_ops; j++) {
      const xc_tiled_op_t* dot = body->ops[j];
      if (dot->opcode != XC_TOP_DOT) continue;
      for (int o = 0; o < 2 && e->num_packs < MAX_PACKED; o++) {
        const xc_tiled_value_t* v = dot->operands[o];
        const xc_tiled_op_t* load = v->def;
        vinfo_t* x = V(e, v);
        if (!load || load->opcode != XC_TOP_LOAD || !in_block(body, load) || x->st != ST_ARRAY || x->rank != 2 ||
            x->raw || x->packed || e->nuses[v->id] != 1)
          continue;
        const xc_tiled_value_t* mem = load->operands[0];
        if (!is_param(k, mem) || mem->type.role != XC_ROLE_IN) continue; /* nothing the launch writes */
        unsigned axes = 0;
        if (!load_slice(e, load, loop, where, &axes, NULL)) continue;
        int64_t programs = 1, reuse = 1;
        for (int a = 0; a < XC_TILED_MAX_GRID; a++) {
          if (axes & (1u << a)) programs *= grid[a];
          else reuse *= grid[a];
        }
        int64_t steps = (ub - lb + step - 1) / step;
        int64_t tile = (x->n * array_elem_bytes(e, v->type.dtype) + 63) / 64 * 64;
        if (reuse < 2 || programs > PACK_MAX_BYTES / tile / steps) continue;
        int64_t bytes = programs * steps * tile;
        if (bytes < PACK_MIN_BYTES || e->pack_bytes + bytes > PACK_MAX_BYTES) continue;
        packed_t* p = &e->packs[e->num_packs++];
        *p = (packed_t){.load = load,
                        .loop = loop,
                        .axes = axes,
                        .programs = programs,
                        .first = e->pack_programs,
                        .lb = lb,
                        .step = step,
                        .steps = steps,
                        .tile_bytes = tile,
                        .offset = e->pack_bytes};
        /* the blocked dot's order: its strips of b and panels of a rows are
         * then contiguous (streamed, not 64 rows apart) */
        if (xc_cse_dot_blocked_fits(e, dot)) {
          int mr, nv;
          int64_t lanes;
          xc_cse_dot_blocking(e, dot, &mr, &nv, &lanes);
          const char* ct = vtype(e, dot->results[0]->type.dtype);
          if (o == 1 && !strcmp(vtype(e, v->type.dtype), ct)) p->strip = true, p->nr = nv * lanes;
          if (o == 0) p->panel = true, p->mr = mr;
        }
        e->pack_programs += programs;
        e->pack_bytes += bytes;
        x->packed = true;
        /* read in place: the load leaves its fused loop (nothing else reads it) */
        e->op_group[load->id] = 0;
        if (e->op_member) e->op_member[load->id] = false;
      }
    }
    for (int j = 0; j < body->num_ops; j++) where[body->ops[j]->id] = 0;
  }
  free(where);
}

const packed_t* xc_cse_find_pack(em_t* e, const xc_tiled_op_t* load) {
  for (int i = 0; load && i < e->num_packs; i++)
    if (e->packs[i].load == load) return &e->packs[i];
  return NULL;
}

/* `T* const name = xc_pack + <the tile of these program ids and K step>` */
static void tile_pointer(em_t* e, const packed_t* p, bool writable) {
  const xc_tiled_value_t* v = p->load->results[0];
  const char* t = vtype(e, v->type.dtype);
  const char* iv = V(e, p->loop->body->args[0])->name;
  xc_cstyle_writer_t lin = {0};
  int64_t stride = 1;
  int64_t grid[XC_TILED_MAX_GRID];
  (void)xc_tiled_static_grid(e->k, e->knobs, NULL, grid); /* static: xc_cse_plan_pack checked */
  P(&lin, "0");
  for (int a = 0; a < XC_TILED_MAX_GRID; a++) {
    if (!(p->axes & (1u << a))) continue;
    P(&lin, " + %s * %" PRId64, e->d->program_id[a], stride);
    stride *= grid[a];
  }
  L("%s%s* const %s = (%s%s*)(xc_pack + %" PRId64 " + ((%s) * %" PRId64 " + (%s - %" PRId64 ") / %" PRId64
    ") * %" PRId64 ");\n",
    writable ? "" : "const ", t, V(e, v)->name, writable ? "" : "const ", t, p->offset, wstr(&lin), p->steps, iv,
    p->lb, p->step, p->tile_bytes);
  if (lin.oom) fail(e, xc_error_oom());
  free(lin.data);
}

/* In a program: the packed tile of this K step instead of the load. */
bool xc_cse_emit_packed_ref(em_t* e, const xc_tiled_op_t* load) {
  const packed_t* p = e->packing ? NULL : xc_cse_find_pack(e, load);
  if (!p) return false;
  tile_pointer(e, p, false);
  return true;
}

/* The load into a tile of the pack buffer in the layout the dot reads:
 * the load's own loop when row-major; else loops in the order of the
 * destination's strips (contiguous stores) or over the rows of the panels,
 * with the load's offset and mask at each element's coordinates. */
static void emit_pack_load(em_t* e, const packed_t* p) {
  const xc_tiled_op_t* op = p->load;
  if (!p->strip && !p->panel) {
    xc_cse_emit_op(e, op);
    return;
  }
  vinfo_t* r = V(e, op->results[0]);
  int64_t rows = r->dims[0], cols = r->dims[1];
  xc_cstyle_writer_t x = {0};
  xc_cse_load_expr(e, &x, op, r);
  const char* simd = e->d->simd_pragma;
  if (p->strip) {
    L("for (int64_t xs = 0; xs < %" PRId64 "; xs += %" PRId64 ") {\n", cols, p->nr);
    e->depth++;
    L("for (int64_t i0 = 0; i0 < %" PRId64 "; i0++) {\n", rows);
    e->depth++;
    if (simd) L("%s\n", simd);
    L("for (int64_t xc = 0; xc < %" PRId64 "; xc++) {\n", p->nr);
    e->depth++;
    L("const int64_t i1 = xs + xc;\n");
    L("%s[xs * %" PRId64 " + i0 * %" PRId64 " + xc] = %s;\n", r->name, rows, p->nr, wstr(&x));
    xc_cse_loop_close(e, 3);
  } else {
    int64_t full = rows - rows % p->mr;
    L("for (int64_t i0 = 0; i0 < %" PRId64 "; i0++) {\n", rows);
    e->depth++;
    L("const int64_t xb = i0 < %" PRId64 " ? i0 - i0 %% %d : %" PRId64 ", xh = i0 < %" PRId64 " ? %d : %" PRId64
      ";\n",
      full, p->mr, full, full, p->mr, rows - full);
    if (simd) L("%s\n", simd);
    L("for (int64_t i1 = 0; i1 < %" PRId64 "; i1++) %s[xb * %" PRId64 " + i1 * xh + (i0 - xb)] = %s;\n", cols,
      r->name, cols, wstr(&x));
    xc_cse_loop_close(e, 1);
  }
  if (x.oom) fail(e, xc_error_oom());
  free(x.data);
}

/* The body of the pack entry, run for pack program `p`: each packed
 * operand's programs decode the program ids its tiles depend on (the others
 * are 0), recompute the index values the load reads and run the load into
 * the buffer at every K step. */
void xc_cse_emit_pack_body(em_t* e, xc_cstyle_writer_t* out) {
  const xc_tiled_kernel_t* k = e->k;
  bool* mark = calloc((size_t)k->num_ops + 1, sizeof *mark);
  char* where = calloc((size_t)k->num_ops + 1, 1);
  if (!mark || !where) {
    free(mark), free(where);
    fail(e, xc_error_oom());
    return;
  }
  xc_cstyle_writer_t saved = e->body;
  int saved_depth = e->depth;
  memset(&e->body, 0, sizeof e->body);
  e->packing = true;
  e->depth = 1;
  int64_t grid[XC_TILED_MAX_GRID];
  (void)xc_tiled_static_grid(k, e->knobs, NULL, grid); /* static: xc_cse_plan_pack checked */
  for (int i = 0; i < k->body->num_ops; i++) where[k->body->ops[i]->id] = 1;
  for (int n = 0; n < e->num_packs && !e->err; n++) {
    const packed_t* p = &e->packs[n];
    const xc_tiled_block_t* body = p->loop->body;
    memset(mark, 0, (size_t)k->num_ops + 1);
    for (int j = 0; j < body->num_ops; j++) where[body->ops[j]->id] = 2;
    unsigned axes = 0;
    if (!load_slice(e, p->load, p->loop, where, &axes, mark)) {
      fail(e, xc_error(XC_INTERNAL, "cstyle: packed operand of kernel '%s' lost its slice", k->name));
      break;
    }
    for (int j = 0; j < body->num_ops; j++) where[body->ops[j]->id] = 0;
    L("if (p >= %" PRId64 " && p < %" PRId64 ") { /* the tiles of %s */\n", p->first, p->first + p->programs,
      V(e, p->load->results[0])->name);
    e->depth++;
    L("int64_t xr = p - %" PRId64 ";\n", p->first);
    for (int a = 0; a < XC_TILED_MAX_GRID; a++) {
      if (p->axes & (1u << a)) {
        L("const int64_t %s = xr %% %" PRId64 ";\n", e->d->program_id[a], grid[a]);
        L("xr /= %" PRId64 ";\n", grid[a]);
      } else {
        L("const int64_t %s = 0;\n", e->d->program_id[a]);
      }
    }
    L("(void)xr, (void)%s, (void)%s, (void)%s;\n", e->d->program_id[0], e->d->program_id[1], e->d->program_id[2]);
    for (int j = 0; j < k->body->num_ops; j++)
      if (mark[k->body->ops[j]->id]) xc_cse_emit_op(e, k->body->ops[j]);
    const char* iv = V(e, body->args[0])->name;
    L("for (int64_t %s = %" PRId64 "; %s < %" PRId64 "; %s += %" PRId64 ") {\n", iv, p->lb, iv,
      p->lb + p->steps * p->step, iv, p->step);
    e->depth++;
    for (int j = 0; j < body->num_ops; j++)
      if (mark[body->ops[j]->id]) xc_cse_emit_op(e, body->ops[j]);
    tile_pointer(e, p, true);
    emit_pack_load(e, p);
    xc_cse_loop_close(e, 2);
  }
  *out = e->body;
  e->body = saved;
  e->depth = saved_depth;
  e->packing = false;
  free(mark), free(where);
}
