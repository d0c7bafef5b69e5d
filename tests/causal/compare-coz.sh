#!/usr/bin/env bash
# Metron's and Coz's causal profiles of the same program (tests/causal/barrier.c built with
# coz.h, unchanged for both): Coz 0.2.2 (`coz run`, Debian's coz-profiler) with each line fixed
# (`--fixed-line`, its own random speedups with its own 0 % baselines in every run), RUNS runs
# per line; Metron with the same two lines, speedups 0-40 %, 500 ms experiments as Coz's, RUNS
# runs. Both profiles are read by the same analysis (`metron causal --from`: each run against
# its own baseline), and the predicted program speedups at 10-40 % are printed side by side.
#
# UNIT_US is barrier.c's unit (the slack line's work per round; the critical line's is twice
# that). The default, 20000 (40 ms rounds), is a construction both tools model: Coz 0.2.2
# publishes a thread's delays only every 10 samples (10 ms of its CPU time; its catch_up does
# not drain the samples perf has buffered), so with 1 ms units a chunk of delay larger than
# the slack thread's 1 ms of slack holds up the barrier and Coz under-predicts the critical
# line (tests/causal/coz-model.py simulates both tools' rules).
#
# MODE random (the default) runs Coz as it runs by itself: random speedups, 0 % in about a
# quarter of the experiments, so about 1 experiment in 28 at each of 10/20/30/40 %; MODE fixed
# runs Coz once per line and speedup (0,10,20,30,40, `--fixed-speedup`), SECONDS_PER_RUN each,
# RUNS times, so every speedup gets experiments (the 0 % runs are the baseline of the others:
# this needs a machine whose load does not change between runs).
#
# PARALLEL=1 runs Metron's run at the same time as Coz's runs (on a machine with a core for
# every thread of both: the two programs do not compete), so the comparison takes half as long.
# COZ_AT_ONCE=1 (with PARALLEL=1, MODE random) also runs all of Coz's RUNS x 2 runs at once and
# Metron's for one run's SECONDS_PER_RUN: RUNS times Coz's experiments in one run's time, on a
# machine with a core for each of their 2 x (2 x RUNS + 1) busy threads. METRON_AT_ONCE=N (with
# COZ_AT_ONCE=1) runs N of Metron's runs at once as well, each in a folder of its own, merged
# like Coz's (each against its own 0 % baseline): a host with 64 cores gives both tools many
# experiments per point in one run's time.
#
# NICE (e.g. NICE=-10) runs both tools' programs at that niceness, for a machine shared with
# other work (virtual speedups assume each thread has a core when it can run).
#
# Usage: tests/causal/compare-coz.sh OUT_DIR [SECONDS_PER_RUN] [RUNS] [UNIT_US] [MODE]
# METRON_BIN names another `metron` (with its libmetron.so beside it), e.g. binaries carried to
# another machine.
# Needs: coz, gcc, target/release/{metron,libmetron.so} (cargo build --release -p metron-cli
# -p metron-user).
set -euo pipefail
out=${1:?usage: compare-coz.sh OUT_DIR [SECONDS_PER_RUN] [RUNS] [UNIT_US]}
secs=${2:-30}
runs=${3:-3}
unit=${4:-20000}
mode=${5:-random}
# Metron's run lasts as long as Coz's runs of one round of both lines.
if [ "$mode" = fixed ]; then metron_secs=$((secs * 10)); else metron_secs=$((secs * 2)); fi
metron_runs=$runs
at_once=${COZ_AT_ONCE:-0}
if [ "$at_once" = 1 ]; then
  [ "${PARALLEL:-0}" = 1 ] && [ "$mode" = random ] || { echo "compare-coz.sh: COZ_AT_ONCE=1 needs PARALLEL=1 and MODE random" >&2; exit 2; }
  metron_secs=$secs metron_runs=1
fi
metron_at_once=${METRON_AT_ONCE:-1}
[ "$metron_at_once" = 1 ] || [ "$at_once" = 1 ] || { echo "compare-coz.sh: METRON_AT_ONCE needs COZ_AT_ONCE=1" >&2; exit 2; }
nice=(nice -n "${NICE:-0}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v coz >/dev/null || { echo "compare-coz.sh: coz is not installed (apt-get install coz-profiler)" >&2; exit 3; }
mkdir -p "$out"
# Coz reads this compiler's DWARF only as version 2, strict.
gcc -O1 -gdwarf-2 -gstrict-dwarf -pthread -DUSE_COZ -I"$here" ${CFLAGS:-} "$here/barrier.c" -o "$out/barrier_coz" -ldl
critical=barrier.c:$(grep -n 'CRITICAL:' "$here/barrier.c" | cut -d: -f1)
slack=barrier.c:$(grep -n 'SLACK:' "$here/barrier.c" | cut -d: -f1)
rm -rf "$out"/coz-*.coz "$out/coz" "$out/metron" "$out"/metron-*
# One calibration for every run, so that the runs spin the same and one run's 0 % experiments
# are a baseline for another's (each run would otherwise calibrate under its own load).
CAUSAL_SPINS_PER_US=$("${nice[@]}" "$out/barrier_coz" calibrate)
export CAUSAL_SPINS_PER_US
metron_bin=${METRON_BIN:-$root/target/release/metron}
metron_one() {
  "${nice[@]}" "$metron_bin" causal -o "$1" -n "$metron_runs" --line "$critical" --line "$slack" \
    --speedups 0,10,20,30,40 --experiment 500ms -- "$out/barrier_coz" "$metron_secs" "$unit" >/dev/null 2>&1
}
metron_run() {
  if [ "$metron_at_once" = 1 ]; then metron_one "$out/metron"; return; fi
  local pids=() i merged=()
  for i in $(seq "$metron_at_once"); do metron_one "$out/metron-$i" & pids+=($!); done
  wait "${pids[@]}"
  for i in $(seq "$metron_at_once"); do merged+=(--from "$out/metron-$i/profile.coz"); done
  "$metron_bin" causal "${merged[@]}" -o "$out/metron" >/dev/null
}
metron_pid=
if [ "${PARALLEL:-0}" = 1 ]; then metron_run & metron_pid=$!; fi
for r in $(seq "$runs"); do
  for line in "$critical" "$slack"; do
    if [ "$mode" = fixed ]; then
      for s in 0 10 20 30 40; do
        "${nice[@]}" coz run -o "$out/coz-${line//[:.]/_}-$r-$s.coz" --fixed-line "$line" --fixed-speedup "$s" \
          --- "$out/barrier_coz" "$secs" "$unit" >/dev/null 2>&1
      done
    elif [ "$at_once" = 1 ]; then
      "${nice[@]}" coz run -o "$out/coz-${line//[:.]/_}-$r.coz" --fixed-line "$line" --- "$out/barrier_coz" "$secs" "$unit" >/dev/null 2>&1 &
    else
      "${nice[@]}" coz run -o "$out/coz-${line//[:.]/_}-$r.coz" --fixed-line "$line" --- "$out/barrier_coz" "$secs" "$unit" >/dev/null 2>&1
    fi
  done
done
# Coz's runs in the background (COZ_AT_ONCE), then Metron's.
for job in $(jobs -p); do [ "$job" = "$metron_pid" ] || wait "$job"; done
from=()
for f in "$out"/coz-*.coz; do from+=(--from "$f"); done
"$metron_bin" causal "${from[@]}" -o "$out/coz" >/dev/null
if [ -n "$metron_pid" ]; then wait "$metron_pid"; else metron_run; fi
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def curves(name):
    d = json.load(open(f"{out}/{name}/causal.json"))
    return {c["line"].rsplit("/", 1)[-1]: {p["line_speedup_percent"]: (p["program_speedup_percent"], p["experiments"]) for p in c["points"]} for c in d["curves"]}
coz, met = curves("coz"), curves("metron")
print(f"{'line':<16}{'speedup':>8}{'Coz':>9}{'n':>4}{'Metron':>9}{'n':>4}{'diff':>8}")
worst = 0.0
for line in sorted(set(coz) & set(met)):
    for s in (10, 20, 30, 40):
        if s in coz[line] and s in met[line]:
            (c, cn), (m, mn) = coz[line][s], met[line][s]
            d = m - c
            flag = "" if cn >= 5 and mn >= 5 else "  (fewer than 5 experiments)"
            if not flag:
                worst = max(worst, abs(d))
            print(f"{line:<16}{s:>7}%{c:>+8.1f}%{cn:>4}{m:>+8.1f}%{mn:>4}{d:>+7.1f}{flag}")
print(f"largest difference where both have >= 5 experiments: {worst:.1f} points")
PY
