#!/usr/bin/env bash
# Runs `xcomp conform` on the ONNX backend tests when they are present next to
# the repository (../shared) and on the real models in tests/models, and
# prints the totals.
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
MODELS="$(cd "$(dirname "$0")/.." && pwd)/tests/models"
if [ -d "$MODELS" ]; then
  "$XCOMP" conform --target ref --models "$MODELS" -j "$JOBS" \
    --report "$OUT/conformance-models.txt" >"$OUT/conformance-models.log"
  echo "conformance: models: $(tail -1 "$OUT/conformance-models.txt") (report: $OUT/conformance-models.txt)"
else
  echo "conformance: SKIP models ($MODELS not present)"
fi
