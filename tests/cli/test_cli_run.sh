#!/usr/bin/env bash
# xcomp run and xcomp dump on tiny .xir models written here: positional and
# named inputs, output files (checked byte by byte against hand-encoded
# values), and the error cases of binding inputs.
set -u
. "$(dirname "$0")/helpers.bash"

cat >"$TMP/relu.xir" <<'XIR'
xir 1
graph relu opset 23 {
  input x: f32[2,3]
  y = Relu(x)
  output y
}
XIR
cat >"$TMP/sub.xir" <<'XIR'
xir 1
graph sub opset 23 {
  input x: f32[2,3]
  input y: f32[2,3]
  z = Sub(x, y)
  output z
}
XIR

# f32 little-endian bytes: 1 = 0000803f, -2 = 000000c0, 0.5 = 0000003f,
# 3 = 00004040, -1.5 = 0000c0bf, 0 = 00000000, 2 = 00000040, -3 = 000040c0,
# -0.5 = 000000bf, -2.5 = 000020c0, -1 = 000080bf.
X_HEX="0000803f 000000c0 0000003f 00004040 0000c0bf 00000000"
ONES_HEX="0000803f 0000803f 0000803f 0000803f 0000803f 0000803f"
RELU_HEX="0000803f000000000000003f000040400000000000000000"      # [1,0,0.5,3,0,0]
SUB_HEX="00000000000040c0000000bf00000040000020c0000080bf"       # x - 1
make_npy "$TMP/x.npy" '<f4' '2, 3' "$X_HEX"
make_npy "$TMP/ones.npy" '<f4' '2, 3' "$ONES_HEX"
make_npy "$TMP/relu_ref.npy" '<f4' '2, 3' "$RELU_HEX"
make_npy "$TMP/x_i64.npy" '<i8' '2, 3' "0100000000000000 0200000000000000 0300000000000000 0400000000000000 0500000000000000 0600000000000000"
make_npy "$TMP/x_32.npy" '<f4' '3, 2' "$X_HEX"
make_npy "$TMP/x_6.npy" '<f4' '6,' "$X_HEX"

# Positional input, explicit output folder (created if missing).
if expect_ok run "$TMP/relu.xir" --input "@$TMP/x.npy" --output-dir "$TMP/o1"; then
  grep -q "y" "$TMP/out" && grep -q "f32\[2,3\]" "$TMP/out" ||
    fail "run did not print the output name, dtype and shape: $(cat "$TMP/out")"
  [ -f "$TMP/o1/output_0.npy" ] || fail "run did not write o1/output_0.npy"
  [ "$(data_hex "$TMP/o1/output_0.npy" 24)" = "$RELU_HEX" ] ||
    fail "Relu output bytes $(data_hex "$TMP/o1/output_0.npy" 24), expected $RELU_HEX"
  expect_ok compare "$TMP/o1/output_0.npy" "$TMP/relu_ref.npy"
fi

# Missing parent folders of --output-dir are created.
expect_ok run "$TMP/relu.xir" --input "@$TMP/x.npy" --output-dir "$TMP/deep/er/out" &&
  { [ -f "$TMP/deep/er/out/output_0.npy" ] || fail "nested --output-dir not created"; }

# Default output folder is the current one; --input=@FILE form; --trace
# writes to stderr only.
mkdir -p "$TMP/cwd"
( cd "$TMP/cwd" && timeout 60 "$XCOMP" run "$TMP/relu.xir" --input="@$TMP/x.npy" >/dev/null 2>&1 ) ||
  fail "run with the default output folder failed"
[ -f "$TMP/cwd/output_0.npy" ] || fail "run did not write ./output_0.npy"
run_xcomp run "$TMP/relu.xir" --input "@$TMP/x.npy" --output-dir "$TMP/o2" --trace
[ "$RC" -eq 0 ] || fail "run --trace exited $RC: $(cat "$TMP/err")"
grep -q "Relu" "$TMP/err" || fail "run --trace did not name the node on stderr"

# Named inputs bind by name whatever their order; positional ones fill the rest.
make_npy "$TMP/sub_ref.npy" '<f4' '2, 3' "$SUB_HEX"
if expect_ok run "$TMP/sub.xir" --input "y=@$TMP/ones.npy" --input "x=@$TMP/x.npy" --output-dir "$TMP/o3"; then
  [ "$(data_hex "$TMP/o3/output_0.npy" 24)" = "$SUB_HEX" ] ||
    fail "named inputs bound wrongly: got $(data_hex "$TMP/o3/output_0.npy" 24), expected $SUB_HEX"
fi
if expect_ok run "$TMP/sub.xir" --input "y=@$TMP/ones.npy" --input "@$TMP/x.npy" --output-dir "$TMP/o4"; then
  expect_ok compare "$TMP/o4/output_0.npy" "$TMP/sub_ref.npy"
fi
if expect_ok run "$TMP/sub.xir" --input "@$TMP/x.npy" --input "@$TMP/ones.npy" --output-dir "$TMP/o5"; then
  expect_ok compare "$TMP/o5/output_0.npy" "$TMP/sub_ref.npy"
fi
# Swapped positional inputs give x - y with roles exchanged: must differ.
if expect_ok run "$TMP/sub.xir" --input "@$TMP/ones.npy" --input "@$TMP/x.npy" --output-dir "$TMP/o6"; then
  expect_error 1 "differ" compare "$TMP/o6/output_0.npy" "$TMP/sub_ref.npy"
fi

# dump prints the graph in .xir form with inferred types; the dump parses again.
if expect_ok dump "$TMP/sub.xir"; then
  grep -q "Sub" "$TMP/out" || fail "dump lacks the Sub node: $(cat "$TMP/out")"
  grep -Eq "z: f32\[2, ?3\]" "$TMP/out" || fail "dump lacks the types: $(cat "$TMP/out")"
  cp "$TMP/out" "$TMP/redump.xir"
  expect_ok dump "$TMP/redump.xir" && { cmp -s "$TMP/out" "$TMP/redump.xir" || fail "dump of a dump differs"; }
fi
expect_ok dump --no-infer "$TMP/relu.xir"
# --precision: the optimized graph's float32 tensors in bf16 (convert-precision),
# the imported graph as loaded; the tiled kernels of a compiled target too.
if expect_ok dump "$TMP/sub.xir" --precision bf16; then
  grep -Eq "z: bf16\[2, ?3\]" "$TMP/out" || fail "dump --precision bf16 kept f32: $(cat "$TMP/out")"
fi
if expect_ok dump "$TMP/sub.xir" --precision f16 --stage kernels --target cpu; then
  grep -q "memref<global f16" "$TMP/out" || fail "dump --stage kernels --precision f16: no f16 buffer: $(head -c 800 "$TMP/out")"
fi
expect_error 2 "--precision applies from --stage optimized" dump "$TMP/sub.xir" --precision bf16 --stage imported
expect_error 2 "--precision takes f16, bf16 or f32" dump "$TMP/sub.xir" --precision i8

# Errors: one line each, exit 1, naming what and where.
expect_error 1 "no-such.xir" run "$TMP/no-such.xir" --input "@$TMP/x.npy"
expect_error 1 "no-such.xir" dump "$TMP/no-such.xir"
expect_error 1 "no-such.npy" run "$TMP/relu.xir" --input "@$TMP/no-such.npy" --output-dir "$TMP/o7"
expect_error 1 "--input 'x.npy': expected NAME=@FILE or @FILE" run "$TMP/relu.xir" --input x.npy
expect_error 1 "expected NAME=@FILE or @FILE" run "$TMP/relu.xir" --input "x=$TMP/x.npy"
expect_error 1 "expected NAME=@FILE or @FILE" run "$TMP/relu.xir" --input "@"
expect_error 1 "missing input 'x'" run "$TMP/relu.xir"
expect_error 1 "missing input 'y'" run "$TMP/sub.xir" --input "@$TMP/x.npy"
expect_error 1 "too many inputs" run "$TMP/relu.xir" --input "@$TMP/x.npy" --input "@$TMP/x.npy"
expect_error 1 "no input 'w'" run "$TMP/relu.xir" --input "w=@$TMP/x.npy"
expect_error 1 "input 'x' is given twice" run "$TMP/sub.xir" --input "x=@$TMP/x.npy" --input "x=@$TMP/x.npy"
expect_error 1 "input 'x'" run "$TMP/relu.xir" --input "@$TMP/x_i64.npy"
expect_error 1 "dtype f32" run "$TMP/relu.xir" --input "@$TMP/x_i64.npy"
expect_error 1 "input 'x'" run "$TMP/relu.xir" --input "@$TMP/x_32.npy"
expect_error 1 "input 'x'" run "$TMP/relu.xir" --input "@$TMP/x_6.npy"
expect_error 1 "unknown model format" run "$TMP/x.npy"
# A compiled target goes through the executor (tests/cli/test_cli_compile.sh).
# A file that is not a tensor.
cp "$TMP/relu.xir" "$TMP/bogus.npy"
expect_error 1 "bogus.npy" run "$TMP/relu.xir" --input "@$TMP/bogus.npy" --output-dir "$TMP/o8"
# Files that are not regular files are refused at once, never read (a FIFO
# would block forever).
mkfifo "$TMP/fifo.npy" "$TMP/fifo.xir"
expect_error 1 "is not a regular file" run "$TMP/relu.xir" --input "@$TMP/fifo.npy" --output-dir "$TMP/o9"
expect_error 1 "is not a regular file" run "$TMP/fifo.xir" --input "@$TMP/x.npy"
expect_error 1 "is not a regular file" dump "$TMP/fifo.xir"
expect_error 1 "is not a regular file" compare "$TMP/fifo.npy" "$TMP/x.npy"
mkdir -p "$TMP/dir.xir"
expect_error 1 "dir.xir" dump "$TMP/dir.xir"
# An output folder that cannot be created.
expect_error 1 "output" run "$TMP/relu.xir" --input "@$TMP/x.npy" --output-dir "$TMP/x.npy/sub"

finish
