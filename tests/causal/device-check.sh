#!/bin/bash
# Causal profiling on a device host: how the sampler takes CPU-time samples there (perf task-clock or
# the POSIX timer fallback) and at what rate, under `metron causal` on the barrier program.
# Run: run(command="bash tests/causal/device-check.sh", carry=["device-bin"])
set -u
B=$(realpath ${B:-device-bin}); H=$PWD/tests/causal
R=/tmp/cc; rm -rf $R; mkdir -p $R; cd $R
{ date -u; nproc; cat /proc/sys/kernel/perf_event_paranoid; id -u; } 2>&1
gcc -O1 -g -pthread -DUSE_COZ -I$H -I$(realpath $B/../coz/include) $H/barrier.c -o barrier -ldl || exit 1
critical=barrier.c:$(grep -n 'CRITICAL:' $H/barrier.c | cut -d: -f1)
slack=barrier.c:$(grep -n 'SLACK:' $H/barrier.c | cut -d: -f1)
$B/metron causal -o $R/m -n 1 --line $critical --line $slack --speedups 0,20,40 --experiment 500ms -- ./barrier 24 > m.log 2>&1; echo "rc=$?"
tail -25 m.log
python3 - $R/m <<'PY'
import json, sys, glob
for f in glob.glob(sys.argv[1] + "/**/metadata.json", recursive=True)[:2]:
    m = json.load(open(f))
    s = m.get("sampling", {})
    print(f, {k: s[k] for k in list(s)[:12]})
    print(json.dumps(s.get("threads", s.get("per_thread", "")))[:1500])
PY
