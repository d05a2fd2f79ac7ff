#!/usr/bin/env bash
# xcomp compile --target rocm:gfxNNN works without an AMD GPU (hiprtc, or
# hipcc where hiprtc predates the architecture): every shared model compiles
# for gfx90a (CDNA2, wave 64) and the small ones for gfx1030 (RDNA2, wave 32)
# and, when hipcc is installed, mlp for gfx940 (CDNA3, through hipcc, with its
# precompiled HIP header, and without when that cannot be built or used); the module
# holds an AMDGPU code object (ELF) per kernel and is marked as compiled for
# an architecture; running it here is refused with the target's
# "unavailable" reason. Architectures the installed toolchain cannot build
# (gfx942, gfx1100 on ROCm 5.2) fail cleanly, naming the architecture.
# Every gpt2-tiny and bert-tiny code object of a kernel that plans MFMA
# disassembles to v_mfma instructions (with llvm-objdump), and so does every
# attention kernel's (its two dots: scores and the V accumulation).
# Skipped (77) when neither hiprtc nor hipcc is installed. ~1 min on 2 cores.
set -u
source "$(dirname "$0")/helpers.bash"

run_xcomp compile "$MODELS/mlp/model.onnx" --target rocm:gfx90a -o "$TMP/probe.xcm" --no-cache
if [ "$RC" -ne 0 ] && grep -q "target rocm unavailable" "$TMP/err"; then
  echo "SKIP: no HIP compiler: $(cat "$TMP/err")"
  exit 77
fi

# compile MODEL ARCH: compiles, checks the kernel count against the dumped
# sources, the code objects and the module description.
compile() {
  local model="$1" arch="$2" out="$TMP/$1-$2"
  run_xcomp compile "$MODELS/$model/model.onnx" --target "rocm:$arch" -o "$out.xcm" --no-cache \
    --dump-kernels "$out.k"
  if [ "$RC" -ne 0 ]; then
    fail "compile $model for rocm:$arch: $(head -c 2000 "$TMP/err")"
    return
  fi
  local n
  n="$(sed -n 's/.*target rocm, \([0-9]*\) kernels.*/\1/p' "$TMP/out" "$TMP/err" | head -1)"
  [ -n "$n" ] && [ "$n" -gt 0 ] || fail "$model/$arch: compile output: $(cat "$TMP/out" "$TMP/err")"
  [ "$(ls "$out.k"/*.hip 2>/dev/null | wc -l)" -eq "$n" ] || fail "$model/$arch: expected $n dumped HIP sources"
  grep -q "__global__ void __launch_bounds__" "$out.k"/*.hip || fail "$model/$arch: sources are not HIP kernels"
  grep -q "(ROCm $arch (no device))" "$out.k"/*.hip || fail "$model/$arch: sources do not name the architecture"
  # one blob header and one code object per kernel (the ELF magic may repeat
  # inside a code object, so at least n)
  [ "$(grep -c "XCROCM01$arch" "$out.xcm")" -ge 1 ] || fail "$model/$arch: no rocm blob for $arch"
  [ "$(grep -ao "XCROCM01$arch" "$out.xcm" | wc -l)" -eq "$n" ] || fail "$model/$arch: expected $n code objects"
}

for m in mlp cnn bert-tiny gpt2-tiny; do compile "$m" gfx90a; done
compile mlp gfx1030
# Wave 32 vs 64 shapes the schedule: both must at least compile the same graph.
if command -v hipcc >/dev/null 2>&1; then
  compile mlp gfx940
  # The precompiled HIP header: built once with the kernels' own options, then
  # passed to every kernel's compile. A hipcc that cannot build it (and one
  # whose compiles fail with it) still yields the same module, without it.
  cat >"$TMP/hipcc-log.sh" <<EOF
#!/bin/sh
echo "\$*" >>"$TMP/hipcc.args"
case " \$* " in *" -emit-pch "*) [ -n "\$PCH_FAIL" ] && exit 1;; *" -include-pch "*) [ -n "\$USE_FAIL" ] && exit 1;; esac
exec hipcc "\$@"
EOF
  chmod +x "$TMP/hipcc-log.sh"
  for mode in ok PCH_FAIL USE_FAIL off; do
    rm -f "$TMP/hipcc.args"
    case $mode in
      ok) env=(XCOMP_HIP_PCH=1);;
      off) env=(XCOMP_HIP_PCH=0);;
      *) env=("$mode=1");;
    esac
    env "${env[@]}" XCOMP_HIPCC="$TMP/hipcc-log.sh" XCOMP_HIP_FLAGS=-O1 "$XCOMP" compile "$MODELS/mlp/model.onnx" \
      --target rocm:gfx940 -o "$TMP/pch-$mode.xcm" --no-cache >"$TMP/out" 2>"$TMP/err" ||
      { fail "gfx940 with the PCH $mode: $(head -c 2000 "$TMP/err")"; continue; }
    builds="$(grep -c -- "-emit-pch" "$TMP/hipcc.args")"
    uses="$(grep -c -- "-include-pch" "$TMP/hipcc.args")"
    plain="$(grep -- "--genco" "$TMP/hipcc.args" | grep -vc -- "-include-pch")"
    echo "gfx940 PCH $mode: $builds build(s), $uses compile(s) with it, $plain without"
    case $mode in
      ok) [ "$builds" -eq 1 ] && [ "$uses" -eq 2 ] && [ "$plain" -eq 0 ] || fail "PCH: expected 1 build, 2 uses";;
      PCH_FAIL) [ "$builds" -eq 1 ] && [ "$uses" -eq 0 ] && [ "$plain" -eq 2 ] || fail "PCH_FAIL: expected plain compiles";;
      USE_FAIL) [ "$uses" -eq 2 ] && [ "$plain" -eq 2 ] || fail "USE_FAIL: expected each kernel again without it";;
      off) [ "$builds" -eq 0 ] && [ "$uses" -eq 0 ] && [ "$plain" -eq 2 ] || fail "XCOMP_HIP_PCH=0 still used it";;
    esac
    [ "$(grep -ao "XCROCM01gfx940" "$TMP/pch-$mode.xcm" | wc -l)" -eq 2 ] || fail "PCH $mode: expected 2 code objects"
  done
else
  echo "note: hipcc not installed, gfx940 not checked"
fi

# The lowered GEMMs and attention kernels run on MFMA: --dump-kernels wrote
# every code object (NAME.co); disassemble them.
if command -v llvm-objdump >/dev/null 2>&1; then
  for m in gpt2-tiny bert-tiny; do
    k="$TMP/$m-gfx90a.k"
    [ -d "$k" ] || continue
    with_mfma=0
    total=0
    attention=0
    for co in "$k"/*.co; do
      total=$((total + 1))
      if llvm-objdump -d --mcpu=gfx90a "$co" 2>/dev/null | grep -q "v_mfma_f32"; then
        with_mfma=$((with_mfma + 1))
      elif [[ "$co" == *_attention.co ]]; then
        fail "$m: attention kernel $(basename "$co") has no v_mfma"
      fi
      [[ "$co" == *_attention.co ]] && attention=$((attention + 1))
    done
    [ "$total" -eq "$(ls "$k"/*.hip | wc -l)" ] || fail "$m: expected one dumped code object per kernel, got $total"
    echo "$m gfx90a: $with_mfma of $total code objects use MFMA ($attention attention kernels)"
    [ "$with_mfma" -ge 1 ] || fail "no $m code object contains v_mfma"
    [ "$attention" -ge 1 ] || fail "$m: no attention kernel was dumped"
    [ "$with_mfma" -eq "$(grep -l "matrix instructions" "$k"/*.hip | wc -l)" ] ||
      fail "$m: MFMA code objects do not match the sources that plan matrix instructions"
    # the attention kernels' two dots are both on matrix instructions
    for src in "$k"/*_attention.hip; do
      [ "$(grep -c "operands staged in work-group memory" "$src")" -eq 2 ] ||
        fail "$m: $(basename "$src") does not plan both dots on matrix instructions"
    done
  done
else
  echo "note: llvm-objdump not installed, disassembly not checked"
fi

# A module compiled for an architecture is not tied to a device fingerprint,
# and without an AMD GPU running it is refused with the target's reason.
if ! "$XCOMP" targets | grep -q '^  rocm:'; then
  run_xcomp run "$TMP/mlp-gfx90a.xcm" --input "@$MODELS/mlp/test_data_set_0/input_0.pb" --output-dir "$TMP/o"
  [ "$RC" -eq 1 ] && grep -q "target rocm unavailable" "$TMP/err" || fail "run without a GPU: $(cat "$TMP/err")"
fi

# Unknown architectures and ones the toolchain lacks: an error, no crash.
run_xcomp compile "$MODELS/mlp/model.onnx" --target rocm:gfx123 -o "$TMP/x.xcm" --no-cache
[ "$RC" -eq 1 ] && grep -q "not a known AMD architecture" "$TMP/err" || fail "rocm:gfx123: rc $RC $(cat "$TMP/err")"
for arch in gfx942 gfx1100; do
  run_xcomp compile "$MODELS/mlp/model.onnx" --target "rocm:$arch" -o "$TMP/$arch.xcm" --no-cache
  if [ "$RC" -eq 0 ]; then
    echo "note: this toolchain builds $arch"
  else
    [ "$RC" -eq 1 ] && grep -q "$arch" "$TMP/err" || fail "rocm:$arch: rc $RC $(head -c 1000 "$TMP/err")"
  fi
done
finish
