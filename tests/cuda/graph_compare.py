"""Metron's kernel-mode counters (kernels.csv) against ncu, graph launches
included. Kernels outside graphs are compared one by one with `ncu --graph-profiling node`
(same kernel name, closest instance); each graph launch's sum (the row whose CounterNote says
"sum over") with the results of `ncu --graph-profiling graph` (one per graph launch, in order).

    python3 graph_compare.py KERNELS_CSV NCU_NODE_CSV NCU_GRAPH_CSV
"""
import collections
import csv
import sys

METRICS = ["smsp__inst_executed.sum", "dram__bytes_read.sum"]


def base(name):
    return name.split("(")[0].split(" [")[0].replace("void ", "").strip()


def ncu(path):
    rows = list(csv.DictReader(l for l in open(path) if l.startswith('"')))
    return [r for r in rows if r.get("ID", "").isdigit()]


def value(r, k):
    return float(r[k].replace(",", ""))


def close(a, b, metric):
    # DRAM bytes vary run to run by a few KB (tiny reads are noise): 1 % or 64 KiB.
    if metric.startswith("smsp__inst"):
        return a == b
    return abs(a - b) <= max(0.01 * b, 65536)


def main():
    rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
    node, graph = ncu(sys.argv[2]), ncu(sys.argv[3])
    ok = True
    plain = [r for r in rows if not r["GraphId"]]
    sums = [r for r in rows if r["CounterNote"].startswith("sum over")]
    inside = [r for r in rows if r["CounterNote"].startswith("counted in its graph")]
    nan = [r for r in rows if r[METRICS[0]] in ("nan",) or (r[METRICS[0]] == "" and r not in inside)]
    print(f"kernels.csv: {len(rows)} rows, {len(plain)} outside graphs, {len(sums)} graph launch "
          f"sums, {len(inside)} kernels inside a sum, {len(nan)} without values")
    for r in nan:
        print("  no values:", base(r["Method"]), r["CounterNote"][:100])
    ok &= not nan
    by_name = collections.defaultdict(list)
    for r in node:
        by_name[base(r["Kernel Name"])].append([value(r, k) for k in METRICS])
    for r in plain:
        if r[METRICS[0]] in ("", "nan"):
            continue
        got = [float(r[k]) for k in METRICS]
        cands = by_name.get(base(r["Method"]), [])
        best = min(cands, key=lambda c: abs(c[1] - got[1]), default=None)
        same = best is not None and all(close(a, b, m) for a, b, m in zip(got, best, METRICS))
        ok &= same
        print(f"  kernel {base(r['Method'])}: metron {got} ncu {best} -> {'OK' if same else 'DIFF'}")
    graph_results = [r for r in graph if "graph" in r.get("Kernel Name", "").lower()]
    print(f"ncu graph results: {len(graph_results)}")
    ok &= len(graph_results) == len(sums) and len(sums) > 0
    for r, g in zip(sums, graph_results):
        got = [float(r[k]) for k in METRICS]
        want = [value(g, k) for k in METRICS]
        same = all(close(a, b, m) for a, b, m in zip(got, want, METRICS))
        ok &= same
        print(f"  graph launch {r['CorrelationId']}: metron {got} ncu {want} -> {'OK' if same else 'DIFF'}")
    print("RESULT", "PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
