#!/usr/bin/env bash
# Temporary files (docs/runtime.md, "Temporary files"): every temp file of a
# process lives in its own $TMPDIR/xcomp-<pid>-XXXXXX folder. A compile or run
# that finishes leaves nothing; a compile stopped midway by SIGTERM or SIGINT
# removes its folder (and dies of the signal), and a C compiler it was
# running (with what that compiler started) is stopped too; one killed by
# SIGKILL cannot, and the next xcomp process sweeps it; the folder of a live
# process is never swept; xcomp-cpu-XXXXXX folders that older versions made
# directly under $TMPDIR are swept once an hour old; a failing command leaves
# nothing either.
set -u
. "$(dirname "$0")/helpers.bash"

T="$TMP/tmpdir"
mkdir -p "$T"
export TMPDIR="$T"
export XCOMP_CACHE_DIR="$TMP/cache"
unset XCOMP_KEEP_TEMP
MODEL="$MODELS/gpt2-tiny/model.onnx"   # tens of kernels: long enough to stop midway

leftovers() { find "$T" -mindepth 1 -maxdepth 1 -name 'xcomp-*' | sort; }
expect_clean() {
  local what="$1" left
  left="$(leftovers)"
  [ -z "$left" ] || fail "$what left $(echo "$left" | tr '\n' ' ')"
  rm -rf "${T:?}"/xcomp-* 2>/dev/null
}

# Starts a compile in the background ($PID) and waits until it is compiling
# kernels (its folder holds a cpu-* folder).
start_compile() {
  env $1 "$XCOMP" compile "$MODEL" --target cpu -o "$TMP/out.xcm" --no-cache >/dev/null 2>"$TMP/bg.err" &
  PID=$!
  for _ in $(seq 1 300); do
    ls -d "$T"/xcomp-"$PID"-*/cpu-* >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "the compile (pid $PID) never made its temp folder: $(head -c 2000 "$TMP/bg.err")"
  return 1
}

# 1. Ordinary commands leave nothing behind.
run_xcomp compile "$MODELS/mlp/model.onnx" --target cpu -o "$TMP/mlp.xcm" --no-cache
[ "$RC" -eq 0 ] || fail "compile mlp: exit $RC: $(head -c 2000 "$TMP/err")"
expect_clean "a finished compile"
in_npy="$(ls "$MODELS"/mlp/test_data_set_0/input_0.pb)"
run_xcomp run "$TMP/mlp.xcm" --input "@$in_npy" --output-dir "$TMP/y"
[ "$RC" -eq 0 ] || fail "run mlp.xcm: exit $RC: $(head -c 2000 "$TMP/err")"
expect_clean "a finished run (kernel objects written for dlopen)"
run_xcomp run "$TMP/nonexistent.xcm" --input "@$in_npy"
[ "$RC" -eq 1 ] || fail "run of a missing module: exit $RC"
expect_clean "a failing run"

# 2. SIGTERM and SIGINT midway: the folder goes, the exit is the signal's.
for sig in TERM INT; do
  if start_compile "--default-signal=INT"; then
    kill -"$sig" "$PID"
    wait "$PID"
    rc=$?
    want=$((128 + $(kill -l "$sig")))
    [ "$rc" -eq "$want" ] || fail "SIG$sig: exit $rc, expected $want"
    expect_clean "a compile stopped by SIG$sig"
  fi
done

# 3. SIGKILL midway leaves the folder; the next xcomp process sweeps it, but
#    not the folder of a process that is still running.
if start_compile ""; then
  kill -KILL "$PID"
  wait "$PID" 2>/dev/null
  [ -n "$(leftovers)" ] || fail "SIGKILL left no folder (the test would prove nothing)"
  stale="$(leftovers)"
  sleep 300 &
  live=$!
  mkdir -m 700 "$T/xcomp-$live-AbCdEf"
  touch "$T/xcomp-$live-AbCdEf/busy"
  expect_ok targets >/dev/null
  [ -d "$T/xcomp-$live-AbCdEf" ] || fail "the folder of live process $live was swept"
  for d in $stale; do [ -e "$d" ] && fail "the stale folder $d was not swept"; done
  kill "$live"
  wait "$live" 2>/dev/null
  rm -rf "$T/xcomp-$live-AbCdEf"
  expect_clean "the sweep"
fi

# 4. SIGTERM and SIGINT while the C compiler runs ($CC, a script that records
#    its pid and waits on a child): neither the compiler nor its child
#    survives xcomp, and the folder goes.
cat >"$TMP/slow-cc" <<'SH'
#!/bin/sh
echo $$ >>"$XCOMP_TEST_MARK/cc.pids"
sleep 300 &
echo $! >>"$XCOMP_TEST_MARK/cc.pids"
wait
SH
chmod +x "$TMP/slow-cc"
# alive PID: a process that exists and is not a zombie
alive() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)"; [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
pids_recorded() { [ -f "$1/cc.pids" ] && wc -l <"$1/cc.pids" || echo 0; }
for sig in TERM INT; do
  mark="$TMP/mark-$sig"
  mkdir -p "$mark"
  XCOMP_TEST_MARK="$mark" CC="$TMP/slow-cc" env --default-signal=INT \
    "$XCOMP" compile "$MODELS/mlp/model.onnx" --target cpu -o "$TMP/slow.xcm" --no-cache >/dev/null 2>"$TMP/bg.err" &
  PID=$!
  for _ in $(seq 1 300); do
    [ "$(pids_recorded "$mark")" -ge 2 ] && break
    sleep 0.05
  done
  if [ "$(pids_recorded "$mark")" -lt 2 ]; then
    fail "SIG$sig: the compile (pid $PID) never ran \$CC: $(head -c 2000 "$TMP/bg.err")"
    kill -KILL "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    continue
  fi
  kill -"$sig" "$PID"
  wait "$PID"
  rc=$?
  want=$((128 + $(kill -l "$sig")))
  [ "$rc" -eq "$want" ] || fail "SIG$sig during the C compiler: exit $rc, expected $want"
  for p in $(cat "$mark/cc.pids"); do
    for _ in $(seq 1 40); do alive "$p" || break; sleep 0.05; done
    if alive "$p"; then
      fail "SIG$sig: compiler process $p ($(ps -o args= -p "$p")) outlived xcomp"
      kill -KILL "$p" 2>/dev/null
    fi
  done
  expect_clean "a compile stopped by SIG$sig while the C compiler ran"
done

# 5. Old-style folders (xcomp-cpu-XXXXXX, no pid in the name): swept when
#    untouched for an hour, kept while recent; other names are not ours.
mkdir -m 700 "$T/xcomp-cpu-Old123" "$T/xcomp-cpu-New456" "$T/xcomp-cpu-toolong1"
touch "$T/xcomp-cpu-Old123/kernel.c" "$T/xcomp-cpu-toolong1/kernel.c"
touch -d '2 hours ago' "$T/xcomp-cpu-Old123" "$T/xcomp-cpu-toolong1"
expect_ok targets >/dev/null
[ -e "$T/xcomp-cpu-Old123" ] && fail "the old-style folder xcomp-cpu-Old123 (2 hours old) was not swept"
[ -d "$T/xcomp-cpu-New456" ] || fail "the recent old-style folder xcomp-cpu-New456 was swept"
[ -d "$T/xcomp-cpu-toolong1" ] || fail "xcomp-cpu-toolong1 (not an xcomp name) was swept"
rm -rf "$T/xcomp-cpu-New456" "$T/xcomp-cpu-toolong1"
expect_clean "the old-style sweep"

finish
