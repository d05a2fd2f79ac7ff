#!/usr/bin/env bash
# Node-test coverage of the GPU targets: runs `xcomp conform` on the ONNX node
# tests for cuda and for every OpenCL device that is a GPU, next to the
# reference interpreter, and prints the totals and every FAIL line. A compiled
# target passes a test only when each output matches the interpreter at its
# dtype's tolerance; shape inputs of node tests are frozen (docs/cli.md).
# Usage: tools/coverage_gpu.sh XCOMP NODE_TESTS_DIR OUT_DIR [JOBS]
set -uo pipefail
XCOMP="$1"
NODE="$2"
OUT="$3"
JOBS="${4:-8}"
mkdir -p "$OUT"
run() { # target
  local t="$1" name="${1//:/_}"
  "$XCOMP" conform --target "$t" --onnx-tests "$NODE" -j "$JOBS" --report "$OUT/node-$name.txt" \
    >"$OUT/node-$name.log" 2>&1
  echo "$t: $(tail -1 "$OUT/node-$name.txt") ($(grep -c '^PASS.*shape inputs frozen' "$OUT/node-$name.txt") passes with frozen shape inputs)"
  grep '^FAIL' "$OUT/node-$name.txt" | cut -c1-240
}
run ref
run tiled
if "$XCOMP" targets | grep -q '^  cuda:'; then run cuda; else echo "cuda: no device"; fi
"$XCOMP" targets | sed -n 's/^  \(opencl:[0-9]*\) .*(gpu,.*/\1/p' | while read -r dev; do run "$dev"; done
