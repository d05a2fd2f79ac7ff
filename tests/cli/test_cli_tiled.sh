#!/usr/bin/env bash
# xcomp conform --target tiled: the real models lowered to tiled kernels and
# run with the tiled-IR interpreter match their stored outputs; an op without
# a lowering is reported as skipped, not failed.
set -u
. "$(dirname "$0")/helpers.bash"

if expect_ok conform --target tiled --models "$MODELS"; then
  grep -q "4 passed, 0 failed, 0 skipped" "$TMP/out" || fail "tiled models: $(tail -3 "$TMP/out")"
fi
mkdir -p "$TMP/cases"
if [ -d "$XCOMP_SRC/../shared/onnx-backend-tests/node/test_nonzero_example" ]; then
  cp -r "$XCOMP_SRC/../shared/onnx-backend-tests/node/test_nonzero_example" "$TMP/cases/"
  cp -r "$XCOMP_SRC/../shared/onnx-backend-tests/node/test_relu" "$TMP/cases/"
  if expect_ok conform --target tiled --onnx-tests "$TMP/cases"; then
    grep -q "1 passed, 0 failed, 1 skipped" "$TMP/out" || fail "tiled node tests: $(tail -3 "$TMP/out")"
    grep -q "op NonZero" "$TMP/out" || fail "the skip does not name NonZero: $(cat "$TMP/out")"
  fi
fi
finish
