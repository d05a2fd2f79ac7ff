#!/usr/bin/env bash
# MFMA on gfx942 (CDNA3: MI300A/X, MI325X), checked by a real compiler
# without an AMD GPU: the kernels of a transformer layer — attention of GPT-2's
# shape (bf16, 12 heads of 64, 512 tokens, causal), grouped-query attention
# (f16, head size 128, 8 query / 2 key-value heads), the MLP's MatMul (bf16,
# 512 x 3072 x 768) and a tied LM head (f16, MatMul by a transposed weight that
# is also gathered: a Gemm reading B as [n, k]) — compiled with --target
# rocm:gfx942 through tools/zig-hipcc.sh (clang 22 of PyPI's ziglang, as
# XCOMP_HIPCC; Debian's ROCm 5.2 cannot build gfx942). Each code object's
# disassembly must hold MFMA instructions of the kernel's dtype and none of
# the other 16-bit one, and both dots of each attention kernel are planned on
# matrix instructions in the source. LLVM 15's llvm-objdump does not know
# gfx942's ELF machine: the code is disassembled as gfx940 (the same MFMA
# encodings). Compile only: nothing here has run on AMD hardware.
# Skipped (77) without zig (tools/install-zig.sh .zig), Debian's HIP headers
# and device libraries, or llvm-objdump 15. ~30 s on 2 cores.
set -u
source "$(dirname "$0")/helpers.bash"

need_zig_hip

attention() { # NAME DTYPE HEADS KV_HEADS SEQ HEAD_SIZE
  cat > "$TMP/$1.xir" <<XIR
xir 1
graph $1 opset 23 {
  input q: $2[1, $3, $5, $6]
  input k: $2[1, $4, $5, $6]
  input v: $2[1, $4, $5, $6]
  o = Attention(q, k, v) {is_causal: 1}
  output o
}
XIR
}
attention gpt2_attention bf16 12 12 512 64
attention gqa_attention f16 8 2 256 128
cat > "$TMP/mlp_matmul.xir" <<XIR
xir 1
graph mlp_matmul opset 18 {
  input x: bf16[512, 768]
  input w: bf16[768, 3072]
  y = MatMul(x, w)
  output y
}
XIR
# the tied head: the weight [1003, 64] (a side file of bytes 0x3c: every f16
# element 0x3c3c) gathered and multiplied transposed
head -c $((1003 * 64 * 2)) /dev/zero | tr '\0' '\074' > "$TMP/w.bin"
cat > "$TMP/tied_head.xir" <<XIR
xir 1
graph tied_head opset 18 {
  input x: f16[1, 512, 64]
  input ids: i64[1, 512]
  const w: f16[1003, 64] = file("w.bin")
  wt = Transpose(w) {perm: [1, 0]}
  y = MatMul(x, wt)
  e = Gather(w, ids)
  output y
  output e
}
XIR

for case in gpt2_attention:bf16 gqa_attention:f16 mlp_matmul:bf16 tied_head:f16; do
  name="${case%%:*}" t="${case#*:}"
  other=f16
  [ "$t" = f16 ] && other=bf16
  XCOMP_HIPCC="$XCOMP_SRC/tools/zig-hipcc.sh" run_xcomp compile "$TMP/$name.xir" --target rocm:gfx942 \
    -o "$TMP/$name.xcm" --no-cache --dump-kernels "$TMP/$name.k"
  if [ "$RC" -ne 0 ]; then
    fail "compile $name for gfx942: $(head -c 3000 "$TMP/err")"
    continue
  fi
  found=0
  for src in "$TMP/$name.k"/*_attention.hip "$TMP/$name.k"/*_gemm.hip; do
    [ -f "$src" ] || continue
    found=$((found + 1))
    co="${src%.hip}.co"
    [ -f "$co" ] || { fail "$name: no code object for $(basename "$src")"; continue; }
    grep -q "defined(__gfx942__)" "$src" || fail "$name: $(basename "$src") has no MFMA block for gfx942"
    if [[ "$src" == *_attention.hip ]]; then
      [ "$(grep -c "operands staged in work-group memory" "$src")" -eq 2 ] ||
        fail "$name: $(basename "$src") does not plan both dots on matrix instructions"
    fi
    dis="$("$objdump" -d --triple=amdgcn-amd-amdhsa --mcpu=gfx940 "$co" 2>&1)"
    # names as LLVM prints them: v_mfma_f32_32x32x8f16, v_mfma_f32_32x32x8_bf16
    n="$(grep -cE "v_mfma_f32_[0-9x]+_?$t\b" <<<"$dis")"
    echo "gfx942 $name: $n v_mfma_f32_*_$t in $(basename "$co")"
    [ "$n" -ge 1 ] || fail "$name: no $t MFMA in $(basename "$co"): $(head -c 300 <<<"$dis")"
    grep -qE "v_mfma_f32_[0-9x]+_?$other\b" <<<"$dis" && fail "$name: $(basename "$co") has $other MFMA"
  done
  [ "$found" -ge 1 ] || fail "$name: no attention or GEMM kernel dumped"
done
# the tied head reads the weight itself: one Gemm with transB, no transposed copy
grep -q "b=[0-9]*,0,0,1,64 " "$TMP/tied_head.k"/*_gemm.tiled 2>/dev/null ||
  fail "tied_head: the GEMM does not read B as [n, k] ($(grep -h "pattern" "$TMP/tied_head.k"/*.tiled 2>/dev/null))"
finish
