#!/usr/bin/env bash
# The spirv target's register-blocked generic dot (docs/targets/spirv.md,
# "Dots"): an f32 Gemm + bias + Relu whose tiles (XCOMP_KNOBS) put the dot's
# result in each of the two blocked forms of the default slot layout --
# columns (BLOCK_N a multiple of the work-items: 16x128 tiles, 64 work-items,
# 32 slots) and rows (the work-items a multiple of BLOCK_N: 32x16 tiles, 256
# work-items, 2 slots) -- is emitted with one accumulator per slot (OpName
# dot_vN_sJ) and the A rows read as 4-element vectors, and agrees with the
# reference interpreter (conform --localize); 128x128 tiles on 64 work-items
# (256 slots, over the limit of 128) keep the per-element loop and agree too.
# With XCOMP_SPIRV_VECTOR=4 the result takes the chunked slot layout (2-D
# register tiles of rows x 4 columns): 32x32 tiles on 128 work-items (8
# slots: 2 rows x 4 columns, 8 work-items a row), 16x128 on 64 (32 slots: 8
# rows x 4 columns) and 16x128 on 32 (64 slots: all 16 rows, 32 work-items a
# row); each reads B four columns at a time as a vector from work-group
# memory and agrees with the interpreter, through the epilogue (bias, Relu,
# masked store at the ragged edges) that reads the accumulators in the same
# layout; so does the same Gemm in f16 (f16 operands, an f32 accumulator).
# A one-trial tune records the vector-4 variant of the default schedule.
# Skipped when the plugin is not built or no Vulkan device is
# available. A few seconds on lavapipe.
set -u
. "$(dirname "$0")/helpers.bash"

export XCOMP_CACHE_DIR="$TMP/cache"
# The f16 case checks the generic blocked dot: no cooperative matrices.
export XCOMP_SPIRV_COOPMAT=0
need_spirv_device

# Sizes that are not multiples of the tiles: masked loads and stores at the edges.
printf 'xir 1\ngraph g opset 23 {\n  input a: f32[100, 72]\n  input b: f32[72, 130]\n  input bias: f32[130]\n  c: f32[100, 130] = Gemm(a, b, bias)\n  d: f32[100, 130] = Relu(c)\n  output d\n}\n' \
  >"$TMP/gemm.xir"
sed 's/f32/f16/g' "$TMP/gemm.xir" >"$TMP/gemm16.xir"

# Vector reads from the work-group copy of value %ID in the modules of TAG.
wg_vector_reads() {
  cat "$TMP"/"$1"/*.spvasm | grep -c "OpAccessChain %_ptr_Workgroup_v4float %wg_v$2 "
}

# check TAG KNOBS SLOTS [VECTOR [MODEL]]: SLOTS accumulators (0: the
# per-element loop), A read as vectors (and with VECTOR 4, B too), and the
# outputs agree with the reference interpreter.
check() {
  local tag="$1" knobs="$2" slots="$3" vector="${4:-}" model="$TMP/${5:-gemm}.xir"
  XCOMP_SPIRV_VECTOR="$vector" XCOMP_KNOBS="$knobs" run_xcomp compile "$model" --target spirv \
    -o "$TMP/$tag.xcm" --no-cache --dump-kernels "$TMP/$tag"
  if [ "$RC" -ne 0 ]; then
    fail "$tag: compile with XCOMP_KNOBS=$knobs exited $RC: $(head -c 2000 "$TMP/err")"
    return
  fi
  local k="${knobs//,/, }"
  grep -q "knobs ${k//=/ = }" "$TMP"/"$tag"/*.tiled || fail "$tag: XCOMP_KNOBS=$knobs not kept: $(grep knobs "$TMP"/"$tag"/*.tiled)"
  grep -q "vector ${vector:-1}," "$TMP"/"$tag"/*.tiled || fail "$tag: the schedule's vector is not ${vector:-1}"
  # %R = dot %A, %B, %ACC
  local ids a b names avecs bvecs
  ids="$(sed -n 's/^ *%[0-9]* = dot %\([0-9]*\), %\([0-9]*\),.*/\1 \2/p' "$TMP"/"$tag"/*.tiled)"
  read -r a b <<<"$ids"
  [ -n "$b" ] || { fail "$tag: no dot in the tiled kernel"; return; }
  names="$(cat "$TMP"/"$tag"/*.spvasm | grep -c 'OpName %dot_v[0-9]*_s[0-9]* ')"
  avecs="$(wg_vector_reads "$tag" "$a")"
  bvecs="$(wg_vector_reads "$tag" "$b")"
  [ "$names" -eq "$slots" ] || fail "$tag: $names dot accumulators in the module, expected $slots"
  if [ "$slots" -gt 0 ]; then
    [ "$avecs" -gt 0 ] || fail "$tag: the blocked dot reads no A row as a vector"
  else
    [ "$avecs" -eq 0 ] || fail "$tag: vector reads of A without the blocked dot"
  fi
  if [ "$vector" = 4 ] && [ "$slots" -gt 0 ]; then
    [ "$bvecs" -gt 0 ] || fail "$tag: the chunked blocked dot reads no 4 columns of B as a vector"
  else
    [ "$bvecs" -eq 0 ] || fail "$tag: vector reads of B outside the chunked layout"
  fi
  XCOMP_SPIRV_VECTOR="$vector" XCOMP_KNOBS="$knobs" run_xcomp conform --localize "$model" --target spirv --no-cache
  [ "$RC" -eq 0 ] || fail "$tag: the kernel disagrees with the reference interpreter: $(tail -5 "$TMP/out")"
  grep -q '^no divergence' "$TMP/out" || fail "$tag: conform --localize did not report agreement: $(tail -3 "$TMP/out")"
}

check columns BLOCK_M_p0=16,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=64 32
check rows BLOCK_M_p0=32,BLOCK_N_p0=16,BLOCK_K_p0=8,num_threads=256 2
check element BLOCK_M_p0=128,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=64 0
check chunked-2d BLOCK_M_p0=32,BLOCK_N_p0=32,BLOCK_K_p0=16,num_threads=128 8 4
check chunked-wide BLOCK_M_p0=16,BLOCK_N_p0=128,BLOCK_K_p0=8,num_threads=64 32 4
check chunked-row BLOCK_M_p0=16,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=32 64 4
check chunked-element BLOCK_M_p0=128,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=64 0 4
check chunked-f16 BLOCK_M_p0=32,BLOCK_N_p0=32,BLOCK_K_p0=16,num_threads=128 8 4 gemm16

# The tuner measures the default's vector-4 variant in its first round, and
# the spirv scheduler follows a record's vector (it used to reset it to 1,
# so no tuned schedule could have the 2-D register tiles): a one-trial tune
# records a valid vector-4 schedule, with batches of one too.
unset XCOMP_KNOBS
run_xcomp tune "$TMP/gemm.xir" --target spirv --trials 1 --batch 1 --db "$TMP/t.db" --plain
[ "$RC" -eq 0 ] || fail "tune: exit $RC: $(tail -3 "$TMP/err")"
run_xcomp tune --db "$TMP/t.db" --export "$TMP/t.jsonl"
grep '"kind":"record"' "$TMP/t.jsonl" | grep 'vector 4,' | grep -q '"valid":true' ||
  fail "the one-trial tune recorded no valid vector-4 schedule: $(grep -o 'vector [0-9]*' "$TMP/t.jsonl" | tr '\n' ' ')"

finish
