#!/bin/bash
# Issue 29, both of its measurements with one build in one call: (a) in one process, Metron's
# default over CUPTI's floor in bursts of 200 launches (the launch queue never fills, so a burst
# times the launching thread's work only; toggle_burst.sh), REPS repetitions; (b) end to end, the
# launch-bound PyTorch step with no tool, `metron run`, `metron run` with METRON_GPU_API=none and
# torch.profiler (Kineto), ROUNDS interleaved rounds; medians of per-process medians.
# Run: run(command="B=device-bin/r12 bash tests/cuda/issue29_close.sh", carry=["device-bin/r12"])
set -u
B=$(realpath ${B:?the build}); T=$PWD/tests/cuda
R=/tmp/i29c
source $T/toggle_build.sh
for rep in $(seq 1 ${REPS:-8}); do
  ./cupti_toggle 800 200 3 2>&1 | grep -E "^STEP (N    -> K |K    -> KC )" | sed "s/^/floor $rep /"
  METRON_OUTPUT_PATH=$R/m-$rep $B/metron run --library $B/libmetron.so -- ./metron_toggle 800 200 3 2>&1 \
    | grep TOGGLE | sed "s/^/metron $rep /"
done | tee $R/toggle.txt
python3 - $R/toggle.txt <<'PY'
import sys, re, statistics, collections
floor = collections.defaultdict(float); met = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "floor":
        floor[f[1]] += float(re.search(r"([+-][0-9.]+) ns", line).group(1))
    elif f[0] == "metron":
        met[f[1]] = float(re.search(r"diff_ns=([+-][0-9.]+)", line).group(1))
over = [met[r] - floor[r] for r in sorted(met, key=int) if r in floor]
if over:
    print("OVER_FLOOR per repetition (ns):", " ".join(f"{x:+.0f}" for x in over))
    print(f"OVER_FLOOR median {statistics.median(over):+.0f} ns over {len(over)} repetitions")
PY
PY=/opt/torch/.venv/bin/python3
for r in $(seq 1 ${ROUNDS:-8}); do
  for c in none metron api_none kineto; do
    case $c in
      none) $PY $T/torch_step.py plain 200 ;;
      metron) METRON_OUTPUT_PATH=$R/t-$r $B/metron run --library $B/libmetron.so -- $PY $T/torch_step.py plain 200 2>/dev/null ;;
      api_none) METRON_GPU_API=none METRON_OUTPUT_PATH=$R/n-$r $B/metron run --library $B/libmetron.so -- $PY $T/torch_step.py plain 200 2>/dev/null ;;
      kineto) $PY $T/torch_step.py kineto 200 ;;
    esac 2>&1 | grep STEP | sed "s/^/$c /" >> $R/torch.txt
  done
done
python3 $T/torch_table.py $R/torch.txt
