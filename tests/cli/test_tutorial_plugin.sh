#!/usr/bin/env bash
# docs/tutorial-write-a-plugin.md, run as written: install the SDK from the
# build being tested, turn examples/npu-plugin into a target of another
# name, build it against the SDK alone, compile, run and compare a model on
# it, run the op suite and the models, bench it.
set -u
. "$(dirname "$0")/helpers.bash"
. "$(dirname "$0")/tutorial.bash"
export XCOMP_CACHE_DIR="$TMP/cache"
command -v cmake >/dev/null || { echo "skipped: no cmake"; exit 77; }
run_tutorial "$XCOMP_SRC/docs/tutorial-write-a-plugin.md"
if [ "$RC" -eq 0 ]; then
  grep -q "^  mynpu:0 " "$TMP/tutorial.log" || fail "xcomp targets did not list mynpu:0"
  grep -q "match: f32\[4,10\]" "$TMP/tutorial.log" || fail "the tutorial's compare printed no match"
  grep -q "xcomp bench: .* on mynpu" "$TMP/tutorial.log" || fail "the tutorial's bench did not run on mynpu"
fi
finish
