#!/usr/bin/env bash
# Runs `xcomp conform` on the shared ONNX backend tests and models when they
# are present next to the repository (../shared), and prints the totals.
# Failures are reported, not fatal; only a broken runner fails this step.
# Usage: tools/conformance.sh XCOMP SHARED_DIR OUT_DIR JOBS
set -euo pipefail
XCOMP="$1"
SHARED="$2"
OUT="$3"
JOBS="$4"

if [ -d "$SHARED/onnx-backend-tests" ]; then
  "$XCOMP" conform --target ref --onnx-tests "$SHARED/onnx-backend-tests" -j "$JOBS" \
    --report "$OUT/conformance-onnx.txt" >"$OUT/conformance-onnx.log"
  echo "conformance: ONNX backend tests: $(tail -1 "$OUT/conformance-onnx.txt") (report: $OUT/conformance-onnx.txt)"
else
  echo "conformance: SKIP ONNX backend tests ($SHARED/onnx-backend-tests not present)"
fi
if [ -d "$SHARED/models" ]; then
  "$XCOMP" conform --target ref --models "$SHARED/models" -j "$JOBS" \
    --report "$OUT/conformance-models.txt" >"$OUT/conformance-models.log"
  echo "conformance: models: $(tail -1 "$OUT/conformance-models.txt") (report: $OUT/conformance-models.txt)"
else
  echo "conformance: SKIP models ($SHARED/models not present)"
fi
