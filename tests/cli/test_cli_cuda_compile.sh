#!/usr/bin/env bash
# xcomp compile --target cuda:sm_90 works without a GPU (NVRTC only): the
# module holds cubin + PTX for every kernel; running it here is refused with
# the target's "unavailable" reason. Skipped (77) when NVRTC is not installed.
set -u
source "$(dirname "$0")/helpers.bash"

run_xcomp compile "$MODELS/gpt2-tiny/model.onnx" --target cuda:sm_90 -o "$TMP/g.xcm" --no-cache \
  --dump-kernels "$TMP/k"
if [ "$RC" -ne 0 ] && grep -q "nvrtc\|NVRTC" "$TMP/err" && grep -q "unavailable" "$TMP/err"; then
  echo "SKIP: NVRTC not available: $(cat "$TMP/err")"
  exit 77
fi
[ "$RC" -eq 0 ] || fail "compile for cuda:sm_90: $(cat "$TMP/err")"
grep -q "wrote .*target cuda, 17 kernels" "$TMP/out" "$TMP/err" || fail "compile output: $(cat "$TMP/out" "$TMP/err")"
[ "$(ls "$TMP/k"/*.cuda 2>/dev/null | wc -l)" -eq 17 ] || fail "expected 17 dumped CUDA sources"
grep -q "__global__" "$TMP"/k/*.cuda || fail "dumped sources are not CUDA kernels"
# The module carries cubin (ELF) for every kernel.
[ "$(grep -c $'\x7fELF' "$TMP/g.xcm")" -ge 1 ] || fail "no cubin in the module"
if ! "$XCOMP" targets | grep -q '^  cuda:'; then
  run_xcomp run "$TMP/g.xcm" --input "@$MODELS/gpt2-tiny/test_data_set_0/input_0.pb" --output-dir "$TMP/o"
  [ "$RC" -eq 1 ] && grep -q "target cuda unavailable" "$TMP/err" || fail "run without a GPU: $(cat "$TMP/err")"
fi
finish
