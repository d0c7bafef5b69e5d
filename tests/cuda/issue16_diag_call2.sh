# Issue 16: NVIDIA's flow (pm_probe) under `metron run` (Metron traces, PM sampling off) and with
# the profiler initialized after the context (late_init=1, Metron's order), against the control.
S=sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed
TN=sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed
DEF=dram__bytes_read.sum.per_second,dram__bytes_write.sum.per_second,$S,$TN,dram__throughput.avg.pct_of_peak_sustained_elapsed
export PROBES="pa_ctl:a:$DEF pa_m:a:$DEF::metron pa_late:a:$DEF:late_init=1 pd_late:d:$DEF:late_init=1"
bash tests/cuda/issue16_diag_plan.sh 2>&1
for f in /tmp/r16d/pa_m.txt /tmp/r16d/pa_late.txt; do echo "-- $f"; grep -E "^(STEP|INFO|DECODE)" $f | head -12 | cut -c1-200; done
