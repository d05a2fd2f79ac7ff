#!/usr/bin/env bash
# Makes the clang 22 inside PyPI's ziglang wheel available to the gfx1100
# WMMA compile check (tools/zig-hipcc.sh, tests/cli/test_cli_rocm_wmma.sh):
# installs ziglang 0.17.0 (the zig binary and its clang and lld, no GPU
# needed) into DIR, so DIR/ziglang/zig exists. Skipped when zig is on PATH.
# Best effort: without it that check is skipped.
# Usage: tools/install-zig.sh DIR
set -u
DIR="${1:?usage: install-zig.sh DIR}"
if command -v zig >/dev/null 2>&1 || [ -x "$DIR/ziglang/zig" ]; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "install-zig: no pip: the gfx1100 WMMA compile check will be skipped"
  exit 0
fi
if python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$DIR" ziglang==0.17.0 \
     >/dev/null 2>&1; then
  echo "install-zig: zig $("$DIR/ziglang/zig" version) in $DIR"
else
  echo "install-zig: could not install ziglang: the gfx1100 WMMA compile check will be skipped"
fi
exit 0
