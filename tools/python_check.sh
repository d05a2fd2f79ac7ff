#!/usr/bin/env bash
# The Python package's CI step (`make python`, part of `make test`): builds
# the package from the already-built tree (the wheel takes BUILD/libxcomp.so
# as it is: XCOMP_PYTHON_PREBUILT, nothing compiled again), installs it in a
# venv of its own under BUILD, runs python/tests with pytest, then compiles
# and runs gpt2-tiny from SHARED/models (else tests/models) with
# `python -c "import xcomp; ..."` and compares it with the stored output,
# and runs the Python block of docs/tutorial-port-a-model.md.
# Usage: python_check.sh BUILD SHARED
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
shared="${2:-../shared}"
[ -d "$shared" ] && shared="$(cd "$shared" && pwd)"
src="$(cd "$(dirname "$0")/.." && pwd)"
venv="$build/python-venv"
lib="$build/libxcomp.so"
[ -e "$lib" ] || { echo "python_check: $lib is missing (build first)" >&2; exit 1; }

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
pip=("$venv/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" install numpy pytest scikit-build-core
# --no-build-isolation: the build backend comes from the venv, not from a
# fresh download per build.
"${pip[@]}" install --no-build-isolation --force-reinstall --no-deps \
  -C cmake.define.XCOMP_PYTHON_PREBUILT="$lib" -C build-dir="$build/python-wheel" "$src"

# Outside the source tree, so `import xcomp` is the installed package; a
# compile cache of this run's own.
work="$(mktemp -d "${TMPDIR:-/tmp}/xcomp-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export XCOMP_CACHE_DIR="$work/cache"
unset XCOMP_LIBRARY
cd "$work"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"

# The Python block of docs/tutorial-port-a-model.md, as written, from a
# folder that looks like the clone's root.
ln -s "$src/tests" "$work/tests"
awk '/^```python$/ { on = 1; next } /^```$/ { on = 0 } on' "$src/docs/tutorial-port-a-model.md" >"$work/tutorial.py"
[ -s "$work/tutorial.py" ] || { echo "python_check: the tutorial has no python block" >&2; exit 1; }
"$venv/bin/python" "$work/tutorial.py"

models="$shared/models"
[ -d "$models/gpt2-tiny" ] || models="$src/tests/models"
"$venv/bin/python" -c "
import sys, numpy as np, xcomp
d = sys.argv[1] + '/gpt2-tiny/'
m = xcomp.compile(d + 'model.onnx', target='cpu')
ids = xcomp.read_tensor(d + 'test_data_set_0/input_0.pb')
ref = xcomp.read_tensor(d + 'test_data_set_0/output_0.pb')
(logits,) = m.run(ids)
err = np.abs(logits.astype(np.float64) - ref)
rel_l2 = np.linalg.norm(logits.astype(np.float64) - ref) / np.linalg.norm(ref)
assert np.all(err <= 1e-5 + 1e-3 * np.abs(ref)) and rel_l2 <= 1e-5, (err.max(), rel_l2)
print(f'python: gpt2-tiny on cpu matches {d}test_data_set_0/output_0.pb (max-abs {err.max():.3g}, rel-L2 {rel_l2:.3g})')
" "$models"
