#!/usr/bin/env python3
"""Checks the PC-sampling runs scripts/gpu-validate.sh makes, in DIR (default /tmp/r): a run folder
per program and mode (pc_stalls_continuous, pc_inline_serialized, ...) and pc_inline.nvdisasm-gi.txt.

Trace annotations: each run's trace is decoded by tests/perfetto/validate_trace.py --slices
(the official Perfetto protos). Every slice on a "... PC sampling" track must sit at its kernel
slice's times (same correlation_id) under that stream's track. Continuous runs: its arguments
equal summary.json's gpu_pc_sampling.by_kernel entry of its kernel (samples, top three stalls
and their %, hottest line and its stall). Serialized runs: scope "launch", and a kernel's launch
slices add up to its summary samples.

Inlined-at chains: each pc_inline run's pc_samples.csv rows of `nested` must give the line and
inlined_at chain that nvdisasm -gi prints for that PC (pc_inline.nvdisasm-gi.txt; where nvdisasm
prints no block of its own, only the line).

Prints one line per check and exits 1 when any fails.
"""

import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VALIDATOR = os.path.join(HERE, "..", "perfetto", "validate_trace.py")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def trace_notes(run):
    out = subprocess.run(
        [sys.executable, VALIDATOR, os.path.join(run, "trace.pftrace"), "--slices"],
        capture_output=True, text=True)
    check(out.returncode == 0, "%s: trace validates %s" % (run, out.stderr[-300:]))
    t = json.loads(out.stdout)
    tracks = {x["uuid"]: x for x in t["tracks"]}
    notes = [s for s in t["slices"] if tracks.get(s["track"], {}).get("name", "").endswith(" PC sampling")]
    kernels = {}
    for s in t["slices"]:
        # A kernel slice: its launch configuration (one `launch` text) and correlation id, on
        # its stream's track or on one of the stream's lanes (`<stream track> lane <n>`),
        # keyed by the stream's track.
        if "launch" in s["args"] or "grid" in s["args"]:
            track = tracks.get(s["track"], {})
            stream = track.get("parent") if " lane " in track.get("name", "") else s["track"]
            kernels[(stream, s["args"].get("correlation_id"))] = s
    return tracks, notes, kernels


def annotations(run, serialized):
    summary = json.load(open(os.path.join(run, "summary.json")))["gpu_pc_sampling"]
    by_kernel = {k["name"]: k for k in summary["by_kernel"]}
    tracks, notes, kernels = trace_notes(run)
    check(len(notes) > 0, "%s: %d PC sampling slices" % (run, len(notes)))
    bad = []
    sums = {}
    for n in notes:
        a = n["args"]
        parent = tracks[n["track"]].get("parent")
        k = kernels.get((parent, a.get("correlation_id")))
        if k is None or (k["ts"], k["dur"]) != (n["ts"], n["dur"]):
            bad.append("no kernel slice at the note's times: %s" % a)
            continue
        sums[a["kernel"]] = sums.get(a["kernel"], 0) + a["samples"]
        if serialized:
            if a["scope"] != "launch":
                bad.append("scope %s" % a["scope"])
            continue
        s = by_kernel[a["kernel"]]
        want = {"samples": s["samples"], "hottest_line": s["top_lines"][0]["location"],
                "hottest_line_stall": s["top_lines"][0]["dominant_stall"]}
        for i, r in enumerate(s["stall_reasons"][:3]):
            want["stall_%d" % (i + 1)] = r["reason"]
            want["stall_%d_percent" % (i + 1)] = r["percent"]
        got = {key: a.get(key) for key in want}
        if got != want:
            bad.append("%s: %s != %s" % (a["kernel"], got, want))
    if serialized:
        for name, total in sums.items():
            if total != by_kernel[name]["samples"]:
                bad.append("%s: launches add up to %d, summary %d" % (name, total, by_kernel[name]["samples"]))
    check(not bad, "%s: annotations %s" % (run, "; ".join(bad[:5])))


def nvdisasm_chains(path):
    out, function, chain, block = {}, None, [], False
    for line in open(path):
        t = line.strip()
        if t.startswith(".text.") and t.endswith(":"):
            function, chain = t[6:-1], []
        elif t.startswith("//##"):
            if not block:
                chain = []
            block = True
            chain.append(int(t.split("line ")[1].split()[0].rstrip(",")))
        elif t.startswith("/*") and "*/" in t and function:
            try:
                out[(function, int(t[2:t.index("*/")], 16))] = (list(chain), block)
            except ValueError:
                pass
            block = False
    return out


def chains(run, want):
    rows = list(csv.DictReader(open(os.path.join(run, "pc_samples.csv"))))
    nested = [r for r in rows if r["function"] == "nested"]
    inlined = [r for r in nested if r["inlined_at"]]
    bad = []
    for r in nested:
        got = [int(r["line"])] + [int(x.rsplit(":", 1)[1]) for x in r["inlined_at"].split(", ") if x]
        w, at_block = want.get(("nested", int(r["pc_offset"], 16)), (None, True))
        # nvdisasm prints a block only where the innermost line changes: elsewhere only that
        # line is its statement (see tests/gpu_pcsampling_lines.rs).
        if (w != got) if at_block else (w is None or w[0] != got[0]):
            bad.append("%s: %s, nvdisasm %s" % (r["pc_offset"], got, w))
    check(len(inlined) > 0 and not bad,
          "%s: %d rows of nested, %d inlined, chains as nvdisasm -gi %s" % (run, len(nested), len(inlined), "; ".join(bad[:5])))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/r"
    want = nvdisasm_chains(os.path.join(d, "pc_inline.nvdisasm-gi.txt"))
    check(any(len(c) > 1 for c, _ in want.values()), "nvdisasm -gi shows inlined chains")
    for prog in ("pc_stalls", "pc_inline"):
        for mode in ("continuous", "serialized"):
            run = os.path.join(d, "%s_%s" % (prog, mode))
            if not os.path.isdir(run):
                check(False, "%s: no run folder" % run)
                continue
            annotations(run, mode == "serialized")
            if prog == "pc_inline":
                chains(run, want)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
