#!/usr/bin/env bash
# The whole-process numbers of docs/src/performance.md ("The back end keeps up"): one thread
# recording regions as fast as it can with Metron's defaults on (benches/src/bin/regions.rs),
# the quickstart against METRON_ENABLED=0, 2*10^5 distinct names, the time from `main`'s return
# to the process's exit, instructions per region over every thread (callgrind, difference
# of 10^5 and 10^6 regions) and the quickstart's instructions against METRON_ENABLED=0.
#
# Usage: scripts/bench-backend.sh            (builds, then measures this build)
# Env:   BASE=DIR  also runs DIR/regions and DIR/quickstart (binaries of another build, e.g.
#                  copied from main's target/release) in the same minutes, paired with this
#                  build's (the base build's 2*10^5 names and instruction counts only with
#                  BASE_ALL=1: an older base build may take minutes); ROUNDS (default 3);
#                  CALLGRIND=0 skips the instruction counts.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
cargo build --release -p metron-benches --bin regions -p metron-examples --example quickstart >&2
NEW=target/release
OUT=$(mktemp -d -t metron-backend.XXXXXX)
builds=("new:$NEW/regions:$NEW/examples/quickstart")
if [ -n "${BASE:-}" ]; then builds+=("base:$BASE/regions:$BASE/quickstart"); fi

# wall seconds and peak RSS (MB) of one command, in the run folder $OUT/run-N.
run() {
  local dir="$OUT/run-$RANDOM$RANDOM"
  env METRON_OUTPUT_PATH="$dir" /usr/bin/time -f "%e %M" "$@" 2>"$OUT/err" >"$OUT/out" || true
  tail -1 "$OUT/err" | awk '{printf "%.2f s, %.0f MB", $1, $2/1024}'
  rm -rf "$dir"
}

echo "| workload | build | round | wall, peak RSS | recording |"
echo "| --- | --- | ---: | --- | --- |"
for r in $(seq "$ROUNDS"); do
  for b in "${builds[@]}"; do
    IFS=: read -r name regions _ <<<"$b"
    res=$(run "$regions" pairs 10000000)
    echo "| 10^7 scope! pairs, one thread | $name | $r | $res | $(head -1 "$OUT/out") |"
  done
done
slow_builds=("${builds[0]}")
if [ "${BASE_ALL:-0}" = 1 ]; then slow_builds=("${builds[@]}"); fi
for r in $(seq "$ROUNDS"); do
  for b in "${slow_builds[@]}"; do
    IFS=: read -r name regions _ <<<"$b"
    echo "| 2*10^5 distinct names | $name | $r | $(run "$regions" names 200000) | - |"
    echo "| 2*10^5 distinct names, METRON_REPORT=0 | $name | $r | $(METRON_REPORT=0 run "$regions" names 200000) | - |"
  done
done
# Quickstart: paired with METRON_ENABLED=0, medians of 5.
for b in "${builds[@]}"; do
  IFS=: read -r name _ quick <<<"$b"
  on=(); off=()
  for _ in 1 2 3 4 5; do
    on+=("$(run "$quick" | cut -d' ' -f1)")
    off+=("$(METRON_ENABLED=0 run "$quick" | cut -d' ' -f1)")
  done
  mon=$(printf '%s\n' "${on[@]}" | sort -n | sed -n 3p)
  moff=$(printf '%s\n' "${off[@]}" | sort -n | sed -n 3p)
  echo "| quickstart, median of 5 paired runs | $name | - | $mon s vs $moff s with METRON_ENABLED=0: x$(echo "$mon $moff" | awk '{printf "%.2f", $1/$2}') | - |"
done
# Exit: from main's return to the process's end, 10^5 regions (little left to drain).
python3 - "$NEW/regions" "$OUT" <<'PY'
import os, subprocess, sys, time
exe, out = sys.argv[1], sys.argv[2]
for i in range(3):
    env = dict(os.environ, METRON_OUTPUT_PATH=f"{out}/exit-{i}")
    t0 = time.monotonic()
    p = subprocess.run([exe, "pairs", "100000"], env=env, capture_output=True, text=True)
    total = time.monotonic() - t0
    ret = float(p.stdout.split("main returns at ")[1].split()[0])
    print(f"| exit after 10^5 regions | new | {i+1} | main returned at {ret:.3f} s, process ended at {total:.3f} s: {1000*(total-ret):.0f} ms | - |")
PY
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
  for b in "${slow_builds[@]}"; do
    IFS=: read -r name regions _ <<<"$b"
    ir() {
      METRON_OUTPUT_PATH="$OUT/cg-$1" valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$1" \
        "$regions" pairs "$1" 2>&1 | sed -n 's/.*Collected : //p'
    }
    a=$(ir 100000); c=$(ir 1000000)
    echo "| instructions per region, every thread (callgrind, (Ir(10^6) - Ir(10^5)) / 900000) | $name | - | $(( (c - a) / 900000 )) | - |"
  done
  # The quickstart's instructions, every thread, against METRON_ENABLED=0: what its wall
  # ratio is made of, without the load of the machine in it.
  for b in "${builds[@]}"; do
    IFS=: read -r name _ quick <<<"$b"
    qir() {
      env "$@" METRON_OUTPUT_PATH="$OUT/cgq" valgrind --tool=callgrind \
        --callgrind-out-file="$OUT/cgq.out" "$quick" 2>&1 | sed -n 's/.*Collected : //p'
      rm -rf "$OUT/cgq"
    }
    on=$(qir METRON_ENABLED=1); off=$(qir METRON_ENABLED=0)
    echo "| quickstart instructions, every thread (callgrind) | $name | - | $((on / 1000000)) M vs $((off / 1000000)) M with METRON_ENABLED=0: x$(echo "$on $off" | awk '{printf "%.2f", $1/$2}') | - |"
  done
fi
rm -rf "$OUT"
