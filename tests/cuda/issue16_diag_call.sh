S=sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed
TN=sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed
DR=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed
DW=dramc__write_throughput.avg.pct_of_peak_sustained_elapsed
DEF=dram__bytes_read.sum.per_second,dram__bytes_write.sum.per_second,$S,$TN,dram__throughput.avg.pct_of_peak_sustained_elapsed
P4=$DR,$DW,$S,$TN
export PROBES="pa_def:a:$DEF pd_def:d:$DEF pd_bytes:d:dram__bytes.sum.per_second,$S pd_p4:d:$P4"
export RUNS="m_p4a:2:20000:$P4 m_p4b:2:20000:$P4 m_two:2:20000:$DR,$S m_bytes1:2:20000:dram__bytes_read.sum.per_second m_def:2:20000:on m_def100:2:100000:on"
bash tests/cuda/issue16_diag_plan.sh 2>&1
