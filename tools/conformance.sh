#!/usr/bin/env bash
# Runs `xcomp conform` on the ONNX backend tests when they are present next to
# the repository (../shared) and on the real models in tests/models, and
# prints the totals.
# Failures are reported, not fatal; only a broken runner fails this step.
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

# The shared models (../shared/models: 13 architectures) on cpu, each output
# against the interpreter: every pattern the passes create lowers, schedules
# and runs there.
if [ -d "$SHARED/models" ]; then
  "$XCOMP" conform --target cpu --models "$SHARED/models" -j "$JOBS" --timeout 300 --strict \
    --report "$OUT/conformance-shared-cpu.txt" >"$OUT/conformance-shared-cpu.log" || status=1
  echo "conformance: shared models on cpu: $(tail -1 "$OUT/conformance-shared-cpu.txt")"
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

# Reduced precision: the models converted to f16 / bf16 on tiled and cpu,
# against the f32 interpreter at the dtype's rel-L2 bound (seconds).
for spec in "tiled f16" "tiled bf16" "cpu bf16"; do
  set -- $spec
  "$XCOMP" conform --target "$1" --models "$MODELS" --dtype "$2" -j "$JOBS" --strict \
    --report "$OUT/conformance-models-$1-$2.txt" >"$OUT/conformance-models-$1-$2.log" || status=1
  echo "conformance: models on $1 in $2: $(tail -1 "$OUT/conformance-models-$1-$2.txt")"
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
# The op suite compiled (not run) for AMD gfx90a (CDNA2, wave 64, MFMA) and
# gfx1030 (RDNA2, wave 32) with the installed HIP toolchain (hiprtc or
# hipcc): every generated case must compile (one to two minutes each on 2
# cores). The shared models also compile for the other architectures the
# toolchain builds: all four for gfx908 (CDNA1), and through hipcc (one
# process per kernel: minutes for a transformer) mlp and cnn for gfx940
# (CDNA3); those it cannot build (gfx942 and gfx1100 need a newer ROCm) are
# not tried.
# Skipped when no HIP compiler is installed.
if "$XCOMP" compile "$MODELS/mlp/model.onnx" --target rocm:gfx90a --no-cache -o "$OUT/mlp-gfx90a.xcm" \
     >"$OUT/rocm-probe.log" 2>&1; then
  for arch in gfx90a gfx1030; do
    "$XCOMP" conform --op-suite --compile-only --target "rocm:$arch" --seed 1 --cases-per-op 1 \
      --dtypes f32,f16,bf16 -j "$JOBS" --strict --report "$OUT/conformance-opsuite-$arch.txt" \
      >"$OUT/conformance-opsuite-$arch.log" || status=1
    echo "conformance: op suite compiled for rocm:$arch: $(tail -1 "$OUT/conformance-opsuite-$arch.txt")"
  done
  specs="gfx908:mlp,cnn,bert-tiny,gpt2-tiny"
  command -v hipcc >/dev/null 2>&1 && specs="$specs gfx940:mlp,cnn"
  for spec in $specs; do
    arch="${spec%%:*}"
    ok=0 n=0
    for m in $(echo "${spec#*:}" | tr , ' '); do
      n=$((n + 1))
      if "$XCOMP" compile "$MODELS/$m/model.onnx" --target "rocm:$arch" --no-cache -o "$OUT/$m-$arch.xcm" \
           >"$OUT/compile-$m-$arch.log" 2>&1; then
        ok=$((ok + 1))
      else
        status=1
        echo "conformance: FAIL compiling $m for rocm:$arch: $(tail -3 "$OUT/compile-$m-$arch.log")"
      fi
    done
    echo "conformance: shared models compiled for rocm:$arch: $ok of $n"
  done
else
  echo "conformance: SKIP op suite for rocm:gfx90a ($(tail -1 "$OUT/rocm-probe.log"))"
fi
exit $status
