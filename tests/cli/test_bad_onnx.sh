#!/usr/bin/env bash
# The ONNX / .npy / .pb bad-input corpus (tests/bad-input/EXPECTED) through
# the CLI: `xcomp dump` of each .onnx and `xcomp compare F F` of each tensor
# file must exit 1 with exactly one "xcomp: error: ..." line (no crash, no
# sanitizer report) holding the listed substring. Entries found by fuzzing
# (fuzz_*) are listed for the importer's lenient mode, so only their exit
# status and single error line are checked here.
set -u
. "$(dirname "$0")/helpers.bash"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"

CORPUS="$XCOMP_SRC/tests/bad-input"
EXPECTED="$CORPUS/EXPECTED"
[ -f "$EXPECTED" ] || { echo "missing $EXPECTED" >&2; exit 1; }

checked=0
while IFS=$'\t' read -r file mode needle; do
  case "$file" in ''|'#'*) continue ;; esac
  checked=$((checked + 1))
  if [ "$mode" = tensor ]; then
    ( cd "$CORPUS" && timeout 60 "$XCOMP" compare "$file" "$file" >"$TMP/out" 2>"$TMP/err" )
  else
    ( cd "$CORPUS" && timeout 60 "$XCOMP" dump "$file" >"$TMP/out" 2>"$TMP/err" )
  fi
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$file: exit $rc (expected 1): $(head -c 2000 "$TMP/err")"
    continue
  fi
  n=$(wc -l <"$TMP/err")
  if [ "$n" -ne 1 ] || ! grep -q '^xcomp: error: ' "$TMP/err"; then
    fail "$file: expected one 'xcomp: error:' line, got: $(head -c 2000 "$TMP/err")"
    continue
  fi
  case "$file" in fuzz_*) continue ;; esac
  grep -qF -- "$needle" "$TMP/err" || fail "$file: error lacks '$needle': $(cat "$TMP/err")"
done <"$EXPECTED"
[ "$checked" -ge 60 ] || fail "only $checked corpus entries"
finish
