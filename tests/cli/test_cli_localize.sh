#!/usr/bin/env bash
# xcomp conform --localize (docs/cli.md): a clean module reports no
# divergence (exit 0); a kernel made wrong through the executor's test hook
# XCOMP_FAULT_KERNEL is named as the first divergence (exit 1), with its
# origin and error figures; usage errors.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

for model in mlp gpt2-tiny; do
  run_xcomp conform --localize "$MODELS/$model" --target cpu
  if [ "$RC" -ne 0 ]; then
    fail "$model: clean run exited $RC: $(head -c 1000 "$TMP/out" "$TMP/err")"
  else
    grep -q "^no divergence: [1-9][0-9]* kernel output values* of [1-9]" "$TMP/out" ||
      fail "$model: clean run: $(cat "$TMP/out")"
  fi
done

# Plant a fault in gpt2-tiny's third kernel and in its last one.
run_xcomp compile "$MODELS/gpt2-tiny/model.onnx" --target cpu -o "$TMP/g.xcm"
KERNELS=$(strings "$TMP/g.xcm" | sed -n 's/^kernel @\([a-z0-9_]*\) {$/\1/p' | sort -u)
for k in g2_gemm g16_gemm; do
  echo "$KERNELS" | grep -qx "$k" || { fail "gpt2-tiny has no kernel $k (has: $KERNELS)"; continue; }
  XCOMP_FAULT_KERNEL=$k run_xcomp conform --localize "$MODELS/gpt2-tiny" --target cpu
  [ "$RC" -eq 1 ] || fail "fault in $k: exit $RC, expected 1: $(cat "$TMP/out" "$TMP/err")"
  grep -q "^first divergence: step [0-9]*, kernel $k," "$TMP/out" || fail "fault in $k not named: $(cat "$TMP/out")"
  grep -q "^  computes: .*:" "$TMP/out" || fail "no origin: $(cat "$TMP/out")"
  grep -q "max abs 1, rel-L2" "$TMP/out" || fail "error figures: $(cat "$TMP/out")"
  grep -q "dump-kernels" "$TMP/out" || fail "no --dump-kernels hint"
done

# A fault in a kernel never launched changes nothing; a .xcm works too.
XCOMP_FAULT_KERNEL=no_such_kernel expect_ok conform --localize "$TMP/g.xcm" --target cpu \
  --input "@$MODELS/gpt2-tiny/test_data_set_0/input_0.pb"
expect_error 2 "compiled target" conform --localize "$MODELS/mlp" --target ref
expect_error 2 "does not go with --localize" conform --localize "$MODELS/mlp" --target cpu --filter x
finish
