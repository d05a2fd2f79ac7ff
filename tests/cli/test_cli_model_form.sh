#!/usr/bin/env bash
# The design card's form: `xcomp MODEL --target T [--input ...]` and
# `xcomp --target T MODEL ...` compile through the cache and run like
# `xcomp run`, on cpu and on opencl (PoCL) when a device is present; the
# outputs match the stored ONNX Runtime references. `xcomp --help` shows
# this form first, and the subcommands keep working.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

check_model() { # TARGET MODEL_NAME FORM(model-first|target-first)
  local target="$1" name="$2" form="$3" d="$MODELS/$2" out="$TMP/$1-$2-$3"
  if [ "$form" = model-first ]; then
    run_xcomp "$d/model.onnx" --target "$target" --input "@$d/test_data_set_0/input_0.pb" --output-dir "$out"
  else
    run_xcomp --target "$target" "$d/model.onnx" --input "@$d/test_data_set_0/input_0.pb" --output-dir "$out"
  fi
  if [ "$RC" -ne 0 ]; then
    fail "xcomp ($form) $name --target $target exited $RC: $(head -c 2000 "$TMP/err")"
    return
  fi
  grep -q "^output 0 " "$TMP/out" || fail "xcomp ($form) $name: no output line: $(cat "$TMP/out")"
  grep -q "compiling kernel" "$TMP/err" || [ "$form" = target-first ] ||
    fail "xcomp ($form) $name --target $target did not compile: $(head -c 500 "$TMP/err")"
  expect_ok compare "$out/output_0.npy" "$d/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5 --rel-l2 1e-5
}

check_model cpu gpt2-tiny model-first
check_model cpu gpt2-tiny target-first   # the second compile is a cache hit: nothing compiled
grep -q "compiling kernel" "$TMP/err" && fail "the second compile of gpt2-tiny for cpu missed the cache"
check_model cpu mlp model-first

# Without --target the form compiles for cpu.
XCOMP_CACHE_DIR="$TMP/cache-default" run_xcomp "$MODELS/mlp/model.onnx" \
  --input "@$MODELS/mlp/test_data_set_0/input_0.pb" --output-dir "$TMP/default"
[ "$RC" -eq 0 ] && grep -q "(cpu)" "$TMP/err" || fail "xcomp MODEL without --target did not compile for cpu: $(cat "$TMP/err")"

if "$XCOMP" targets 2>/dev/null | grep -q '^  opencl:0'; then
  check_model opencl mlp target-first
  check_model opencl cnn model-first
else
  echo "note: no OpenCL device; the opencl part was not run"
fi

# A compiled module runs in this form too.
run_xcomp compile "$MODELS/mlp/model.onnx" -o "$TMP/mlp.xcm"
run_xcomp "$TMP/mlp.xcm" --input "@$MODELS/mlp/test_data_set_0/input_0.pb" --output-dir "$TMP/xcm"
[ "$RC" -eq 0 ] || fail "xcomp mlp.xcm exited $RC: $(head -c 2000 "$TMP/err")"

# Errors keep the CLI's conventions.
expect_error 1 "missing.onnx" "$TMP/missing.onnx" --target cpu
expect_error 1 "unknown option '--frobnicate'" --frobnicate
expect_error 1 "unknown command 'frobnicate'" frobnicate
expect_error 1 "nosuch" "$MODELS/mlp/model.onnx" --target nosuch --input "@$MODELS/mlp/test_data_set_0/input_0.pb"
expect_error 1 "missing input" --target cpu "$MODELS/mlp/model.onnx"

# The overview shows this form first; every subcommand is still there.
if expect_ok --help; then
  head -1 "$TMP/out" | grep -q '^usage: xcomp MODEL \[--target T\]' ||
    fail "xcomp --help does not start with the MODEL form: $(head -3 "$TMP/out")"
  for cmd in run compile bench dump compare conform ops targets check-passes; do
    grep -q "^  $cmd " "$TMP/out" || fail "xcomp --help does not list '$cmd'"
  done
fi
expect_ok "$MODELS/mlp/model.onnx" --help
expect_ok targets
expect_ok help bench

finish
