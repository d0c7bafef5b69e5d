#!/usr/bin/env bash
# The cost of functions as regions (`metron run --functions`), engine -finstrument-functions,
# on benches/c/function_calls.c:
#
# 1. instructions per call by valgrind's callgrind: the loop function only
#    (--toggle-collect=loop_*), difference of N1 and N2 calls (cancels set-up and each
#    function's first, deciding call), minus the same loop built without hooks;
# 2. wall time per traced call against uftrace on the same binary and the same selection
#    (`uftrace record --no-libcall -F traced_leaf -D 1`): (tool - plain) / calls, the median
#    of RUNS interleaved runs of each (plain = the same binary without a tracer: glibc's
#    empty hooks).
#
# Usage: scripts/bench-functions.sh
# Env:   N1 (100000), N2 (200000), CALLS (3000000), RUNS (7), CARGO_TARGET_DIR (target),
#        CC (cc), CFLAGS (-O2).
# Output: markdown tables on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-100000}
N2=${N2:-200000}
CALLS=${CALLS:-3000000}
RUNS=${RUNS:-7}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2}
for tool in valgrind uftrace; do
  command -v $tool >/dev/null || {
    echo "bench-functions.sh: $tool is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  }
done
cargo build --release -p metron-user -p metron-cli >&2
LIBDIR=$CARGO_TARGET_DIR/release
METRON=$LIBDIR/metron
OUT=$(mktemp -d -t metron-functions-bench.XXXXXX)
# shellcheck disable=SC2086
$CC $CFLAGS -g -finstrument-functions benches/c/function_calls.c -o "$OUT/hooks"
# shellcheck disable=SC2086
$CC $CFLAGS -g benches/c/function_calls.c -o "$OUT/plain"
export METRON_OUTPUT_PATH=$OUT/run-%pid% METRON_TRACE=false METRON_REPORT=false

ir() { # $1 binary, $2 loop, $3 calls, then env assignments
  local bin=$1 loop=$2 calls=$3
  shift 3
  local file=$OUT/cg.$(basename "$bin").$loop.$calls
  env "$@" valgrind --tool=callgrind --callgrind-out-file="$file" \
    --toggle-collect="loop_$loop" "$bin" "$loop" "$calls" >"$file.log" 2>&1 || {
    echo "bench-functions.sh: $bin $loop $calls failed; see $file.log" >&2
    echo NaN
    return
  }
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$file"
}
per_call_env() { # binary loop env...
  local bin=$1 loop=$2
  shift 2
  local a b
  a=$(ir "$bin" "$loop" "$N1" "$@")
  b=$(ir "$bin" "$loop" "$N2" "$@")
  awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

plain=$(per_call_env "$OUT/plain" selected X=1)
sel=$(per_call_env "$OUT/hooks" selected LD_PRELOAD="$LIBDIR/libmetron.so" \
  'METRON_FUNCTIONS=^traced_leaf$')
unsel=$(per_call_env "$OUT/hooks" unselected LD_PRELOAD="$LIBDIR/libmetron.so" \
  'METRON_FUNCTIONS=^traced_leaf$')
off=$(per_call_env "$OUT/hooks" unselected LD_PRELOAD="$LIBDIR/libmetron.so")
echo "| call (callgrind, instructions per call over the plain loop's $plain) | added instructions |"
echo "| --- | ---: |"
awk -v s="$sel" -v p="$plain" 'BEGIN { printf "| selected function (a region) | %.1f |\n", s - p }'
awk -v s="$unsel" -v p="$plain" 'BEGIN { printf "| instrumented, not selected | %.1f |\n", s - p }'
awk -v s="$off" -v p="$plain" 'BEGIN { printf "| instrumented, METRON_FUNCTIONS empty | %.1f |\n", s - p }'

seconds() { # wall seconds of a command
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}
plain_us=()
metron_us=()
uftrace_us=()
for _ in $(seq "$RUNS"); do
  plain_us+=("$(seconds "$OUT/hooks" selected "$CALLS")")
  metron_us+=("$(seconds "$METRON" run --library "$LIBDIR/libmetron.so" -o "$OUT/m-%pid%" \
    --functions '^traced_leaf$' -- "$OUT/hooks" selected "$CALLS")")
  rm -rf "$OUT/u"
  uftrace_us+=("$(seconds uftrace record -d "$OUT/u" --no-libcall -F traced_leaf -D 1 \
    "$OUT/hooks" selected "$CALLS")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p=$(median "${plain_us[@]}")
m=$(median "${metron_us[@]}")
u=$(median "${uftrace_us[@]}")
echo
echo "| $CALLS traced calls, median of $RUNS interleaved runs | wall | per traced call over plain |"
echo "| --- | ---: | ---: |"
awk -v t="$p" 'BEGIN { printf "| plain (glibc empty hooks) | %.3f s | - |\n", t / 1e6 }'
awk -v t="$m" -v p="$p" -v n="$CALLS" \
  'BEGIN { printf "| metron run --functions | %.3f s | %.1f ns |\n", t / 1e6, (t - p) * 1e3 / n }'
awk -v t="$u" -v p="$p" -v n="$CALLS" \
  'BEGIN { printf "| uftrace record --no-libcall | %.3f s | %.1f ns |\n", t / 1e6, (t - p) * 1e3 / n }'
awk -v m="$m" -v u="$u" -v p="$p" 'BEGIN { printf "\nmetron / uftrace per traced call: %.2f\n", (m - p) / (u - p) }'
echo "(files: $OUT)" >&2
