#!/bin/bash
# PC sampling's trace annotations and inlined-at chains on the GPU (one device call).
# pc_stalls (tests/cuda/pc_stalls.cu) and pc_inline (pc_inline.cu + pc_inline_main.cu,
# built here with the device's nvcc, -O2 -lineinfo) run under Metron with
# METRON_GPU_PC_SAMPLING=10, continuous and serialized; nvdisasm -gi of pc_inline's cubin is
# kept. Check on the dev machine with tests/cuda/pc_annotations_check.py.
#
# Before: build Metron at this commit and copy it where the command finds it:
#   cargo build --release -p metron-cli -p metron-user
#   mkdir -p device-bin && cp target/release/metron target/release/libmetron.so device-bin/
# Run:   run(command="bash tests/cuda/pc_annotations_plan.sh", carry=["device-bin"])
# After: tar xzf <files_at>/r.tgz -C /tmp && python3 tests/cuda/pc_annotations_check.py /tmp/r
set -u
B=$PWD/device-bin
export PATH=/usr/local/cuda/bin:$PATH
R=/tmp/r; rm -rf $R; mkdir -p $R/bin
M="$B/metron run --library $B/libmetron.so --"
log() { echo "== $* $(date -u +%T)" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; nvcc --version | tail -1; } >> $R/log.txt 2>&1
log build
nvcc -O2 -lineinfo -arch=sm_90 -o $R/bin/pc_stalls tests/cuda/pc_stalls.cu -ldl >> $R/log.txt 2>&1
(cd tests/cuda && nvcc -O2 -lineinfo -arch=sm_90 -o $R/bin/pc_inline pc_inline_main.cu) >> $R/log.txt 2>&1
(cd tests/cuda && nvcc -cubin -O2 -lineinfo -arch=sm_90 -o $R/pc_inline.cubin pc_inline.cu) >> $R/log.txt 2>&1
nvdisasm -gi -c $R/pc_inline.cubin > $R/pc_inline.nvdisasm-gi.txt 2>&1
ls -la $R/bin | tee -a $R/log.txt
for mode in continuous serialized; do
  for prog in "pc_stalls 1" "pc_inline 100"; do
    name=${prog%% *}_$mode
    log $name
    METRON_GPU_PC_SAMPLING=10 METRON_GPU_PC_SAMPLING_MODE=$mode METRON_OUTPUT_PATH=$R/$name \
      timeout 180 $M $R/bin/$prog > $R/$name.log 2>&1; echo "rc=$?" >> $R/$name.log
    tail -2 $R/$name.log
    [ -f $R/$name/summary.txt ] && sed -n '/GPU stall reasons/,$p' $R/$name/summary.txt | head -16
  done
done
log done
find $R -name "*.pftrace" -size +60M -delete
tar czf $OUT/r.tgz -C /tmp r
cp $R/log.txt $OUT/
