#!/bin/bash
# Issue 29, first look (one `run` call): where Metron's per-launch cost goes, and what its
# set-up costs the first kernel. Builds tests/cuda/{launch_cost,first_launch,cupti_toggle}.cu
# there; Metron's binaries from device-bin/i29 (metron + libmetron.so, stripped).
#  1. 8 interleaved rounds of 10^5 empty launches (launching thread pinned to core 3, Metron's
#     threads free) under: no tool, metron default, METRON_GPU_API=none, the sinks off,
#     METRON_GPU=off; medians, and each thread's CPU time per launch during the loop.
#  2. CUPTI's floor in the same minutes: cupti_toggle 60 rounds.
#  3. first_launch (6 iterations of a 2 ms kernel in a region between CUDA events) under each
#     GPU feature.
set -u
B=$PWD/device-bin/${BIN:-i29}
T=$PWD/tests/cuda
R=/tmp/i29; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o launch_cost $T/launch_cost.cu &
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle $T/cupti_toggle.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
M="$B/metron run --library $B/libmetron.so --"
source $T/first_launch_cmd.sh
one() { # config name -> runs launch_cost once, appends its lines tagged with the config
  local c=$1 cmd
  case $c in
    none) cmd="./launch_cost 100000 3 ${BURST:-0}" ;;
    default) cmd="$M ./launch_cost 100000 3 ${BURST:-0}" ;;
    apinone) cmd="env METRON_GPU_API=none $M ./launch_cost 100000 3 ${BURST:-0}" ;;
    sinksoff) cmd="env METRON_TRACE=0 METRON_SUMMARY=0 METRON_REPORT=0 $M ./launch_cost 100000 3 ${BURST:-0}" ;;
    gpuoff) cmd="env METRON_GPU=off $M ./launch_cost 100000 3 ${BURST:-0}" ;;
    *) cmd="env METRON_GPU_DIAG=$c $M ./launch_cost 100000 3 ${BURST:-0}" ;;
  esac
  METRON_OUTPUT_PATH=$R/out/$c-%pid% timeout 60 $cmd 2>$R/err.$c | sed "s/^/$c /" >> $R/launch.txt
}
CONFIGS=(${CONFIGS:-none default apinone sinksoff gpuoff})
NC=${#CONFIGS[@]}
for r in $(seq 1 ${ROUNDS:-8}); do
  for i in $(seq 0 $((NC - 1))); do one ${CONFIGS[$(( (i + r) % NC ))]}; done
done
tail -2 $R/err.default
python3 - $R/launch.txt <<'PY'
import sys, statistics, collections
ns = collections.defaultdict(list); gpu = collections.defaultdict(list); vol = collections.defaultdict(list); cpu = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    c = f[0]
    kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
    if f[1] == "LAUNCH":
        ns[c].append(float(kv["enqueue_ns_per_launch"]))
        if "gpu_ns_per_launch" in kv:
            gpu[c].append(float(kv["gpu_ns_per_launch"])); vol[c].append(int(kv["voluntary_switches"]))
    elif f[1] == "THREAD": cpu[c][kv["comm"]].append(float(kv["cpu_ns_per_launch"]))
base = statistics.median(ns["none"])
for c in ns:
    m = statistics.median(ns[c])
    print(f"CONFIG {c:9s} median {m:7.0f} ns/launch  x{m/base:.2f}  +{m-base:5.0f}  rounds {len(ns[c])}  min {min(ns[c]):.0f} max {max(ns[c]):.0f}  gpu {statistics.median(gpu[c]) if gpu[c] else 0:.0f} ns/launch  voluntary switches {statistics.median(vol[c]) if vol[c] else 0:.0f}")
    for comm, v in sorted(cpu[c].items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"    thread {comm:18s} cpu {statistics.median(v):7.1f} ns/launch (n={len(v)})")
PY
echo "== floor (cupti_toggle ${TOGGLE:-60} rounds)"
[ "${TOGGLE:-60}" -gt 0 ] && ./cupti_toggle ${TOGGLE:-60} 4000 3 2>&1 | tail -12
echo "== first launch"
for f in ${FIRST-none default pc pm kernel region}; do
  cmd=$(first_launch_cmd $f) || continue
  echo "-- $f"
  METRON_OUTPUT_PATH=$R/out/first-$f timeout 120 $cmd 2>$R/err.first.$f | grep FIRST
  grep -h "iter" $R/out/first-$f/summary.txt 2>/dev/null | head -2
  tail -1 $R/err.first.$f
done
