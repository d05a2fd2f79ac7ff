#!/usr/bin/env bash
# The demo behind `make demo`: runs real models with `xcomp run` and checks
# their outputs against the stored references with `xcomp compare`.
# Uses ../shared/models when present, else examples/*.xir that come with
# inputs and references, else a small built-in model.
# Usage: tools/demo.sh XCOMP SHARED_DIR OUT_DIR
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
if [ -d "$SHARED/models" ]; then
  for d in "$SHARED"/models/*/; do
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
    ran=$((ran + 1))
  done
fi

if [ "$ran" -eq 0 ]; then
  # examples/NAME.xir with examples/NAME/input_K.npy and examples/NAME/output_K.npy.
  for x in "$SRC"/examples/*.xir; do
    [ -f "$x" ] || continue
    name="$(basename "$x" .xir)"
    data="$SRC/examples/$name"
    [ -f "$data/input_0.npy" ] && [ -f "$data/output_0.npy" ] || continue
    echo "== $name ($x)"
    args=()
    for f in "$data"/input_*.npy; do args+=(--input "@$f"); done
    show run "$x" "${args[@]}" --output-dir "$OUT/$name"
    show compare "$OUT/$name/output_0.npy" "$data/output_0.npy" --rtol 1e-3 --atol 1e-5
    ran=$((ran + 1))
  done
fi

if [ "$ran" -eq 0 ]; then
  echo "== built-in example (no ../shared/models, no examples with data)"
  cat >"$OUT/relu.xir" <<'XIR'
xir 1
graph relu opset 23 {
  input x: f32[2,3]
  y = Relu(x)
  output y
}
XIR
  # .npy files written byte by byte: x = [[1,-2,0.5],[3,-1.5,0]], reference relu(x).
  npy() {
    local hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    local pad=$(( (64 - (10 + ${#hdr} + 1) % 64) % 64 ))
    local len; len=$(printf '%02x' $(( ${#hdr} + 1 + pad )))
    { printf '\x93NUMPY\x01\x00'; printf "\\x$len\\x00"; printf '%s%*s\n' "$hdr" "$pad" ''; printf "$2"; } >"$1"
  }
  npy "$OUT/x.npy" '\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f\x00\x00\x40\x40\x00\x00\xc0\xbf\x00\x00\x00\x00'
  npy "$OUT/ref.npy" '\x00\x00\x80\x3f\x00\x00\x00\x00\x00\x00\x00\x3f\x00\x00\x40\x40\x00\x00\x00\x00\x00\x00\x00\x00'
  show dump "$OUT/relu.xir"
  show run "$OUT/relu.xir" --input "@$OUT/x.npy" --output-dir "$OUT/relu"
  show compare "$OUT/relu/output_0.npy" "$OUT/ref.npy"
fi
echo "demo: ok"
