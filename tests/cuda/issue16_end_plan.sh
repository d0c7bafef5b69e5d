#!/bin/bash
# Issue 16's device plan for the end of a PM-sampling run and the metric check (one `run`
# call): pm_mix (2 GiB copy + FMA kernel, 3 ms idle gaps) under `metron run` with
# METRON_GPU_PM_SAMPLING, repeated to see whether every run ends with the last samples decoded
# (metadata.json gpu_pm_sampling.finished_cleanly) and its outputs written, then
# issue16_check.py's verdict lines (DRAM/SM tracks per kernel and in gaps, alignment, DRAM
# bytes/s against bytes moved / kernel duration). Binaries from device-bin/i16e (metron +
# libmetron.so from cargo build --release -p metron-cli -p metron-user, stripped; pm_mix as in
# issue16_plan.sh). RUNS: list of name:reps:interval:metrics[:VAR=v+VAR=v] (metrics "on" = the
# default set; the last field: more environment for that run).
set -u
B=$PWD/device-bin/${BIN:-i16e}
T=$PWD/tests/cuda
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/r16e; rm -rf $R; mkdir -p $R
D="dram__bytes_read.sum.per_second,dram__bytes_write.sum.per_second"
RUNS=${RUNS:-"def1:3:20000:on def2:3:20000:on def3:3:20000:on def4:3:20000:on def100:3:100000:on"}
nvidia-smi -L | head -1
for spec in $RUNS; do
  IFS=: read name reps iv metrics extra <<< "$spec"
  t0=$(date +%s.%N)
  env ${extra//+/ } METRON_GPU_PM_SAMPLING=$metrics METRON_GPU_PM_INTERVAL=$iv METRON_GPU_PM_DEBUG=1 \
    METRON_OUTPUT_PATH=$R/$name timeout 120 metron run --library $B/libmetron.so -- pm_mix $reps 3000 \
    > $R/$name.log 2> $R/$name.err
  rc=$?
  t1=$(date +%s.%N)
  echo "== $name rc=$rc wall=$(python3 -c "print(round($t1-$t0,2))") files=$(ls $R/$name 2>/dev/null | tr '\n' ' ')"
  grep -E "decode: result" $R/$name.err | sort | uniq -c | head -4
  grep -E "finish|exit handler|context destroy|dropped|off:|did not|error|Segmentation" $R/$name.err | grep -v "decode: calling" | cut -c1-220 | head -12
  python3 - $R/$name/metadata.json <<'PY'
import json, sys
try:
    m = json.load(open(sys.argv[1]))["gpu_pm_sampling"]
except Exception as e:
    print("no metadata:", e); sys.exit()
print("meta:", {k: m.get(k) for k in ("metrics", "samples", "decodes", "hardware_buffer_overflows", "image_full_decodes", "sample_errors", "decode_errors", "timestamp_domain", "finished_cleanly", "setup_ms")})
s = m.get("summary") or {}
print("summary: samples_in_trace", s.get("samples_in_trace"), "kernels", s.get("kernels"))
for r in s.get("rows", []):
    if r["scope"] == "kernel" and ("copy" in r["name"] or "fma" in r["name"]):
        print("  %-14s %-62s mean %.4g max %.4g n=%d cov=%d" % (r["name"][:14], r["metric"][:62], r["mean"], r["max"], r["launches"], r["covered_ns"]))
PY
  [ -f $R/$name/trace.pftrace ] && python3 $T/issue16_check.py $R/$name $R/$name.log $iv 2>&1 | grep -E "^(CHECK|tracks|kernels)" | cut -c1-400
done
grep KTIME $R/def1.log | head -6
find $R -name '*.pftrace' -size +40M -delete
tar czf $OUT/r.tgz -C /tmp r16e
