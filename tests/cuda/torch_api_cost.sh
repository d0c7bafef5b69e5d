#!/bin/bash
# What a launch-bound PyTorch step pays, split by layer, ROUNDS interleaved
# process rounds (medians of per-process medians of 200 steps):
#   none      no tool
#   default   metron run (kernels, copies, runtime API slices, region join)
#   api_empty the same CUPTI subscriptions, but callbacks of non-launch calls return at once
#             (METRON_GPU_DIAG=api_empty): CUPTI's own cost per traced call
#   api_none  METRON_GPU_API=none (launch callbacks only)
#   floor     api_none without Metron's launch annotation, timestamps callback, copies, tids
#   kineto    torch.profiler with CUDA activities
# A diagnosis, not a check (scripts/gpu-validate.sh runs the checks). Stage the build with
# `scripts/gpu-validate.sh --stage device-bin`, then on the GPU machine: ROUNDS=5 bash tests/cuda/torch_api_cost.sh
set -u
T=$PWD/tests/cuda; B=$(realpath ${B:-device-bin})
R=/tmp/ta; rm -rf $R; mkdir -p $R
PY=/opt/torch/.venv/bin/python3
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -3
M="$B/metron run --library $B/libmetron.so --"
for r in $(seq 1 ${ROUNDS:-5}); do
  for c in none default api_empty api_none floor kineto; do
    case $c in
      none) $PY $T/torch_step.py plain 200 ;;
      default) METRON_OUTPUT_PATH=$R/$c-$r $M $PY $T/torch_step.py plain 200 2>/dev/null ;;
      api_empty) METRON_GPU_DIAG=api_empty METRON_OUTPUT_PATH=$R/$c-$r $M $PY $T/torch_step.py plain 200 2>/dev/null ;;
      api_none) METRON_GPU_API=none METRON_OUTPUT_PATH=$R/$c-$r $M $PY $T/torch_step.py plain 200 2>/dev/null ;;
      floor) METRON_GPU_API=none METRON_GPU_DIAG=no_ts,no_tid,no_copy,no_annotate METRON_OUTPUT_PATH=$R/$c-$r $M $PY $T/torch_step.py plain 200 2>/dev/null ;;
      kineto) $PY $T/torch_step.py kineto 200 ;;
    esac 2>&1 | grep STEP | sed "s/^/$c /" >> $R/torch.txt
  done
done
python3 $T/torch_table.py $R/torch.txt
python3 - $R/default-1 <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/metadata.json"))["gpu"]
print("records", m.get("records"), "dropped", m.get("cupti_dropped"))
PY
grep -m1 STEP $R/torch.txt
