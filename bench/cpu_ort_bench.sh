#!/usr/bin/env bash
# The cpu target against ONNX Runtime on real models, default and tuned
# schedules, same thread count: for each model, compiles a module with the
# default schedules (XCOMP_TUNING_DB=off), tunes it (`xcomp tune`, a small
# budget) unless --no-tune, compiles a module with the tuned database, then
# runs bench/cpu_vs_ort.py (interleaved rounds: xcomp default, xcomp tuned,
# ONNX Runtime) for each thread count asked. Prints markdown tables
# (bench/RESULTS.md, section 14, "cpu against ONNX Runtime on the 2-core host").
#
# Usage: bench/cpu_ort_bench.sh [--xcomp BIN] [--python PY] [--trials N] [--budget S]
#                               [--threads "2 1"] [--rounds R] [--db FILE] [--no-tune]
#                               [--out DIR] MODEL_DIR...
# PY: a Python with onnxruntime, onnx and numpy (e.g. a venv: python3 -m venv
# /work/venv-ort && /work/venv-ort/bin/pip install onnxruntime onnx numpy).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
X="$here/../build/xcomp"
PY=python3
TRIALS=12
BUDGET=300
THREADS="2 1"
ROUNDS=7
OUT="${OUT:-/tmp/xcomp-cpu-ort-bench}"
DB=""
TUNE=1
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --xcomp) X="$2"; shift 2 ;;
    --python) PY="$2"; shift 2 ;;
    --trials) TRIALS="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --db) DB="$2"; shift 2 ;;
    --no-tune) TUNE=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
mkdir -p "$OUT"
export XCOMP_CACHE_DIR="$OUT/cache"
[ -n "$DB" ] || DB="$OUT/tuning-cpu.db"
echo "xcomp cpu vs ONNX Runtime: $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "xcomp $(cd "$here/.." && git rev-parse --short HEAD 2>/dev/null), load average $(cut -d' ' -f1-3 /proc/loadavg)"
args=()
for d in "${models[@]}"; do
  m="$(basename "$d")"
  XCOMP_TUNING_DB=off "$X" compile "$d/model.onnx" --target cpu -o "$OUT/$m-default.xcm" >/dev/null 2>"$OUT/$m-default.err" ||
    { echo "compile $m failed: $(tail -1 "$OUT/$m-default.err")"; exit 1; }
  args+=(--module "default:$d=$OUT/$m-default.xcm")
  if [ "$TUNE" = 1 ]; then
    t0=$(date +%s)
    OMP_NUM_THREADS="${THREADS%% *}" "$X" tune "$d/model.onnx" --target cpu --trials "$TRIALS" --time-budget "$BUDGET" \
      --db "$DB" --plain >"$OUT/tune-$m.out" 2>"$OUT/tune-$m.err" ||
      { echo "tune $m failed: $(tail -1 "$OUT/tune-$m.err")"; exit 1; }
    echo "tuned $m in $(( $(date +%s) - t0 )) s: $(grep -E '^tuned ' "$OUT/tune-$m.out" | head -1)"
  fi
  if [ -f "$DB" ]; then
    "$X" compile "$d/model.onnx" --target cpu --tuning-db "$DB" -o "$OUT/$m-tuned.xcm" >/dev/null 2>"$OUT/$m-tuned.err" ||
      { echo "compile $m (tuned) failed: $(tail -1 "$OUT/$m-tuned.err")"; exit 1; }
    args+=(--module "tuned:$d=$OUT/$m-tuned.xcm")
  fi
done
for t in $THREADS; do
  echo
  "$PY" "$here/cpu_vs_ort.py" --xcomp "$X" --threads "$t" --rounds "$ROUNDS" "${args[@]}"
done
