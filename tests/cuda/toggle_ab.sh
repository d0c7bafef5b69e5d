#!/bin/bash
# Issue 29: two builds of Metron over CUPTI's floor in the same call, REPS interleaved
# repetitions of metron_toggle (collection switched off and on between rounds, launching thread
# pinned) beside cupti_toggle's floor (kernel records N->K, launch callbacks K->KC).
# Run: run(command="A=device-bin/r9 B=device-bin/r11 bash tests/cuda/toggle_ab.sh", carry=[...])
set -u
A=$(realpath ${A:?the first build}); B=$(realpath ${B:?the second build}); T=$PWD/tests/cuda
R=/tmp/tab; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; } 2>&1 | head -2
nvcc -O2 -arch=sm_90 -o metron_toggle $T/metron_toggle.cu -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle $T/cupti_toggle.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
for rep in $(seq 1 ${REPS:-4}); do
  ./cupti_toggle 80 2000 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )" | sed "s/^/floor $rep /"
  for b in $A $B; do
    METRON_OUTPUT_PATH=$R/$(basename $b)-$rep $b/metron run --library $b/libmetron.so -- ./metron_toggle 80 2000 3 2>&1 \
      | grep TOGGLE | sed "s/^/$(basename $b) $rep /"
  done
done
