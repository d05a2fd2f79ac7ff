#!/usr/bin/env bash
# The vendor conformance kit: xfail files (xfail, xpass, unmatched entries,
# entries without a reason), the JSON report (valid JSON, its keys, totals
# that add up), reports titled by their target, and `conform --kit` on cpu
# over a few node tests, a small op suite and one model.
set -u
. "$(dirname "$0")/helpers.bash"

command -v python3 >/dev/null || { echo "test_cli_kit.sh: SKIP (no python3)"; exit 0; }

# Two models: mlp, and mlp_wrong whose stored output is its input (a real
# FAIL on ref: the shapes differ).
mkdir -p "$TMP/m"
cp -r "$MODELS/mlp" "$TMP/m/mlp"
cp -r "$MODELS/mlp" "$TMP/m/mlp_wrong"
chmod -R u+w "$TMP/m"
cp "$MODELS/mlp/test_data_set_0/input_0.pb" "$TMP/m/mlp_wrong/test_data_set_0/output_0.pb"

# Without an xfail list the failure is reported and (without --strict) exit 0.
expect_ok conform --models "$TMP/m"
[ "$(tail -1 "$TMP/out")" = "1 passed, 1 failed, 0 skipped" ] || fail "no xfail: $(tail -1 "$TMP/out")"

# The failing model listed: XFAIL, exit 0; the JSON report says so.
cat >"$TMP/xfail.txt" <<'XF'
# expected failures of this test

mlp_wrong   # stored output is the input (wrong on purpose)
XF
if expect_ok conform --models "$TMP/m" --xfail "$TMP/xfail.txt" --report-json "$TMP/r.json" --markdown "$TMP/r.md"; then
  grep -q '^XFAIL  *mlp_wrong  (xfail: stored output is the input' "$TMP/out" || fail "no XFAIL line: $(cat "$TMP/out")"
  [ "$(tail -1 "$TMP/out")" = "1 passed, 0 failed, 0 skipped, 1 xfail, 0 xpass" ] || fail "xfail totals: $(tail -1 "$TMP/out")"
  python3 -m json.tool "$TMP/r.json" >/dev/null || fail "--report-json is not valid JSON"
  python3 - "$TMP/r.json" ref <<'PY' || fail "JSON report content (single suite)"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("schema", "target", "device", "xcomp", "date", "tolerance", "options", "suites", "totals", "tests", "xfail_unmatched"):
    assert k in d, k
assert d["target"] == sys.argv[2], d["target"]
assert d["device"]["name"] == "reference interpreter", d["device"]
assert d["xcomp"]["version"] and d["xcomp"]["commit"], d["xcomp"]
assert d["date"].endswith("Z") and d["date"][4] == "-" and "T" in d["date"], d["date"]
pd = d["tolerance"]["per_dtype"]
assert pd["f32"] == {"check": "close", "rtol": 1e-3, "atol": 1e-5, "max_rel_l2": 1e-5}, pd["f32"]
assert pd["f16"]["max_rel_l2"] == 2e-3 and pd["bf16"]["max_rel_l2"] == 1.6e-2, pd
assert pd["i32"]["check"] == "exact", pd["i32"]
assert d["options"]["suites"] == ["models"], d["options"]
t = d["totals"]
assert (t["passed"], t["failed"], t["xfail"], t["xpass"], t["unsupported"]) == (1, 0, 1, 0, 0), t
assert t["total"] == len(d["tests"]) == 2, t
by = {x["name"]: x for x in d["tests"]}
assert by["mlp"]["status"] == "pass" and by["mlp"]["suite"] == "models", by["mlp"]
w = by["mlp_wrong"]
assert w["status"] == "xfail" and w["xfail_reason"].startswith("stored output"), w
assert "shape" in w["message"], w
for x in d["tests"]:
    for k in ("name", "suite", "op", "dtype", "status", "message"):
        assert k in x, (k, x)
assert d["xfail_unmatched"] == [], d["xfail_unmatched"]
PY
  grep -q '^# Conformance of the reference interpreter' "$TMP/r.md" || fail "ref markdown title: $(head -1 "$TMP/r.md")"
  grep -q '^## Expected failures (xfail) (1)' "$TMP/r.md" || fail "markdown lacks the xfail section"
fi

# A listed test that passes: XPASS, exit 1; an entry matching nothing warns.
cat >"$TMP/xpass.txt" <<'XF'
mlp  # claims to fail
mlp_w*  # prefix entry: matches mlp_wrong
nosuch_model  # matches no test
XF
run_xcomp conform --models "$TMP/m" --xfail "$TMP/xpass.txt" --report-json "$TMP/x.json"
[ "$RC" -eq 1 ] || fail "xpass exited $RC, expected 1: $(cat "$TMP/err")"
grep -q "^xcomp: error: 1 test passed that the xfail list expects to fail (xpass)" "$TMP/err" || fail "no xpass error: $(cat "$TMP/err")"
grep -q "warning: $TMP/xpass.txt:3: xfail entry 'nosuch_model' matches no test" "$TMP/err" || fail "no unmatched warning: $(cat "$TMP/err")"
grep -q '^XPASS  *mlp ' "$TMP/out" || fail "no XPASS line: $(cat "$TMP/out")"
grep -q '^XFAIL  *mlp_wrong ' "$TMP/out" || fail "the prefix entry did not match mlp_wrong: $(cat "$TMP/out")"
python3 - "$TMP/x.json" <<'PY' || fail "JSON report content (xpass)"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
assert (t["passed"], t["failed"], t["xfail"], t["xpass"]) == (0, 0, 1, 1), t
assert [u["name"] for u in d["xfail_unmatched"]] == ["nosuch_model"], d["xfail_unmatched"]
assert d["xfail_unmatched"][0]["line"] == 3
PY

# With an xfail list, a failure it does not list fails the run.
echo 'nosuch  # nothing' >"$TMP/other.txt"
run_xcomp conform --models "$TMP/m" --xfail "$TMP/other.txt"
[ "$RC" -eq 1 ] || fail "an unlisted failure with --xfail exited $RC"
grep -q '^xcomp: error: 1 test failed (not in the xfail list)' "$TMP/err" || fail "unlisted failure: $(cat "$TMP/err")"

# Malformed xfail files: the error names FILE:LINE.
printf '# header\n\nmlp_wrong\n' >"$TMP/noreason.txt"
expect_error 1 "$TMP/noreason.txt:3: an entry needs a reason" conform --models "$TMP/m" --xfail "$TMP/noreason.txt"
printf 'mlp  #   \n' >"$TMP/empty.txt"
expect_error 1 "$TMP/empty.txt:1: the reason after '#' is empty" conform --models "$TMP/m" --xfail "$TMP/empty.txt"
printf 'ml*p  # glob\n' >"$TMP/glob.txt"
expect_error 1 "$TMP/glob.txt:1: '*' may only end a name" conform --models "$TMP/m" --xfail "$TMP/glob.txt"
expect_error 1 "cannot open the xfail file" conform --models "$TMP/m" --xfail "$TMP/none.txt"
expect_error 2 "--kit needs --out" conform --kit
expect_error 2 "--out and --shared go with --kit" conform --models "$TMP/m" --out "$TMP/o"

# A compiled target: the markdown title names it and its device.
if expect_ok conform --target cpu --models "$TMP/m" --filter '^mlp$' --markdown "$TMP/cpu.md" --report-json "$TMP/cpu.json"; then
  head -1 "$TMP/cpu.md" | grep -q '^# xcomp conformance: cpu (' || fail "cpu markdown title: $(head -1 "$TMP/cpu.md")"
  grep -q 'reference interpreter' <(head -1 "$TMP/cpu.md") && fail "cpu markdown titled by the interpreter"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["target"]=="cpu" and d["device"]["name"], d["device"]' \
    "$TMP/cpu.json" || fail "cpu JSON lacks the device"
fi

# The kit on cpu: a few node tests (when ../shared has them), a small op
# suite and one model, one filter for all three.
NODE="$SHARED/onnx-backend-tests/node"
have_node=0
[ -d "$NODE/test_relu" ] && [ -d "$NODE/test_abs" ] && have_node=1
mkdir -p "$TMP/sh/onnx-backend-tests" "$TMP/sh/models"
[ "$have_node" -eq 1 ] && ln -s "$NODE" "$TMP/sh/onnx-backend-tests/node"
cp -r "$MODELS/mlp" "$TMP/sh/models/mlp"
echo 'Relu.f32.*  # the op suite relu claims to fail' >"$TMP/kit-xpass.txt"
run_xcomp conform --kit --target cpu --shared "$TMP/sh" --out "$TMP/kit" \
  --filter '^(test_relu|test_abs|mlp)$|^(Relu|Abs)\.' -j 2 --timeout 60
[ "$RC" -eq 0 ] || fail "kit on cpu exited $RC: $(head -c 2000 "$TMP/err")"
grep -q '^kit: suite 2/3 op-suite: [1-9][0-9]* passed, 0 failed' "$TMP/err" || fail "kit progress: $(cat "$TMP/err")"
[ -s "$TMP/kit/report.md" ] && [ -s "$TMP/kit/report.json" ] || fail "kit did not write report.md and report.json"
head -1 "$TMP/kit/report.md" | grep -q '^# xcomp conformance: cpu' || fail "kit markdown title: $(head -1 "$TMP/kit/report.md")"
python3 -m json.tool "$TMP/kit/report.json" >/dev/null || fail "kit report.json is not valid JSON"
python3 - "$TMP/kit/report.json" "$have_node" <<'PY' || fail "kit JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
have_node = sys.argv[2] == "1"
assert d["target"] == "cpu"
assert [s["name"] for s in d["suites"]] == ["node", "op-suite", "models"], d["suites"]
node, ops, models = d["suites"]
if have_node:
    assert node["status"] == "ran" and node["totals"]["passed"] == 2, node
else:
    assert node["status"] == "skipped" and "not a folder" in node["reason"], node
assert ops["status"] == "ran" and ops["totals"]["passed"] >= 2 and ops["totals"]["failed"] == 0, ops
assert models["status"] == "ran" and models["totals"]["passed"] == 1, models
assert d["options"]["per_op"] == 1 and d["options"]["cases_per_op"] == 1 and d["options"]["dtypes"] == "f32", d["options"]
suites = {x["suite"] for x in d["tests"]}
assert {"op-suite", "models"} <= suites, suites
t = d["totals"]
assert t["total"] == len(d["tests"]) == sum(s.get("totals", {}).get("total", 0) for s in d["suites"]), t
assert t["failed"] == 0 and t["xpass"] == 0, t
ops_tests = [x for x in d["tests"] if x["suite"] == "op-suite"]
assert all(x["dtype"] == "f32" for x in ops_tests), ops_tests
assert len([x for x in ops_tests if x["op"] == "Relu"]) == 1, ops_tests
assert all("rel_l2" in x.get("error", {}) for x in ops_tests), ops_tests
PY
[ -s "$TMP/kit/op-suite.txt" ] || fail "kit lacks the op-suite log"

# The same with an xfail entry for a case that passes: xpass, exit 1.
run_xcomp conform --kit --target cpu --shared "$TMP/sh" --out "$TMP/kit2" --xfail "$TMP/kit-xpass.txt" \
  --filter '^(Relu|Abs)\.|^mlp$'
[ "$RC" -eq 1 ] || fail "kit with an xpass exited $RC"
grep -q '^xcomp: error: conformance kit: 0 failed, 1 passed that the xfail list expects to fail' "$TMP/err" ||
  fail "kit xpass error: $(cat "$TMP/err")"
grep -q '^## Unexpected passes (xpass) (1)' "$TMP/kit2/report.md" || fail "kit markdown lacks the xpass section"

# No shared folder: node tests and models are reported skipped, not passed.
run_xcomp conform --kit --target cpu --shared "$TMP/nowhere" --out "$TMP/kit3" --filter '^Relu\.'
[ "$RC" -eq 0 ] || fail "kit without shared exited $RC: $(cat "$TMP/err")"
grep -q '^kit: suite 1/3 node: SKIPPED' "$TMP/err" || fail "node suite not reported skipped: $(cat "$TMP/err")"
grep -q '^kit: suite 3/3 models: SKIPPED' "$TMP/err" || fail "models suite not reported skipped"
grep -q '^| node | .* | skipped: ' "$TMP/kit3/report.md" || fail "report.md does not say the node suite was skipped"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["suites"]; assert [x["status"] for x in s]==["skipped","ran","skipped"], s' \
  "$TMP/kit3/report.json" || fail "kit3 JSON suite statuses"

finish
