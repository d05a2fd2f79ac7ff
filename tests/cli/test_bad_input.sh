#!/usr/bin/env bash
# The bad-input corpus (tests/bad-input/xir/*.xir): `xcomp dump` and
# `xcomp run` on each file must exit 1 with exactly one line
# "xcomp: error: ..." holding the substring listed in EXPECTED, and nothing
# else on stderr (so no crash, no sanitizer report: this script also runs in
# the sanitizer build, with leak detection on). Every corpus file must be
# listed, and every listed file must exist.
set -u
. "$(dirname "$0")/helpers.bash"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"

CORPUS="$XCOMP_SRC/tests/bad-input/xir"
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
  # Run from the corpus folder so messages name the file as listed.
  for cmd in dump run; do
    ( cd "$CORPUS" && timeout 60 "$XCOMP" $cmd "$file" >"$TMP/out" 2>"$TMP/err" )
    rc=$?
    if [ "$rc" -ne 1 ]; then
      fail "$cmd $file: exit $rc (expected 1): $(head -c 3000 "$TMP/err")"
      continue
    fi
    n=$(wc -l <"$TMP/err")
    if [ "$n" -ne 1 ] || ! grep -q '^xcomp: error: ' "$TMP/err"; then
      fail "$cmd $file: expected exactly one 'xcomp: error:' line on stderr, got: $(head -c 3000 "$TMP/err")"
      continue
    fi
    grep -qF -- "$needle" "$TMP/err" || fail "$cmd $file: error lacks '$needle': $(cat "$TMP/err")"
    [ -s "$TMP/out" ] && fail "$cmd $file: wrote to stdout: $(head -c 500 "$TMP/out")"
  done
done <"$EXPECTED"

for f in "$CORPUS"/*.xir; do
  base=$(basename "$f")
  grep -q "^$base	" "$EXPECTED" || fail "$base is not listed in EXPECTED"
done
[ "$listed" -ge 15 ] || fail "only $listed corpus entries"
finish
