#!/bin/bash
# Issue 14's device plan (one `run` call): counters with two launching threads and a CUDA graph
# against ncu, region mode, graph joins, API-tracing overhead rounds, PyTorch vs torch.profiler.
# Binaries come from device-bin/i14 (built on the dev machine). Everything lands in $OUT/r.tgz.
set -u
B=$PWD/device-bin/i14
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/r; rm -rf $R; mkdir -p $R
PY=/opt/torch/.venv/bin/python3
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
log() { echo "== $*" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; } >> $R/log.txt 2>&1
PHASES=${PHASES:-counters,ncu,trace,overhead,torch}
if [[ $PHASES == *counters* ]]; then
for spec in "km_overlap kernel overlap edges" "km_serial kernel serial edges" "rm_serial region serial edges" "rm_overlap region overlap edges" "rm_serial_on region serial on" "rm_serial_off region serial off"; do
  set -- $spec
  log "$1"
  METRON_GPU_REGION_KERNELS=$4 METRON_GPU_METRICS=$MET METRON_GPU_COUNTER_MODE=$2 METRON_OUTPUT_PATH=$R/$1 timeout 120 $M mt_graph 10 $3 > $R/$1.log 2>&1; echo "rc=$?" >> $R/$1.log
done
fi
if [[ $PHASES == *ncu* ]]; then
log ncu
timeout 300 ncu --cache-control none --clock-control none --metrics $MET --csv --print-units base --page raw mt_graph 10 overlap > $R/ncu.csv 2> $R/ncu.err
fi
if [[ $PHASES == *trace* ]]; then
log trace_default
METRON_OUTPUT_PATH=$R/trace timeout 120 $M mt_graph 10 overlap > $R/trace.log 2>&1
METRON_GPU_API=both METRON_OUTPUT_PATH=$R/trace_both timeout 120 $M mt_graph 3 overlap > $R/trace_both.log 2>&1
METRON_GPU_METRICS=$MET METRON_OUTPUT_PATH=$R/km_1thread timeout 120 $M mt_graph 10 serial 1 > $R/km_1thread.log 2>&1
fi
if [[ $PHASES == *overhead* ]]; then
log overhead
for round in 1 2 3 4 5 6 7; do
  for cfg in none bare_kernel bare_kernel_cb metron metron_none metron_gpu_off metron_activity; do
    case $cfg in
      none) out=$(launch_loop 100000) ;;
      bare_kernel) out=$(BARE_CUPTI_MODE=kernel CUDA_INJECTION64_PATH=$B/libbare_cupti.so launch_loop 100000 2>/dev/null) ;;
      bare_kernel_cb) out=$(BARE_CUPTI_MODE=kernel_cb CUDA_INJECTION64_PATH=$B/libbare_cupti.so launch_loop 100000 2>/dev/null) ;;
      metron_gpu_off) out=$(METRON_GPU=0 METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
      metron) out=$(METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
      metron_none) out=$(METRON_GPU_API=none METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
      metron_activity) out=$(METRON_GPU_API=activity METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
    esac
    echo "$round $cfg $out" >> $R/overhead.txt
  done
done
cp /tmp/o/metron1/metadata.json $R/overhead_metron_metadata.json 2>/dev/null
fi
if [[ $PHASES == *torch* ]]; then
log torch
timeout 200 $PY tests/cuda/torch_train.py profile $R/torch_prof.json > $R/torch_prof.log 2>&1
METRON_OUTPUT_PATH=$R/torch timeout 200 $M $PY tests/cuda/torch_train.py plain > $R/torch.log 2>&1
METRON_OUTPUT_PATH=$R/torch_nvtx timeout 200 $M $PY tests/cuda/torch_train.py nvtx > $R/torch_nvtx.log 2>&1
rm -f $R/torch_prof.json.trace.json
fi
log done
find $R -name "*.pftrace" -size +30M -delete
tar czf $OUT/r.tgz -C /tmp r
cp $R/log.txt $OUT/
