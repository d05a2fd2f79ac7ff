#!/usr/bin/env bash
# Runs `xcomp conform` on the ONNX backend tests when they are present next to
# the repository (../shared), on the real models in tests/models and
# ../shared/models, and prints the totals.
# The interpreter's ONNX node tests and repository models at the top are
# reported, not fatal; every other run fails the step on a failure.
# Usage: tools/conformance.sh XCOMP SHARED_DIR OUT_DIR JOBS
set -euo pipefail
XCOMP="$1"
SHARED="$2"
OUT="$3"
JOBS="$4"

if [ -d "$SHARED/onnx-backend-tests" ]; then
  "$XCOMP" conform --target ref --onnx-tests "$SHARED/onnx-backend-tests" -j "$JOBS" \
    --report "$OUT/conformance-onnx.txt" >"$OUT/conformance-onnx.log"
  echo "conformance: ONNX backend tests: $(tail -1 "$OUT/conformance-onnx.txt") (report: $OUT/conformance-onnx.txt)"
else
  echo "conformance: SKIP ONNX backend tests ($SHARED/onnx-backend-tests not present)"
fi
MODELS="$(cd "$(dirname "$0")/.." && pwd)/tests/models"
if [ -d "$MODELS" ]; then
  "$XCOMP" conform --target ref --models "$MODELS" -j "$JOBS" \
    --report "$OUT/conformance-models.txt" >"$OUT/conformance-models.log"
  echo "conformance: models: $(tail -1 "$OUT/conformance-models.txt") (report: $OUT/conformance-models.txt)"
else
  echo "conformance: SKIP models ($MODELS not present)"
fi

# Compiled targets on the real models and on the lowering's own view (tiled):
# each output against the reference interpreter at its dtype's tolerance. A
# failure here fails the step (a compiled target must not produce wrong
# numbers); a target without a device (no OpenCL platform) is skipped.
status=0
for t in tiled cpu opencl rocm rocm_nv; do
  if [ "$t" != tiled ] && [ "$t" != cpu ] && ! "$XCOMP" targets | grep -q "^  $t:"; then
    echo "conformance: SKIP models on $t (no device)"
    continue
  fi
  "$XCOMP" conform --target "$t" --models "$MODELS" -j "$JOBS" --strict \
    --report "$OUT/conformance-models-$t.txt" >"$OUT/conformance-models-$t.log" || status=1
  echo "conformance: models on $t: $(tail -1 "$OUT/conformance-models-$t.txt")"
done

# The shared models (../shared/models: 13 architectures) on the reference
# interpreter (against ONNX Runtime's stored outputs), on tiled (the lowered
# kernels on the tiled-IR interpreter) and on cpu, each output of the last
# two against the interpreter: every pattern the passes create lowers,
# schedules and runs there. ref and tiled take about a second each, cpu
# about a minute on 2 cores.
if [ -d "$SHARED/models" ]; then
  for t in ref tiled cpu; do
    "$XCOMP" conform --target "$t" --models "$SHARED/models" -j "$JOBS" --timeout 300 --strict \
      --report "$OUT/conformance-shared-$t.txt" >"$OUT/conformance-shared-$t.log" || status=1
    echo "conformance: shared models on $t: $(tail -1 "$OUT/conformance-shared-$t.txt")"
  done
fi

# Schedules on a small device: the models compiled for opencl as if it had
# 16 KiB of work-group memory and 64 threads per work-group (the schedulers
# fall back to legal schedules; nothing may fail at emission) and run on
# PoCL: the repository's models and the 13 shared ones (~3 min with a cold
# PoCL kernel cache on 2 cores).
if "$XCOMP" targets | grep -q "^  opencl:"; then
  "$XCOMP" conform --target opencl --models "$MODELS" --max-local-memory 16384 --max-threads 64 \
    -j "$JOBS" --timeout 600 --strict --report "$OUT/conformance-models-opencl-small.txt" \
    >"$OUT/conformance-models-opencl-small.log" || status=1
  echo "conformance: models on opencl as a 16 KiB / 64-thread device: $(tail -1 "$OUT/conformance-models-opencl-small.txt")"
  if [ -d "$SHARED/models" ]; then
    "$XCOMP" conform --target opencl --models "$SHARED/models" \
      --max-local-memory 16384 --max-threads 64 -j "$JOBS" --timeout 600 --strict \
      --report "$OUT/conformance-shared-opencl-small.txt" >"$OUT/conformance-shared-opencl-small.log" || status=1
    echo "conformance: shared models on opencl as a 16 KiB / 64-thread device: $(tail -1 "$OUT/conformance-shared-opencl-small.txt")"
  fi
fi

# The ONNX node tests on the compiled targets, each output against the
# interpreter at the dtype's tolerance (a failure fails the step): every test
# on cpu, its kernels built at -O1 -march=native (the target's default -O3
# compiles about 4x slower: ~16 min for the suite on 2 cores instead of ~5);
# on opencl, where PoCL builds each program in ~1.7 s (its OpenCL C header and
# kernel library), the first test of each op and dtype (--per-op 1).
# A test may take 300 s (the attention tests compile many kernels) before it
# counts as a TIMEOUT.
NODE="$SHARED/onnx-backend-tests/node"
if [ -d "$NODE" ]; then
  XCOMP_CPU_CFLAGS="-O1 -march=native -fPIC -shared -fopenmp" \
    "$XCOMP" conform --target cpu --onnx-tests "$NODE" -j "$JOBS" --timeout 300 --strict \
    --report "$OUT/conformance-onnx-cpu.txt" >"$OUT/conformance-onnx-cpu.log" || status=1
  echo "conformance: ONNX node tests on cpu: $(tail -1 "$OUT/conformance-onnx-cpu.txt")"
  if "$XCOMP" targets | grep -q "^  opencl:"; then
    "$XCOMP" conform --target opencl --onnx-tests "$NODE" --per-op 1 -j "$JOBS" --timeout 300 --strict \
      --report "$OUT/conformance-onnx-opencl.txt" >"$OUT/conformance-onnx-opencl.log" || status=1
    echo "conformance: ONNX node tests on opencl (1 per op and dtype): $(tail -1 "$OUT/conformance-onnx-opencl.txt")"
  else
    echo "conformance: SKIP ONNX node tests on opencl (no device)"
  fi
else
  echo "conformance: SKIP ONNX node tests on compiled targets ($NODE not present)"
fi

# The spirv target (a plugin: SPIR-V emitted from the tiled IR, validated by
# SPIRV-Tools, run through Vulkan on Mesa's lavapipe): the repository's and
# the 13 shared models, the op suite (one case per op at f32, f16, i32, i64,
# bool) and the first ONNX node test of each op and dtype. Every module is
# validated before it runs; a failure fails the step. Skipped without a
# Vulkan device.
if "$XCOMP" targets | grep -q "^  spirv:"; then
  "$XCOMP" conform --target spirv --models "$MODELS" -j "$JOBS" --timeout 300 --strict \
    --report "$OUT/conformance-models-spirv.txt" >"$OUT/conformance-models-spirv.log" || status=1
  echo "conformance: models on spirv: $(tail -1 "$OUT/conformance-models-spirv.txt")"
  if [ -d "$SHARED/models" ]; then
    "$XCOMP" conform --target spirv --models "$SHARED/models" -j "$JOBS" --timeout 600 --strict \
      --report "$OUT/conformance-shared-spirv.txt" >"$OUT/conformance-shared-spirv.log" || status=1
    echo "conformance: shared models on spirv: $(tail -1 "$OUT/conformance-shared-spirv.txt")"
  fi
  "$XCOMP" conform --op-suite --target spirv --seed 1 --cases-per-op 1 --dtypes f32,f16,i32,i64,bool -j "$JOBS" \
    --timeout 300 --strict --report "$OUT/conformance-opsuite-spirv.txt" >"$OUT/conformance-opsuite-spirv.log" || status=1
  echo "conformance: op suite on spirv (f32,f16,i32,i64,bool): $(tail -1 "$OUT/conformance-opsuite-spirv.txt")"
  if [ -d "$NODE" ]; then
    "$XCOMP" conform --target spirv --onnx-tests "$NODE" --per-op 1 -j "$JOBS" --timeout 300 --strict \
      --report "$OUT/conformance-onnx-spirv.txt" >"$OUT/conformance-onnx-spirv.log" || status=1
    echo "conformance: ONNX node tests on spirv (1 per op and dtype): $(tail -1 "$OUT/conformance-onnx-spirv.txt")"
  fi
else
  echo "conformance: SKIP spirv (no Vulkan device: $("$XCOMP" targets | grep -A1 '^spirv' | tail -1))"
fi

# Reduced precision: the 13 shared models (else the repository's) converted
# to f16 and to bf16 on tiled and cpu, against the f32 interpreter at the
# dtype's rel-L2 bound (an output whose f32 reference the dtype cannot hold,
# such as mobilenetv2-tiny's ~1e-25 logits in f16, against the interpreter's
# run of the converted model; docs/conformance.md). tiled takes seconds; cpu
# builds its kernels at -O1 (-O3 costs 170 s for both dtypes on 2 cores, -O1
# about 60 s).
PREC_MODELS="$MODELS"
[ -d "$SHARED/models" ] && PREC_MODELS="$SHARED/models"
for spec in "tiled f16" "tiled bf16" "cpu f16" "cpu bf16"; do
  set -- $spec
  XCOMP_CPU_CFLAGS="-O1 -march=native -fPIC -shared -fopenmp" \
    "$XCOMP" conform --target "$1" --models "$PREC_MODELS" --dtype "$2" -j "$JOBS" --timeout 300 --strict \
    --report "$OUT/conformance-models-$1-$2.txt" >"$OUT/conformance-models-$1-$2.log" || status=1
  echo "conformance: models ($PREC_MODELS) on $1 in $2: $(tail -1 "$OUT/conformance-models-$1-$2.txt")"
done

# The generated op suite (docs/conformance.md): seed 1, tiled on two cases per
# op at f32/f16/bf16/i32/i64/bool (about 1100 cases, seconds), cpu on one f32 case per op
# (one C compile per case, about a minute on 2 cores). A failure fails the step.
for spec in "tiled 2 f32,f16,bf16,i32,i64,bool" "cpu 1 f32"; do
  set -- $spec
  "$XCOMP" conform --op-suite --target "$1" --seed 1 --cases-per-op "$2" --dtypes "$3" -j "$JOBS" --strict \
    --report "$OUT/conformance-opsuite-$1.txt" >"$OUT/conformance-opsuite-$1.log" || status=1
  echo "conformance: op suite on $1 ($3): $(tail -1 "$OUT/conformance-opsuite-$1.txt")"
done
# The shared models compiled (not run: `conform --compile-only --models`)
# for NVIDIA sm_80 (A100) and sm_90 (H100/H200) through NVRTC, without a GPU:
# every kernel of every model must compile for both. NVRTC runs with
# --Ofast-compile=max ($XCOMP_CUDA_FLAGS): the front end, code generation
# and ptxas all run, and the two passes take ~40 s on 2 cores instead of
# ~3 min at the default optimization (an unrolled conv kernel alone spends
# 8 s in NVVM's optimizer). Skipped when NVRTC is not installed.
CO_MODELS="$MODELS"
[ -d "$SHARED/models" ] && CO_MODELS="$SHARED/models"
# An NVRTC older than CUDA 12.8 lacks --Ofast-compile: the default flags then.
CUDA_FLAGS="--Ofast-compile=max"
XCOMP_CUDA_FLAGS="$CUDA_FLAGS" "$XCOMP" compile "$MODELS/mlp/model.onnx" --target cuda:sm_90 --no-cache \
  -o "$OUT/mlp-sm_90.xcm" >"$OUT/cuda-probe.log" 2>&1 || CUDA_FLAGS="-lineinfo"
if "$XCOMP" compile "$MODELS/mlp/model.onnx" --target cuda:sm_90 --no-cache -o "$OUT/mlp-sm_90.xcm" \
     >"$OUT/cuda-probe.log" 2>&1; then
  for arch in sm_80 sm_90; do
    XCOMP_CUDA_FLAGS="$CUDA_FLAGS" \
      "$XCOMP" conform --models "$CO_MODELS" --compile-only --target "cuda:$arch" -j "$JOBS" --timeout 600 --strict \
      --report "$OUT/conformance-models-$arch.txt" >"$OUT/conformance-models-$arch.log" || status=1
    echo "conformance: models ($CO_MODELS) compiled for cuda:$arch ($CUDA_FLAGS): $(tail -1 "$OUT/conformance-models-$arch.txt")"
  done
else
  echo "conformance: SKIP models compiled for cuda:sm_80/sm_90 ($(tail -1 "$OUT/cuda-probe.log"))"
fi

# AMD, compiled (not run) with the installed HIP toolchain at -O1
# ($XCOMP_HIP_FLAGS; the checks are that the HIP source compiles for the
# architecture, -O3 costs about twice as long): the op suite for gfx90a
# (CDNA2, wave 64, MFMA) and gfx1030 (RDNA2, wave 32); the shared models for
# gfx90a through hiprtc (~90 s on 2 cores) and, through hipcc, for gfx940
# (CDNA3), the newest architecture Debian's clang 15 builds (gfx941/gfx942
# need a newer clang, gfx1100 newer device libraries; hiprtc of ROCm 5.2
# crashes on gfx940): one clang process per kernel, with a precompiled HIP
# header (~1 min on 2 cores; ~7 min without it); the repository's four models
# (copies of shared ones) for gfx908 (CDNA1).
# Skipped when no HIP compiler is installed.
if "$XCOMP" compile "$MODELS/mlp/model.onnx" --target rocm:gfx90a --no-cache -o "$OUT/mlp-gfx90a.xcm" \
     >"$OUT/rocm-probe.log" 2>&1; then
  export XCOMP_HIP_FLAGS="-O1"
  for arch in gfx90a gfx1030; do
    "$XCOMP" conform --op-suite --compile-only --target "rocm:$arch" --seed 1 --cases-per-op 1 \
      --dtypes f32,f16,bf16 -j "$JOBS" --strict --report "$OUT/conformance-opsuite-$arch.txt" \
      >"$OUT/conformance-opsuite-$arch.log" || status=1
    echo "conformance: op suite compiled for rocm:$arch: $(tail -1 "$OUT/conformance-opsuite-$arch.txt")"
  done
  specs="gfx90a:$CO_MODELS gfx908:$MODELS"
  command -v hipcc >/dev/null 2>&1 && specs="$specs gfx940:$CO_MODELS"
  for spec in $specs; do
    arch="${spec%%:*}" dir="${spec#*:}"
    "$XCOMP" conform --models "$dir" --compile-only --target "rocm:$arch" -j "$JOBS" --timeout 600 --strict \
      --report "$OUT/conformance-models-$arch.txt" >"$OUT/conformance-models-$arch.log" || status=1
    echo "conformance: models ($dir) compiled for rocm:$arch: $(tail -1 "$OUT/conformance-models-$arch.txt")"
  done
  unset XCOMP_HIP_FLAGS
else
  echo "conformance: SKIP op suite and models for AMD architectures ($(tail -1 "$OUT/rocm-probe.log"))"
fi
exit $status
