#!/bin/bash
# Round 3, stop 35 (one `run` call): the GPU paths after the restructure of issue 33 (gpu/ ->
# gpu-nvidia/, outputs moved to sinks/src/sinks/gpu_*.rs, the C API's region counters through
# the SDK hook, metron-core, metron-wire), on a real GPU, with the device's own programs:
#  1. kernel-mode counters on mt_graph (2 threads, serial) against ncu, per kernel;
#  2. region-mode counters through the C API markers (the new hook): regions have values;
#  3. PC sampling on pc_stalls: stall shares per region;
#  4. PM sampling on pm_mix: the counter CSV;
#  5. the default trace and kernels.csv of mt_graph overlap (graph kernels joined).
# Before: cargo build --release -p metron-cli -p metron-user &&
#   mkdir -p device-bin/r3 && cp target/release/metron target/release/libmetron.so device-bin/r3/
# Run: run(command="bash tests/cuda/round3_smoke.sh", carry=["device-bin/r3"])
set -u
B=${B:-$PWD/device-bin/r3}
T=$PWD/tests/cuda
R=/tmp/r3; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
for p in mt_graph pc_stalls pm_mix; do nvcc -O2 -arch=sm_90 -lineinfo -o $p $T/$p.cu -ldl -lpthread & done; wait
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
echo "== 1 kernel mode vs ncu $(date -u +%T)"
METRON_GPU_METRICS=$MET METRON_OUTPUT_PATH=$R/km timeout 150 $M ./mt_graph 4 serial > km.log 2>&1; echo "rc=$?"; tail -2 km.log
timeout 240 ncu --cache-control none --clock-control none --metrics $MET --csv --print-units base --page raw ./mt_graph 4 serial > ncu.csv 2> ncu.err; echo "ncu rc=$?"
python3 $T/issue14_compare.py $R/km/kernels.csv ncu.csv 2>&1 | head -20
echo "-- region mode vs kernel mode sums (after section 2)"
echo "== 2 region mode (C markers through the SDK hook) $(date -u +%T)"
METRON_GPU_METRICS=$MET METRON_GPU_COUNTER_MODE=region METRON_OUTPUT_PATH=$R/rm timeout 150 $M ./mt_graph 4 serial > rm.log 2>&1; echo "rc=$?"
grep -A12 -i "gpu counters" $R/rm/summary.txt | head -16
python3 $T/issue14_compare.py $R/km/kernels.csv ncu.csv $R/rm/summary.json $R/km/summary.json 2>&1 | grep -E "region |RESULT|Error" | head -12
python3 -c "import json; c=json.load(open('$R/rm/metadata.json'))['gpu']['counters']; print({k: c[k] for k in c if k.startswith('regions') or k in ('mode','note')})" 2>&1 | cut -c1-400
echo "== 3 PC sampling $(date -u +%T)"
METRON_GPU_PC_SAMPLING=on METRON_OUTPUT_PATH=$R/pc timeout 150 $M ./pc_stalls 1 > pc.log 2>&1; echo "rc=$?"
ls $R/pc | tr '\n' ' '; echo
grep -B2 -A14 -i "stall" $R/pc/summary.txt | head -40
echo "== 4 PM sampling $(date -u +%T)"
METRON_GPU_PM_SAMPLING=on METRON_OUTPUT_PATH=$R/pm timeout 150 $M ./pm_mix 2 > pm.log 2>&1; echo "rc=$?"
grep KTIME pm.log | head -4
ls $R/pm | tr '\n' ' '; echo
head -3 $R/pm/gpu_pm_sampling.csv 2>&1 | cut -c1-300; wc -l $R/pm/gpu_pm_sampling.csv
echo "== 5 default trace $(date -u +%T)"
METRON_OUTPUT_PATH=$R/tr timeout 150 $M ./mt_graph 4 overlap > tr.log 2>&1; echo "rc=$?"
python3 - $R/tr <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = [r for r in csv.DictReader(l for l in open(d + "/kernels.csv") if not l.startswith("#"))]
m = json.load(open(d + "/metadata.json"))["gpu"]
print("kernels.csv rows", len(rows), "graph rows", sum(1 for r in rows if r.get("GraphId", r.get("graph_id", "0")) not in ("", "0")),
      "unjoined", sum(1 for r in rows if not r.get("Region", r.get("region", "x"))))
print("records", m.get("records"), "dropped", m.get("cupti_dropped"))
PY
ls -la $R/tr/trace.pftrace | awk '{print $5, $9}'
tail -1 tr.log
tar czf $OUT/r3.tgz --exclude='*.pftrace' -C /tmp r3
