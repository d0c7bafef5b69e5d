#!/bin/bash
# Issue 29: does CUPTI's timestamp callback (Metron's clock for CUPTI's records) cost the
# launching thread? metron_toggle under `metron run` with and without it
# (METRON_GPU_DIAG=no_ts), beside CUPTI's floor, REPS interleaved repetitions.
# Run: run(command="B=device-bin/r9 bash tests/cuda/toggle_no_ts.sh", carry=["device-bin/r9"])
set -u
B=$(realpath ${B:-device-bin/r9}); T=$PWD/tests/cuda
R=/tmp/tn
source $T/toggle_build.sh
M="$B/metron run --library $B/libmetron.so --"
for rep in $(seq 1 ${REPS:-3}); do
  ./cupti_toggle 80 2000 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )" | sed "s/^/floor $rep /"
  METRON_OUTPUT_PATH=$R/d$rep $M ./metron_toggle 80 2000 3 2>&1 | grep TOGGLE | sed "s/^/default $rep /"
  METRON_GPU_DIAG=no_ts METRON_OUTPUT_PATH=$R/n$rep $M ./metron_toggle 80 2000 3 2>&1 | grep TOGGLE | sed "s/^/no_ts $rep /"
done
