#!/bin/bash
# Issue 16's device plan (one `run` call): PM sampling (METRON_GPU_PM_SAMPLING) on pm_mix (a
# 2 GiB copy and an FMA kernel back to back with 3 ms idle gaps), against ncu's PmSampling
# section and ncu's per-kernel DRAM bytes and throughput. Binaries from device-bin/i16 (built on
# the dev machine: metron + libmetron.so from cargo build --release -p metron-cli -p
# metron-user, stripped; pm_mix with the pip nvcc 13.0.88). Results in $OUT/r.tgz.
set -u
B=$PWD/device-bin/i16
T=$PWD/tests/cuda
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/r; rm -rf $R; mkdir -p $R
M="$B/metron run --library $B/libmetron.so --"
IV=${IV:-20000}
PHASES=${PHASES:-section,cand,default,best,abs,cycles,refuse,plain,ncu}
has() { [[ ,$PHASES, == *,$1,* ]]; }
log() { echo "== $* $(date -u +%T)" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; } >> $R/log.txt 2>&1
meta() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])).get('gpu_pm_sampling'); s=(m or {}).pop('summary',None); print(json.dumps(m)[:2500]); print(json.dumps(s)[:3000])" "$1/metadata.json"; }
run_m() { # name "args" env...
  local name=$1 args=$2; shift 2
  log "$name"
  env "$@" METRON_OUTPUT_PATH=$R/$name timeout 120 $M pm_mix $args > $R/$name.log 2> $R/$name.err; echo "rc=$?" >> $R/$name.log
  tail -4 $R/$name.err; grep -c KTIME $R/$name.log
  [ -f $R/$name/metadata.json ] && meta $R/$name
  [ -f $R/$name/gpu_pm_sampling.csv ] && cat $R/$name/gpu_pm_sampling.csv | head -30
}
if has section; then
log section
SEC=$(grep -ho 'pmsampling:[A-Za-z_0-9.]*' /opt/nvidia/nsight-compute/*/sections/*.section 2>/dev/null | sort -u | sed 's/^pmsampling://' | tr '\n' ',')
echo "section metrics: $SEC" | tee -a $R/log.txt
(timeout 60 ncu --query-metrics-collection pmsampling --chip gh100 > $R/query.txt 2>&1 || timeout 60 ncu --query-metrics-collection pmsampling > $R/query.txt 2>&1); wc -l $R/query.txt
grep -E '^(sm__throughput|dramc?__(read|write)_throughput|dramc?__throughput|dramc?__bytes|sm__warps_active|sm__pipe_tensor|tensor)' $R/query.txt | head -30
CAND=sm__throughput.avg.pct_of_peak_sustained_elapsed,dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,dramc__write_throughput.avg.pct_of_peak_sustained_elapsed,dram__read_throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,dramc__bytes_read.sum.per_second,dramc__bytes_write.sum.per_second,dram__bytes_read.sum.per_second,dramc__bytes_read.sum,smsp__inst_executed.sum,$SEC
fi
if has cand; then
run_m cand "1 2000" METRON_GPU_PM_SAMPLING=$CAND METRON_GPU_PM_INTERVAL=$IV
python3 - $R/cand/metadata.json > $R/best.txt <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["gpu_pm_sampling"]
asked = m.get("metrics_asked") or []
dropped = " ".join(m.get("notes") or [])
ok = [a for a in asked if ("metric %s dropped" % a) not in dropped]
cats = [lambda n: n.startswith("sm__throughput"),
        lambda n: "read_throughput" in n, lambda n: "write_throughput" in n,
        lambda n: n.startswith("sm__warps_active"), lambda n: "tensor" in n,
        lambda n: "bytes_read" in n and "per_second" in n, lambda n: "bytes_write" in n and "per_second" in n]
best = []
for c in cats:
    for a in ok:
        if c(a) and a not in best:
            best.append(a); break
print("accepted:", ok, file=sys.stderr)
print(",".join(best))
PY
BEST=$(tail -1 $R/best.txt); echo "best: $BEST" | tee -a $R/log.txt
fi
BEST=${BEST:-}
if has default; then
run_m default "3 3000" METRON_GPU_PM_SAMPLING=on METRON_GPU_PM_INTERVAL=$IV
python3 $T/issue16_check.py $R/default $R/default.log $IV 2>&1 | tail -20
fi
if has best && [ -n "$BEST" ]; then
  run_m best "3 3000" METRON_GPU_PM_SAMPLING=$BEST METRON_GPU_PM_INTERVAL=$IV
  python3 $T/issue16_check.py $R/best $R/best.log $IV 2>&1 | tail -20
fi
if has abs; then
  run_m abs "3 3000" METRON_GPU_PM_SAMPLING=dram__bytes.sum.per_second,dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,dramc__write_throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed METRON_GPU_PM_INTERVAL=$IV
  python3 $T/issue16_check.py $R/abs $R/abs.log $IV 2>&1 | tail -20
fi
has cycles && run_m cycles "1 2000" METRON_GPU_PM_SAMPLING=on METRON_GPU_PM_INTERVAL=40000cycles
has refuse && run_m refuse_metrics "1 1000" METRON_GPU_PM_SAMPLING=on METRON_GPU_METRICS=smsp__inst_executed.sum
has refuse && run_m refuse_pc "1 1000" METRON_GPU_PM_SAMPLING=on METRON_GPU_PC_SAMPLING=on
if has plain; then
log plain
for i in 1 2; do pm_mix 3 3000 > $R/plain$i.log 2>&1; done; cat $R/plain1.log
fi
if has ncu; then
log ncu_kernel
timeout 120 ncu --cache-control none --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active --csv pm_mix 1 1000 > $R/ncu_kernel.csv 2> $R/ncu_kernel.err
grep -E 'copy_kernel|fma_kernel' $R/ncu_kernel.csv | cut -c1-400 | head -20
log ncu_pm
timeout 180 ncu --cache-control none --clock-control none --section PmSampling -f -o $R/ncu_pm pm_mix 1 1000 > $R/ncu_pm.log 2>&1; tail -3 $R/ncu_pm.log
timeout 60 ncu -i $R/ncu_pm.ncu-rep --page raw --csv --print-metric-instances values > $R/ncu_pm_raw.csv 2>&1
timeout 60 ncu -i $R/ncu_pm.ncu-rep --page details --csv > $R/ncu_pm_details.csv 2>&1
wc -c $R/ncu_pm_raw.csv $R/ncu_pm_details.csv; head -c 1500 $R/ncu_pm_details.csv
fi
log done
find $R -name '*.pftrace' -size +40M -delete
tar czf $OUT/r.tgz -C /tmp r; ls -la $OUT
