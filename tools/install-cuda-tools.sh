#!/usr/bin/env bash
# Makes NVIDIA's cuobjdump and nvdisasm available to the tests that inspect
# the cubins xcomp compiles (tests/cli/test_cli_cuda_compile.sh). Uses the
# CUDA toolkit's copies when present; else installs NVIDIA's PyPI packages
# (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm: the binaries alone, no GPU
# needed) into DIR. Best effort: without them those checks are skipped.
# Usage: tools/install-cuda-tools.sh DIR
set -u
DIR="${1:?usage: install-cuda-tools.sh DIR}"
if command -v cuobjdump >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/cuobjdump ]; then
  exit 0
fi
if ls "$DIR"/nvidia/cu*/bin/cuobjdump >/dev/null 2>&1; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "install-cuda-tools: no pip: cubin disassembly checks will be skipped"
  exit 0
fi
if python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$DIR" \
     nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null 2>&1; then
  echo "install-cuda-tools: cuobjdump and nvdisasm in $DIR"
else
  echo "install-cuda-tools: could not install cuobjdump/nvdisasm: cubin disassembly checks will be skipped"
fi
exit 0
