#!/usr/bin/env bash
# xcomp run --profile / --profile-json (docs/cli.md, "Profiles"): the
# per-kernel table of gpt2-tiny on cpu lists every kernel of the module once,
# each launched with a positive time, the times add up to the column sums,
# the host split adds up to the total; the JSON says the same. Also through
# the model form and on opencl / spirv when `xcomp targets` lists them.
set -u
. "$(dirname "$0")/helpers.bash"
export XCOMP_CACHE_DIR="$TMP/cache"

GPT="$MODELS/gpt2-tiny"
IN="@$GPT/test_data_set_0/input_0.pb"

# check_profile FILE KERNELS: the table in FILE (stdout of a run) lists
# KERNELS kernels once each, launches > 0, total > 0, mean = total/launches.
check_profile() {
  python3 - "$1" "$2" <<'PY' || fail "profile table: $(cat "$1")"
import re, sys
text = open(sys.argv[1]).read().splitlines()
want = int(sys.argv[2])
head = [i for i, l in enumerate(text) if l.startswith("profile: ")]
assert len(head) == 1, "no 'profile:' line"
rows, names = [], set()
for l in text[head[0] + 2:]:
    m = re.match(r"  (\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)  (.+)$", l)
    if not m:
        break
    name, launches, total, mean = m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4))
    assert name not in names, "kernel listed twice: " + name
    names.add(name)
    assert launches > 0 and total > 0, l
    assert abs(mean * launches - total) <= 1e-3 + 1e-3 * total, l
    assert m.group(8) and m.group(8) != "?", "no origin: " + l
    rows.append(total)
assert len(rows) == want, "%d kernels listed, module has %d" % (len(rows), want)
assert rows == sorted(rows, reverse=True), "not sorted by time"
s = [l for l in text if l.startswith("  sum of kernel times")][0]
ksum, span = map(float, re.findall(r"([\d.]+) ms", s))
assert abs(ksum - sum(rows)) <= 1e-3 * len(rows), s
assert ksum <= span * 1.05 + 0.01, "kernel times exceed the kernels' span: " + s
h = [l for l in text if l.startswith("host: total")][0]
nums = list(map(float, re.findall(r"(-?[\d.]+)", h)))
total, parts = nums[0], nums[1:6]
assert len(parts) == 5 and all(p >= 0 for p in parts[:4]), h
assert abs(sum(parts) - total) <= 0.01, h
PY
}

if command -v python3 >/dev/null 2>&1; then HAVE_PY=1; else HAVE_PY=0; fi

# The module's kernel count, from `xcomp compile`.
run_xcomp compile "$GPT/model.onnx" --target cpu -o "$TMP/gpt.xcm"
[ "$RC" -eq 0 ] || fail "compile gpt2-tiny: $(cat "$TMP/err")"
NK=$(sed -n 's/.*target cpu, \([0-9]*\) kernels.*/\1/p' "$TMP/out")

if expect_ok run "$TMP/gpt.xcm" --input "$IN" --output-dir "$TMP/o" --profile --profile-json "$TMP/p.json"; then
  grep -q "^output 0 'logits'" "$TMP/out" || fail "outputs not printed first: $(head -3 "$TMP/out")"
  [ "$(grep -n '^output 0' "$TMP/out" | cut -d: -f1)" -lt "$(grep -n '^profile:' "$TMP/out" | cut -d: -f1)" ] ||
    fail "the profile comes before the outputs"
  [ "$HAVE_PY" = 1 ] && check_profile "$TMP/out" "$NK"
  if [ "$HAVE_PY" = 1 ]; then
    python3 - "$TMP/p.json" "$NK" <<'PY' || fail "--profile-json: $(head -c 2000 "$TMP/p.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ks = d["kernels"]
assert len(ks) == int(sys.argv[2]) and len({k["name"] for k in ks}) == len(ks)
assert all(k["launches"] > 0 and k["total_ms"] > 0 and k["bytes"] > 0 and k["origin"] for k in ks)
assert d["launches"] == sum(k["launches"] for k in ks) and d["runs"] == 1
assert d["target"] == "cpu" and set(d["host_ms"]) == {"total", "binding", "upload", "kernels", "download"}
assert sum(k["total_ms"] for k in ks) <= d["host_ms"]["kernels"] * 1.05 + 0.01
PY
  fi
fi

# --repeat sums the runs after the first (a warm-up): every kernel launched
# 3 times in the profile of 4 runs.
run_xcomp run "$TMP/gpt.xcm" --input "$IN" --output-dir "$TMP/o" --profile --repeat 4
if [ "$RC" -ne 0 ]; then
  fail "--repeat 4 --profile exited $RC: $(head -c 500 "$TMP/err")"
else
  grep -q "launches in 3 runs" "$TMP/out" || fail "--repeat 4 --profile: $(grep profile: "$TMP/out")"
fi
# The model form compiles for cpu and profiles too.
if expect_ok "$GPT/model.onnx" --input "$IN" --output-dir "$TMP/o" --profile && [ "$HAVE_PY" = 1 ]; then
  check_profile "$TMP/out" "$NK"
fi
# The interpreter has no kernels to time.
expect_error 2 "--profile needs a compiled target" run "$GPT/model.onnx" --input "$IN" --profile
expect_error 1 "--profile-json" run "$TMP/gpt.xcm" --input "$IN" --output-dir "$TMP/o" --profile-json "$TMP/no/such/dir/p.json"

# Other targets where present: the same table from their events.
run_xcomp targets
for t in opencl spirv; do
  grep -q "^  $t:0 " "$TMP/out" || continue
  cp "$TMP/out" "$TMP/targets"
  run_xcomp run "$GPT/model.onnx" --target "$t" --input "$IN" --output-dir "$TMP/o_$t" --profile
  if [ "$RC" -eq 0 ]; then
    NT=$(sed -n 's/^profile: \([0-9]*\) kernels.*/\1/p' "$TMP/out")
    [ -n "$NT" ] || fail "$t: no profile table"
    [ "$HAVE_PY" = 1 ] && [ -n "$NT" ] && check_profile "$TMP/out" "$NT"
  else
    echo "note: --profile on $t skipped: $(head -c 300 "$TMP/err")" >&2
  fi
  cp "$TMP/targets" "$TMP/out"
done
finish
