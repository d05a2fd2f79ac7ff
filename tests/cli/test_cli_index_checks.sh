#!/usr/bin/env bash
# Index checks in generated kernels (docs/runtime.md, "Index checks"): a
# compiled Gather, GatherElements, ScatterND, MaxUnpool or RotaryEmbedding whose indices
# (position ids) are out of range
# reads and writes nothing out of bounds and the run fails with the reference
# interpreter's message naming the node, one `xcomp: error:` line and exit 1,
# on ref, tiled, cpu, opencl and spirv (the last two where a device is
# listed); valid indices, negative ones included, give the interpreter's
# outputs. Compiled targets run a compiled .xcm (compile messages stay out of
# stderr), so the index-error record also round-trips through the file.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

# A 1000-row table [1000, 4] (row r holds 4r .. 4r+3), looked up by ids.
cat >"$TMP/gather.xir" <<'XIR'
xir 1
graph gather opset 23 {
  input ids: i64[n]
  const start: f32[] = [0]
  const limit: f32[] = [4000]
  const delta: f32[] = [1]
  const shape: i64[2] = [1000, 4]
  r = Range(start, limit, delta)
  table: f32[1000, 4] = Reshape(r, shape)
  y = Gather(table, ids) {axis: 0} @embed
  output y
}
XIR
cat >"$TMP/ge.xir" <<'XIR'
xir 1
graph ge opset 23 {
  input data: f32[3, 4]
  input idx: i64[3, 2]
  y = GatherElements(data, idx) {axis: 1} @pick
  output y
}
XIR
cat >"$TMP/snd.xir" <<'XIR'
xir 1
graph snd opset 23 {
  input data: f32[5, 2]
  input idx: i64[2, 1]
  input upd: f32[2, 2]
  y = ScatterND(data, idx, upd) @put
  output y
}
XIR
cat >"$TMP/rot.xir" <<'XIR'
xir 1
graph rot opset 23 {
  input x: f32[1, 1, 3, 4]
  input cosc: f32[5, 2]
  input sinc: f32[5, 2]
  input pos: i64[1, 3]
  y = RotaryEmbedding(x, cosc, sinc, pos) @rope
  output y
}
XIR
cat >"$TMP/unpool.xir" <<'XIR'
xir 1
graph unpool opset 23 {
  input x: f32[1, 1, 2, 2]
  input idx: i64[1, 1, 2, 2]
  y = MaxUnpool(x, idx) {kernel_shape: [2, 2], strides: [2, 2]} @unpool
  output y
}
XIR

# i64 little-endian hex of a signed value
i64() { printf '%016x' $(( $1 )) | sed 's/../& /g' | awk '{for (i = 8; i >= 1; i--) printf "%s", $i}'; }
ids() { local f="$1" hex="" n=0; shift; for v in "$@"; do hex="$hex$(i64 "$v") "; n=$((n + 1)); done; make_npy "$f" '<i8' "$n," "$hex"; }

ids "$TMP/ok.npy" 0 999 -1 -1000 5
ids "$TMP/p1000.npy" 3 1000
ids "$TMP/m1001.npy" -1001
ids "$TMP/p1e9.npy" 1000000000
ids "$TMP/m1e9.npy" -1000000000
ids "$TMP/min.npy" '-9223372036854775807 - 1'
# the expected rows of ok: 0, 999, 999, 0, 5 (f32 4r .. 4r+3)
GATHER_HEX=000000000000803f000000400000404000c0794500d0794500e0794500f0794500c0794500d0794500e0794500f07945
GATHER_HEX=${GATHER_HEX}000000000000803f00000040000040400000a0410000a8410000b0410000b841

make_npy "$TMP/data34.npy" '<f4' '3, 4' "00000000 0000803f 00000040 00004040 00008040 0000a040 0000c040 0000e040 00000041 00001041 00002041 00003041"
make_npy "$TMP/ge_ok.npy" '<i8' '3, 2' "$(i64 0) $(i64 3) $(i64 -1) $(i64 -4) $(i64 2) $(i64 1)"
make_npy "$TMP/ge_bad.npy" '<i8' '3, 2' "$(i64 0) $(i64 3) $(i64 4) $(i64 0) $(i64 2) $(i64 1)"
make_npy "$TMP/ge_neg.npy" '<i8' '3, 2' "$(i64 0) $(i64 3) $(i64 -5) $(i64 0) $(i64 2) $(i64 1)"
make_npy "$TMP/data52.npy" '<f4' '5, 2' "$(printf '00000000 %.0s' 1 2 3 4 5 6 7 8 9 10)"
make_npy "$TMP/upd.npy" '<f4' '2, 2' "0000803f 00000040 00004040 00008040"
make_npy "$TMP/snd_ok.npy" '<i8' '2, 1' "$(i64 -1) $(i64 2)"
make_npy "$TMP/snd_bad.npy" '<i8' '2, 1' "$(i64 1) $(i64 5)"
make_npy "$TMP/snd_min.npy" '<i8' '2, 1' "$(i64 '-9223372036854775807 - 1') $(i64 0)"

make_npy "$TMP/rx.npy" '<f4' '1, 1, 3, 4' "$(printf '0000803f %.0s' 1 2 3 4 5 6 7 8 9 10 11 12)"
make_npy "$TMP/rc.npy" '<f4' '5, 2' "$(printf '0000003f %.0s' 1 2 3 4 5 6 7 8 9 10)"
make_npy "$TMP/pos_ok.npy" '<i8' '1, 3' "$(i64 0) $(i64 4) $(i64 2)"
make_npy "$TMP/pos_bad.npy" '<i8' '1, 3' "$(i64 0) $(i64 5) $(i64 1)"
make_npy "$TMP/pos_neg.npy" '<i8' '1, 3' "$(i64 -1) $(i64 0) $(i64 1)"
make_npy "$TMP/ux.npy" '<f4' '1, 1, 2, 2' "0000803f 00000040 00004040 00008040"
make_npy "$TMP/u_ok.npy" '<i8' '1, 1, 2, 2' "$(i64 0) $(i64 3) $(i64 9) $(i64 15)"
make_npy "$TMP/u_bad.npy" '<i8' '1, 1, 2, 2' "$(i64 0) $(i64 3) $(i64 16) $(i64 15)"

targets="ref tiled cpu"
for t in opencl spirv; do
  if "$XCOMP" targets 2>/dev/null | grep -q "^  $t:0"; then
    targets="$targets $t"
  else
    echo "note: no $t device; the $t part was not run"
  fi
done

# model_for T MODEL: the model to run on T (compiled targets: a .xcm)
model_for() {
  local t="$1" model="$2" base
  base="$(basename "$model" .xir)"
  case "$t" in
    ref | tiled) echo "$model" ;;
    *)
      if [ ! -f "$TMP/$base.$t.xcm" ]; then
        timeout 300 "$XCOMP" compile "$model" --target "$t" -o "$TMP/$base.$t.xcm" >/dev/null 2>"$TMP/compile.err" ||
          fail "compile $base for $t: $(head -c 2000 "$TMP/compile.err")"
      fi
      echo "$TMP/$base.$t.xcm"
      ;;
  esac
}

for t in $targets; do
  run_t=()
  case "$t" in ref | tiled) run_t=(--target "$t") ;; esac
  g="$(model_for "$t" "$TMP/gather.xir")"
  if expect_ok run "$g" "${run_t[@]}" --input "@$TMP/ok.npy" --output-dir "$TMP/o_$t"; then
    [ "$(data_hex "$TMP/o_$t/output_0.npy" 80)" = "$GATHER_HEX" ] ||
      fail "$t: Gather with valid ids (negative included) gave $(data_hex "$TMP/o_$t/output_0.npy" 80)"
  fi
  expect_error 1 "node 'embed' (Gather)" run "$g" "${run_t[@]}" --input "@$TMP/p1000.npy" --output-dir "$TMP/o_$t"
  for f in p1000:1000 m1001:-1001 p1e9:1000000000 m1e9:-1000000000 min:-9223372036854775808; do
    expect_error 1 "index ${f#*:} out of range for dim 1000" run "$g" "${run_t[@]}" --input "@$TMP/${f%%:*}.npy" \
      --output-dir "$TMP/o_$t"
  done
  # repeated runs with valid ids pass (the record is read after every run)
  if [ "$t" != ref ] && [ "$t" != tiled ]; then
    run_xcomp run "$g" --input "@$TMP/ok.npy" --repeat 2 --output-dir "$TMP/o_$t"
    [ "$RC" -eq 0 ] || fail "$t: a run with valid ids --repeat 2 exited $RC: $(head -c 2000 "$TMP/err")"
  fi

  m="$(model_for "$t" "$TMP/ge.xir")"
  expect_ok run "$m" "${run_t[@]}" --input "@$TMP/data34.npy" --input "@$TMP/ge_ok.npy" --output-dir "$TMP/ge_$t" &&
    [ "$(data_hex "$TMP/ge_$t/output_0.npy" 24)" = "00000000000040400000e040000080400000204100001041" ] ||
    fail "$t: GatherElements with valid indices: $(data_hex "$TMP/ge_$t/output_0.npy" 24)"
  expect_error 1 "node 'pick' (GatherElements)" run "$m" "${run_t[@]}" --input "@$TMP/data34.npy" \
    --input "@$TMP/ge_bad.npy" --output-dir "$TMP/ge_$t"
  expect_error 1 "index 4 out of range for axis 1 of extent 4" run "$m" "${run_t[@]}" --input "@$TMP/data34.npy" \
    --input "@$TMP/ge_bad.npy" --output-dir "$TMP/ge_$t"
  expect_error 1 "index -5 out of range for axis 1 of extent 4" run "$m" "${run_t[@]}" --input "@$TMP/data34.npy" \
    --input "@$TMP/ge_neg.npy" --output-dir "$TMP/ge_$t"

  m="$(model_for "$t" "$TMP/snd.xir")"
  expect_ok run "$m" "${run_t[@]}" --input "@$TMP/data52.npy" --input "@$TMP/snd_ok.npy" --input "@$TMP/upd.npy" \
    --output-dir "$TMP/snd_$t" &&
    [ "$(data_hex "$TMP/snd_$t/output_0.npy" 40)" = "00000000000000000000000000000000000040400000804000000000000000000000803f00000040" ] ||
    fail "$t: ScatterND with valid indices: $(data_hex "$TMP/snd_$t/output_0.npy" 40)"
  expect_error 1 "node 'put' (ScatterND)" run "$m" "${run_t[@]}" --input "@$TMP/data52.npy" \
    --input "@$TMP/snd_bad.npy" --input "@$TMP/upd.npy" --output-dir "$TMP/snd_$t"
  expect_error 1 "index 5 out of range for axis 0 of extent 5" run "$m" "${run_t[@]}" --input "@$TMP/data52.npy" \
    --input "@$TMP/snd_bad.npy" --input "@$TMP/upd.npy" --output-dir "$TMP/snd_$t"
  expect_error 1 "index -9223372036854775808 out of range for axis 0 of extent 5" run "$m" "${run_t[@]}" \
    --input "@$TMP/data52.npy" --input "@$TMP/snd_min.npy" --input "@$TMP/upd.npy" --output-dir "$TMP/snd_$t"

  m="$(model_for "$t" "$TMP/rot.xir")"
  expect_ok run "$m" "${run_t[@]}" --input "@$TMP/rx.npy" --input "@$TMP/rc.npy" --input "@$TMP/rc.npy" \
    --input "@$TMP/pos_ok.npy" --output-dir "$TMP/rot_$t"
  expect_error 1 "node 'rope' (RotaryEmbedding)" run "$m" "${run_t[@]}" --input "@$TMP/rx.npy" --input "@$TMP/rc.npy" \
    --input "@$TMP/rc.npy" --input "@$TMP/pos_bad.npy" --output-dir "$TMP/rot_$t"
  expect_error 1 "position id 5 is outside the cache (5)" run "$m" "${run_t[@]}" --input "@$TMP/rx.npy" \
    --input "@$TMP/rc.npy" --input "@$TMP/rc.npy" --input "@$TMP/pos_bad.npy" --output-dir "$TMP/rot_$t"
  expect_error 1 "position id -1 is outside the cache (5)" run "$m" "${run_t[@]}" --input "@$TMP/rx.npy" \
    --input "@$TMP/rc.npy" --input "@$TMP/rc.npy" --input "@$TMP/pos_neg.npy" --output-dir "$TMP/rot_$t"

  m="$(model_for "$t" "$TMP/unpool.xir")"
  expect_ok run "$m" "${run_t[@]}" --input "@$TMP/ux.npy" --input "@$TMP/u_ok.npy" --output-dir "$TMP/unpool_$t"
  expect_error 1 "node 'unpool' (MaxUnpool)" run "$m" "${run_t[@]}" --input "@$TMP/ux.npy" \
    --input "@$TMP/u_bad.npy" --output-dir "$TMP/unpool_$t"
  expect_error 1 "index 16 is outside the output (16 elements)" run "$m" "${run_t[@]}" --input "@$TMP/ux.npy" \
    --input "@$TMP/u_bad.npy" --output-dir "$TMP/unpool_$t"
done

# Without the checks (XCOMP_INDEX_CHECKS=off, for measuring their cost) the
# kernels have no index-error record.
XCOMP_INDEX_CHECKS=off timeout 300 "$XCOMP" compile "$TMP/gather.xir" --target cpu --no-cache --dump-kernels "$TMP/nochk" \
  -o "$TMP/nochk.xcm" >/dev/null 2>&1 || fail "compile with XCOMP_INDEX_CHECKS=off"
grep -q index_error "$TMP/nochk/"*.tiled && fail "XCOMP_INDEX_CHECKS=off still emits index checks"
timeout 300 "$XCOMP" compile "$TMP/gather.xir" --target cpu --no-cache --dump-kernels "$TMP/chk" -o "$TMP/chk.xcm" >/dev/null 2>&1 ||
  fail "compile with index checks"
grep -q index_error "$TMP/chk/"*.tiled || fail "the Gather kernel has no index check"
finish
