#!/usr/bin/env bash
# xcomp compile --target cuda:sm_90 works without a GPU (NVRTC only): every
# shared model compiles; the module holds cubin + PTX for every kernel;
# --dump-kernels writes each kernel's source, cubin and PTX, and every cubin
# passes cuobjdump/nvdisasm sanity checks (code for sm_90, the kernel's entry
# point, a non-trivial instruction stream) when those tools are present.
# Running a module here is refused with the target's "unavailable" reason.
# Skipped (77) when NVRTC is not installed.
set -u
source "$(dirname "$0")/helpers.bash"

CUOBJDUMP="$(find_cuda_tool cuobjdump)" || CUOBJDUMP=""
NVDISASM="$(find_cuda_tool nvdisasm)" || NVDISASM=""
[ -n "$CUOBJDUMP" ] || echo "note: cuobjdump not found: cubin disassembly checks skipped"

checked=0
for model in mlp cnn gpt2-tiny bert-tiny; do
  rm -rf "$TMP/k"
  run_xcomp compile "$MODELS/$model/model.onnx" --target cuda:sm_90 -o "$TMP/$model.xcm" --no-cache \
    --dump-kernels "$TMP/k"
  if [ "$RC" -ne 0 ] && grep -q "nvrtc\|NVRTC" "$TMP/err" && grep -q "unavailable" "$TMP/err"; then
    echo "SKIP: NVRTC not available: $(cat "$TMP/err")"
    exit 77
  fi
  [ "$RC" -eq 0 ] || { fail "$model: compile for cuda:sm_90: $(cat "$TMP/err")"; continue; }
  n="$(sed -n 's/.*target cuda, \([0-9]*\) kernels.*/\1/p' "$TMP/out" "$TMP/err" | head -1)"
  [ -n "$n" ] && [ "$n" -gt 0 ] || { fail "$model: compile output: $(cat "$TMP/out" "$TMP/err")"; continue; }
  [ "$model" != gpt2-tiny ] || [ "$n" -eq 17 ] || fail "gpt2-tiny: expected 17 kernels, got $n"
  [ "$(ls "$TMP/k"/*.cuda 2>/dev/null | wc -l)" -eq "$n" ] || fail "$model: expected $n dumped CUDA sources"
  [ "$(ls "$TMP/k"/*.cubin 2>/dev/null | wc -l)" -eq "$n" ] || fail "$model: expected $n dumped cubins"
  [ "$(ls "$TMP/k"/*.ptx 2>/dev/null | wc -l)" -eq "$n" ] || fail "$model: expected $n dumped PTX files"
  grep -q "__global__" "$TMP"/k/*.cuda || fail "$model: dumped sources are not CUDA kernels"
  grep -q "^.target sm_90" "$TMP"/k/*.ptx || fail "$model: PTX is not for sm_90"
  [ "$(grep -c $'\x7fELF' "$TMP/$model.xcm")" -ge 1 ] || fail "$model: no cubin in the module"
  [ -n "$CUOBJDUMP" ] || continue
  for cubin in "$TMP"/k/*.cubin; do
    name="$(basename "$cubin" .cubin)"
    "$CUOBJDUMP" -sass "$cubin" >"$TMP/sass" 2>"$TMP/sass.err" || { fail "$model/$name: cuobjdump: $(cat "$TMP/sass.err")"; continue; }
    grep -q "code for sm_90" "$TMP/sass" || fail "$model/$name: cuobjdump: not sm_90 code"
    grep -q "Function : xk_$name\b" "$TMP/sass" || fail "$model/$name: cuobjdump: no entry point xk_$name"
    grep -q "EXIT" "$TMP/sass" || fail "$model/$name: cuobjdump: no EXIT instruction"
    [ "$(grep -c '/\*[0-9a-f]\{4\}\*/' "$TMP/sass")" -ge 8 ] || fail "$model/$name: cuobjdump: almost no instructions"
    if [ -n "$NVDISASM" ]; then
      "$NVDISASM" "$cubin" >"$TMP/dis" 2>"$TMP/dis.err" || fail "$model/$name: nvdisasm: $(cat "$TMP/dis.err")"
    fi
    checked=$((checked + 1))
  done
done
[ -z "$CUOBJDUMP" ] || echo "checked $checked cubins with cuobjdump${NVDISASM:+ and nvdisasm}"

# ONNX Attention in 16-bit floats: by default the cuda target's
# FlashAttention program for the kernel's attention pattern (K/V by cp.async,
# both dots on mma.sync m16n8k16 of the input type, ldmatrix with and without
# .trans; on sm_90 at head sizes 64 to 128 both dots on wgmma behind a
# producer's mbarriers, P V as wide as the head rounded up to 64 columns); with 32x32 tiles forced through XCOMP_KNOBS the C-family emission
# of the body (both dots on tensor cores, operands staged in work-group
# memory; head sizes 80 and 96 padded to 128). Head sizes 64/80/96/128,
# causal and not, for sm_90 (and 128 for sm_80).
for dt in bf16 f16; do
  for d in 64 80 96 128; do
    for causal in 0 1; do
      for sm in sm_90 sm_80; do
        [ "$sm" = sm_90 ] || [ "$d" = 128 ] || continue
        cat >"$TMP/attn.xir" <<EOF
xir 1
graph attention opset 23 {
  input q: $dt[2, 4, 200, $d]
  input k: $dt[2, 4, 200, $d]
  input v: $dt[2, 4, 200, $d]
  o = Attention(q, k, v) {is_causal: $causal}
  output o
}
EOF
        for knobs in "" "BLOCK_M_p0=32,BLOCK_N_p0=32"; do
          # (the C-family emission for two head sizes on sm_90: CI time)
          [ -z "$knobs" ] || { [ "$sm" = sm_90 ] && { [ "$d" = 80 ] || [ "$d" = 128 ]; }; } || continue
          rm -rf "$TMP/ka"
          name="attention $dt D=$d causal=$causal $sm${knobs:+ $knobs}"
          XCOMP_KNOBS="$knobs" run_xcomp compile "$TMP/attn.xir" --target "cuda:$sm" -o "$TMP/attn.xcm" --no-cache \
            --dump-kernels "$TMP/ka"
          [ "$RC" -eq 0 ] || { fail "$name: $(cat "$TMP/err")"; continue; }
          src="$(ls "$TMP"/ka/*.cuda | head -1)"
          ptx="${src%.cuda}.ptx"
          if [ -z "$knobs" ] && [ "$sm" = sm_90 ]; then
            # sm_90's form: both dots on wgmma (P from registers), a producer by cp.async;
            # P V is m64n<pitch>k16, the head size rounded up to 64 (80, 96 -> 128)
            pitch=$(( (d + 63) / 64 * 64 ))
            grep -q "FlashAttention program for the kernel's attention pattern (sm_90)" "$src" ||
              fail "$name: not the sm_90 FlashAttention program"
            grep -q "wgmma.mma_async.sync.aligned.m64n128k16.f32.$dt.$dt" "$ptx" &&
              grep -q "wgmma.mma_async.sync.aligned.m64n${pitch}k16.f32.$dt.$dt {" "$ptx" ||
              fail "$name: no wgmma m64n128k16 / m64n${pitch}k16 for $dt in the PTX"
            grep -q "cp.async.cg.shared.global" "$ptx" && grep -q "mbarrier.try_wait.parity" "$ptx" ||
              fail "$name: no cp.async/mbarrier in the PTX"
            continue
          fi
          if [ -z "$knobs" ]; then
            grep -q "FlashAttention program" "$src" || fail "$name: not the FlashAttention program"
            grep -q "ldmatrix.sync.aligned.m8n8.x4.shared.b16" "$ptx" && grep -q "cp.async.cg.shared.global" "$ptx" ||
              fail "$name: no ldmatrix/cp.async in the PTX"
          else
            n="$(grep -c "operands staged in work-group memory" "$src")"
            [ "$n" -eq 2 ] || fail "$name: $n dots on tensor cores, expected 2"
          fi
          grep -q "mma.sync.aligned.m16n8k16.row.col.f32.$dt.$dt.f32" "$ptx" || fail "$name: no mma.sync for $dt in the PTX"
          grep -q "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" "$ptx" || fail "$name: no ldmatrix.trans in the PTX"
        done
      done
    done
  done
done

if ! "$XCOMP" targets | grep -q '^  cuda:'; then
  run_xcomp run "$TMP/gpt2-tiny.xcm" --input "@$MODELS/gpt2-tiny/test_data_set_0/input_0.pb" --output-dir "$TMP/o"
  [ "$RC" -eq 1 ] && grep -q "target cuda unavailable" "$TMP/err" || fail "run without a GPU: $(cat "$TMP/err")"
fi
finish
