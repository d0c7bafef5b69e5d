#!/bin/bash
# CUDA-graph kernels in kernel-mode counters against ncu.
#  1. mt_graph 4 serial, a single-pass metric set (one user range per launch): kernels outside
#     graphs against `ncu --graph-profiling node`, each graph launch's sum against
#     `ncu --graph-profiling graph` (graph_compare.py);
#  2. the same with two threads launching at once (the per-context gate);
#  3. kernel-mode region sums against region mode (graph_replay included);
#  4. a metric set of several passes (kernel replay): graph kernels NaN with the reason;
#  5. the cost: a 2 ms kernel's launch call and region without counters, with one pass (user
#     range) and two (kernel replay); launch calls' host time in mt_graph.
# Before: cargo build --release -p metron-cli -p metron-user &&
#   mkdir -p device-bin && cp target/release/metron target/release/libmetron.so device-bin/
# Run: run(command="B=device-bin bash tests/cuda/graph_counters.sh", carry=["device-bin"])
set -u
B=$(realpath ${B:-device-bin})
T=$PWD/tests/cuda
R=/tmp/gc; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -lineinfo -o mt_graph $T/mt_graph.cu -ldl -lpthread || exit 1
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
echo "== 1 kernel mode (single pass: a user range per launch) vs ncu $(date -u +%T)"
METRON_GPU_METRICS=$MET METRON_OUTPUT_PATH=$R/km timeout 150 $M ./mt_graph 4 serial > km.log 2>&1; echo "rc=$?"; grep -i "metron: GPU" km.log | head -5; tail -1 km.log
timeout 240 ncu --cache-control none --clock-control none --graph-profiling node --metrics $MET --csv --print-units base --page raw ./mt_graph 4 serial > ncu_node.csv 2> ncu_node.err; echo "ncu rc=$?"
timeout 240 ncu --cache-control none --clock-control none --graph-profiling graph --metrics $MET --csv --print-units base --page raw ./mt_graph 4 serial > ncu_graph.csv 2> ncu_graph.err; echo "ncu rc=$?"
python3 $T/graph_compare.py $R/km/kernels.csv ncu_node.csv ncu_graph.csv 2>&1 | head -40
python3 -c "import json; c=json.load(open('$R/km/metadata.json'))['gpu']['counters']; print({k: c[k] for k in ('kernels_profiled','launches_nan','launch_nan_reasons','graph_launches_profiled','kernel_mode_ranges','ranges_dropped','kernels_with_host_time','launches_serialized')})" 2>&1 | cut -c1-900
echo "== 2 two threads launching at once (overlap) $(date -u +%T)"
METRON_GPU_METRICS=$MET METRON_OUTPUT_PATH=$R/ov timeout 150 $M ./mt_graph 4 overlap > ov.log 2>&1; echo "rc=$?"
timeout 240 ncu --cache-control none --clock-control none --graph-profiling node --metrics $MET --csv --print-units base --page raw ./mt_graph 4 overlap > ncu_node_ov.csv 2>/dev/null
python3 $T/graph_compare.py $R/ov/kernels.csv ncu_node_ov.csv ncu_graph.csv 2>&1 | grep -E "kernels.csv|no values|DIFF|RESULT" | head -12
echo "== 3 kernel-mode region sums vs region mode $(date -u +%T)"
METRON_GPU_METRICS=$MET METRON_GPU_COUNTER_MODE=region METRON_OUTPUT_PATH=$R/rm timeout 150 $M ./mt_graph 4 serial > rm.log 2>&1; echo "rc=$?"
python3 $T/counters_vs_ncu.py $R/km/kernels.csv ncu_node.csv $R/rm/summary.json $R/km/summary.json 2>&1 | grep -E "region " | head -12
grep -B2 -A12 -i "gpu counters" $R/km/summary.txt | head -30
echo "== 4 several passes $(date -u +%T)"
MANY=smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,sm__cycles_active.avg,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__warps_active.avg.pct_of_peak_sustained_active
METRON_GPU_METRICS=$MANY METRON_OUTPUT_PATH=$R/many timeout 200 $M ./mt_graph 2 serial > many.log 2>&1; echo "rc=$?"; grep -i "pass" many.log | head -3
python3 - $R/many/kernels.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
c = collections.Counter((r["GraphId"] != "", r["smsp__inst_executed.sum"] in ("", "nan"), r["CounterNote"][:110]) for r in rows)
for k, v in c.items(): print(" ", v, "graph" if k[0] else "plain", "NaN" if k[1] else "values", k[2])
PY
echo "== 5 cost: a 2 ms kernel's launch and region, no counters / 1 pass (user range) / 2 passes (kernel replay) $(date -u +%T)"
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl || true
for cfg in none one two; do
  case $cfg in none) E="METRON_GPU_METRICS=";; one) E="METRON_GPU_METRICS=$MET";; two) E="METRON_GPU_METRICS=$MANY";; esac
  env $E METRON_OUTPUT_PATH=$R/fl_$cfg timeout 150 $M ./first_launch 8 > fl_$cfg.log 2>&1
  echo "-- $cfg"; grep FIRST fl_$cfg.log | sed -n '1p;2p;8p'
done
for cfg in off on; do
  case $cfg in off) E="METRON_GPU_METRICS=";; on) E="METRON_GPU_METRICS=$MET";; esac
  env $E METRON_OUTPUT_PATH=$R/cost_$cfg timeout 150 $M ./mt_graph 20 serial > cost_$cfg.log 2>&1
  python3 - $R/cost_$cfg $cfg <<'PY'
import json, sys
d, cfg = sys.argv[1], sys.argv[2]
g = json.load(open(d + "/summary.json"))["gpu"]
for a in g.get("api", []):
    if "GraphLaunch" in a["name"] or "LaunchKernel" in a["name"]:
        print(cfg, a["name"], "count", a["count"], "mean us %.1f" % (a["mean_ns"] / 1e3), "min us %.1f" % (a["min_ns"] / 1e3), "max us %.1f" % (a["max_ns"] / 1e3))
PY
done
tar czf $OUT/gc.tgz --exclude='*.pftrace' -C /tmp gc
