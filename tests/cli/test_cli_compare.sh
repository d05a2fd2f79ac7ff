#!/usr/bin/env bash
# xcomp compare on hand-encoded .npy files: tolerances, NaN and infinity
# rules, dtype and shape mismatches, the reported errors.
set -u
. "$(dirname "$0")/helpers.bash"

# f32: 1 = 0000803f, 1.0001 ~ 4703803f (0x3f800347), 2 = 00000040,
# NaN = 0000c07f, +inf = 0000807f, -inf = 000080ff.
make_npy "$TMP/a.npy" '<f4' '3,' "0000803f 00000040 0000c07f"
make_npy "$TMP/a_same.npy" '<f4' '3,' "0000803f 00000040 0000c07f"
make_npy "$TMP/a_close.npy" '<f4' '3,' "4703803f 00000040 0000c07f"
make_npy "$TMP/a_nonan.npy" '<f4' '3,' "0000803f 00000040 0000803f"
make_npy "$TMP/pinf.npy" '<f4' '1,' "0000807f"
make_npy "$TMP/ninf.npy" '<f4' '1,' "000080ff"
make_npy "$TMP/a_f64.npy" '<f8' '3,' "000000000000f03f 0000000000000040 000000000000f87f"
make_npy "$TMP/a_2d.npy" '<f4' '1, 3' "0000803f 00000040 0000c07f"
make_npy "$TMP/i.npy" '<i8' '2,' "0100000000000000 0200000000000000"
make_npy "$TMP/i2.npy" '<i8' '2,' "0100000000000000 0300000000000000"

expect_ok compare "$TMP/a.npy" "$TMP/a_same.npy"
grep -q "^match" "$TMP/out" || fail "compare of equal files did not say match"
# 1.0001 vs 1: error 1.0e-4; default rtol 1e-5 fails, rtol 1e-3 passes.
if expect_error 1 "differ" compare "$TMP/a_close.npy" "$TMP/a.npy"; then
  grep -q "max-abs" "$TMP/out" || fail "mismatch report lacks max-abs"
  grep -q "max-ULP error:  839" "$TMP/out" || fail "mismatch report lacks max-ULP 839 (0x3f800347 - 0x3f800000): $(cat "$TMP/out")"
  grep -q "first mismatch: \[0\]" "$TMP/out" || fail "mismatch report lacks the first index: $(cat "$TMP/out")"
fi
expect_ok compare "$TMP/a_close.npy" "$TMP/a.npy" --rtol 1e-3
expect_ok compare "$TMP/a_close.npy" "$TMP/a.npy" --rtol 0 --atol 1.1e-4
expect_error 1 "differ" compare "$TMP/a_close.npy" "$TMP/a.npy" --rtol 0 --atol 0.9e-4
# NaN positions must match, in both directions.
expect_error 1 "NaN" compare "$TMP/a_nonan.npy" "$TMP/a.npy" --rtol 1 --atol 1
expect_error 1 "NaN" compare "$TMP/a.npy" "$TMP/a_nonan.npy" --rtol 1 --atol 1
# Infinities must agree in sign.
expect_ok compare "$TMP/pinf.npy" "$TMP/pinf.npy"
expect_error 1 "infinity" compare "$TMP/ninf.npy" "$TMP/pinf.npy" --atol 1e30
# dtype and shape must match exactly.
expect_error 1 "dtype" compare "$TMP/a_f64.npy" "$TMP/a.npy"
expect_error 1 "shape" compare "$TMP/a_2d.npy" "$TMP/a.npy"
# Integers exactly.
expect_ok compare "$TMP/i.npy" "$TMP/i.npy"
expect_error 1 "differ" compare "$TMP/i2.npy" "$TMP/i.npy" --atol 10
# Missing and broken files.
expect_error 1 "missing.npy" compare "$TMP/missing.npy" "$TMP/a.npy"
printf 'not a tensor' >"$TMP/junk.npy"
expect_error 1 "junk.npy" compare "$TMP/junk.npy" "$TMP/a.npy"
finish
