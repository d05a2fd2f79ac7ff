#!/usr/bin/env bash
# --shape NAME=DIMS on compile, run and bench: a model written for one input
# size runs at another where its shape constants allow (a Reshape to -1),
# with the same numbers on the interpreter and a compiled target; where they
# do not (a Reshape to the exported size) the error names that node; a
# symbolic dim becomes static; misuse is refused with a clear message.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

cat >"$TMP/flex.xir" <<'XIR'
xir 1
graph flex opset 23 {
  input x: f32[2,3]
  const flat: i64[1] = [-1]
  y = Relu(x)
  z = Reshape(y, flat)
  output z
}
XIR
cat >"$TMP/fixed.xir" <<'XIR'
xir 1
graph fixed opset 23 {
  input x: f32[2,3]
  const six: i64[1] = [6]
  y = Relu(x)
  z = Reshape(y, six)
  output z
}
XIR
# x: 4x3 = [-1, 2, -3, 4, ...]: relu keeps the positive half.
hex="000080bf 00000040 000040c0 00008040 0000a0c0 0000c040 0000e0c0 00000041 000010c1 00002041 000030c1 00004041"
make_npy "$TMP/x43.npy" '<f4' '4, 3' "$hex"

# The interpreter and cpu at 4x3: f32[12], the same bytes.
if expect_ok run "$TMP/flex.xir" --shape x=4x3 --input "@$TMP/x43.npy" --output-dir "$TMP/ref"; then
  grep -q "f32\[12\]" "$TMP/out" || fail "run --shape x=4x3 on ref: $(cat "$TMP/out")"
fi
run_xcomp run "$TMP/flex.xir" --target cpu --shape x=4x3 --input "@$TMP/x43.npy" --output-dir "$TMP/cpu"
if [ "$RC" -ne 0 ]; then
  fail "run --shape x=4x3 --target cpu exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "f32\[12\]" "$TMP/out" || fail "run --shape x=4x3 on cpu: $(cat "$TMP/out")"
  cmp -s "$TMP/ref/output_0.npy" "$TMP/cpu/output_0.npy" || fail "cpu at 4x3 differs from the interpreter"
fi
# Without --shape the 4x3 input does not fit the graph.
expect_error 1 "axis 0" run "$TMP/flex.xir" --input "@$TMP/x43.npy"
# compile --shape writes a module for that shape; the cache tells shapes apart.
run_xcomp compile "$TMP/flex.xir" --shape x=4x3 -o "$TMP/flex43.xcm"
if [ "$RC" -ne 0 ]; then
  fail "compile --shape x=4x3 exited $RC: $(head -c 2000 "$TMP/err")"
else
  expect_ok run "$TMP/flex43.xcm" --input "@$TMP/x43.npy" --output-dir "$TMP/xcm" &&
    { cmp -s "$TMP/ref/output_0.npy" "$TMP/xcm/output_0.npy" || fail "flex43.xcm differs from the interpreter"; }
  run_xcomp compile "$TMP/flex.xir" -o "$TMP/flex23.xcm"
  expect_error 1 "axis 0" run "$TMP/flex23.xcm" --input "@$TMP/x43.npy"
fi
# A Reshape to the exported size: the error names the node and says why.
expect_error 1 "(Reshape)" run "$TMP/fixed.xir" --shape x=4x3 --input "@$TMP/x43.npy"
grep -q "re-export it with dynamic axes" "$TMP/err" || fail "the fixed-size error gives no advice: $(cat "$TMP/err")"
expect_error 1 "(Reshape)" compile "$TMP/fixed.xir" --shape x=4x3 -o "$TMP/bad.xcm"
[ -e "$TMP/bad.xcm" ] && fail "a failed compile left $TMP/bad.xcm"
# bench: --shape compiles for the shape.
run_xcomp bench "$TMP/flex.xir" --shape x=8x3 --iterations 2 --json
[ "$RC" -eq 0 ] || fail "bench --shape x=8x3 on a fixed-size model exited $RC: $(head -c 2000 "$TMP/err")"
# Misuse.
expect_error 1 "has no input 'q'" compile "$TMP/flex.xir" --shape q=1
expect_error 1 "has rank 2" compile "$TMP/flex.xir" --shape x=12
expect_error 1 "DIMS must be sizes" compile "$TMP/flex.xir" --shape x=4xz
expect_error 1 "not a compiled module" run "$TMP/flex43.xcm" --shape x=4x3 --input "@$TMP/x43.npy"
expect_error 2 "--shape needs" compile "$TMP/flex.xir" --shape
finish
