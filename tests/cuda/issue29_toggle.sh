#!/bin/bash
# Issue 29, method (a) (one `run` call): Metron's per-launch cost in one process
# (tests/cuda/metron_toggle.cu under metron run: collection off/on between rounds) beside
# CUPTI's floor in the same minutes (tests/cuda/cupti_toggle.cu: N -> K -> KC -> KCD), with
# the same round shape (ROUNDS rounds of LAUNCHES launches, launching thread on core 3).
# Binaries from device-bin/${BIN:-i29}.
set -u
B=$PWD/device-bin/${BIN:-i29}  # REPS repetitions (default 2)
T=$PWD/tests/cuda
R=/tmp/i29t; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o metron_toggle $T/metron_toggle.cu -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle $T/cupti_toggle.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
M="$B/metron run --library $B/libmetron.so --"
ROUNDS=${ROUNDS:-100}; LAUNCHES=${LAUNCHES:-2000}
for rep in $(seq 1 ${REPS:-2}); do
  echo "== cupti_toggle (floor), repetition $rep"
  ./cupti_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC |KC   -> KCD|N    -> C)"
  echo "== metron default, repetition $rep"
  METRON_OUTPUT_PATH=$R/out/default-$rep $M ./metron_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep -E "TOGGLE|wrote"
  echo "== metron METRON_GPU_API=none, repetition $rep"
  METRON_GPU_API=none METRON_OUTPUT_PATH=$R/out/apinone-$rep $M ./metron_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep -E "TOGGLE|wrote"
done
