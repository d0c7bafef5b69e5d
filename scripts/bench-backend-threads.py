#!/usr/bin/env python3
"""METRON_BACKEND_THREADS=1 against 2 (docs/src/performance.md, "Scale with cores").

Runs `regions pairs N` (one recording thread) and `regions threads K N` (K recording threads)
with each setting, ROUNDS interleaved rounds, and prints the median wall time of the whole
process, its peak RSS and the recording's own rate (what the program printed), as a Markdown
table. Usage: scripts/bench-backend-threads.py REGIONS_BINARY [ROUNDS] [OUT_DIR]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time


def one(cmd, env):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    if status != 0:
        sys.exit(f"{cmd} failed ({status}): {err}")
    first = out.splitlines()[0] if out else ""
    rate = float(first.split("(")[1].split()[0]) if "(" in first else float("nan")
    return wall, usage.ru_maxrss / 1024, rate


def main():
    regions = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    out_dir = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="metron-bt-")
    workloads = [
        ("10^7 pairs, 1 recording thread", [regions, "pairs", "10000000"]),
        ("4 recording threads x 2.5*10^6 pairs", [regions, "threads", "4", "2500000"]),
        ("8 recording threads x 1.25*10^6 pairs", [regions, "threads", "8", "1250000"]),
    ]
    results = {}
    for r in range(rounds):
        for name, cmd in workloads:
            for bt in ("1", "2"):
                env = dict(os.environ)
                env["METRON_BACKEND_THREADS"] = bt
                env["METRON_OUTPUT_PATH"] = os.path.join(out_dir, f"run-{r}-{bt}-{len(results)}")
                results.setdefault((name, bt), []).append(one(cmd, env))
                subprocess.run(["rm", "-rf", env["METRON_OUTPUT_PATH"]])
    print(f"{os.cpu_count()} CPUs, {rounds} interleaved rounds, medians")
    print()
    print("| workload | METRON_BACKEND_THREADS | process wall, s | peak RSS, MB | recording, M regions/s | end to end, M regions/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, cmd in workloads:
        n = 10_000_000
        for bt in ("1", "2"):
            rows = results[(name, bt)]
            wall = statistics.median(w for w, _, _ in rows)
            rss = statistics.median(m for _, m, _ in rows)
            rate = statistics.median(x for _, _, x in rows)
            print(f"| {name} | {bt} | {wall:.3f} | {rss:.0f} | {rate:.1f} | {n / wall / 1e6:.1f} |")


if __name__ == "__main__":
    main()
