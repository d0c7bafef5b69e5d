"""Compares Metron's kernel-mode counters (kernels.csv) with ncu's (--csv --page raw)
per kernel, and region-mode sums (summary.json) with kernel-mode sums per region.

    python3 counters_vs_ncu.py KERNELS_CSV NCU_CSV [REGION_SUMMARY_JSON KERNEL_SUMMARY_JSON]
"""
import collections
import csv
import json
import sys

METRICS = ["smsp__inst_executed.sum", "dram__bytes_read.sum"]


def base(name):
    return name.split("(")[0].split(" [")[0].replace("void ", "").strip()


def metron_rows(path):
    rows = [r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))]
    return rows


def ncu_rows(path):
    lines = [l for l in open(path) if l.startswith('"')]
    rows = list(csv.DictReader(lines))
    return [r for r in rows if r.get("ID", "").isdigit()]


def main():
    m = metron_rows(sys.argv[1])
    n = ncu_rows(sys.argv[2])
    print(f"kernels: metron {len(m)}, ncu {len(n)}")
    by_m = collections.defaultdict(list)
    by_n = collections.defaultdict(list)
    nan = 0
    for r in m:
        if r[METRICS[0]] in ("", "nan"):
            nan += 1
            continue
        by_m[base(r["Method"])].append(tuple(float(r[k]) for k in METRICS))
    for r in n:
        by_n[base(r["Kernel Name"])].append(tuple(float(r[k].replace(",", "")) for k in METRICS))
    print(f"metron kernels without values: {nan}")
    ok = nan == 0
    for k in sorted(set(by_m) | set(by_n)):
        a, b = by_m.get(k, []), by_n.get(k, [])
        inst_a = collections.Counter(v[0] for v in a)
        inst_b = collections.Counter(v[0] for v in b)
        # Each Metron instance against the closest ncu instance of the same kernel (ncu also
        # profiles the graph's nodes, whose inputs differ).
        db = [v[1] for v in b]
        pairs = [(x, min(db, key=lambda y: abs(x - y))) for x in (v[1] for v in a)] if db else []
        worst = max((abs(x - y) / max(y, 1.0) for x, y in pairs), default=0.0)
        # DRAM bytes of tiny reads (fma_loop: a few KB) are noise: compare within 1% or 64 KiB.
        worst_abs = max((abs(x - y) for x, y in pairs), default=0.0)
        same = set(inst_a) == set(inst_b) and (worst <= 0.01 or worst_abs <= 65536)
        ok &= same
        print(f"  {k}: n={len(a)}/{len(b)} instructions metron {dict(inst_a)} ncu {dict(inst_b)}; "
              f"DRAM worst rel diff {worst:.4%} (abs {worst_abs:.0f} B) -> {'OK' if same else 'DIFF'}")
    if len(sys.argv) > 4:
        rj = json.load(open(sys.argv[3]))["gpu"]["gpu_counters"]["by_region"]
        kj = json.load(open(sys.argv[4]))["gpu"]["gpu_counters"]["by_region"]
        ks = {r["region"]: r["sums"] for r in kj}
        for r in rj:
            k = ks.get(r["region"], {})
            for metric in METRICS:
                a, b = r["sums"].get(metric), k.get(metric)
                rel = abs(a - b) / max(b, 1.0) if a is not None and b is not None else None
                print(f"  region {r['region']} {metric}: region mode {a} kernel mode {b} rel {rel}")
    print("RESULT", "PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
