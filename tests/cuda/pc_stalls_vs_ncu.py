#!/usr/bin/env python3
"""Metron's per-kernel stall-reason shares (pc_samples.csv) against ncu's
smsp__pcsamp_warps_issue_stalled_* (ncu --csv --page raw), plain reasons only (the
`_not_issued` variants are subsets). Prints each kernel's top reasons side by side, whether the
top-three ranking agrees, and the largest share difference in points.

  pc_stalls_vs_ncu.py RUN_DIR/pc_samples.csv ncu.csv
"""
import csv
import re
import sys
from collections import defaultdict

PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def norm(kernel):
    """`chase(const unsigned int *, unsigned int *, int)` and
    `chase(unsigned int const*, unsigned int*, int)` -> `chase`."""
    return re.split(r"[(<]", kernel.strip())[0].replace("void ", "")


def metron(path):
    by = defaultdict(lambda: defaultdict(int))
    for r in csv.DictReader(open(path)):
        by[norm(r["kernel"])][r["stall_reason"]] += int(r["samples"])
    return by


def ncu(path):
    lines = [l for l in open(path) if l.startswith('"')]
    rows = list(csv.reader(lines))
    head = rows[0]
    cols = [
        (i, c[len(PREFIX):])
        for i, c in enumerate(head)
        if c.startswith(PREFIX) and not c.endswith("_not_issued")
    ]
    k = head.index("Kernel Name")
    by = defaultdict(lambda: defaultdict(int))
    for r in rows[1:]:
        if not r[0].isdigit():
            continue  # the units row
        for i, name in cols:
            v = r[i].replace(",", "")
            if v:
                by[norm(r[k])][name] += int(float(v))
    return by


def shares(d):
    t = sum(d.values()) or 1
    return {k: 100.0 * v / t for k, v in d.items()}, t


def main():
    m, n = metron(sys.argv[1]), ncu(sys.argv[2])
    ok_all = True
    for kernel in sorted(set(m) | set(n)):
        ms, mt = shares(m.get(kernel, {}))
        ns, nt = shares(n.get(kernel, {}))
        mtop = sorted(ms, key=ms.get, reverse=True)[:3]
        ntop = sorted(ns, key=ns.get, reverse=True)[:3]
        reasons = sorted(set(ms) | set(ns), key=lambda r: -max(ms.get(r, 0), ns.get(r, 0)))
        worst = max((abs(ms.get(r, 0) - ns.get(r, 0)) for r in reasons), default=0)
        top_worst = max((abs(ms.get(r, 0) - ns.get(r, 0)) for r in set(mtop) | set(ntop)), default=0)
        same = mtop == ntop
        ok = same and top_worst <= 5.0
        ok_all &= ok
        print(f"{kernel}: metron {mt} samples, ncu {nt} samples; top-3 metron {mtop} ncu {ntop}: "
              f"{'same order' if same else 'DIFFERENT order'}; top-3 max diff {top_worst:.2f} pts, "
              f"all reasons max diff {worst:.2f} pts -> {'OK' if ok else 'FAIL'}")
        for r in reasons[:6]:
            print(f"    {r:24s} metron {ms.get(r, 0):6.2f}%  ncu {ns.get(r, 0):6.2f}%")
    print("ALL OK" if ok_all else "NOT ALL OK")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
