#!/usr/bin/env bash
# The semantics-preservation harness over the real models and the .xir
# examples: every pass of the -O3 pipeline keeps the interpreter's results
# within the f32 tolerance, on the stored inputs and on random ones. Also
# the pass options of dump/run and their errors.
set -u
source "$(dirname "$0")/helpers.bash"

for x in "$XCOMP_SRC"/examples/*.xir; do
  run_xcomp check-passes "$x" --seeds 3
  [ "$RC" -eq 0 ] || fail "check-passes $x: $(cat "$TMP/out" "$TMP/err")"
  grep -q "all passes preserve" "$TMP/out" || fail "check-passes $x printed no verdict"
done

for m in mlp cnn gpt2-tiny bert-tiny; do
  run_xcomp check-passes "$MODELS/$m/model.onnx" --data "$MODELS/$m/test_data_set_0" --seeds 3
  [ "$RC" -eq 0 ] || fail "check-passes $m: $(cat "$TMP/out" "$TMP/err")"
  grep -q "all passes preserve" "$TMP/out" || fail "check-passes $m printed no verdict"
done
# bert-tiny's static shape subgraph folds away; its attention is recognized.
run_xcomp check-passes "$MODELS/bert-tiny/model.onnx" --data "$MODELS/bert-tiny/test_data_set_0"
grep -q "fold-constants .* -> .* nodes, 4 input sets agree" "$TMP/out" || fail "bert-tiny: fold-constants did not fold"
grep -q "pattern-attention .* -> .* nodes, 4 input sets agree" "$TMP/out" || fail "bert-tiny: attention not recognized: $(cat "$TMP/out")"

# Pass options.
cat >"$TMP/g.xir" <<'XIR'
xir 1
graph g opset 23 {
  input x: f32[2, 3]
  a = Identity(x)
  y = Relu(a)
  output y
}
XIR
run_xcomp dump "$TMP/g.xir" -O2
[ "$RC" -eq 0 ] || fail "dump -O2: $(cat "$TMP/err")"
grep -q "Identity" "$TMP/out" && fail "dump -O2 kept the Identity"
run_xcomp dump "$TMP/g.xir" -O2 --disable-pass=simplify
grep -q "Identity" "$TMP/out" || fail "--disable-pass=simplify still removed the Identity"
run_xcomp dump "$TMP/g.xir" --pass-timing --print-after=simplify
grep -q "xcomp: pass simplify" "$TMP/err" || fail "--pass-timing printed nothing"
grep -q "# after pass simplify" "$TMP/err" || fail "--print-after printed nothing"
run_xcomp dump "$TMP/g.xir" --disable-pass=nope
[ "$RC" -eq 1 ] && grep -q "unknown pass 'nope'" "$TMP/err" || fail "unknown pass not reported: $(cat "$TMP/err")"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "unknown pass: more than one error line"
run_xcomp dump "$TMP/g.xir" -O5
[ "$RC" -eq 2 ] || fail "-O5 should be a usage error"

# Stages of dump: the fusion plan as text and dot, and per-stage statistics.
T="$XCOMP_SRC/examples/transformer.xir"
run_xcomp dump "$T" --stage fused
[ "$RC" -eq 0 ] || fail "dump --stage fused: $(cat "$TMP/err")"
head -1 "$TMP/out" | grep -q '^fusion plan .* groups, .* kernels, .* nodes' || fail "fused: no plan header: $(head -1 "$TMP/out")"
grep -q '^group 0 ' "$TMP/out" || fail "fused: no group lines"
grep -q 'attention' "$TMP/out" || fail "fused: the transformer's attention is not a group: $(cat "$TMP/out")"
run_xcomp dump "$T" --stage fused --format dot
head -1 "$TMP/out" | grep -q '^digraph' || fail "--format dot is not Graphviz"
grep -q 'subgraph cluster_g0' "$TMP/out" || fail "dot: groups are not clusters"
run_xcomp dump "$T" --stats
[ "$(grep -c '^== stage' "$TMP/out")" -eq 3 ] || fail "--stats: expected 3 stages: $(cat "$TMP/out")"
grep -q '^groups: ' "$TMP/out" || fail "--stats: no group count"
grep -q '^bytes moved between kernels' "$TMP/out" || fail "--stats: no bytes moved"
run_xcomp dump "$T" --stage optimized
grep -q '^xir 1' "$TMP/out" || fail "--stage optimized is not .xir"
run_xcomp dump "$T" --format dot
[ "$RC" -eq 2 ] || fail "--format without --stage fused should be a usage error"
run_xcomp dump "$T" --stage nope
[ "$RC" -eq 2 ] || fail "--stage nope should be a usage error"
run_xcomp dump "$T" --target nope
[ "$RC" -eq 1 ] && grep -q "no target or device matches 'nope'" "$TMP/err" || fail "unknown target: $(cat "$TMP/err")"

# The cpu target prefers NHWC: the layout pass rewrites the CNN, and the
# harness checks the rewritten graph computes the same.
run_xcomp check-passes "$MODELS/cnn/model.onnx" --data "$MODELS/cnn/test_data_set_0" --target cpu
[ "$RC" -eq 0 ] || fail "check-passes --target cpu: $(cat "$TMP/out" "$TMP/err")"
grep -q "^pass layout .* nodes, 4 input sets agree" "$TMP/out" || fail "layout did not run for cpu: $(cat "$TMP/out")"
finish
