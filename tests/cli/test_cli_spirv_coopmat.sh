#!/usr/bin/env bash
# Cooperative matrices in the spirv target (docs/targets/spirv.md, "Dots on
# cooperative matrices"), compiled for the nominal spirv:vk11-nvcoopmat (no
# Vulkan device needed): an f16 MatMul's dot gets the 16x16x16 f16 -> f32
# shape in its schedule and OpCooperativeMatrixMulAddNV / LoadNV / StoreNV
# in its module, which spirv-val accepts; an f32 MatMul and f16 tiles forced
# (XCOMP_KNOBS) to more fragments per subgroup than the emitter holds keep
# the generic loop; the same f16 MatMul for spirv:vk11 (no shapes) has no
# cooperative-matrix instruction; gpt2-tiny in f16 compiles with its
# projection GEMMs on cooperative matrices. Numbers are checked on a GPU that
# has them (bench/RESULTS.md); lavapipe has none. Skipped when the plugin is
# not built.
set -u
. "$(dirname "$0")/helpers.bash"

export XCOMP_CACHE_DIR="$TMP/cache"
export XCOMP_VULKAN_LIBRARY="$TMP/no-libvulkan.so.1"
run_xcomp targets
if ! grep -q '^spirv ' "$TMP/out"; then
  echo "skipped: no spirv target (the plugin is not built: it needs libvulkan-dev and spirv-tools)"
  exit 0
fi
SPIRV_VAL="$(command -v spirv-val 2>/dev/null || true)"

matmul() { # dtype file
  printf 'xir 1\ngraph mm opset 23 {\n  input a: %s[256, 512]\n  input b: %s[512, 128]\n  c: %s[256, 128] = MatMul(a, b)\n  output c\n}\n' \
    "$1" "$1" "$1" >"$2"
}
matmul f16 "$TMP/mm16.xir"
matmul f32 "$TMP/mm32.xir"

# compile TAG XIR ARCH: dumps into $TMP/TAG; sets OK
compile() {
  OK=1
  run_xcomp compile "$2" --target "spirv:$3" -o "$TMP/$1.xcm" --no-cache --dump-kernels "$TMP/$1"
  if [ "$RC" -ne 0 ]; then
    fail "compile $1 for spirv:$3 exited $RC: $(head -c 2000 "$TMP/err")"
    OK=0
  fi
}

compile coop "$TMP/mm16.xir" vk11-nvcoopmat
if [ "$OK" = 1 ]; then
  grep -q 'dot 0: mma m16n16k16 f16 -> f32, stages 1, operands shared' "$TMP"/coop/*.tiled ||
    fail "f16 MatMul: the schedule does not put the dot on 16x16x16 cooperative matrices: $(grep -A5 'schedule spirv' "$TMP"/coop/*.tiled)"
  for op in OpCooperativeMatrixMulAddNV OpCooperativeMatrixLoadNV OpCooperativeMatrixStoreNV \
    'OpCapability CooperativeMatrixNV' 'OpExtension "SPV_NV_cooperative_matrix"' 'BuiltIn SubgroupId'; do
    grep -q "$op" "$TMP"/coop/*.spvasm || fail "f16 MatMul for vk11-nvcoopmat: no '$op' in the module"
  done
  if [ -n "$SPIRV_VAL" ]; then
    for f in "$TMP"/coop/*.spv; do
      "$SPIRV_VAL" --target-env vulkan1.1 "$f" >"$TMP/val" 2>&1 || fail "spirv-val rejects $f: $(head -c 2000 "$TMP/val")"
    done
  fi
fi

compile f32 "$TMP/mm32.xir" vk11-nvcoopmat
if [ "$OK" = 1 ]; then
  grep -q 'dot 0: generic' "$TMP"/f32/*.tiled || fail "f32 MatMul: the dot is not generic"
  ! grep -q 'CooperativeMatrix' "$TMP"/f32/*.spvasm || fail "f32 MatMul: cooperative-matrix code in the module"
fi

compile plain "$TMP/mm16.xir" vk11
if [ "$OK" = 1 ]; then
  ! grep -q 'CooperativeMatrix' "$TMP"/plain/*.spvasm || fail "spirv:vk11 (no shapes): cooperative-matrix code"
fi

# 128 x 128 tiles on one subgroup are 64 fragments, more than a subgroup holds.
XCOMP_KNOBS=BLOCK_M_p0=128,BLOCK_N_p0=128,BLOCK_K_p0=32,num_threads=32 compile forced "$TMP/mm16.xir" vk11-nvcoopmat
if [ "$OK" = 1 ]; then
  grep -q 'BLOCK_M_p0 = 128, BLOCK_N_p0 = 128' "$TMP"/forced/*.tiled || fail "XCOMP_KNOBS were not kept"
  grep -q 'dot 0: generic' "$TMP"/forced/*.tiled || fail "64 fragments per subgroup: the dot is not generic"
fi

GPT2="$SHARED/models/gpt2-tiny"
[ -f "$GPT2/model.onnx" ] || GPT2="$MODELS/gpt2-tiny"
run_xcomp compile "$GPT2/model.onnx" --precision f16 --target spirv:vk11-nvcoopmat -o "$TMP/gpt2.xcm" --no-cache \
  --dump-kernels "$TMP/gpt2"
if [ "$RC" -ne 0 ]; then
  fail "compile gpt2-tiny --precision f16 for vk11-nvcoopmat exited $RC: $(head -c 2000 "$TMP/err")"
else
  n="$(grep -l 'mma m16n16k16' "$TMP"/gpt2/*.tiled 2>/dev/null | wc -l)"
  [ "$n" -ge 4 ] || fail "gpt2-tiny f16: only $n kernels have dots on cooperative matrices"
fi

finish
