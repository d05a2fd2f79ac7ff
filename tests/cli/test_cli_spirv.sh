#!/usr/bin/env bash
# The spirv target (docs/targets/spirv.md) through the CLI, on whatever Vulkan
# device the loader lists (lavapipe in CI): `xcomp targets` lists spirv:0; the
# mlp model of ../shared/models compiles with --dump-kernels (per kernel a
# .spv that spirv-val accepts for Vulkan 1.1, a .spvasm with a GLCompute entry
# point and OpLine source locations, a .tiled), runs, and matches the stored
# ONNX Runtime outputs; a module compiled for the nominal spirv:vk11 without
# any Vulkan driver runs on the device too; an unknown architecture fails
# with one error line naming the known ones; `xcomp dump --stage source
# --target spirv:vk11` prints SPIR-V assembly without a device.
# Skipped (exit 0, "skipped: ...") when the plugin is not built or no Vulkan
# device is available. A few seconds on lavapipe.
set -u
. "$(dirname "$0")/helpers.bash"

export XCOMP_CACHE_DIR="$TMP/cache"
# A loader that does not exist: Vulkan is unavailable to that process.
NO_VULKAN="$TMP/no-libvulkan.so.1"

need_spirv_device
grep -q '^  spirv:0 ' "$TMP/out" || fail "xcomp targets does not list spirv:0: $(cat "$TMP/out")"
grep '^spirv ' "$TMP/out" | grep -q '\[plugin .*xcomp_spirv\.so\]' ||
  fail "spirv is not listed as the installed plugin: $(grep '^spirv ' "$TMP/out")"

# The shared models live beside the repository; the repository keeps a copy of mlp.
MLP="$SHARED/models/mlp"
[ -f "$MLP/model.onnx" ] || MLP="$MODELS/mlp"
DATA="$MLP/test_data_set_0"

# ---- compile with --dump-kernels -------------------------------------------------
run_xcomp compile "$MLP/model.onnx" --target spirv -o "$TMP/mlp.xcm" --no-cache --dump-kernels "$TMP/k"
if [ "$RC" -ne 0 ]; then
  fail "compile mlp for spirv exited $RC: $(head -c 2000 "$TMP/err")"
  finish
fi
n="$(sed -n 's/.*target spirv, \([0-9]*\) kernels.*/\1/p' "$TMP/out" | head -1)"
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "compile: no kernel count in: $(cat "$TMP/out")"
[ "$(head -c 8 "$TMP/mlp.xcm")" = "XCOMPMOD" ] || fail "mlp.xcm lacks the module magic"
tiled=("$TMP"/k/*.tiled)
[ -e "${tiled[0]}" ] || tiled=()
[ "${#tiled[@]}" -eq "${n:-0}" ] || fail "expected $n dumped .tiled files, found ${#tiled[@]}"

SPIRV_VAL="$(command -v spirv-val 2>/dev/null || true)"
[ -n "$SPIRV_VAL" ] || echo "note: spirv-val not installed: the dumped modules were not validated here"
for t in "${tiled[@]}"; do
  base="${t%.tiled}"
  name="$(basename "$base")"
  if [ ! -s "$base.spv" ] || [ ! -s "$base.spvasm" ]; then
    fail "kernel $name: missing $name.spv or $name.spvasm"
    continue
  fi
  # a SPIR-V binary starts with the magic number 0x07230203 (little-endian)
  [ "$(head -c 4 "$base.spv" | od -An -tx1 | tr -d ' \n')" = "03022307" ] || fail "$name.spv is not SPIR-V"
  if [ -n "$SPIRV_VAL" ] && ! "$SPIRV_VAL" --target-env vulkan1.1 "$base.spv" >"$TMP/val" 2>&1; then
    fail "spirv-val rejects $name.spv: $(head -c 2000 "$TMP/val")"
  fi
  head -1 "$base.spvasm" | grep -q '^; xcomp-spirv local_size=' || fail "$name.spvasm lacks the '; xcomp-spirv' line"
  grep -q 'OpEntryPoint GLCompute ' "$base.spvasm" || fail "$name.spvasm has no GLCompute entry point"
  grep -q 'OpLine ' "$base.spvasm" || fail "$name.spvasm has no OpLine"
  grep -q 'OpString "' "$base.spvasm" || fail "$name.spvasm has no OpString naming the graph nodes"
done

# ---- run and compare with the stored (ONNX Runtime) outputs ------------------------
inputs=()
for f in "$DATA"/input_*.pb; do inputs+=(--input "@$f"); done
run_xcomp run "$TMP/mlp.xcm" "${inputs[@]}" --output-dir "$TMP/run"
[ "$RC" -eq 0 ] || fail "run mlp.xcm exited $RC: $(head -c 2000 "$TMP/err")"
outputs=0
for ref in "$DATA"/output_*.pb; do
  i="${ref##*/output_}"
  i="${i%.pb}"
  outputs=$((outputs + 1))
  expect_ok compare "$TMP/run/output_$i.npy" "$ref" --rtol 1e-4 --atol 1e-5
done
[ "$outputs" -gt 0 ] || fail "no stored outputs in $DATA"

# ---- the nominal architecture: compiled without Vulkan, run on the device -----------
XCOMP_VULKAN_LIBRARY="$NO_VULKAN" run_xcomp compile "$MLP/model.onnx" --target spirv:vk11 -o "$TMP/vk11.xcm" --no-cache
if [ "$RC" -ne 0 ]; then
  fail "compile for spirv:vk11 without Vulkan exited $RC: $(head -c 2000 "$TMP/err")"
else
  run_xcomp run "$TMP/vk11.xcm" "${inputs[@]}" --output-dir "$TMP/vk11"
  [ "$RC" -eq 0 ] || fail "run vk11.xcm exited $RC: $(head -c 2000 "$TMP/err")"
  expect_ok compare "$TMP/vk11/output_0.npy" "$DATA/output_0.pb" --rtol 1e-4 --atol 1e-5
fi

# ---- an unknown architecture: one error line naming the known ones ------------------
if expect_error 1 "known: vk11" compile "$MLP/model.onnx" --target spirv:vk99 -o "$TMP/bad.xcm" --no-cache; then
  grep -q "vk99" "$TMP/err" || fail "the error does not name vk99: $(cat "$TMP/err")"
fi
[ -e "$TMP/bad.xcm" ] && fail "a failed compile wrote bad.xcm"

# ---- the emitted source without a device --------------------------------------------
XCOMP_VULKAN_LIBRARY="$NO_VULKAN" run_xcomp targets
sed -n '/^spirv /,/^[^ ]/p' "$TMP/out" | grep -q '^  unavailable:' ||
  fail "XCOMP_VULKAN_LIBRARY=$NO_VULKAN did not make spirv unavailable: $(cat "$TMP/out")"
XCOMP_VULKAN_LIBRARY="$NO_VULKAN" run_xcomp dump "$MLP/model.onnx" --stage source --target spirv:vk11
if [ "$RC" -ne 0 ]; then
  fail "dump --stage source --target spirv:vk11 without Vulkan exited $RC: $(head -c 2000 "$TMP/err")"
else
  [ "$(grep -c '^; xcomp-spirv local_size=' "$TMP/out")" -eq "${n:-0}" ] ||
    fail "dump --stage source: expected $n SPIR-V modules: $(head -c 2000 "$TMP/out")"
  grep -q 'OpEntryPoint GLCompute ' "$TMP/out" || fail "dump --stage source printed no GLCompute entry point"
  grep -q 'OpCapability Shader' "$TMP/out" || fail "dump --stage source printed no OpCapability Shader"
fi

# ---- vector loads into work-group memory (XCOMP_SPIRV_VECTOR=4) ---------------------
GPT2="$SHARED/models/gpt2-tiny"
[ -f "$GPT2/model.onnx" ] || GPT2="$MODELS/gpt2-tiny"
XCOMP_SPIRV_VECTOR=4 run_xcomp compile "$GPT2/model.onnx" --target spirv -o "$TMP/gpt2v.xcm" --no-cache \
  --dump-kernels "$TMP/gv"
if [ "$RC" -ne 0 ]; then
  fail "compile gpt2-tiny with XCOMP_SPIRV_VECTOR=4 exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q 'threads [0-9]*, vector 4' "$TMP"/gv/*.tiled || fail "XCOMP_SPIRV_VECTOR=4: no schedule with vector 4"
  grep -q 'OpLoad %v4' "$TMP"/gv/*.spvasm || fail "XCOMP_SPIRV_VECTOR=4: no vector load in any kernel"
  run_xcomp run "$TMP/gpt2v.xcm" --input "@$GPT2/test_data_set_0/input_0.pb" --output-dir "$TMP/gv-out"
  if [ "$RC" -ne 0 ]; then
    fail "run gpt2v.xcm exited $RC: $(head -c 2000 "$TMP/err")"
  else
    expect_ok compare "$TMP/gv-out/output_0.npy" "$GPT2/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-4
  fi
fi

finish
