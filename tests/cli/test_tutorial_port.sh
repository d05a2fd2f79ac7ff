#!/usr/bin/env bash
# docs/tutorial-port-a-model.md, run as written: compile, dump, run and
# compare, conform, check-passes, op suite, bench, and the C deployment
# (examples/deploy/deploy.c against libxcomp.so). The accelerator is opencl
# on PoCL, or cpu where no OpenCL device is present.
set -u
. "$(dirname "$0")/helpers.bash"
. "$(dirname "$0")/tutorial.bash"
export XCOMP_CACHE_DIR="$TMP/cache"
if "$XCOMP" targets 2>/dev/null | grep -q '^  opencl:0'; then
  export T=opencl
else
  export T=cpu
  echo "note: no OpenCL device; the tutorial runs on cpu"
fi
run_tutorial "$XCOMP_SRC/docs/tutorial-port-a-model.md"
if [ "$RC" -eq 0 ]; then
  grep -q "match: f32\[1,16,512\]" "$TMP/tutorial.log" || fail "the tutorial's compare printed no match"
  grep -q "ran on .*($T)" "$TMP/tutorial.log" || fail "deploy.c did not run on $T: $(grep 'ran on' "$TMP/tutorial.log")"
  grep -q '"latency_ms"' "$TMP/clone/port/bench.json" || fail "the tutorial's bench --json wrote no JSON"
fi
finish
