#!/usr/bin/env bash
# Compiled modules that are well formed but wrong (docs/runtime.md,
# "Reading", "Trust and signatures", "Compile cache"), made with
# tests/tools/xcm_edit, which rewrites a valid .xcm with a fresh checksum:
#  - a plan whose intermediate value was shrunk: refused (plan vs graph);
#  - the same with the graph changed to agree: refused (a kernel's accesses
#    against the value its step binds);
#  - a kernel object with a damaged ELF header: refused before dlopen;
#  - signatures: with XCOMP_MODULE_KEY set, unsigned modules and modules
#    signed with another key are refused, modules signed with it run;
#  - the compile cache: a valid module of another model copied under a key
#    is a miss (recompiled, replaced), never served; entries are 0600 in 0700.
# Each refusal: exit 1 and exactly one "xcomp: error:" line, also under the
# sanitizers (ASan reports would be extra lines).
set -u
. "$(dirname "$0")/helpers.bash"
: "${XCM_EDIT:?XCM_EDIT must name tests/tools/xcm_edit}"
unset XCOMP_MODULE_KEY XCOMP_MODULE_KEY_FILE
export XCOMP_CACHE_DIR="$TMP/cache"

MLP="$MODELS/mlp"
CNN="$MODELS/cnn"
IN="@$MLP/test_data_set_0/input_0.pb"

run_xcomp compile "$MLP/model.onnx" --target cpu -o "$TMP/mlp.xcm" --no-cache
[ "$RC" -eq 0 ] || { fail "compile mlp: exit $RC: $(head -c 2000 "$TMP/err")"; finish; }
expect_ok run "$TMP/mlp.xcm" --input "$IN" --output-dir "$TMP/ok" >/dev/null
expect_ok compare "$TMP/ok/output_0.npy" "$MLP/test_data_set_0/output_0.pb"

# The intermediate value between the two GEMMs.
mid="$("$XCM_EDIT" values "$TMP/mlp.xcm" | awk '$3 == 0 { print $1; exit }')"
[ -n "$mid" ] || fail "no intermediate value in mlp.xcm"

# 1. Plan shrunk, graph left alone.
"$XCM_EDIT" dim "$TMP/mlp.xcm" "$TMP/shrunk.xcm" "$mid" 1 8 || fail "xcm_edit dim failed"
expect_error 1 "inconsistent compiled module: value '$mid' is f32[4, 8] in the plan but f32[4, 128] in the graph" \
  run "$TMP/shrunk.xcm" --input "$IN" --output-dir "$TMP/o1"

# 2. Plan and graph shrunk together: the kernels still index 512 elements.
"$XCM_EDIT" graph-dim "$TMP/mlp.xcm" "$TMP/shrunk2.xcm" "$mid" 1 8 || fail "xcm_edit graph-dim failed"
expect_error 1 "but the plan binds value '$mid' f32[4, 8] (32 elements) to it" \
  run "$TMP/shrunk2.xcm" --input "$IN" --output-dir "$TMP/o2"
grep -q "writes elements 0..511" "$TMP/err" || fail "the message does not give the range written: $(cat "$TMP/err")"

# 2b. A module with symbols (basic.xir: x f32[batch, 4]) is checked for each
#     binding before its first launch.
run_xcomp compile "$XCOMP_SRC/tests/xir/basic.xir" --target cpu -o "$TMP/basic.xcm" --no-cache
[ "$RC" -eq 0 ] || fail "compile basic.xir: exit $RC: $(head -c 2000 "$TMP/err")"
"$XCM_EDIT" graph-dim "$TMP/basic.xcm" "$TMP/basic_shrunk.xcm" a1 1 2 || fail "xcm_edit graph-dim a1 failed"
make_npy "$TMP/x3.npy" '<f4' '3, 4' "$(for _ in $(seq 12); do printf '0000803f '; done)"
expect_ok run "$TMP/basic.xcm" --input "@$TMP/x3.npy" --output-dir "$TMP/ob" >/dev/null
expect_error 1 "but the plan binds value 'a1' f32[batch, 2] (6 elements) to it" \
  run "$TMP/basic_shrunk.xcm" --input "@$TMP/x3.npy" --output-dir "$TMP/ob2"

# 3. A damaged ELF header in a kernel object (e_phnum).
"$XCM_EDIT" blob "$TMP/mlp.xcm" "$TMP/elf.xcm" 0 57 || fail "xcm_edit blob failed"
expect_error 1 "program headers lie outside the file" run "$TMP/elf.xcm" --input "$IN" --output-dir "$TMP/o3"

# 4. Signatures.
KEY1="first signing key, long enough"
KEY2="second signing key, long enough"
XCOMP_MODULE_KEY="$KEY1" run_xcomp compile "$MLP/model.onnx" --target cpu -o "$TMP/signed.xcm" --no-cache
[ "$RC" -eq 0 ] || fail "signed compile: exit $RC: $(head -c 2000 "$TMP/err")"
XCOMP_MODULE_KEY="$KEY1" expect_ok run "$TMP/signed.xcm" --input "$IN" --output-dir "$TMP/o4" >/dev/null
expect_ok run "$TMP/signed.xcm" --input "$IN" --output-dir "$TMP/o4" >/dev/null   # no key: nothing to check
XCOMP_MODULE_KEY="$KEY2" expect_error 1 "bad module signature" run "$TMP/signed.xcm" --input "$IN"
XCOMP_MODULE_KEY="$KEY1" expect_error 1 "the module is not signed" run "$TMP/mlp.xcm" --input "$IN"
# A kernel byte changed and the module signed again with another key.
XCM_EDIT_KEY="$KEY2" "$XCM_EDIT" blob "$TMP/signed.xcm" "$TMP/resigned.xcm" 0 5000 2>/dev/null ||
  fail "xcm_edit blob (signed) failed"
XCOMP_MODULE_KEY="$KEY1" expect_error 1 "bad module signature" run "$TMP/resigned.xcm" --input "$IN"
printf '%s\n' "$KEY1" >"$TMP/key"
XCOMP_MODULE_KEY_FILE="$TMP/key" expect_ok run "$TMP/signed.xcm" --input "$IN" --output-dir "$TMP/o5" >/dev/null
XCOMP_MODULE_KEY_FILE="$TMP/nokey" expect_error 1 "XCOMP_MODULE_KEY_FILE" run "$TMP/signed.xcm" --input "$IN"

# 5. The compile cache: entries bound to their keys.
entries() { ls "$XCOMP_CACHE_DIR" 2>/dev/null | sort; }
run_xcomp compile "$MLP/model.onnx" --target cpu -o "$TMP/a.xcm"
grep -q "cache miss" "$TMP/out" || fail "mlp: expected a miss: $(cat "$TMP/out")"
mlp_entry="$(entries)"
run_xcomp compile "$CNN/model.onnx" --target cpu -o "$TMP/b.xcm"
grep -q "cache miss" "$TMP/out" || fail "cnn: expected a miss: $(cat "$TMP/out")"
cnn_entry="$(comm -13 <(echo "$mlp_entry") <(entries))"
[ -n "$mlp_entry" ] && [ -n "$cnn_entry" ] || fail "cache entries not found: '$mlp_entry' '$cnn_entry'"
[ "$(stat -c %a "$XCOMP_CACHE_DIR")" = 700 ] || fail "cache folder mode $(stat -c %a "$XCOMP_CACHE_DIR")"
[ "$(stat -c %a "$XCOMP_CACHE_DIR/$cnn_entry")" = 600 ] || fail "cache entry mode $(stat -c %a "$XCOMP_CACHE_DIR/$cnn_entry")"
cp "$XCOMP_CACHE_DIR/$mlp_entry" "$XCOMP_CACHE_DIR/$cnn_entry"
run_xcomp compile "$CNN/model.onnx" --target cpu -o "$TMP/b2.xcm"
[ "$RC" -eq 0 ] || fail "cnn over a foreign entry: exit $RC: $(head -c 2000 "$TMP/err")"
grep -q "cache miss" "$TMP/out" || fail "a foreign module under cnn's key was served: $(cat "$TMP/out")"
cmp -s "$TMP/b.xcm" "$TMP/b2.xcm" || fail "cnn recompiled over a foreign entry differs from the first compile"
cmp -s "$XCOMP_CACHE_DIR/$mlp_entry" "$XCOMP_CACHE_DIR/$cnn_entry" && fail "the foreign entry was not replaced"
run_xcomp compile "$CNN/model.onnx" --target cpu -o "$TMP/b3.xcm"
grep -q "cache hit" "$TMP/out" || fail "the replaced entry is not a hit: $(cat "$TMP/out")"
expect_ok run "$CNN/model.onnx" --target cpu --input "@$CNN/test_data_set_0/input_0.pb" --output-dir "$TMP/o6" >/dev/null
expect_ok compare "$TMP/o6/output_0.npy" "$CNN/test_data_set_0/output_0.pb"

finish
