#!/bin/bash
# A long GPU run in bounded memory (docs/src/gpu-nvidia.md, "A long run in bounded memory"):
# N empty launches (tests/cuda/launch_loop.cu) under no tool, under the minimal CUPTI
# kernel-records tool (tests/cuda/kernel_records_tool.c) and under `metron run` defaults,
# ROUNDS interleaved rounds; per run the wall time and peak RSS (/usr/bin/time -v), and for
# Metron the trace bytes per launch, kernels.csv rows and the GPU record counts.
# Binaries (metron, libmetron.so) from device-bin/${BIN:-h47}; the CUDA sources from
# device-bin/${BIN:-h47} when copied there, else tests/cuda.
#   N="1000000 10000000" ROUNDS=3 ROUNDS_BIG=1 bash tests/cuda/long_run_plan.sh
set -u
B=$PWD/device-bin/${BIN:-h47}
S=$B; [ -f $S/launch_loop.cu ] || S=$PWD/tests/cuda
R=/tmp/long_run; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
CUDA=${CUDA:-/usr/local/cuda}
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o launch_loop $S/launch_loop.cu &
gcc -O2 -shared -fPIC -o libkernel_records_tool.so $S/kernel_records_tool.c \
    -I$CUDA/include -L$CUDA/lib64 -L$CUDA/extras/CUPTI/lib64 -lcupti &
wait
export LD_LIBRARY_PATH=$CUDA/lib64:$CUDA/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "TIME wall_s=%e max_rss_kb=%M" "$@" >$R/out.txt 2>$R/err.txt
  echo "$label $(grep -h LAUNCH $R/out.txt | cut -c1-90) $(grep -h '^TIME' $R/err.txt) $(grep -h kernel_records_tool $R/err.txt)"
}
for n in ${N:-1000000}; do
  rounds=${ROUNDS:-3}; [ $n -ge 10000000 ] && rounds=${ROUNDS_BIG:-1}
  for r in $(seq 1 $rounds); do
    measure "n=$n none" ./launch_loop $n
    CUDA_INJECTION64_PATH=$R/libkernel_records_tool.so measure "n=$n cupti_kernels" ./launch_loop $n
    rm -rf $R/m; METRON_OUTPUT_PATH=$R/m measure "n=$n metron" $B/metron run --library $B/libmetron.so -- ./launch_loop $n
    python3 - "$R/m" "$n" <<'PY'
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
m = json.load(open(os.path.join(d, "metadata.json")))
t = m["outputs"]["trace"]
rows = m["outputs"].get("kernels_csv", {}).get("rows")
size = os.path.getsize(os.path.join(d, "trace.pftrace"))
csv = os.path.getsize(os.path.join(d, "kernels.csv")) if os.path.exists(os.path.join(d, "kernels.csv")) else 0
print("   trace %d bytes = %.1f per launch; complete %s; gpu %s; kernels.csv %d rows, %d bytes; gpu records %s; dropped %s"
      % (size, size / n, t.get("complete"), t.get("gpu"), rows or 0, csv, m["gpu"].get("records"), m["gpu"].get("cupti_dropped")))
PY
    tail -1 $R/err.txt | cut -c1-200
  done
done
