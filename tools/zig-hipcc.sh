#!/usr/bin/env bash
# A stand-in for `hipcc --genco` built on the clang inside PyPI's ziglang
# wheel (clang 22), for AMD architectures Debian's ROCm 5.2 cannot build
# (gfx1100: its hipcc has no device library for it, its LLVM 15 miscompiles
# WMMA). The rocm target runs it through XCOMP_HIPCC (docs/targets/rocm.md):
#
#   XCOMP_HIPCC=tools/zig-hipcc.sh xcomp compile m.xir --target rocm:gfx1100
#
# It takes what the target passes hipcc (--genco --offload-arch=gfxNNN FLAGS
# -o OUT SRC) and writes a code object. The pieces, none of them ROCm 5.5+:
#   * zig's clang has no HIP wrapper headers: those of Debian's clang (14 or
#     15; plain declarations) are found after zig's own headers, the HIP
#     headers are Debian's (libamdhip64-dev 5.2), which still use the
#     __AMDGCN_WAVEFRONT_SIZE macro that clang 22 no longer defines;
#   * device libraries: Debian's rocm-device-libs 5.2 bitcode (ocml, ockl,
#     hip, the oclc controls for the compile's IEEE defaults), linked
#     explicitly; it has no isa-version file for gfx11, so one is written
#     here (__oclc_ISA_version = major*1000 + minor*100 + stepping, the
#     value the device libraries' own files hold);
#   * clang's AMDGPU link step runs `lld -flavor gnu`: a two-line shim hands
#     it to zig's ld.lld (Debian's lld 14/15 does not know clang 22's flags).
# The code object is for compile checks (disassembly); it has not been run.
# Environment: XCOMP_ZIG (the zig binary; else `zig` on PATH, else
# .zig/ziglang/zig in this tree), XCOMP_ROCM_BITCODE (the device libraries).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
zig="${XCOMP_ZIG:-}"
[ -n "$zig" ] || zig="$(command -v zig || true)"
[ -n "$zig" ] || zig="$root/.zig/ziglang/zig"
[ -x "$zig" ] || { echo "zig-hipcc: no zig (set XCOMP_ZIG, or run tools/install-zig.sh .zig)" >&2; exit 2; }
bc="${XCOMP_ROCM_BITCODE:-}"
for d in "$bc" /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /opt/rocm/amdgcn/bitcode; do
  [ -n "$d" ] && [ -f "$d/ocml.bc" ] && { bc="$d"; break; }
done
[ -f "$bc/ocml.bc" ] || { echo "zig-hipcc: no ROCm device libraries (apt install rocm-device-libs)" >&2; exit 2; }
[ -f /usr/include/hip/hip_runtime.h ] || { echo "zig-hipcc: no HIP headers (apt install libamdhip64-dev)" >&2; exit 2; }
wrapper=""
for d in $(ls -d /usr/lib/llvm-*/lib/clang/*/include 2>/dev/null | sort -t- -k2 -n -r); do
  [ -f "$d/__clang_hip_runtime_wrapper.h" ] && { wrapper="$d"; break; }
done
[ -n "$wrapper" ] || { echo "zig-hipcc: no clang HIP wrapper headers (apt install clang)" >&2; exit 2; }

arch="" out="" args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --genco) ;;
    --offload-arch=*) arch="${1#--offload-arch=}" ;;
    -o) out="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
[ -n "$arch" ] && [ -n "$out" ] || { echo "usage: zig-hipcc.sh --genco --offload-arch=gfxNNN [flags] -o OUT SRC" >&2; exit 2; }
base="${arch%%:*}"
digits="${base#gfx}"
case "$digits" in
  1[0-9][0-9][0-9a-f]) wave=32 ;;
  [0-9][0-9][0-9a-f]) wave=64 ;;
  *) echo "zig-hipcc: cannot read architecture '$arch'" >&2; exit 2 ;;
esac

tmp="$(mktemp -d "${TMPDIR:-/tmp}/zig-hipcc-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\n[ "$1" = -flavor ] && shift 2\nexec "%s" ld.lld "$@"\n' "$zig" > "$tmp/lld"
chmod +x "$tmp/lld"
isa="$bc/oclc_isa_version_$digits.bc"
if [ ! -f "$isa" ]; then
  major="${digits:0:${#digits}-2}" minor="${digits: -2:1}" step="${digits: -1}"
  printf '__attribute__((address_space(4), visibility("hidden"))) const int __oclc_ISA_version = %d;\n' \
    $((major * 1000 + minor * 100 + 16#$step)) > "$tmp/isa.c"
  "$zig" clang -x c --target=amdgcn-amd-amdhsa -mcpu="$base" -nogpulib -O2 -emit-llvm -c "$tmp/isa.c" -o "$tmp/isa.bc"
  isa="$tmp/isa.bc"
fi
w64=off
[ "$wave" -eq 64 ] && w64=on
libs=()
for f in hip ocml ockl oclc_wavefrontsize64_$w64 oclc_daz_opt_off oclc_finite_only_off oclc_unsafe_math_off \
         oclc_correctly_rounded_sqrt_on oclc_abi_version_500; do
  libs+=(-Xclang -mlink-builtin-bitcode -Xclang "$bc/$f.bc")
done
libs+=(-Xclang -mlink-builtin-bitcode -Xclang "$isa")
PATH="$tmp:$PATH" "$zig" clang -x hip --offload-arch="$arch" --cuda-device-only --no-gpu-bundle-output -nogpulib \
  -D__AMDGCN_WAVEFRONT_SIZE="$wave" -idirafter "$wrapper" "${libs[@]}" "${args[@]}" -c -o "$out"
