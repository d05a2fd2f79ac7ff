#!/usr/bin/env bash
# The autotuner on real models: for each model, the whole-model latency
# compiled with the default schedules, then `xcomp tune`, then the latency
# compiled with the tuned database, in one script run; optionally ONNX
# Runtime on the same inputs and thread count (bench/peer_ort.py) and the
# search compared with random search at the same trial budget
# (bench/tune_analyze.py). Prints markdown tables (bench/RESULTS.md).
#
# Usage: bench/tune_bench.sh [--xcomp BIN] [--target T] [--trials N] [--ort PYTHON]
#                            [--threads N] [--compare-search MODEL_DIR] [--out DIR] MODEL...
# (MODEL: a folder holding model.onnx, or a model file such as bench/models/*.xir;
# $TUNE_ARGS: more `xcomp tune` options for the search comparison, e.g. --max-tasks 8)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
X="${XCOMP:-$here/../build/xcomp}"
T=cpu
TRIALS=32
ORT_PY=""
THREADS=""
COMPARE=""
OUT="${OUT:-/tmp/xcomp-tune-bench}"
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --xcomp) X="$2"; shift 2 ;;
    --target) T="$2"; shift 2 ;;
    --trials) TRIALS="$2"; shift 2 ;;
    --ort) ORT_PY="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --compare-search) COMPARE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
mkdir -p "$OUT"
export XCOMP_CACHE_DIR="$OUT/cache"
[ -n "$THREADS" ] && export OMP_NUM_THREADS="$THREADS"
DB="$OUT/tuning-$T.db"
stamp() { date -u +%H:%M:%S; }

# median latency (ms) of `xcomp bench` (device time where the target has events)
bench_ms() { # model db-setting
  XCOMP_TUNING_DB="$2" "$X" bench "$1" --target "$T" --json --time 3 --warmup 20 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.4f %.4f" % (d["latency_ms"]["median"], d["device_ms"]["median"]))'
}

echo "xcomp tune bench: target $T, $TRIALS trials a task, $(stamp) UTC, $(nproc) CPUs${THREADS:+, $THREADS threads}"
echo
echo "| model | kernels / tasks | tune s | trials (invalid) | default ms (device) | tuned ms (device) | speedup | model rank corr. |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for d in "${models[@]}"; do
  f="$d"
  [ -d "$d" ] && f="$d/model.onnx"
  m="$(basename "${f%/model.onnx}")"
  m="${m%.xir}"
  read -r def_wall def_dev < <(bench_ms "$f" off)
  t0=$(date +%s.%N)
  "$X" tune "$f" --target "$T" --trials "$TRIALS" --db "$DB" --plain >"$OUT/tune-$m.out" 2>"$OUT/tune-$m.err"
  rc=$?
  t1=$(date +%s.%N)
  if [ $rc -ne 0 ]; then
    echo "| $m | tune failed: $(tail -1 "$OUT/tune-$m.err" | cut -c1-200) | | | | | | |"
    continue
  fi
  read -r tun_wall tun_dev < <(bench_ms "$f" "$DB")
  kt=$(sed -n 's/^tuned .*: \([0-9]*\) tasks (\([0-9]*\) kernels), \([0-9]*\) trials (\([0-9]*\) invalid).*/\2 \/ \1|\3 (\4)/p' "$OUT/tune-$m.out")
  rk=$(sed -n 's/^cost model: rank correlation \([-0-9.]*\) over \([0-9]*\).*/\1 (n=\2)/p' "$OUT/tune-$m.out")
  echo "| $m | ${kt%%|*} | $(python3 -c "print('%.0f' % ($t1 - $t0))") | ${kt#*|} | $def_wall ($def_dev) | $tun_wall ($tun_dev) | $(python3 -c "print('%.2fx' % ($def_dev / $tun_dev))") | ${rk:-–} |"
done

if [ -n "$ORT_PY" ]; then
  echo
  "$ORT_PY" "$here/peer_ort.py" ${THREADS:+--threads "$THREADS"} "${models[@]}"
fi

if [ -n "$COMPARE" ]; then
  echo
  echo "Search comparison on $(basename "$COMPARE"), $TRIALS trials a task, three seeds each:"
  for s in 1 2 3; do
    for how in model random; do
      "$X" tune "$COMPARE/model.onnx" --target "$T" --trials "$TRIALS" --db "$OUT/search-$how.db" --search "$how" \
        --seed "$s" --quiet ${TUNE_ARGS:-} >"$OUT/search-$how-$s.out" 2>&1 || echo "search $how seed $s failed"
    done
  done
  for how in model random; do "$X" tune --db "$OUT/search-$how.db" --export "$OUT/search-$how.jsonl" 2>/dev/null; done
  python3 "$here/tune_analyze.py" "$OUT/search-model.jsonl" "$OUT/search-random.jsonl"
fi
