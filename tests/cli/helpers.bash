# Helpers sourced by tests/cli/test_*.sh (this file is not a test itself).
# Each script runs with XCOMP=<path of the CLI> and XCOMP_SRC=<repo root>.

: "${XCOMP:?XCOMP must name the xcomp binary}"
: "${XCOMP_SRC:?XCOMP_SRC must name the repository root}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

FAILURES=0
TMP="$(mktemp -d "${TMPDIR:-/tmp}/xcomp-cli.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# The shared models and ONNX tests live next to the repository.
SHARED="${XCOMP_SHARED:-$XCOMP_SRC/../shared}"
# The real exported models (copies of ../shared/models) come with the repository.
MODELS="$XCOMP_SRC/tests/models"

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$(basename "$0"): $FAILURES failure(s)" >&2
    exit 1
  fi
  echo "$(basename "$0"): ok"
  exit 0
}

# run_xcomp ARGS...: runs the CLI with a time limit; stdout in $TMP/out,
# stderr in $TMP/err, exit status in $RC.
run_xcomp() {
  timeout 120 "$XCOMP" "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
}

# expect_ok ARGS...: exit 0 and nothing on stderr.
expect_ok() {
  run_xcomp "$@"
  if [ "$RC" -ne 0 ]; then
    fail "xcomp $* exited $RC: $(head -c 2000 "$TMP/err")"
    return 1
  fi
  if [ -s "$TMP/err" ]; then
    fail "xcomp $* wrote to stderr: $(head -c 2000 "$TMP/err")"
    return 1
  fi
  return 0
}

# expect_error CODE SUBSTRING ARGS...: exit CODE, stderr starts with exactly
# one "xcomp: error:" line containing SUBSTRING; for CODE 1 that line is all
# of stderr (no sanitizer report, no second message), for CODE 2 a usage line
# may follow.
expect_error() {
  local code="$1" needle="$2"
  shift 2
  run_xcomp "$@"
  if [ "$RC" -ne "$code" ]; then
    fail "xcomp $* exited $RC, expected $code; stderr: $(head -c 2000 "$TMP/err")"
    return 1
  fi
  local n_err n_lines
  n_err=$(grep -c '^xcomp: error: ' "$TMP/err")
  n_lines=$(wc -l <"$TMP/err")
  if [ "$n_err" -ne 1 ]; then
    fail "xcomp $*: expected one 'xcomp: error:' line, got $n_err: $(head -c 2000 "$TMP/err")"
    return 1
  fi
  if [ "$code" -eq 1 ] && [ "$n_lines" -ne 1 ]; then
    fail "xcomp $*: expected exactly one stderr line, got $n_lines: $(head -c 4000 "$TMP/err")"
    return 1
  fi
  if [ "$code" -eq 2 ] && ! grep -q '^usage: ' "$TMP/err"; then
    fail "xcomp $*: usage error without a usage line"
    return 1
  fi
  if ! grep '^xcomp: error: ' "$TMP/err" | grep -qF -- "$needle"; then
    fail "xcomp $*: error lacks '$needle': $(cat "$TMP/err")"
    return 1
  fi
  return 0
}

# make_npy FILE DESCR SHAPE HEXBYTES: writes a version 1.0 .npy file by hand
# (DESCR like '<f4', SHAPE like '2, 3' or '6,' or '', HEXBYTES the raw
# little-endian data as "0000803f ..."), so tests do not depend on the
# project's own writer or on Python.
make_npy() {
  local file="$1" descr="$2" shape="$3" hex="$4"
  local header="{'descr': '$descr', 'fortran_order': False, 'shape': ($shape), }"
  local len=$(( ${#header} + 1 ))
  local pad=$(( (64 - (10 + len) % 64) % 64 ))
  local total=$(( len + pad ))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf '%02x' $((total & 255)))\\x$(printf '%02x' $((total >> 8)))"
    printf '%s' "$header"
    printf '%*s' "$pad" ''
    printf '\n'
    local bytes
    bytes=$(echo "$hex" | tr -d ' \n' | sed 's/../\\x&/g')
    printf "$bytes"
  } >"$file"
}

# data_hex FILE N: the last N bytes of FILE as hex (the data of a small .npy).
data_hex() {
  tail -c "$2" "$1" | od -An -v -tx1 | tr -d ' \n'
}

# find_cuda_tool NAME: prints the path of NVIDIA's NAME (cuobjdump, nvdisasm)
# from PATH, the CUDA toolkit or tools/install-cuda-tools.sh's folder; fails
# when there is none.
find_cuda_tool() {
  local p
  p="$(command -v "$1" 2>/dev/null)" && { echo "$p"; return 0; }
  for p in /usr/local/cuda/bin/"$1" "$XCOMP_SRC"/.cuda-tools/nvidia/cu*/bin/"$1"; do
    [ -x "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}

# need_spirv_device: runs `xcomp targets` ($TMP/out holds its listing) and
# ends the test as skipped (exit 0) when the spirv plugin is not built or
# no Vulkan device is available.
need_spirv_device() {
  run_xcomp targets
  if [ "$RC" -ne 0 ]; then
    fail "xcomp targets exited $RC: $(head -c 2000 "$TMP/err")"
    finish
  fi
  if ! grep -q '^spirv ' "$TMP/out"; then
    echo "skipped: no spirv target (the plugin is not built: it needs libvulkan-dev and spirv-tools)"
    exit 0
  fi
  if sed -n '/^spirv /,/^[^ ]/p' "$TMP/out" | grep -q '^  unavailable:'; then
    echo "skipped: spirv $(sed -n '/^spirv /,/^[^ ]/p' "$TMP/out" | grep '^  unavailable:' | head -1 | sed 's/^  //')"
    exit 0
  fi
}

# need_zig_hip: the toolchain of tools/zig-hipcc.sh (zig's clang for AMD
# architectures Debian's ROCm 5.2 cannot build) and LLVM 15's llvm-objdump for
# the disassembly; sets $objdump and exports XCOMP_ZIG, or skips the test (77)
# naming what is missing.
need_zig_hip() {
  local zig="${XCOMP_ZIG:-$(command -v zig || true)}" o why=""
  [ -n "$zig" ] || zig="$XCOMP_SRC/.zig/ziglang/zig"
  objdump=""
  for o in llvm-objdump-15 /usr/lib/llvm-15/bin/llvm-objdump; do
    command -v "$o" >/dev/null 2>&1 && { objdump="$o"; break; }
  done
  if [ ! -x "$zig" ]; then why="no zig (set XCOMP_ZIG or run tools/install-zig.sh .zig)"
  elif [ ! -f /usr/include/hip/hip_runtime.h ]; then why="no HIP headers (libamdhip64-dev)"
  elif ! ls /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc >/dev/null 2>&1; then
    why="no ROCm device libraries (rocm-device-libs)"
  elif [ -z "$objdump" ]; then why="no llvm-objdump 15 (llvm-15)"
  fi
  if [ -n "$why" ]; then
    echo "skipped: $why"
    exit 77
  fi
  export XCOMP_ZIG="$zig"
}
