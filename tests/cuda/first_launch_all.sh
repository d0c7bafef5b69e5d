#!/bin/bash
# With one user range per launch in kernel mode: the first
# launch under each GPU feature against the later ones (first_launch.cu: a ~1 ms kernel between
# CUDA events inside a region, 6 iterations), and the set-up slices the run recorded.
# Run: run(command="B=device-bin bash tests/cuda/first_launch_all.sh", carry=["device-bin"])
set -u
B=$(realpath ${B:-device-bin}); T=$PWD/tests/cuda
R=/tmp/fl; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; } 2>&1 | head -2
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl || exit 1
M="$B/metron run --library $B/libmetron.so --"
source $T/first_launch_cmd.sh
for f in none default pc pm kernel region; do
  cmd=$(first_launch_cmd $f) || continue
  echo "-- $f"
  METRON_OUTPUT_PATH=$R/$f timeout 120 $cmd 2>$R/err.$f | grep FIRST
  grep -h "metron set-up" $R/$f/summary.txt 2>/dev/null | head -2
done
