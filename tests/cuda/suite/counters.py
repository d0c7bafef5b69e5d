"""GPU counters and CUDA graphs against ncu, two launching threads, and the kernel-to-region
join, on `mt_graph` (two worker threads x two streams x three kernel shapes, then a graph of
five kernels, a memset and a copy replayed N times, each phase in a C-marker region)."""

import csv
import json
import os
import re
import sys

from runner import failure, part

METRICS = ["smsp__inst_executed.sum", "dram__bytes_read.sum"]
REPLAYS = "4"
NCU = ["ncu", "--cache-control", "none", "--clock-control", "none", "--metrics", ",".join(METRICS),
       "--csv", "--print-units", "base", "--page", "raw"]

ROWS = [
    ("kernel_mode", "GPU counters per kernel (kernel mode), two threads in turn",
     "ncu, node by node (`--graph-profiling node`)",
     "every kernel outside graphs has values; instructions equal; DRAM bytes read within 1 % or 64 KiB"),
    ("graph_sums", "GPU counters per CUDA graph launch (kernel mode)",
     "ncu, one result per graph launch (`--graph-profiling graph`)",
     "one sum per launch, each equal as above"),
    ("region_mode", "GPU counters per region (region mode, C markers)",
     "the kernel-mode sums of each region's kernels (checked against ncu above)",
     "every region counted; instructions equal; DRAM bytes within 1 % or 64 KiB per kernel"),
    ("two_threads", "GPU counters per kernel, two threads launching at once",
     "ncu, node by node", "as with one thread at a time"),
    ("join", "Every kernel joined to its launching region (two threads at once and a graph)",
     "the program's own count of launched kernels",
     "every kernel in `kernels.csv` with its region; 0 CUPTI records dropped"),
]


def kernels_csv(folder):
    path = os.path.join(folder, "kernels.csv")
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def graph_compare(suite, name, metron_csv, node_csv, graph_csv):
    """tests/cuda/graph_compare.py's verdicts: (plain ok, plain n, nan n, sums ok, sums n, ncu graph n)."""
    done = suite.sh(name, [sys.executable, os.path.join(suite.cuda_tests, "graph_compare.py"),
                           metron_csv, node_csv, graph_csv], timeout=60)
    if done.rc != 0:
        return {"error": failure(done, "graph_compare.py")}
    text = done.out
    plain = re.findall(r"^  kernel .* -> (OK|DIFF)$", text, re.M)
    sums = re.findall(r"^  graph launch .* -> (OK|DIFF)$", text, re.M)
    nan = re.search(r"(\d+) without values", text)
    graphs = re.search(r"ncu graph results: (\d+)", text)
    return {
        "plain_ok": plain.count("OK"), "plain": len(plain), "nan": int(nan.group(1)) if nan else -1,
        "sums_ok": sums.count("OK"), "sums": len(sums), "ncu_graphs": int(graphs.group(1)) if graphs else 0,
        "rc": done.rc,
    }


def region_sums(folder):
    s = json.load(open(os.path.join(folder, "summary.json")))
    return {r["region"]: r.get("sums", {}) for r in s["gpu"]["gpu_counters"]["by_region"]}


def kernel_mode(suite, rows, mt, env):
    """Kernel mode, threads in turn, against ncu node by node and graph by graph."""
    km, km_dir = suite.metron("counters-kernel-serial", [mt, REPLAYS, "serial"], env)
    node = suite.sh("ncu-node-serial", NCU + ["--graph-profiling", "node", mt, REPLAYS, "serial"], timeout=200)
    graph = suite.sh("ncu-graph-serial", NCU + ["--graph-profiling", "graph", mt, REPLAYS, "serial"], timeout=200)
    for label, done in (("node", node), ("graph", graph)):
        with open(os.path.join(suite.work, "logs", "ncu-%s-serial.csv" % label), "w") as f:
            f.write(done.out)
    bad = km if km.rc != 0 else (node if node.rc != 0 else (graph if graph.rc != 0 else None))
    if bad is not None:
        for key in ("kernel_mode", "graph_sums"):
            rows[key].set(failure(bad, "metron run" if bad is km else "ncu"), False)
        return
    logs = os.path.join(suite.work, "logs")
    v = graph_compare(suite, "compare-serial", os.path.join(km_dir, "kernels.csv"),
                      os.path.join(logs, "ncu-node-serial.csv"), os.path.join(logs, "ncu-graph-serial.csv"))
    if "error" in v:
        rows["kernel_mode"].set(v["error"], False)
        rows["graph_sums"].set(v["error"], False)
        return
    rows["kernel_mode"].set("%d/%d kernels equal, %d without values" % (v["plain_ok"], v["plain"], v["nan"]),
                            v["plain"] > 0 and v["plain_ok"] == v["plain"] and v["nan"] == 0)
    rows["graph_sums"].set("%d/%d graph launches equal (ncu: %d results)" % (v["sums_ok"], v["sums"], v["ncu_graphs"]),
                           v["sums"] > 0 and v["sums_ok"] == v["sums"] == v["ncu_graphs"])


def region_mode(suite, rows, mt, env):
    """Region mode's sums per region against kernel mode's (run by kernel_mode)."""
    row = rows["region_mode"]
    rm, rm_dir = suite.metron("counters-region-serial", [mt, REPLAYS, "serial"], dict(env, METRON_GPU_COUNTER_MODE="region"))
    km_dir = suite.run_dir("counters-kernel-serial")
    if rm.rc != 0:
        row.set(failure(rm, "metron run"), False)
        return
    by_region, by_kernel = region_sums(rm_dir), region_sums(km_dir)
    kernels_per_region = {}
    for r in kernels_csv(km_dir):
        kernels_per_region[r["Region"]] = kernels_per_region.get(r["Region"], 0) + 1
    equal, notes = 0, []
    for region, want in by_kernel.items():
        got = by_region.get(region, {})
        inst_ok = got.get(METRICS[0]) is not None and got.get(METRICS[0]) == want.get(METRICS[0])
        a, b = got.get(METRICS[1]), want.get(METRICS[1])
        slack = max(0.01 * (b or 0), 65536 * kernels_per_region.get(region, 1))
        if inst_ok and a is not None and b is not None and abs(a - b) <= slack:
            equal += 1
        else:
            notes.append("%s: %s vs %s" % (region, got.get(METRICS[0]), want.get(METRICS[0])))
    row.set("%d/%d regions equal%s" % (equal, len(by_kernel), ("; " + "; ".join(notes))[:200] if notes else ""),
            len(by_kernel) > 0 and equal == len(by_kernel))


def two_threads(suite, rows, mt, env):
    """Kernel mode with both threads launching at once, against ncu node by node."""
    ov, ov_dir = suite.metron("counters-kernel-overlap", [mt, REPLAYS, "overlap"], env)
    node = suite.sh("ncu-node-overlap", NCU + ["--graph-profiling", "node", mt, REPLAYS, "overlap"], timeout=200)
    logs = os.path.join(suite.work, "logs")
    with open(os.path.join(logs, "ncu-node-overlap.csv"), "w") as f:
        f.write(node.out)
    if ov.rc != 0 or node.rc != 0:
        rows["two_threads"].set(failure(ov if ov.rc != 0 else node, "metron run" if ov.rc != 0 else "ncu"), False)
        return
    v = graph_compare(suite, "compare-overlap", os.path.join(ov_dir, "kernels.csv"),
                      os.path.join(logs, "ncu-node-overlap.csv"), os.path.join(logs, "ncu-graph-serial.csv"))
    if "error" in v:
        rows["two_threads"].set(v["error"], False)
        return
    rows["two_threads"].set("%d/%d kernels equal, %d without values" % (v["plain_ok"], v["plain"], v["nan"]),
                            v["plain"] > 0 and v["plain_ok"] == v["plain"] and v["nan"] == 0)


def join(suite, rows, mt):
    """The default trace: every launched kernel with its region, nothing dropped."""
    tr, tr_dir = suite.metron("trace-overlap", [mt, REPLAYS, "overlap"])
    launched = re.search(r"MT_GRAPH .* kernels=(\d+)", tr.out)
    if tr.rc != 0 or not launched:
        rows["join"].set(failure(tr, "metron run"), False)
        return
    rows_csv = kernels_csv(tr_dir)
    unjoined = sum(1 for r in rows_csv if not r.get("Region"))
    dropped = (json.load(open(os.path.join(tr_dir, "metadata.json"))).get("gpu") or {}).get("cupti_dropped")
    want = int(launched.group(1))
    rows["join"].set("%d of %d kernels in kernels.csv, %d without a region, %s dropped" % (
        len(rows_csv), want, unjoined, dropped), len(rows_csv) == want and unjoined == 0 and dropped == 0)


def run(suite, rows):
    mt = suite.program("mt_graph")
    env = {"METRON_GPU_METRICS": ",".join(METRICS)}
    part(suite, [rows["kernel_mode"], rows["graph_sums"]], kernel_mode, suite, rows, mt, env)
    part(suite, [rows["region_mode"]], region_mode, suite, rows, mt, env)
    part(suite, [rows["two_threads"]], two_threads, suite, rows, mt, env)
    part(suite, [rows["join"]], join, suite, rows, mt)


CHECK = ("counters and graphs", ["mt_graph"], 150, ROWS, run)
