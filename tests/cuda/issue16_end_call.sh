# Issue 16, the end-of-run and metric check on the device: the default metric set (20 µs and the
# 100 µs default interval) repeated, a set with an unknown metric (the one-at-a-time path), the
# dramc % set, then issue16_check.py on each (see issue16_end_plan.sh).
S=sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed
DR=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed
export RUNS=${RUNS:-"def1:3:20000:on def2:3:20000:on def3:3:20000:on def4:3:20000:on def100:3:100000:on fallback:2:20000:dram__bytes_read.sum.per_second,no_such_metric.sum,sm__warps_active.avg.pct_of_peak_sustained_elapsed,$S two:2:20000:$DR,$S"}
bash tests/cuda/issue16_end_plan.sh 2>&1
