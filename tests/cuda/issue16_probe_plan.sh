#!/bin/bash
# Issue 16's probe plan (one `run` call, no Metron): why cuptiPmSamplingDecodeData does not
# return on the H100. Builds tests/cuda/pm_probe.cu with the device's nvcc, builds and runs
# NVIDIA's own CUPTI pm_sampling sample when the CUDA install ships it (the baseline), then runs
# the probe's variants (see the top of pm_probe.cu), each under `timeout 60` (the probe's own
# watchdog prints "DecodeData blocked" after 5 s and gives up after 20 s).
# Results: $OUT/summary.txt (the key lines of every run) and $OUT/r.tgz (everything).
#   VARIANTS="a c" bash tests/cuda/issue16_probe_plan.sh    # a subset
set -u
T=$PWD/tests/cuda
R=/tmp/r16p; rm -rf $R; mkdir -p $R/bin
CUDA=/usr/local/cuda
export PATH=$CUDA/bin:$PATH
S=$R/summary.txt
log() { echo "== $* $(date -u +%T)" | tee -a $S; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nvcc --version | tail -1; } >> $S 2>&1

# CUPTI headers and library: extras/CUPTI, else next to the CUDA headers.
CI=$(dirname "$(ls $CUDA/extras/CUPTI/include/cupti_pmsampling.h $CUDA/include/cupti_pmsampling.h $CUDA/targets/*/include/cupti_pmsampling.h 2>/dev/null | head -1)")
CL=$(dirname "$(ls $CUDA/extras/CUPTI/lib64/libcupti.so $CUDA/lib64/libcupti.so $CUDA/targets/*/lib/libcupti.so 2>/dev/null | head -1)")
[ -n "$CI" ] && [ "$CI" != . ] || CI=$CUDA/extras/CUPTI/include
[ -n "$CL" ] && [ "$CL" != . ] || CL=$CUDA/extras/CUPTI/lib64
echo "cupti include: $CI lib: $CL" | tee -a $S
T0=$(date +%s)
export LD_LIBRARY_PATH=$CL:${LD_LIBRARY_PATH:-}
log build probe
nvcc -O2 -std=c++17 -arch=sm_90 -I$CI -o $R/bin/pm_probe $T/pm_probe.cu -L$CL -lcupti -lcuda -lpthread > $R/build_probe.txt 2>&1
echo "probe build rc=$?" | tee -a $S; tail -5 $R/build_probe.txt

# NVIDIA's sample: listed, and built and run as is when present.
log samples
ls $CUDA/extras/CUPTI/samples > $R/samples_ls.txt 2>&1; cat $R/samples_ls.txt | tr '\n' ' ' | tee -a $S; echo | tee -a $S
SD=$CUDA/extras/CUPTI/samples/pm_sampling
if [ -d $SD ]; then
  cp -r $CUDA/extras/CUPTI/samples $R/samples
  ls -la $R/samples/pm_sampling >> $S
  cp $R/samples/pm_sampling/*.cpp $R/samples/pm_sampling/*.h $R/ 2>/dev/null
  (cd $R/samples/pm_sampling && timeout 180 make CUDA_INSTALL_PATH=$CUDA > $R/build_sample.txt 2>&1)
  rc=$?
  SB=$(find $R/samples/pm_sampling -maxdepth 1 -type f -name pm_sampling -perm -u+x | head -1)
  if [ -z "$SB" ]; then  # the Makefile failed: compile it by hand
    (cd $R/samples/pm_sampling && nvcc -O2 -std=c++17 -arch=sm_90 -I../common -I$CI -o pm_sampling pm_sampling.cpp \
      -L$CL -lcupti -lcuda -lpthread >> $R/build_sample.txt 2>&1)
    SB=$R/samples/pm_sampling/pm_sampling
  fi
  echo "sample make rc=$rc binary: $SB" | tee -a $S; tail -5 $R/build_sample.txt | tee -a $S
  if [ -x "$SB" ]; then
    log sample default
    (cd $R && timeout 45 $SB > $R/sample_default.txt 2>&1; echo "rc=$?" >> $R/sample_default.txt)
    grep -v '^[0-9.e+-]*,' $R/sample_default.txt | tail -15 | tee -a $S
    grep -c '^[0-9.e+-]*,' $R/sample_default.txt | sed 's/^/sample rows: /' | tee -a $S
    log sample with the probe metrics
    M=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,dramc__write_throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed
    (cd $R && timeout 45 $SB -m $M > $R/sample_metrics.txt 2>&1; echo "rc=$?" >> $R/sample_metrics.txt)
    grep -v '^[0-9.e+-]*,' $R/sample_metrics.txt | tail -15 | tee -a $S
    grep -c '^[0-9.e+-]*,' $R/sample_metrics.txt | sed 's/^/sample rows: /' | tee -a $S
    head -5 $R/sample_metrics.txt | cut -c1-300 >> $S
  fi
else
  echo "no pm_sampling sample in this CUDA install" | tee -a $S
fi

# The probe's variants: a (the sample's flow) first, then one knob family at a time.
VARIANTS=${VARIANTS:-"a e c t a_memcpy a_metron_sizes a_ctx_first a_push b d"}
if [ -x $R/bin/pm_probe ]; then
  for v in $VARIANTS; do
    case $v in
      a_memcpy) args="a reset=memcpy" ;;
      a_metron_sizes) args="a hwbuf=268435456 maxsamples=4096 interval=100000" ;;
      a_ctx_first) args="a ctx_first=1" ;;
      a_push) args="a ctx_first=1 push=1" ;;
      *) args=$v ;;
    esac
    if [ $(( $(date +%s) - T0 )) -gt 470 ]; then log "probe $v skipped: out of time (rerun with VARIANTS=...)"; continue; fi
    log "probe $v ($args)"
    timeout 60 $R/bin/pm_probe $args > $R/probe_$v.txt 2>&1
    echo "rc=$?" >> $R/probe_$v.txt
    grep -E '^(CONFIG|INFO|WATCHDOG|SUMMARY|WINDOW|rc=|STEP .* rc=[1-9]|CUDA |STEP cuptiPmSampling(Start|Stop|Enable|SetConfig|Disable)|STEP join)' $R/probe_$v.txt | cut -c1-300 | tee -a $S
    grep -E '^DECODE' $R/probe_$v.txt | head -6 | cut -c1-300 | tee -a $S
    grep -E '^DECODE' $R/probe_$v.txt | grep -v 'completed=0' | tail -3 | cut -c1-300 | tee -a $S
    grep -E '^(KERNEL|KACT)' $R/probe_$v.txt | head -4 | cut -c1-300 | tee -a $S
  done
fi
log done
cp $S $OUT/summary.txt
tar czf $OUT/r.tgz --exclude=r16p/samples --exclude=r16p/bin -C /tmp r16p; ls -la $OUT
