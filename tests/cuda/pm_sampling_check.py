#!/usr/bin/env python3
"""The check of a Metron run of pm_mix with PM sampling: reads trace.pftrace (decoded by
tests/perfetto/validate_trace.py), the kernel slices and the metric counter tracks, and prints
per kernel launch the mean of each metric over the samples that start inside it, the gaps'
means, where the high-DRAM samples fall, and the copy's DRAM rate against bytes / duration.

    pm_sampling_check.py RUN_DIR [pm_mix.log] [interval_ns]
"""
import json
import os
import subprocess
import sys


VALIDATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "perfetto", "validate_trace.py")


def read(path):
    """The trace as tests/perfetto/validate_trace.py decodes it (sequence defaults, interning
    and incremental clocks resolved): track names, parents, counter tracks, slices per track
    and counter values with their times."""
    done = subprocess.run([sys.executable, VALIDATOR, path, "--slices", "--counter-samples"],
                          capture_output=True, text=True)
    if done.returncode == 2 or not done.stdout.strip():
        sys.exit("validate_trace.py could not decode %s: %s" % (path, done.stderr.strip()))
    trace = json.loads(done.stdout)
    names = {t["uuid"]: t.get("name") or "" for t in trace["tracks"]}
    parents = {t["uuid"]: t.get("parent") for t in trace["tracks"]}
    counters = {c["uuid"] for c in trace["counters"]}
    slices = {}  # uuid -> [(start, end, name)]
    for sl in trace["slices"]:
        slices.setdefault(sl["track"], []).append((sl["ts"], sl["ts"] + sl["dur"], sl["name"]))
    values = {c["uuid"]: [(t, v) for t, v in c.get("samples", [])] for c in trace["counters"]}
    return names, parents, counters, slices, values


def main():
    run = sys.argv[1]
    log = sys.argv[2] if len(sys.argv) > 2 else None
    interval = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    names, parents, counters, slices, values = read(os.path.join(run, "trace.pftrace"))
    kernels = []
    for u, sl in slices.items():
        # A stream's track or one of its lanes (`<stream track> lane <n>`).
        if names.get(u, "").startswith("GPU ") and " stream " in names.get(u, ""):
            for s, e, n in sl:
                if "copy_kernel" in n or "fma_kernel" in n:
                    kernels.append((s, e, "copy" if "copy" in n else "fma"))
    kernels.sort()
    # The warm-up launches are tiny; keep the measured ones (>= 0.5 ms).
    kernels = [k for k in kernels if k[1] - k[0] >= 500_000]
    # The PM-sampling tracks (Metron's own counters, e.g. "metron: process RSS", left out).
    metrics = {names[u]: sorted(v) for u, v in values.items() if u in counters and not names[u].startswith("metron:")}
    print("tracks:", {m: len(v) for m, v in metrics.items()})
    print("group:", sorted({str(names.get(parents.get(u))) for u in values}))
    print("kernels:", [(k[2], round((k[1] - k[0]) / 1e6, 3)) for k in kernels])
    out = {"kernels": [], "gaps": {}, "alignment": {}}
    for s, e, kind in kernels:
        row = {"kernel": kind, "dur_ms": (e - s) / 1e6}
        for m, v in metrics.items():
            inside = [x for t, x in v if s <= t and t + interval <= e]
            row[m] = (sum(inside) / len(inside), len(inside)) if inside else None
        out["kernels"].append(row)
        print(json.dumps(row))
    # Gaps: samples at least one interval away from every kernel.
    for m, v in metrics.items():
        gap = [x for t, x in v if kernels and kernels[0][0] < t < kernels[-1][1]
               and all(t + interval < s - interval or t > e + interval for s, e, _ in kernels)]
        out["gaps"][m] = (sum(gap) / len(gap), max(gap), len(gap)) if gap else None
    print("gaps (mean, max, n):", json.dumps(out["gaps"]))
    # Alignment: samples above half the track's max: how far from the nearest kernel slice of
    # the kind they describe (0 inside), in sampling intervals.
    for m, v in metrics.items():
        top = max((x for _, x in v), default=0)
        if top <= 0:
            continue
        far = []
        for t, x in v:
            if x < top / 2:
                continue
            d = min((0 if s <= t <= e else min(abs(t - s), abs(t - e)))
                    for s, e, _ in kernels) if kernels else 0
            far.append(d / interval)
        kinds = {}
        for t, x in v:
            if x >= top / 2:
                for s, e, k in kernels:
                    if s - interval <= t <= e + interval:
                        kinds[k] = kinds.get(k, 0) + 1
        out["alignment"][m] = {"high_samples": len(far), "outside_2_intervals": sum(1 for d in far if d > 2),
                               "max_intervals_away": max(far) if far else None, "by_kernel": kinds}
    print("alignment:", json.dumps(out["alignment"]))
    if log and os.path.exists(log):
        kt = [l.split() for l in open(log) if l.startswith("KTIME")]
        copies = [(float(x[2]), int(x[4])) for x in kt if x[1] == "copy"]
        print("copy event times ms / bytes:", copies)
        for i, (s, e, kind) in enumerate(k for k in kernels if k[2] == "copy"):
            if i < len(copies):
                rate = copies[i][1] / ((e - s) / 1e9)
                print("copy %d: bytes/duration = %.1f GB/s (slice %.3f ms)" % (i, rate / 1e9, (e - s) / 1e6))
    verdict(out, metrics, kernels, log, interval)
    json.dump(out, open(os.path.join(run, "pm_sampling_check.json"), "w"), indent=1)


def verdict(out, metrics, kernels, log, interval):
    """The issue's checks, one line each: DRAM high in copies and low in FMA kernels, SM the
    reverse, both near zero in the gaps, high samples within 2 intervals of their kernel, and
    the copy's mean DRAM bytes/s (read + write tracks, or dram__bytes) against bytes moved /
    the kernel slice's duration (10 %)."""
    def mean_in(kind, pred):
        vals = []
        for row in out["kernels"]:
            if row["kernel"] != kind:
                continue
            for m, v in row.items():
                if pred(m) and isinstance(v, (list, tuple)):
                    vals.append(v[0])
        return sum(vals) / len(vals) if vals else None
    is_dram = lambda m: m.startswith("dram") and "write" not in m and "pct" not in m
    is_sm = lambda m: m.startswith("sm__inst_executed") or m.startswith("sm__throughput")
    res = {}
    for label, pred, hi, lo in (("dram", is_dram, "copy", "fma"), ("sm", is_sm, "fma", "copy")):
        a, b = mean_in(hi, pred), mean_in(lo, pred)
        if a is None:
            continue
        gaps = [g[0] for m, g in out["gaps"].items() if pred(m) and g]
        gap = max(gaps) if gaps else None
        res[label + "_high_in_" + hi] = (a, b, gap, a > 5 * max(b, 1e-12) and (gap is None or gap < 0.1 * a))
    # Every measured kernel has its samples (the last ones too: the end of the run decodes all).
    cover = []
    for row in out["kernels"]:
        ns = [v[1] for m, v in row.items() if isinstance(v, (list, tuple))]
        cover.append(round(min(ns) / (row["dur_ms"] * 1e6 / interval), 2) if ns else 0)
    res["every_kernel_sampled"] = (cover, bool(cover) and min(cover) >= 0.8)
    al = [v["outside_2_intervals"] for v in out["alignment"].values()]
    res["alignment_outside_2_intervals"] = (sum(al), sum(al) == 0)
    # DRAM bytes/s against bytes / duration, per copy launch.
    bps = [m for m in metrics if m.startswith("dram__bytes") and m.endswith("per_second")]
    if log and os.path.exists(log) and bps:
        kt = [l.split() for l in open(log) if l.startswith("KTIME")]
        moved = [int(x[4]) for x in kt if x[1] == "copy"]
        ratios = []
        for i, row in enumerate(r for r in out["kernels"] if r["kernel"] == "copy"):
            if i >= len(moved):
                break
            tot = None
            if "dram__bytes.sum.per_second" in row and row["dram__bytes.sum.per_second"]:
                tot = row["dram__bytes.sum.per_second"][0]
            elif all(row.get(m) for m in ("dram__bytes_read.sum.per_second", "dram__bytes_write.sum.per_second")):
                tot = row["dram__bytes_read.sum.per_second"][0] + row["dram__bytes_write.sum.per_second"][0]
            if tot is None:
                continue
            want = moved[i] / (row["dur_ms"] / 1e3)
            ratios.append(tot / want)
        if ratios:
            res["dram_bytes_per_s_over_bytes_per_duration"] = (ratios, all(abs(r - 1) <= 0.10 for r in ratios))
    out["verdict"] = res
    for k, v in res.items():
        print("CHECK %s %s %s" % ("PASS" if v[-1] else "FAIL", k, json.dumps(v[:-1])))


if __name__ == "__main__":
    main()
