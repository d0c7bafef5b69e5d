#!/usr/bin/env bash
# Outputs at scale, timed on this machine (run it on a quiet one): the deep-stacks program
# under `metron sample` (the end of the run against the program's own time) and the
# thread-per-task program with and without Metron (wall time, peak RSS, file sizes).
# Numbers go in docs/src/performance.md ("Outputs at scale").
#
# Usage: scripts/outputs-at-scale.sh [SECONDS_OF_WORK] [THREADS]   (defaults 10, 20000)
# Needs a release build: cargo build --release -p metron-user -p metron-cli
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
threads=${2:-20000}
rel=$root/target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
programs=$root/tests/tests/scale_programs
cc -O1 -g -fno-omit-frame-pointer -o "$work/deepstacks" "$programs/deepstacks.c"
cc -std=c99 -O1 -g -D_DEFAULT_SOURCE -I"$root/user-api/include" -o "$work/tpt" \
  "$programs/thread_per_task.c" -L"$rel" -Wl,-rpath,"$rel" -lmetron -lpthread
cc -std=c99 -O1 -D_DEFAULT_SOURCE -DMETRON_DISABLE -I"$root/user-api/include" -o "$work/tpt_own" \
  "$programs/thread_per_task.c" -lpthread

sizes() { (cd "$1" && ls -l --block-size=1 | awk 'NR>1 {printf "  %-16s %10d B\n", $9, $5}'); }

echo "== deepstacks $seconds s of CPU, alone and under metron sample"
/usr/bin/time -f "alone: %e s wall, %U s user" "$work/deepstacks" "$seconds"
/usr/bin/time -f "metron sample: %e s wall, %U s user, %M KiB peak RSS (metron)" \
  "$rel/metron" sample --output-path "$work/ds" --trace false -- "$work/deepstacks" "$seconds"
python3 - "$work/ds/metadata.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
run = m["run"]
print("end of run (last record to files written): see outputs.*.seconds;",
      "report", m["outputs"]["report"].get("seconds"), "s;",
      "distinct stacks", m["outputs"]["stacks"]["cpu_time"]["distinct_stacks"])
print("folded:", json.dumps(m["outputs"]["report"].get("folded")))
PY
sizes "$work/ds"

echo "== thread per task: $threads threads x 10 regions"
/usr/bin/time -f "alone: %e s wall, %M KiB peak RSS" "$work/tpt_own" "$threads"
METRON_OUTPUT_PATH="$work/tpt" METRON_TRACE=false \
  /usr/bin/time -f "under Metron: %e s wall, %M KiB peak RSS" "$work/tpt" "$threads"
sizes "$work/tpt"
if command -v hyperfine >/dev/null; then
  hyperfine -w 1 -r 5 "$work/tpt_own $threads" \
    "env METRON_OUTPUT_PATH=$work/tpt-%pid% METRON_TRACE=false $work/tpt $threads"
fi
