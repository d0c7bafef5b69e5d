#!/bin/bash
# The exports of a real NVIDIA run (one device call). examples/cuda/vector_ops.cu is
# built with the device's nvcc against Metron's header and libmetron.so, and runs under
# `metron run` with METRON_EXPORT=all into /tmp/r23/run (session.atp, session.occupancy,
# api.log next to kernels.csv, the trace and metadata.json with the devices' limits).
#
# Before: scripts/gpu-validate.sh --stage device-bin   (on the build machine)
# Run:    bash tests/cuda/export_device_run.sh          (on the GPU machine, with device-bin/)
# After: tar xzf <files_at>/r23.tgz -C /tmp &&
#        METRON_EXPORT_DEVICE_RUN=/tmp/r23/run cargo test --release -p metron-tests \
#          --test export_formats a_device_run -- --nocapture
set -u
B=$PWD/device-bin
export PATH=/usr/local/cuda/bin:$PATH
R=/tmp/r23; rm -rf $R; mkdir -p $R/bin
log() { echo "== $* $(date -u +%T)" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; nvcc --version | tail -1; } >> $R/log.txt 2>&1
log build
nvcc -O2 -arch=sm_90 -std=c++17 -I user-api/include -I examples/cuda examples/cuda/vector_ops.cu \
  -o $R/bin/vector_ops -L $B -lmetron -Xlinker -rpath -Xlinker $B >> $R/log.txt 2>&1
ls -la $R/bin | tee -a $R/log.txt
log run
METRON_EXPORT=all timeout 180 $B/metron run --library $B/libmetron.so --output-path $R/run -- \
  $R/bin/vector_ops > $R/run.log 2>&1; echo "rc=$?" >> $R/run.log
tail -5 $R/run.log
ls -la $R/run* | tee -a $R/log.txt
for f in session.occupancy api.log; do echo "-- $f"; head -8 $R/run/$f; done
python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['gpu']['devices']))" $R/run/metadata.json
log done
tar czf $OUT/r23.tgz -C /tmp r23
cp $R/log.txt $OUT/
