#!/usr/bin/env bash
# Schedules (docs/tiled-ir.md, "Schedules"): every shared model (../shared/models,
# else tests/models) is lowered, scheduled and emitted for cpu, cuda:sm_90,
# rocm:gfx90a and opencl (when a device is present) with no failure at
# emission (`xcomp dump --stage source`), and every kernel carries the
# schedule record of its target; the record reaches --dump-kernels and the
# .xcm; the C-family records agree with what the source says (threads,
# matrix instructions); a knob override outside the device's limits is an
# error naming the kernel, never a silently changed choice.
set -u
source "$(dirname "$0")/helpers.bash"

MODEL_DIR="$SHARED/models"
[ -d "$MODEL_DIR" ] || MODEL_DIR="$MODELS"
targets="cpu cuda:sm_90 rocm:gfx90a"
"$XCOMP" targets 2>/dev/null | grep -q "^  opencl:" && targets="$targets opencl"

checked=0
for dir in "$MODEL_DIR"/*/; do
  model="$(basename "$dir")"
  [ -f "$dir/model.onnx" ] || continue
  for t in $targets; do
    run_xcomp dump "$dir/model.onnx" --stage source --target "$t"
    if [ "$RC" -ne 0 ]; then
      fail "$model on $t: $(head -c 600 "$TMP/err")"
      continue
    fi
    kernels=$(grep -c '^== kernel ' "$TMP/out")
    records=$(grep -c "^  schedule ${t%%:*} {" "$TMP/out")
    sources=$(grep -c '^-- ' "$TMP/out")
    [ "$kernels" -gt 0 ] && [ "$kernels" -eq "$records" ] && [ "$kernels" -eq "$sources" ] ||
      fail "$model on $t: $kernels kernels, $records schedule records, $sources sources"
    checked=$((checked + 1))
  done
done
[ "$checked" -gt 0 ] || fail "no model was checked"
echo "schedules: $checked model/target pairs lowered, scheduled and emitted"

# The record follows the kernel: --dump-kernels' .tiled files and the module.
rm -rf "$TMP/k"
run_xcomp compile "$MODELS/gpt2-tiny/model.onnx" --target cuda:sm_90 --precision bf16 --no-cache \
  --no-vendor-blas -o "$TMP/g.xcm" --dump-kernels "$TMP/k"
if [ "$RC" -ne 0 ] && ! grep -q "NVRTC\|nvrtc" "$TMP/err"; then
  fail "compile gpt2-tiny for cuda:sm_90: $(cat "$TMP/err")"
fi
if [ -f "$TMP/g.xcm" ]; then
  for f in "$TMP"/k/*.tiled; do
    grep -q "^  schedule cuda {" "$f" || fail "$(basename "$f"): no schedule record"
  done
  # a GEMM on tensor cores: the record names the instruction the source issues
  gemm="$(grep -l 'dot 0: mma m16n8k16 bf16 -> f32' "$TMP"/k/*gemm*.tiled | head -1)"
  if [ -z "$gemm" ]; then
    fail "no gpt2-tiny bf16 GEMM kernel is scheduled on mma m16n8k16"
  else
    grep -q 'mma.m16n8k16 bf16' "${gemm%.tiled}.cuda" || fail "$(basename "$gemm"): the source issues no mma.m16n8k16"
    threads="$(sed -n 's/^    threads \([0-9]*\),.*/\1/p' "$gemm")"
    grep -q "work-items per program: $threads\$" "${gemm%.tiled}.cuda" ||
      fail "$(basename "$gemm"): the source's threads differ from the record's $threads"
  fi
  n_mod="$(grep -a -c '^  schedule cuda {' "$TMP/g.xcm")"
  n_k="$(ls "$TMP"/k/*.tiled | wc -l)"
  [ "$n_mod" -eq "$n_k" ] || fail "the module holds $n_mod schedule records for $n_k kernels"
fi

# Overridden knobs are kept as given (the scheduler completes the rest).
rm -rf "$TMP/k2"
XCOMP_KNOBS=BLOCK_K_p0=16 run_xcomp compile "$MODELS/gpt2-tiny/model.onnx" --target cuda:sm_90 --precision bf16 \
  --no-cache --no-vendor-blas -o "$TMP/g2.xcm" --dump-kernels "$TMP/k2"
if [ "$RC" -eq 0 ]; then
  n_gemm="$(ls "$TMP"/k2/*gemm*.tiled | wc -l)"
  n_kept="$(grep -l '^    knobs .*BLOCK_K_p0 = 16' "$TMP"/k2/*gemm*.tiled | wc -l)"
  [ "$n_gemm" -gt 0 ] && [ "$n_kept" -eq "$n_gemm" ] || fail "BLOCK_K_p0=16 kept in $n_kept of $n_gemm GEMM schedules"
elif ! grep -q "NVRTC\|nvrtc" "$TMP/err"; then
  fail "compile with XCOMP_KNOBS=BLOCK_K_p0=16: $(cat "$TMP/err")"
fi

finish
