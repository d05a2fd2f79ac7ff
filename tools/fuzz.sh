#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan, and runs each for a bounded time. Skips with a message when there
# are no harnesses or clang cannot link -fsanitize=fuzzer (needs clang and
# libclang-rt-14-dev). Usage: tools/fuzz.sh BUILD_DIR SECONDS JOBS
set -euo pipefail
BUILD="$1"
SECONDS_EACH="$2"
JOBS="$3"
SRC="$(cd "$(dirname "$0")/.." && pwd)"

if ! ls "$SRC"/tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
  echo "fuzz: SKIP (no tests/fuzz/fuzz_*.c harnesses)"
  exit 0
fi
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char* d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! command -v clang >/dev/null 2>&1 || ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  echo "fuzz: SKIP (clang with libFuzzer not available; install clang libclang-rt-14-dev)"
  exit 0
fi

# Libraries get coverage instrumentation too, so the fuzzer sees inside them.
# Warnings are errors in the gcc builds of make test; clang-only warnings must
# not stop the fuzzing here.
CC=clang CFLAGS="-fsanitize=fuzzer-no-link" cmake -S "$SRC" -B "$BUILD" \
  -DXCOMP_FUZZ=ON -DXCOMP_SANITIZE=ON -DXCOMP_WERROR=OFF >/dev/null
# Only the harnesses (and the libraries they need).
targets=()
for src in "$SRC"/tests/fuzz/fuzz_*.c; do targets+=(--target "$(basename "$src" .c)"); done
cmake --build "$BUILD" -j"$JOBS" "${targets[@]}"

# JOBS harnesses at a time (each libFuzzer process is single-threaded).
run_one() {
  local name="$1" bin="$BUILD/$1" corpus="$BUILD/corpus/$1" short="${1#fuzz_}" d
  local seeds=()
  mkdir -p "$corpus"
  # Seeds: tests/fuzz/corpus/<name or name without fuzz_>, tests/bad-input/<same>.
  for d in "$SRC/tests/fuzz/corpus/$name" "$SRC/tests/fuzz/corpus/$short" "$SRC/tests/bad-input/$short"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  if ! ASAN_OPTIONS="detect_leaks=1" "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=0 "$corpus" "${seeds[@]}" \
      >"$BUILD/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of $BUILD/$name.log:"
    tail -40 "$BUILD/$name.log"
    return 1
  fi
  echo "fuzz: $name ok ($(ls "$corpus" | wc -l) corpus entries)"
}

status=0
names=()
for src in "$SRC"/tests/fuzz/fuzz_*.c; do names+=("$(basename "$src" .c)"); done
echo "fuzz: ${#names[@]} harnesses for ${SECONDS_EACH}s each, $JOBS at a time"
i=0
while [ "$i" -lt "${#names[@]}" ]; do
  pids=()
  for ((j = 0; j < JOBS && i < ${#names[@]}; j++, i++)); do
    run_one "${names[$i]}" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
done
exit "$status"
