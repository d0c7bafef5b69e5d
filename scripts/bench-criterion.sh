#!/usr/bin/env bash
# Runs the criterion benches of the hot path (benches/benches/hot_path.rs, work.rs) and prints
# a markdown table of the medians: ns per begin/end pair in a tight loop, its ratio to the bare
# two-rdtsc floor, and the ns a region adds around ~100 ns of dependent arithmetic.
#
# Usage: scripts/bench-criterion.sh [--no-run] [criterion args...]
#   --no-run   only print the table from the last run's results.
# Env:   CARGO_TARGET_DIR (default target/h-bench); criterion's results are under it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/h-bench}
if [ "${1:-}" = --no-run ]; then
  shift
else
  cargo bench -p metron-benches --bench hot_path --bench work -- "$@" >&2
fi
python3 - "$CARGO_TARGET_DIR/criterion" <<'PY'
import json, os, sys
root = sys.argv[1]

def median(group, name):
    path = os.path.join(root, group, name, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        return None

names = []
for group in ("pair", "work"):
    d = os.path.join(root, group)
    if os.path.isdir(d):
        for n in sorted(os.listdir(d)):
            if n != "report" and n not in names and n != "bare":
                names.append(n)
floor = median("pair", "floor")
bare = median("work", "bare")
fmt = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"
print("| implementation | tight loop (ns/pair) | / floor | around ~100 ns of work (ns) | added (ns/pair) |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| work alone | - | - | {fmt(bare)} | - |")
for n in names:
    t = median("pair", n)
    w = median("work", n)
    ratio = None if t is None or not floor else t / floor
    added = None if w is None or bare is None else w - bare
    print(f"| {n} | {fmt(t)} | {fmt(ratio)} | {fmt(w)} | {fmt(added)} |")
PY
