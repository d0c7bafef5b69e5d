#!/bin/bash
# Issue 16: which metric sets CUPTI's DecodeData decodes, in NVIDIA's flow (pm_probe, built here
# on the device) and in Metron (issue16_end_plan.sh's runs). PROBES: list of
# name:variant:metrics[:knob=v+knob=v[:metron]] (pm_probe knobs interval=20000 reps=1 samples=0;
# "metron": under `metron run`); then RUNS as in
# issue16_end_plan.sh.
set -u
T=$PWD/tests/cuda
CUDA=/usr/local/cuda
CI=$CUDA/targets/x86_64-linux/include; CL=$CUDA/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$CL:${LD_LIBRARY_PATH:-}
P=/tmp/r16d; rm -rf $P; mkdir -p $P
if [ -n "${PROBES:-}" ]; then
  $CUDA/bin/nvcc -O2 -std=c++17 -arch=sm_90 -I$CI -o $P/pm_probe $T/pm_probe.cu -L$CL -lcupti -lcuda -lpthread > $P/build.txt 2>&1 || tail -5 $P/build.txt
  for spec in $PROBES; do
    IFS=: read name v metrics knobs under <<< "$spec"
    pre=""; [ "${under:-}" = metron ] && pre="$PWD/device-bin/${BIN:-i16e}/metron run --library $PWD/device-bin/${BIN:-i16e}/libmetron.so --"
    timeout 60 $pre $P/pm_probe $v metrics=$metrics interval=20000 reps=${PREPS:-1} samples=0 abort_s=15 ${knobs//+/ } > $P/$name.txt 2>&1
    echo "== probe $name ($v) rc=$?"
    grep -E "^(WINDOW .*-clock|SUMMARY|ERR|FAIL|WATCHDOG|INFO config)" $P/$name.txt | cut -c1-260 | head -12
  done
fi
[ -n "${RUNS:-}" ] && bash $T/issue16_end_plan.sh
tar czf $OUT/p.tgz -C /tmp r16d
