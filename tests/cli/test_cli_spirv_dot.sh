#!/usr/bin/env bash
# The spirv target's register-blocked generic dot (docs/targets/spirv.md,
# "Dots"): an f32 Gemm + bias + Relu whose tiles (XCOMP_KNOBS) put the dot's
# result in each of the two blocked forms -- columns (BLOCK_N a multiple of the
# work-items: 16x128 tiles, 64 work-items, 32 slots) and rows (the work-items a
# multiple of BLOCK_N: 32x16 tiles, 256 work-items, 2 slots) -- is emitted with
# one accumulator per slot (OpName dot_vN_sJ) and the A rows read as 4-element
# vectors, and agrees with the reference interpreter (conform --localize);
# 128x128 tiles on 64 work-items (256 slots, over the limit of 128) keep the
# per-element loop and agree too. Skipped when the plugin is not built or no
# Vulkan device is available. A few seconds on lavapipe.
set -u
. "$(dirname "$0")/helpers.bash"

export XCOMP_CACHE_DIR="$TMP/cache"
need_spirv_device

# Sizes that are not multiples of the tiles: masked loads and stores at the edges.
printf 'xir 1\ngraph g opset 23 {\n  input a: f32[100, 72]\n  input b: f32[72, 130]\n  input bias: f32[130]\n  c: f32[100, 130] = Gemm(a, b, bias)\n  d: f32[100, 130] = Relu(c)\n  output d\n}\n' \
  >"$TMP/gemm.xir"

# check TAG KNOBS SLOTS: SLOTS accumulators (0: the per-element loop), and the
# outputs agree with the reference interpreter.
check() {
  local tag="$1" knobs="$2" slots="$3"
  XCOMP_KNOBS="$knobs" run_xcomp compile "$TMP/gemm.xir" --target spirv -o "$TMP/$tag.xcm" --no-cache \
    --dump-kernels "$TMP/$tag"
  if [ "$RC" -ne 0 ]; then
    fail "$tag: compile with XCOMP_KNOBS=$knobs exited $RC: $(head -c 2000 "$TMP/err")"
    return
  fi
  local k="${knobs//,/, }"
  grep -q "knobs ${k//=/ = }" "$TMP"/"$tag"/*.tiled || fail "$tag: XCOMP_KNOBS=$knobs not kept: $(grep knobs "$TMP"/"$tag"/*.tiled)"
  local names vecs
  names="$(cat "$TMP"/"$tag"/*.spvasm | grep -c 'OpName %dot_v[0-9]*_s[0-9]* ')"
  vecs="$(cat "$TMP"/"$tag"/*.spvasm | grep -c 'OpLoad %v4float ')"
  [ "$names" -eq "$slots" ] || fail "$tag: $names dot accumulators in the module, expected $slots"
  if [ "$slots" -gt 0 ]; then
    [ "$vecs" -gt 0 ] || fail "$tag: the blocked dot reads no A row as a vector"
  else
    [ "$vecs" -eq 0 ] || fail "$tag: vector reads of A without the blocked dot"
  fi
  XCOMP_KNOBS="$knobs" run_xcomp conform --localize "$TMP/gemm.xir" --target spirv --no-cache
  [ "$RC" -eq 0 ] || fail "$tag: the kernel disagrees with the reference interpreter: $(tail -5 "$TMP/out")"
  grep -q '^no divergence' "$TMP/out" || fail "$tag: conform --localize did not report agreement: $(tail -3 "$TMP/out")"
}

check columns BLOCK_M_p0=16,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=64 32
check rows BLOCK_M_p0=32,BLOCK_N_p0=16,BLOCK_K_p0=8,num_threads=256 2
check element BLOCK_M_p0=128,BLOCK_N_p0=128,BLOCK_K_p0=16,num_threads=64 0

finish
