#!/usr/bin/env bash
# docs/ops.md is generated from the op registry: it must equal the output of
# `xcomp ops --markdown`, so the docs always match the code. Regenerate with
#   build/xcomp ops --markdown > docs/ops.md
set -u
. "$(dirname "$0")/helpers.bash"

if expect_ok ops --markdown; then
  if ! diff -u "$XCOMP_SRC/docs/ops.md" "$TMP/out" >"$TMP/diff"; then
    fail "docs/ops.md is out of date; regenerate it with 'xcomp ops --markdown > docs/ops.md':
$(head -40 "$TMP/diff")"
  fi
fi
# docs/cli.md documents every subcommand.
for cmd in run dump compare conform ops targets; do
  grep -q "xcomp $cmd" "$XCOMP_SRC/docs/cli.md" || fail "docs/cli.md does not document 'xcomp $cmd'"
done
finish
