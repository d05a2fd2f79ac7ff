#!/usr/bin/env bash
# Record what one xcomp build emits, so two builds can be compared with `diff -r`:
#
#   tools/emit_snapshot.sh build-old/xcomp /tmp/snap-old
#   tools/emit_snapshot.sh build/xcomp     /tmp/snap-new
#   diff -r /tmp/snap-old /tmp/snap-new
#
# For every model (MODELS, default ../shared/models/*/model.onnx and tests/models/*/model.onnx)
# and every target (TARGETS, default cpu opencl cuda:sm_90 rocm:gfx90a; the cuda and rocm ones
# also with --precision bf16), it writes the kernels' sources (--dump-kernels) into
# OUT/kernels/<model>/<target>[-bf16]/ and the compile's exit status and messages into
# status.txt beside them (a model a target cannot compile today is recorded as such).
# The op suite's generated cases are recorded as their names (--list, every dtype) and as the
# per-case report of the tiled-IR interpreter run on them (timings removed).
# Nothing comes from or goes to the user's compile cache (a fresh XCOMP_CACHE_DIR, --no-cache).
# JOBS (default 2) compiles run at once.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 XCOMP_BINARY OUT_DIR" >&2
    exit 2
fi
XCOMP=$(realpath "$1")
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
TARGETS=${TARGETS:-"cpu opencl cuda:sm_90 rocm:gfx90a"}
if [ -z "${MODELS:-}" ]; then
    MODELS=$(ls "$ROOT"/../shared/models/*/model.onnx "$ROOT"/tests/models/*/model.onnx 2>/dev/null)
fi
MODELS=$(for m in $MODELS; do realpath "$m"; done)
[ -x "$XCOMP" ] || { echo "$0: $1 is not an executable" >&2; exit 2; }

mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export XCOMP_CACHE_DIR="$WORK/cache"

# One line per compile: model path, target, precision ("" for the model's own).
jobs_file="$WORK/jobs"
: >"$jobs_file"
for m in $MODELS; do
    for t in $TARGETS; do
        echo "$m $t -" >>"$jobs_file"
        case "$t" in cuda* | rocm*) echo "$m $t bf16" >>"$jobs_file" ;; esac
    done
done

compile_one() {
    local model=$1 target=$2 prec=$3
    local group name dir
    name=$(basename "$(dirname "$model")")
    case "$model" in */tests/models/*) group=tests ;; *) group=shared ;; esac
    dir="$OUT/kernels/$group-$name/${target//:/_}"
    local extra=()
    if [ "$prec" != "-" ]; then
        dir="$dir-$prec"
        extra=(--precision "$prec")
    fi
    mkdir -p "$dir/src"
    local log="$WORK/$group-$name-${target//:/_}-$prec.log"
    "$XCOMP" compile "$model" --target "$target" "${extra[@]}" --no-cache \
        -o "$WORK/$group-$name-${target//:/_}-$prec.xcm" --dump-kernels "$dir/src" >"$log" 2>&1
    local rc=$?
    # Keep the status and the compile messages minus timings and the scratch folder's name
    # (they differ run to run).
    { echo "exit $rc"; sed -E -e "s|$WORK|WORK|g" -e 's/[0-9]+(\.[0-9]+)? ?(ms|s)\b/T/g' "$log"; } >"$dir/status.txt"
}
export -f compile_one
export XCOMP OUT WORK

xargs -P "$JOBS" -L 1 bash -c 'compile_one "$0" "$1" "$2"' <"$jobs_file"

# The op suite: case names for every dtype, and the tiled interpreter's per-case results.
mkdir -p "$OUT/opsuite"
"$XCOMP" conform --op-suite --dtypes all --list >"$OUT/opsuite/list-all.txt" 2>&1
echo "exit $?" >>"$OUT/opsuite/list-all.txt"
"$XCOMP" conform --op-suite --target tiled --dtypes default -j "$JOBS" \
    --report "$WORK/tiled.txt" >/dev/null 2>&1
echo "exit $?" >"$OUT/opsuite/tiled-exit.txt"
sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s)\b/T/g' "$WORK/tiled.txt" | sort >"$OUT/opsuite/tiled-report.txt"

echo "$OUT: $(find "$OUT/kernels" -type f -path '*/src/*' | wc -l) kernel files," \
    "$(grep -lx 'exit 0' -r "$OUT/kernels" --include status.txt | wc -l) of" \
    "$(find "$OUT/kernels" -name status.txt | wc -l) compiles succeeded"
