#!/bin/bash
# Issue 29: two builds of Metron over CUPTI's floor in the same call, REPS interleaved
# repetitions of metron_toggle (collection switched off and on between rounds, launching thread
# pinned) beside cupti_toggle's floor (kernel records N->K, launch callbacks K->KC).
# Run: run(command="A=device-bin/r9 B=device-bin/r11 bash tests/cuda/toggle_ab.sh", carry=[...])
set -u
A=$(realpath ${A:?the first build}); B=$(realpath ${B:?the second build}); T=$PWD/tests/cuda
R=/tmp/tab
source $T/toggle_build.sh
for rep in $(seq 1 ${REPS:-4}); do
  ./cupti_toggle 80 2000 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )" | sed "s/^/floor $rep /"
  for b in $A $B; do
    METRON_OUTPUT_PATH=$R/$(basename $b)-$rep $b/metron run --library $b/libmetron.so -- ./metron_toggle 80 2000 3 2>&1 \
      | grep TOGGLE | sed "s/^/$(basename $b) $rep /"
  done
done
