#!/bin/bash
# Region-mode GPU counters, batched (one `run` call): the cost per counted region against the
# same region without counters, exact values against kernel mode, two threads taking turns,
# a metric set of several passes collected across instances against kernel replay and ncu,
# and kernel mode's cost beside ncu's on the same program.
# Optionally device-bin/h44/before/{metron,libmetron.so}: an earlier build, for the cost before.
# Before (here): cargo build --release -p metron-cli -p metron-user &&
#   mkdir -p /work/main/device-bin/h44 && cp target/release/metron target/release/libmetron.so \
#     tests/cuda/region_batch.cu tests/cuda/region_batch_compare.py tests/cuda/region_batch_plan.sh \
#     /work/main/device-bin/h44/
# Run: run(command="bash device-bin/h44/region_batch_plan.sh", carry=["device-bin/h44"])
set -u
B=$(realpath ${B:-device-bin/h44})
R=/tmp/rb; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o region_batch $B/region_batch.cu -ldl -lpthread || exit 1
M="$B/metron run --library $B/libmetron.so --"
ONE=smsp__inst_executed.sum
TWO=smsp__inst_executed.sum,dram__bytes_read.sum
MANY=smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,sm__cycles_active.avg,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active
LONG=400000; SHORT=8000
one() { # name args env...
  local name=$1 args=$2; shift 2
  env "$@" METRON_OUTPUT_PATH=$R/$name timeout 120 $M ./region_batch $args > $name.log 2>&1
  echo "$name rc=$? $(grep -c '^ITER' $name.log) iterations; $(grep -i 'metron: GPU' $name.log | head -3 | cut -c1-240 | tr '\n' '|')"
}
timeout 60 ./region_batch 200 $LONG > plain.log 2>&1; echo "plain rc=$? $(grep events_ms plain.log | sed -n '10p')"
one base "200 $LONG" METRON_GPU_METRICS=
one reg1 "200 $LONG" METRON_GPU_METRICS=$ONE METRON_GPU_COUNTER_MODE=region
one reg2 "200 $LONG" METRON_GPU_METRICS=$TWO METRON_GPU_COUNTER_MODE=region
one reg1_r16 "200 $LONG" METRON_GPU_METRICS=$ONE METRON_GPU_COUNTER_MODE=region METRON_GPU_REGION_RANGES=16
one reg1_r1024 "200 $LONG" METRON_GPU_METRICS=$ONE METRON_GPU_COUNTER_MODE=region METRON_GPU_REGION_RANGES=1024
if [ -x $B/before/metron ]; then # the previous build: a synchronous Start..Stop per region
  env METRON_GPU_METRICS=$ONE METRON_GPU_COUNTER_MODE=region METRON_OUTPUT_PATH=$R/before timeout 120 $B/before/metron run --library $B/before/libmetron.so -- ./region_batch 200 $LONG > before.log 2>&1; echo "before rc=$?"
fi
one km2 "40 $LONG" METRON_GPU_METRICS=$TWO
one base_s "200 $SHORT" METRON_GPU_METRICS=
one reg1_s "200 $SHORT" METRON_GPU_METRICS=$ONE METRON_GPU_COUNTER_MODE=region
one base_t "200 $LONG 2" METRON_GPU_METRICS=
one reg_t "200 $LONG 2" METRON_GPU_METRICS=$TWO METRON_GPU_COUNTER_MODE=region
one regN "200 $LONG" METRON_GPU_METRICS=$MANY METRON_GPU_COUNTER_MODE=region
one kmN "12 $LONG" METRON_GPU_METRICS=$MANY
echo "ncu $(date -u +%T)"
timeout 150 ncu --cache-control none --clock-control none --metrics $MANY --csv --print-units base --page raw ./region_batch 8 $LONG > ncuN.csv 2> ncuN.err; echo "ncuN rc=$?"
timeout 100 ncu --metrics $TWO ./region_batch 20 $LONG > ncu_cost.log 2>&1; echo "ncu_cost rc=$?"
echo "done $(date -u +%T)"
python3 $B/region_batch_compare.py $R 2>&1
grep -A8 "GPU counters by region" $R/regN/summary.txt | cut -c1-220
grep -A6 "GPU counters by region" $R/reg_t/summary.txt | cut -c1-220
cd $R && tar czf $OUT/rb.tar.gz *.log ncuN.csv */summary.txt */summary.json */metadata.json 2>/dev/null; ls -la $OUT
