#!/usr/bin/env bash
# The docs match the binary. docs/ops.md is generated from the op registry:
# it must equal the output of `xcomp ops --markdown`. Regenerate with
#   build/xcomp ops --markdown > docs/ops.md
# docs/cli.md is written by hand and checked against every --help below.
set -u
. "$(dirname "$0")/helpers.bash"

if expect_ok ops --markdown; then
  if ! diff -u "$XCOMP_SRC/docs/ops.md" "$TMP/out" >"$TMP/diff"; then
    fail "docs/ops.md is out of date; regenerate it with 'xcomp ops --markdown > docs/ops.md':
$(head -40 "$TMP/diff")"
  fi
fi
# docs/cli.md documents every subcommand the binary lists (a section
# "## xcomp CMD") and every option of its --help; an option the docs give a
# command must be one its --help knows (pass options have their own section).
CLI_MD="$XCOMP_SRC/docs/cli.md"
"$XCOMP" --help >"$TMP/overview"
cmds=$(sed -n '/^commands:/,/^$/p' "$TMP/overview" | awk 'NR > 1 && $1 != "" && $1 != "help" { print $1 }')
[ -n "$cmds" ] || fail "xcomp --help lists no commands"
for cmd in $cmds; do
  grep -qx "## xcomp $cmd" "$CLI_MD" || { fail "docs/cli.md has no section '## xcomp $cmd'"; continue; }
  grep -qF "| \`xcomp $cmd\` |" "$CLI_MD" || fail "docs/cli.md's command table lacks 'xcomp $cmd'"
  "$XCOMP" "$cmd" --help >"$TMP/help" 2>&1
  section=$(awk -v h="## xcomp $cmd" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$CLI_MD")
  passes=$(awk '$0 == "## Pass options" { on = 1; next } /^## / { on = 0 } on' "$CLI_MD")
  for opt in $(grep -oE -- '(^|[ [(|,])--[a-z][a-z0-9-]*' "$TMP/help" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    printf '%s\n%s\n' "$section" "$passes" | grep -qF -- "$opt" ||
      fail "docs/cli.md's 'xcomp $cmd' section does not mention $opt (in 'xcomp $cmd --help')"
  done
  for opt in $(printf '%s\n' "$section" | grep -oE -- '(^|[ `[(|,])--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    grep -qF -- "$opt" "$TMP/help" ||
      fail "docs/cli.md gives 'xcomp $cmd' the option $opt, which 'xcomp $cmd --help' does not know"
  done
done
head -1 "$TMP/overview" | grep -qF "$(sed -n '/^```$/,/^```$/p' "$CLI_MD" | sed -n 2p | sed 's/ \[run options\]//' | cut -c1-30)" ||
  fail "docs/cli.md's first usage line is not the one 'xcomp --help' starts with"
finish
