#!/usr/bin/env python3
"""The check of a Metron run of pm_mix with PM sampling: reads trace.pftrace (a minimal
protobuf reader, no dependencies), the kernel slices and the metric counter tracks, and prints
per kernel launch the mean of each metric over the samples that start inside it, the gaps'
means, where the high-DRAM samples fall, and the copy's DRAM rate against bytes / duration.

    pm_sampling_check.py RUN_DIR [pm_mix.log] [interval_ns]
"""
import json
import os
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v = b[i:i + 8]
            i += 8
        elif w == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif w == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def read(path):
    import struct
    data = open(path, "rb").read()
    names, parents, counters = {}, {}, set()
    slices = {}  # uuid -> [(start, end, name)]
    open_ = {}
    values = {}  # uuid -> [(ts, v)]
    for f, w, pkt in fields(data):
        if f != 1:
            continue
        ts = 0
        te = td = None
        for f2, w2, v2 in fields(pkt):
            if f2 == 8:
                ts = v2
            elif f2 == 11 and w2 == 2:
                te = v2
            elif f2 == 60:
                td = v2
        if td is not None:
            u = None
            for f3, w3, v3 in fields(td):
                if f3 == 1:
                    u = v3
                elif f3 == 2:
                    names[u] = v3.decode()
                elif f3 == 5:
                    parents[u] = v3
                elif f3 == 8:
                    counters.add(u)
        if te is not None:
            typ = uuid = name = val = None
            for f3, w3, v3 in fields(te):
                if f3 == 9:
                    typ = v3
                elif f3 == 11:
                    uuid = v3
                elif f3 == 23:
                    name = v3.decode()
                elif f3 == 44:
                    val = struct.unpack("<d", v3)[0]
            if typ == 4:
                values.setdefault(uuid, []).append((ts, val))
            elif typ == 1:
                open_.setdefault(uuid, []).append((ts, name))
            elif typ == 2 and open_.get(uuid):
                s, n = open_[uuid].pop()
                slices.setdefault(uuid, []).append((s, ts, n))
    return names, parents, counters, slices, values


def main():
    run = sys.argv[1]
    log = sys.argv[2] if len(sys.argv) > 2 else None
    interval = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    names, parents, counters, slices, values = read(os.path.join(run, "trace.pftrace"))
    kernels = []
    for u, sl in slices.items():
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
