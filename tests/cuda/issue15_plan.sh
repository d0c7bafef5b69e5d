#!/bin/bash
# Issue 15's device plan (one `run` call): PC sampling with stall reasons on three kernels of
# known dominant stall (tests/cuda/pc_stalls.cu), continuous and serialized, against ncu's
# smsp__pcsamp_* metrics; SASS of the cubin (nvdisasm -g) for the PC -> line check; kernel
# times with and without sampling. Binaries from device-bin/i15 (built on the dev machine).
# Everything lands in $OUT/r.tgz; compare with tests/cuda/issue15_compare.py on the dev machine.
set -u
B=$PWD/device-bin/i15
export PATH=$B:/usr/local/cuda/bin:$PATH
R=/tmp/r; rm -rf $R; mkdir -p $R
M="$B/metron run --library $B/libmetron.so --"
log() { echo "== $* $(date -u +%T)" | tee -a $R/log.txt; }
{ date -u; nvidia-smi -L; } >> $R/log.txt 2>&1
PHASES=${PHASES:-cont,ser,mixed,ncu,sass,overhead,torch}
P=${PERIOD:-10}
run_m() { # name "pc_stalls args" env...
  local name=$1 args=$2; shift 2
  log "$name"
  env "$@" METRON_OUTPUT_PATH=$R/$name timeout 120 $M pc_stalls $args > $R/$name.log 2>&1; echo "rc=$?" >> $R/$name.log
  tail -3 $R/$name.log
  [ -f $R/$name/summary.txt ] && sed -n '/GPU stall reasons/,$p' $R/$name/summary.txt | head -40
  python3 - "$R/$name/metadata.json" <<'PY' 2>/dev/null
import json,sys
m=json.load(open(sys.argv[1])).get("gpu_pc_sampling",{})
m.pop("stall_reasons",None)
print(json.dumps(m)[:1500])
PY
}
if [[ $PHASES == *cont* ]]; then
  run_m cont 2 METRON_GPU_PC_SAMPLING=$P
  run_m cont_default 1 METRON_GPU_PC_SAMPLING=on
fi
if [[ $PHASES == *ser* ]]; then
  run_m ser 1 METRON_GPU_PC_SAMPLING=$P METRON_GPU_PC_SAMPLING_MODE=serialized
fi
if [[ $PHASES == *mixed* ]]; then
  run_m mixed_cont "2 mixed" METRON_GPU_PC_SAMPLING=$P
  run_m mixed_ser "2 mixed" METRON_GPU_PC_SAMPLING=$P METRON_GPU_PC_SAMPLING_MODE=serialized
  run_m metrics_refused "1 chase" METRON_GPU_PC_SAMPLING=$P METRON_GPU_METRICS=smsp__inst_executed.sum
fi
if [[ $PHASES == *ncu* ]]; then
  log ncu
  timeout 240 ncu --clock-control none --metrics group:smsp__pcsamp_warp_stall_reasons --csv --page raw pc_stalls 1 > $R/ncu.csv 2> $R/ncu.err
  if ! grep -q pcsamp $R/ncu.csv; then
    log ncu_regex
    timeout 240 ncu --clock-control none --metrics 'regex:smsp__pcsamp_warps_issue_stalled_.*' --csv --page raw pc_stalls 1 > $R/ncu.csv 2> $R/ncu.err
  fi
  head -c 600 $R/ncu.err; wc -l $R/ncu.csv
fi
if [[ $PHASES == *sass* ]]; then
  log sass
  (cd $R && cuobjdump -xelf all $B/pc_stalls > /dev/null 2>&1; for c in $R/*.cubin; do nvdisasm -g -c "$c"; done > $R/sass.txt 2>&1; ls $R/*.cubin)
fi
if [[ $PHASES == *overhead* ]]; then
  log overhead
  for round in 1 2 3 4 5; do
    for cfg in none metron_off metron_p10 metron_p14 metron_default metron_ser; do
      case $cfg in
        none) out=$(pc_stalls 3) ;;
        metron_off) out=$(METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M pc_stalls 3 2>/dev/null) ;;
        metron_p10) out=$(METRON_GPU_PC_SAMPLING=10 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M pc_stalls 3 2>/dev/null) ;;
        metron_p14) out=$(METRON_GPU_PC_SAMPLING=14 METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M pc_stalls 3 2>/dev/null) ;;
        metron_default) out=$(METRON_GPU_PC_SAMPLING=on METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M pc_stalls 3 2>/dev/null) ;;
        metron_ser) out=$(METRON_GPU_PC_SAMPLING=10 METRON_GPU_PC_SAMPLING_MODE=serialized METRON_OUTPUT_PATH=/tmp/o/$cfg$round $M pc_stalls 3 2>/dev/null) ;;
      esac
      echo "$out" | grep KTIME | awk -v r=$round -v c=$cfg '{n[$2]++; print r, c, n[$2], $2, $3}' >> $R/overhead.txt
    done
  done
  cp /tmp/o/metron_p101/metadata.json $R/overhead_p10_metadata.json 2>/dev/null
  # launches 2 and 3 of each kernel (the first pays for module loading)
  awk '$3>=2 {k=$2" "$4; s[k]+=$5; n[k]++} END {for (k in s) printf "%s %.4f\n", k, s[k]/n[k]}' $R/overhead.txt | sort
fi
if [[ $PHASES == *lines* ]]; then
  # The line-table fixture of tests/gpu_pcsampling_lines.rs: nvdisasm -g of the cubin built on
  # the dev machine (device-bin/i15/pc_lines.sm_90.cubin: `cd /tmp/metron-pc-lines && nvcc
  # -cubin -O2 -lineinfo -arch=sm_90 -o .../pc_lines.sm_90.cubin pc_lines.cu`, as the test
  # builds it), and the device's stall reasons.
  log lines
  nvdisasm -g -c $B/pc_lines.sm_90.cubin > $R/pc_lines.sm_90.nvdisasm.txt 2>&1; echo "nvdisasm rc=$?"
  wc -l $R/pc_lines.sm_90.nvdisasm.txt
  $B/pc_stall_reasons > $R/stall_reasons.txt 2>&1; echo "pc_stall_reasons rc=$?"; head -12 $R/stall_reasons.txt
fi
if [[ $PHASES == *probe* ]]; then
  # GpuPcSampling in a Rust bundle (gpu-nvidia/examples/pc_probe.rs: JIT-compiled PTX, no line info).
  log probe
  METRON_GPU_PC_SAMPLING=10 METRON_OUTPUT_PATH=$R/probe timeout 60 $B/pc_probe > $R/probe.log 2>&1; echo "rc=$?" >> $R/probe.log
  tail -3 $R/probe.log; sed -n '/GPU stall reasons/,$p' $R/probe/summary.txt | head -12
  python3 -c "import json;s=json.load(open('$R/probe/summary.json'));print(json.dumps([r for r in s.get('regions',[]) if 'step' in json.dumps(r)][:2])[:800])" 2>&1 | head -5
fi
if [[ $PHASES == *mtgraph* ]]; then
  # Two launching threads x two streams + a CUDA graph replayed 10 times (issue 14's program),
  # on one GPU and, when there are two, on two (one context per device).
  NDEV=$(nvidia-smi -L | wc -l)
  for spec in "mt1 1" "mt2 2"; do
    set -- $spec
    [ $2 -gt $NDEV ] && continue
    log "$1"
    METRON_GPU_PC_SAMPLING=10 METRON_OUTPUT_PATH=$R/$1 timeout 120 $M mt_graph 10 overlap 2 $2 > $R/$1.log 2>&1; echo "rc=$?" >> $R/$1.log
    tail -2 $R/$1.log; sed -n '/by region:/,$p' $R/$1/summary.txt | grep -v '^      ' | head -12
    python3 -c "import json;m=json.load(open('$R/$1/metadata.json'))['gpu_pc_sampling'];m.pop('stall_reasons',None);print(json.dumps(m)[:900])"
  done
fi
if [[ $PHASES == *launch* ]]; then
  # Host cost per launch with sampling on (launch_loop: 10^5 empty kernels on one stream,
  # enqueue ns per launch; 5 interleaved rounds).
  log launch
  for round in 1 2 3 4 5; do
    for cfg in none metron_off metron_p14 metron_p10; do
      case $cfg in
        none) out=$(launch_loop 100000) ;;
        metron_off) out=$(METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/l/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
        metron_p14) out=$(METRON_GPU_PC_SAMPLING=14 METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/l/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
        metron_p10) out=$(METRON_GPU_PC_SAMPLING=10 METRON_TRACE=0 METRON_OUTPUT_PATH=/tmp/l/$cfg$round $M launch_loop 100000 2>/dev/null) ;;
      esac
      echo "$round $cfg $out" >> $R/launch.txt
    done
  done
  cat $R/launch.txt
  python3 -c "import json;m=json.load(open('/tmp/l/metron_p101/metadata.json'))['gpu_pc_sampling'];m.pop('stall_reasons',None);print(json.dumps(m)[:700])"
fi
if [[ $PHASES == *torch* ]]; then
  log torch
  METRON_GPU_PC_SAMPLING=on METRON_OUTPUT_PATH=$R/torch timeout 200 $M /opt/torch/.venv/bin/python3 tests/cuda/torch_train.py plain > $R/torch.log 2>&1; echo "rc=$?" >> $R/torch.log
  tail -3 $R/torch.log; sed -n '/GPU stall reasons/,$p' $R/torch/summary.txt | head -30
  python3 -c "import json;m=json.load(open('$R/torch/metadata.json'))['gpu_pc_sampling'];m.pop('stall_reasons',None);a=m.get('attribution',{});a['functions_without_line_info']=len(a.get('functions_without_line_info',[]));print(json.dumps(m)[:1500])"
  wc -l $R/torch/pc_samples.csv $R/torch/gpu_stalls.folded
fi
log done
find $R -name "*.pftrace" -size +30M -delete
tar czf $OUT/r.tgz -C /tmp r
cp $R/log.txt $OUT/
