#!/bin/sh
# Checks what libxcomp.so exports (ctest sdk_exports):
#   - exactly the names of the public headers (the list gen_exports.sh made),
#     each one defined: no internal symbol, no name of a static library
#     (protobuf-c, ...) leaks out, and no public function is missing;
#   - a few named public functions, and no internal prefix (xc_cstyle_,
#     xc_rt_, xc_targets_, xc_cuda_, xc_rocm_).
# Usage: check_exports.sh LIBXCOMP_SO EXPORTS_TXT
set -eu
lib=$1
list=$2
fail=0
got=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
extra=$(printf '%s\n' "$got" | comm -23 - "$list")
missing=$(printf '%s\n' "$got" | comm -13 - "$list")
if [ -n "$extra" ]; then
  echo "sdk_exports: exported but not public:"; printf '  %s\n' $extra; fail=1
fi
if [ -n "$missing" ]; then
  echo "sdk_exports: declared in include/xcomp but not exported (not defined?):"; printf '  %s\n' $missing; fail=1
fi
for f in xc_targets_init xc_target_find xc_emit_kernel xc_emit_supports xc_emit_printf xc_error \
         xc_status_free xc_tiled_print_to_string xc_tiled_dim_resolve xc_graph_create xc_onnx_import_file; do
  if ! printf '%s\n' "$got" | grep -qx "$f"; then echo "sdk_exports: $f is not exported"; fail=1; fi
done
internal=$(printf '%s\n' "$got" | grep -E '^(xc_cstyle_|xc_rt_|xc_targets_read|xc_targets_write|xc_targets_temp|xc_cuda_|xc_rocm_|xc_target_cpu_init|protobuf_c_|XXH)' || true)
if [ -n "$internal" ]; then
  echo "sdk_exports: internal symbols exported:"; printf '  %s\n' $internal; fail=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
case "$soname" in
  libxcomp.so.[0-9]*) ;;
  *) echo "sdk_exports: SONAME is '$soname', expected libxcomp.so.N"; fail=1 ;;
esac
[ $fail -eq 0 ] && echo "sdk_exports: $(printf '%s\n' "$got" | wc -l) public symbols exported, nothing else; SONAME $soname"
exit $fail
