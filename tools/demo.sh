#!/usr/bin/env bash
# The demo behind `make demo`: runs real models with `xcomp run` on the
# reference interpreter and compiled for the cpu target (`xcomp compile`, then
# `xcomp run` of the module), and checks every output against the stored
# references with `xcomp compare`.
# Uses the real exported models in tests/models (copies of ../shared/models),
# then examples/*.xir that come with inputs and references.
# Usage: tools/demo.sh XCOMP SHARED_DIR OUT_DIR (SHARED_DIR is unused now that the
# models come with the repository; kept for the Makefile interface)
set -euo pipefail
XCOMP="$1"
SHARED="$2"
OUT="$3"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"

show() {
  echo "\$ xcomp $*"
  "$XCOMP" "$@"
}

ran=0
MODELS="$SRC/tests/models"
if [ -d "$MODELS" ]; then
  for d in "$MODELS"/*/; do
    d="${d%/}"
    m="$(basename "$d")"
    data="$d/test_data_set_0"
    [ -f "$d/model.onnx" ] && [ -f "$data/input_0.pb" ] || continue
    echo "== $m ($d)"
    args=()
    for ((k = 0; ; k++)); do
      [ -f "$data/input_$k.pb" ] || break
      args+=(--input "@$data/input_$k.pb")
    done
    show run "$d/model.onnx" "${args[@]}" --output-dir "$OUT/$m"
    for ((k = 0; ; k++)); do
      [ -f "$data/output_$k.pb" ] || break
      show compare "$OUT/$m/output_$k.npy" "$data/output_$k.pb" --rtol 1e-3 --atol 1e-5 --rel-l2 1e-5
    done
    # The compiler's job: a compiled module for the CPU (generated C built by
    # the system compiler), run and checked the same way.
    show compile "$d/model.onnx" --target cpu -o "$OUT/$m.xcm"
    show run "$OUT/$m.xcm" "${args[@]}" --output-dir "$OUT/$m-cpu"
    for ((k = 0; ; k++)); do
      [ -f "$data/output_$k.pb" ] || break
      show compare "$OUT/$m-cpu/output_$k.npy" "$data/output_$k.pb" --rtol 1e-3 --atol 1e-5 --rel-l2 1e-5
    done
    ran=$((ran + 1))
  done
fi

# The .xir examples: examples/NAME.xir with NAME.in0.npy and NAME.expected0.npy
# (expected outputs computed independently with numpy by gen_expected.py).
for x in "$SRC"/examples/*.xir; do
  name="$(basename "$x" .xir)"
  [ -f "$SRC/examples/$name.in0.npy" ] && [ -f "$SRC/examples/$name.expected0.npy" ] || continue
  echo "== $name ($x)"
  show run "$x" --input "@$SRC/examples/$name.in0.npy" --output-dir "$OUT/$name"
  show compare "$OUT/$name/output_0.npy" "$SRC/examples/$name.expected0.npy" --rtol 1e-3 --atol 1e-5
  ran=$((ran + 1))
done

# What the optimizer makes of a transformer: node counts per stage, kernel groups.
if [ -f "$MODELS/gpt2-tiny/model.onnx" ]; then
  echo "== gpt2-tiny through the pass pipeline and the fusion planner"
  echo "\$ xcomp dump $MODELS/gpt2-tiny/model.onnx --stats"
  "$XCOMP" dump "$MODELS/gpt2-tiny/model.onnx" --stats | grep -E '^(==|nodes|groups|bytes)'
fi

[ "$ran" -gt 0 ] || { echo "demo: no model ran" >&2; exit 1; }
echo "demo: $ran models ran and matched their references"
