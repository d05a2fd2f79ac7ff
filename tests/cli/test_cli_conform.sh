#!/usr/bin/env bash
# xcomp conform on small test trees built from the shared ONNX backend tests
# (skipped when ../shared is absent): verdicts, per-op totals, the closing
# line, --filter, --strict, --report, --markdown, and that a hanging or
# broken test is a FAIL of that test, not of the runner.
set -u
. "$(dirname "$0")/helpers.bash"

NODE="$SHARED/onnx-backend-tests/node"
if [ ! -d "$NODE/test_abs" ] || [ ! -d "$NODE/test_relu" ]; then
  echo "test_cli_conform.sh: SKIP ($NODE not present)"
  exit 0
fi

# root/node/{test_abs,test_relu,test_abs_wrong,test_broken,test_hang}, root/simple/test_relu_copy
mkdir -p "$TMP/root/node" "$TMP/root/simple"
cp -r "$NODE/test_abs" "$NODE/test_relu" "$TMP/root/node/"
cp -r "$NODE/test_relu" "$TMP/root/simple/test_relu_copy"
chmod -R u+w "$TMP/root"
# Wrong reference: abs compared with its own input (differs where x < 0).
cp -r "$NODE/test_abs" "$TMP/root/node/test_abs_wrong"
chmod -R u+w "$TMP/root/node/test_abs_wrong"
cp "$NODE/test_abs/test_data_set_0/input_0.pb" "$TMP/root/node/test_abs_wrong/test_data_set_0/output_0.pb"
# A truncated model.
mkdir -p "$TMP/root/node/test_broken/test_data_set_0"
head -c 20 "$NODE/test_abs/model.onnx" >"$TMP/root/node/test_broken/model.onnx"
# A test whose input is a FIFO nobody writes: the loader must not block on it.
cp -r "$NODE/test_relu" "$TMP/root/node/test_hang"
chmod -R u+w "$TMP/root/node/test_hang"
rm -f "$TMP/root/node/test_hang/test_data_set_0/input_0.pb"
mkfifo "$TMP/root/node/test_hang/test_data_set_0/input_0.pb"

# Root with category folders; everything but the hang.
if expect_ok conform --target ref --onnx-tests "$TMP/root" --filter 'abs|relu|broken' \
    --report "$TMP/report.txt" --markdown "$TMP/conf.md" -j 2; then
  out="$TMP/out"
  grep -q '^PASS .*node/test_abs$' "$out" || fail "node/test_abs did not pass: $(cat "$out")"
  grep -q '^PASS .*node/test_relu$' "$out" || fail "node/test_relu did not pass"
  grep -q '^PASS .*simple/test_relu_copy$' "$out" || fail "simple/test_relu_copy did not pass"
  grep -q '^FAIL .*node/test_abs_wrong .*max-abs.*max-ULP.*output 0\|^FAIL .*node/test_abs_wrong .*output 0.*max-abs.*max-ULP' "$out" ||
    fail "test_abs_wrong is not a FAIL naming the output, max-abs and max-ULP: $(grep abs_wrong "$out")"
  grep -q '^FAIL .*node/test_broken' "$out" || fail "the truncated model is not a FAIL"
  grep -q '^Abs  *f32  *1  *1  *0$' "$out" || fail "per-op totals for Abs wrong: $(grep '^Abs' "$out")"
  grep -q '^Relu  *f32  *2  *0  *0$' "$out" || fail "per-op totals for Relu wrong: $(grep '^Relu' "$out")"
  [ "$(tail -1 "$out")" = "3 passed, 2 failed, 0 skipped" ] || fail "closing line: $(tail -1 "$out")"
  [ "$(tail -1 "$TMP/report.txt")" = "3 passed, 2 failed, 0 skipped" ] || fail "--report closing line"
  grep -c '^PASS\|^FAIL' "$TMP/report.txt" | grep -qx 5 || fail "--report lacks the per-test lines"
  grep -q '^# Conformance' "$TMP/conf.md" || fail "--markdown lacks its title"
  grep -q 'xcomp conform' "$TMP/conf.md" || fail "--markdown lacks the command that regenerates it"
  grep -q '^| Abs | f32 | 1 | 1 | 0 |' "$TMP/conf.md" || fail "--markdown lacks the Abs row: $(grep Abs "$TMP/conf.md")"
fi

# A folder of tests, filtered; --strict turns failures into exit 1.
expect_ok conform --onnx-tests "$TMP/root/node" --filter '^test_relu$'
[ "$(tail -1 "$TMP/out")" = "1 passed, 0 failed, 0 skipped" ] || fail "filter ^test_relu$: $(tail -1 "$TMP/out")"
expect_ok conform --onnx-tests "$TMP/root/node" --filter '^test_relu$' --strict
expect_error 1 "1 test failed (--strict)" conform --onnx-tests "$TMP/root/node" --filter 'abs_wrong' --strict
# --per-op N keeps the first N tests (name order) of each op and dtype:
# node/ holds test_abs and test_abs_wrong (Abs, f32) and test_relu (Relu).
expect_ok conform --onnx-tests "$TMP/root/node" --filter 'abs|relu' --per-op 1
grep -q '^PASS .*test_abs$' "$TMP/out" || fail "--per-op 1 did not keep the first Abs test: $(cat "$TMP/out")"
grep -q 'test_abs_wrong' "$TMP/out" && fail "--per-op 1 ran a second Abs test"
grep -q '^PASS .*test_relu$' "$TMP/out" || fail "--per-op 1 dropped the Relu test"
[ "$(tail -1 "$TMP/out")" = "2 passed, 0 failed, 0 skipped" ] || fail "--per-op 1: $(tail -1 "$TMP/out")"
expect_ok conform --onnx-tests "$TMP/root/node" --filter 'abs|relu' --per-op 2
[ "$(tail -1 "$TMP/out")" = "2 passed, 1 failed, 0 skipped" ] || fail "--per-op 2: $(tail -1 "$TMP/out")"
expect_error 2 "--per-op" conform --onnx-tests "$TMP/root/node" --per-op 0
expect_error 2 "--per-op goes with" conform --op-suite --per-op 1

# One test folder given directly.
expect_ok conform --onnx-tests "$TMP/root/node/test_abs"
[ "$(tail -1 "$TMP/out")" = "1 passed, 0 failed, 0 skipped" ] || fail "single folder: $(tail -1 "$TMP/out")"

# A FIFO in place of an input file is not read (a reader would block on it
# forever): the test fails at once instead of hanging.
run_xcomp conform --onnx-tests "$TMP/root/node" --filter 'hang|^test_relu$' --timeout 20
[ "$RC" -eq 0 ] || fail "conform with a FIFO input exited $RC: $(cat "$TMP/err")"
grep -q '^FAIL .*test_hang .*no input file for graph input' "$TMP/out" || fail "the FIFO input is not a FAIL: $(cat "$TMP/out")"
[ "$(tail -1 "$TMP/out")" = "1 passed, 1 failed, 0 skipped" ] || fail "fifo: $(tail -1 "$TMP/out")"

# A test that runs for minutes (a 2048^3 MatMul) times out; the runner carries on.
cp -r "$XCOMP_SRC/tests/data/onnx/slow_test" "$TMP/root/node/test_slow"
start=$(date +%s)
run_xcomp conform --onnx-tests "$TMP/root/node" --filter 'slow|^test_relu$' --timeout 2
end=$(date +%s)
[ "$RC" -eq 0 ] || fail "conform with a slow test exited $RC: $(cat "$TMP/err")"
grep -q '^FAIL .*test_slow .*TIMEOUT' "$TMP/out" || fail "the slow test is not a TIMEOUT failure: $(cat "$TMP/out")"
[ "$(tail -1 "$TMP/out")" = "1 passed, 1 failed, 0 skipped" ] || fail "slow: $(tail -1 "$TMP/out")"
[ $((end - start)) -lt 30 ] || fail "the timeout took $((end - start)) s"

# An op xcomp does not have (ai.onnx.ml domain) is UNSUPPORTED, not FAIL.
ML="$NODE/test_ai_onnx_ml_array_feature_extractor"
if [ -d "$ML" ]; then
  if expect_ok conform --onnx-tests "$ML"; then
    grep -q '^UNSUPPORTED .*test_ai_onnx_ml_array_feature_extractor' "$TMP/out" ||
      fail "an unknown-domain op is not UNSUPPORTED: $(cat "$TMP/out")"
    [ "$(tail -1 "$TMP/out")" = "0 passed, 0 failed, 1 skipped" ] || fail "unsupported: $(tail -1 "$TMP/out")"
  fi
fi

# Bad command lines and folders.
expect_error 1 "no-such-dir" conform --onnx-tests "$TMP/no-such-dir"
expect_error 1 "no test folders" conform --onnx-tests "$TMP/root" --filter 'matches-nothing'
expect_error 1 "--filter" conform --onnx-tests "$TMP/root" --filter '('
expect_error 2 "one of --onnx-tests and --models" conform --onnx-tests "$TMP/root" --models "$TMP/root"
expect_error 2 "-j" conform --onnx-tests "$TMP/root" -j 0
finish
