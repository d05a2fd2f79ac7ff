/* Dots in the C-family emitter (docs/emitter.md): plain and register-
 * blocked dot loops, and dots on the dialect's matrix instructions: the
 * choice of the dot that takes them (plan_mma) and of the dots taken with
 * staged operands (plan_staged), raw operand loads into pitched shared
 * arrays, staged operands, and the software-pipelined K loop. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstyle_internal.h"

static void emit_dot_block(em_t* e, const xc_tiled_op_t* op, int mr, int nv, int64_t lanes, const char* bname,
                           const hoist_t* h) {
  const xc_tiled_value_t* a = op->operands[0], *acc = op->operands[2];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res), *ci = V(e, acc);
  xc_dtype_t ct = res->type.dtype;
  int64_t N = r->dims[1], K = V(e, a)->dims[1], nr = nv * lanes;
  const char* t = vtype(e, ct);
  const char* it = itype(e);
  for (int m = 0; m < mr; m++) {
    indent(e);
    P(&e->body, "xc_vec");
    for (int v = 0; v < nv; v++) P(&e->body, "%s c%d_%d", v ? "," : "", m, v);
    P(&e->body, ";\n");
  }
  /* accumulator in: 0 on the first step of a zero-initialized K loop
   * (xc_cse_plan_zero_entry), else loaded; a hoisted dot starts at 0 */
  bool acc_direct = ci->st == ST_ARRAY && same_shape(ci, r) && !strcmp(vtype(e, acc->type.dtype), t);
  if (h) {
    for (int m = 0; m < mr; m++)
      for (int v = 0; v < nv; v++) L("c%d_%d = (xc_vec){0};\n", m, v);
  } else if (r->zero_when[0]) {
    indent(e);
    P(&e->body, "if (");
    for (int z = 0; z < 2 && r->zero_when[z]; z++)
      P(&e->body, "%s%s == %" PRId64, z ? " && " : "", V(e, r->zero_when[z]->body->args[0])->name,
        r->zero_when[z]->operands[0]->def->i);
    P(&e->body, ") {\n");
    e->depth++;
    for (int m = 0; m < mr; m++)
      for (int v = 0; v < nv; v++) L("c%d_%d = (xc_vec){0};\n", m, v);
    e->depth--;
    L("} else {\n");
    e->depth++;
  }
  if (!acc_direct && !h) L("%s xc_ct[%" PRId64 "];\n", t, nr);
  for (int m = 0; m < mr && !h; m++) {
    if (acc_direct) {
      for (int v = 0; v < nv; v++)
        L("memcpy(&c%d_%d, &%s[(i0 + %d) * %" PRId64 " + i1 + %" PRId64 "], sizeof(xc_vec));\n", m, v, ci->name, m,
          N, v * lanes);
      continue;
    }
    char c0[32];
    snprintf(c0, sizeof c0, "(i0 + %d)", m);
    const char* cc[2] = {c0, "(i1 + j)"};
    xc_cstyle_writer_t rc = {0};
    xc_cse_read_at(e, &rc, acc, cc, false);
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s j = 0; j < %" PRId64 "; j++) xc_ct[j] = (%s)(%s);\n", it, nr, t, wstr(&rc));
    for (int v = 0; v < nv; v++) L("memcpy(&c%d_%d, xc_ct + %" PRId64 ", sizeof(xc_vec));\n", m, v, v * lanes);
    if (rc.oom) fail(e, xc_error_oom());
    free(rc.data);
  }
  if (r->zero_when[0] && !h) xc_cse_loop_close(e, 1);
  /* a read in place: the block's row pointers (xc_cse_plan_row_ptrs) */
  bool aptr = V(e, a)->row_ptrs_set;
  for (int m = 0; aptr && !h && m < mr; m++) L("const %s* xr%d = xa%s[i0 + %d];\n", t, m, V(e, a)->name, m);
  /* hoisted: the K loop of every step's slice in turn, its rows (in
   * place or the slice's copies) and b's rows */
  const vinfo_t* ai = V(e, a), *bi = V(e, op->operands[1]);
  bool bptr = bi->row_ptrs_set;
  if (h) {
    L("for (%s xo = 0; xo < %" PRId64 "; xo++) {\n", it, h->steps);
    e->depth++;
    for (int m = 0; m < mr; m++) {
      if (aptr) L("const %s* xr%d = xhb_xa%s[xo * %" PRId64 " + i0 + %d];\n", t, m, ai->name, ai->dims[0], m);
      else L("const %s* xr%d = xhb_%s + xo * %" PRId64 " + (i0 + %d) * %" PRId64 ";\n", t, m, ai->name, ai->n, m, K);
    }
    if (bptr) L("const %s* const* xb = xhb_xa%s + xo * %" PRId64 ";\n", t, bi->name, bi->dims[0]);
    else L("const %s* xb = xhb_%s + xo * %" PRId64 ";\n", t, bi->name, bi->n);
    aptr = true;
  }
  /* the K loop */
  L("for (%s q = 0; q < %" PRId64 "; q++) {\n", it, K);
  e->depth++;
  indent(e);
  P(&e->body, "xc_vec");
  for (int v = 0; v < nv; v++) P(&e->body, "%s b%d", v ? "," : "", v);
  P(&e->body, ";\n");
  /* packed operands (cstyle_pack.c): b in strips of nr columns, a in
   * panels of the block's rows */
  const packed_t* pa = xc_cse_find_pack(e, a->def), *pb = xc_cse_find_pack(e, op->operands[1]->def);
  for (int v = 0; v < nv; v++) {
    if (h && bptr)
      L("memcpy(&b%d, &xb[q][i1 + %" PRId64 "], sizeof(xc_vec));\n", v, v * lanes);
    else if (h)
      L("memcpy(&b%d, &xb[q * %" PRId64 " + i1 + %" PRId64 "], sizeof(xc_vec));\n", v, N, v * lanes);
    else if (bptr)
      L("memcpy(&b%d, &xa%s[q][i1 + %" PRId64 "], sizeof(xc_vec));\n", v, V(e, op->operands[1])->name, v * lanes);
    else if (pb && pb->strip)
      L("memcpy(&b%d, &%s[i1 * %" PRId64 " + q * %" PRId64 " + %" PRId64 "], sizeof(xc_vec));\n", v, bname, K, nr,
        v * lanes);
    else
      L("memcpy(&b%d, &%s[q * %" PRId64 " + i1 + %" PRId64 "], sizeof(xc_vec));\n", v, bname, N, v * lanes);
  }
  for (int m = 0; m < mr; m++) {
    char c0[32];
    snprintf(c0, sizeof c0, "(i0 + %d)", m);
    const char* ca[2] = {c0, "q"};
    xc_cstyle_writer_t ra = {0};
    if (pa && pa->panel)
      P(&ra, "%s[i0 * %" PRId64 " + q * %d + %d]", V(e, a)->name, K, mr, m);
    else if (aptr)
      P(&ra, "xr%d[q]", m);
    else
      xc_cse_read_at(e, &ra, a, ca, false);
    indent(e);
    P(&e->body, "{ const %s am = (%s)(%s);", t, t, wstr(&ra));
    for (int v = 0; v < nv; v++) P(&e->body, " c%d_%d += am * b%d;", m, v, v);
    P(&e->body, " }\n");
    if (ra.oom) fail(e, xc_error_oom());
    free(ra.data);
  }
  xc_cse_loop_close(e, h ? 2 : 1);
  /* result out; on the last step of a K loop whose element loop after it
   * was planned here (xc_cse_plan_epilogue), that loop's body on the
   * registers instead (a hoisted dot is past its last step) */
  if (op == e->epi_dot && h) {
    for (int m = 0; m < mr; m++) xc_cse_emit_epilogue_row(e, e->epi_loop->results[0], m, nv, lanes, N);
    return;
  }
  if (op == e->epi_dot) {
    xc_cse_emit_epilogue_open(e);
    for (int m = 0; m < mr; m++) xc_cse_emit_epilogue_row(e, e->epi_loop->results[0], m, nv, lanes, N);
    e->depth--;
    L("} else {\n");
    e->depth++;
  }
  for (int m = 0; m < mr; m++)
    for (int v = 0; v < nv; v++)
      L("memcpy(&%s[(i0 + %d) * %" PRId64 " + i1 + %" PRId64 "], &c%d_%d, sizeof(xc_vec));\n", r->name, m, N,
        v * lanes, m, v);
  if (op == e->epi_dot) xc_cse_loop_close(e, 1);
}

/* C dialect, f32/f64 accumulators: a register-blocked micro-kernel. The
 * result is computed in MR x NR blocks (NR = NV vectors of the device's
 * SIMD width) held in GNU C vector variables across the whole K loop: per
 * q, NV contiguous loads of a row of b, MR broadcasts of a[m, q] and
 * MR * NV multiply-adds. Each element still sums acc + a[m,0]*b[0,n] +
 * a[m,1]*b[1,n] + ... in that order, like the generic loop. b is read in
 * place when it is a stack array of the compute type, else packed first.
 * False (nothing written) when the shapes do not fit: the generic loop runs. */
/* Lanes of a blocked dot's vectors: the SIMD width's, or fewer where the
 * result's columns are no multiple of it (24 or 56 channels on 16 lanes
 * are vectors of 8: a 1x1 convolution projecting to 24 channels had
 * padded them to 32, copying every weight row for its masked lanes). */
static int64_t dot_lanes(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->results[0];
  int64_t lanes = (int64_t)e->simd * 4 / (res->type.dtype == XC_F64 ? 8 : 4), N = V(e, res)->dims[1];
  while (lanes > 1 && N % lanes) lanes /= 2;
  return lanes;
}

bool xc_cse_dot_blocked_fits(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t ct = res->type.dtype;
  if (e->d->work_groups || (ct != XC_F32 && ct != XC_F64) || r->st != ST_ARRAY || r->rank != 2 || e->simd < 4)
    return false;
  int64_t lanes = dot_lanes(e, op);
  return lanes >= 2 && lanes * (ct == XC_F64 ? 8 : 4) >= 16 && V(e, op->operands[0])->dims[1] >= 1;
}

/* C: the a and b operands of blocked dots read in place where a row lies
 * inside the load's mask (docs/emitter.md, "Rows read in place"): a load
 * copied row by row, or not masked at all (xc_cse_rows_in_place_ok), that
 * only the dot reads (b's rows: a weight's output channels).
 * A convolution's im2col tile is then a copy of its edge rows only, the
 * dot reading the rest from the input: the 3-channel stem's 9-element
 * window rows had cost as much to copy as to multiply. */
void xc_cse_plan_row_ptrs(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) xc_cse_plan_row_ptrs(e, op->body);
    if (op->opcode != XC_TOP_DOT || !xc_cse_dot_blocked_fits(e, op)) continue;
    for (int o = 0; o < 2; o++) {
      const xc_tiled_value_t* a = op->operands[o];
      vinfo_t* x = V(e, a);
      if (!a->def || x->st != ST_ARRAY || x->uses != 1 || x->packed || x->in_place || xc_cse_find_pack(e, a->def) ||
          strcmp(vtype(e, a->type.dtype), vtype(e, op->results[0]->type.dtype)) ||
          !xc_cse_rows_in_place_ok(e, a->def))
        continue;
      x->row_ptrs = true;
    }
  }
}

/* The blocking of a blocked dot: rows per register block (the last block
 * holds M % mr rows), vectors per row and lanes per vector. */
void xc_cse_dot_blocking(em_t* e, const xc_tiled_op_t* op, int* out_mr, int* out_nv, int64_t* out_lanes) {
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  int64_t M = r->dims[0], N = r->dims[1];
  int64_t esize = res->type.dtype == XC_F64 ? 8 : 4, full = (int64_t)e->simd * 4 / esize, lanes = dot_lanes(e, op);
  int nv = N % (2 * lanes) == 0 ? 2 : 1;
  /* narrower vectors than the SIMD width: up to 4 of them a row (24
   * columns: 3 of 8) */
  if (lanes < full)
    for (nv = 4; nv > 1 && (N / lanes) % nv; nv--) {
    }
  /* accumulators + b vectors + one broadcast must fit the vector registers */
  int regs = e->simd >= 16 ? 32 : 16, mr_max = (regs - nv - 1) / nv;
  if (mr_max > 8) mr_max = 8;
  *out_mr = M < mr_max ? (int)M : mr_max;
  *out_nv = nv;
  *out_lanes = lanes;
}

static bool emit_dot_blocked(em_t* e, const xc_tiled_op_t* op, const hoist_t* h) {
  const xc_tiled_value_t* a = op->operands[0], *b = op->operands[1];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res), *bi = V(e, b);
  xc_dtype_t ct = res->type.dtype;
  if (!xc_cse_dot_blocked_fits(e, op)) return false;
  int64_t M = r->dims[0], N = r->dims[1], K = V(e, a)->dims[1];
  int64_t esize = ct == XC_F64 ? 8 : 4, lanes;
  int nv, mr;
  xc_cse_dot_blocking(e, op, &mr, &nv, &lanes);
  int64_t vbytes = lanes * esize;
  const char* t = vtype(e, ct);
  const char* it = itype(e);
  int64_t nr = nv * lanes;
  L("{\n");
  e->depth++;
  L("typedef %s xc_vec __attribute__((vector_size(%" PRId64 ")));\n", t, vbytes);
  /* b: in place, or packed into a contiguous [K, N] array */
  char bname[80];
  if (h || bi->row_ptrs_set || (bi->st == ST_ARRAY && !strcmp(vtype(e, b->type.dtype), t))) {
    snprintf(bname, sizeof bname, "%s", bi->name);
  } else {
    snprintf(bname, sizeof bname, "xc_bp_%d", op->id);
    L("%s %s[%" PRId64 "];\n", t, bname, K * N);
    e->local_bytes += K * N * esize;
    xc_cstyle_writer_t rb = {0};
    const char* cb[2] = {"q", "i1"};
    xc_cse_read_at(e, &rb, b, cb, false);
    L("for (%s q = 0; q < %" PRId64 "; q++) {\n", it, K);
    e->depth++;
    if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
    L("for (%s i1 = 0; i1 < %" PRId64 "; i1++) %s[q * %" PRId64 " + i1] = (%s)(%s);\n", it, N, bname, N, t,
      wstr(&rb));
    xc_cse_loop_close(e, 1);
    if (rb.oom) fail(e, xc_error_oom());
    free(rb.data);
  }
  /* Columns outside, rows inside: one nr-wide strip of b stays in L1 while
   * every row block of a passes over it. Row blocks of mr_max rows, then one
   * block of the M % mr_max rows left (M is static). */
  int64_t rem = M % mr;
  L("for (%s i1 = 0; i1 < %" PRId64 "; i1 += %" PRId64 ") {\n", it, N, nr);
  e->depth++;
  if (M >= mr) {
    L("for (%s i0 = 0; i0 < %" PRId64 "; i0 += %d) {\n", it, M - rem, mr);
    e->depth++;
    emit_dot_block(e, op, mr, nv, lanes, bname, h);
    xc_cse_loop_close(e, 1);
  }
  if (rem) {
    L("{\n");
    e->depth++;
    L("const %s i0 = %" PRId64 ";\n", it, M - rem);
    emit_dot_block(e, op, (int)rem, nv, lanes, bname, h);
    xc_cse_loop_close(e, 1);
  }
  xc_cse_loop_close(e, 2);
  return true;
}

/* Work-group dialects: the register-blocked form of the generic dot
 * (docs/emitter.md, "Register-blocked dots"). A work-item's slots of an
 * [M, N] result in the default layout (slot j holds element f = lid + j*T)
 * are R rows by C columns: N % T == 0 gives every row (i0 = j / C) at
 * columns s*T + lid; T % N == 0 gives rows lid / N + j*g (g = T / N) at
 * column lid % N. One K loop then reads each B value of the work-item's
 * columns once per k and each A value of its rows once per k (QU k-steps
 * at a time, consecutive along A's rows), and sums into J accumulators;
 * every element still sums acc, then k = 0, 1, ... in order. Returns false
 * when the layout is not one of the two or the slots are too many. */
#define BLOCKED_DOT_MAX_SLOTS 128
typedef struct {
  xc_tiled_slot_grid_t grid; /* the work-item's slots as rows x columns */
  int64_t N, K, QU;
  bool vec_a; /* a's rows may be read four f32 at a time from its work-group array */
  bool vec_b; /* b's chunks likewise, four columns a read (the chunked layout, vec a multiple of 4) */
} wg_blocked_t;

/* An f32 operand tile in a plain work-group array of rows a multiple of 4
 * (what a float4 read of 4 consecutive elements of a row needs, with the
 * array declared aligned). */
static bool float4_rows(em_t* e, const xc_tiled_value_t* v) {
  const vinfo_t* x = V(e, v);
  return e->d->local_ptr_qual && e->d->align16 && x->st == ST_ARRAY && x->rank == 2 && !x->raw && !x->in_place &&
         !x->packed && x->dims[1] % 4 == 0 && !strcmp(vtype(e, v->type.dtype), "float");
}

/* Whether dot op may take the blocked form at all (layout aside). */
static bool wg_blocked_candidate(em_t* e, const xc_tiled_op_t* op) {
  if (!e->d->work_groups || op->opcode != XC_TOP_DOT || (e->mma && op == e->mma) || xc_cse_find_mx(e, op))
    return false;
  vinfo_t* r = V(e, op->results[0]);
  return r->rank == 2 && r->st != ST_NONE && !xc_cse_frag_shape(e, r) && V(e, op->operands[0])->dims[1] >= 1;
}

static bool wg_blocked_plan(em_t* e, const xc_tiled_op_t* op, wg_blocked_t* p) {
  if (!wg_blocked_candidate(e, op)) return false;
  vinfo_t* r = V(e, op->results[0]), *a = V(e, op->operands[0]);
  if (!xc_tiled_slot_grid_of(r->dims[0], r->dims[1], e->T, xc_cse_vec_of(e, r), &p->grid) || p->grid.slots < 2 ||
      p->grid.slots > BLOCKED_DOT_MAX_SLOTS)
    return false;
  p->N = r->dims[1], p->K = a->dims[1];
  p->QU = p->K % 4 == 0 ? 4 : p->K % 2 == 0 ? 2 : 1;
  bool f32 = !strcmp(vtype(e, op->results[0]->type.dtype), "float");
  p->vec_a = p->QU == 4 && f32 && float4_rows(e, op->operands[0]);
  p->vec_b = p->grid.vec % 4 == 0 && f32 && float4_rows(e, op->operands[1]) && V(e, op->operands[1])->dims[1] == p->N;
  return true;
}

/* The blocked dots' layouts and float4 reads, once the storage plans are
 * made, before the declarations. First the result shapes that take the
 * chunked layout although their rows are shorter than T * vec
 * (e->chunk_tiles): a blocked dot's, when its grid in that layout has
 * 2..BLOCKED_DOT_MAX_SLOTS slots — then a work-item holds rows x vec
 * columns instead of one column of many rows (every value of the shape
 * follows, xc_cse_vec_of). Then the a and b operands whose rows the dots
 * read as float4: declare_value declares their arrays 16-byte aligned, and
 * a dot reads float4 only from an array so declared. */
static void add_chunk_tile(em_t* e, const vinfo_t* x) {
  if (e->num_chunk_tiles >= 3 * MAX_STAGED_DOTS || xc_cse_vec_of(e, x) != 1) return;
  e->chunk_tiles[e->num_chunk_tiles][0] = x->dims[0];
  e->chunk_tiles[e->num_chunk_tiles][1] = x->dims[1];
  e->num_chunk_tiles++;
}

static void plan_chunk_tiles(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) plan_chunk_tiles(e, op->body);
    if (op->opcode != XC_TOP_DOT || e->vec <= 1 || !wg_blocked_candidate(e, op)) continue;
    vinfo_t* r = V(e, op->results[0]);
    xc_tiled_slot_grid_t g;
    if (xc_cse_vec_of(e, r) != 1 || !xc_tiled_slot_grid_of(r->dims[0], r->dims[1], e->T, e->vec, &g) ||
        g.slots < 2 || g.slots > BLOCKED_DOT_MAX_SLOTS)
      continue;
    add_chunk_tile(e, r);
    /* the operands' tiles too, where they divide into whole chunks: their
     * loads then move chunks (chunk_load_bytes), whatever computes the
     * offsets */
    for (int k = 0; k < 2; k++) {
      const vinfo_t* x = V(e, op->operands[k]);
      if (xc_cse_whole_chunks(e, x)) add_chunk_tile(e, x);
    }
  }
}

static void plan_vec_rows(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    wg_blocked_t p;
    if (op->opcode == XC_TOP_FOR) plan_vec_rows(e, op->body);
    if (op->opcode != XC_TOP_DOT || !wg_blocked_plan(e, op, &p)) continue;
    if (p.vec_a) V(e, op->operands[0])->vec_rows = true;
    if (p.vec_b) V(e, op->operands[1])->vec_rows = true;
  }
}

void xc_cse_plan_vec_rows(em_t* e, const xc_tiled_block_t* b) {
  plan_chunk_tiles(e, b);
  plan_vec_rows(e, b);
}

/* A loop over the J slots of r in its layout, unrolled (the blocked dot's
 * accumulators stay in registers only when every index is a constant);
 * inside, f, i0 and i1 as in xc_cse_loop_open. */
static void blocked_slot_loop(em_t* e, const vinfo_t* r, int64_t J) {
  if (e->d->unroll_pragma) L("%s\n", e->d->unroll_pragma);
  L("for (int j = 0; j < %" PRId64 "; j++) {\n", J);
  e->depth++;
  xc_cse_slot_f(e, r);
  xc_cse_emit_coords(e, r);
}

/* The dot in the dialect's float vectors (float_vectors): b's rows read
 * as whole chunks, each row of accumulators one vector a chunk. */
static bool wg_vectors_ok(em_t* e, const wg_blocked_t* p, const xc_tiled_value_t* b) {
  int64_t w = p->grid.vec;
  return e->d->float_vectors && p->vec_b && V(e, b)->aligned16 && (w == 4 || w == 8 || w == 16) &&
         p->grid.cols % w == 0;
}

/* The K loop of the blocked dot on vectors: xd (the slots, row-major,
 * rows x cols) loaded into rows x cols / w vectors of w lanes, updated
 * with one fma per row, chunk and k, stored back to xd. */
static void emit_wg_blocked_vectors(em_t* e, const wg_blocked_t* p, const xc_tiled_value_t* a,
                                    const xc_tiled_value_t* b, const xc_cstyle_writer_t* ra) {
  int64_t w = p->grid.vec, CV = p->grid.cols / w, R = p->grid.rows, QU = p->QU;
  const vinfo_t* ai = V(e, a), *bi = V(e, b);
  const char* it = itype(e), *up = e->d->unroll_pragma, *lq = e->d->local_ptr_qual;
  L("float%" PRId64 " xv[%" PRId64 "];\n", w, R * CV);
  if (up) L("%s\n", up);
  L("for (int c = 0; c < %" PRId64 "; c++) xv[c] = vload%" PRId64 "(c, xd);\n", R * CV, w);
  L("for (%s q = 0; q < %" PRId64 "; q += %" PRId64 ") {\n", it, p->K, QU);
  e->depth++;
  L("float%" PRId64 " xbv[%" PRId64 "];\n", w, QU * CV);
  if (up) L("%s\n", up);
  L("for (int u = 0; u < %" PRId64 "; u++) {\n", QU);
  e->depth++;
  if (up) L("%s\n", up);
  L("for (int c = 0; c < %" PRId64 "; c++) {\n", CV);
  e->depth++;
  L("const %s i1 = ((lid %% %" PRId64 ") + (%s)c * %" PRId64 ") * %" PRId64 ";\n", it, p->grid.tpr, it,
    p->grid.tpr, w);
  /* the chunk as w / 4 aligned float4 (the array is declared 16-byte
   * aligned, not to the wider vector's own alignment): 16-byte shared
   * loads on GPUs */
  L("%sconst float4* b4 = (%sconst float4*)%s + (%s(q + u) * %" PRId64 " + i1) / 4;\n", lq, lq, bi->name,
    bi->dims[0] == 1 ? "0 * " : "", bi->dims[1]);
  if (w == 4) L("xbv[u * %" PRId64 " + c] = b4[0];\n", CV);
  else if (w == 8) L("xbv[u * %" PRId64 " + c] = (float8)(b4[0], b4[1]);\n", CV);
  else L("xbv[u * %" PRId64 " + c] = (float16)(b4[0], b4[1], b4[2], b4[3]);\n", CV);
  xc_cse_loop_close(e, 2);
  if (up) L("%s\n", up);
  L("for (int m = 0; m < %" PRId64 "; m++) {\n", R);
  e->depth++;
  L("const %s i0 = lid / %" PRId64 " + (%s)m * %" PRId64 ";\n", it, p->grid.tpr, it, p->grid.row_step);
  if (p->vec_a && ai->aligned16) {
    const char* lane[4] = {"x", "y", "z", "w"};
    L("const float4 a4 = ((%sconst float4*)%s)[(%si0 * %" PRId64 " + q) / 4];\n", lq, ai->name,
      ai->dims[0] == 1 ? "0 * " : "", ai->dims[1]);
    for (int u = 0; u < 4; u++) {
      if (up) L("%s\n", up);
      L("for (int c = 0; c < %" PRId64 "; c++) xv[m * %" PRId64 " + c] = fma((float%" PRId64 ")(a4.%s), xbv[%d * %" PRId64
        " + c], xv[m * %" PRId64 " + c]);\n", CV, CV, w, lane[u], u, CV, CV);
    }
  } else {
    if (up) L("%s\n", up);
    L("for (int u = 0; u < %" PRId64 "; u++) {\n", QU);
    e->depth++;
    L("const %s qq = q + u;\n", it);
    L("const float av = (float)(%s);\n", ra->data ? ra->data : "");
    if (up) L("%s\n", up);
    L("for (int c = 0; c < %" PRId64 "; c++) xv[m * %" PRId64 " + c] = fma((float%" PRId64 ")(av), xbv[u * %" PRId64
      " + c], xv[m * %" PRId64 " + c]);\n", CV, CV, w, CV, CV);
    xc_cse_loop_close(e, 1);
  }
  xc_cse_loop_close(e, 2);
  if (up) L("%s\n", up);
  L("for (int c = 0; c < %" PRId64 "; c++) vstore%" PRId64 "(xv[c], c, xd);\n", R * CV, w);
}

/* The K loop of the blocked dot on scalars: per k step, the b values of
 * the work-item's columns, then each row's a value times them. */
static void emit_wg_blocked_scalars(em_t* e, const wg_blocked_t* p, const xc_tiled_value_t* a,
                                    const xc_tiled_value_t* b, xc_cstyle_writer_t* ra, xc_cstyle_writer_t* rb,
                                    const char* t) {
  int64_t K = p->K, C = p->grid.cols, R = p->grid.rows, g = p->grid.row_step, QU = p->QU;
  const char* it = itype(e), *up = e->d->unroll_pragma;
  L("for (%s q = 0; q < %" PRId64 "; q += %" PRId64 ") {\n", it, K, QU);
  e->depth++;
  L("%s xb[%" PRId64 "];\n", t, QU * C);
  if (up) L("%s\n", up);
  L("for (int u = 0; u < %" PRId64 "; u++) {\n", QU);
  e->depth++;
  L("const %s qq = q + u;\n", it);
  if (up) L("%s\n", up);
  if (p->vec_b && V(e, b)->aligned16) {
    /* b[qq, 4 columns]: one aligned float4 (rows of a multiple of 4, a
     * chunk's first column too: a chunk of vec columns is vec / 4 of them) */
    vinfo_t* bi = V(e, b);
    int64_t q4 = p->grid.vec / 4;
    L("for (int s = 0; s < %" PRId64 "; s++) {\n", C / 4);
    e->depth++;
    L("const %s i1 = ((lid %% %" PRId64 ") + (%s)(s / %" PRId64 ") * %" PRId64 ") * %" PRId64 " + (s %% %" PRId64
      ") * 4;\n", it, p->grid.tpr, it, q4, p->grid.tpr, p->grid.vec, q4);
    L("const float4 b4 = ((%sconst float4*)%s)[(%sqq * %" PRId64 " + i1) / 4];\n", e->d->local_ptr_qual, bi->name,
      bi->dims[0] == 1 ? "0 * " : "", bi->dims[1]);
    L("xb[u * %" PRId64 " + s * 4] = b4.x, xb[u * %" PRId64 " + s * 4 + 1] = b4.y;\n", C, C);
    L("xb[u * %" PRId64 " + s * 4 + 2] = b4.z, xb[u * %" PRId64 " + s * 4 + 3] = b4.w;\n", C, C);
  } else {
    L("for (int s = 0; s < %" PRId64 "; s++) {\n", C);
    e->depth++;
    L("const %s i1 = ((lid %% %" PRId64 ") + (%s)(s / %" PRId64 ") * %" PRId64 ") * %" PRId64 " + s %% %" PRId64
      ";\n", it, p->grid.tpr, it, p->grid.vec, p->grid.tpr, p->grid.vec, p->grid.vec);
    L("xb[u * %" PRId64 " + s] = (%s)(%s);\n", C, t, wstr(rb));
  }
  xc_cse_loop_close(e, 2);
  if (up) L("%s\n", up);
  L("for (int m = 0; m < %" PRId64 "; m++) {\n", R);
  e->depth++;
  L("const %s i0 = lid / %" PRId64 " + (%s)m * %" PRId64 ";\n", it, p->grid.tpr, it, g);
  if (p->vec_a && V(e, a)->aligned16) {
    /* a[i0, q..q+3]: one aligned float4 (rows of a multiple of 4, q too) */
    vinfo_t* ai = V(e, a);
    const char* lane[4] = {"x", "y", "z", "w"};
    L("const float4 a4 = ((%sconst float4*)%s)[(%s%s * %" PRId64 " + q) / 4];\n", e->d->local_ptr_qual, ai->name,
      ai->dims[0] == 1 ? "0 * " : "", "i0", ai->dims[1]);
    for (int u = 0; u < 4; u++) {
      if (up) L("%s\n", up);
      L("for (int s = 0; s < %" PRId64 "; s++) xd[m * %" PRId64 " + s] += a4.%s * xb[%d * %" PRId64 " + s];\n", C, C,
        lane[u], u, C);
    }
    xc_cse_loop_close(e, 1);
  } else {
    if (up) L("%s\n", up);
    L("for (int u = 0; u < %" PRId64 "; u++) {\n", QU);
    e->depth++;
    L("const %s qq = q + u;\n", it);
    L("const %s av = (%s)(%s);\n", t, t, wstr(ra));
    if (up) L("%s\n", up);
    L("for (int s = 0; s < %" PRId64 "; s++) xd[m * %" PRId64 " + s] += av * xb[u * %" PRId64 " + s];\n", C, C, C);
    xc_cse_loop_close(e, 2);
  }
  xc_cse_loop_close(e, 1);
}

static bool emit_dot_wg_blocked(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* a = op->operands[0], *b = op->operands[1], *acc = op->operands[2];
  vinfo_t* r = V(e, op->results[0]);
  wg_blocked_t p;
  if (!wg_blocked_plan(e, op, &p)) return false;
  int64_t J = p.grid.slots, C = p.grid.cols, R = p.grid.rows;
  const char* t = vtype(e, op->results[0]->type.dtype);
  char d[96];
  expr_t eacc;
  xc_cstyle_writer_t ra = {0}, rb = {0};
  L("{ /* register-blocked dot: %" PRId64 " rows x %" PRId64 " columns a work-item */\n", R, C);
  e->depth++;
  L("%s xd[%" PRId64 "];\n", t, J);
  blocked_slot_loop(e, r, J);
  L("xd[j] = %s;\n", xc_cse_opnd(e, &eacc, acc, r));
  xc_cse_expr_free(&eacc);
  xc_cse_loop_close(e, 1);
  const char* ca[2] = {"i0", "qq"}, *cb[2] = {"qq", "i1"};
  xc_cse_read_at(e, &ra, a, ca, false);
  xc_cse_read_at(e, &rb, b, cb, false);
  if (wg_vectors_ok(e, &p, b)) emit_wg_blocked_vectors(e, &p, a, b, &ra);
  else emit_wg_blocked_scalars(e, &p, a, b, &ra, &rb, t);
  blocked_slot_loop(e, r, J);
  L("%s = xd[j];\n", xc_cse_dst(e, r, d, sizeof d));
  xc_cse_loop_close(e, 1);
  xc_cse_loop_close(e, 1);
  if (r->st == ST_ARRAY) xc_cse_barrier(e);
  if (ra.oom || rb.oom) fail(e, xc_error_oom());
  free(ra.data), free(rb.data);
  return true;
}

void xc_cse_emit_dot(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_value_t* a = op->operands[0], *b = op->operands[1], *acc = op->operands[2];
  const xc_tiled_value_t* res = op->results[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t ct = res->type.dtype;
  const char* t = vtype(e, ct);
  int64_t K = V(e, a)->dims[1];
  xc_cstyle_writer_t ra = {0}, rb = {0};
  char d[96];
  expr_t eacc;
  if (!e->d->work_groups) {
    const hoist_t* h = xc_cse_hoist_of(e, op, NULL, NULL);
    if (h) { /* its loops fill this step's slices; the dot runs after them */
      L("xh%d++;\n", op->id);
      return;
    }
    if (!emit_dot_blocked(e, op, NULL)) {
      /* r = acc; then for m, k: r[m, :] += a[m,k] * b[k, :] (vectorized over n) */
      int close = xc_cse_loop_open(e, r, true);
      L("%s = %s;\n", xc_cse_dst(e, r, d, sizeof d), xc_cse_opnd(e, &eacc, acc, r));
      xc_cse_loop_close(e, close);
      xc_cse_expr_free(&eacc);
      const char* ca[2] = {"i0", "q"}, *cb[2] = {"q", "i1"};
      xc_cse_read_at(e, &ra, a, ca, false);
      xc_cse_read_at(e, &rb, b, cb, false);
      L("for (%s i0 = 0; i0 < %" PRId64 "; i0++) {\n", itype(e), r->dims[0]);
      e->depth++;
      L("for (%s q = 0; q < %" PRId64 "; q++) {\n", itype(e), K);
      e->depth++;
      L("const %s av = (%s)(%s);\n", t, t, wstr(&ra));
      if (e->d->simd_pragma) L("%s\n", e->d->simd_pragma);
      L("for (%s i1 = 0; i1 < %" PRId64 "; i1++) %s[i0 * %" PRId64 " + i1] += av * (%s)(%s);\n", itype(e),
        r->dims[1], r->name, r->dims[1], t, wstr(&rb));
      xc_cse_loop_close(e, 2);
    }
  } else if (!emit_dot_wg_blocked(e, op)) {
    int close = xc_cse_loop_open(e, r, false);
    const char* ca[2] = {"i0", "q"}, *cb[2] = {"q", "i1"};
    xc_cse_read_at(e, &ra, a, ca, false);
    xc_cse_read_at(e, &rb, b, cb, false);
    L("%s s = %s;\n", t, xc_cse_opnd(e, &eacc, acc, r));
    xc_cse_expr_free(&eacc);
    L("for (%s q = 0; q < %" PRId64 "; q++) s += (%s)(%s) * (%s)(%s);\n", itype(e), K, t, wstr(&ra), t,
      wstr(&rb));
    L("%s = s;\n", xc_cse_dst(e, r, d, sizeof d));
    xc_cse_loop_close(e, close);
    if (r->st == ST_ARRAY) xc_cse_barrier(e);
  }
  if (ra.oom || rb.oom) fail(e, xc_error_oom());
  free(ra.data), free(rb.data);
}

/* Copies value src into the storage of carried value dstv (same shape). */
/* ---- matrix instructions (docs/emitter.md) ------------------------------------ */

/* Whether v's element can be read at any coordinates (the raw load loops
 * evaluate the offset and mask at their own units): no private tile is
 * read on the way, since a private tile's slot j holds the element of its
 * shape's slot layout (the default one, or a matrix plan's). */
static bool readable_at(em_t* e, const xc_tiled_value_t* v) {
  if (!v) return true;
  vinfo_t* x = V(e, v);
  if (x->st == ST_PRIVATE) return false;
  if (x->st != ST_VIRTUAL || !v->def) return true;
  for (int i = 0; i < v->def->num_operands; i++)
    if (!readable_at(e, v->def->operands[i])) return false;
  return true;
}

/* `xd`: where element (row, col) of r lives in its work-group array (pitch,
 * and the XOR swizzle of 16-byte chunks when r has one). */
static void staged_index(em_t* e, const vinfo_t* r, int64_t ch, const char* buf_off, const char* row,
                         const char* col) {
  const char* it = itype(e);
  if (r->swz_mask)
    L("const %s xd = %s + %s * %" PRId64 " + (((%s / %" PRId64 ") ^ ((%s >> %" PRId64 ") & %" PRId64 ")) * %" PRId64
      ") + %s %% %" PRId64 ";\n",
      it, buf_off, row, r->pitch, col, ch, row, r->swz_shift, r->swz_mask, ch, col, ch);
  else
    L("const %s xd = %s + %s * %" PRId64 " + %s;\n", it, buf_off, row, r->pitch, col);
}

/* Copies the elements of a raw load (mask, offset and the tile at buf_off
 * as in raw_load_loop) in the slot layout of the load's shape, whose slot j
 * is where a private tile of that shape holds the element: the loop for a
 * load whose offset or mask reads one (index arithmetic too long to inline,
 * such as the division and remainder of a view folded into the load). */
static void raw_load_slots(em_t* e, const xc_tiled_op_t* op, const char* buf_off, const char* off, const char* m) {
  const xc_tiled_value_t* res = op->results[0], *mem = op->operands[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t ch = 16 / (int64_t)xc_dtype_size(t);
  int close = xc_cse_loop_open(e, r, false);
  staged_index(e, r, ch, buf_off, "i0", "i1");
  L("%s[xd] = (%s) ? %s[%s] : (%s)0;\n", r->name, m, xc_cse_mem_name(e, mem), off, stype(e, t));
  xc_cse_loop_close(e, close);
}

/* One loop over the units (elements, or 16-byte chunks along rows) of a raw
 * load. mode 0: elements with the mask; 1: chunks, each checked at its two
 * ends (fast copy, else elements); 2: chunks of a tile known to be in bounds,
 * contiguous along rows and aligned, at xt0 + r*xrs + c. The offset and
 * mask are read at each unit's coordinates (readable_at). */
static void raw_load_loop(em_t* e, const xc_tiled_op_t* op, const char* buf_off, int mode, const char* off,
                          const char* m) {
  const xc_tiled_value_t* res = op->results[0], *mem = op->operands[0];
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t ch = 16 / (int64_t)xc_dtype_size(t);
  int64_t per = mode ? ch : 1, units = r->dims[0] * r->dims[1] / per, upr = r->dims[1] / per;
  int64_t slots = (units + e->T - 1) / e->T;
  const char* it = itype(e);
  char dstb[160], srcb[160];
  snprintf(dstb, sizeof dstb, "&%s[xd]", r->name);
  if (e->d->unroll_pragma && slots <= 8) L("%s\n", e->d->unroll_pragma);
  L("for (int j = 0; j < %" PRId64 "; j++) {\n", slots);
  e->depth++;
  L("const %s u = lid + (%s)j * %" PRId64 ";\n", it, it, e->T);
  L(units % e->T ? "if (u < %" PRId64 ") {\n" : "{ /* %" PRId64 " units */\n", units);
  e->depth++;
  L("const %s r0 = u / %" PRId64 ", c0 = (u %% %" PRId64 ") * %" PRId64 ";\n", it, upr, upr, per);
  staged_index(e, r, ch, buf_off, "r0", "c0");
  if (mode == 2) {
    snprintf(srcb, sizeof srcb, "(%s + xt0 + r0 * xrs + c0)", xc_cse_mem_name(e, mem));
    indent(e);
    e->d->copy16_async(&e->body, dstb, srcb, "1");
    P(&e->body, "\n");
    xc_cse_loop_close(e, 2);
    return;
  }
  if (mode == 1) {
    L("%s xo0, xo1;\n", it);
    L("int xm0, xm1;\n");
    L("{ const %s i0 = r0, i1 = c0; xo0 = %s; xm0 = (int)(%s); }\n", it, off, m);
    L("{ const %s i0 = r0, i1 = c0 + %" PRId64 "; xo1 = %s; xm1 = (int)(%s); }\n", it, ch - 1, off, m);
    L("if (xm0 && xm1 && xo1 - xo0 == %" PRId64 " && ((unsigned long long)(%s + xo0) & 15u) == 0) {\n", ch - 1,
      xc_cse_mem_name(e, mem));
    snprintf(srcb, sizeof srcb, "(%s + xo0)", xc_cse_mem_name(e, mem));
    e->depth++;
    indent(e);
    e->d->copy16_async(&e->body, dstb, srcb, "1");
    P(&e->body, "\n");
    e->depth--;
    L("} else {\n");
    e->depth++;
  }
  L("for (int q = 0; q < %" PRId64 "; q++) {\n", per);
  e->depth++;
  L("const %s i0 = r0, i1 = c0 + q;\n", it);
  L("%s[xd + q] = (%s) ? %s[%s] : (%s)0;\n", r->name, m, xc_cse_mem_name(e, mem), off, stype(e, t));
  e->depth--;
  L("}\n");
  if (mode == 1) {
    e->depth--;
    L("}\n");
  }
  xc_cse_loop_close(e, 2);
}

/* Copies the tile a raw load produces into its shared array of storage
 * elements at element offset buf_off (a pipeline buffer). With 16-byte
 * chunks (affine offset, convex mask): when the mask holds at the tile's
 * four corners, the offsets are consecutive along rows, the row stride is a
 * multiple of 16 bytes and the first element is aligned, every chunk is
 * copied without further checks; otherwise each chunk is checked at its
 * two ends and falls back to elements with the mask (masked-off elements
 * are 0). Returns whether asynchronous copies may have been issued. */
static bool emit_raw_load(em_t* e, const xc_tiled_op_t* op, const char* buf_off) {
  const xc_tiled_value_t* res = op->results[0], *mem = op->operands[0], *offv = op->operands[1];
  const xc_tiled_value_t* mask = op->num_operands > 2 ? op->operands[2] : NULL;
  vinfo_t* r = V(e, res);
  xc_dtype_t t = res->type.dtype;
  int64_t es = (int64_t)xc_dtype_size(t), ch = 16 / es;
  int64_t rows = r->dims[0], cols = r->dims[1];
  bool at_coords = readable_at(e, offv) && readable_at(e, mask);
  bool chunk = at_coords && r->chunked && e->d->copy16_async && cols % ch == 0 && (r->pitch * es) % 16 == 0;
  const char* it = itype(e);
  expr_t eo, em;
  const char* off = xc_cse_opnd(e, &eo, offv, r);
  const char* m = mask ? xc_cse_opnd(e, &em, mask, r) : "1";
  if (!at_coords) {
    raw_load_slots(e, op, buf_off, off, m);
  } else if (!chunk) {
    raw_load_loop(e, op, buf_off, 0, off, m);
  } else {
    L("{\n");
    e->depth++;
    L("%s xt0, xt1, xt2;\n", it);
    L("int xtm;\n");
    L("{ const %s i0 = 0, i1 = 0; xt0 = %s; xtm = (int)(%s); }\n", it, off, m);
    L("{ const %s i0 = 0, i1 = 1; xt1 = %s; }\n", it, off);
    L("{ const %s i0 = %d, i1 = 0; xt2 = %s; }\n", it, rows > 1 ? 1 : 0, off);
    L("{ const %s i0 = 0, i1 = %" PRId64 "; xtm = xtm && (int)(%s); }\n", it, cols - 1, m);
    L("{ const %s i0 = %" PRId64 ", i1 = 0; xtm = xtm && (int)(%s); }\n", it, rows - 1, m);
    L("{ const %s i0 = %" PRId64 ", i1 = %" PRId64 "; xtm = xtm && (int)(%s); }\n", it, rows - 1, cols - 1, m);
    L("const %s xrs = xt2 - xt0;\n", it);
    L("if (xtm && xt1 - xt0 == 1 && (xrs * %" PRId64 ") %% 16 == 0 && ((unsigned long long)(%s + xt0) & 15u) == 0) {\n",
      es, xc_cse_mem_name(e, mem));
    e->depth++;
    raw_load_loop(e, op, buf_off, 2, off, m);
    e->depth--;
    L("} else {\n");
    e->depth++;
    raw_load_loop(e, op, buf_off, 1, off, m);
    e->depth--;
    L("}\n");
    e->depth--;
    L("}\n");
  }
  xc_cse_expr_free(&eo);
  if (mask) xc_cse_expr_free(&em);
  return chunk;
}

/* A raw load outside a pipeline: copies, waits for them, barrier. */
void xc_cse_emit_raw_load_sync(em_t* e, const xc_tiled_op_t* op) {
  if (emit_raw_load(e, op, "0")) {
    L("%s\n", e->d->copy_commit);
    indent(e);
    P(&e->body, e->d->copy_wait_fmt, 0);
    P(&e->body, "\n");
  }
  xc_cse_barrier(e);
}

/* The dialect's matrix-instruction statements for a planned dot (names
 * set), indented at the current depth. */
static void call_emit_dot(em_t* e, const xc_cstyle_dot_t* dot) {
  char ind[64];
  int n = e->depth * 2 < (int)sizeof ind - 1 ? e->depth * 2 : (int)sizeof ind - 1;
  memset(ind, ' ', (size_t)n);
  ind[n] = 0;
  e->d->emit_dot(&e->body, dot, ind);
}

/* The planned dot: result = acc (same registers when they share storage),
 * then the dialect's matrix instructions on operand arrays a and b. */
void xc_cse_emit_mma(em_t* e, const xc_tiled_op_t* op, const char* a, const char* b) {
  const xc_tiled_value_t* acc = op->operands[2], *res = op->results[0];
  vinfo_t* r = V(e, res);
  if (strcmp(r->name, V(e, acc)->name)) xc_cse_emit_copy(e, res, acc, false);
  e->dot.a = a;
  e->dot.b = b;
  e->dot.acc = r->name;
  call_emit_dot(e, &e->dot);
}

static int64_t raw_size(em_t* e, const xc_tiled_value_t* v) { return V(e, v)->dims[0] * V(e, v)->pitch; }

/* ---- dots with staged operands (docs/emitter.md) ------------------------------ */

mx_t* xc_cse_find_mx(em_t* e, const xc_tiled_op_t* op) {
  for (int i = 0; i < e->num_mx; i++)
    if (e->mx[i].op == op) return &e->mx[i];
  return NULL;
}

/* Whether operand o of m is copied right after its definition (an op that
 * writes storage; otherwise at the dot). */
static bool staged_at_def(em_t* e, const mx_t* m, int o) {
  const xc_tiled_value_t* v = m->op->operands[o];
  return m->stage[o] && v->def && v->def->opcode != XC_TOP_FOR && V(e, v)->st == ST_ARRAY;
}

/* Copies operand o of m into its staging array: storage elements, row
 * pitch lda / ldb, the plan's chunk swizzle; then a barrier. */
static void emit_stage(em_t* e, const mx_t* m, int o) {
  const xc_tiled_value_t* v = m->op->operands[o];
  vinfo_t* x = V(e, v);
  const xc_cstyle_dot_t* d = &m->dot;
  int64_t pitch = o == 0 ? d->lda : d->ldb, shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
  int64_t mask = o == 0 ? d->a_swz_mask : d->b_swz_mask, ch = 16 / (int64_t)xc_dtype_size(v->type.dtype);
  xc_cstyle_writer_t rd = {0}, sv = {0};
  xc_cse_read_at(e, &rd, v, loop_coords, false);
  xc_cse_store_conv(e, &sv, v->type.dtype, wstr(&rd));
  int close = xc_cse_loop_open(e, x, false);
  if (mask)
    L("xs%c%d[i0 * %" PRId64 " + (((i1 / %" PRId64 ") ^ ((i0 >> %" PRId64 ") & %" PRId64 ")) * %" PRId64 ") + i1 %% %" PRId64
      "] = %s;\n",
      o ? 'b' : 'a', m->op->id, pitch, ch, shift, mask, ch, ch, wstr(&sv));
  else
    L("xs%c%d[i0 * %" PRId64 " + i1] = %s;\n", o ? 'b' : 'a', m->op->id, pitch, wstr(&sv));
  xc_cse_loop_close(e, close);
  xc_cse_barrier(e);
  if (rd.oom || sv.oom) fail(e, xc_error_oom());
  free(rd.data), free(sv.data);
}

/* The staging copies of operands defined by op. */
void xc_cse_emit_stagings_of(em_t* e, const xc_tiled_op_t* op) {
  for (int i = 0; i < e->num_mx; i++)
    for (int o = 0; o < 2; o++)
      if (e->mx[i].op->operands[o]->def == op && staged_at_def(e, &e->mx[i], o)) emit_stage(e, &e->mx[i], o);
}

/* A staged dot: the accumulator into slots, the dialect's instructions on
 * the operand arrays, the slots into the result. */
void xc_cse_emit_mx(em_t* e, mx_t* m) {
  const xc_tiled_op_t* op = m->op;
  const xc_tiled_value_t* acc = op->operands[2], *res = op->results[0];
  vinfo_t* r = V(e, res);
  char ab[2][80], t[80];
  for (int o = 0; o < 2; o++) {
    if (m->stage[o] && !staged_at_def(e, m, o)) emit_stage(e, m, o);
    if (m->stage[o]) snprintf(ab[o], sizeof ab[o], "xs%c%d", o ? 'b' : 'a', op->id);
    else snprintf(ab[o], sizeof ab[o], "%s", V(e, op->operands[o])->name);
  }
  if (m->regs) {
    xc_cse_emit_copy(e, res, acc, false); /* the result's slots are the accumulator */
    snprintf(t, sizeof t, "%s", r->name);
  } else {
    snprintf(t, sizeof t, "xm%d", op->id);
    xc_cstyle_writer_t rc = {0};
    xc_cse_read_at(e, &rc, acc, loop_coords, V(e, acc)->st == ST_PRIVATE);
    int close = xc_cse_slot_loop_open(e, &m->dot);
    L("%s[j] = %s;\n", t, wstr(&rc));
    xc_cse_loop_close(e, close);
    if (rc.oom) fail(e, xc_error_oom());
    free(rc.data);
  }
  m->dot.a = ab[0];
  m->dot.b = ab[1];
  m->dot.acc = t;
  call_emit_dot(e, &m->dot);
  m->dot.a = m->dot.b = m->dot.acc = NULL;
  if (!m->regs) {
    int close = xc_cse_slot_loop_open(e, &m->dot);
    L("%s[f] = %s[j];\n", r->name, t);
    xc_cse_loop_close(e, close);
    xc_cse_barrier(e);
  }
}

/* The planned dot's loop, software-pipelined over e->stages buffers
 * (docs/emitter.md): the body is the two raw loads, the dot, the yield and
 * inlined index arithmetic, so the loads of a later iteration are the same
 * code under another value of the induction variable. */
void xc_cse_emit_for_pipelined(em_t* e, const xc_tiled_op_t* op) {
  const xc_tiled_block_t* body = op->body;
  const xc_tiled_op_t* dot = e->mma;
  const xc_tiled_op_t* la = dot->operands[0]->def, *lb = dot->operands[1]->def;
  int S = e->stages, id = e->seq++;
  const char* it = itype(e);
  xc_cse_emit_copy(e, body->args[1], op->operands[3], true);
  for (int i = 0; i < body->num_ops; i++) {
    const xc_tiled_op_t* b = body->ops[i];
    if ((b->opcode == XC_TOP_CONST || b->opcode == XC_TOP_KNOB) && b->results[0]->type.rank == 0) xc_cse_emit_op(e, b);
  }
  const char* iv = V(e, body->args[0])->name;
  expr_t lb_, ub_, st_;
  vinfo_t scalar = {0};
  L("{\n");
  e->depth++;
  L("const %s xlb%d = %s, xub%d = %s, xst%d = %s;\n", it, id, xc_cse_opnd(e, &lb_, op->operands[0], &scalar), id,
    xc_cse_opnd(e, &ub_, op->operands[1], &scalar), id, xc_cse_opnd(e, &st_, op->operands[2], &scalar));
  xc_cse_expr_free(&lb_), xc_cse_expr_free(&ub_), xc_cse_expr_free(&st_);
  char off[96];
  for (int s = 0; s < S - 1; s++) {
    L("{ /* stage %d */\n", s);
    e->depth++;
    L("const %s %s = xlb%d + %d * xst%d;\n", it, iv, id, s, id);
    L("if (%s < xub%d) {\n", iv, id);
    e->depth++;
    snprintf(off, sizeof off, "%" PRId64, s * raw_size(e, la->results[0]));
    emit_raw_load(e, la, off);
    snprintf(off, sizeof off, "%" PRId64, s * raw_size(e, lb->results[0]));
    emit_raw_load(e, lb, off);
    e->depth--;
    L("}\n");
    e->depth--;
    L("}\n");
    L("%s\n", e->d->copy_commit);
  }
  L("%s xit%d = 0;\n", it, id);
  L("for (%s %s = xlb%d; %s < xub%d; %s += xst%d, xit%d++) {\n", it, iv, id, iv, id, iv, id, id);
  e->depth++;
  indent(e);
  P(&e->body, e->d->copy_wait_fmt, S - 2);
  P(&e->body, "\n");
  xc_cse_barrier(e); /* this stage is complete; every work-item is done with the previous one */
  L("{\n");
  e->depth++;
  L("const %s xnx = %s + %d * xst%d;\n", it, iv, S - 1, id);
  L("const %s xns = (xit%d + %d) %% %d;\n", it, id, S - 1, S);
  L("if (xnx < xub%d) {\n", id);
  e->depth++;
  L("const %s %s = xnx;\n", it, iv);
  snprintf(off, sizeof off, "xns * %" PRId64, raw_size(e, la->results[0]));
  emit_raw_load(e, la, off);
  snprintf(off, sizeof off, "xns * %" PRId64, raw_size(e, lb->results[0]));
  emit_raw_load(e, lb, off);
  e->depth--;
  L("}\n");
  e->depth--;
  L("}\n");
  L("%s\n", e->d->copy_commit);
  char a[128], b[128];
  snprintf(a, sizeof a, "(%s + (xit%d %% %d) * %" PRId64 ")", V(e, la->results[0])->name, id, S,
           raw_size(e, la->results[0]));
  snprintf(b, sizeof b, "(%s + (xit%d %% %d) * %" PRId64 ")", V(e, lb->results[0])->name, id, S,
           raw_size(e, lb->results[0]));
  xc_cse_emit_mma(e, dot, a, b);
  e->depth--;
  L("}\n");
  indent(e);
  P(&e->body, e->d->copy_wait_fmt, 0);
  P(&e->body, "\n");
  xc_cse_barrier(e);
  e->depth--;
  L("}\n");
}

/* ---- analysis: the dot for matrix instructions ------------------------------- */

static int affine_deg(const xc_tiled_value_t* v) {
  if (!v || !xc_dtype_is_int(v->type.dtype)) return -1;
  if (v->type.rank == 0) return 0;
  const xc_tiled_op_t* op = v->def;
  if (!op) return -1;
  switch (op->opcode) {
    case XC_TOP_CONST: return 0;
    case XC_TOP_ARANGE: return 1;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return affine_deg(op->operands[0]);
    case XC_TOP_ADD:
    case XC_TOP_SUB: {
      int a = affine_deg(op->operands[0]), b = affine_deg(op->operands[1]);
      return a < 0 || b < 0 ? -1 : (a > b ? a : b);
    }
    case XC_TOP_MUL: {
      int a = affine_deg(op->operands[0]), b = affine_deg(op->operands[1]);
      if (a < 0 || b < 0 || (a > 0 && b > 0)) return -1;
      return a > b ? a : b;
    }
    default: return -1;
  }
}

/* A conjunction of comparisons of affine values: the set of coordinates it
 * holds at is convex, so it holds along a segment when it holds at both ends. */
static bool convex_mask(const xc_tiled_value_t* v) {
  if (!v || v->type.rank == 0) return true;
  const xc_tiled_op_t* op = v->def;
  if (!op) return false;
  switch (op->opcode) {
    case XC_TOP_CONST: return true;
    case XC_TOP_EXPAND_DIMS:
    case XC_TOP_BROADCAST: return convex_mask(op->operands[0]);
    case XC_TOP_AND: return v->type.dtype == XC_BOOL && convex_mask(op->operands[0]) && convex_mask(op->operands[1]);
    case XC_TOP_CMP: return op->cmp != XC_CMP_NE && affine_deg(op->operands[0]) >= 0 && affine_deg(op->operands[1]) >= 0;
    default: return false;
  }
}

/* A load from global memory whose masked-off elements are 0. */
static bool raw_source(const xc_tiled_value_t* v) {
  const xc_tiled_op_t* ld = v->def;
  const xc_tiled_value_t* mem = ld->operands[0];
  if (mem->type.kind != XC_TILED_MEMREF || mem->type.scope != XC_SCOPE_GLOBAL) return false;
  const xc_tiled_value_t* other = ld->num_operands > 3 ? ld->operands[3] : NULL;
  return !other || (other->def && other->def->opcode == XC_TOP_CONST && other->def->f == 0 && !signbit(other->def->f));
}

/* A load the dialect can take as a matrix operand: from global memory, used
 * only by the dot, masked-off elements 0. */
static bool raw_operand(em_t* e, const xc_tiled_value_t* v, const xc_tiled_block_t* body) {
  const xc_tiled_op_t* ld = v->def;
  if (!ld || ld->opcode != XC_TOP_LOAD || ld->parent != body || V(e, v)->uses != 1 || v->type.rank != 2) return false;
  return raw_source(v);
}

/* Whether block b is `body` or encloses it. */
static bool encloses(const xc_tiled_block_t* b, const xc_tiled_block_t* body) {
  for (const xc_tiled_block_t* x = body; x; x = x->parent ? x->parent->parent : NULL)
    if (x == b) return true;
  return false;
}

/* raw_operand for a staged dot: the load may also sit in a block around the
 * dot's (a loop-invariant operand, such as attention's q, copied into the
 * plan's layout once before the loop; nothing else reads or writes it). */
static bool raw_operand_around(em_t* e, const xc_tiled_value_t* v, const xc_tiled_block_t* body) {
  const xc_tiled_op_t* ld = v->def;
  if (!ld || ld->opcode != XC_TOP_LOAD || !encloses(ld->parent, body) || V(e, v)->uses != 1 || v->type.rank != 2)
    return false;
  return raw_source(v);
}

/* Whether the body is the loads, the dot, the yield, inlined (virtual)
 * values and scalar constants (hoisted before the pipeline). */
static bool pipelinable(em_t* e, const xc_tiled_block_t* body, const xc_tiled_op_t* dot) {
  for (int i = 0; i < body->num_ops; i++) {
    const xc_tiled_op_t* op = body->ops[i];
    if (op == dot || op == dot->operands[0]->def || op == dot->operands[1]->def || op->opcode == XC_TOP_YIELD) continue;
    if ((op->opcode == XC_TOP_CONST || op->opcode == XC_TOP_KNOB) && op->results[0]->type.rank == 0) continue;
    for (int r = 0; r < op->num_results; r++)
      if (V(e, op->results[r])->st != ST_VIRTUAL) return false;
    if (op->opcode == XC_TOP_FOR || op->opcode == XC_TOP_STORE || op->opcode == XC_TOP_BARRIER) return false;
  }
  return true;
}

/* Bytes of the work-group arrays of block b other than matrix operands
 * (what xc_cse_declare_block will add besides them). */
int64_t xc_cse_other_local_bytes(em_t* e, const xc_tiled_block_t* b, const xc_tiled_op_t* dot) {
  int64_t n = 0;
  for (int i = 0; i < b->num_args; i++)
    if (V(e, b->args[i])->st == ST_ARRAY) n += V(e, b->args[i])->n * array_elem_bytes(e, b->args[i]->type.dtype);
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      n += xc_cse_other_local_bytes(e, op->body, dot);
      continue;
    }
    if (op->opcode == XC_TOP_REDUCE) n += e->T * 8; /* a cooperative reduction's scratch, at most */
    for (int r = 0; r < op->num_results; r++) {
      const xc_tiled_value_t* v = op->results[r];
      if (dot && (v == dot->operands[0] || v == dot->operands[1])) continue;
      if (op->opcode == XC_TOP_ALLOC) n += V(e, v)->n * (int64_t)xc_dtype_size(v->type.dtype);
      else if (V(e, v)->st == ST_ARRAY) n += V(e, v)->n * array_elem_bytes(e, v->type.dtype);
    }
  }
  return n;
}

/* The schedule's entry for a dot, NULL when no schedule is followed. */
static const xc_tiled_dot_schedule_t* scheduled(em_t* e, const xc_tiled_op_t* dot) {
  if (!e->sched) return NULL;
  int i = xc_tiled_dot_index(e->k, dot);
  return i >= 0 && i < e->sched->num_dots ? &e->sched->dots[i] : NULL;
}

/* Asks the dialect to plan an [m, k] x [k, n] dot of dtype t with f32
 * accumulation on matrix instructions (d zeroed by the caller): 1 planned,
 * 0 declined, -1 an inconsistent plan (the emitter has failed). */
static int ask_dot_plan(em_t* e, xc_cstyle_dot_t* d, int64_t m, int64_t n, int64_t k, xc_dtype_t t, int id) {
  d->m = m, d->n = n, d->k = k;
  d->a_dtype = t, d->b_dtype = t, d->acc_dtype = XC_F32;
  d->threads = e->T;
  d->warp = e->caps ? e->caps->simd_width : 0;
  d->caps = e->caps;
  d->allow_tf32 = e->allow_tf32;
  if (!e->d->dot_plan(e->d, d)) return 0;
  int64_t ch = 16 / (int64_t)xc_dtype_size(t);
  bool swz_ok = (!d->a_swz_mask || (d->k % ch == 0 && d->a_swz_mask < d->k / ch)) &&
                (!d->b_swz_mask || (d->n % ch == 0 && d->b_swz_mask < d->n / ch));
  if (d->lda < d->k || d->ldb < d->n || d->slots <= 0 || d->slots * e->T != d->m * d->n || !swz_ok) {
    fail(e, xc_error(XC_INTERNAL, "%s dialect: inconsistent plan for dot %d", e->d->name, id));
    return -1;
  }
  return 1;
}

void xc_cse_plan_mma(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops && !e->mma; i++) {
    const xc_tiled_op_t* loop = b->ops[i];
    if (loop->opcode != XC_TOP_FOR) continue;
    const xc_tiled_block_t* body = loop->body;
    xc_cse_plan_mma(e, body);
    if (e->mma || loop->num_operands != 4 || body->num_args != 2 || !body->num_ops) continue;
    const xc_tiled_op_t* y = body->ops[body->num_ops - 1];
    if (y->opcode != XC_TOP_YIELD || y->num_operands != 1 || !y->operands[0]->def) continue;
    const xc_tiled_op_t* dot = y->operands[0]->def;
    if (dot->opcode != XC_TOP_DOT || dot->parent != body || dot->operands[2] != body->args[1]) continue;
    const xc_tiled_value_t* a = dot->operands[0], *bb = dot->operands[1], *res = dot->results[0];
    xc_dtype_t t = a->type.dtype;
    if (!(t == XC_F16 || t == XC_BF16 || t == XC_F32) || bb->type.dtype != t || res->type.dtype != XC_F32) continue;
    if (!raw_operand(e, a, body) || !raw_operand(e, bb, body)) continue;
    if (V(e, res)->st != ST_PRIVATE || V(e, body->args[1])->st != ST_PRIVATE ||
        V(e, loop->results[0])->st != ST_PRIVATE || V(e, res)->uses != 1)
      continue;
    /* a schedule decides whether this dot takes matrix instructions */
    const xc_tiled_dot_schedule_t* ask = scheduled(e, dot);
    if (ask && !ask->mma.m) continue;
    xc_cstyle_dot_t* d = &e->dot;
    memset(d, 0, sizeof *d);
    int planned = ask_dot_plan(e, d, V(e, res)->dims[0], V(e, res)->dims[1], V(e, a)->dims[1], t, dot->id);
    if (planned < 0) return;
    if (!planned) continue;
    e->mma = dot;
    e->mma_loop = loop;
    e->frags[e->num_frags++] = &e->dot;
    /* the dot's result lives in the accumulator's registers */
    if (V(e, res) != V(e, body->args[1])) memcpy(V(e, res)->name, V(e, body->args[1])->name, sizeof V(e, res)->name);
    int s = xc_tiled_knob_of_kind(e->k, XC_KNOB_STAGES);
    int64_t stages = ask ? ask->stages : s >= 0 ? e->knobs[s] : 1;
    bool can_pipeline = e->d->copy16_async && pipelinable(e, body, dot);
    if (stages > 1 && can_pipeline) e->stages = (int)stages;
    if (ask && stages > 1 && !can_pipeline) {
      fail(e, xc_error(XC_UNSUPPORTED, "%s emitter: the schedule pipelines dot %d in %d stages, which this "
                       "dialect cannot do for its loop", e->d->name, xc_tiled_dot_index(e->k, dot), ask->stages));
      return;
    }
    if (ask && ask->operands == XC_SPACE_DYNAMIC && !e->d->dyn_local_array) {
      fail(e, xc_error(XC_UNSUPPORTED, "%s emitter: the schedule stages dot %d in dynamic work-group memory, "
                       "which this dialect has not", e->d->name, xc_tiled_dot_index(e->k, dot)));
      return;
    }
    if (ask) e->dyn = ask->operands == XC_SPACE_DYNAMIC;
    /* without a schedule: fewer stages when the buffers would not fit the
     * device's work-group memory (the knob is a request, like the other
     * hints) */
    int64_t per_stage = (d->m * d->lda + d->k * d->ldb) * (int64_t)xc_dtype_size(t);
    if (!ask && e->caps && e->caps->local_memory_bytes > 0) {
      int64_t other = xc_cse_other_local_bytes(e, e->k->body, dot);
      int want = e->stages > 1 ? e->stages : 1, fit = want;
      while (fit > 1 && per_stage * fit > e->caps->local_memory_bytes - other) fit--;
      /* the requested stages (or the single buffer) in dynamic work-group
       * memory when static arrays cannot hold them: each buffer rounded to
       * 128 bytes, the static arrays beside them within the opt-in limit */
      int64_t optin = e->d->dyn_local_array ? e->caps->local_memory_optin_bytes : 0;
      int64_t dyn_per_stage = ((d->m * d->lda * (int64_t)xc_dtype_size(t) + 127) / 128 +
                               (d->k * d->ldb * (int64_t)xc_dtype_size(t) + 127) / 128) * 128;
      bool over = per_stage * fit > e->caps->local_memory_bytes - other;
      if ((fit < want || over) && optin > e->caps->local_memory_bytes) {
        int dfit = want;
        while (dfit > 1 && dyn_per_stage * dfit > optin - other) dfit--;
        if (dyn_per_stage * dfit <= optin - other && (dfit > fit || over)) fit = dfit, e->dyn = true;
      }
      if (e->stages > 1) e->stages = fit >= 2 ? fit : 0;
    }
    const xc_tiled_value_t* ops[2] = {a, bb};
    for (int o = 0; o < 2; o++) {
      vinfo_t* x = V(e, ops[o]);
      const xc_tiled_op_t* ld = ops[o]->def;
      x->raw = true;
      x->st = ST_ARRAY;
      x->pitch = o == 0 ? d->lda : d->ldb;
      x->swz_shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
      x->swz_mask = o == 0 ? d->a_swz_mask : d->b_swz_mask;
      x->bufs = e->stages > 1 ? e->stages : 1;
      x->dyn = e->dyn;
      x->chunked = affine_deg(ld->operands[1]) >= 0 && convex_mask(ld->num_operands > 2 ? ld->operands[2] : NULL);
    }
  }
}

/* Whether two plans put the elements of one [m, n] shape in the same slots. */
static bool same_layout(em_t* e, const xc_cstyle_dot_t* a, const xc_cstyle_dot_t* b) {
  if (a->m != b->m || a->n != b->n || a->slots != b->slots) return false;
  xc_cstyle_writer_t wa = {0}, wb = {0};
  e->d->dot_slot_index(&wa, a, "j");
  e->d->dot_slot_index(&wb, b, "j");
  bool same = !wa.oom && !wb.oom && !strcmp(wstr(&wa), wstr(&wb));
  free(wa.data), free(wb.data);
  return same;
}

/* Bytes of work-group memory a staged dot's operands add. */
int64_t xc_cse_staged_bytes(const xc_cstyle_dot_t* d) {
  return (d->m * d->lda + d->k * d->ldb) * (int64_t)xc_dtype_size(d->a_dtype);
}

/* Offers every dot of block b (and nested blocks) other than the mma dot to
 * the dialect with staged operands (dialect.dot_staged). A dot is taken when
 * the dialect plans it, its private accumulator or result (if any) can follow
 * its plan's layout (the first such dot of a shape adds its plan to
 * e->frags; a later one of that shape must have the same layout), and the arrays fit
 * the work-group memory next to the kernel's others (*room). */
void xc_cse_plan_staged(em_t* e, const xc_tiled_block_t* b, int64_t* room) {
  for (int i = 0; i < b->num_ops && e->num_mx < MAX_STAGED_DOTS; i++) {
    const xc_tiled_op_t* op = b->ops[i];
    if (op->opcode == XC_TOP_FOR) {
      xc_cse_plan_staged(e, op->body, room);
      continue;
    }
    if (op->opcode != XC_TOP_DOT || op == e->mma) continue;
    const xc_tiled_value_t* a = op->operands[0], *bb = op->operands[1], *acc = op->operands[2], *res = op->results[0];
    xc_dtype_t t = a->type.dtype;
    if (!(t == XC_F16 || t == XC_BF16 || t == XC_F32) || bb->type.dtype != t || res->type.dtype != XC_F32) continue;
    vinfo_t* r = V(e, res), *ai = V(e, acc);
    if (r->st != ST_ARRAY && r->st != ST_PRIVATE) continue;
    if (ai->st != ST_ARRAY && ai->st != ST_PRIVATE && ai->st != ST_VIRTUAL && ai->st != ST_SCALAR) continue;
    const xc_tiled_dot_schedule_t* want = scheduled(e, op);
    if (want && !want->mma.m) continue;
    mx_t* m = &e->mx[e->num_mx];
    memset(m, 0, sizeof *m);
    xc_cstyle_dot_t* d = &m->dot;
    int planned = ask_dot_plan(e, d, r->dims[0], r->dims[1], V(e, a)->dims[1], t, op->id);
    if (planned < 0) return;
    if (!planned) continue;
    bool needs_layout = r->st == ST_PRIVATE || ai->st == ST_PRIVATE;
    vinfo_t shape = {0};
    shape.rank = 2, shape.dims[0] = d->m, shape.dims[1] = d->n;
    const xc_cstyle_dot_t* same = xc_cse_frag_of(e, &shape);
    if (needs_layout && same && !same_layout(e, same, d)) continue;
    /* the schedule has weighed the work-group memory; the defaults take a
     * dot while it fits (a load copied straight into the plan's layout no
     * longer needs the array of its own counted among the others) */
    const xc_tiled_value_t* ops[2] = {a, bb};
    int64_t freed = 0;
    for (int o = 0; o < 2; o++)
      if (raw_operand_around(e, ops[o], op->parent) && !V(e, ops[o])->raw && V(e, ops[o])->st == ST_ARRAY)
        freed += V(e, ops[o])->n * array_elem_bytes(e, ops[o]->type.dtype);
    if (!want && xc_cse_staged_bytes(d) > *room + freed) continue;
    *room += freed - xc_cse_staged_bytes(d);
    if (needs_layout && !same) e->frags[e->num_frags++] = d;
    m->op = op;
    m->regs = r->st == ST_PRIVATE;
    for (int o = 0; o < 2; o++) {
      vinfo_t* x = V(e, ops[o]);
      const xc_tiled_op_t* ld = ops[o]->def;
      if (!raw_operand_around(e, ops[o], op->parent) || x->raw) {
        m->stage[o] = true;
        continue;
      }
      /* a load used by nothing else is copied straight into the plan's layout */
      x->raw = true;
      x->st = ST_ARRAY;
      x->pitch = o == 0 ? d->lda : d->ldb;
      x->swz_shift = o == 0 ? d->a_swz_shift : d->b_swz_shift;
      x->swz_mask = o == 0 ? d->a_swz_mask : d->b_swz_mask;
      x->bufs = 1;
      x->chunked = affine_deg(ld->operands[1]) >= 0 && convex_mask(ld->num_operands > 2 ? ld->operands[2] : NULL);
    }
    e->num_mx++;
  }
}

/* ---- dots hoisted out of their K loops (C) ------------------------------------ */

/* Whether block b holds no loop but `inner`. */
static bool only_loop(const xc_tiled_block_t* b, const xc_tiled_op_t* inner) {
  for (int i = 0; i < b->num_ops; i++)
    if (b->ops[i]->opcode == XC_TOP_FOR && b->ops[i] != inner) return false;
  return true;
}

/* A dot operand the hoisted form can slice: a plain array of the compute
 * type (read in place through row pointers or copied), read by the dot only. */
static bool sliceable(em_t* e, const xc_tiled_op_t* dot, int o, const xc_tiled_block_t* body) {
  const xc_tiled_value_t* v = dot->operands[o];
  vinfo_t* x = V(e, v);
  return v->def && v->def->parent == body && x->st == ST_ARRAY && x->rank == 2 && x->uses == 1 && !x->packed && !x->in_place &&
         !xc_cse_find_pack(e, v->def) && !strcmp(vtype(e, v->type.dtype), vtype(e, dot->results[0]->type.dtype));
}

/* Dots hoisted out of their K loops (C; docs/emitter.md, "Hoisted dots").
 * A blocked dot whose K is short (a convolution's window row of a few input
 * channels: 3 taps x 3 channels for an RGB stem) takes its accumulators from
 * memory and puts them back every step of its K loops, a load and a store
 * per few multiply-adds. Where the loops (the outer one over the window's
 * rows, the inner one over K steps) start from a zero tile
 * (xc_cse_plan_zero_entry), hold nothing but the operands' loads and the
 * dot, and run a known, small number of steps, the loops fill one slice of
 * each operand's array (and row pointers) per step and the dot runs once
 * after them, its register blocks summing every step's K in order: the same
 * sums, the accumulators in registers from the first step to the last. */
#define HOIST_MAX_K 32
#define HOIST_MAX_STEPS 64
#define HOIST_MAX_BYTES (64 * 1024) /* more stack, all of a kernel's hoists together */
void xc_cse_plan_hoist(em_t* e, const xc_tiled_block_t* b) {
  for (int i = 0; i < b->num_ops; i++) {
    const xc_tiled_op_t* L = b->ops[i];
    if (L->opcode != XC_TOP_FOR || e->num_hoists == MAX_HOISTS) continue;
    /* the dot whose zero tile L carries, in L's body or its inner loop's */
    const xc_tiled_op_t* dot = NULL, *inner = NULL;
    for (int j = 0; j < L->body->num_ops && !dot; j++) {
      const xc_tiled_op_t* o = L->body->ops[j];
      if (o->opcode == XC_TOP_DOT && V(e, o->results[0])->zero_when[0] == L) dot = o;
      for (int k = 0; o->opcode == XC_TOP_FOR && k < o->body->num_ops && !dot; k++) {
        const xc_tiled_op_t* d = o->body->ops[k];
        if (d->opcode == XC_TOP_DOT && V(e, d->results[0])->zero_when[0] == L &&
            V(e, d->results[0])->zero_when[1] == o)
          dot = d, inner = o;
      }
    }
    if (!dot || dot == e->mma || !xc_cse_dot_blocked_fits(e, dot) || xc_cse_stores_in(L->body) ||
        !only_loop(L->body, inner) || (inner && !only_loop(inner->body, NULL))) {
      if (!dot) xc_cse_plan_hoist(e, L->body);
      continue;
    }
    /* the dot's result is read by the yield alone (and the inner loop's by
     * the outer yield): nothing else of the loops reads a step's sum */
    if (e->nuses[dot->results[0]->id] != 1 || (inner && (inner->num_results != 1 || e->nuses[inner->results[0]->id] != 1)))
      continue;
    const xc_tiled_block_t* body = inner ? inner->body : L->body;
    int64_t lb, st, steps = xc_cse_loop_trips(e, L, &lb, &st) * (inner ? xc_cse_loop_trips(e, inner, &lb, &st) : 1);
    vinfo_t* a = V(e, dot->operands[0]), *bv = V(e, dot->operands[1]), *r = V(e, dot->results[0]);
    if (steps < 2 || steps > HOIST_MAX_STEPS || a->dims[1] > HOIST_MAX_K || !sliceable(e, dot, 0, body) ||
        !sliceable(e, dot, 1, body) || a->dims[0] != r->dims[0] || bv->dims[0] != a->dims[1] ||
        bv->dims[1] != r->dims[1])
      continue;
    int64_t esize = dot->results[0]->type.dtype == XC_F64 ? 8 : 4;
    int64_t slice = (a->n + bv->n) * esize + (a->row_ptrs ? a->dims[0] * 8 : 0) + (bv->row_ptrs ? bv->dims[0] * 8 : 0);
    if (slice * (steps - 1) > HOIST_MAX_BYTES - e->hoist_bytes) continue; /* all hoists of the kernel together */
    e->hoist_bytes += slice * (steps - 1);
    a->hoist_n = bv->hoist_n = steps;
    e->hoists[e->num_hoists++] = (hoist_t){dot, L, body, steps};
  }
}

/* The hoist a dot, an outer K loop or a loop body belongs to (NULL args match any). */
const hoist_t* xc_cse_hoist_of(em_t* e, const xc_tiled_op_t* dot, const xc_tiled_op_t* loop,
                               const xc_tiled_block_t* body) {
  for (int i = 0; i < e->num_hoists; i++) {
    const hoist_t* h = &e->hoists[i];
    if ((dot && h->dot == dot) || (loop && h->loop == loop) || (body && h->body == body)) return h;
  }
  return NULL;
}

/* At the top of the hoisted body: the operands' names (and row pointer
 * arrays) stand for this step's slice of their arrays. */
void xc_cse_emit_hoist_slices(em_t* e, const hoist_t* h) {
  for (int o = 0; o < 2; o++) {
    const xc_tiled_value_t* v = h->dot->operands[o];
    vinfo_t* x = V(e, v);
    const char* t = vtype(e, v->type.dtype);
    L("%s* const %s = xhb_%s + xh%d * %" PRId64 ";\n", t, x->name, x->name, h->dot->id, x->n);
    if (x->row_ptrs)
      L("const %s** const xa%s = xhb_xa%s + xh%d * %" PRId64 ";\n", t, x->name, x->name, h->dot->id, x->dims[0]);
  }
}

/* After the hoisted dot's outer K loop: the dot over every step's slices. */
void xc_cse_emit_dot_hoisted(em_t* e, const hoist_t* h) {
  if (!emit_dot_blocked(e, h->dot, h)) fail(e, xc_error(XC_INTERNAL, "cstyle: a hoisted dot lost its blocking"));
}
