#!/usr/bin/env bash
# The command-line surface: help for every subcommand, version, targets,
# ops, unknown commands and options.
set -u
. "$(dirname "$0")/helpers.bash"

for cmd in run dump compare conform ops targets; do
  if expect_ok "$cmd" --help; then
    grep -q "^usage: xcomp $cmd" "$TMP/out" || fail "$cmd --help lacks 'usage: xcomp $cmd'"
  fi
  if expect_ok help "$cmd"; then
    grep -q "^usage: xcomp $cmd" "$TMP/out" || fail "help $cmd lacks its usage"
  fi
done
expect_ok run --help && for opt in --target --input --output-dir --trace; do
  grep -q -- "$opt" "$TMP/out" || fail "run --help does not mention $opt"
done
expect_ok conform --help && for opt in --onnx-tests --models --filter --report --markdown --strict; do
  grep -q -- "$opt" "$TMP/out" || fail "conform --help does not mention $opt"
done

if expect_ok help; then
  for cmd in run dump compare conform ops targets; do
    grep -q "^  $cmd " "$TMP/out" || fail "help does not list $cmd"
  done
fi
expect_ok --help

if expect_ok --version; then
  grep -Eq '^xcomp [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" || fail "--version printed: $(cat "$TMP/out")"
fi

if expect_ok targets; then
  grep -q '^ref ' "$TMP/out" || fail "targets does not list ref"
  grep -qi 'reference interpreter' "$TMP/out" || fail "targets lacks the description of ref"
fi

if expect_ok ops; then
  grep -q '^Relu (ai.onnx)  inputs 1, outputs 1$' "$TMP/out" || fail "ops does not list Relu with its arity"
  n_text=$(grep -c '^[A-Za-z].* (.*)  inputs ' "$TMP/out")
fi
if expect_ok ops --markdown; then
  grep -q '^| op | domain | inputs | outputs | attributes | dtypes | summary |$' "$TMP/out" ||
    fail "ops --markdown lacks the table header"
  # "N ops." matches the rows of the table and the entries of the text listing.
  n_said=$(sed -n 's/^\([0-9][0-9]*\) ops\.$/\1/p' "$TMP/out")
  n_rows=$(grep -c '^| [A-Za-z]' "$TMP/out")
  n_rows=$((n_rows - 1)) # the header row
  [ -n "$n_said" ] && [ "$n_said" -eq "$n_rows" ] && [ "$n_rows" -eq "${n_text:-0}" ] ||
    fail "ops --markdown says '$n_said ops' with $n_rows rows; text lists ${n_text:-?}"
  grep -q '^| Relu | ai.onnx | 1 | 1 | - |' "$TMP/out" || fail "ops --markdown lacks the Relu row"
  grep -q '`to: int (required)`' "$TMP/out" || fail "ops --markdown does not mark Cast's 'to' required"
fi

# Unknown things are one-line errors (exit 1); malformed command lines are
# usage errors (exit 2).
expect_error 1 "unknown command 'frobnicate'" frobnicate
expect_error 1 "unknown command 'nope'" help nope
expect_error 1 "unknown option '--bogus'" --bogus
expect_error 2 "unknown option '--bogus'" run --bogus
expect_error 2 "no MODEL given" run
expect_error 2 "no MODEL given" dump
expect_error 2 "expected two tensor files" compare a.npy
expect_error 2 "--rtol" compare a.npy b.npy --rtol banana
expect_error 2 "--onnx-tests" conform --target ref
expect_error 2 "unexpected argument" targets extra
expect_error 2 "unexpected argument" ops --html
run_xcomp
[ "$RC" -eq 2 ] || fail "xcomp without arguments exited $RC, expected 2"

# Targets other than ref are refused by name.
printf 'xir 1\ngraph g opset 23 {\n input x: f32[2]\n y = Relu(x)\n output y\n}\n' >"$TMP/model.xir"
expect_error 1 "target 'nosuch' is not available (targets: ref, cpu, opencl" run "$TMP/model.xir" --target nosuch
expect_error 1 "no target or device matches 'nosuch'" conform --target nosuch --onnx-tests "$TMP"

finish
