#!/usr/bin/env python3
"""Compares tuning runs exported as JSON lines (`xcomp tune --export`): per
search (one file each, e.g. the cost model's and random search's, each
holding several runs of the same model and budget), the mean over runs and
tasks of the trials needed to reach 90% of the best speedup any run found
for that task, the final speedup reached, and the cost model's rank
correlation (Spearman) between its predictions and the measured speedups
of the candidates it picked (held out: predicted before it saw them).

Usage: tune_analyze.py SEARCH.jsonl [SEARCH.jsonl ...]
"""
import json
import math
import statistics
import sys


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den else float("nan")


def load(path):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") != "record":
            continue
        runs.setdefault((r["run_id"], r["task"]), []).append(r)
    return runs


def main():
    files = sys.argv[1:]
    data = {f: load(f) for f in files}
    # the best speedup any run of any search found, per task
    best = {}
    for runs in data.values():
        for (run, task), recs in runs.items():
            for r in recs:
                if r["valid"] and r["default_ms"] > 0:
                    best[task] = max(best.get(task, 0), r["default_ms"] / r["time_ms"])
    print("| search | runs x tasks | trials to 90% of the best (mean) | reached 90% | final speedup (geomean) | rank corr. (held-out) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for f, runs in data.items():
        to90, reached, finals, pred, meas = [], 0, [], [], []
        for (run, task), recs in runs.items():
            recs.sort(key=lambda r: r["trial"])
            target = 0.9 * best.get(task, 1)
            cur, hit = 0.0, None
            for r in recs:
                if r["valid"] and r["default_ms"] > 0:
                    s = r["default_ms"] / r["time_ms"]
                    cur = max(cur, s)
                    if r["predicted"] is not None:
                        pred.append(r["predicted"])
                        meas.append(math.log(s))
                if hit is None and cur >= target:
                    hit = r["trial"] + 1
            to90.append(hit if hit is not None else len(recs) + 1)
            reached += hit is not None
            finals.append(max(cur, 1e-9))
        n = len(runs)
        geo = math.exp(statistics.mean(math.log(x) for x in finals)) if finals else float("nan")
        rc = spearman(pred, meas)
        print(f"| {f} | {n} | {statistics.mean(to90):.1f} | {reached}/{n} | {geo:.2f}x | "
              f"{'–' if math.isnan(rc) else f'{rc:.2f} (n={len(pred)})'} |")


if __name__ == "__main__":
    main()
