#!/usr/bin/env bash
# The SDK as a vendor gets it: installs BUILD to a fresh prefix, builds
# examples/npu-plugin against that prefix alone (find_package(xcomp) through
# CMAKE_PREFIX_PATH; nothing from the source tree but the example's own
# folder), then runs the installed xcomp's conformance on the plugin's target
# acme: the vendor conformance kit (node tests, op suite, models) with the
# plugin's xfail list. Any failure fails the step.
# Usage: tools/sdk_check.sh BUILD SHARED OUT JOBS   (make test runs it)
set -u
BUILD=${1:-build}
SHARED=${2:-../shared}
OUT=${3:-$BUILD}
JOBS=${4:-2}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(cd "$OUT" && pwd)/sdk-check
rm -rf "$WORK"
mkdir -p "$WORK"
PREFIX=$WORK/prefix

step() { echo "sdk: $*"; }
die() { echo "sdk: FAILED: $*"; exit 1; }

cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || die "cmake --install (see $WORK/install.log)"
for f in bin/xcomp lib/libxcomp.so lib/libxcomp.so.0 include/xcomp/target.h include/xcomp/emit.h \
         lib/pkgconfig/xcomp.pc lib/cmake/xcomp/xcompConfig.cmake lib/cmake/xcomp/xcompConfigVersion.cmake; do
  [ -e "$PREFIX/$f" ] || die "the install lacks $f"
done
if ls "$PREFIX"/lib/*.a >/dev/null 2>&1; then die "the install has static archives: $(ls "$PREFIX"/lib/*.a)"; fi
# The installed libxcomp.so is usable on its own, found through pkg-config.
PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --exists xcomp || die "pkg-config does not find xcomp"
step "installed to $PREFIX ($(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --modversion xcomp))"

# The example, configured with the prefix as the only way to xcomp.
cmake -S "$SRC/examples/npu-plugin" -B "$WORK/acme" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-Werror >"$WORK/acme-configure.log" 2>&1 ||
  die "configuring examples/npu-plugin (see $WORK/acme-configure.log)"
cmake --build "$WORK/acme" -j"$JOBS" >"$WORK/acme-build.log" 2>&1 ||
  die "building examples/npu-plugin (see $WORK/acme-build.log)"
if grep -q -- "-I$SRC/include" "$WORK/acme/CMakeFiles/acme_npu.dir/flags.make" 2>/dev/null; then
  die "the example was built with the source tree's include directory"
fi
step "examples/npu-plugin built against the prefix ($(wc -l <"$SRC/examples/npu-plugin/acme_npu.c") lines of C)"

XCOMP="$PREFIX/bin/xcomp"
export XCOMP_PLUGIN_PATH="$WORK/acme"
export XCOMP_CACHE_DIR="$WORK/cache"
"$XCOMP" targets >"$WORK/targets.txt" 2>&1
grep -q "^  acme:0 " "$WORK/targets.txt" || die "xcomp targets does not list acme:0: $(grep -i acme "$WORK/targets.txt")"

status=0
# The vendor conformance kit on the plugin: node tests (one per op and
# dtype), the generated op suite and the models, with the plugin's xfail
# list; the JSON report must name the plugin's target and device.
KIT=$WORK/kit
MODELS_ARG=()
[ -d "$SHARED/models" ] || MODELS_ARG=(--models "$SRC/tests/models")
"$XCOMP" conform --kit --target acme --out "$KIT" --shared "$SHARED" "${MODELS_ARG[@]}" \
  --xfail "$SRC/examples/npu-plugin/xfail.txt" -j "$JOBS" --timeout 300 >"$WORK/kit.log" 2>&1 || status=1
grep '^kit: suite' "$WORK/kit.log" | sed 's/^/sdk: /'
python3 - "$KIT/report.json" <<'PY' || status=1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["target"] == "acme", r["target"]
assert r["device"]["name"].startswith("ACME NPU2"), r["device"]
ran = [s for s in r["suites"] if s["status"] == "ran"]
assert ran, "no suite ran"
for s in ran:
    t = s["totals"]
    assert t["failed"] == 0 and t["xpass"] == 0, (s["name"], t)
    assert t["passed"] > 0, (s["name"], t)
print("sdk: kit report names %s on %s; %d suites ran" % (r["target"], r["device"]["name"], len(ran)))
PY
[ $status -eq 0 ] || die "conformance on acme (reports in $WORK)"
step "passed"
