#!/bin/bash
# Metron's default over CUPTI's floor in one process, in bursts of 2,000 launches (as
# toggle_ab.sh) and of 200 (the GPU's launch queue never fills, so a burst times only the
# launching thread's work), REPS interleaved repetitions of each.
# Run: run(command="B=device-bin bash tests/cuda/toggle_burst.sh", carry=["device-bin"])
set -u
B=$(realpath ${B:?the build}); T=$PWD/tests/cuda
R=/tmp/tburst
source $T/toggle_build.sh
for rep in $(seq 1 ${REPS:-5}); do
  for shape in "80 2000" "800 200"; do
    set -- $shape
    ./cupti_toggle $1 $2 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )" | sed "s/^/floor $2 $rep /"
    METRON_OUTPUT_PATH=$R/m-$2-$rep $B/metron run --library $B/libmetron.so -- ./metron_toggle $1 $2 3 2>&1 \
      | grep TOGGLE | sed "s/^/metron $2 $rep /"
  done
done
