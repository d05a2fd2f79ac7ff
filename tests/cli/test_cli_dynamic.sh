#!/usr/bin/env bash
# Shape buckets: xcomp compile --dynamic NAME=MIN..MAX [--buckets LIST].
# Exported transformers with a dynamic sequence (GPT-2 with a causal mask,
# a BERT-style encoder with an attention-mask input) compile into one module;
# runs at a bucket's size run that bucket, smaller sizes run the next bucket
# with padded inputs and sliced outputs, and every run agrees with the
# interpreter on the unpadded model. A model the padding check refuses
# (attention over every key, no mask) says why at compile time and runs the
# generic module for sizes between buckets, still agreeing. Sizes outside the
# range and bad options are refused with clear errors; the cache tells
# bucket lists apart.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"
DYN="$XCOMP_SRC/tests/dynamic"

# ids_npy FILE N: int64 [1, N] token ids (i * 37 + 11) % 512.
ids_npy() {
  local hex="" i v
  for ((i = 0; i < $2; i++)); do
    v=$(((i * 37 + 11) % 512))
    hex="$hex $(printf '%02x%02x000000000000' $((v & 255)) $((v >> 8)))"
  done
  make_npy "$1" '<i8' "1, $2" "$hex"
}
# mask_npy FILE N: int64 [1, N], ones with the last two zero.
mask_npy() {
  local hex="" i
  for ((i = 0; i < $2; i++)); do
    if [ "$i" -ge $(($2 - 2)) ]; then hex="$hex 0000000000000000"; else hex="$hex 0100000000000000"; fi
  done
  make_npy "$1" '<i8' "1, $2" "$hex"
}

# agree MODEL XCM N EXPECT INPUTS...: runs XCM and the interpreter on MODEL,
# checks the run's bucket line holds EXPECT and the outputs agree.
agree() {
  local model="$1" xcm="$2" n="$3" expect="$4"
  shift 4
  rm -rf "$TMP/r" "$TMP/x"
  if ! expect_ok run "$model" --target ref "$@" --output-dir "$TMP/r"; then return; fi
  run_xcomp run "$xcm" "$@" --output-dir "$TMP/x"
  if [ "$RC" -ne 0 ]; then
    fail "run $xcm at $n exited $RC: $(head -c 2000 "$TMP/err")"
    return
  fi
  grep -qF -- "$expect" "$TMP/err" || fail "run $xcm at $n: expected '$expect' on stderr: $(cat "$TMP/err")"
  grep -q "\[1,$n," "$TMP/out" || fail "run $xcm at $n: output shape: $(cat "$TMP/out")"
  run_xcomp compare "$TMP/x/output_0.npy" "$TMP/r/output_0.npy" --rtol 1e-4 --atol 1e-5 --rel-l2 1e-5
  [ "$RC" -eq 0 ] || fail "$xcm at $n differs from the interpreter: $(cat "$TMP/out" "$TMP/err")"
}

for n in 5 8 20 32 33; do ids_npy "$TMP/ids$n.npy" "$n"; mask_npy "$TMP/mask$n.npy" "$n"; done

# GPT-2, causal: buckets 8, 16 and the range's end 32.
run_xcomp compile "$DYN/gpt2-dyn/model.onnx" --dynamic seq=1..32 --buckets 16,8 -o "$TMP/gpt2.xcm"
if [ "$RC" -ne 0 ]; then
  fail "compile gpt2-dyn --dynamic exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "shape buckets of 'seq' (1..32): 8 (.*), 16 (.*), 32 (" "$TMP/out" || fail "compile summary: $(cat "$TMP/out")"
  grep -q "inputs padded with zeros" "$TMP/out" || fail "gpt2-dyn should pad: $(cat "$TMP/out")"
  agree "$DYN/gpt2-dyn/model.onnx" "$TMP/gpt2.xcm" 5 "seq=5 ran shape bucket 8 (inputs padded" --input "input_ids=@$TMP/ids5.npy"
  agree "$DYN/gpt2-dyn/model.onnx" "$TMP/gpt2.xcm" 8 "seq=8 ran shape bucket 8" --input "input_ids=@$TMP/ids8.npy"
  agree "$DYN/gpt2-dyn/model.onnx" "$TMP/gpt2.xcm" 20 "seq=20 ran shape bucket 32 (inputs padded" --input "input_ids=@$TMP/ids20.npy"
  # repeated runs write the first run's outputs again (padded and exact)
  agree "$DYN/gpt2-dyn/model.onnx" "$TMP/gpt2.xcm" 20 "seq=20 ran shape bucket 32 (inputs padded" --input "input_ids=@$TMP/ids20.npy" --repeat 3
  agree "$DYN/gpt2-dyn/model.onnx" "$TMP/gpt2.xcm" 8 "seq=8 ran shape bucket 8" --input "input_ids=@$TMP/ids8.npy" --repeat 3
  expect_error 1 "compiled for seq in 1..32" run "$TMP/gpt2.xcm" --input "input_ids=@$TMP/ids33.npy"
  # The profile times the bucket's kernels.
  run_xcomp run "$TMP/gpt2.xcm" --input "input_ids=@$TMP/ids5.npy" --profile --output-dir "$TMP/x"
  grep -q "^profile: " "$TMP/out" "$TMP/err" || fail "no profile for a bucketed run: $(cat "$TMP/out" "$TMP/err")"
  # The same compile hits the cache; other buckets do not.
  run_xcomp compile "$DYN/gpt2-dyn/model.onnx" --dynamic seq=1..32 --buckets 16,8 -o "$TMP/gpt2b.xcm"
  grep -q "cache hit" "$TMP/out" || fail "second compile missed the cache: $(cat "$TMP/out")"
  run_xcomp compile "$DYN/gpt2-dyn/model.onnx" --dynamic seq=1..32 --buckets 16 -o "$TMP/gpt2c.xcm"
  grep -q "cache miss" "$TMP/out" || fail "other buckets hit the cache: $(cat "$TMP/out")"
  grep -q ": 16 (.*), 32 (" "$TMP/out" || fail "buckets 16 and 32 expected: $(cat "$TMP/out")"
fi

# An encoder with an attention-mask input (padded with zeros: masked keys).
run_xcomp compile "$DYN/encoder-dyn/model.onnx" --dynamic input_ids=2..32 --buckets 8 -o "$TMP/enc.xcm"
if [ "$RC" -ne 0 ]; then
  fail "compile encoder-dyn --dynamic exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "inputs padded with zeros" "$TMP/out" || fail "encoder-dyn should pad: $(cat "$TMP/out")"
  agree "$DYN/encoder-dyn/model.onnx" "$TMP/enc.xcm" 5 "seq=5 ran shape bucket 8 (inputs padded" \
    --input "input_ids=@$TMP/ids5.npy" --input "attention_mask=@$TMP/mask5.npy"
  agree "$DYN/encoder-dyn/model.onnx" "$TMP/enc.xcm" 20 "seq=20 ran shape bucket 32 (inputs padded" \
    --input "input_ids=@$TMP/ids20.npy" --input "attention_mask=@$TMP/mask20.npy"
fi

# Attention over every key without a mask: padding would change the
# numbers, so sizes between buckets run the generic module.
cat >"$TMP/bidir.xir" <<'XIR'
xir 1
graph bidir opset 23 {
  input x: f32[1, seq, 4]
  kt = Transpose(x) {perm: [0, 2, 1]}
  s = MatMul(x, kt)
  p = Softmax(s) {axis: -1} @all_keys
  y = MatMul(p, x)
  output y
}
XIR
run_xcomp compile "$TMP/bidir.xir" --dynamic seq=1..16 --buckets 8 -o "$TMP/bidir.xcm"
if [ "$RC" -ne 0 ]; then
  fail "compile bidir --dynamic exited $RC: $(head -c 2000 "$TMP/err")"
else
  grep -q "the generic module (not padded: .*all_keys" "$TMP/out" || fail "bidir refusal: $(cat "$TMP/out")"
  hex=""
  for ((i = 0; i < 20; i++)); do hex="$hex 0000$(printf '%02x' $((0x30 + i % 16)))3f"; done
  make_npy "$TMP/x5.npy" '<f4' '1, 5, 4' "$hex"
  hex=""
  for ((i = 0; i < 32; i++)); do hex="$hex 0000$(printf '%02x' $((0x30 + i % 16)))3f"; done
  make_npy "$TMP/x8.npy" '<f4' '1, 8, 4' "$hex"
  rm -rf "$TMP/r" "$TMP/x"
  agree "$TMP/bidir.xir" "$TMP/bidir.xcm" 5 "seq=5 ran the generic module" --input "x=@$TMP/x5.npy"
  agree "$TMP/bidir.xir" "$TMP/bidir.xcm" 8 "seq=8 ran shape bucket 8" --input "x=@$TMP/x8.npy"
fi

# Misuse.
expect_error 1 "no input dim or input is named 'len'" compile "$DYN/gpt2-dyn/model.onnx" --dynamic len=1..8 -o "$TMP/e.xcm"
expect_error 1 "expected NAME=MIN..MAX" compile "$DYN/gpt2-dyn/model.onnx" --dynamic seq=8..4 -o "$TMP/e.xcm"
expect_error 1 "outside --dynamic's range" compile "$DYN/gpt2-dyn/model.onnx" --dynamic seq=1..8 --buckets 4,40 -o "$TMP/e.xcm"
expect_error 2 "--buckets goes with --dynamic" compile "$DYN/gpt2-dyn/model.onnx" --buckets 4 -o "$TMP/e.xcm"
expect_error 1 "re-export it with a dynamic axis" compile "$MODELS/gpt2-tiny/model.onnx" --dynamic input_ids=1..8 -o "$TMP/e.xcm"
finish
