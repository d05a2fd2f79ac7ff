#!/usr/bin/env bash
# The same layer repeated compiles once (driver/build.c, code_key): a model of
# three layers alike — x_i = Relu(MatMul(x_{i-1}, w_i) + t_i[ids_i]), each
# layer with its own weights, table and ids — has two kernels per layer (the
# Gather, with an index check, and the GEMM with its epilogue), and layers 2
# and 3 take the code of layer 1's (4 of 6 kernels shared, 2 compiled):
#   cpu: the index checks name their node and slot through launch arguments,
#        not constants of the code, and the shared code still reports the
#        failing layer's own node; the module computes what the interpreter
#        does;
#   cuda:sm_90 (compile only; skipped without NVRTC), in bf16 at GPT-2's width:
#        the GEMMs take dynamic shared memory, whose size symbol is named
#        after the kernel (xc_dsm_bytes_<entry>), and still share.
set -u
source "$(dirname "$0")/helpers.bash"

# layers_xir M D ROWS: the three-layer model, activations [M, D], tables [ROWS, D]
layers_xir() {
  local m="$1" d="$2" rows="$3" i
  echo "xir 1"
  echo "graph layers opset 23 {"
  echo "  input x0: f32[$m, $d]"
  for i in 1 2 3; do
    echo "  input ids$i: i64[$m]"
    echo "  input t$i: f32[$rows, $d]"
    echo "  input w$i: f32[$d, $d]"
  done
  for i in 1 2 3; do
    echo "  e$i = Gather(t$i, ids$i) {axis: 0} @gather$i"
    echo "  h$i = MatMul(x$((i - 1)), w$i) @matmul$i"
    echo "  a$i = Add(h$i, e$i)"
    echo "  x$i = Relu(a$i)"
  done
  echo "  output x3"
  echo "}"
}

# f32s FILE SHAPE COUNT SEED: COUNT f32 values from a small set, shifted by SEED
F32S=(0000803e 000000bf 0000003f 000000be 0000803f 0000c0be 0000403e)
f32s() {
  local hex="" i
  for ((i = 0; i < $3; i++)); do hex="$hex${F32S[$(((i * 3 + $4) % 7))]}"; done
  make_npy "$1" '<f4' "$2" "$hex"
}
# i64 little-endian hex of a signed value
i64() { printf '%016x' $(($1)) | sed 's/../& /g' | awk '{for (i = 8; i >= 1; i--) printf "%s", $i}'; }
ids() {
  local f="$1" hex="" n=0
  shift
  for v in "$@"; do hex="$hex$(i64 "$v")"; n=$((n + 1)); done
  make_npy "$f" '<i8' "$n," "$hex"
}

# shared_counts WHAT TOTAL COMPILED: the compile's summary and sharing line
shared_counts() {
  local what="$1" total="$2" compiled="$3"
  grep -q "^xcomp: $((total - compiled)) of $total kernels share the code of an earlier one (compiled once)$" "$TMP/err" ||
    fail "$what: expected $((total - compiled)) of $total kernels shared: $(grep -v 'compiling kernel' "$TMP/err")"
  grep -q "$total kernels, .*(no cache, $compiled kernels compiled)" "$TMP/out" ||
    fail "$what: expected $compiled of $total kernels compiled: $(cat "$TMP/out")"
}

# ---- cpu: compile, share, run, and index errors named per layer ----------------
layers_xir 8 16 100 >"$TMP/small.xir"
run_xcomp compile "$TMP/small.xir" --target cpu --no-cache -o "$TMP/small.xcm"
[ "$RC" -eq 0 ] || fail "compile for cpu exited $RC: $(head -c 2000 "$TMP/err")"
shared_counts cpu 6 2

f32s "$TMP/x0.npy" '8, 16' 128 0
inputs=(--input "@$TMP/x0.npy")
for i in 1 2 3; do
  ids "$TMP/ids$i.npy" $((i)) 99 $((10 * i)) 0 -1 $((50 - i)) 7 $((3 * i))
  f32s "$TMP/t$i.npy" '100, 16' 1600 "$i"
  f32s "$TMP/w$i.npy" '16, 16' 256 $((i + 3))
  inputs+=(--input "@$TMP/ids$i.npy" --input "@$TMP/t$i.npy" --input "@$TMP/w$i.npy")
done
ids "$TMP/bad.npy" 0 1 2 3 100 5 6 7
expect_ok run "$TMP/small.xir" --target ref "${inputs[@]}" --output-dir "$TMP/ref"
expect_ok run "$TMP/small.xcm" "${inputs[@]}" --output-dir "$TMP/cpu" &&
  { run_xcomp compare "$TMP/cpu/output_0.npy" "$TMP/ref/output_0.npy" --rtol 1e-4 --atol 1e-5
    [ "$RC" -eq 0 ] || fail "cpu: the module with shared kernels computes wrong: $(cat "$TMP/out")"; }
for i in 2 3; do
  bad=("${inputs[@]}")
  bad[$((6 * i - 3))]="@$TMP/bad.npy" # ids$i (after --input x0, six words a layer)
  expect_error 1 "node 'gather$i' (Gather)" run "$TMP/small.xcm" "${bad[@]}" --output-dir "$TMP/bad"
done

# ---- cuda:sm_90, compile only ------------------------------------------------------
layers_xir 512 768 1000 >"$TMP/big.xir"
run_xcomp compile "$TMP/big.xir" --target cuda:sm_90 --precision bf16 --no-cache -o "$TMP/big.xcm"
if [ "$RC" -ne 0 ] && grep -q "nvrtc\|NVRTC" "$TMP/err" && grep -q "unavailable" "$TMP/err"; then
  echo "note: NVRTC not available: the cuda part was not run"
else
  [ "$RC" -eq 0 ] || fail "compile for cuda:sm_90 exited $RC: $(head -c 2000 "$TMP/err")"
  shared_counts "cuda:sm_90 bf16" 6 2
  # what makes this case: the GEMMs' operands are in dynamic shared memory
  rm -rf "$TMP/kb"
  run_xcomp compile "$TMP/big.xir" --target cuda:sm_90 --precision bf16 --no-cache -o "$TMP/big2.xcm" \
    --dump-kernels "$TMP/kb"
  [ "$RC" -eq 0 ] || fail "compile for cuda:sm_90 with --dump-kernels exited $RC: $(head -c 2000 "$TMP/err")"
  [ "$(grep -l 'xc_dsm_bytes_' "$TMP"/kb/*.cuda | wc -l)" -eq 3 ] ||
    fail "cuda:sm_90: expected 3 GEMMs with dynamic shared memory"
fi
finish
