#!/usr/bin/env bash
# xcomp run on the real exported .onnx models in tests/models (copies of
# ../shared/models), compared with the stored ONNX Runtime outputs through
# xcomp compare, and xcomp conform --models on them.
set -u
. "$(dirname "$0")/helpers.bash"

[ -f "$MODELS/mlp/model.onnx" ] || { echo "test_cli_models.sh: $MODELS/mlp/model.onnx missing" >&2; exit 1; }

for m in mlp cnn; do
  d="$MODELS/$m"
  if expect_ok run "$d/model.onnx" --input "@$d/test_data_set_0/input_0.pb" --output-dir "$TMP/$m"; then
    grep -q "^output 0 " "$TMP/out" || fail "run $m printed no output line: $(cat "$TMP/out")"
    # Tolerance of the f32 row of the conformance table.
    expect_ok compare "$TMP/$m/output_0.npy" "$d/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5 --rel-l2 1e-5
  fi
  # dump of an imported model prints .xir that loads again.
  if expect_ok dump "$d/model.onnx"; then
    cp "$TMP/out" "$TMP/$m.xir"
    expect_ok dump "$TMP/$m.xir"
  fi
done

# The reference output of one model is not the output of another.
if [ -f "$TMP/mlp/output_0.npy" ]; then
  expect_error 1 "differ" compare "$TMP/mlp/output_0.npy" "$MODELS/mlp/test_data_set_0/input_0.pb"
fi

# Missing and wrong inputs on a real model name the input.
expect_error 1 "missing input" run "$MODELS/mlp/model.onnx" --output-dir "$TMP/x"

if expect_ok conform --target ref --models "$MODELS" --filter '^(mlp|cnn|gpt2-tiny|bert-tiny)$' -j 2; then
  for m in mlp cnn gpt2-tiny bert-tiny; do
    grep -q "^PASS  *$m\$" "$TMP/out" || fail "conform --models: $m did not pass: $(grep " $m" "$TMP/out")"
  done
  [ "$(tail -1 "$TMP/out")" = "4 passed, 0 failed, 0 skipped" ] || fail "models: $(tail -1 "$TMP/out")"
fi
# Two inputs bound by name in either order (bert-tiny: input_ids, attention_mask).
B="$MODELS/bert-tiny"
if [ -f "$B/model.onnx" ] && expect_ok dump "$B/model.onnx"; then
  in0=$(grep -m1 '^  input ' "$TMP/out" | sed 's/^  input \([^:]*\):.*/\1/')
  in1=$(grep '^  input ' "$TMP/out" | sed -n 2p | sed 's/^  input \([^:]*\):.*/\1/')
  if expect_ok run "$B/model.onnx" --input "$in1=@$B/test_data_set_0/input_1.pb" \
      --input "$in0=@$B/test_data_set_0/input_0.pb" --output-dir "$TMP/bert"; then
    expect_ok compare "$TMP/bert/output_0.npy" "$B/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5
  fi
  # One named input given: the other is missing, by name.
  expect_error 1 "missing input '$in1'" run "$B/model.onnx" --input "$in0=@$B/test_data_set_0/input_0.pb"
fi
finish
