#!/bin/bash
# Issue 29, the measurements of the closing note (one `run` call), binaries from
# device-bin/${BIN:-i29}:
#  1. kernel-mode counters: first_launch's kernels are all there (the warm-up's are not);
#  2. per launch in one process: metron_toggle (Metron's default, then METRON_GPU_API=none)
#     beside cupti_toggle's floor, twice;
#  3. the launch-bound PyTorch step, ROUNDS interleaved process rounds: no tool, metron run,
#     torch.profiler (Kineto, CUDA activities only); medians of the per-process medians.
set -u
B=$PWD/device-bin/${BIN:-i29}
T=$PWD/tests/cuda
R=/tmp/i29f; rm -rf $R; mkdir -p $R; cd $R
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; nproc; } 2>&1 | head -4
nvcc -O2 -arch=sm_90 -o first_launch $T/first_launch.cu -ldl &
nvcc -O2 -arch=sm_90 -o metron_toggle $T/metron_toggle.cu -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle $T/cupti_toggle.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
M="$B/metron run --library $B/libmetron.so --"
if [ -z "${SKIP_EARLY:-}" ]; then
echo "== kernel mode"
METRON_GPU_METRICS=smsp__inst_executed.sum METRON_OUTPUT_PATH=$R/out/kernel $M ./first_launch 2>&1 | grep -E "FIRST iter=(0|1)" | cut -c1-80
python3 -c "import json; m=json.load(open('$R/out/kernel/metadata.json'))['gpu']; print('setup', m.get('setup'), 'kernels', m['records']['kernels'], 'profiled', m['counters'].get('kernels_profiled', m['counters']))" 2>&1 | cut -c1-300
grep -c spin_kernel $R/out/kernel/kernels.csv
echo "== per launch, in one process"
for rep in 1 2; do
  ./cupti_toggle 80 2000 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )"
  echo "default: $(METRON_OUTPUT_PATH=$R/out/t-$rep $M ./metron_toggle 80 2000 3 2>&1 | grep TOGGLE)"
  echo "apinone: $(METRON_GPU_API=none METRON_OUTPUT_PATH=$R/out/ta-$rep $M ./metron_toggle 80 2000 3 2>&1 | grep TOGGLE)"
done
fi
echo "== PyTorch step"
PY=/opt/torch/.venv/bin/python3
for r in $(seq 1 ${ROUNDS:-6}); do
  for c in ${TORCH_CONFIGS:-none metron kineto}; do
    case $c in
      none) $PY $T/torch_step.py plain 200 ;;
      metron) METRON_OUTPUT_PATH=$R/out/torch-$r $M $PY $T/torch_step.py plain 200 2>$R/err.torch ;;
      rtact) METRON_GPU_API=activity METRON_GPU_DIAG=rt_only METRON_OUTPUT_PATH=$R/out/torch-rtact-$r $M $PY $T/torch_step.py plain 200 2>$R/err.rtact ;;
      apinone) METRON_GPU_API=none METRON_OUTPUT_PATH=$R/out/torch-apinone-$r $M $PY $T/torch_step.py plain 200 2>/dev/null ;;
      kineto) $PY $T/torch_step.py kineto 200 ;;
    esac 2>&1 | grep STEP | sed "s/^/$c /" >> $R/torch.txt
  done
done
tail -1 $R/err.torch
python3 $T/torch_table.py $R/torch.txt
for d in torch-1 torch-rtact-1; do
  [ -f $R/out/$d/metadata.json ] && python3 -c "import json; m=json.load(open('$R/out/$d/metadata.json'))['gpu']; print('$d records', m['records'], 'api', m['api_tracing']['calls_recorded'], 'dropped', m.get('cupti_dropped'))"
done
tail -2 $R/err.rtact 2>/dev/null
