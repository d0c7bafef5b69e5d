#!/bin/bash
# Round 3, stop 35: the launch-bound PyTorch step under two Metron builds in the same rounds
# (A = device-bin/${A:-i29}, stop 34; B = device-bin/${B:-r3}, after issue 33's restructure),
# no tool and Kineto beside them, ROUNDS interleaved rounds; medians of per-process medians.
set -u
T=$PWD/tests/cuda; D=$PWD/device-bin
R=/tmp/ab; rm -rf $R; mkdir -p $R
PY=/opt/torch/.venv/bin/python3
{ date -u; nvidia-smi -L; } 2>&1 | head -2
for r in $(seq 1 ${ROUNDS:-6}); do
  for c in none A B kineto; do
    case $c in
      none) $PY $T/torch_step.py plain 200 ;;
      A) METRON_OUTPUT_PATH=$R/a-$r $D/${A:-i29}/metron run --library $D/${A:-i29}/libmetron.so -- $PY $T/torch_step.py plain 200 2>/dev/null ;;
      B) METRON_OUTPUT_PATH=$R/b-$r $D/${B:-r3}/metron run --library $D/${B:-r3}/libmetron.so -- $PY $T/torch_step.py plain 200 2>/dev/null ;;
      kineto) $PY $T/torch_step.py kineto 200 ;;
    esac 2>&1 | grep STEP | sed "s/^/$c /" >> $R/torch.txt
  done
done
python3 $T/torch_table.py $R/torch.txt
