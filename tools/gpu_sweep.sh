#!/usr/bin/env bash
# The GPU checks of docs/targets/cuda.md and docs/targets/rocm.md on a machine
# with an NVIDIA GPU, in phases, each writing its reports and logs to OUT:
#   unit     the GPU unit tests (test_target_cuda, test_cuda_tc, test_target_rocm,
#            test_emit, test_emit_lowered, test_vendor_gemm, test_vec_chunks)
#   bench    bench_gpu_kernels, bench_gemm_cuda (bf16/f16 4096), bench_launch and
#            bench_models on cuda, and the kernels, f32 GEMM (vs cuBLAS) and models
#            on every OpenCL GPU (needs BENCH, a build with -DXCOMP_BENCH=ON)
#   models   the shared models on cuda (f32, bf16, f16), rocm_nv (f32, bf16) and
#            every OpenCL GPU (f32)
#   node     the ONNX node tests on cuda, then rocm_nv
#   opsuite  the generated op suite (seed 1, 2 cases per op, f32/f16/bf16/i32/
#            i64/bool) on cuda and rocm_nv
#   memcheck the models and the f32 op suite on cuda under compute-sanitizer
# Usage: tools/gpu_sweep.sh BUILD BENCH NODE_TESTS OUT JOBS PHASE...
# Each line that starts with "sweep:" is a result; a failing check is
# reported, never fatal, so that one run gathers every phase.
set -uo pipefail
BUILD="$1" BENCH="$2" NODE="$3" OUT="$4" JOBS="$5"
shift 5
XCOMP="$BUILD/xcomp"
MODELS="$(cd "$(dirname "$0")/.." && pwd)/tests/models"
mkdir -p "$OUT"

stamp() { date -u +%H:%M:%S; }
conform() { # name args...
  local name="$1"
  shift
  "$XCOMP" conform "$@" -j "$JOBS" --report "$OUT/$name.txt" >"$OUT/$name.log" 2>&1
  echo "sweep: $(stamp) $name: $(tail -1 "$OUT/$name.txt" 2>/dev/null || echo 'no report')"
  grep '^FAIL' "$OUT/$name.txt" 2>/dev/null | cut -c1-300 | head -20
}
gpus_opencl() { "$XCOMP" targets | sed -n 's/^  \(opencl:[0-9]*\) .*(gpu,.*/\1/p'; }

for phase in "$@"; do
  echo "sweep: $(stamp) phase $phase"
  case "$phase" in
    unit)
      for t in test_target_cuda test_cuda_tc test_target_rocm test_emit test_emit_lowered test_vendor_gemm test_vec_chunks; do
        if "$BUILD/$t" >"$OUT/$t.log" 2>&1; then r=pass; else r="FAIL (rc $?)"; fi
        echo "sweep: $(stamp) $t: $r: $(tail -1 "$OUT/$t.log")"
      done ;;
    bench)
      "$BENCH/bench_gpu_kernels" --target cuda >"$OUT/bench_gpu_kernels.log" 2>&1
      echo "sweep: $(stamp) bench_gpu_kernels rc $?"
      for t in $(gpus_opencl); do
        "$BENCH/bench_gpu_kernels" --target "$t" --runs 5 >"$OUT/bench_gpu_kernels_${t//:/_}.log" 2>&1
        echo "sweep: $(stamp) bench_gpu_kernels $t rc $?"
        "$BENCH/bench_gemm_cuda" --target "$t" --only f32 2048 4096 >"$OUT/bench_gemm_${t//:/_}.log" 2>&1
        "$BENCH/bench_models" --target "$t" >"$OUT/bench_models_${t//:/_}.log" 2>&1
        echo "sweep: $(stamp) bench_gemm_cuda/bench_models $t rc $?"
      done
      "$BENCH/bench_gemm_cuda" --only bf16 4096 >"$OUT/bench_gemm_bf16.log" 2>&1
      "$BENCH/bench_gemm_cuda" --only f16 4096 >"$OUT/bench_gemm_f16.log" 2>&1
      echo "sweep: $(stamp) bench_gemm_cuda rc $?"
      "$BENCH/bench_launch" --target cuda >"$OUT/bench_launch.log" 2>&1
      "$BENCH/bench_models" --target cuda >"$OUT/bench_models.log" 2>&1
      echo "sweep: $(stamp) bench_launch/models rc $?" ;;
    models)
      conform models-cuda --target cuda --models "$MODELS" --strict
      for d in bf16 f16; do conform "models-cuda-$d" --target cuda --models "$MODELS" --dtype "$d" --strict; done
      conform models-rocm_nv --target rocm_nv --models "$MODELS" --strict
      conform models-rocm_nv-bf16 --target rocm_nv --models "$MODELS" --dtype bf16 --strict
      for t in $(gpus_opencl); do conform "models-${t//:/_}" --target "$t" --models "$MODELS" --strict; done ;;
    node)
      conform node-cuda --target cuda --onnx-tests "$NODE" --timeout 300
      conform node-rocm_nv --target rocm_nv --onnx-tests "$NODE" --timeout 300 ;;
    node-rocm_nv)
      conform node-rocm_nv --target rocm_nv --onnx-tests "$NODE" --timeout 300 ;;
    node-opencl)
      for t in $(gpus_opencl); do conform "node-${t//:/_}" --target "$t" --onnx-tests "$NODE" --timeout 300; done ;;
    opsuite)
      for t in cuda rocm_nv; do
        conform "opsuite-$t" --op-suite --target "$t" --seed 1 --cases-per-op 2 --dtypes f32,f16,bf16,i32,i64,bool
      done ;;
    memcheck)
      # --target-processes all: the forked test children run under the tool too.
      for spec in "models-memcheck --models $MODELS" "opsuite-memcheck --op-suite --seed 1 --cases-per-op 1 --dtypes f32,bf16"; do
        set -- $spec
        name="$1"
        shift
        compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 --print-limit 20 \
          "$XCOMP" conform --target cuda "$@" -j "$JOBS" --timeout 600 --report "$OUT/$name.txt" \
          >"$OUT/$name.log" 2>&1
        echo "sweep: $(stamp) $name: rc $? $(tail -1 "$OUT/$name.txt" 2>/dev/null)"
        grep -c 'Invalid\|ERROR SUMMARY: [1-9]' "$OUT/$name.log" | sed 's/^/sweep: memcheck error lines: /'
        grep -m5 'ERROR SUMMARY\|Invalid' "$OUT/$name.log"
      done ;;
    *) echo "sweep: unknown phase $phase" ;;
  esac
done
echo "sweep: $(stamp) done"
