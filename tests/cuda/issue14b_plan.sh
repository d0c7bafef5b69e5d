#!/bin/bash
# Issue 14, second round (one `run` call): kernels of counted regions in region mode
# (METRON_GPU_REGION_KERNELS off / events / serial against kernel-mode sums), and CUPTI's
# per-launch cost measured in one process (cupti_toggle) next to Metron's configurations
# (process rounds, interleaved). Binaries from device-bin/i14b; results in $OUT/r.tgz.
set -u
B=$PWD/device-bin/i14b
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/r; rm -rf $R; mkdir -p $R
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
log() { echo "== $* $(date +%T)" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; nproc; } >> $R/log.txt 2>&1
PHASES=${PHASES:-regions,toggle,procs}
if [[ $PHASES == *regions* || $PHASES == *events_only* ]]; then
SPECS=("km_serial kernel serial off" "rm_off region serial off" "rm_events region serial events" "rm_serialkind region serial serial" "rm_events_overlap region overlap events" "rm_events_both region serial events both")
[[ $PHASES == *events_only* ]] && SPECS=("rm_events region serial events")
for spec in "${SPECS[@]}"; do
  set -- $spec
  log "$1"
  METRON_GPU_API=${5:-runtime} METRON_GPU_REGION_KERNELS=$4 METRON_GPU_METRICS=$MET METRON_GPU_COUNTER_MODE=$2 METRON_OUTPUT_PATH=$R/$1 timeout 120 $M mt_graph 10 $3 > $R/$1.log 2>&1; echo "rc=$?" >> $R/$1.log
  tail -3 $R/$1.log
done
fi
if [[ $PHASES == *trace* ]]; then
log trace_default
METRON_OUTPUT_PATH=$R/trace timeout 120 $M mt_graph 10 overlap > $R/trace.log 2>&1; tail -1 $R/trace.log
fi
if [[ $PHASES == *toggle* ]]; then
log toggle
cupti_toggle ${TROUNDS:-150} 4000 3 > $R/toggle.txt 2>&1; echo "rc=$?" >> $R/toggle.txt
cat $R/toggle.txt
fi
if [[ $PHASES == *procs* ]]; then
log procs
T="${PIN:-}"; NL=${NL:-50000}
for round in $(seq 1 ${PROUNDS:-12}); do
  for cfg in ${CFGS:-none bare_kernel bare_kernel_cb metron_a metron metron_none}; do
    case $cfg in
      none) out=$($T launch_loop $NL) ;;
      bare_kernel) out=$(BARE_CUPTI_MODE=kernel CUDA_INJECTION64_PATH=$B/libbare_cupti.so $T launch_loop $NL 2>/dev/null) ;;
      bare_kernel_cb) out=$(BARE_CUPTI_MODE=kernel_cb CUDA_INJECTION64_PATH=$B/libbare_cupti.so $T launch_loop $NL 2>/dev/null) ;;
      metron_a) out=$(METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $T $B/metron run --library $B/libmetron_a.so -- launch_loop $NL 2>/dev/null) ;;
      metron) out=$(METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $T $M launch_loop $NL 2>/dev/null) ;;
      metron_none) out=$(METRON_GPU_API=none METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $T $M launch_loop $NL 2>/dev/null) ;;
    esac
    echo "$round $cfg $out" >> $R/procs.txt
  done
done
python3 - $R/procs.txt <<'PY' | tee $R/procs_summary.txt
import sys, collections, statistics as st
v = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    p = l.split()
    e = [x for x in p if x.startswith("enqueue_ns_per_launch=")]
    if e: v[p[1]][int(p[0])] = float(e[0].split("=")[1])
base = v["bare_kernel"]
for c, d in v.items():
    diffs = [d[r] - base[r] for r in d if r in base]
    q = st.quantiles(diffs, n=4) if len(diffs) > 1 else [0, 0, 0]
    print(f"{c:15s} median {st.median(d.values()):8.1f}  d_vs_bare_kernel median {st.median(diffs):+8.1f} (p25 {q[0]:+.1f}, p75 {q[2]:+.1f})  n={len(d)}")
PY
fi
log done
find $R -name "*.pftrace" -size +30M -delete
tar czf $OUT/r.tgz -C /tmp r
cp $R/log.txt $OUT/
