# Runs the ```sh blocks of a tutorial in docs/ (sourced by tests/cli/test_tutorial_*.sh;
# not a test itself). The blocks are written for the root of a clone after
# `make build`; they run in a scratch folder that looks like one: the
# sources linked in, and build/ the build folder of the xcomp being tested. Under the sanitizers, C compiles in the blocks get the same
# sanitizer flags (an instrumented libxcomp.so needs them).
# Usage: run_tutorial DOC   (sets RC; the log is $TMP/tutorial.log)
run_tutorial() {
  local doc="$1" root="$TMP/clone" bin
  bin="$(dirname "$XCOMP")"
  mkdir -p "$root"
  for d in include examples tests docs; do ln -sfn "$XCOMP_SRC/$d" "$root/$d"; done
  ln -sfn "$bin" "$root/build"
  # Blocks indented inside a list are run too.
  awk '/^ *```sh$/ { on = 1; next } /^ *```$/ { on = 0 } on { sub(/^  /, ""); print }' "$doc" >"$TMP/tutorial.sh"
  if nm -D "$bin/libxcomp.so" 2>/dev/null | grep -q __asan_init; then
    sed -i 's/^cc /cc -fsanitize=address,undefined /' "$TMP/tutorial.sh"
  fi
  [ -s "$TMP/tutorial.sh" ] || { fail "$doc has no sh blocks"; RC=1; return; }
  (cd "$root" && timeout 900 bash -ex "$TMP/tutorial.sh") >"$TMP/tutorial.log" 2>&1
  RC=$?
  [ "$RC" -eq 0 ] || fail "$(basename "$doc") failed (exit $RC): $(tail -n 30 "$TMP/tutorial.log")"
}
