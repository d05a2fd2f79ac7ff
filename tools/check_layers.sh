#!/usr/bin/env bash
# The layer rules (docs/driver.md), checked over the tracked files:
#   1. runtime/* and include/xcomp/* include no passes header (xcomp/passes.h,
#      fusion.h, lower.h, pass_check.h), except those headers themselves:
#      the runtime runs modules, the driver runs the pipeline;
#   2. tools/* include no target-private header (targets/<t>/...): the CLI
#      reaches targets through xcomp/target.h only;
#   3. no tracked .c file is over 1,500 lines, except those listed in
#      tools/layers-allow.txt (each with its reason).
# Prints one line per violation naming the file and exits 1; exits 0 when
# clean. Run from anywhere inside the repository.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 2
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files() { git ls-files -- "$@"; }
else
  files() { for p in "$@"; do find . -path "./build*" -prune -o -path "./$p" -type f -print | sed 's|^\./||'; done; }
fi
status=0
fail() { echo "check_layers: $*"; status=1; }

passes_headers='xcomp/(passes|fusion|lower|pass_check)\.h'
while IFS= read -r f; do
  [ -f "$f" ] || continue
  case "$f" in
    include/xcomp/passes.h|include/xcomp/fusion.h|include/xcomp/lower.h|include/xcomp/pass_check.h) continue ;;
  esac
  grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]${passes_headers}[>\"]" "$f" | while IFS= read -r hit; do
    echo "check_layers: $f:${hit%%:*}: includes a passes header (${hit#*:}); runtime/ and include/xcomp/ stay below the passes (docs/driver.md)"
  done | grep . && status=1
done < <(files 'runtime/*' 'include/xcomp/*')

while IFS= read -r f; do
  [ -f "$f" ] || continue
  grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]([.][.]/)*targets/[^\">]+/[^\">]+[>\"]" "$f" | while IFS= read -r hit; do
    echo "check_layers: $f:${hit%%:*}: includes a target-private header (${hit#*:}); tools use xcomp/target.h (docs/driver.md)"
  done | grep . && status=1
done < <(files 'tools/*')

allow="tools/layers-allow.txt"
allowed() { [ -f "$allow" ] && grep -v '^[[:space:]]*#' "$allow" | awk '{print $1}' | grep -qxF "$1"; }
while IFS= read -r f; do
  [ -f "$f" ] || continue
  n=$(wc -l < "$f")
  if [ "$n" -gt 1500 ] && ! allowed "$f"; then
    fail "$f: $n lines, over the 1,500-line limit (split it by topic; see tools/layers-allow.txt)"
  fi
done < <(files '*.c')

[ "$status" -eq 0 ] && echo "check_layers: ok"
exit "$status"
