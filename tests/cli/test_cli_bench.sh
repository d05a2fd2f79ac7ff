#!/usr/bin/env bash
# xcomp bench: random and given inputs, --shape for symbolic dims, the
# summary lines, --json (one object with the documented keys), a .xcm, the
# opencl target on PoCL when a device is present, the usage errors, and
# device-resident runs (`bench --resident`, `run --resident`: the same
# outputs as host runs; refused where memory has no device addresses).
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

GPT2="$MODELS/gpt2-tiny"
cat >"$TMP/sym.xir" <<'XIR'
xir 1
graph sym opset 23 {
  input x: f32[n,3]
  y = Relu(x)
  output y
}
XIR

# Random inputs, a fixed number of runs; the summary names every figure.
run_xcomp bench "$GPT2/model.onnx" --target cpu --warmup 1 --iterations 3
if [ "$RC" -ne 0 ]; then
  fail "bench gpt2-tiny exited $RC: $(head -c 2000 "$TMP/err")"
else
  for key in "compile " "cache miss" "runs           3 after 1 warm-up" "latency " "median" "p90" "p99" \
             "throughput" "peak memory" "launches"; do
    grep -qF -- "$key" "$TMP/out" || fail "bench summary lacks '$key': $(cat "$TMP/out")"
  done
  # Not a terminal: plain progress lines on stderr.
  grep -q '^xcomp bench: run 3/3' "$TMP/err" || fail "bench printed no plain progress line: $(cat "$TMP/err")"
fi

# The second compile comes from the cache; --json prints one object, nothing else.
run_xcomp bench "$GPT2/model.onnx" --warmup 0 --iterations 2 --json
if [ "$RC" -ne 0 ]; then
  fail "bench --json exited $RC: $(head -c 2000 "$TMP/err")"
else
  [ "$(head -c 1 "$TMP/out")" = "{" ] && [ "$(tail -n 1 "$TMP/out")" = "}" ] ||
    fail "bench --json did not print one JSON object: $(cat "$TMP/out")"
  for key in '"target": "cpu"' '"how": "cache hit"' '"iterations": 2' '"latency_ms"' '"median"' '"p99"' \
             '"device_ms"' '"device_timing"' '"throughput_per_s"' '"peak_memory_bytes"' '"phases_ms"' \
             '"session"' '"passes"' '"vendor_race"' '"cache_store"'; do
    grep -qF -- "$key" "$TMP/out" || fail "bench --json lacks $key: $(cat "$TMP/out")"
  done
  [ -s "$TMP/err" ] && fail "bench --json wrote to stderr: $(head -c 2000 "$TMP/err")"
fi
# A cold compile's phases are in the JSON (stderr stays empty): the kernels
# phase took time; a cache hit's (above) did not.
run_xcomp bench "$GPT2/model.onnx" --warmup 0 --iterations 1 --json --no-cache
[ "$RC" -eq 0 ] || fail "bench --json --no-cache exited $RC: $(head -c 2000 "$TMP/err")"
phases=$(tr -d '\n ' <"$TMP/out" | grep -o '"phases_ms":{[^}]*}')
kernels_ms=$(printf '%s' "$phases" | sed -n 's/.*"kernels":\([0-9.e+-]*\).*/\1/p')
[ -n "$kernels_ms" ] && awk -v k="$kernels_ms" 'BEGIN { exit !(k > 0) }' ||
  fail "bench --json --no-cache: no kernels phase time: $phases"
[ -s "$TMP/err" ] && fail "bench --json --no-cache wrote to stderr: $(head -c 2000 "$TMP/err")"

# Given inputs (--input like run), --time, and a compiled module.
run_xcomp compile "$GPT2/model.onnx" -o "$TMP/gpt2.xcm"
[ "$RC" -eq 0 ] || fail "compile gpt2-tiny exited $RC: $(head -c 2000 "$TMP/err")"
run_xcomp bench "$TMP/gpt2.xcm" --input "@$GPT2/test_data_set_0/input_0.pb" --warmup 0 --time 0.2
if [ "$RC" -ne 0 ]; then
  fail "bench gpt2.xcm --time exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "compiled module loaded" "$TMP/out" || fail "bench of a .xcm does not say it was loaded: $(cat "$TMP/out")"
fi

# Symbolic dims: --shape binds them; without it the error names the input.
run_xcomp bench "$TMP/sym.xir" --shape x=4x3 --iterations 2 --json
[ "$RC" -eq 0 ] || fail "bench --shape x=4x3 exited $RC: $(head -c 2000 "$TMP/err")"
expect_error 1 "--shape x=DIMS" bench "$TMP/sym.xir" --iterations 1 --json
expect_error 1 "no input 'y'" bench "$TMP/sym.xir" --shape y=4x3 --iterations 1
expect_error 1 "has rank 2" bench "$TMP/sym.xir" --shape x=4 --iterations 1
expect_error 1 "DIMS must be sizes" bench "$TMP/sym.xir" --shape x=4xq --iterations 1
expect_error 2 "not both" bench "$TMP/sym.xir" --iterations 2 --time 1
expect_error 2 "--iterations needs" bench "$TMP/sym.xir" --iterations 0
expect_error 2 "unknown option" bench "$TMP/sym.xir" --frobnicate
expect_error 2 "no MODEL" bench
expect_error 1 "reference interpreter" bench "$TMP/sym.xir" --target ref
expect_error 1 "nosuch" bench "$TMP/sym.xir" --target nosuch

# Device-resident runs on cpu: bench says so; run writes the same outputs
# as a host run (the last run's, read once after it).
run_xcomp bench "$GPT2/model.onnx" --target cpu --warmup 1 --iterations 3 --resident --json
if [ "$RC" -ne 0 ]; then
  fail "bench --resident exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -qF '"resident": true' "$TMP/out" || fail "bench --resident --json: $(cat "$TMP/out")"
fi
run_xcomp run "$GPT2/model.onnx" --target cpu --input "@$GPT2/test_data_set_0/input_0.pb" --repeat 3 \
  --resident --output-dir "$TMP/resident"
if [ "$RC" -ne 0 ]; then
  fail "run --resident exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "3 runs: median .* ms wall .* device .*device-resident" "$TMP/err" ||
    fail "run --resident --repeat 3 did not split wall and device time: $(cat "$TMP/err")"
  run_xcomp run "$GPT2/model.onnx" --target cpu --input "@$GPT2/test_data_set_0/input_0.pb" \
    --output-dir "$TMP/host"
  cmp -s "$TMP/resident/output_0.npy" "$TMP/host/output_0.npy" ||
    fail "run --resident wrote other outputs than a host run"
  run_xcomp compare "$TMP/resident/output_0.npy" "$GPT2/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5
  [ "$RC" -eq 0 ] || fail "run --resident output differs from the stored one: $(cat "$TMP/out")"
fi
expect_error 2 "--resident needs a compiled target" run "$TMP/sym.xir" --resident

# OpenCL on PoCL, where a device is present.
if "$XCOMP" targets 2>/dev/null | grep -q '^  opencl:0'; then
  run_xcomp bench "$MODELS/mlp/model.onnx" --target opencl --warmup 1 --iterations 2 --json
  if [ "$RC" -ne 0 ]; then
    fail "bench on opencl exited $RC: $(head -c 2000 "$TMP/err")"
  else
    grep -qF '"target": "opencl"' "$TMP/out" || fail "bench on opencl: $(cat "$TMP/out")"
  fi
  expect_error 1 "has no device addresses" bench "$MODELS/mlp/model.onnx" --target opencl --iterations 1 --resident
else
  echo "note: no OpenCL device; the opencl part was not run"
fi

finish
