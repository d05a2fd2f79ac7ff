#!/usr/bin/env bash
# The bad compiled-module corpus (tests/bad-input/xcm/*.xcm, made by
# make_xcm_corpus.py, and fuzzer finds listed in EXPECTED.extra): `xcomp run`
# on each file must exit 1 with exactly one line "xcomp: error: ..." holding
# the substring listed in EXPECTED, and nothing else on stderr (no crash, no
# sanitizer report). Every corpus file must be listed, and every listed file
# must exist.
set -u
. "$(dirname "$0")/helpers.bash"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
unset XCOMP_MODULE_KEY XCOMP_MODULE_KEY_FILE

CORPUS="$XCOMP_SRC/tests/bad-input/xcm"
EXPECTED="$CORPUS/EXPECTED"
[ -f "$EXPECTED" ] || { echo "missing $EXPECTED" >&2; exit 1; }

listed=0
while IFS=$'\t' read -r file needle; do
  case "$file" in ''|'#'*) continue ;; esac
  listed=$((listed + 1))
  if [ ! -f "$CORPUS/$file" ]; then
    fail "EXPECTED lists $file, which does not exist"
    continue
  fi
  ( cd "$CORPUS" && timeout 60 "$XCOMP" run "$file" >"$TMP/out" 2>"$TMP/err" )
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "run $file: exit $rc (expected 1): $(head -c 3000 "$TMP/err")"
    continue
  fi
  n=$(wc -l <"$TMP/err")
  if [ "$n" -ne 1 ] || ! grep -q '^xcomp: error: ' "$TMP/err"; then
    fail "run $file: expected exactly one 'xcomp: error:' line on stderr, got: $(head -c 3000 "$TMP/err")"
    continue
  fi
  grep -qF -- "$needle" "$TMP/err" || fail "run $file: error lacks '$needle': $(cat "$TMP/err")"
  [ -s "$TMP/out" ] && fail "run $file: wrote to stdout: $(head -c 500 "$TMP/out")"
done <"$EXPECTED"

for f in "$CORPUS"/*.xcm; do
  base=$(basename "$f")
  grep -q "^$base	" "$EXPECTED" || fail "$base is not listed in EXPECTED"
done
[ "$listed" -ge 10 ] || fail "only $listed corpus entries"
finish
