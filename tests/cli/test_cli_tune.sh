#!/usr/bin/env bash
# xcomp tune (docs/autotune.md): tunes a small real model on cpu, and on
# opencl (PoCL) and spirv (lavapipe) when present, with a small trial budget;
# the database it writes is what a following compile uses — every kernel the
# database holds a schedule for is emitted with the fastest recorded one
# (checked in the dumped tiled IR, including a planted record that differs
# from the default), and the outputs still match the reference. A candidate
# that crashes, hangs or computes a wrong result is recorded as invalid and
# the tuner carries on. Report, plots, export and import; errors.
set -u
source "$(dirname "$0")/helpers.bash"

export XCOMP_CACHE_DIR="$TMP/cache"
M="$MODELS/cnn"
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 (JSON checks) is missing"; exit 77; }

# best_check DB DUMPDIR: every kernel named by a record of DB was emitted
# with the fastest valid recorded schedule of its task (whitespace aside).
best_check() {
  "$XCOMP" tune --db "$1" --export "$TMP/check.jsonl" 2>/dev/null || { fail "export of $1"; return 1; }
  python3 - "$TMP/check.jsonl" "$2" <<'EOF' || fail "tuned schedules not emitted (db $1)"
import json, os, re, sys
# the database's ranking (docs/autotune.md): per task, the schedule with the
# lowest mean time relative to the median of the run's distinct default times (a record
# without a run_id: relative to its own default)
records = []
for n, line in enumerate(open(sys.argv[1])):
    r = json.loads(line)
    if r.get("kind") == "record" and r["valid"]:
        records.append((n, r))
run_key = lambda r: (r["task"], r["target"], r["device"], r["run_id"])
defaults = {}
for _, r in records:
    if r["default_ms"] > 0 and r["run_id"]:
        defaults.setdefault(run_key(r), set()).add(r["default_ms"])  # distinct batch defaults
def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
medians = {k: median(v) for k, v in defaults.items()}
groups = {}
for n, r in records:
    g = groups.setdefault((r["kernel"], r["schedule"]), {"rel": [], "t": r["time_ms"], "c": (r["created"], n), "r": r})
    if r["default_ms"] > 0:
        g["rel"].append(r["time_ms"] / medians.get(run_key(r), r["default_ms"]))
    g["t"] = min(g["t"], r["time_ms"])
    g["c"] = min(g["c"], (r["created"], n))
def key(g):
    rel = sum(g["rel"]) / len(g["rel"]) if g["rel"] else None
    return (rel is None, rel or 0, g["t"], g["c"])
best = {}
for (k, _), g in groups.items():
    if k not in best or key(g) < key(best[k]):
        best[k] = g
best = {k: g["r"] for k, g in best.items()}
norm = lambda s: " ".join(s.split())
checked = 0
for k, r in best.items():
    path = os.path.join(sys.argv[2], k + ".tiled")
    if not os.path.exists(path):
        continue
    text = open(path).read()
    m = re.search(r"^  schedule .*?^  }", text, re.S | re.M)
    if not m or norm(m.group(0)) != norm(r["schedule"]):
        print(f"{k}: emitted {m.group(0) if m else None!r}, database best {r['schedule']!r}")
        sys.exit(1)
    checked += 1
if checked == 0:
    print("no kernel of the database was emitted")
    sys.exit(1)
print(f"{checked} kernels emitted with their tuned schedules")
EOF
}

# tune_target T ARGS...: tune, compile with the database, run, compare.
tune_target() {
  local t="$1"
  shift
  local db="$TMP/$t.db"
  run_xcomp tune "$M/model.onnx" --target "$t" --db "$db" --plain --seed 3 "$@"
  if [ "$RC" -ne 0 ]; then
    fail "tune on $t: $(head -c 2000 "$TMP/err")"
    return 1
  fi
  grep -q "^tuned .* [1-9][0-9]* tasks" "$TMP/out" || fail "tune on $t: no tasks tuned: $(cat "$TMP/out")"
  grep -q "^xcomp: tune: task 1/" "$TMP/err" || fail "tune on $t: no progress lines: $(head -c 800 "$TMP/err")"
  rm -rf "$TMP/k-$t"
  run_xcomp compile "$M/model.onnx" --target "$t" --tuning-db "$db" --no-cache -o "$TMP/$t.xcm" \
    --dump-kernels "$TMP/k-$t"
  [ "$RC" -eq 0 ] || { fail "compile with the $t database: $(head -c 1500 "$TMP/err")"; return 1; }
  grep -q "tuned schedule from the database" "$TMP/err" || fail "compile on $t took nothing from the database"
  best_check "$db" "$TMP/k-$t"
  if expect_ok run "$TMP/$t.xcm" --input "@$M/test_data_set_0/input_0.pb" --output-dir "$TMP/out-$t"; then
    expect_ok compare "$TMP/out-$t/output_0.npy" "$M/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5
  fi
}

# cpu: the cost model's search (8 trials a task, 4 per round: the model is
# trained after the second round)
tune_target cpu --trials 8 --batch 4
grep -q "cost model: rank correlation" "$TMP/out" || echo "note: too few held-out measurements for a rank correlation"

# A planted record (a legal non-default schedule, recorded as the fastest)
# must be the one emitted: the database decides, not the scheduler.
"$XCOMP" tune --db "$TMP/cpu.db" --export "$TMP/cpu.jsonl" 2>/dev/null || fail "export"
python3 - "$TMP/cpu.jsonl" "$TMP/plant.jsonl" <<'EOF' || fail "no record to plant"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if r.get("kind") == "record" and r["valid"]]
default = {r["task"]: r["schedule"] for r in recs if r["trial"] == 0}
# (the ranking averages a schedule's times relative to their defaults over
# its records, and the tuner may already have measured this one as slow:
# 100 measuring runs of it make it the best)
for r in recs:
    if r["trial"] > 0 and r["schedule"] != default.get(r["task"]):
        r["time_ms"] = 1e-9
        with open(sys.argv[2], "w") as f:
            for i in range(100):
                r["run_id"] = "planted-%d" % i
                f.write(json.dumps(r) + "\n")
        break
else:
    sys.exit(1)
EOF
run_xcomp tune --db "$TMP/cpu.db" --import "$TMP/plant.jsonl"
grep -q "imported 100 records" "$TMP/err" || fail "import of the planted records: $(cat "$TMP/err")"
run_xcomp tune --db "$TMP/cpu.db" --import "$TMP/plant.jsonl"
grep -q "imported 0 records" "$TMP/err" || fail "importing the same record twice added it again: $(cat "$TMP/err")"
rm -rf "$TMP/k-plant"
run_xcomp compile "$M/model.onnx" --target cpu --tuning-db "$TMP/cpu.db" --no-cache -o "$TMP/plant.xcm" \
  --dump-kernels "$TMP/k-plant"
[ "$RC" -eq 0 ] || fail "compile with the planted record: $(head -c 1500 "$TMP/err")"
best_check "$TMP/cpu.db" "$TMP/k-plant"
planted_kernel="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["kernel"])' "$TMP/plant.jsonl")"
rm -rf "$TMP/k-default"
run_xcomp compile "$M/model.onnx" --target cpu --no-tuning-db --no-cache -o "$TMP/default.xcm" --dump-kernels "$TMP/k-default"
cmp -s "$TMP/k-default/$planted_kernel.tiled" "$TMP/k-plant/$planted_kernel.tiled" &&
  fail "$planted_kernel: the planted schedule equals the default one (the check proves nothing)"
if expect_ok run "$TMP/plant.xcm" --input "@$M/test_data_set_0/input_0.pb" --output-dir "$TMP/out-plant"; then
  expect_ok compare "$TMP/out-plant/output_0.npy" "$M/test_data_set_0/output_0.pb" --rtol 1e-3 --atol 1e-5
fi
# cpu records belong to the thread count they were measured with: a compile
# for another count takes nothing from the database
other_threads=$(( $(nproc) + 3 ))
XCOMP_NUM_THREADS=$other_threads run_xcomp compile "$M/model.onnx" --target cpu --tuning-db "$TMP/cpu.db" --no-cache \
  -o "$TMP/other-threads.xcm"
[ "$RC" -eq 0 ] || fail "compile for $other_threads threads: $(head -c 1500 "$TMP/err")"
grep -q "tuned schedule from the database" "$TMP/err" &&
  fail "a compile for $other_threads threads took schedules measured with $(nproc)"
# the compile cache keys what the database supplies: another database, another entry
run_xcomp compile "$M/model.onnx" --target cpu --tuning-db "$TMP/cpu.db" -o "$TMP/c1.xcm"
run_xcomp compile "$M/model.onnx" --target cpu --no-tuning-db -o "$TMP/c2.xcm"
grep -q "cache hit" "$TMP/out" && fail "a compile without the database was served the tuned module"

# Report, plots, export
run_xcomp tune --db "$TMP/cpu.db" --report "$TMP/report.md" --plot "$TMP/plots"
if [ "$RC" -ne 0 ]; then
  fail "report: $(cat "$TMP/err")"
else
  grep -q "speedup" "$TMP/report.md" || fail "report without a speedup column: $(head -c 600 "$TMP/report.md")"
  if command -v gnuplot >/dev/null 2>&1; then
    n=$(ls "$TMP/plots"/*.png 2>/dev/null | wc -l)
    [ "$n" -gt 0 ] || fail "no PNG plots written"
    for p in "$TMP/plots"/*.png; do
      [ "$(head -c 4 "$p" | od -An -tx1 | tr -d ' ')" = "89504e47" ] || fail "$p is not a PNG"
    done
  fi
fi

# Isolation: crashing, hanging and wrong candidates are invalid, the run goes on.
for fault in crash:1 hang:2 wrong:1; do
  XCOMP_TUNE_FAULT="$fault" run_xcomp tune "$M/model.onnx" --target cpu --db "$TMP/fault.db" --plain \
    --trials 3 --batch 3 --max-tasks 1 --timeout 3 --search random
  if [ "$RC" -ne 0 ]; then
    fail "tune with $fault: $(head -c 1500 "$TMP/err")"
    continue
  fi
  grep -q "([1-9][0-9]* invalid)" "$TMP/out" || fail "tune with $fault: no candidate recorded as invalid: $(cat "$TMP/out")"
done
"$XCOMP" tune --db "$TMP/fault.db" --export - 2>/dev/null >"$TMP/fault.jsonl"
# (a sanitizer build reports the SEGV itself and exits)
grep -q '"error": *"\(crashed (signal 11)\|the measuring process exited:[^"]*SEGV\)' "$TMP/fault.jsonl" || fail "the crash is not recorded: $(grep -o '"error": *"[^"]*"' "$TMP/fault.jsonl" | sort -u)"
grep -q '"error": *"timed out after 3 s"' "$TMP/fault.jsonl" || fail "the hang is not recorded"
grep -q '"error": *"result differs' "$TMP/fault.jsonl" || fail "the wrong result is not recorded"

# Other targets: a small budget (PoCL builds each program in about 2 s).
if "$XCOMP" targets 2>/dev/null | grep -q "^  opencl:"; then
  tune_target opencl --trials 3 --batch 3 --max-tasks 2 --search random
else
  echo "skipped: opencl (no OpenCL device)"
fi
if "$XCOMP" targets 2>/dev/null | grep -q "^  spirv:"; then
  tune_target spirv --trials 4 --batch 4 --max-tasks 3
else
  echo "skipped: spirv (no Vulkan device)"
fi

# Errors: one line each, nothing left behind.
expect_error 2 "no MODEL given" tune --target cpu
expect_error 2 "--trials takes a positive number" tune "$M/model.onnx" --trials 0
expect_error 1 "names an architecture" tune "$M/model.onnx" --target cuda:sm_90 --db "$TMP/arch.db"
expect_error 1 "tuning database" compile "$M/model.onnx" --target cpu --tuning-db "$TMP/missing.db" -o "$TMP/x.xcm"
echo "not a database" >"$TMP/bad.db"
expect_error 1 "bad.db" compile "$M/model.onnx" --target cpu --tuning-db "$TMP/bad.db" -o "$TMP/x.xcm"
echo '{"kind": "record", "task": 5}' >"$TMP/bad.jsonl"
expect_error 1 "bad.jsonl:1" tune --db "$TMP/cpu.db" --import "$TMP/bad.jsonl"

finish
