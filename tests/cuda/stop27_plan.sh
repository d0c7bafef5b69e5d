#!/bin/bash
# End-of-stop-27 regression check of the final build on the GPU machine (one `run` call): the
# layers work moved the GPU glue onto hooks and a GpuContext handed to the sinks, the Range
# Profiler now keeps its host object's inputs alive, and region mode records the kernels of
# counted regions. Runs mt_graph (2 threads x 2 streams x 3 kernels + a graph replayed 10 times)
# in kernel mode, region mode and the default tracing, and pm_mix with PM sampling, then prints
# kernel counts, per-region instruction sums and issue16_check.py's verdicts.
# Binaries from device-bin/s27 (metron + libmetron.so of this commit, stripped; mt_graph and
# pm_mix as built for issues 14 and 16).
set -u
B=$PWD/device-bin/s27
T=$PWD/tests/cuda
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/s27; rm -rf $R; mkdir -p $R
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
{ date -u; nvidia-smi -L; } | head -2
run() { # name, then environment assignments; the command follows "--"
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" METRON_OUTPUT_PATH=$R/$name timeout 120 $M "$@" > $R/$name.log 2>&1
  echo "== $name rc=$? $(tail -1 $R/$name.log | cut -c1-200)"
}
run kernel METRON_GPU_METRICS=$MET -- mt_graph 10 serial
run region METRON_GPU_METRICS=$MET METRON_GPU_COUNTER_MODE=region -- mt_graph 10 serial
run default -- mt_graph 10 overlap
run pm METRON_GPU_PM_SAMPLING=on -- pm_mix 3 3000
python3 - $R <<'PY'
import csv, json, os, sys
R = sys.argv[1]
for name in ("kernel", "region", "default"):
    d = os.path.join(R, name)
    if not os.path.exists(d + "/metadata.json"):
        print(name, "no metadata.json"); continue
    # kernels.csv starts with a "# Metron ..." comment line.
    rows = list(csv.DictReader(l for l in open(d + "/kernels.csv") if not l.startswith("#")))
    inst = [k for k in (rows[0].keys() if rows else []) if "inst_executed" in k]
    count, sums = {}, {}
    for r in rows:
        reg = r.get("Region", "?")
        count[reg] = count.get(reg, 0) + 1
        if inst:
            try:
                sums[reg] = sums.get(reg, 0) + int(float(r[inst[0]]))
            except ValueError:
                sums[reg + " (nan)"] = sums.get(reg + " (nan)", 0) + 1
    print(f"{name}: {len(rows)} kernels, by region {count}, instructions per region {sums}")
PY
grep -A12 "GPU counters by region" $R/region/summary.txt | head -14
python3 $T/issue16_check.py $R/pm $R/pm.log 100000 2>&1 | grep -E "^(CHECK|tracks|kernels)" | cut -c1-300
python3 -c "import json; m=json.load(open('$R/pm/metadata.json'))['gpu_pm_sampling']; print({k: m.get(k) for k in ('samples','decodes','finished_cleanly','decode_errors')})"
