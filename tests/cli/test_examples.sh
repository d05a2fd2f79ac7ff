#!/bin/bash
# Runs every example model in examples/ with the reference interpreter and
# compares its output with the expected output that examples/gen_expected.py
# computed independently with numpy.
#   env: XCOMP = path of the xcomp CLI, XCOMP_SRC = repository root
set -u
XCOMP=${XCOMP:?set XCOMP to the xcomp binary}
SRC=${XCOMP_SRC:-.}
EX="$SRC/examples"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail=0
count=0
for model in "$EX"/*.xir; do
  name=$(basename "$model" .xir)
  input="$EX/$name.in0.npy"
  expected="$EX/$name.expected0.npy"
  if [ ! -f "$input" ] || [ ! -f "$expected" ]; then
    echo "FAIL $name: missing $input or $expected"
    fail=1
    continue
  fi
  count=$((count + 1))
  out="$TMP/$name"
  mkdir -p "$out"
  if ! "$XCOMP" run "$model" --input "@$input" --output-dir "$out" >"$TMP/$name.log" 2>&1; then
    echo "FAIL $name: xcomp run failed:"
    cat "$TMP/$name.log"
    fail=1
    continue
  fi
  # f32 models computed in double by numpy: the reference interpreter rounds
  # once per op, so differences stay far below these tolerances.
  if ! "$XCOMP" compare "$out/output_0.npy" "$expected" --rtol 1e-4 --atol 1e-5 \
      >"$TMP/$name.cmp" 2>&1; then
    echo "FAIL $name: output differs from $expected:"
    cat "$TMP/$name.cmp"
    fail=1
    continue
  fi
  echo "ok   $name"
done
if [ "$count" -lt 3 ]; then
  echo "FAIL: expected at least 3 examples in $EX, found $count"
  fail=1
fi
exit $fail
