#!/usr/bin/env bash
# WMMA on gfx1100 (RDNA3, wave 32), checked by a real compiler without an AMD
# GPU: bf16 and f16 MatMuls compiled with --target rocm:gfx1100 through
# tools/zig-hipcc.sh (the clang 22 of PyPI's ziglang, as XCOMP_HIPCC) give
# code objects whose disassembly has v_wmma_f32_16x16x16_bf16 / _f16 (and not
# the other one), their sources plan the WMMA builtin under
# #if defined(__gfx1100__); the gfx1030 sources of the same models (wave 32,
# no matrix instructions) and the gfx90a ones (MFMA) have no WMMA.
# The disassembler is LLVM 15's llvm-objdump (LLVM 14 does not know WMMA).
# Compile only: nothing here has run on AMD hardware.
# Skipped (77) without zig (tools/install-zig.sh .zig), Debian's HIP headers
# and device libraries, or llvm-objdump 15. ~15 s on 2 cores.
set -u
source "$(dirname "$0")/helpers.bash"

need_zig_hip

for t in bf16 f16; do
  printf 'xir 1\ngraph mm opset 23 {\n  input a: %s[256, 256]\n  input b: %s[256, 256]\n  y: %s[256, 256] = MatMul(a, b)\n  output y\n}\n' \
    "$t" "$t" "$t" > "$TMP/mm_$t.xir"
  other=f16
  [ "$t" = f16 ] && other=bf16
  XCOMP_HIPCC="$XCOMP_SRC/tools/zig-hipcc.sh" run_xcomp compile "$TMP/mm_$t.xir" --target rocm:gfx1100 \
    -o "$TMP/$t.xcm" --no-cache --dump-kernels "$TMP/$t.k"
  if [ "$RC" -ne 0 ]; then
    fail "compile $t MatMul for gfx1100: $(head -c 3000 "$TMP/err")"
    continue
  fi
  src="$(ls "$TMP/$t.k"/*.hip | head -1)"
  co="${src%.hip}.co"
  grep -q "__builtin_amdgcn_wmma_f32_16x16x16_${t}_w32" "$src" || fail "$t: the source does not use the $t WMMA builtin"
  grep -q "^#if defined(__gfx1100__)$" "$src" || fail "$t: the WMMA block is not under #if defined(__gfx1100__)"
  [ -f "$co" ] || { fail "$t: no code object dumped"; continue; }
  n="$("$objdump" -d --mcpu=gfx1100 "$co" | grep -c "v_wmma_f32_16x16x16_${t} ")"
  echo "gfx1100 $t MatMul: $n v_wmma_f32_16x16x16_$t in $(basename "$co")"
  [ "$n" -ge 1 ] || fail "$t: no v_wmma_f32_16x16x16_$t in the code object"
  "$objdump" -d --mcpu=gfx1100 "$co" | grep -q "v_wmma_f32_16x16x16_${other} " && fail "$t: the code object has $other WMMA"
  # the other architectures' sources of the same model carry no WMMA
  for arch in gfx1030 gfx90a; do
    run_xcomp compile "$TMP/mm_$t.xir" --target "rocm:$arch" -o "$TMP/$t-$arch.xcm" --no-cache --dump-kernels "$TMP/$t-$arch.k"
    ls "$TMP/$t-$arch.k"/*.hip >/dev/null 2>&1 || { fail "$t: no $arch source dumped: $(head -c 500 "$TMP/err")"; continue; }
    grep -q "wmma" "$TMP/$t-$arch.k"/*.hip && fail "$t: the $arch source has WMMA"
  done
done
finish
