#!/bin/bash
# Issue 29, second look (one `run` call), binaries from device-bin/${BIN:-i29}:
#  1. first_launch (6 iterations of a 2 ms kernel in a region between CUDA events) under no
#     tool and each GPU feature, with the `metron set-up` slices the run recorded;
#  2. the per-launch bisection in one process: metron_toggle under Metron's default and with
#     parts of it switched off (METRON_GPU_DIAG), beside cupti_toggle's floor.
set -u
B=$PWD/device-bin/${BIN:-i29}
T=$PWD/tests/cuda
R=/tmp/i29r; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl &
nvcc -O2 -arch=sm_90 -o metron_toggle $T/metron_toggle.cu -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle $T/cupti_toggle.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
M="$B/metron run --library $B/libmetron.so --"
source $T/first_launch_cmd.sh
echo "== first launch"
for f in ${FIRST-none default pc pm kernel region}; do
  cmd=$(first_launch_cmd $f) || continue
  echo "-- $f"
  METRON_OUTPUT_PATH=$R/out/first-$f timeout 120 $cmd 2>$R/err.first.$f | grep FIRST | cut -c1-80
  grep -h -E "metron set-up|_ iter" $R/out/first-$f/summary.txt 2>/dev/null | head -3 | cut -c1-120
  python3 -c "import json,sys; m=json.load(open('$R/out/first-$f/metadata.json')); print('setup', m.get('gpu',{}).get('setup'), 'kernels', m.get('gpu',{}).get('records',{}).get('kernels'))" 2>/dev/null
  grep -v "^metron: wrote" $R/err.first.$f | head -3; tail -1 $R/err.first.$f
done
echo "== per launch, in one process"
ROUNDS=${ROUNDS:-80}; LAUNCHES=${LAUNCHES:-2000}
./cupti_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC |N    -> C)"
for d in ${DIAGS-default no_ts no_annotate no_copy,no_tid no_ts,no_annotate,no_copy,no_tid}; do
  echo "-- $d: $(METRON_GPU_DIAG=$d METRON_OUTPUT_PATH=$R/out/toggle-$d $M ./metron_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep TOGGLE)"
done
./cupti_toggle $ROUNDS $LAUNCHES 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC |N    -> C)"
