#!/bin/bash
set -u
# Issue 29, part 3: the host time of each range-profiler step of a user-range launch (metadata.json
# gpu.counters.launch_range_steps_ns) and the same launch under kernel replay, first_launch.cu.
# Run: run(command="bash tests/cuda/launch_range_steps.sh", carry=["device-bin/r7"])
B=$(realpath device-bin/r7); T=$PWD/tests/cuda
R=/tmp/st; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl
M="$B/metron run --library $B/libmetron.so --"
MET=smsp__inst_executed.sum,dram__bytes_read.sum
for cfg in user replay; do
  case $cfg in user) E="METRON_GPU_METRICS=$MET";; replay) E="METRON_GPU_METRICS=$MET METRON_GPU_KERNEL_REPLAY=1";; esac
  env $E METRON_OUTPUT_PATH=$R/$cfg timeout 150 $M ./first_launch 8 > $cfg.log 2>&1
  echo "-- $cfg"; grep FIRST $cfg.log | sed -n '1p;2p;8p'
  python3 -c "import json; c=json.load(open('$R/$cfg/metadata.json'))['gpu']['counters']; print(c['launch_range_steps_ns'], c['kernels_profiled'], c['counter_data_image_bytes'])"
done
